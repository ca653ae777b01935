"""Skip marks of the CUDA plugin tests (imported by the test modules next to it).

GPU tests carry :data:`requires_cuda`: without a usable device they are reported SKIPPED with
the reason ``no CUDA device (...)``, never silently passed.
"""

from __future__ import annotations

import functools

import pytest


@functools.cache
def cuda_unavailable() -> str | None:
    """Why no CUDA device can be used (None when one can)."""
    from plugins.cuda.errors import unavailable_reason

    return unavailable_reason()


def skip_reason() -> str:
    reason = cuda_unavailable() or ""
    return reason if reason.startswith("no CUDA device") else f"no CUDA device ({reason})"


requires_cuda = pytest.mark.skipif(cuda_unavailable() is not None, reason=skip_reason())


@functools.cache
def nvrtc_unavailable() -> str | None:
    """Why NVRTC cannot be loaded here (None when it can). NVRTC needs no GPU."""
    try:
        import cupy  # noqa: F401
        from cupy_backends.cuda.libs import nvrtc

        nvrtc.getVersion()
    except Exception as exc:  # noqa: BLE001
        return (
            f"NVRTC is not available ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})"
        )
    return None


requires_nvrtc = pytest.mark.skipif(nvrtc_unavailable() is not None, reason=nvrtc_unavailable() or "")
