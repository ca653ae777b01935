"""Plugin discovery: the entry-point group ``oarlock.plugins``, one pluggy manager.

Every plugin, the in-tree CPU one included, is found the same way. A plugin that fails to
import, declares an incompatible contract or whose hook raises is recorded, never raised at
import time; asking for its device raises the recorded error with what to do.
"""

from __future__ import annotations

import contextlib
import faulthandler
import importlib
import importlib.util
import os
import signal
import subprocess
import sys
import threading
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from importlib.metadata import EntryPoint, entry_points
from types import ModuleType
from typing import Any

import pluggy

from adapter_api import ContractVersionError, PluginError, ProgramCache, Registry, check_contract, hookspecs

ENTRY_POINT_GROUP = "oarlock.plugins"
#: plugins loaded as if installed, from their source (``os.pathsep``-separated): an import name
#: (``oarlock_mydev``), a ``.py`` file or a package folder. ``oarlock conformance --plugin``
#: sets it, so every process of a run (workers, the generated-primitives probe, mpiexec
#: ranks) loads the same plugin.
PATHS_VARIABLE = "OARLOCK_PLUGIN_PATHS"
#: seconds one plugin's import may take before it is recorded as unavailable (a plugin that
#: blocks at import, waiting for a driver or the network, never hangs ``fw.devices()``)
IMPORT_TIMEOUT_VARIABLE = "OARLOCK_PLUGIN_IMPORT_TIMEOUT"
DEFAULT_IMPORT_TIMEOUT = 60.0


@dataclass
class PluginRecord:
    """What ``oarlock devices`` shows for one plugin."""

    name: str
    module: str
    contract: tuple[int, int] | None = None
    info: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    device_types: list[str] = field(default_factory=list)
    kernel_count: int = 0
    #: what it registered for other plugins' device types with ``override=True``:
    #: ``["kernel 'exp' (float32) on cpu, owned by plugin 'cpu'", ...]``
    overrides: list[str] = field(default_factory=list)
    #: where the plugin came from when it is not an installed entry point (``OARLOCK_PLUGIN_PATHS``)
    loaded_from: str = ""

    @property
    def version(self) -> str:
        """The plugin's version (its ``oarlock_plugin_info()["version"]``, else the module's
        ``__version__``), or ``""`` when it declares none."""
        v = self.info.get("version") or getattr(sys.modules.get(self.module), "__version__", "")
        return str(v or "")


class PluginHost:
    """Loads plugins into one :class:`Registry`."""

    def __init__(self) -> None:
        self.registry = Registry(program_cache=_PROGRAM_CACHE)
        self.records: dict[str, PluginRecord] = {}
        self.manager = pluggy.PluginManager(hookspecs.PROJECT)
        self.manager.add_hookspecs(hookspecs)

    # -- loading ------------------------------------------------------------------------
    def load_entry_points(
        self,
        eps: list[EntryPoint] | None = None,
        *,
        skip: dict[str, str] | None = None,
        announce: Callable[[str], None] | None = None,
    ) -> None:
        """Load plugins from ``eps`` (default: the installed entry points), honouring
        ``OARLOCK_PLUGINS=cpu,opencl``. Plugins named in ``skip`` are recorded as broken with
        the given error and not loaded (see :func:`probe_for_crashes`); ``announce`` is told
        ``"start NAME"`` and ``"done NAME"`` around each plugin."""
        specs: list[str] = []
        if eps is None:
            eps = sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: (e.name != "cpu", e.name))
            specs = [p for p in os.environ.get(PATHS_VARIABLE, "").split(os.pathsep) if p.strip()]
        # the top-level modules those specs provide (package folders and import names)
        from_paths = {(plugin_name(p) if _is_path(p) else p).split(".")[0] for p in specs}
        wanted = os.environ.get("OARLOCK_PLUGINS", "").strip()
        allow = {w.strip() for w in wanted.split(",") if w.strip()} if wanted else None
        for ep in eps:
            if allow is not None and ep.name not in allow:
                continue
            if ep.name in self.records or ep.module.split(".")[0] in from_paths:
                continue  # a plugin loaded from its source supersedes its installed copy
            if skip and ep.name in skip:
                self.records[ep.name] = PluginRecord(name=ep.name, module=ep.value, error=skip[ep.name])
                continue
            if announce is not None:
                announce(f"start {ep.name}")
            try:
                module = _import_bounded(ep.load, ep.name, ep.value)
            except BaseException as exc:  # noqa: BLE001 — a broken plugin never breaks import
                self._broken(ep.name, ep.value, "import", exc)
                continue
            self.register_module(module, name=ep.name, raise_errors=False)
            if announce is not None:
                announce(f"done {ep.name}")
        for spec in specs:  # after the installed ones, as if their entry points came last
            name = plugin_name(spec)
            if skip and name in skip:
                self.records[name] = PluginRecord(name=name, module=spec, error=skip[name])
                continue
            if announce is not None:
                announce(f"start {name}")
            self.load_path(spec)
            if announce is not None:
                announce(f"done {name}")

    def load_path(self, spec: str, *, raise_errors: bool = False) -> PluginRecord:
        """Load one plugin from its source (see :data:`PATHS_VARIABLE` for what ``spec`` may be),
        as if it were installed; its record says where it came from."""
        name = plugin_name(spec)
        rec = self.records.get(name)
        if rec is not None and rec.error is None:
            return rec
        try:
            module = _import_bounded(lambda: import_spec(spec), name, spec)
        except BaseException as exc:  # noqa: BLE001
            self._broken(name, spec, "import", exc)
            if raise_errors:
                raise PluginError(self.records[name].error) from exc
            return self.records[name]
        rec = self.register_module(module, name=name, raise_errors=raise_errors)
        rec.loaded_from = spec
        return rec

    def register_module(
        self, module: ModuleType | str, name: str | None = None, *, raise_errors: bool = True
    ) -> PluginRecord:
        """Register one plugin module (what an entry point names)."""
        if isinstance(module, str):
            module = importlib.import_module(module)
        name = name or module.__name__.rsplit(".", 1)[-1]
        if name in self.records and self.records[name].error is None:
            return self.records[name]
        record = PluginRecord(name=name, module=module.__name__)
        self.records[name] = record
        try:
            record.contract = check_contract(name, getattr(module, "CONTRACT", None))
        except ContractVersionError as exc:
            record.error = str(exc)
            if raise_errors:
                raise
            return record
        before_rt = set(self.registry.runtimes)
        before_k = len(self.registry.kernels)
        self.registry.plugin = name
        try:
            # pluggy validates the hook implementations against the hookspecs.
            self.manager.register(module, name=name)
            hook = getattr(module, "oarlock_register", None)
            if hook is None:
                raise PluginError(
                    f"[plugins] plugin '{name}' ({module.__name__}) defines no oarlock_register hook"
                )
            with _named_on_crash():
                _guarded("registering", name, module.__name__)(hook, registry=self.registry)
            info_hook = getattr(module, "oarlock_plugin_info", None)
            if info_hook is not None:
                record.info = dict(info_hook() or {})
        except BaseException as exc:  # noqa: BLE001
            # Roll back what the failing hook registered, so a half plugin is never used.
            for k in set(self.registry.runtimes) - before_rt:
                del self.registry.runtimes[k]
            for key in [k for k, e in self.registry.kernels.items() if e.plugin == name]:
                del self.registry.kernels[key]
            for table in (self.registry.compilers, self.registry.communicators):
                for key in [k for k, e in table.items() if e[0] == name]:
                    del table[key]
            self.registry.overrides[:] = [o for o in self.registry.overrides if o[0] != name]
            if self.manager.is_registered(module):
                self.manager.unregister(module)
            self._broken(name, module.__name__, "oarlock_register", exc, record)
            if raise_errors:
                raise PluginError(record.error) from exc
            return record
        finally:
            self.registry.plugin = "?"
        record.device_types = sorted(set(self.registry.runtimes) - before_rt)
        record.kernel_count = len(self.registry.kernels) - before_k
        self._list_overrides()
        return record

    def _list_overrides(self) -> None:
        """Each record's ``overrides``, naming the owner as the registry knows it now (the
        owner may load after the plugin that overrides it)."""
        for rec in self.records.values():
            rec.overrides = []
        for (
            plugin,
            what,
            dt,
        ) in self.registry.overrides:
            owner = self.plugin_of(dt)
            whose = f"owned by plugin '{owner}'" if owner else "a device type no loaded plugin owns"
            if plugin in self.records:
                self.records[plugin].overrides.append(f"{what} on {dt}, {whose}")

    def _broken(
        self, name: str, where: str, stage: str, exc: BaseException, record: PluginRecord | None = None
    ) -> None:
        record = record or PluginRecord(name=name, module=where)
        tb = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        record.error = (
            f"[plugins] plugin '{name}' failed in {stage}\n"
            f"  module: {where}\n"
            f"  error:  {tb}\n"
            f"  fix:    reinstall or uninstall the plugin, or leave it out with OARLOCK_PLUGINS"
        )
        self.records[name] = record

    # -- queries ------------------------------------------------------------------------
    def broken(self) -> dict[str, str]:
        return {n: r.error for n, r in self.records.items() if r.error}

    def plugin_of(self, device_type: str) -> str | None:
        entry = self.registry.runtimes.get(device_type)
        return entry[0] if entry else None


def _is_path(spec: str) -> bool:
    return spec.endswith(".py") or os.sep in spec


def plugin_name(spec: str) -> str:
    """The name a plugin given by :data:`PATHS_VARIABLE`'s ``spec`` is registered under: a
    package folder's or file's name, or an import name's last part."""
    if not _is_path(spec):
        return spec.rsplit(".", 1)[-1]
    path = os.path.abspath(spec)
    if os.path.basename(path) == "__init__.py":
        path = os.path.dirname(path)
    return os.path.splitext(os.path.basename(path))[0]


def import_spec(spec: str) -> ModuleType:
    """Import a plugin from an import name, a ``.py`` file or a package folder."""
    if not _is_path(spec):
        return importlib.import_module(spec)
    path = os.path.abspath(spec)
    search = None
    if os.path.isdir(path):  # a package folder
        search, path = [path], os.path.join(path, "__init__.py")
    elif os.path.basename(path) == "__init__.py":
        search = [os.path.dirname(path)]
    name = plugin_name(spec)
    modname = name if search else f"oarlock_plugin_{name}"
    if modname in sys.modules and getattr(sys.modules[modname], "__file__", None) == path:
        return sys.modules[modname]
    mod_spec = importlib.util.spec_from_file_location(modname, path, submodule_search_locations=search)
    if mod_spec is None or mod_spec.loader is None or not os.path.exists(path):
        raise PluginError(f"[plugins] no Python module at {spec!r} (looked for {path})")
    module = importlib.util.module_from_spec(mod_spec)
    sys.modules[mod_spec.name] = module
    try:
        mod_spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[mod_spec.name]
        raise
    return module


def import_timeout() -> float:
    """Seconds one plugin's import may take (:data:`IMPORT_TIMEOUT_VARIABLE`, default 60)."""
    value = os.environ.get(IMPORT_TIMEOUT_VARIABLE, "").strip()
    try:
        return float(value) if value else DEFAULT_IMPORT_TIMEOUT
    except ValueError:
        raise PluginError(
            f"[plugins] {IMPORT_TIMEOUT_VARIABLE} must be a number of seconds, got {value!r}"
        ) from None


def _import_bounded(load: Callable[[], ModuleType], name: str, where: str) -> ModuleType:
    """``load()`` in a daemon thread, waited for at most :func:`import_timeout` seconds: a
    plugin whose import blocks is reported (and left blocked in its thread), never waited on."""
    timeout = import_timeout()
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["module"] = _guarded("importing", name, where)(load)
        except BaseException as exc:  # noqa: BLE001 — handed to the caller
            box["error"] = exc

    thread = threading.Thread(target=target, name=f"oarlock-import-{name}", daemon=True)
    with _named_on_crash():
        thread.start()
        thread.join(timeout)
    if thread.is_alive():
        raise PluginError(
            f"importing it did not finish within {timeout:g} s (it blocks: waiting for a device, a "
            f"driver, a lock or the network?); the plugin is unavailable in this process. Raise "
            f"{IMPORT_TIMEOUT_VARIABLE} if it is only slow"
        )
    if "error" in box:
        raise box["error"]
    return box["module"]


# -- a plugin that kills the process -----------------------------------------------------------
def _guarded(stage: str, name: str, module: str) -> Callable[..., Any]:
    """A caller whose frame names the plugin: if the process dies inside it, faulthandler's
    traceback carries the line ``File "<oarlock: registering plugin 'x' (mod); ...>"``."""
    filename = (
        f"<oarlock: {stage} plugin '{name}' ({module}); if the process died here, leave the plugin out "
        f"with OARLOCK_PLUGINS or run `oarlock devices`>"
    )
    ns: dict[str, Any] = {}
    exec(compile("def call(fn, *args, **kwargs):\n    return fn(*args, **kwargs)\n", filename, "exec"), ns)  # noqa: S102
    return ns["call"]


@contextlib.contextmanager
def _named_on_crash() -> Iterator[None]:
    """faulthandler on (if it was off) while plugin code runs, so a fatal signal prints the
    stack with the frame of :func:`_guarded` naming the plugin."""
    enabled = False
    if not faulthandler.is_enabled():
        try:
            faulthandler.enable()
            enabled = True
        except (AttributeError, ValueError, RuntimeError, OSError):  # no usable stderr (a notebook)
            pass
    try:
        yield
    finally:
        if enabled:
            faulthandler.disable()


_PROBE_TAG = "oarlock-plugin-probe:"


def _probe_main() -> None:
    """The child of :func:`probe_for_crashes`: load every plugin, saying which one runs."""
    skip = {n: "skipped" for n in os.environ.get("OARLOCK_PROBE_SKIP", "").split(",") if n}
    PluginHost().load_entry_points(skip=skip, announce=lambda s: print(_PROBE_TAG, s, flush=True))


def probe_for_crashes(timeout: float = 120.0) -> dict[str, str]:
    """Load the plugins in a child process first and return ``{name: error}`` for each one
    that kills it (a segfault in ``oarlock_register``) or hangs it, so ``oarlock devices``
    can show the plugin instead of dying with it. Pass the result to :func:`host`."""
    crashed: dict[str, str] = {}
    while True:
        env = dict(os.environ, OARLOCK_PROBE_SKIP=",".join(crashed))
        cmd = [sys.executable, "-c", "from framework._src.plugins import _probe_main; _probe_main()"]
        try:
            r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
            out, code = r.stdout, r.returncode
        except subprocess.TimeoutExpired as exc:
            out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
            code = None
        if code == 0:
            return crashed
        started = [ln.split()[1:] for ln in out.splitlines() if ln.startswith(_PROBE_TAG)]
        if not started or started[-1][0] != "start" or started[-1][1] in crashed:
            return crashed  # the child died outside any plugin: nothing to blame
        name = started[-1][1]
        if code is None:
            how = f"hung for more than {timeout:g} s"
        elif code < 0:
            try:
                how = f"died with {signal.Signals(-code).name}"
            except ValueError:
                how = f"died with signal {-code}"
        else:
            how = f"exited with status {code}"
        eps = [e for e in entry_points(group=ENTRY_POINT_GROUP) if e.name == name]
        crashed[name] = (
            f"[plugins] plugin '{name}' killed the process while loading (found in a child process)\n"
            f"  module: {eps[0].value if eps else '?'}\n"
            f"  error:  the process {how} while importing it or running its oarlock_register\n"
            f"  fix:    reinstall or uninstall the plugin, or leave it out with OARLOCK_PLUGINS"
        )


_HOST: PluginHost | None = None
#: the core's kernel cache, handed to plugins as ``registry.program_cache`` (see
#: :func:`provide_program_cache`)
_PROGRAM_CACHE: ProgramCache | None = None


def provide_program_cache(cache: ProgramCache) -> None:
    """Hand ``cache`` to every plugin as ``registry.program_cache``, for the sources it builds
    itself (the compiler provides it when imported; this floor knows nothing of compiling)."""
    global _PROGRAM_CACHE
    _PROGRAM_CACHE = cache
    if _HOST is not None:
        _HOST.registry.program_cache = cache


def host(skip: dict[str, str] | None = None) -> PluginHost:
    """The process-wide plugin host, loaded on first use (``skip``: plugins recorded as
    broken without loading them, from :func:`probe_for_crashes`; only the first call's)."""
    global _HOST
    if _HOST is None:
        _HOST = PluginHost()
        _HOST.load_entry_points(skip=skip)
    return _HOST


#: called after every registration by hand, so caches of kernel look-ups start over
_REGISTRY_LISTENERS: list[Callable[[], None]] = []


def on_registry_change(listener: Callable[[], None]) -> None:
    """Call ``listener()`` whenever :func:`register_plugin` adds kernels (the dispatcher
    subscribes to drop its look-up cache; this floor knows nothing of it)."""
    _REGISTRY_LISTENERS.append(listener)


def register_plugin(module: ModuleType | str, name: str | None = None) -> PluginRecord:
    """Register a plugin module by hand (tests, notebooks, a vendor developing a plugin).

    Installed plugins are found through the ``oarlock.plugins`` entry point; this registers one
    that is not installed. Registering a name already loaded returns its record.

    Args:
        module (ModuleType | str): the plugin module, its import name, or the path of its
            ``.py`` file or package folder, with ``CONTRACT`` and an ``oarlock_register`` hook.
        name (str, optional): the plugin's name; default the module's last name.

    Returns:
        PluginRecord: the plugin's name, module, contract, device types and kernel count; a
        plugin that fails to register raises :class:`PluginError`.

    Example:
        >>> import framework as fw
        >>> record = fw.register_plugin("plugins.cpu", name="cpu")
        >>> record.name, record.device_types, record.error
        ('cpu', ['cpu'], None)
    """
    if isinstance(module, str) and _is_path(module):
        record = host().load_path(module, raise_errors=True)
    else:
        record = host().register_module(module, name=name)
    for listener in _REGISTRY_LISTENERS:
        listener()
    return record
