"""Plugin discovery: the entry-point group ``oarlock.plugins``, one pluggy manager.

Every plugin, the in-tree CPU one included, is found the same way. A plugin that fails to
import, declares an incompatible contract or whose hook raises is recorded, never raised at
import time; asking for its device raises the recorded error with what to do.
"""

from __future__ import annotations

import importlib
import os
import traceback
from dataclasses import dataclass, field
from importlib.metadata import EntryPoint, entry_points
from types import ModuleType
from typing import Any

import pluggy

from adapter_api import ContractVersionError, PluginError, Registry, check_contract, hookspecs

ENTRY_POINT_GROUP = "oarlock.plugins"


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


class PluginHost:
    """Loads plugins into one :class:`Registry`."""

    def __init__(self) -> None:
        self.registry = Registry()
        self.records: dict[str, PluginRecord] = {}
        self.manager = pluggy.PluginManager(hookspecs.PROJECT)
        self.manager.add_hookspecs(hookspecs)

    # -- loading ------------------------------------------------------------------------
    def load_entry_points(self, eps: list[EntryPoint] | None = None) -> None:
        """Load plugins from ``eps`` (default: the installed entry points), honouring
        ``OARLOCK_PLUGINS=cpu,opencl``."""
        if eps is None:
            eps = sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: (e.name != "cpu", e.name))
        wanted = os.environ.get("OARLOCK_PLUGINS", "").strip()
        allow = {w.strip() for w in wanted.split(",") if w.strip()} if wanted else None
        for ep in eps:
            if allow is not None and ep.name not in allow:
                continue
            if ep.name in self.records:
                continue
            try:
                module = ep.load()
            except BaseException as exc:  # noqa: BLE001 — a broken plugin never breaks import
                self._broken(ep.name, ep.value, "import", exc)
                continue
            self.register_module(module, name=ep.name, raise_errors=False)

    def register_module(self, module: ModuleType | str, name: str | None = None, *, raise_errors: bool = True) -> PluginRecord:
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
                raise PluginError(f"[plugins] plugin '{name}' ({module.__name__}) defines no oarlock_register hook")
            hook(registry=self.registry)
            info_hook = getattr(module, "oarlock_plugin_info", None)
            if info_hook is not None:
                record.info = dict(info_hook() or {})
        except BaseException as exc:  # noqa: BLE001
            # Roll back what the failing hook registered, so a half plugin is never used.
            for k in set(self.registry.runtimes) - before_rt:
                del self.registry.runtimes[k]
            for key in [k for k, e in self.registry.kernels.items() if e.plugin == name]:
                del self.registry.kernels[key]
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
        return record

    def _broken(self, name: str, where: str, stage: str, exc: BaseException, record: PluginRecord | None = None) -> None:
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


_HOST: PluginHost | None = None


def host() -> PluginHost:
    """The process-wide plugin host, loaded on first use."""
    global _HOST
    if _HOST is None:
        _HOST = PluginHost()
        _HOST.load_entry_points()
    return _HOST


def register_plugin(module: ModuleType | str, name: str | None = None) -> PluginRecord:
    """Register a plugin module by hand (tests, notebooks, a vendor developing a plugin)."""
    from . import device as _device

    record = host().register_module(module, name=name)
    _device.invalidate_kernel_cache()
    return record
