"""Matrix products on pyopencl queues: ``matmul`` and ``matmul_t`` (tiled kernels on GPUs,
row-blocked kernels on CPU devices, B packed into panels past a size). Registered by
``kernels.table()``.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from .launch import _NAMES, _env, _grid, _i64, _strided_copy, _strides

if TYPE_CHECKING:
    from .runtime import CLView, OpenCLDevice

# -- linear algebra ----------------------------------------------------------------------
_TS, _RTS = 32, 8  # matmul tile and rows per work item group (math.cl: TS, TS / WPT)
_BLK_RM = 6  # rows of an item's block in the CPU matmul kernels (math.cl: MM_RM, MM_CW)
_BLK_CW = {np.dtype(np.float32): 16, np.dtype(np.float64): 8}


#: B up to this many bytes per batch entry is read in place (matmul_strided); past it the
#: packed kernel's contiguous panels pay for their two packing launches (benchmarks/opencl.py)
_IN_PLACE_B = 1 << 20


def matmul(ctx, outs, ins, **_):
    (c,), (a, b) = outs, ins
    if c.size == 0:
        return
    M, K = a.shape[-2:]
    dev, q = _env(ctx, a.dtype)
    _matmul(dev, q, c, a, (M * K, K, 1), b)


def _matmul(
    dev: OpenCLDevice, q: Any, c: CLView, a: CLView, a_strides: tuple[int, int, int], b: CLView
) -> None:
    """c = a @ b over the batch; ``a_strides`` (batch, row, k) in elements: (M*K, K, 1) for a
    row-major A, (M*K, 1, M) for the transpose of a row-major [K, M] (CPU devices only)."""
    M, N = c.shape[-2:]
    K = b.shape[-2]
    batch = math.prod(c.shape[:-2])
    if dev.is_cpu and a.dtype in _BLK_CW and M < _BLK_RM and a_strides[2] == 1:
        # math.cl matmul_small: a few rows of A against B in place, one launch
        _launch_cab(dev, q, "matmul_small", (-(-N // _BLK_CW[a.dtype]), M, batch), None, c, a, b, M, N, K)
        return
    if dev.is_cpu and a.dtype in _BLK_CW and (a_strides[2] != 1 or K * N * b.dtype.itemsize <= _IN_PLACE_B):
        # math.cl matmul_strided: an RM x CW block per item, operands in place
        mb, nb = -(-M // _BLK_RM), -(-N // _BLK_CW[a.dtype])
        sab, sam, sak = a_strides
        dev.launch(
            q,
            dev.kernel("math", _NAMES[a.dtype], "matmul_strided"),
            (nb, -(-mb // 2) * 2, batch),
            (1, 2, 1),
            c.buffer,
            c.eoff,
            a.buffer,
            a.eoff,
            _i64(sab),
            _i64(sam),
            _i64(sak),
            b.buffer,
            b.eoff,
            _i64(K * N if b.size == batch * K * N else 0),
            _i64(M),
            _i64(N),
            _i64(K),
        )
        return
    if dev.is_cpu and a.dtype in _BLK_CW:
        # math.cl matmul_packed: pack A and B into panels, then one item per RM x CW block
        name, cw, rm = _NAMES[a.dtype], _BLK_CW[a.dtype], _BLK_RM
        mb, nb = -(-M // rm), -(-N // cw)
        na, nb_ = batch * mb * K * rm, batch * nb * K * cw
        ap, bp = dev.temp(na * a.dtype.itemsize), dev.temp(nb_ * a.dtype.itemsize)
        per, ls = dev.per_item, dev.ew_local
        dev.launch(
            q,
            dev.kernel("math", name, "matmul_pack_a"),
            _grid(na, per, ls),
            (ls,),
            ap,
            a.buffer,
            a.eoff,
            _i64(M),
            _i64(K),
            _i64(na),
        )
        dev.launch(
            q,
            dev.kernel("math", name, "matmul_pack_b"),
            _grid(nb_, per, ls),
            (ls,),
            bp,
            b.buffer,
            b.eoff,
            _i64(K),
            _i64(N),
            _i64(nb_),
        )
        dev.launch(
            q,
            dev.kernel("math", name, "matmul_packed"),
            (nb, -(-mb // 8) * 8, batch),
            (1, 8, 1),
            c.buffer,
            c.eoff,
            ap,
            bp,
            _i64(M),
            _i64(N),
            _i64(K),
        )
        return
    _launch_cab(
        dev, q, "matmul", (-(-N // _TS) * _TS, -(-M // _TS) * _RTS, batch), (_TS, _RTS, 1), c, a, b, M, N, K
    )


def _launch_cab(
    dev: OpenCLDevice,
    q: Any,
    name: str,
    grid: tuple,
    local: tuple | None,
    c: CLView,
    a: CLView,
    b: CLView,
    M: int,
    N: int,
    K: int,
) -> None:
    """Launch math.cl's ``name(c, a, b, M, N, K)`` (matmul, matmul_small) for ``a``'s dtype."""
    dev.launch(
        q,
        dev.kernel("math", _NAMES[a.dtype], name),
        grid,
        local,
        c.buffer,
        c.eoff,
        a.buffer,
        a.eoff,
        b.buffer,
        b.eoff,
        _i64(M),
        _i64(N),
        _i64(K),
    )


def matmul_t(ctx, outs, ins, transpose_x=False, transpose_y=False, **_):
    """The ``matmul_t`` composite: an operand to transpose is copied transposed into a scratch
    buffer (one strided copy), then :func:`matmul` (so a static program has no eager step). On
    CPU devices the in-place kernel reads a transposed A through its strides, with no copy."""
    (c,), (a, b) = outs, ins
    if c.size == 0:
        return
    dev, q = _env(ctx, a.dtype)

    def transposed(v: CLView) -> CLView:
        st = _strides(v.shape)
        shape = (*v.shape[:-2], v.shape[-1], v.shape[-2])
        t = ctx.runtime.view(dev.temp(v.nbytes), 0, shape, v.dtype)
        _strided_copy(dev, q, t, 0, v, v.eoff, shape, [*st[:-2], st[-1], st[-2]], _strides(shape))
        return t

    if transpose_y:
        b = transposed(b)
    M, K = c.shape[-2], b.shape[-2]
    if transpose_x and dev.is_cpu and a.dtype in _BLK_CW and M >= _BLK_RM:
        _matmul(dev, q, c, a, (M * K, 1, M), b)
        return
    _matmul(dev, q, c, transposed(a) if transpose_x else a, (M * K, K, 1), b)
