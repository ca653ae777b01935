"""The blocked layout NCHWc and the convolution with its epilogue in it (``to_nchwc``,
``from_nchwc``, ``conv2d_nchwc``, ``global_pool_nchwc``, ``max_pool2d_nchwc``: framework/_src/ops/composites/conv_fused.py)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import composite_reference as R
from . import CompositeInfo, _u

BLOCK = 16


def blocked(y: np.ndarray) -> np.ndarray:
    """NCHW ``y`` in NCHWc (numpy), the channels past C zero."""
    n, c, h, w = y.shape
    cb = -(-c // BLOCK)
    p = np.zeros((n, cb * BLOCK, h, w), y.dtype)
    p[:, :c] = y
    return p.reshape(n, cb, BLOCK, h, w).transpose(0, 1, 3, 4, 2)


def plain(x: np.ndarray, c: int) -> np.ndarray:
    """NCHWc ``x`` back to NCHW with its first ``c`` channels (numpy)."""
    n, cb, h, w, b = x.shape
    return x.transpose(0, 1, 4, 2, 3).reshape(n, cb * b, h, w)[:, :c]


def _conv(
    x: np.ndarray, w: np.ndarray, b: np.ndarray, r: Any, stride: int, pad: int, relu: bool
) -> np.ndarray:
    y = R.conv2d(x, w, b, stride, pad, 1, 1)
    if r is not None:
        y = y + r
    return blocked(np.where(y <= 0, 0, y) if relu else y)


def _max_pool(x: np.ndarray, k: int, s: int, p: int) -> np.ndarray:
    """max_pool2d (square, -inf padding) of NCHW ``x``, in NCHWc (numpy)."""
    xp = np.pad(x, ((0, 0), (0, 0), (p, p), (p, p)), constant_values=-np.inf)
    oh, ow = ((d + 2 * p - k) // s + 1 for d in x.shape[2:])
    wins = [
        xp[:, :, i : i + s * (oh - 1) + 1 : s, j : j + s * (ow - 1) + 1 : s]
        for i in range(k)
        for j in range(k)
    ]
    return blocked(np.max(np.stack(wins), axis=0))


def blocked_entries(IF: Any) -> list[CompositeInfo]:
    """Layout changes both ways (channels not a whole block: the padding channels), and the
    convolution from a plain and from a blocked input, with a residual and relu."""
    return [
        CompositeInfo("to_nchwc", lambda x: IF.to_nchwc(x), blocked, lambda r: [_u(r, 2, 19, 3, 4)], (0,)),
        CompositeInfo(
            "from_nchwc",
            lambda x: IF.from_nchwc(x, 19),
            lambda x: plain(x, 19),
            lambda r: [_u(r, 2, 2, 3, 4, BLOCK)],
            (0,),
        ),
        CompositeInfo(
            "conv2d_nchwc",
            lambda x, w, b: IF.conv2d_nchwc(x, w, b, stride=2, padding=1, blocked_input=False),
            lambda x, w, b: _conv(x, w, b, None, 2, 1, False),
            lambda r: [_u(r, 2, 3, 7, 6), _u(r, 5, 3, 3, 3), _u(r, 5)],
            (0, 1, 2),
        ),
        CompositeInfo(
            "conv2d_nchwc_blocked_residual_relu",
            lambda x, w, b, r: IF.conv2d_nchwc(
                IF.to_nchwc(x), w, b, IF.to_nchwc(r), padding=1, relu=True, blocked_input=True
            ),
            lambda x, w, b, r: _conv(x, w, b, r, 1, 1, True),
            lambda r: [_u(r, 1, 18, 5, 4), _u(r, 17, 18, 3, 3), _u(r, 17), _u(r, 1, 17, 5, 4)],
            (0, 1, 2, 3),
            op="conv2d_nchwc",
        ),
        CompositeInfo(
            "conv2d_nchwc_weight_scale",
            lambda x, w, b, s: IF.conv2d_nchwc(x, w, b, padding=1, blocked_input=False, weight_scale=s),
            lambda x, w, b, s: _conv(x, w * s[:, None, None, None], b, None, 1, 1, False),
            lambda r: [_u(r, 2, 3, 5, 6), _u(r, 6, 3, 3, 3), _u(r, 6), _u(r, 6, lo=0.5, hi=2.0)],
            (0, 1, 2, 3),
            op="conv2d_nchwc",
        ),
        CompositeInfo(
            "global_pool_nchwc",
            lambda x: IF.global_pool_nchwc(IF.to_nchwc(x), 19),
            lambda x: x.sum(axis=(2, 3), keepdims=True),
            lambda r: [_u(r, 2, 19, 3, 5)],
            (0,),
        ),
        CompositeInfo(
            "global_pool_nchwc_max",
            lambda x: IF.global_pool_nchwc(IF.to_nchwc(x), 17, reduce="max", keepdim=False),
            lambda x: x.max(axis=(2, 3)),
            lambda r: [_u(r, 2, 17, 4, 3)],
            (0,),
            op="global_pool_nchwc",
        ),
        CompositeInfo(
            "max_pool2d_nchwc",
            lambda x: IF.max_pool2d_nchwc(IF.to_nchwc(x), 19, 3, stride=2, padding=1),
            lambda x: _max_pool(x, 3, 2, 1),
            lambda r: [_u(r, 2, 19, 7, 6)],
            (0,),
        ),
    ]
