"""OpenCL status codes and build logs turned into Oarlock errors, in one place."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pyopencl as cl

from adapter_api import CompileError, KernelError, OarlockError, OutOfMemoryError

_OOM_CODES = {
    cl.status_code.MEM_OBJECT_ALLOCATION_FAILURE,
    cl.status_code.OUT_OF_RESOURCES,
    cl.status_code.OUT_OF_HOST_MEMORY,
    cl.status_code.INVALID_BUFFER_SIZE,
}


def _code(exc: cl.Error) -> int | None:
    try:
        return exc.code
    except Exception:  # pyopencl errors built without a routine/code
        return None


def log_excerpt(log: str, limit: int = 1500) -> str:
    """The useful part of a build log: the error lines first, then the rest, clipped."""
    lines = [ln for ln in log.splitlines() if ln.strip()]
    errors = [ln for ln in lines if "error" in ln.lower()]
    text = "\n".join(errors or lines)
    return text if len(text) <= limit else text[:limit] + " ..."


def translate(exc: cl.Error, action: str, device: str, *, nbytes: int | None = None) -> OarlockError:
    """The Oarlock error for a pyopencl error raised while doing ``action`` on ``device``."""
    code = _code(exc)
    what = getattr(exc, "what", None)
    reason = what.what() if callable(getattr(what, "what", None)) else str(exc)
    if code in _OOM_CODES:
        size = f" of {nbytes} bytes" if nbytes is not None else ""
        return OutOfMemoryError(
            f"[opencl] {action}{size} failed on device '{device}': {reason}; free tensors, "
            f"call empty_cache(), or use smaller batches"
        )
    return KernelError(
        f"[opencl] {action} failed on device '{device}': {reason}; "
        f"check the arguments, or report it with the device name"
    )


@contextmanager
def check(action: str, device: str, *, nbytes: int | None = None) -> Iterator[None]:
    """Run the body, raising pyopencl errors as Oarlock errors that name ``action``."""
    try:
        yield
    except cl.Error as exc:
        raise translate(exc, action, device, nbytes=nbytes) from exc


def build_error(
    exc: cl.Error, program: cl.Program, what: str, device: cl.Device, error: type[OarlockError] = CompileError
) -> OarlockError:
    """The error for a failed clBuildProgram, with an excerpt of the build log."""
    try:
        log = program.get_build_info(device, cl.program_build_info.LOG)
    except cl.Error:
        log = ""
    if not log.strip():
        text = str(exc)
        log = text.split("Build on", 1)[-1]
    return error(
        f"[opencl] clBuildProgram failed for {what} on device '{device.name.strip()}':\n"
        f"{log_excerpt(log)}\n"
        f"; fix the source, or report it with the device and driver version"
    )
