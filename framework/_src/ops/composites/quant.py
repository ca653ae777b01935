"""Weight-only quantisation (after ``paddle.nn.quant``): ``weight_quantize``,
``weight_dequantize`` and ``weight_only_linear``, each a composite defined by its
decomposition into primitives, so every plugin runs them; a plugin with an integer product
may register a fused ``weight_only_linear`` kernel (the IR's quantisation rules then turn
"dequantise, then matmul" back into that one op).

The layout is Paddle's logical one: a weight ``x`` of shape ``[k, n]`` (``in_features,
out_features``, as ``F.linear`` reads it) becomes ``q`` of shape ``[n, k]`` int8 (transposed:
one row per output channel) and a scale of ``x``'s dtype, ``[n]`` per channel or
``[ceil(k / group_size), n]`` per group of ``group_size`` input rows. ``weight_only_int4``
packs two channels in one byte: row ``j`` of ``q`` (``[n / 2, k]``) holds channel ``2j`` in
its low nibble and ``2j + 1`` in its high one, both two's complement in ``[-7, 7]``. Values
are ``round(x / scale)`` (halves away from zero, as Paddle's kernel) clipped to ``[-127,
127]`` (int8) or ``[-7, 7]`` (int4), ``scale = abs-max / 127`` (or ``/ 7``). Paddle's own CPU
kernel writes the same scales but permutes and biases the integers for its GPU kernels
(``arch``); that interleaved layout is not reproduced here.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from adapter_api import OpArgumentError

from ... import dtypes as _dt
from ...tensor import Tensor
from .. import math as M
from ..base import OPS, call, composite
from ..creation import zeros
from ..shape import concat, stack
from ._common import tensor_arg
from .float8 import float8_saturate

#: algo -> (bits name, largest quantised magnitude); ``weight_only_fp8`` (float8_e4m3fn, abs-max
#: to 448) is Oarlock's own, beside Paddle's two integer ones
ALGOS = {"weight_only_int8": ("int8", 127), "weight_only_int4": ("int4", 7), "weight_only_fp8": ("fp8", 448)}
_WEIGHT_DTYPES = {"int8": "weight_only_int8", "int4": "weight_only_int4", "fp8": "weight_only_fp8"}


def stored_dtype(bits: str) -> np.dtype:
    """The dtype a quantised weight is stored in: float8_e4m3fn for fp8, else int8 (int4 packed)."""
    return _dt.float8_e4m3fn if bits == "fp8" else np.dtype("int8")


_QUANT_NO_GRAD = "its outputs are integers and a rounded scale: nothing to differentiate"


def _check_group(name: str, group_size: Any) -> int:
    if (
        isinstance(group_size, bool)
        or not isinstance(group_size, int)
        or not (group_size == -1 or group_size > 0)
    ):
        raise OpArgumentError(
            f"[{name}] group_size must be -1 (per channel) or a positive int, got {group_size!r}"
        )
    return group_size


def _algo(name: str, algo: Any) -> tuple[str, int]:
    if algo not in ALGOS:
        raise OpArgumentError(f"[{name}] algo must be one of {sorted(ALGOS)}, got {algo!r}")
    return ALGOS[algo]


def _groups(k: int, group_size: int) -> int:
    return 1 if group_size == -1 else math.ceil(k / group_size)


# -- packing ------------------------------------------------------------------------------------
def pack_int4(q: Tensor, signed: bool = True) -> Tensor:
    """Pack 4-bit integers two a byte, as ``weight_quantize(algo="weight_only_int4")`` stores
    its weight: ``[n, k]`` -> ``[n / 2, k]``, row ``2j`` in the low nibble of row ``j`` and row
    ``2j + 1`` in the high one. Each value keeps its low 4 bits (two's complement for int4).

    Args:
        q (Tensor): 2-d integers, ``n`` even: int4 values in ``[-8, 7]``, or uint4 in ``[0, 15]``.
        signed (bool): int4 into int8 bytes (True), or uint4 into uint8 bytes (False).

    Returns:
        Tensor: ``[n / 2, k]`` int8 (signed) or uint8.

    Example:
        >>> import framework as fw
        >>> from framework.nn.quant import pack_int4, unpack_int4
        >>> p = pack_int4(fw.to_tensor([[1, -2], [-8, 7]]))
        >>> p.tolist(), unpack_int4(p).tolist()
        ([[-127, 126]], [[1, -2], [-8, 7]])
        >>> pack_int4(fw.to_tensor([[15], [1]]), signed=False).tolist()
        [[31]]
    """
    if q.ndim != 2 or q.shape[0] % 2 or q.dtype.kind not in "iu":
        raise OpArgumentError(
            f"[pack_int4] expects a 2-d integer tensor with an even number of rows, got {list(q.shape)} {q.dtype}"
        )
    n, k = q.shape
    pairs = M.cast(q, "int32").reshape((n // 2, 2, k))
    lo, hi = pairs[:, 0, :], pairs[:, 1, :]
    if not signed:
        return M.cast(M.remainder(lo, 16) + M.remainder(hi, 16) * 16, "uint8")
    return M.cast(M.remainder(lo, 16) + hi * 16, "int8")


def unpack_int4(packed: Tensor, signed: bool = True) -> Tensor:
    """The inverse of :func:`pack_int4`: ``[n / 2, k]`` bytes -> ``[n, k]`` int32, in ``[-8, 7]``
    (int4, ``signed``) or ``[0, 15]`` (uint4).

    Example:
        >>> import framework as fw
        >>> from framework.nn.quant import unpack_int4
        >>> unpack_int4(fw.to_tensor([[31]], dtype="uint8"), signed=False).tolist()
        [[15], [1]]
    """
    if packed.ndim != 2 or packed.dtype.kind not in "iu" or packed.dtype.itemsize != 1:
        raise OpArgumentError(
            f"[unpack_int4] expects a 2-d int8 or uint8 tensor from pack_int4, got {list(packed.shape)} {packed.dtype}"
        )
    h, k = packed.shape
    b = M.cast(packed, "int32")
    if not signed:
        b = M.remainder(b, 256)  # int8 bytes read as unsigned
    hi = M.floor_divide(b, 16)  # the high nibble, sign-extended (floor division is an arithmetic shift)
    lo = b - hi * 16  # 0..15
    if signed:
        lo = M.where(lo >= 8, lo - 16, lo)
    return stack([lo, hi], axis=1).reshape((2 * h, k))


# -- weight_quantize ----------------------------------------------------------------------------
def _quantize_infer(ins: list[Tensor], attrs: dict[str, Any]) -> list:
    k, n = ins[0].shape
    bits, _ = ALGOS[attrs["algo"]]
    g = attrs["group_size"]
    rows = n // 2 if bits == "int4" else n
    scale_shape = (n,) if g == -1 else (_groups(k, g), n)
    return [((rows, k), stored_dtype(bits)), (scale_shape, ins[0].dtype)]


@composite("weight_quantize", infer=_quantize_infer, no_sharding="quantises a whole weight once, replicated")
def weight_quantize_decomposition(x: Tensor, algo: str = "weight_only_int8", group_size: int = -1) -> tuple:
    """Abs-max scales per output channel (or per group of input rows), then
    ``clip(round(x / scale))`` as int8, transposed to ``[n, k]`` (int4: two channels a byte)."""
    bits, qmax = ALGOS[algo]
    k, n = x.shape
    if group_size == -1:
        scale = M.max(M.abs(x), axis=0) / qmax  # [n]
        spread = scale.reshape((1, n))
    else:
        g = _groups(k, group_size)
        padded = _pad_rows(x, g * group_size)
        scale = M.max(M.abs(padded.reshape((g, group_size, n))), axis=1) / qmax  # [g, n]
        spread = _spread_groups(scale, group_size, k)
    safe = M.where(spread == 0, M.ones_like(spread), spread)
    if bits == "fp8":  # round to nearest even on the float8 grid, saturating at 448
        return float8_saturate(M.cast(x / safe, "float32"), _dt.float8_e4m3fn).transpose((1, 0)), scale
    q = M.clip(M.round_half_away(x / safe), -qmax, qmax)
    q = M.cast(q, "int8").transpose((1, 0))  # [n, k]
    return (pack_int4(q) if bits == "int4" else q), scale


OPS["weight_quantize"].no_grad = _QUANT_NO_GRAD


def _pad_rows(x: Tensor, rows: int) -> Tensor:
    if rows == x.shape[0]:
        return x
    return concat([x, zeros([rows - x.shape[0], x.shape[1]], x.dtype, x.device)], axis=0)


def _spread_groups(scale: Tensor, group_size: int, k: int) -> Tensor:
    """``[g, n]`` group scales -> ``[k, n]``: row ``i`` of the weight reads group ``i // group_size``."""
    g, n = scale.shape
    rows = scale.reshape((g, 1, n)).expand((g, group_size, n)).reshape((g * group_size, n))
    return rows if g * group_size == k else rows[:k]


# -- weight_dequantize --------------------------------------------------------------------------
def _dequantize_infer(ins: list[Tensor], attrs: dict[str, Any]) -> list:
    q, scale = ins
    bits, _ = ALGOS[attrs["algo"]]
    n = q.shape[0] * (2 if bits == "int4" else 1)
    return [((q.shape[1], n), scale.dtype)]


@composite(
    "weight_dequantize", infer=_dequantize_infer, no_sharding="decomposes into ops that have their rules"
)
def weight_dequantize_decomposition(
    weight: Tensor, scale: Tensor, algo: str = "weight_only_int8", group_size: int = -1
) -> Tensor:
    """Unpack (int4), cast to the scale's dtype, transpose to ``[k, n]`` and multiply by the scale."""
    bits, _ = ALGOS[algo]
    q = unpack_int4(weight) if bits == "int4" else weight
    w = M.cast(q, scale.dtype).transpose((1, 0))  # [k, n]
    k, n = w.shape
    if group_size == -1:
        return w * scale.reshape((1, n))
    return w * _spread_groups(scale, group_size, k)


# -- weight_only_linear -------------------------------------------------------------------------
def _wol_infer(ins: list[Tensor], attrs: dict[str, Any]) -> list:
    x, w = ins[0], ins[1]
    n = w.shape[0] * (2 if attrs["weight_dtype"] == "int4" else 1)
    return [(x.shape[:-1] + (n,), x.dtype)]


def _wol_flops(ins: list[tuple[int, ...]], outs: list[tuple[int, ...]], attrs: dict[str, Any]) -> float:
    return 2.0 * math.prod(outs[0]) * ins[0][-1]


@composite(
    "weight_only_linear",
    infer=_wol_infer,
    flops=_wol_flops,
    no_sharding="decomposes into a dequantisation and a matmul, which have their rules",
)
def weight_only_linear_decomposition(
    x: Tensor,
    weight: Tensor,
    weight_scale: Tensor,
    *rest: Tensor,
    weight_dtype: str = "int8",
    group_size: int = -1,
    zero_point: bool = False,
) -> Tensor:
    """``x @ weight_dequantize(weight, weight_scale) (+ bias)``: dequantise, then the product.
    ``rest`` is ``[bias]`` and, with ``zero_point`` (an asymmetric weight: the attr is absent
    otherwise), a last ``weight_offset`` ``[groups, n]``: the dequantised weight of input row
    ``t`` is ``q * scale + offset[t // group]``, so ``x``'s sums over each group times the
    offset are added."""
    rest_l = list(rest)
    offset = rest_l.pop() if zero_point else None
    bias = rest_l[0] if rest_l else None
    attrs = {"algo": _WEIGHT_DTYPES[weight_dtype], "group_size": group_size}
    w = call(OPS["weight_dequantize"], [weight, weight_scale], attrs)
    if w.dtype != x.dtype:
        w = M.cast(w, x.dtype)
    lead = x.shape[:-1]
    x2 = x.reshape((-1, x.shape[-1]))
    y = M.matmul(x2, w)
    if offset is not None:
        k, g = x.shape[-1], offset.shape[0]
        gs = k if group_size == -1 else group_size
        sums = _pad_rows(x2.transpose((1, 0)), g * gs).reshape((g, gs, -1)).sum(axis=1)  # [g, m]
        y = y + M.matmul(
            sums.transpose((1, 0)), M.cast(offset, x.dtype) if offset.dtype != x.dtype else offset
        )
    if bias is not None:
        y = y + bias
    return y.reshape(lead + (w.shape[1],))


# -- the user functions (re-exported by framework.nn.quant) -------------------------------------
def weight_quantize(
    x: Tensor, algo: str = "weight_only_int8", arch: int | None = None, group_size: int = -1
) -> tuple[Tensor, Tensor]:
    """Quantise a ``[in_features, out_features]`` weight to int8 or packed int4 with abs-max
    scales per output channel (``group_size=-1``) or per group of ``group_size`` input rows
    (Paddle's ``paddle.nn.quant.weight_quantize``; ``arch`` is accepted and ignored: the
    layout is the plain one of the module docstring).

    Args:
        x (Tensor): float weight ``[k, n]``.
        algo (str): ``"weight_only_int8"``, ``"weight_only_int4"`` (``n`` even) or
            ``"weight_only_fp8"`` (float8_e4m3fn, ``scale = abs-max / 448``; not in Paddle).
        arch (int, optional): ignored (Paddle's GPU layout switch).
        group_size (int): ``-1``, or the rows per scale group (64 and 128 in Paddle; any
            positive size here, a last group may be shorter).

    Returns:
        tuple[Tensor, Tensor]: the int8 weight ``[n, k]`` (int4: ``[n / 2, k]``) and the scale
        (``[n]`` or ``[groups, n]``, ``x``'s dtype).

    Example:
        >>> import framework as fw
        >>> from framework.nn.quant import weight_quantize
        >>> q, s = weight_quantize(fw.to_tensor([[1.0, -0.5], [0.5, 2.0]]))
        >>> q.tolist(), s.shape
        ([[127, 64], [-32, 127]], (2,))
    """
    bits, _ = _algo("weight_quantize", algo)
    x = tensor_arg("weight_quantize", x)
    group_size = _check_group("weight_quantize", group_size)
    if x.ndim != 2 or not _dt.is_floating(x.dtype):
        raise OpArgumentError(
            f"[weight_quantize] x must be a 2-d float weight [in_features, out_features], got shape {x.shape} "
            f"{x.dtype}"
        )
    if bits == "int4" and x.shape[1] % 2:
        raise OpArgumentError(
            f"[weight_quantize] weight_only_int4 packs two output channels a byte: out_features must be even, "
            f"got {x.shape[1]}"
        )
    return call(OPS["weight_quantize"], [x], {"algo": algo, "group_size": group_size})


def weight_dequantize(
    x: Tensor, scale: Tensor, algo: str = "weight_only_int8", out_dtype: Any = None, group_size: int = -1
) -> Tensor:
    """The float weight ``[k, n]`` back from :func:`weight_quantize`'s outputs
    (``paddle.nn.quant.weight_dequantize``).

    Example:
        >>> import framework as fw
        >>> from framework.nn.quant import weight_dequantize, weight_quantize
        >>> w = fw.to_tensor([[1.0, -0.5], [0.5, 2.0]])
        >>> weight_dequantize(*weight_quantize(w)).numpy().round(2).tolist()
        [[1.0, -0.5], [0.5, 2.0]]
    """
    _algo("weight_dequantize", algo)
    group_size = _check_group("weight_dequantize", group_size)
    _check_quantised("weight_dequantize", x, scale, algo, group_size)
    out = call(OPS["weight_dequantize"], [x, scale], {"algo": algo, "group_size": group_size})
    return out if out_dtype is None else M.cast(out, out_dtype)


def _check_quantised(name: str, q: Any, scale: Any, algo: str, group_size: int) -> None:
    q = tensor_arg(name, q, "weight")
    scale = tensor_arg(name, scale, "weight_scale")
    want_dtype = stored_dtype(ALGOS[algo][0])
    if q.ndim != 2 or q.dtype != want_dtype:
        raise OpArgumentError(
            f"[{name}] weight must be a 2-d {want_dtype} tensor from weight_quantize ({algo}), got {q.shape} {q.dtype}"
        )
    n = q.shape[0] * (2 if ALGOS[algo][0] == "int4" else 1)
    want = (n,) if group_size == -1 else (_groups(q.shape[1], group_size), n)
    if tuple(scale.shape) != want or not _dt.is_floating(scale.dtype):
        raise OpArgumentError(
            f"[{name}] weight_scale must be a float tensor of shape {list(want)} for a weight {list(q.shape)} "
            f"({algo}, group_size={group_size}), got {list(scale.shape)} {scale.dtype}"
        )


def weight_only_linear(
    x: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    weight_scale: Tensor | None = None,
    weight_dtype: str = "int8",
    arch: int | None = None,
    group_size: int = -1,
    *,
    weight_offset: Tensor | None = None,
) -> Tensor:
    """``x @ dequantise(weight) + bias`` with a weight from :func:`weight_quantize`
    (``paddle.nn.quant.weight_only_linear``): differentiable in ``x`` (and ``bias``).

    Args:
        x (Tensor): ``[..., k]`` float.
        weight (Tensor): int8 ``[n, k]`` (int4: ``[n / 2, k]``).
        bias (Tensor, optional): ``[n]``.
        weight_scale (Tensor): ``[n]`` or ``[groups, n]``.
        weight_dtype (str): ``"int8"``, ``"int4"`` or ``"fp8"``.
        arch (int, optional): ignored.
        group_size (int): as given to :func:`weight_quantize`.
        weight_offset (Tensor, optional): an asymmetric weight's zero points as the float
            term ``(2^(b-1) - zero) * scale`` ``[groups, n]`` (``[1, n]`` for ``group_size=-1``),
            added to each dequantised weight of its group (not in Paddle;
            ``weight_only_quantize(..., asymmetric=True)`` writes it). The cpu kernel adds it
            in the same pass as the product.

    Returns:
        Tensor: ``[..., n]`` of ``x``'s dtype.

    Example:
        >>> import framework as fw
        >>> from framework.nn.quant import weight_only_linear, weight_quantize
        >>> q, s = weight_quantize(fw.to_tensor([[1.0, -0.5], [0.5, 2.0]]))
        >>> weight_only_linear(fw.ones([1, 2]), q, weight_scale=s).numpy().round(2).tolist()
        [[1.5, 1.5]]
    """
    name = "weight_only_linear"
    x = tensor_arg(name, x)
    if weight_dtype not in _WEIGHT_DTYPES:
        raise OpArgumentError(f"[{name}] weight_dtype must be 'int8', 'int4' or 'fp8', got {weight_dtype!r}")
    if weight_scale is None:
        raise OpArgumentError(f"[{name}] weight_scale is required (the scale weight_quantize returned)")
    group_size = _check_group(name, group_size)
    _check_quantised(name, weight, weight_scale, _WEIGHT_DTYPES[weight_dtype], group_size)
    if x.ndim == 0 or x.shape[-1] != weight.shape[1] or not _dt.is_floating(x.dtype):
        raise OpArgumentError(
            f"[{name}] x must be float with last dim in_features={weight.shape[1]}, got {x.shape} {x.dtype}"
        )
    ins = [x, weight, weight_scale]
    attrs: dict[str, Any] = {"weight_dtype": weight_dtype, "group_size": group_size}
    if bias is not None:
        ins.append(tensor_arg(name, bias, "bias"))
    if weight_offset is not None:
        weight_offset = tensor_arg(name, weight_offset, "weight_offset")
        groups = 1 if group_size == -1 else weight_scale.shape[0]
        want = (groups, weight_scale.shape[-1])
        if tuple(weight_offset.shape) != want or not _dt.is_floating(weight_offset.dtype):
            raise OpArgumentError(
                f"[{name}] weight_offset must be a float tensor of shape {list(want)} (groups, out_features), got "
                f"{list(weight_offset.shape)} {weight_offset.dtype}"
            )
        ins.append(weight_offset)
        attrs["zero_point"] = True
    return call(OPS[name], ins, attrs)
