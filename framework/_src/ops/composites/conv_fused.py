"""The blocked channel layout NCHWc and the convolution that reads and writes it with its
epilogue fused: ``to_nchwc``, ``from_nchwc``, ``conv2d_nchwc``, ``global_pool_nchwc``, the
global sum or max over the pixels that reads it (a ResNet's pooling before its classifier), and
``max_pool2d_nchwc``, a windowed max pool from blocked to blocked (a ResNet's pool after its stem).

A tensor (N, C, H, W) in NCHWc is (N, ceil(C / block), H, W, block): channel ``k`` of pixel
(y, x) at ``[:, k // block, y, x, k % block]``, the channels past C zero. A device that
vectorises over channels keeps this layout between consecutive convolutions (ONNX Runtime's
NCHWc transformer, oneDNN's nChw16c); the ``conv_nchwc`` pass
(framework/ir/passes/conv_fusion.py) rewrites an inference program into it where the device
has a ``conv2d_nchwc`` kernel, with ``to_nchwc``/``from_nchwc`` only where the blocked region
starts and ends.

``conv2d_nchwc(x, w, b, r)`` is ``relu?(conv2d(x, w) + b + r)`` (``r`` optional, ``relu`` an
attribute) in that order of rounding, its output blocked; ``x`` blocked or, with
``blocked_input=False``, plain NCHW (a first layer of three channels would be mostly padding
as a block). Each op is its decomposition into existing ops (a permute, a pad or slice, the
conv2d composite, adds and relu), so every plugin runs it; the gradient is the
decomposition's.

>>> import framework as fw
>>> from framework.incubate.nn import functional as IF
>>> x, w, b = fw.ones([1, 3, 4, 4]), fw.ones([5, 3, 3, 3]), fw.zeros([5])
>>> y = IF.conv2d_nchwc(x, w, b, padding=1, relu=True, blocked_input=False)
>>> y.shape, IF.from_nchwc(y, 5).shape
((1, 1, 4, 4, 16), (1, 5, 4, 4))
"""

from __future__ import annotations

from typing import Any

from adapter_api import OpArgumentError

from ...tensor import Tensor
from .. import shape as S
from ..base import OPS, call, composite
from ..cost import conv_flops
from ._common import float_arg, tensor_arg
from ._window import _out_size, _padding, _pair

#: channels per block (16: AVX-512's floats, two AVX2 vectors)
BLOCK = 16

_LAYOUT = "a layout change: each element lands whole on one device (the blocked dims are not a tensor's dims)"


def _blocks(c: int, block: int) -> int:
    return -(-c // block)


def _to_infer(ins: list[Tensor], attrs: dict[str, Any]) -> list:
    n, c, h, w = ins[0].shape
    return [((n, _blocks(c, attrs["block"]), h, w, attrs["block"]), ins[0].dtype)]


@composite("to_nchwc", infer=_to_infer, no_sharding=_LAYOUT)
def to_nchwc_decomposition(x: Tensor, *, block: int) -> Tensor:
    """(N, C, H, W) -> (N, ceil(C / block), H, W, block): channels padded with zeros, split in
    blocks, each block's channels made the last axis."""
    n, c, h, w = x.shape
    cb = _blocks(c, block)
    if cb * block != c:
        x = S.pad_raw(x, ((0, 0), (0, cb * block - c), (0, 0), (0, 0)), 0.0)
    return x.reshape((n, cb, block, h, w)).transpose((0, 1, 3, 4, 2))


def _from_infer(ins: list[Tensor], attrs: dict[str, Any]) -> list:
    n, _, h, w, _ = ins[0].shape
    return [((n, attrs["channels"], h, w), ins[0].dtype)]


@composite("from_nchwc", infer=_from_infer, no_sharding=_LAYOUT)
def from_nchwc_decomposition(x: Tensor, *, channels: int) -> Tensor:
    """(N, CB, H, W, block) -> (N, channels, H, W): the blocks' channels back before the
    pixels, the padding channels dropped."""
    n, cb, h, w, block = x.shape
    y = x.transpose((0, 1, 4, 2, 3)).reshape((n, cb * block, h, w))
    if channels != cb * block:
        y = S.slice_raw(y, (0, 0, 0, 0), (n, channels, h, w), (1, 1, 1, 1))
    return y


def _conv_nchwc_infer(ins: list[Tensor], attrs: dict[str, Any]) -> list:
    x, w = ins[0], ins[1]
    h, wd = x.shape[2:4]
    (ph, pw), k = attrs["padding"], w.shape[2:]
    oh = _out_size("conv2d_nchwc", h, k[0], attrs["stride"][0], attrs["dilation"][0], ph)
    ow = _out_size("conv2d_nchwc", wd, k[1], attrs["stride"][1], attrs["dilation"][1], pw)
    return [((x.shape[0], _blocks(w.shape[0], BLOCK), oh, ow, BLOCK), x.dtype)]


def _conv_nchwc_flops(ins: list, outs: list, attrs: dict[str, Any]) -> float:
    (n, _, oh, ow, _), o = outs[0], ins[1][0]
    return conv_flops(ins, [(n, o, oh, ow)], attrs)


@composite(
    "conv2d_nchwc",
    amp="allow",
    flops=_conv_nchwc_flops,
    infer=_conv_nchwc_infer,
    no_sharding="an inference rewrite of conv2d (conv_nchwc pass); distributed programs keep conv2d",
)
def conv2d_nchwc_decomposition(
    x: Tensor,
    w: Tensor,
    b: Tensor,
    *rest: Tensor,
    stride: tuple,
    padding: tuple,
    dilation: tuple,
    relu: bool,
    blocked_input: bool,
    weight_scale: bool = False,
) -> Tensor:
    """``relu?(conv2d(x, w) + b (+ r))`` with a blocked output (``r`` blocked too); ``x``
    blocked where ``blocked_input``, else NCHW. With ``weight_scale`` the operands are
    ``(x, w, b, s[, r])`` and the weight is ``w * s`` (``s`` one value per output channel, (O,)):
    a BatchNorm's scale folded into the conv, multiplied where the kernel packs the weights."""
    o, c = w.shape[:2]
    if weight_scale:
        w = w * rest[0].reshape((o, 1, 1, 1))
    r = rest[-1] if len(rest) > int(weight_scale) else None
    xs = call(OPS["from_nchwc"], [x], {"channels": c}) if blocked_input else x
    y = call(
        OPS["conv2d"], [xs, w], {"stride": stride, "padding": padding, "dilation": dilation, "groups": 1}
    )
    y = y + b.reshape((1, o, 1, 1))
    if r is not None:
        y = y + call(OPS["from_nchwc"], [r], {"channels": o})
    if relu:
        y = call(OPS["relu"], [y], {})
    return call(OPS["to_nchwc"], [y], {"block": BLOCK})


_REDUCES = ("sum", "max")


def _pool_infer(ins: list[Tensor], attrs: dict[str, Any]) -> list:
    n, c = ins[0].shape[0], attrs["channels"]
    return [((n, c, 1, 1) if attrs["keepdim"] else (n, c), ins[0].dtype)]


def _pool_flops(ins: list, outs: list, attrs: dict[str, Any]) -> float:
    n, _, h, w, _ = ins[0]
    return float(n * attrs["channels"] * h * w)


@composite("global_pool_nchwc", infer=_pool_infer, flops=_pool_flops, no_sharding=_LAYOUT)
def global_pool_nchwc_decomposition(x: Tensor, *, channels: int, reduce: str, keepdim: bool) -> Tensor:
    """The ``reduce`` (``sum`` or ``max``) over H and W of blocked ``x`` (N, CB, H, W, block),
    plain out: (N, channels, 1, 1), or (N, channels) without ``keepdim``."""
    y = call(OPS["from_nchwc"], [x], {"channels": channels})
    return call(OPS[reduce], [y], {"axes": (2, 3), "keepdim": keepdim})


def _max_pool_infer(ins: list[Tensor], attrs: dict[str, Any]) -> list:
    n, cb, h, w, block = ins[0].shape
    k, st, p = attrs["kernel_size"], attrs["stride"], attrs["padding"]
    oh = _out_size("max_pool2d_nchwc", h, k[0], st[0], 1, p[0])
    ow = _out_size("max_pool2d_nchwc", w, k[1], st[1], 1, p[1])
    return [((n, cb, oh, ow, block), ins[0].dtype)]


def _max_pool_flops(ins: list, outs: list, attrs: dict[str, Any]) -> float:
    n, _, oh, ow, _ = outs[0]
    k = attrs["kernel_size"]
    return float(n * attrs["channels"] * oh * ow * k[0] * k[1])


@composite("max_pool2d_nchwc", infer=_max_pool_infer, flops=_max_pool_flops, no_sharding=_LAYOUT)
def max_pool2d_nchwc_decomposition(
    x: Tensor, *, channels: int, kernel_size: tuple, stride: tuple, padding: tuple
) -> Tensor:
    """``max_pool2d`` (padding ``((t, b), (l, r))`` that no window's max takes: -inf) of blocked
    ``x``, blocked out: ``to_nchwc(max_pool2d(from_nchwc(x, channels)))``, channels past
    ``channels`` zero."""
    y = call(OPS["from_nchwc"], [x], {"channels": channels})
    y = call(OPS["max_pool2d"], [y], {"kernel_size": kernel_size, "stride": stride, "padding": padding})
    return call(OPS["to_nchwc"], [y], {"block": x.shape[4]})


def _check_blocked(name: str, x: Tensor, channels: int) -> None:
    """``x`` 5-d (N, CB, H, W, block) and ``channels`` an int in [1, CB * block], else an error
    naming ``name``."""
    if x.ndim != 5:
        raise OpArgumentError(f"[{name}] x must be 5-d (N, C blocks, H, W, block), got shape {x.shape}")
    if not isinstance(channels, int) or not 0 < channels <= x.shape[1] * x.shape[4]:
        raise OpArgumentError(
            f"[{name}] channels must be an int in [1, {x.shape[1] * x.shape[4]}] (blocks x block), "
            f"got {channels!r}"
        )


# -- the user-facing functions (framework.incubate.nn.functional) ------------------------------
def to_nchwc(x: Tensor, block: int = BLOCK, name: str | None = None) -> Tensor:
    """NCHW ``x`` in the blocked layout (N, ceil(C / block), H, W, block), channels past C zero.

    >>> import framework as fw
    >>> from framework.incubate.nn import functional as IF
    >>> IF.to_nchwc(fw.ones([2, 3, 4, 5])).shape
    (2, 1, 4, 5, 16)
    """
    x = tensor_arg("to_nchwc", x)
    if x.ndim != 4:
        raise OpArgumentError(f"[to_nchwc] x must be 4-d (N, C, H, W), got shape {x.shape}")
    if not isinstance(block, int) or block < 1:
        raise OpArgumentError(f"[to_nchwc] block must be a positive int, got {block!r}")
    return call(OPS["to_nchwc"], [x], {"block": block})


def from_nchwc(x: Tensor, channels: int, name: str | None = None) -> Tensor:
    """Blocked ``x`` (N, CB, H, W, block) back to NCHW with its first ``channels`` channels.

    >>> import framework as fw
    >>> from framework.incubate.nn import functional as IF
    >>> IF.from_nchwc(IF.to_nchwc(fw.ones([2, 3, 4, 5])), 3).shape
    (2, 3, 4, 5)
    """
    x = tensor_arg("from_nchwc", x)
    _check_blocked("from_nchwc", x, channels)
    return call(OPS["from_nchwc"], [x], {"channels": channels})


def conv2d_nchwc(
    x: Tensor,
    weight: Tensor,
    bias: Tensor,
    residual: Tensor | None = None,
    stride: Any = 1,
    padding: Any = 0,
    dilation: Any = 1,
    relu: bool = False,
    blocked_input: bool = True,
    weight_scale: Tensor | None = None,
    name: str | None = None,
) -> Tensor:
    """``relu?(conv2d(x, weight) + bias + residual)`` in the blocked layout: the output (and
    ``residual``) are (N, ceil(O / 16), OH, OW, 16); ``x`` is blocked, or NCHW with
    ``blocked_input=False``. One group; ``bias`` of shape (O,). A blocked ``x`` holds zeros in
    its channels past C, as :func:`to_nchwc` and this function write them (a kernel may read
    them: times a zero weight, a NaN there would show). ``weight_scale`` (O,): the weight is
    ``weight * weight_scale`` per output channel (rounded once, as that product).

    >>> import framework as fw
    >>> from framework.incubate.nn import functional as IF
    >>> x = IF.to_nchwc(fw.ones([1, 16, 4, 4]))
    >>> y = IF.conv2d_nchwc(x, fw.ones([16, 16, 1, 1]), fw.ones([16]), residual=x, relu=True)
    >>> float(IF.from_nchwc(y, 16)[0, 0, 0, 0])
    18.0
    """
    x = float_arg("conv2d_nchwc", x)
    weight = tensor_arg("conv2d_nchwc", weight, "weight")
    bias = tensor_arg("conv2d_nchwc", bias, "bias")
    if weight.ndim != 4:
        raise OpArgumentError(f"[conv2d_nchwc] weight must be 4-d (O, C, KH, KW), got shape {weight.shape}")
    o, c = weight.shape[:2]
    want = 5 if blocked_input else 4
    if x.ndim != want or (x.shape[1] != _blocks(c, x.shape[4]) if blocked_input else x.shape[1] != c):
        expect = f"(N, {_blocks(c, BLOCK)}, H, W, {BLOCK})" if blocked_input else f"(N, {c}, H, W)"
        raise OpArgumentError(
            f"[conv2d_nchwc] x must be {expect} for a weight of {c} input channels "
            f"(blocked_input={blocked_input}), got shape {x.shape}"
        )
    if blocked_input and x.shape[4] != BLOCK:
        raise OpArgumentError(f"[conv2d_nchwc] x's blocks must hold {BLOCK} channels, got {x.shape[4]}")
    if bias.shape != (o,):
        raise OpArgumentError(f"[conv2d_nchwc] bias must have shape ({o},), got {bias.shape}")
    d = _pair("conv2d_nchwc", "dilation", dilation, least=1)
    st = _pair("conv2d_nchwc", "stride", stride, least=1)
    attrs = {
        "stride": st,
        "padding": _padding("conv2d_nchwc", padding, weight.shape[2:], d, x.shape[2:4], st),
        "dilation": d,
        "relu": bool(relu),
        "blocked_input": bool(blocked_input),
    }
    ins = [x, weight.astype(x.dtype), bias.astype(x.dtype)]
    if weight_scale is not None:
        weight_scale = tensor_arg("conv2d_nchwc", weight_scale, "weight_scale")
        if weight_scale.shape != (o,):
            raise OpArgumentError(
                f"[conv2d_nchwc] weight_scale must have shape ({o},), got {weight_scale.shape}"
            )
        ins.append(weight_scale.astype(x.dtype))
        attrs["weight_scale"] = True
    if residual is not None:
        residual = tensor_arg("conv2d_nchwc", residual, "residual")
        want_shape = _conv_nchwc_infer(ins, attrs)[0][0]
        if residual.shape != want_shape:
            raise OpArgumentError(
                f"[conv2d_nchwc] residual must have the output's blocked shape {want_shape}, got {residual.shape}"
            )
        ins.append(residual.astype(x.dtype))
    return call(OPS["conv2d_nchwc"], ins, attrs)


def global_pool_nchwc(
    x: Tensor, channels: int, reduce: str = "sum", keepdim: bool = True, name: str | None = None
) -> Tensor:
    """The sum (``reduce="sum"``) or the max (``"max"``) over the pixels of a blocked ``x``
    (N, CB, H, W, block), as ``fw.sum``/``fw.amax`` of ``from_nchwc(x, channels)`` over axes
    2 and 3: (N, channels, 1, 1), or (N, channels) with ``keepdim=False``, in the plain layout.
    A global average pool is this sum times 1 / (H * W).

    >>> import framework as fw
    >>> from framework.incubate.nn import functional as IF
    >>> x = IF.to_nchwc(fw.ones([2, 3, 4, 5]))
    >>> y = IF.global_pool_nchwc(x, 3)
    >>> y.shape, float(y[0, 0, 0, 0])
    ((2, 3, 1, 1), 20.0)
    """
    x = float_arg("global_pool_nchwc", x)
    _check_blocked("global_pool_nchwc", x, channels)
    if reduce not in _REDUCES:
        raise OpArgumentError(f"[global_pool_nchwc] reduce must be one of {_REDUCES}, got {reduce!r}")
    return call(
        OPS["global_pool_nchwc"], [x], {"channels": channels, "reduce": reduce, "keepdim": bool(keepdim)}
    )


def max_pool2d_nchwc(
    x: Tensor,
    channels: int,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    name: str | None = None,
) -> Tensor:
    """The max over each window of a blocked ``x`` (N, CB, H, W, block), blocked out
    (N, CB, OH, OW, block): ``to_nchwc(F.max_pool2d(from_nchwc(x, channels), ...))``, the
    padding never taken (-inf), the channels past ``channels`` zero. ``stride`` defaults to
    ``kernel_size``; ``padding`` an int, a pair or ``((top, bottom), (left, right))``.

    >>> import framework as fw
    >>> from framework.incubate.nn import functional as IF
    >>> x = IF.to_nchwc(fw.arange(16, dtype="float32").reshape([1, 1, 4, 4]))
    >>> y = IF.max_pool2d_nchwc(x, 1, 3, stride=2, padding=1)
    >>> y.shape, IF.from_nchwc(y, 1).numpy().ravel().tolist()
    ((1, 1, 2, 2, 16), [5.0, 7.0, 13.0, 15.0])
    """
    x = float_arg("max_pool2d_nchwc", x)
    _check_blocked("max_pool2d_nchwc", x, channels)
    k = _pair("max_pool2d_nchwc", "kernel_size", kernel_size, least=1)
    st = k if stride is None else _pair("max_pool2d_nchwc", "stride", stride, least=1)
    if isinstance(padding, int) or (
        isinstance(padding, (tuple, list)) and len(padding) == 2 and all(isinstance(v, int) for v in padding)
    ):
        ph, pw = _pair("max_pool2d_nchwc", "padding", padding)
        pads = ((ph, ph), (pw, pw))
    elif (
        isinstance(padding, (tuple, list))
        and len(padding) == 2
        and all(
            isinstance(p, (tuple, list)) and len(p) == 2 and all(isinstance(v, int) for v in p)
            for p in padding
        )
    ):
        pads = (tuple(padding[0]), tuple(padding[1]))
    else:
        raise OpArgumentError(
            f"[max_pool2d_nchwc] padding must be an int, a pair or ((top, bottom), (left, right)), got {padding!r}"
        )
    if min(min(p) for p in pads) < 0 or any(max(p) >= kk for p, kk in zip(pads, k)):
        raise OpArgumentError(
            f"[max_pool2d_nchwc] padding must be in [0, kernel_size) so that each window holds a pixel, "
            f"got {padding!r} for kernel_size {k}"
        )
    attrs = {"channels": channels, "kernel_size": k, "stride": st, "padding": pads}
    _max_pool_infer([x], attrs)  # a window larger than the padded image: named here
    return call(OPS["max_pool2d_nchwc"], [x], attrs)
