"""The eager fast path's C extension (``fastcall.c``): built once per machine, loaded, or absent.

Binary tensor operators (``x + y``...) spend most of a small op in Python calls (the operator,
``apply``, ``dispatch.run``, the shape rule, ``Tensor._make``); ``fastcall.c`` does the plain
case of that path in C (see its header: one dtype, one device, one shape, no mode active, no
gradient needed) and calls the Python path for everything else. Built with the system C
compiler (``$CC``, else ``cc``/``gcc``/``clang``) against this interpreter's headers the first
time it is needed and kept in the cache folder (``$OARLOCK_CACHE_DIR/native``, else the user
cache dir), keyed by the source, the interpreter and the compiler; later processes load it.

Without a compiler or headers, with ``OARLOCK_FAST_DISPATCH=0``, or when the build fails, the
operators are the Python functions themselves (same results, same errors); :func:`status`
says which path is active and why. A process that finds no built extension builds it on a
background thread (``OARLOCK_COMPILE_BACKGROUND``, default on, as the compiler's kernels do:
the first step waits for no compiler) and runs the Python path until it lands; then the
operators are swapped for the C ones (:func:`when_ready`). :func:`wait` waits for it.

Why a CPython extension and not cffi: the work to save is Python object handling (reading a
tensor's slots, context variables, making the output Tensor); cffi calls C with C values and
would add its own conversion on each call, while the C API does that work directly.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import os
import stat
import subprocess
import sys
import sysconfig
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

from adapter_api import native

from . import env

_SOURCE = Path(__file__).with_name("fastcall.c")
_MODULE = "_oarlock_fastcall"
#: the loaded extension, or None; :func:`status` says why
LOADED: list[ModuleType | None] = [None]
_WHY: list[str] = ["not loaded yet"]
_LOCK = threading.Lock()
_BUILDER: list[threading.Thread | None] = [None]
_ON_READY: list[Callable[[ModuleType], None]] = []


def _cache_root() -> Path:
    d = os.environ.get("OARLOCK_CACHE_DIR")
    if d:
        return Path(d) / "native"
    import platformdirs

    return Path(platformdirs.user_cache_dir("oarlock")) / "native"


def _private_dir(d: Path) -> None:
    """Make ``d`` (mode 0700) and refuse one another user could write into: a library loaded
    from it runs as this process."""
    d.mkdir(parents=True, exist_ok=True, mode=0o700)
    st = d.stat()
    if st.st_uid != os.getuid() or st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise OSError(f"{d} is writable by another user")


def _build(so: Path, cc: str, include: str) -> None:
    with tempfile.TemporaryDirectory(prefix="oarlock-fastcall-", dir=so.parent) as tmp:
        out = Path(tmp) / so.name
        cmd = [cc, "-O2", "-shared", "-fPIC", "-std=gnu11", f"-I{include}", str(_SOURCE), "-o", str(out)]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            raise OSError(f"{' '.join(cmd)} failed: {r.stderr.strip()[:500]}")
        os.replace(out, so)


def load() -> ModuleType | None:
    """The extension if built (loaded now); else None, with the build started on a background
    thread (or done now with ``OARLOCK_COMPILE_BACKGROUND=0``); :func:`status` says which."""
    if LOADED[0] is not None or _WHY[0] != "not loaded yet":
        return LOADED[0]
    try:
        mod = _load()
    except Exception as exc:  # noqa: BLE001 — any failure means the Python path, said in status()
        _WHY[0] = f"python path: {type(exc).__name__}: {exc}"
        return None
    if mod is not None:
        LOADED[0] = mod
        _WHY[0] = f"c extension {mod.__file__}"
    return mod


def when_ready(callback: Callable[[ModuleType], None]) -> None:
    """Call ``callback(module)`` when a background build lands (at once if it has landed);
    never when the extension was loaded at once or cannot be built."""
    with _LOCK:
        if _BUILDER[0] is None or LOADED[0] is None:
            _ON_READY.append(callback)
            return
    callback(LOADED[0])


def wait(timeout: float | None = None) -> ModuleType | None:
    """Wait for a background build of the extension (if one runs); the extension or None."""
    t = _BUILDER[0]
    if t is not None:
        t.join(timeout)
    return LOADED[0]


def _build_in_background(so: Path, cc: str, include: str) -> None:
    try:
        _build(so, cc, include)
        mod = _import(so)
    except Exception as exc:  # noqa: BLE001 — any failure means the Python path, said in status()
        _WHY[0] = f"python path: {type(exc).__name__}: {exc}"
        return
    with _LOCK:
        LOADED[0] = mod
        _WHY[0] = f"c extension {mod.__file__} (built in the background)"
        ready = list(_ON_READY)
        _ON_READY.clear()
    for cb in ready:
        cb(mod)


def _load() -> ModuleType | None:
    if not env.flag("OARLOCK_FAST_DISPATCH", True):
        _WHY[0] = "python path: OARLOCK_FAST_DISPATCH=0"
        return None
    if sys.implementation.name != "cpython":
        _WHY[0] = f"python path: {sys.implementation.name} is not CPython"
        return None
    include = sysconfig.get_paths().get("include") or ""
    if not os.path.exists(os.path.join(include, "Python.h")):
        _WHY[0] = f"python path: no Python.h in {include!r}"
        return None
    cc = native.find_cc()
    if cc is None:
        _WHY[0] = "python path: no C compiler ($CC, cc, gcc, clang)"
        return None
    real = os.path.realpath(cc)
    cst = os.stat(real)
    key = hashlib.sha256(
        _SOURCE.read_bytes()
        + f"\n{sys.version}\n{sysconfig.get_config_var('EXT_SUFFIX')}\n{real} {cst.st_size} {cst.st_mtime_ns}".encode()
    ).hexdigest()[:24]
    root = _cache_root()
    _private_dir(root)
    so = root / f"fastcall-{key}{sysconfig.get_config_var('EXT_SUFFIX') or '.so'}"
    if not so.exists():
        if env.flag("OARLOCK_COMPILE_BACKGROUND", True):
            _WHY[0] = "python path until the extension, building in the background, lands"
            _BUILDER[0] = threading.Thread(
                target=_build_in_background,
                args=(so, cc, include),
                name="oarlock-fastcall-build",
                daemon=True,
            )
            _BUILDER[0].start()
            return None
        _build(so, cc, include)
    return _import(so)


def _import(so: Path) -> ModuleType:
    st = so.stat()
    if st.st_uid != os.getuid() or st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise OSError(f"{so} is writable by another user")
    loader = importlib.machinery.ExtensionFileLoader(_MODULE, str(so))
    spec = importlib.util.spec_from_file_location(_MODULE, str(so), loader=loader)
    assert spec is not None
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


def status() -> str:
    """Which path the eager binary operators take: ``"c extension <file>"`` or
    ``"python path: <why>"``.

    Example:
        >>> import framework as fw
        >>> from framework._src import fastcall
        >>> fastcall.status().split(" ")[0] in ("c", "python")
        True
    """
    return _WHY[0]
