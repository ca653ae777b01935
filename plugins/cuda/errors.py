"""The one place where cupy, CUDA, NVRTC and NCCL errors become Oarlock errors.

Every call into the vendor stack that can fail runs inside :func:`vendor_errors`; what comes
out is an :mod:`adapter_api` error whose message reads
``[cuda] what happened, the value that came; what to do``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from types import ModuleType

from adapter_api import (
    CommunicationError,
    CompileError,
    DeviceError,
    KernelError,
    OarlockError,
    OutOfMemoryError,
)

INSTALL_HINT = "pip install 'oarlock[cuda]'"


def import_cupy() -> ModuleType:
    """Import cupy, or raise a :class:`DeviceError` that says how to install it."""
    try:
        import cupy
    except ImportError as exc:
        what = "is not installed" if exc.name == "cupy" else f"failed to import ({exc})"
        raise DeviceError(f"[cuda] cupy {what}; {INSTALL_HINT}") from exc
    return cupy


def unavailable_reason() -> str | None:
    """Why no CUDA device can be used here (``None`` when at least one can).

    Never raises: every failure is turned into the sentence ``oarlock devices`` prints
    after "no CUDA device".
    """
    try:
        import cupy
    except ImportError as exc:
        if exc.name == "cupy":
            return f"cupy is not installed; {INSTALL_HINT}"
        return f"cupy failed to import ({type(exc).__name__}: {_status_text(exc)}); reinstall with {INSTALL_HINT}"
    except Exception as exc:  # noqa: BLE001 — a broken cupy install is a reason, not a crash
        return f"cupy failed to import ({type(exc).__name__}: {_status_text(exc)}); reinstall with {INSTALL_HINT}"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # noqa: BLE001
        return f"no CUDA device ({_status_text(exc)})"
    if count == 0:
        return "no CUDA device (the driver reports 0 devices)"
    return None


def _status_text(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]


def _classify(exc: BaseException) -> type[OarlockError] | None:
    """The adapter error class for a vendor exception, or None when it is not a vendor one."""
    name = type(exc).__name__
    module = type(exc).__module__ or ""
    if name == "OutOfMemoryError" and module.startswith("cupy"):
        return OutOfMemoryError
    if name == "NcclError":
        return CommunicationError
    if name in ("NVRTCError", "CompileException"):
        return CompileError
    if name in ("CUDARuntimeError", "CUDADriverError", "CUBLASError", "CURANDError", "CUSOLVERError"):
        text = str(exc)
        if "MemoryAllocation" in text or "OUT_OF_MEMORY" in text or "ALLOC_FAILED" in text:
            return OutOfMemoryError
        return KernelError
    return None


@contextlib.contextmanager
def vendor_errors(
    what: str, fix: str = "check the arguments and the device state", *, device: int | None = None
) -> Iterator[None]:
    """Run a block of vendor calls; turn vendor exceptions into adapter errors.

    ``what`` names the action (``"allocate 4096 bytes"``); ``fix`` is what the user can do.
    Errors that are already Oarlock's pass through untouched.

    Example::

        with vendor_errors("copy 1024 bytes host to device", device=0):
            runtime.memcpyAsync(...)
    """
    try:
        yield
    except OarlockError:
        raise
    except Exception as exc:
        err = translate(exc, what, fix, device)
        if err is None:
            raise
        raise err from exc


def translate(
    exc: BaseException,
    what: str,
    fix: str = "check the arguments and the device state",
    device: int | None = None,
) -> OarlockError | None:
    """The adapter error for a vendor exception (None when ``exc`` is not a vendor one); the
    form of :func:`vendor_errors` for hot paths that cannot afford a context manager."""
    cls = _classify(exc)
    if cls is None:
        return None
    where = f" on cuda:{device}" if device is not None else ""
    if cls is OutOfMemoryError:
        fix = "free tensors, call empty_cache() or use a smaller batch"
    return cls(f"[cuda] {what}{where} failed, {type(exc).__name__}: {_status_text(exc)}; {fix}")
