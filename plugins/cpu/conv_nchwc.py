"""The blocked-layout convolution on cpu (``conv_nchwc.c``): kernels of the ops ``conv2d_nchwc``,
``to_nchwc``, ``from_nchwc``, ``global_pool_nchwc`` and ``max_pool2d_nchwc``
(framework/_src/ops/composites/conv_fused.py), float32.

A program rewritten by the ``conv_nchwc`` pass keeps the values between consecutive
convolutions as (N, ceil(C / 16), H, W, 16) and converts only where the blocked region starts
and ends. The kernel vectorises over 16 output channels (an input value broadcast, times the
weights of 16 output channels), keeps a tile of output positions in registers and writes each
output once with the bias, the residual and the relu applied: no padded copy of the input, no
pass over the output afterwards. Without a C compiler the ops run their decompositions.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from . import threads
from .compiler import own_program, pointer

_SOURCE = Path(__file__).with_name("conv_nchwc.c")
BLOCK = 16  #: channels per block (conv_nchwc.c's B)
#: multiply-adds a thread of the team gets at least (as conv.py)
MIN_MACS_PER_TEAM_THREAD = 1 << 20
MIN_ELEMS_PER_TEAM_THREAD = 1 << 16
#: extra build options (``("-DNCHWC_VW=8",)``: 8-float vectors, a block two of them, where AVX-512 is there)
OPTIONS: tuple[str, ...] = ()


def _entry(entry: str) -> Any:
    return own_program(_SOURCE, entry, OPTIONS, "blocked conv2d")


def _f32(*arrays: np.ndarray) -> bool:
    return all(a.dtype == np.float32 and a.flags.c_contiguous for a in arrays)


def conv_nchwc_call(
    x: np.ndarray,
    w: np.ndarray,
    b: np.ndarray,
    r: np.ndarray | None,
    y: np.ndarray,
    stride: tuple,
    padding: tuple,
    dilation: tuple,
    relu: bool,
    blocked_input: bool,
    keep_packed: bool = False,
    s: np.ndarray | None = None,
) -> Any:
    """A zero-argument call writing ``conv2d_nchwc`` into ``y`` (blocked), or None where the C
    kernel does not apply (not float32 or not contiguous, no compiler). ``s``: the per output
    channel weight scale (``weight_scale``), multiplied in as the weights are packed.
    ``keep_packed`` (a bound program's call, made once and run every time): the packed weights
    are kept with a copy of the weights (and scale) they came from, and packed again only when
    those bytes change."""
    arrays = (x, w, b, y) + tuple(a for a in (r, s) if a is not None)
    if not _f32(*arrays):
        return None
    prog = _entry("conv_nchwc")
    if prog is None:
        return None
    n = x.shape[0]
    if blocked_input:
        c = w.shape[1]
        h, wd = x.shape[2:4]
    else:
        c, h, wd = x.shape[1:]
    o, _, kh, kw = w.shape
    oh, ow = y.shape[2:4]
    ob = -(-o // BLOCK)
    cb, cib = (-(-c // BLOCK), BLOCK) if blocked_input else (1, c)
    wp = np.empty(ob * cb * kh * kw * cib * BLOCK, np.float32)
    bp = np.empty(ob * BLOCK, np.float32)
    wk = np.empty(w.size + o if keep_packed else 0, np.float32)
    packed = np.zeros(1, np.int32)
    nt = threads.team_threads(n * o * oh * ow * c * kh * kw, MIN_MACS_PER_TEAM_THREAD)
    ffi, fn = prog.ffi, prog.fn
    (pt, _), (pl, _) = padding
    args = (
        pointer(ffi, x),
        pointer(ffi, w),
        pointer(ffi, b),
        ffi.NULL if r is None else pointer(ffi, r),
        pointer(ffi, y),
        n,
        c,
        h,
        wd,
        int(blocked_input),
        o,
        kh,
        kw,
        oh,
        ow,
        *(int(v) for v in stride),
        pt,
        pl,
        *(int(v) for v in dilation),
        int(relu),
        ffi.NULL if s is None else pointer(ffi, s),
        pointer(ffi, wp),
        pointer(ffi, bp),
        pointer(ffi, wk) if keep_packed else ffi.NULL,
        ffi.cast("int32_t *", ffi.from_buffer(packed)),
        nt,
    )

    def run(keep: tuple = (x, w, b, r, s, y, wp, bp, wk, packed)) -> None:
        fn(*args)

    return run


def _layout_call(entry: str, x: np.ndarray, y: np.ndarray, n: int, c: int, hw: int) -> Any:
    if not _f32(x, y):
        return None
    prog = _entry(entry)
    if prog is None:
        return None
    args = (
        pointer(prog.ffi, x),
        pointer(prog.ffi, y),
        n,
        c,
        hw,
        threads.team_threads(y.size, MIN_ELEMS_PER_TEAM_THREAD),
    )
    fn = prog.fn

    def run(keep: tuple = (x, y)) -> None:
        fn(*args)

    return run


def to_nchwc_call(x: np.ndarray, y: np.ndarray) -> Any:
    """``to_nchwc`` of NCHW ``x`` into blocked ``y`` as a zero-argument call, or None."""
    n, c, h, w = x.shape
    return _layout_call("to_nchwc", x, y, n, c, h * w)


def from_nchwc_call(x: np.ndarray, y: np.ndarray) -> Any:
    """``from_nchwc`` of blocked ``x`` into NCHW ``y`` as a zero-argument call, or None."""
    n, c, h, w = y.shape
    return _layout_call("from_nchwc", x, y, n, c, h * w)


def global_pool_nchwc_call(x: np.ndarray, y: np.ndarray, reduce: str) -> Any:
    """``global_pool_nchwc`` of blocked ``x`` into plain ``y`` ((N, C) or (N, C, 1, 1)) as a
    zero-argument call, or None."""
    n, _, h, w, block = x.shape
    if block != BLOCK or h * w == 0 or not _f32(x, y):
        return None
    prog = _entry("pool_nchwc")
    if prog is None:
        return None
    args = (
        pointer(prog.ffi, x),
        pointer(prog.ffi, y),
        n,
        y.shape[1],
        h * w,
        int(reduce == "max"),
        threads.team_threads(x.size, MIN_ELEMS_PER_TEAM_THREAD),
    )
    fn = prog.fn

    def run(keep: tuple = (x, y)) -> None:
        fn(*args)

    return run


def max_pool2d_nchwc_call(
    x: np.ndarray, y: np.ndarray, kernel_size: tuple, stride: tuple, padding: tuple
) -> Any:
    """``max_pool2d_nchwc`` of blocked ``x`` into blocked ``y`` as a zero-argument call, or None."""
    n, cb, h, w, block = x.shape
    if block != BLOCK or not _f32(x, y):
        return None
    prog = _entry("maxpool_nchwc")
    if prog is None:
        return None
    oh, ow = y.shape[2:4]
    args = (
        pointer(prog.ffi, x),
        pointer(prog.ffi, y),
        n,
        cb,
        h,
        w,
        oh,
        ow,
        *(int(v) for v in kernel_size),
        *(int(v) for v in stride),
        int(padding[0][0]),
        int(padding[1][0]),
        threads.team_threads(y.size * kernel_size[0] * kernel_size[1], MIN_ELEMS_PER_TEAM_THREAD),
    )
    fn = prog.fn

    def run(keep: tuple = (x, y)) -> None:
        fn(*args)

    return run


# -- the kernels: the C call, else the numpy arithmetic of the decomposition ---------------------
def _blocked(y: np.ndarray, block: int = BLOCK) -> np.ndarray:
    """NCHW ``y`` as NCHWc (numpy), channels past C zero."""
    n, c, h, w = y.shape
    cb = -(-c // block)
    p = np.zeros((n, cb * block, h, w), y.dtype)
    p[:, :c] = y
    return p.reshape(n, cb, block, h, w).transpose(0, 1, 3, 4, 2)


def _plain(x: np.ndarray, c: int) -> np.ndarray:
    n, cb, h, w, b = x.shape
    return x.transpose(0, 1, 4, 2, 3).reshape(n, cb * b, h, w)[:, :c]


def _conv2d_nchwc(
    ctx: Any,
    outs: list,
    ins: list,
    stride: tuple,
    padding: tuple,
    dilation: tuple,
    relu: bool,
    blocked_input: bool,
    weight_scale: bool = False,
) -> None:
    ins = [np.ascontiguousarray(a) for a in ins]
    x, w, b = ins[:3]
    s, r = _scale_residual(ins, weight_scale)
    call = conv_nchwc_call(x, w, b, r, outs[0], stride, padding, dilation, relu, blocked_input, s=s)
    if call is not None:
        call()
        return
    from .conv import _numpy_conv2d

    o, c = w.shape[:2]
    if s is not None:
        w = w * s.reshape(o, 1, 1, 1)
    y = _numpy_conv2d(_plain(x, c) if blocked_input else x, w, stride, padding, dilation, 1)
    y = y + b.reshape(1, o, 1, 1)
    if r is not None:
        y = y + _plain(r, o)
    if relu:
        y = np.where(y <= 0, 0, y)
    np.copyto(outs[0], _blocked(y), casting="unsafe")


def _bind_conv2d_nchwc(
    ctx: Any,
    outs: list,
    ins: list,
    stride: tuple,
    padding: tuple,
    dilation: tuple,
    relu: bool,
    blocked_input: bool,
    weight_scale: bool = False,
) -> Any:
    """Static programs: the C call with its pointers and packing room made once."""
    if ctx.stream is not None or not all(a.flags.c_contiguous for a in (*ins, outs[0])):
        return None
    s, r = _scale_residual(ins, weight_scale)
    return conv_nchwc_call(
        ins[0], ins[1], ins[2], r, outs[0], stride, padding, dilation, relu, blocked_input, True, s
    )


def _scale_residual(ins: list, weight_scale: bool) -> tuple:
    """``conv2d_nchwc``'s optional operands: (the weight scale or None, the residual or None)."""
    s = ins[3] if weight_scale else None
    return s, ins[3 + weight_scale] if len(ins) > 3 + weight_scale else None


def _to_nchwc(ctx: Any, outs: list, ins: list, block: int) -> None:
    x = np.ascontiguousarray(ins[0])
    call = to_nchwc_call(x, outs[0]) if block == BLOCK else None
    if call is not None:
        call()
        return
    np.copyto(outs[0], _blocked(x, block), casting="unsafe")


def _bind_to_nchwc(ctx: Any, outs: list, ins: list, block: int) -> Any:
    if ctx.stream is not None or block != BLOCK or not ins[0].flags.c_contiguous:
        return None
    return to_nchwc_call(ins[0], outs[0])


def _from_nchwc(ctx: Any, outs: list, ins: list, channels: int) -> None:
    x = np.ascontiguousarray(ins[0])
    call = from_nchwc_call(x, outs[0]) if x.shape[4] == BLOCK else None
    if call is not None:
        call()
        return
    np.copyto(outs[0], _plain(x, channels), casting="unsafe")


def _bind_from_nchwc(ctx: Any, outs: list, ins: list, channels: int) -> Any:
    if ctx.stream is not None or ins[0].shape[4] != BLOCK or not ins[0].flags.c_contiguous:
        return None
    return from_nchwc_call(ins[0], outs[0])


def _global_pool_nchwc(ctx: Any, outs: list, ins: list, channels: int, reduce: str, keepdim: bool) -> None:
    x = np.ascontiguousarray(ins[0])
    call = global_pool_nchwc_call(x, outs[0], reduce)
    if call is not None:
        call()
        return
    plain = _plain(x, channels)
    y = (
        plain.sum(axis=(2, 3), keepdims=keepdim)
        if reduce == "sum"
        else plain.max(axis=(2, 3), keepdims=keepdim)
    )
    np.copyto(outs[0], y, casting="unsafe")


def _bind_global_pool_nchwc(
    ctx: Any, outs: list, ins: list, channels: int, reduce: str, keepdim: bool
) -> Any:
    if ctx.stream is not None or not ins[0].flags.c_contiguous:
        return None
    return global_pool_nchwc_call(ins[0], outs[0], reduce)


def _max_pool2d_nchwc(
    ctx: Any, outs: list, ins: list, channels: int, kernel_size: tuple, stride: tuple, padding: tuple
) -> None:
    x = np.ascontiguousarray(ins[0])
    call = max_pool2d_nchwc_call(x, outs[0], kernel_size, stride, padding)
    if call is not None:
        call()
        return
    (pt, pb), (pl, pr) = padding
    xp = np.pad(_plain(x, channels), ((0, 0), (0, 0), (pt, pb), (pl, pr)), constant_values=-np.inf)
    oh, ow = outs[0].shape[2:4]
    (kh, kw), (sh, sw) = kernel_size, stride
    wins = [
        xp[:, :, i : i + sh * (oh - 1) + 1 : sh, j : j + sw * (ow - 1) + 1 : sw]
        for i in range(kh)
        for j in range(kw)
    ]
    np.copyto(outs[0], _blocked(np.max(np.stack(wins), axis=0), x.shape[4]), casting="unsafe")


def _bind_max_pool2d_nchwc(
    ctx: Any, outs: list, ins: list, channels: int, kernel_size: tuple, stride: tuple, padding: tuple
) -> Any:
    if ctx.stream is not None or not ins[0].flags.c_contiguous:
        return None
    return max_pool2d_nchwc_call(ins[0], outs[0], kernel_size, stride, padding)


def register_conv_nchwc(registry: Any) -> None:
    """The blocked layout's kernels, float32, on cpu: ``conv2d_nchwc`` (the ``conv_nchwc`` pass
    rewrites inference programs where this kernel is registered), ``to_nchwc``, ``from_nchwc``,
    ``global_pool_nchwc``, ``max_pool2d_nchwc``."""
    from .kernels import _on_stream

    for name, fn, bind in (
        ("conv2d_nchwc", _conv2d_nchwc, _bind_conv2d_nchwc),
        ("to_nchwc", _to_nchwc, _bind_to_nchwc),
        ("from_nchwc", _from_nchwc, _bind_from_nchwc),
        ("global_pool_nchwc", _global_pool_nchwc, _bind_global_pool_nchwc),
        ("max_pool2d_nchwc", _max_pool2d_nchwc, _bind_max_pool2d_nchwc),
    ):
        fn.bind = bind  # type: ignore[attr-defined]
        registry.add_kernel(name, "cpu", ("float32",), _on_stream(fn), bind=bind)
