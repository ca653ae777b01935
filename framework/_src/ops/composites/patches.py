"""Images as patches and back: unfold (im2col), fold (col2im), pixel_shuffle and
pixel_unshuffle.

fold is conv2d_transpose with a one-hot weight, one group per channel.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adapter_api import OpArgumentError

from ...tensor import Tensor, to_tensor
from .. import shape as S
from ..base import OPS, call, composite
from ..cost import no_flops
from ._common import float_arg, tensor_arg
from ._window import _ntuple, _out_size, _patches_nd
from .conv_transpose import _convt_out


def _unfold_infer(ins: list[Tensor], attrs: dict[str, Any]) -> list:
    x = ins[0]
    k, s, d, p = attrs["kernel_sizes"], attrs["strides"], attrs["dilations"], attrs["paddings"]
    o = [_out_size("unfold", x.shape[2 + i], k[i], s[i], d[i], p[i]) for i in range(2)]
    return [((x.shape[0], x.shape[1] * k[0] * k[1], o[0] * o[1]), x.dtype)]


@composite("unfold", amp="allow", flops=no_flops, infer=_unfold_infer)
def unfold_decomposition(
    x: Tensor, *, kernel_sizes: tuple, strides: tuple, paddings: tuple, dilations: tuple
) -> Tensor:
    """im2col: (N, C, H, W) -> (N, C*KH*KW, L), channel-major then kernel offset."""
    ((shape, _),) = _unfold_infer(
        [x], {"kernel_sizes": kernel_sizes, "strides": strides, "dilations": dilations, "paddings": paddings}
    )
    o = tuple(
        _out_size("unfold", x.shape[2 + i], kernel_sizes[i], strides[i], dilations[i], paddings[i])
        for i in range(2)
    )
    xp = S.pad_raw(x, ((0, 0), (0, 0)) + tuple(paddings), 0.0)
    return _patches_nd(xp, kernel_sizes, strides, dilations, o).reshape(shape)


def _patch_paddings(name: str, paddings: Any) -> tuple[tuple[int, int], tuple[int, int]]:
    """((top, bottom), (left, right)) from Paddle's unfold/fold ``paddings``: an int, [h, w], or
    four ints in Paddle's order for these two ops, [top, left, bottom, right] (conv's four-int
    order is [top, bottom, left, right]; the two must not be confused)."""
    if isinstance(paddings, (bool, str)) or not isinstance(paddings, (int, np.integer, list, tuple)):
        raise OpArgumentError(
            f"[{name}] paddings must be an int or a list/tuple of 2 or 4 ints, got {paddings!r}"
        )
    if isinstance(paddings, (int, np.integer)):
        v = int(paddings)
        return ((v, v), (v, v))
    if len(paddings) not in (2, 4) or not all(
        isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in paddings
    ):
        raise OpArgumentError(
            f"[{name}] paddings must be an int or a list/tuple of 2 or 4 ints, got {paddings!r}"
        )
    if len(paddings) == 2:
        ph, pw = (int(v) for v in paddings)
        return ((ph, ph), (pw, pw))
    top, left, bottom, right = (int(v) for v in paddings)
    return ((top, bottom), (left, right))


def _unfold_args(name: str, kernel_sizes: Any, strides: Any, paddings: Any, dilations: Any) -> dict[str, Any]:
    k = _ntuple(name, "kernel_sizes", kernel_sizes, 2, 1)
    d = _ntuple(name, "dilations", dilations, 2, 1)
    p = _patch_paddings(name, paddings)
    if min(min(p[0]), min(p[1])) < 0:
        raise OpArgumentError(f"[{name}] paddings must not be negative, got {paddings!r}")
    return {
        "kernel_sizes": k,
        "strides": _ntuple(name, "strides", strides, 2, 1),
        "paddings": p,
        "dilations": d,
    }


def unfold(
    x: Tensor,
    kernel_sizes: Any,
    strides: Any = 1,
    paddings: Any = 0,
    dilations: Any = 1,
    name: str | None = None,
) -> Tensor:
    """Sliding blocks of NCHW ``x`` as columns: (N, C*KH*KW, L) (im2col).

    ``paddings`` is an int, ``[h, w]``, or four ints in Paddle's order for this op,
    ``[top, left, bottom, right]``.

    Example:
        >>> x = framework.ones([1, 1, 3, 3])
        >>> list(framework.nn.functional.unfold(x, [2, 2], paddings=[1, 0, 0, 0]).shape)
        [1, 4, 6]
    """
    x = float_arg("unfold", x)
    if x.ndim != 4:
        raise OpArgumentError(f"[unfold] x must be 4-d (N, C, H, W), got shape {x.shape}")
    return call(OPS["unfold"], [x], _unfold_args("unfold", kernel_sizes, strides, paddings, dilations))


def fold(
    x: Tensor,
    output_sizes: Any,
    kernel_sizes: Any,
    strides: Any = 1,
    paddings: Any = 0,
    dilations: Any = 1,
    name: str | None = None,
) -> Tensor:
    """The inverse layout of :func:`unfold` (col2im): (N, C*KH*KW, L) columns summed back into
    an (N, C, H, W) image, overlaps added. A transposed convolution with a one-hot weight.
    ``paddings`` reads as in :func:`unfold` (four ints: ``[top, left, bottom, right]``).

    Example:
        >>> cols = framework.ones([1, 4, 4])
        >>> list(framework.nn.functional.fold(cols, [3, 3], [2, 2]).shape)
        [1, 1, 3, 3]
    """
    x = float_arg("fold", x)
    a = _unfold_args("fold", kernel_sizes, strides, paddings, dilations)
    hw = _ntuple("fold", "output_sizes", output_sizes, 2, 1)
    k, s, d, p = a["kernel_sizes"], a["strides"], a["dilations"], a["paddings"]
    kk = k[0] * k[1]
    o = [_out_size("fold", hw[i], k[i], s[i], d[i], p[i]) for i in range(2)]
    if x.ndim != 3 or x.shape[1] % kk or x.shape[2] != o[0] * o[1]:
        raise OpArgumentError(
            f"[fold] x must be (N, C*{kk}, {o[0] * o[1]}) for kernel {k} and output {hw}, got shape {x.shape}"
        )
    c = x.shape[1] // kk
    onehot = np.zeros((c * kk, 1) + k, dtype=x.dtype)
    for ci in range(c):
        for j, off in enumerate(np.ndindex(*k)):
            onehot[ci * kk + j, 0][off] = 1.0
    w = to_tensor(onehot, device=x.device)
    op = tuple(hw[i] - _convt_out(o[i], k[i], s[i], d[i], p[i], 0) for i in range(2))
    attrs = {"stride": s, "padding": p, "output_padding": op, "dilation": d, "groups": c}
    return call(OPS["conv2d_transpose"], [x.reshape((x.shape[0], c * kk, o[0], o[1])), w], attrs)


def pixel_shuffle(
    x: Tensor, upscale_factor: int, data_format: str = "NCHW", name: str | None = None
) -> Tensor:
    """(N, C*r*r, H, W) -> (N, C, H*r, W*r)."""
    x = tensor_arg("pixel_shuffle", x)
    r = int(upscale_factor)
    if data_format == "NHWC":
        return pixel_shuffle(x.transpose((0, 3, 1, 2)), r).transpose((0, 2, 3, 1))
    if x.ndim != 4 or r < 1 or x.shape[1] % (r * r):
        raise OpArgumentError(
            f"[pixel_shuffle] x must be 4-d with channels divisible by upscale_factor**2={r * r}, got shape {x.shape}"
        )
    n, c, h, w = x.shape
    y = x.reshape((n, c // (r * r), r, r, h, w)).transpose((0, 1, 4, 2, 5, 3))
    return y.reshape((n, c // (r * r), h * r, w * r))


def pixel_unshuffle(
    x: Tensor, downscale_factor: int, data_format: str = "NCHW", name: str | None = None
) -> Tensor:
    """(N, C, H*r, W*r) -> (N, C*r*r, H, W), the inverse of :func:`pixel_shuffle`."""
    x = tensor_arg("pixel_unshuffle", x)
    r = int(downscale_factor)
    if data_format == "NHWC":
        return pixel_unshuffle(x.transpose((0, 3, 1, 2)), r).transpose((0, 2, 3, 1))
    if x.ndim != 4 or r < 1 or x.shape[2] % r or x.shape[3] % r:
        raise OpArgumentError(
            f"[pixel_unshuffle] x must be 4-d with H and W divisible by downscale_factor={r}, got shape {x.shape}"
        )
    n, c, h, w = x.shape
    y = x.reshape((n, c, h // r, r, w // r, r)).transpose((0, 1, 3, 5, 2, 4))
    return y.reshape((n, c * r * r, h // r, w // r))
