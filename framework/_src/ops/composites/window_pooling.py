"""Pooling over windows given per axis: adaptive average and max pools (1-d, 2-d, 3-d), the
fractional max pools and max unpooling.

Adaptive window i along an axis of size L pooled to O spans ``[floor(i*L/O), ceil((i+1)*L/O))``;
fractional windows follow Paddle's pseudo-random sequence. Max pools over such windows are one
composite, ``max_pool_windows``, which takes the windows' starts and ends per axis.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from adapter_api import OpArgumentError

from ...dtypes import as_dtype
from ...tensor import Tensor, to_tensor
from .. import creation as C
from .. import indexing as I
from .. import math as M
from .. import random as R
from .. import shape as S
from ..base import OPS, call, composite
from ._common import float_arg, tensor_arg
from ._window import _ntuple


# -- max over windows given per axis -------------------------------------------------------------
def _windows_infer(ins: list[Tensor], attrs: dict[str, Any]) -> list:
    shape = ins[0].shape[:2] + tuple(len(s) for s in attrs["starts"])
    return [(shape, ins[0].dtype), (shape, as_dtype("int32"))]


def _window_table(starts: tuple, ends: tuple) -> np.ndarray:
    """(O, K) input positions of each window, the short ones padded with their last position
    (a repeat never changes a max, nor which one comes first)."""
    k = max(e - s for s, e in zip(starts, ends))
    return np.array([[min(s + j, e - 1) for j in range(k)] for s, e in zip(starts, ends)], dtype=np.int64)


@composite("max_pool_windows", infer=_windows_infer)
def max_pool_windows_decomposition(x: Tensor, *, starts: tuple, ends: tuple) -> tuple[Tensor, Tensor]:
    """The max over each window ``[starts[a][i], ends[a][i])`` (per spatial axis a) of ``x``
    and its flat position in the spatial dims, the first in row-major order, as Paddle's
    adaptive and fractional max pools: gather each axis's (O, K) window table, max over the
    K axes."""
    n, c = x.shape[:2]
    spatial, nd = x.shape[2:], len(starts)
    tables = [_window_table(s, e) for s, e in zip(starts, ends)]
    y = x
    for ax, t in enumerate(tables):
        y = I.take_rows(y, to_tensor(t, device=x.device), 2 + 2 * ax)  # (..., O, K, ...)
    outs, ks = tuple(t.shape[0] for t in tables), tuple(t.shape[1] for t in tables)
    perm = (0, 1) + tuple(2 + 2 * a for a in range(nd)) + tuple(3 + 2 * a for a in range(nd))
    cols = y.transpose(perm).reshape((n, c) + outs + (math.prod(ks),))
    out, arg = M.max(cols, axis=-1), M.argmax(cols, axis=-1)
    # flat input position of every (window, offset) pair, picked by the argmax
    strides = [math.prod(spatial[a + 1 :]) for a in range(nd)]
    pos = sum(_interleave(tables, strides))
    table = to_tensor(pos.reshape(outs + (-1,)).astype(np.int32), device=x.device)
    table = table.reshape((1, 1) + tuple(table.shape))
    mask = I.take_along_axis(table, arg.astype("int64").unsqueeze(-1), axis=-1).squeeze(-1)
    return out, mask.detach()


def _interleave(tables: list[np.ndarray], strides: list[int]) -> list[np.ndarray]:
    """Each axis's (O, K) positions times its stride, shaped to broadcast over
    (O_0, ..., O_n, K_0, ..., K_n)."""
    nd, out = len(tables), []
    for a, (t, st) in enumerate(zip(tables, strides)):
        shape = [1] * (2 * nd)
        shape[a], shape[nd + a] = t.shape
        out.append((t * st).reshape(shape))
    return out


def _max_pool_windows(x: Tensor, starts: tuple, ends: tuple, return_mask: bool) -> Any:
    out, mask = call(OPS["max_pool_windows"], [x], {"starts": starts, "ends": ends})
    return (out, mask) if return_mask else out


def _spatial(name: str, x: Any, nd: int) -> Tensor:
    x = float_arg(name, x)
    if x.ndim != nd + 2:
        raise OpArgumentError(f"[{name}] x must be {nd + 2}-d (N, C, {nd} spatial dims), got shape {x.shape}")
    return x


def _adaptive_bounds(size: int, out: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    return tuple((i * size) // out for i in range(out)), tuple(
        -(-((i + 1) * size) // out) for i in range(out)
    )


def _output_size(name: str, output_size: Any, x: Tensor, nd: int) -> tuple[int, ...]:
    """Paddle's output_size: an int or ``nd`` entries, ``None`` keeping the input's size."""
    if isinstance(output_size, (list, tuple)):
        output_size = tuple(x.shape[2 + i] if v is None else v for i, v in enumerate(output_size))
    return _ntuple(name, "output_size", output_size, nd, least=1)


# -- adaptive average ----------------------------------------------------------------------------
def _adaptive_axis(x: Tensor, axis: int, out: int) -> Tensor:
    """Mean over the adaptive windows of one axis (a reshape where they tile it evenly)."""
    size = x.shape[axis]
    if size % out == 0:
        k = size // out
        return M.mean(x.reshape(x.shape[:axis] + (out, k) + x.shape[axis + 1 :]), axis=axis + 1)
    parts = []
    for a, b in zip(*_adaptive_bounds(size, out)):
        starts, stops = [0] * x.ndim, list(x.shape)
        starts[axis], stops[axis] = a, b
        window = S.slice_raw(x, tuple(starts), tuple(stops), (1,) * x.ndim)
        parts.append(M.mean(window, axis=axis, keepdim=True))
    return S.concat(parts, axis=axis)


def _adaptive_avg(name: str, nd: int, x: Any, output_size: Any, data_format: str, layouts: tuple) -> Tensor:
    if data_format not in layouts:
        raise OpArgumentError(f"[{name}] data_format must be one of {layouts}, got {data_format!r}")
    x = _spatial(name, x, nd)
    last = data_format == layouts[1]
    if last:
        x = x.transpose((0, nd + 1) + tuple(range(1, nd + 1)))
    for ax, o in enumerate(_output_size(name, output_size, x, nd)):
        x = _adaptive_axis(x, 2 + ax, o)
    return x.transpose((0,) + tuple(range(2, nd + 2)) + (1,)) if last else x


def adaptive_avg_pool1d(x: Tensor, output_size: int, name: str | None = None) -> Tensor:
    """Average pooling of (N, C, L) ``x`` to ``output_size``; window i spans
    [floor(i*L/O), ceil((i+1)*L/O)).

    >>> import framework as fw
    >>> fw.nn.functional.adaptive_avg_pool1d(fw.to_tensor([[[1.0, 2.0, 3.0]]]), 2).numpy().tolist()
    [[[1.5, 2.5]]]
    """
    return _adaptive_avg("adaptive_avg_pool1d", 1, x, output_size, "NCL", ("NCL", "NLC"))


def adaptive_avg_pool2d(
    x: Tensor, output_size: Any, data_format: str = "NCHW", name: str | None = None
) -> Tensor:
    """Average pooling to a fixed ``output_size`` (an int, a pair, ``None`` keeping a size);
    window i spans [floor(i*H/O), ceil((i+1)*H/O)).

    >>> import framework as fw
    >>> fw.nn.functional.adaptive_avg_pool2d(fw.ones([1, 2, 5, 5]), 2).shape
    (1, 2, 2, 2)
    """
    return _adaptive_avg("adaptive_avg_pool2d", 2, x, output_size, data_format, ("NCHW", "NHWC"))


def adaptive_avg_pool3d(
    x: Tensor, output_size: Any, data_format: str = "NCDHW", name: str | None = None
) -> Tensor:
    """Average pooling of (N, C, D, H, W) ``x`` to ``output_size`` (windows as
    :func:`adaptive_avg_pool2d`).

    >>> import framework as fw
    >>> fw.nn.functional.adaptive_avg_pool3d(fw.ones([1, 2, 5, 4, 3]), [2, None, 1]).shape
    (1, 2, 2, 4, 1)
    """
    return _adaptive_avg("adaptive_avg_pool3d", 3, x, output_size, data_format, ("NCDHW", "NDHWC"))


# -- adaptive max --------------------------------------------------------------------------------
def _adaptive_max(name: str, nd: int, x: Any, output_size: Any, return_mask: bool) -> Any:
    x = _spatial(name, x, nd)
    bounds = [
        _adaptive_bounds(x.shape[2 + a], o) for a, o in enumerate(_output_size(name, output_size, x, nd))
    ]
    return _max_pool_windows(x, tuple(b[0] for b in bounds), tuple(b[1] for b in bounds), return_mask)


def adaptive_max_pool1d(
    x: Tensor, output_size: Any, return_mask: bool = False, name: str | None = None
) -> Any:
    """Max pooling of (N, C, L) ``x`` to ``output_size``; ``return_mask`` also gives each
    maximum's index in L.

    >>> import framework as fw
    >>> out, idx = fw.nn.functional.adaptive_max_pool1d(fw.to_tensor([[[1.0, 3.0, 2.0]]]), 2, return_mask=True)
    >>> out.numpy().tolist(), idx.numpy().tolist()
    ([[[3.0, 3.0]]], [[[1, 1]]])
    """
    return _adaptive_max("adaptive_max_pool1d", 1, x, output_size, return_mask)


def adaptive_max_pool2d(
    x: Tensor, output_size: Any, return_mask: bool = False, name: str | None = None
) -> Any:
    """Max pooling of NCHW ``x`` to ``output_size`` (windows as adaptive_avg_pool2d);
    ``return_mask`` also gives each maximum's ``h * W + w``.

    >>> import framework as fw
    >>> x = fw.arange(16, dtype="float32").reshape([1, 1, 4, 4])
    >>> fw.nn.functional.adaptive_max_pool2d(x, 2).numpy().ravel().tolist()
    [5.0, 7.0, 13.0, 15.0]
    """
    return _adaptive_max("adaptive_max_pool2d", 2, x, output_size, return_mask)


def adaptive_max_pool3d(
    x: Tensor, output_size: Any, return_mask: bool = False, name: str | None = None
) -> Any:
    """Max pooling of NCDHW ``x`` to ``output_size``; the mask holds ``(d * H + h) * W + w``.

    >>> import framework as fw
    >>> x = fw.arange(8, dtype="float32").reshape([1, 1, 2, 2, 2])
    >>> fw.nn.functional.adaptive_max_pool3d(x, 1, return_mask=True)[1].numpy().ravel().tolist()
    [7]
    """
    return _adaptive_max("adaptive_max_pool3d", 3, x, output_size, return_mask)


# -- fractional max ------------------------------------------------------------------------------
def _fractional_bounds(size: int, out: int, k: int, u: float) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Paddle's fractional windows along one axis (Graham's sequence, in float32 as Paddle):
    window i starts at ``floor(alpha * (i + u)) - floor(alpha * u)``. With a kernel k,
    ``alpha = (L - k) / (O - 1)``, each window is k long and the last (of several) starts at ``L - k``;
    without, ``alpha = L / O``, ``u`` is scaled into the range that keeps the windows inside
    the input, window i ends where window i + 1 starts and the last ends at L."""
    f32 = np.float32
    if k > 0:
        alpha = f32(size - k) / f32(max(out - 1, 1))
        uu = f32(u)
    else:
        alpha, base = f32(size) / f32(out), size // out
        uu = f32(u) * min(f32(base + 2) / alpha - f32(1), f32(size + 1 - base) / alpha - f32(out - 1))
    first = int(np.floor(alpha * uu))

    def at(i: int) -> int:
        return int(np.floor(alpha * (f32(i) + uu))) - first

    starts = [at(i) for i in range(out)]
    if k > 0:
        if out > 1:
            starts[-1] = size - k
        ends = [s + k for s in starts]
    else:
        ends = starts[1:] + [size]
    starts = [min(max(s, 0), size - 1) for s in starts]
    ends = [max(min(e, size), s + 1) for s, e in zip(starts, ends)]
    return tuple(starts), tuple(ends)


def _fractional(
    name: str, nd: int, x: Any, output_size: Any, kernel_size: Any, random_u: Any, return_mask: bool
) -> Any:
    x = _spatial(name, x, nd)
    outs = _output_size(name, output_size, x, nd)
    ks = (0,) * nd if kernel_size is None else _ntuple(name, "kernel_size", kernel_size, nd, least=1)
    for a, (o, k) in enumerate(zip(outs, ks)):
        if o > x.shape[2 + a] or (k and o + k - 1 > x.shape[2 + a]):
            raise OpArgumentError(
                f"[{name}] output_size {outs} with kernel_size {kernel_size} does not fit the input's "
                f"spatial shape {x.shape[2:]}; give a smaller output or kernel"
            )
    if random_u is None:
        u = float(R.rand([1], dtype="float64").numpy()[0])
    elif not isinstance(random_u, (int, float)) or isinstance(random_u, bool) or not 0 < random_u < 1:
        raise OpArgumentError(f"[{name}] random_u must be a number in (0, 1), got {random_u!r}")
    else:
        u = float(random_u)
    bounds = [_fractional_bounds(x.shape[2 + a], o, k, u) for a, (o, k) in enumerate(zip(outs, ks))]
    return _max_pool_windows(x, tuple(b[0] for b in bounds), tuple(b[1] for b in bounds), return_mask)


def fractional_max_pool2d(
    x: Tensor,
    output_size: Any,
    kernel_size: Any = None,
    random_u: float | None = None,
    return_mask: bool = False,
    name: str | None = None,
) -> Any:
    """Fractional max pooling of NCHW ``x`` to ``output_size``, as Paddle (Graham, 2014): the
    windows' pseudo-random placement comes from ``random_u`` in (0, 1) (drawn from the
    framework's generator when None); ``kernel_size`` makes them overlap, each that size.

    >>> import framework as fw
    >>> x = fw.arange(36, dtype="float32").reshape([1, 1, 6, 6])
    >>> fw.nn.functional.fractional_max_pool2d(x, 3, random_u=0.3).shape
    (1, 1, 3, 3)
    """
    return _fractional("fractional_max_pool2d", 2, x, output_size, kernel_size, random_u, return_mask)


def fractional_max_pool3d(
    x: Tensor,
    output_size: Any,
    kernel_size: Any = None,
    random_u: float | None = None,
    return_mask: bool = False,
    name: str | None = None,
) -> Any:
    """Fractional max pooling of NCDHW ``x`` (arguments as :func:`fractional_max_pool2d`).

    >>> import framework as fw
    >>> x = fw.rand([1, 2, 6, 6, 6])
    >>> fw.nn.functional.fractional_max_pool3d(x, 3, kernel_size=2, random_u=0.5).shape
    (1, 2, 3, 3, 3)
    """
    return _fractional("fractional_max_pool3d", 3, x, output_size, kernel_size, random_u, return_mask)


# -- max unpooling -------------------------------------------------------------------------------
def _max_unpool(
    name: str,
    nd: int,
    x: Tensor,
    indices: Tensor,
    kernel_size: Any,
    stride: Any,
    padding: Any,
    output_size: Any,
) -> Tensor:
    """Scatter ``x`` to the flat positions ``indices`` of a zero output (per sample and channel)."""
    x = float_arg(name, x)
    indices = tensor_arg(name, indices, "indices")
    if x.ndim != nd + 2:
        raise OpArgumentError(f"[{name}] x must be {nd + 2}-d (N, C, spatial...), got shape {x.shape}")
    if indices.shape != x.shape or indices.dtype.kind not in "iu":
        raise OpArgumentError(
            f"[{name}] indices must be integers of x's shape {x.shape} (the mask of max_pool), "
            f"got {indices.dtype} of shape {indices.shape}"
        )
    k = _ntuple(name, "kernel_size", kernel_size, nd, 1)
    st = k if stride is None else _ntuple(name, "stride", stride, nd, 1)
    pad = _ntuple(name, "padding", padding, nd, 0)
    if output_size is None:
        out = tuple((i - 1) * s - 2 * p + kk for i, s, p, kk in zip(x.shape[2:], st, pad, k))
    else:
        out = tuple(int(v) for v in output_size)[-nd:]
        if len(out) != nd:
            raise OpArgumentError(f"[{name}] output_size must hold {nd} spatial sizes, got {output_size!r}")
    n, c = x.shape[:2]
    flat = C.zeros((n, c, math.prod(out)), dtype=x.dtype, device=x.device)
    vals, idx = x.reshape((n, c, -1)), indices.reshape((n, c, -1))
    return I.put_along_axis(flat, idx, vals, axis=2).reshape((n, c) + out)


def max_unpool2d(
    x: Tensor,
    indices: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    data_format: str = "NCHW",
    output_size: Any = None,
    name: str | None = None,
) -> Tensor:
    """The inverse of :func:`max_pool2d`: each value of ``x`` put at its ``indices`` position
    (the mask ``max_pool2d(..., return_mask=True)`` gives) in a zero NCHW output of
    ``output_size`` (default ``(H - 1) * stride - 2 * padding + kernel_size``).

    >>> import framework as fw
    >>> x = fw.arange(16, dtype="float32").reshape([1, 1, 4, 4])
    >>> y, mask = fw.nn.functional.max_pool2d(x, 2, return_mask=True)
    >>> fw.nn.functional.max_unpool2d(y, mask, 2)[0, 0].numpy().tolist()[1]
    [0.0, 5.0, 0.0, 7.0]
    """
    if data_format != "NCHW":
        raise OpArgumentError(f"[max_unpool2d] data_format must be 'NCHW' (as Paddle), got {data_format!r}")
    return _max_unpool("max_unpool2d", 2, x, indices, kernel_size, stride, padding, output_size)


def max_unpool1d(
    x: Tensor,
    indices: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    data_format: str = "NCL",
    output_size: Any = None,
    name: str | None = None,
) -> Tensor:
    """The inverse of max_pool1d: ``x`` put at ``indices`` in a zero (N, C, L_out) output.

    >>> import framework as fw
    >>> x, idx = fw.to_tensor([[[5.0, 7.0]]]), fw.to_tensor([[[1, 2]]], dtype="int32")
    >>> fw.nn.functional.max_unpool1d(x, idx, 2).numpy().tolist()
    [[[0.0, 5.0, 7.0, 0.0]]]
    """
    if data_format != "NCL":
        raise OpArgumentError(f"[max_unpool1d] data_format must be 'NCL' (as Paddle), got {data_format!r}")
    return _max_unpool("max_unpool1d", 1, x, indices, kernel_size, stride, padding, output_size)


def max_unpool3d(
    x: Tensor,
    indices: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    data_format: str = "NCDHW",
    output_size: Any = None,
    name: str | None = None,
) -> Tensor:
    """The inverse of max_pool3d: ``x`` put at ``indices`` (``(d * H + h) * W + w``) in a zero
    NCDHW output.

    >>> import framework as fw
    >>> x, idx = fw.ones([1, 1, 1, 1, 1]), fw.to_tensor([[[[[7]]]]], dtype="int32")
    >>> float(fw.nn.functional.max_unpool3d(x, idx, 2).reshape([-1])[7])
    1.0
    """
    if data_format != "NCDHW":
        raise OpArgumentError(f"[max_unpool3d] data_format must be 'NCDHW' (as Paddle), got {data_format!r}")
    return _max_unpool("max_unpool3d", 3, x, indices, kernel_size, stride, padding, output_size)
