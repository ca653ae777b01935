"""The fused ``conv2d`` kernel on cpu (``conv.c``).

The ``conv2d`` composite's decomposition builds im2col from one ``slice`` per kernel offset and a
``concat`` (a 3x3 kernel: nine copies of the padded input, then a tenth), then one batched
matmul: on the ResNet-style model of ``benchmarks/onnx_import.py`` 4.2x ONNX Runtime's time.
Here a kernel larger than 1x1 reads a padded copy of the input in place (the rows of im2col
are runs of it once the copy is split by stride phases) through a register-tiled product in C:
BLAS packs both operands on every call, which cost as much as the arithmetic for 16-64 output
channels. A 1x1 kernel is one BLAS product per block of positions (in place at stride 1).
Blocks go to the OpenMP team; those that call BLAS only where several threads may call it
at once (``threads.split_products``: MKL, not numpy's OpenBLAS).

Gradients: the conv2d OpDef's own rule (``conv2d_transpose`` of dy, and ``unfold`` of x times
dy), each op by its own kernel or decomposition. Without a C compiler or
a BLAS the plugin can call, the composite's decomposition runs, as before; a C compiler but no
BLAS: the numpy path below.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from . import gemm, threads
from .compiler import float_options, own_program, pointer

_SOURCE = Path(__file__).with_name("conv.c")
#: elements of one block of im2col columns (1x1 path) or of the columns one block of output rows
#: reads (implicit path): the block stays in the cache while the product reads it
SCRATCH_ELEMS = 1 << 15
#: kernels larger than 1x1 skip im2col (conv.c's ``implicit``); False: im2col and BLAS for all
IMPLICIT = True
#: multiply-adds a thread of the team gets at least (as for products: kernels.py)
MIN_MACS_PER_TEAM_THREAD = 1 << 20


#: extra build options of ``conv2d_fwd``'s register tiles (conv.c): ``("-DCONV_VEC=64",)`` builds
#: AVX-512 vectors (16 floats, tiles of 8 rows x 2 vectors; ``-DCONV_MR=``/``-DCONV_NV=`` other
#: tiles); the default, AVX2's 8 floats in tiles of 4 x 3, measured as fast on the AMD VM
TILE_OPTIONS: tuple[str, ...] = ()


def _program(dtype: np.dtype) -> Any:
    return own_program(_SOURCE, "conv2d_fwd", float_options(dtype) + TILE_OPTIONS, "conv2d")


def column_block(k: int, positions: int, items: int, nt: int) -> int:
    """Output positions per block: a multiple of 16 whose ``k``-row scratch fits
    :data:`SCRATCH_ELEMS`, fewer where the images and groups (``items``) make fewer blocks than
    the ``nt`` threads."""
    cb = max(16, SCRATCH_ELEMS // max(k, 1) // 16 * 16)
    if items * -(-positions // cb) < nt:
        cb = max(16, -(-positions // -(-nt // items)))
    return min(cb, positions)


def scratch_elems(
    xs: tuple, ws: tuple, ys: tuple, stride: tuple, dilation: tuple, cb: int, nt: int, itemsize: int
) -> int:
    """Elements of the buffer ``conv.c`` works in (kept with a bound call, not allocated per
    run): the padded, phase-split copy of x (kernels larger than 1x1, with ``IMPLICIT``) or
    ``nt`` blocks of im2col columns."""
    (n, c), (_, cg, kh, kw), (oh, ow) = xs[:2], ws, ys[2:]
    if IMPLICIT and (kh > 1 or kw > 1):
        (sh, sw), (dh, dw) = stride, dilation
        hq = -(-((oh - 1) * sh + (kh - 1) * dh + 1) // sh)
        wq = -(-((ow - 1) * sw + (kw - 1) * dw + 1) // sw)
        return n * c * sh * sw * hq * wq + wq + 4 * (64 // itemsize)  # a tile's reach past the end
    return nt * cg * kh * kw * cb


def conv2d_call(
    x: np.ndarray,
    w: np.ndarray,
    y: np.ndarray,
    stride: tuple,
    padding: tuple,
    dilation: tuple,
    groups: int,
) -> Any:
    """A zero-argument call writing the NCHW ``conv2d`` of ``x`` by ``w`` into ``y``, or None
    where the C kernel does not apply (another dtype, arrays not C-contiguous, no compiler or
    no BLAS to call); the caller then runs the decomposition's arithmetic in numpy."""
    if x.dtype.char not in "fd" or not (x.dtype == w.dtype == y.dtype) or x.ndim != 4 or w.ndim != 4:
        return None
    if not (x.flags.c_contiguous and w.flags.c_contiguous and y.flags.c_contiguous) or 0 in y.shape:
        return None
    sym = gemm.blas_gemm(y.dtype.char)
    prog = _program(y.dtype)
    if sym is None or prog is None:
        return None
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    oh, ow = y.shape[2:]
    k, positions = cg * kh * kw, oh * ow
    if not sym[1] and max(k, positions, o) > (1 << 31) - 1:
        return None
    calls_blas = not (IMPLICIT and (kh > 1 or kw > 1))  # the 1x1 path: a BLAS call per block
    split = threads.split_products() and threads.split_products(
        gemm.blas_name(y.dtype.char) if calls_blas else None
    )
    nt = threads.team_threads(n * o * positions * k, MIN_MACS_PER_TEAM_THREAD) if split else 1
    cb = column_block(k, positions, n * groups, nt)
    implicit = int(IMPLICIT)
    (pt, _), (pl, _) = padding
    buf = np.empty(scratch_elems(x.shape, w.shape, y.shape, stride, dilation, cb, nt, y.itemsize), y.dtype)
    ffi, fn = prog.ffi, prog.fn
    args = (
        sym[0],
        int(sym[1]),
        pointer(ffi, x),
        pointer(ffi, w),
        pointer(ffi, y),
        *(int(v) for v in (n, c, h, wd, o, kh, kw, oh, ow, *stride, pt, pl, *dilation, groups, cb)),
        implicit,
        pointer(ffi, buf),
        buf.size,
        nt,
    )

    def run(keep: tuple = (x, w, y, buf)) -> None:
        if fn(*args) != 0:
            raise MemoryError(
                f"[cpu] conv2d: no memory for the im2col scratch ({nt} x {k * cb} x {y.itemsize} bytes)"
            )

    return run


def _numpy_conv2d(
    x: np.ndarray, w: np.ndarray, stride: tuple, padding: tuple, dilation: tuple, groups: int
) -> Any:
    """What the decomposition computes, in numpy: pad, im2col by strided views, one product."""
    n, c = x.shape[:2]
    o, cg, kh, kw = w.shape
    (sh, sw), (dh, dw) = stride, dilation
    oh = (x.shape[2] + sum(padding[0]) - dh * (kh - 1) - 1) // sh + 1
    ow = (x.shape[3] + sum(padding[1]) - dw * (kw - 1) - 1) // sw + 1
    cols = _unfold_numpy(x, (kh, kw), stride, padding, dilation, (oh, ow))  # (N, C*KK, L)
    cols = cols.reshape(n, groups, cg * kh * kw, oh * ow)
    out = np.matmul(w.reshape(1, groups, o // groups, -1), cols)
    return out.reshape(n, o, oh, ow)


def _conv2d(
    ctx: Any, outs: list, ins: list, stride: tuple, padding: tuple, dilation: tuple, groups: int
) -> None:
    run = conv2d_call(*_inputs(ins), outs[0], stride, padding, dilation, groups)
    if run is not None:
        run()
        return
    np.copyto(outs[0], _numpy_conv2d(ins[0], ins[1], stride, padding, dilation, groups), casting="unsafe")


def _inputs(ins: list) -> tuple[np.ndarray, np.ndarray]:
    return np.ascontiguousarray(ins[0]), np.ascontiguousarray(ins[1])


def _bind(
    ctx: Any, outs: list, ins: list, stride: tuple, padding: tuple, dilation: tuple, groups: int
) -> Any:
    """Static programs: the C call with its pointers made once, where the inputs are the
    arrays the program passes each run (None: the kernel runs each time)."""
    if ctx.stream is not None or not all(a.flags.c_contiguous for a in (*ins, outs[0])):
        return None
    return conv2d_call(ins[0], ins[1], outs[0], stride, padding, dilation, groups)


_conv2d.bind = _bind  # type: ignore[attr-defined]


# -- the ops of conv2d's gradient: unfold, conv2d_transpose (col2im), and relu ------------------
#: elements a thread of the team gets at least in the copying kernels (unfold, col2im, relu)
MIN_ELEMS_PER_TEAM_THREAD = 1 << 16


def _entry(dtype: np.dtype, entry: str) -> Any:
    return own_program(_SOURCE, entry, float_options(dtype), entry)


def _c_ready(dtype: np.dtype, *arrays: np.ndarray) -> bool:
    return dtype.char in "fd" and all(a.dtype == dtype and a.flags.c_contiguous for a in arrays)


def _unfold_numpy(x: np.ndarray, k: tuple, s: tuple, p: tuple, d: tuple, o: tuple) -> np.ndarray:
    xp = np.pad(x, ((0, 0), (0, 0), *p))
    cols = np.stack(
        [
            xp[
                :,
                :,
                i * d[0] : i * d[0] + s[0] * (o[0] - 1) + 1 : s[0],
                j * d[1] : j * d[1] + s[1] * (o[1] - 1) + 1 : s[1],
            ]
            for i in range(k[0])
            for j in range(k[1])
        ],
        axis=2,
    )
    return cols.reshape(x.shape[0], -1, o[0] * o[1])


def _unfold(
    ctx: Any, outs: list, ins: list, kernel_sizes: tuple, strides: tuple, paddings: tuple, dilations: tuple
) -> None:
    x, y = np.ascontiguousarray(ins[0]), outs[0]
    n, c, h, w = x.shape
    (kh, kw), l = kernel_sizes, y.shape[2]
    oh = (h + sum(paddings[0]) - dilations[0] * (kh - 1) - 1) // strides[0] + 1
    ow = l // oh
    prog = _entry(y.dtype, "unfold2d") if _c_ready(y.dtype, x, y) else None
    if prog is None or y.size == 0:
        y[...] = _unfold_numpy(x, kernel_sizes, strides, paddings, dilations, (oh, ow))
        return
    nt = threads.team_threads(y.size, MIN_ELEMS_PER_TEAM_THREAD)
    dims = (n, c, h, w, kh, kw, oh, ow, *strides, paddings[0][0], paddings[1][0], *dilations)
    prog.fn(pointer(prog.ffi, x), pointer(prog.ffi, y), *(int(v) for v in dims), nt)


def _conv2d_transpose(
    ctx: Any,
    outs: list,
    ins: list,
    stride: tuple,
    padding: tuple,
    output_padding: tuple,
    dilation: tuple,
    groups: int,
) -> None:
    """One BLAS product per image and group (the transposed weight by the input: the columns),
    then col2im (conv.c's ``col2im2d``) sums the columns into the output."""
    x, w = np.ascontiguousarray(ins[0]), np.ascontiguousarray(ins[1])
    y = outs[0]
    n, cin, h, wd = x.shape
    _, cog, kh, kw = w.shape
    oh, ow = y.shape[2:]
    wt = w.reshape(groups, cin // groups, cog * kh * kw).transpose(0, 2, 1)
    cols = np.matmul(wt[None], x.reshape(n, groups, cin // groups, h * wd))  # (N, G, Co/G*KK, HW)
    prog = _entry(y.dtype, "col2im2d") if _c_ready(y.dtype, cols, y) else None
    if prog is not None and y.size:
        nt = threads.team_threads(cols.size, MIN_ELEMS_PER_TEAM_THREAD)
        dims = (n, cog * groups, h, wd, kh, kw, oh, ow, *stride, padding[0][0], padding[1][0], *dilation)
        prog.fn(pointer(prog.ffi, cols), pointer(prog.ffi, y), *(int(v) for v in dims), nt)
        return
    cols = cols.reshape(n, groups * cog, kh, kw, h, wd)
    (sh, sw), (dh, dw), (pt, pl) = stride, dilation, (padding[0][0], padding[1][0])
    full = np.zeros(
        (
            n,
            groups * cog,
            max(oh + pt, (h - 1) * sh + (kh - 1) * dh + 1),
            max(ow + pl, (wd - 1) * sw + (kw - 1) * dw + 1),
        ),
        y.dtype,
    )
    for i in range(kh):
        for j in range(kw):
            full[:, :, i * dh : i * dh + (h - 1) * sh + 1 : sh, j * dw : j * dw + (wd - 1) * sw + 1 : sw] += (
                cols[:, :, i, j]
            )
    y[...] = full[:, :, pt : pt + oh, pl : pl + ow]


def _relu(ctx: Any, outs: list, ins: list) -> None:
    x, y = np.ascontiguousarray(ins[0]), outs[0]
    call = _relu_call(x, y)
    if call is None:
        np.copyto(y, np.where(x <= 0, 0, x), casting="unsafe")
        return
    call()


def _relu_call(x: np.ndarray, y: np.ndarray) -> Any:
    """conv.c's ``relu_fwd`` of ``x`` into ``y`` as a zero-argument call, its pointers and
    thread count made once; None where it does not apply (the caller runs numpy)."""
    prog = _entry(y.dtype, "relu_fwd") if _c_ready(y.dtype, x, y) else None
    if prog is None:
        return None
    args = (
        pointer(prog.ffi, x),
        pointer(prog.ffi, y),
        y.size,
        threads.team_threads(y.size, MIN_ELEMS_PER_TEAM_THREAD),
    )
    fn = prog.fn

    def run(keep: tuple = (x, y)) -> None:
        fn(*args)

    return run


def _bind_relu(ctx: Any, outs: list, ins: list) -> Any:
    """Static programs: the C call made once (an ImageNet-style model runs a relu per conv)."""
    if ctx.stream is not None or not ins[0].flags.c_contiguous:
        return None
    return _relu_call(ins[0], outs[0])


_relu.bind = _bind_relu  # type: ignore[attr-defined]


def register_conv(registry: Any) -> None:
    """The fused ``conv2d`` kernel and those of its gradient (``unfold``, ``conv2d_transpose``,
    ``relu``), float32 and float64, on cpu; and the blocked layout's (conv_nchwc.py)."""
    from .kernels import _on_stream

    registry.add_kernel("conv2d", "cpu", ("float32", "float64"), _on_stream(_conv2d), bind=_bind)
    registry.add_kernel("relu", "cpu", ("float32", "float64"), _on_stream(_relu), bind=_bind_relu)
    for name, fn in (("unfold", _unfold), ("conv2d_transpose", _conv2d_transpose)):
        registry.add_kernel(name, "cpu", ("float32", "float64"), _on_stream(fn))
    from .conv_nchwc import register_conv_nchwc

    register_conv_nchwc(registry)
