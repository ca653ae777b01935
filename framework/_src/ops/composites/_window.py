"""Sliding-window geometry shared by convolution, pooling and unfold: kernel, stride, dilation
and padding arguments, output sizes, the 1-d ops as 2-d ones on a height-1 image, and the
im2col patches (one strided ``slice`` per kernel offset).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adapter_api import OpArgumentError

from ...tensor import Tensor
from .. import shape as S


def _pair(name: str, what: str, v: Any, least: int | None = None) -> tuple[int, int]:
    """(a, b) from an int or a pair; with ``least``, both must be at least that."""
    if isinstance(v, int) and not isinstance(v, bool):
        a, b = v, v
    else:
        try:
            a, b = (int(t) for t in v)
        except (TypeError, ValueError):
            raise OpArgumentError(f"[{name}] {what} must be an int or a pair of ints, got {v!r}") from None
    if least is not None and min(a, b) < least:
        raise OpArgumentError(f"[{name}] {what} must be at least {least}, got {v!r}")
    return (a, b)


def _same_pads(name: str, sizes: Any, ksize: tuple[int, ...], stride: Any) -> tuple[tuple[int, int], ...]:
    """Paddle's 'SAME' padding, (before, after) per spatial dim: ``ceil(size / stride)``
    outputs, the total ``(out - 1) * stride + k - size`` (at least 0) split with the odd one
    after. It needs the input ``sizes`` and the ``stride`` (callers that convolve with a
    dilation take it as 1 for 'same', as Paddle does)."""
    if sizes is None or stride is None:
        raise OpArgumentError(f"[{name}] padding 'same' needs the input sizes and the stride")
    pads = []
    for n, k, st in zip(sizes, ksize, stride):
        total = max((-(-n // st) - 1) * st + k - n, 0)
        pads.append((total // 2, total - total // 2))
    return tuple(pads)


def _padding(
    name: str,
    padding: Any,
    ksize: tuple[int, int],
    dilation: tuple[int, int],
    sizes: Any = None,
    stride: Any = None,
) -> tuple[tuple[int, int], tuple[int, int]]:
    """((top, bottom), (left, right)) from an int, a pair, four ints or 'same'/'valid' ('same'
    reads ``sizes`` and ``stride``: :func:`_same_pads`)."""
    if isinstance(padding, str):
        p = padding.lower()
        if p == "valid":
            return ((0, 0), (0, 0))
        if p == "same":
            top_bottom, left_right = _same_pads(name, sizes, ksize, stride)
            return (top_bottom, left_right)
        raise OpArgumentError(
            f"[{name}] padding must be an int, a pair, 4 ints, 'same' or 'valid', got {padding!r}"
        )
    if isinstance(padding, (list, tuple)) and len(padding) == 4:
        t, b, left, r = (int(v) for v in padding)
        return ((t, b), (left, r))
    ph, pw = _pair(name, "padding", padding)
    return ((ph, ph), (pw, pw))


def _out_size(name: str, size: int, k: int, s: int, d: int, pads: tuple[int, int]) -> int:
    o = (size + pads[0] + pads[1] - d * (k - 1) - 1) // s + 1
    if o <= 0:
        raise OpArgumentError(
            f"[{name}] the output would be empty: input size {size}, kernel {k}, stride {s}, dilation {d}, "
            f"padding {pads}; use a smaller kernel or more padding"
        )
    return o


def _patches(
    x: Tensor, k: tuple[int, int], s: tuple[int, int], d: tuple[int, int], o: tuple[int, int]
) -> Tensor:
    """(N, C, KH*KW, OH, OW): one strided slice per kernel offset."""
    n, c = x.shape[:2]
    cols = []
    for i in range(k[0]):
        for j in range(k[1]):
            starts = (0, 0, i * d[0], j * d[1])
            stops = (n, c, i * d[0] + (o[0] - 1) * s[0] + 1, j * d[1] + (o[1] - 1) * s[1] + 1)
            cols.append(S.slice_raw(x, starts, stops, (1, 1, s[0], s[1])).reshape((n, c, 1, o[0], o[1])))
    return S.concat(cols, axis=2) if len(cols) > 1 else cols[0]


def _ntuple(name: str, what: str, v: Any, n: int, least: int | None = None) -> tuple[int, ...]:
    if isinstance(v, int) and not isinstance(v, bool):
        out = (v,) * n
    else:
        try:
            out = tuple(int(t) for t in v)
        except (TypeError, ValueError):
            raise OpArgumentError(f"[{name}] {what} must be an int or {n} ints, got {v!r}") from None
        if len(out) != n:
            raise OpArgumentError(f"[{name}] {what} must be an int or {n} ints, got {v!r}")
    if least is not None and min(out) < least:
        raise OpArgumentError(f"[{name}] {what} must be at least {least}, got {v!r}")
    return out


def _pads_nd(
    name: str,
    padding: Any,
    k: tuple[int, ...],
    d: tuple[int, ...],
    sizes: Any = None,
    stride: Any = None,
) -> tuple[tuple[int, int], ...]:
    """((before, after), ...) per spatial dim from an int, n ints, 2n ints or 'same'/'valid'
    ('same' reads ``sizes`` and ``stride``: :func:`_same_pads`)."""
    n = len(k)
    if isinstance(padding, str):
        p = padding.lower()
        if p == "valid":
            return ((0, 0),) * n
        if p == "same":
            return _same_pads(name, sizes, k, stride)
        raise OpArgumentError(
            f"[{name}] padding must be an int, {n} or {2 * n} ints, 'same' or 'valid', got {padding!r}"
        )
    if isinstance(padding, (list, tuple)) and len(padding) == 2 * n:
        v = [int(t) for t in padding]
        return tuple((v[2 * i], v[2 * i + 1]) for i in range(n))
    return tuple((p, p) for p in _ntuple(name, "padding", padding, n))


# -- 1-d via 2-d ----------------------------------------------------------------------------
def _pad1d_as_2d(name: str, padding: Any, k: int, d: int) -> Any:
    if isinstance(padding, str):
        return padding
    ((a, b),) = _pads_nd(name, padding, (k,), (d,))
    return [0, 0, a, b]


def _to_ncl(name: str, x: Tensor, data_format: str) -> Tensor:
    if data_format not in ("NCL", "NLC"):
        raise OpArgumentError(f"[{name}] data_format must be 'NCL' or 'NLC', got {data_format!r}")
    if x.ndim != 3:
        raise OpArgumentError(f"[{name}] x must be 3-d (N, C, L), got shape {x.shape}")
    return x.transpose((0, 2, 1)) if data_format == "NLC" else x


def _patches_nd(
    x: Tensor, k: tuple[int, ...], s: tuple[int, ...], d: tuple[int, ...], o: tuple[int, ...]
) -> Tensor:
    """(N, C, prod(k), *o): one strided slice per kernel offset over the trailing dims."""
    n, c = x.shape[:2]
    cols = []
    for off in np.ndindex(*k):
        starts = (0, 0) + tuple(i * dd for i, dd in zip(off, d))
        stops = (n, c) + tuple(i * dd + (oo - 1) * ss + 1 for i, dd, oo, ss in zip(off, d, o, s))
        cols.append(S.slice_raw(x, starts, stops, (1, 1) + tuple(s)).reshape((n, c, 1) + tuple(o)))
    return S.concat(cols, axis=2) if len(cols) > 1 else cols[0]
