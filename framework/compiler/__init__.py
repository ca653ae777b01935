"""The compiler: fusion groups lowered to a loop IR and built through compile access.

Composites whose decomposition is elementwise ops plus reductions along the last axis
(rms_norm, layer_norm, softmax, log_softmax, gelu, silu, ...) run in eager mode as one
generated kernel per call when the device's plugin has compile access: the decomposition is
traced on symbolic tensors (:func:`trace`), lowered to :class:`Program`, emitted as C, OpenCL C
or CUDA C (:func:`emit`) and built once through :data:`CACHE` (memory and disk, keyed by
content). ``OARLOCK_COMPILE=0`` turns it off. Their backward is generated the same way.

>>> import framework as fw
>>> from framework import compiler
>>> x = fw.randn([8, 64])
>>> y = fw.nn.functional.rms_norm(x)                     # a generated kernel where possible
>>> print(compiler.lower("rms_norm", x, epsilon=1e-6).describe())  # doctest: +SKIP

Every element-wise, comparison, cast, reduction and creation primitive the plugin does not
register is generated too (:mod:`framework.compiler.primitives`; :func:`generated_primitives`,
:func:`primitive_stats`).

Programs (``to_static``, ``jit.load``, the Predictor) are fused across op boundaries: the
``fusion`` pass (:mod:`framework.ir.passes.fusion`) groups their element-wise, broadcast,
row-reduction and reshape ops and :mod:`framework.compiler.fused` lowers, emits and builds one
kernel per group, found by the executor through ``dispatch.KERNEL_SOURCES``.

Small public API, also used by the conformance suite's ``compile`` tier:
:func:`compile_source`, :func:`launch`, :func:`trivial_kernel`, :func:`run_trivial_kernel`,
:func:`cache_stats`, :func:`lower`, :func:`emit`, :func:`generated_source`, :func:`run_generated`.

On a cold kernel cache a new program does not wait for its kernels: they build in the
background (:mod:`framework.compiler.background`) while its fused groups run unfused;
:func:`wait_for_builds` waits for them, :func:`background_stats` counts them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adapter_api import CompileError, OpArgumentError

from .._src import device as _dev
from .._src import plugins as _plugins
from .._src.ops import base as _base
from .._src.tensor import Tensor
from . import eager as _eager
from . import fused as _fused
from . import horizontal as _horizontal
from . import primitives as _primitives
from .background import background_stats, wait_for_builds
from .cache import CacheStats, ProgramCache, cache_dir, compile_error_message, source_excerpt
from .capture import NotFusible, trace
from .eager import CACHE, CompileWarning, compiler_for, install
from .emit import emitter
from .loop_ir import Program
from .primitives import generated_primitives, primitive_stats

__all__ = [
    "CACHE",
    "CacheStats",
    "CompileError",
    "CompileWarning",
    "background_stats",
    "NotFusible",
    "Program",
    "ProgramCache",
    "cache_dir",
    "cache_stats",
    "compile_error_message",
    "compile_source",
    "compiler_for",
    "emit",
    "generated_primitives",
    "generated_source",
    "has_compile_access",
    "install",
    "launch",
    "lower",
    "primitive_stats",
    "reset",
    "run_generated",
    "run_trivial_kernel",
    "source_excerpt",
    "trace",
    "trivial_kernel",
    "wait_for_builds",
]


def _device(device: Any) -> _dev.Device:
    return _dev.get_device() if device is None else _dev.parse(device)


def reset() -> None:
    """Forget traced plans, generated primitives and built programs (the disk cache stays)."""
    _eager.reset()
    _primitives.reset()
    _fused.reset()


def has_compile_access(device: Any = None) -> bool:
    """Whether ``device``'s plugin registers a compiler (and it could be created)."""
    return compiler_for(_device(device)) is not None


def _compiler(device: Any) -> Any:
    dev = _device(device)
    comp = compiler_for(dev)
    if comp is None:
        raise OpArgumentError(
            f"[compiler] device {dev} has no compile access (its plugin registers no "
            f"compiler); use another device"
        )
    return comp


def compile_source(source: str, entry: str, device: Any = None, options: tuple[str, ...] = ()) -> Any:
    """Build ``source`` (in the device's kernel language) through the program cache; returns
    the plugin's program. A compile error raises :class:`CompileError` with the compiler's log
    and the numbered source around the failing line."""
    return CACHE.get(_compiler(device), source, entry, tuple(options))


def launch(
    program: Any,
    args: list[Any],
    grid: tuple[int, ...],
    local: tuple[int, ...] | None = None,
    device: Any = None,
) -> None:
    """Launch a program from :func:`compile_source`: ``args`` are tensors (passed as their
    native views) and numpy scalars, in the kernel's parameter order."""
    dev = _device(device)
    from .._src import dispatch

    native = [a.native() if isinstance(a, Tensor) else a for a in args]
    _compiler(dev).launch(program, native, tuple(grid), local, dispatch.context(dev).stream)


def cache_stats() -> dict[str, int]:
    """Hits and builds of the eager program cache: ``{"memory_hits", "disk_hits", "compiles"}``."""
    s = CACHE.stats
    return {"memory_hits": s.memory_hits, "disk_hits": s.disk_hits, "compiles": s.compiles}


_TRIVIAL = {
    "c": "#include <stdint.h>\nvoid {e}(float* y, const float* x, float a, int64_t n) {{\n"
    "    for (int64_t i = 0; i < n; ++i) y[i] = a * x[i] + 1.0f;\n}}\n",
    "opencl-c": "__kernel void {e}(__global float* y, __global const float* x, float a, long n) {{\n"
    "    long i = get_global_id(0);\n    if (i < n) y[i] = a * x[i] + 1.0f;\n}}\n",
    "cuda": 'extern "C" __global__ void {e}(float* y, const float* x, float a, long long n) {{\n'
    "    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;\n    if (i < n) y[i] = a * x[i] + 1.0f;\n}}\n",
}


def trivial_kernel(language: str, entry: str = "oarlock_axpb") -> str:
    """Source of ``y[i] = a * x[i] + 1`` (float32; params ``y, x, a, n``) in ``language``."""
    try:
        return _TRIVIAL[language].format(e=entry)
    except KeyError:
        raise OpArgumentError(f"[compiler] no trivial kernel for language {language!r}") from None


def run_trivial_kernel(x: Tensor, a: float = 2.0, entry: str = "oarlock_axpb") -> Tensor:
    """Compile and launch :func:`trivial_kernel` on ``x``'s device; returns ``a * x + 1``."""
    from .._src.tensor import empty

    comp = _compiler(x.device)
    if x.dtype != np.float32:
        raise OpArgumentError(f"[compiler] run_trivial_kernel takes float32, got {x.dtype}")
    prog = compile_source(trivial_kernel(comp.language, entry), entry, x.device)
    y = empty(x.shape, x.dtype, x.device)
    n = x.numel()
    launch(prog, [y, x, np.float32(a), np.int64(n)], (max(n, 1),), None, x.device)
    return y


def lower(op: str, *inputs: Tensor, **attrs: Any) -> Program:
    """Trace the composite ``op``'s decomposition on ``inputs`` and return its loop-IR program
    (raises :class:`NotFusible` when it is not a fusion group)."""
    d = _base.OPS.get(op)
    if d is None or d.decomposition is None:
        raise OpArgumentError(
            f"[compiler] '{op}' is not a composite; known: "
            f"{sorted(k for k, v in _base.OPS.items() if v.decomposition)}"
        )
    return trace(op, d.decomposition, list(inputs), attrs)[0]


def emit(program: Program, language: str, entry: str | None = None, device_kind: str = "") -> str:
    """Source of ``program`` in ``language`` (``"c"``, ``"opencl-c"``, ``"cuda"``);
    ``device_kind="cpu"`` gives the CPU-shaped OpenCL variant (one work-item per row)."""
    if entry is None:
        return _eager.make_kernel(program, language, device_kind=device_kind).source
    return emitter(language, None, device_kind).source(program, entry)


def generated_source(op: str, *inputs: Tensor, **attrs: Any) -> str:
    """The source eager mode builds for ``op`` on ``inputs``' device."""
    comp = _compiler(inputs[0].device)
    kind = _eager._kind(inputs[0].device)
    return _eager.make_kernel(lower(op, *inputs, **attrs), comp.language, device_kind=kind).source


def run_generated(op: str, *inputs: Tensor, **attrs: Any) -> tuple[list[Tensor], list[Tensor]]:
    """Run composite ``op`` as a generated kernel and as its decomposition on the same inputs.

    Returns ``(generated outputs, decomposed outputs)``; raises :class:`NotFusible` or
    :class:`CompileError` when no generated kernel can run (no silent fallback here).
    """
    d = _base.OPS[op]
    ins = list(inputs)
    dev = ins[0].device
    comp = _compiler(dev)
    plan = _eager._plan(d, ins, attrs, dev, comp)
    if plan is None:
        lower(op, *inputs, **attrs)  # raises the reason
        raise NotFusible(f"'{op}' is not a fusion group for these inputs")
    plan.forward.build(comp)  # a compile error raises here, with the source
    from .._src.autograd import no_grad

    with no_grad():
        outs = _eager.generate(d, ins, attrs)
        if outs is None:
            raise CompileError(f"[compiler] '{op}' has a plan but its kernel did not run on {dev}")
        ref = d.decomposition(*ins, **attrs)  # type: ignore[misc]
    ref = [ref] if isinstance(ref, Tensor) else list(ref)
    return outs, ref


install()
_primitives.install()
_fused.install()
_horizontal.install()
#: plugins build their own sources (the cpu plugin's attention.c, ...) through a cache of their
#: own: the same folder, apart from the generated kernels' statistics (:func:`cache_stats`)
_plugins.provide_program_cache(ProgramCache())
