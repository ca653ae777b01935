"""Emitters: a scheduled loop-IR program as C, OpenCL C or CUDA C source.

- :mod:`.base`: the emitter base (expression templating, reductions, the kernel's skeleton).
- :mod:`.rows`: the "rows" layout (a work-item per row, chunked loops along it).
- :mod:`.c`: C: ``#pragma omp parallel for`` across rows, ``#pragma omp simd`` (with reduction
  clauses) along the row, and its x86 tuning.
- :mod:`.gpu`: OpenCL C / CUDA C: one work-group (block) of ``L`` work-items per row, a strided
  loop along the row and a tree reduction in local (shared) memory; OpenCL C for CPU devices.
- :mod:`.helpers` and the ``.h`` / ``.cl`` files beside it: the C helpers kernels call.
"""

from __future__ import annotations

from .base import HALVES, Emitter, integer_template, is_float, plan_spills
from .c import CEmitter
from .gpu import CUDAEmitter, OpenCLEmitter, OpenCLRowEmitter
from .helpers import needed_helpers
from .rows import _RowLoops

__all__ = [
    "EMITTERS",
    "HALVES",
    "LOCAL_SIZE",
    "CEmitter",
    "CUDAEmitter",
    "Emitter",
    "OpenCLEmitter",
    "OpenCLRowEmitter",
    "emitter",
    "integer_template",
    "is_float",
    "needed_helpers",
    "plan_spills",
]


EMITTERS: dict[str, type[Emitter]] = {
    "c": CEmitter,
    "opencl-c": OpenCLEmitter,
    "cuda": CUDAEmitter,
    "opencl-c/cpu": OpenCLRowEmitter,
}
#: work-group size; for the "rows" layout, rows per work-group (PoCL: 64 measured best for rms_norm)
LOCAL_SIZE = {"c": 1, "opencl-c": 64, "cuda": 256, "opencl-c/cpu": 64}


def emitter(
    language: str, local_size: int | None = None, device_kind: str = "", width: int | None = None
) -> Emitter:
    """The emitter for a compiler's ``language`` (``"c"``, ``"opencl-c"``, ``"cuda"``);
    ``device_kind="cpu"`` picks a CPU-shaped variant where there is one; ``width``, the vector
    width of an emitter that chunks its passes (:class:`_RowLoops`), else its default."""
    if device_kind and f"{language}/{device_kind}" in EMITTERS:
        language = f"{language}/{device_kind}"
    try:
        cls = EMITTERS[language]
    except KeyError:
        raise NotImplementedError(
            f"[compiler] no emitter for kernel language {language!r}; known: {sorted(EMITTERS)}"
        ) from None
    em = cls(local_size or LOCAL_SIZE[language])
    if width is not None and isinstance(em, _RowLoops):
        em.width = width
    return em
