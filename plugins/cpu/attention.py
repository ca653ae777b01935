"""Fused kernels of the ``attention`` composite and its gradient ``attention_grad`` on cpu.

The decomposition writes the scores, the weights and their exponentials (Lq x Lk per head) to
memory and reads them back three times; BLAS runs the per-head products (64 x 16 @ 16 x 64 in
the tiny Llama) at half its speed on large ones. ``attention.c`` instead works on blocks
of query rows that stay in the cache, skips the keys a causal mask hides, and recomputes the
weights in the backward pass instead of keeping them (as flash attention does).

The C (both vector widths in one library where the wide one pays, chosen per call by
:func:`_wide`) is built once per
machine by the plugin's compiler (:class:`~plugins.cpu.compiler.
CPUCompiler`: ``-O3 -march=native``, OpenMP over the heads) through the core's kernel cache
(``registry.program_cache``, handed over when the plugin registers: keyed by the source, the
compiler and the CPU, entries verified before they load). bfloat16 tensors (AMP's attention,
AMP class "allow") run the float32 kernel: widened exactly, each output rounded once (the
``_bf16`` entries). A mask tensor, heads that broadcast (q, k and v with different leading
shapes) and a machine without a C compiler take the numpy path below, which computes what
the decomposition computes.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np

from .compiler import attention_wide, own_options, own_programs
from .kernels import _on_stream

_SOURCE = Path(__file__).with_name("attention.c")


#: the entries of attention.c: the forward and backward with AVX2 vectors, then with AVX-512
#: ones, then on bfloat16 tensors (computed in float32, the width an argument); one build (one
#: compiler process, one cache entry) holds all six
ENTRIES = ("attn_fwd", "attn_bwd", "attn_fwd_wide", "attn_bwd_wide", "attn_fwd_bf16", "attn_bwd_bf16")
BF16 = np.dtype(ml_dtypes.bfloat16)
_F32 = np.dtype(np.float32)


def _programs(dtype: np.dtype) -> Any:
    """The C programs of :data:`ENTRIES` for ``dtype`` (float32/float64; bfloat16 takes the
    float32 build), or None without a C compiler (warned once; the numpy path runs)."""
    dtype = _F32 if dtype == BF16 else dtype
    return own_programs(_SOURCE, ENTRIES, own_options(_SOURCE.name, dtype), "fused attention")


def _wide(dtype: np.dtype, d: int, dv: int, lk: int) -> bool:
    """Whether to run the AVX-512 build: it pays on this CPU (compiler.attention_wide), the
    head sizes are whole 64-byte vectors and there are at least two vectors of keys. On an AMD
    Zen 5 (one thread, causal, 2026-12-03) it took 64 heads of 64 x 16 forward and backward in
    0.256 and 0.524 ms against 0.285 and 0.588 with AVX2 vectors, 16 heads of 256 x 64 in 1.99
    and 3.61 against 2.87 and 5.60; heads of 8 floats (padded to 16) and 16 keys ran slower.
    Zen 4 runs AVX-512 in two halves and measured it no faster: there the library is built
    without it (its _wide entries run the AVX2 code)."""
    w = 64 // dtype.itemsize
    return d % w == 0 and dv % w == 0 and lk >= 2 * w and attention_wide()


def _fits(ins: list) -> bool:
    """Whether the C kernel takes these inputs (the mask is counted by the caller): q, k, v
    (and the output's gradient) of one float dtype, rank >= 3, one leading (batch, heads) shape."""
    q = ins[0]
    return (
        (q.dtype.char in "fd" or q.dtype == BF16)
        and q.ndim >= 3
        and all(t.dtype == q.dtype and t.ndim == q.ndim and t.shape[:-2] == q.shape[:-2] for t in ins)
    )


def _ptr(prog: Any, a: np.ndarray) -> Any:
    # a C-contiguous array (0.45 us; its __array_interface__ 2.8); bfloat16 as its 16-bit words
    return prog.ffi.from_buffer(a.view(np.uint16) if a.dtype == BF16 else a)


def _contiguous(arrays: list) -> tuple[list, list]:
    """Each array, or a C-contiguous buffer standing for it, and the (array, buffer) pairs to
    copy between them on each run (a bound call reads its arrays when it runs, not when bound)."""
    bufs, copies = [], []
    for a in arrays:
        if a.flags.c_contiguous:
            bufs.append(a)
        else:
            b = np.empty(a.shape, a.dtype)
            bufs.append(b)
            copies.append((a, b))
    return bufs, copies


def _c_call(which: int, outs: list, ins: list, causal: bool, scale: float) -> Any:
    """The bound C call of the forward (``which`` 0: q, k, v -> o) or the backward (1: q, k,
    v, do -> dq, dk, dv), or None when these inputs take the numpy path."""
    if len(ins) != 3 + which or not _fits(ins):
        return None
    q, k, v, dt = *ins[:3], ins[0].dtype
    progs = _programs(dt)
    if progs is None:
        return None
    half = dt == BF16  # bfloat16 (AMP): the float32 kernel between exact widening and one rounding
    wide = _wide(_F32 if half else dt, q.shape[-1], v.shape[-1], k.shape[-2])
    f = progs[4 + which] if half else progs[which + 2 * wide]
    ins, copy_in = _contiguous(ins)
    res, copy_out = _contiguous(outs)
    q, k, v = ins[:3]
    dims = (math.prod(q.shape[:-2]), q.shape[-2], k.shape[-2], q.shape[-1], v.shape[-1])
    args = (
        *(_ptr(f, t) for t in (*ins, *res)),
        *dims,
        float(scale),
        int(causal),
        *((int(wide),) if half else ()),
    )
    name = ("attention", "attention_grad")[which]

    def run(keep: tuple = (ins, res, outs)) -> None:
        for a, b in copy_in:
            np.copyto(b, a)
        if f.fn(*args) != 0:
            raise MemoryError(f"[cpu] {name}: no memory for the fused kernel's scratch rows")
        for o, b in copy_out:
            np.copyto(o, b)

    return run


# -- the numpy path: what the decomposition computes -----------------------------------------
def _weights(q: np.ndarray, k: np.ndarray, mask: np.ndarray | None, causal: bool, scale: float) -> np.ndarray:
    s = np.matmul(q * q.dtype.type(scale), np.swapaxes(k, -1, -2))
    if mask is not None:
        s = np.where(mask, s, -np.inf) if mask.dtype == np.bool_ else s + mask
    if causal:
        lq, lk = s.shape[-2:]
        s = np.where(np.arange(lk)[None, :] <= np.arange(lq)[:, None] + (lk - lq), s, -np.inf)
    with np.errstate(invalid="ignore"):
        e = np.exp(s - s.max(-1, keepdims=True))
        return (e / e.sum(-1, keepdims=True)).astype(q.dtype, copy=False)


def _sum_to(g: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    lead = g.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(
        i + lead for i, s in enumerate(shape) if s == 1 and g.shape[i + lead] != 1
    )
    return g.sum(axis=axes, keepdims=True).reshape(shape) if axes else g


def _in_float32(fn: Any, outs: list, ins: list, causal: bool, scale: float) -> bool:
    """bfloat16 without the C kernel: ``fn`` on the inputs widened to float32, each output
    rounded once to bfloat16 (what the C entries compute); False for other dtypes."""
    if not any(t.dtype == BF16 for t in ins):
        return False
    wide = [np.empty(o.shape, _F32) for o in outs]
    fn(None, wide, [t.astype(_F32) if t.dtype == BF16 else t for t in ins], causal, scale)
    for o, w in zip(outs, wide):
        np.copyto(o, w.astype(o.dtype))
    return True


def _attention(ctx: Any, outs: list, ins: list, causal: bool, scale: float) -> None:
    run = _c_call(0, outs, ins, causal, scale)
    if run is not None:
        run()
        return
    if _in_float32(_attention, outs, ins, causal, scale):
        return
    q, k, v = ins[:3]
    p = _weights(q, k, ins[3] if len(ins) > 3 else None, causal, scale)
    np.copyto(outs[0], np.matmul(p, v))


def _attention_grad(ctx: Any, outs: list, ins: list, causal: bool, scale: float) -> None:
    run = _c_call(1, outs, ins, causal, scale)
    if run is not None:
        run()
        return
    if _in_float32(_attention_grad, outs, ins, causal, scale):
        return
    q, k, v, do = ins[:4]
    p = _weights(q, k, ins[4] if len(ins) > 4 else None, causal, scale)
    dp = np.matmul(do, np.swapaxes(v, -1, -2))
    with np.errstate(invalid="ignore"):
        ds = p * (dp - (p * dp).sum(-1, keepdims=True))
    sc = q.dtype.type(scale)
    grads = (
        np.matmul(ds, k) * sc,
        np.matmul(np.swapaxes(ds, -1, -2), q * sc),
        np.matmul(np.swapaxes(p, -1, -2), do),
    )
    for o, g, t in zip(outs, grads, ins[:3]):
        np.copyto(o, _sum_to(g, t.shape))


def _binder(which: int) -> Any:
    def bind(ctx: Any, outs: list, ins: list, causal: bool, scale: float) -> Any:
        """Static programs: the C call with its pointers made once (None: the kernel runs)."""
        return _c_call(which, list(outs), list(ins), causal, scale) if ctx.stream is None else None

    return bind


_attention.bind = _binder(0)  # type: ignore[attr-defined]
_attention_grad.bind = _binder(1)  # type: ignore[attr-defined]


def register_attention(registry: Any) -> None:
    """The fused ``attention`` and ``attention_grad`` kernels (float32, float64, and bfloat16
    computed in float32, so that AMP's attention does not fall back to its decomposition) on cpu."""
    for op, fn in (("attention", _attention), ("attention_grad", _attention_grad)):
        registry.add_kernel(op, "cpu", ("float32", "float64", BF16), _on_stream(fn), bind=fn.bind)
