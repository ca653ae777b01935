"""Weight-only quantised embeddings: ``embedding_quantize`` stores a ``[vocab, dim]`` table as
:func:`~.quant.weight_quantize` stores the transposed weight ``[dim, vocab]`` (one abs-max
scale per token row, or per group of ``group_size`` dims of a row; int8, int4 two tokens a
byte, or float8_e4m3fn), and ``weight_only_embedding`` looks ids up in it, dequantising only
the rows it gathers (the table is never dequantised whole).

Layout (that of ``weight_quantize(table.T)``): ``q`` is ``[vocab, dim]`` (int4: ``[vocab / 2,
dim]``, token ``2j`` in the low nibble of row ``j``, ``2j + 1`` in the high one), the scale
``[vocab]`` or ``[ceil(dim / group_size), vocab]``.
"""

from __future__ import annotations

from typing import Any

from adapter_api import OpArgumentError

from ... import dtypes as _dt
from ...tensor import Tensor
from .. import math as M
from ..base import OPS, call, composite
from ..indexing import masked_fill
from ._common import tensor_arg
from .quant import _WEIGHT_DTYPES, ALGOS, _check_group, _check_quantised, weight_quantize


def _emb_infer(ins: list[Tensor], attrs: dict[str, Any]) -> list:
    x, w, s = ins
    return [(tuple(x.shape) + (w.shape[1],), s.dtype)]


@composite("weight_only_embedding", infer=_emb_infer, no_sharding="decomposes into gathers and products")
def weight_only_embedding_decomposition(
    x: Tensor, weight: Tensor, weight_scale: Tensor, weight_dtype: str = "int8", group_size: int = -1
) -> Tensor:
    """Gather the ids' rows (int4: the packed row ``id // 2``, then its nibble ``id % 2``) and
    their scales, cast to the scale's dtype and multiply."""
    ids = M.cast(x.reshape((-1,)), "int64")
    d = weight.shape[1]
    if weight_dtype == "int4":
        b = M.cast(weight.gather(M.floor_divide(ids, 2), axis=0), "int32")  # [t, d]
        hi = M.floor_divide(b, 16)  # sign-extended high nibble
        lo = b - hi * 16
        lo = M.where(lo >= 8, lo - 16, lo)
        odd = (M.remainder(ids, 2) == 1).reshape((-1, 1))
        rows = M.cast(M.where(odd, hi, lo), weight_scale.dtype)
    else:
        rows = M.cast(weight.gather(ids, axis=0), weight_scale.dtype)
    if group_size == -1:
        scale = weight_scale.gather(ids, axis=0).reshape((-1, 1))  # [t, 1]
    else:
        g = weight_scale.shape[0]
        per = weight_scale.gather(ids, axis=1).transpose((1, 0))  # [t, g]
        t = per.shape[0]
        scale = per.reshape((t, g, 1)).expand((t, g, group_size)).reshape((t, g * group_size))
        if g * group_size != d:
            scale = scale[:, :d]
    return (rows * scale).reshape(tuple(x.shape) + (d,))


OPS["weight_only_embedding"].no_grad = "its table is quantised storage and its ids integers"


def embedding_quantize(
    weight: Tensor, algo: str = "weight_only_int8", group_size: int = -1
) -> tuple[Tensor, Tensor]:
    """Quantise an embedding table ``[vocab, dim]`` with abs-max scales per token row (or per
    group of ``group_size`` dims): ``weight_quantize(weight.T, algo, group_size=group_size)``,
    so its scales are those Paddle's ``weight_quantize`` gives the transposed table.

    Args:
        weight (Tensor): float ``[vocab, dim]``.
        algo (str): ``"weight_only_int8"``, ``"weight_only_int4"`` (``vocab`` even) or
            ``"weight_only_fp8"`` (float8_e4m3fn).
        group_size (int): ``-1`` (a scale per row) or the dims per scale.

    Returns:
        tuple[Tensor, Tensor]: ``q`` (``[vocab, dim]``; int4 ``[vocab / 2, dim]``) and the scale
        (``[vocab]`` or ``[ceil(dim / group_size), vocab]``, ``weight``'s dtype).

    Example:
        >>> import framework as fw
        >>> from framework.nn.quant import embedding_quantize
        >>> q, s = embedding_quantize(fw.to_tensor([[1.0, -0.5], [0.5, 2.0]]))
        >>> q.tolist(), s.shape
        ([[127, -64], [32, 127]], (2,))
    """
    name = "embedding_quantize"
    weight = tensor_arg(name, weight, "weight")
    if weight.ndim != 2 or not _dt.is_floating(weight.dtype):
        raise OpArgumentError(
            f"[{name}] weight must be a 2-d float table [vocab, dim], got shape {list(weight.shape)} {weight.dtype}"
        )
    if algo in ALGOS and ALGOS[algo][0] == "int4" and weight.shape[0] % 2:
        raise OpArgumentError(
            f"[{name}] weight_only_int4 packs two tokens a byte: vocab must be even, got {weight.shape[0]}"
        )
    return weight_quantize(weight.transpose((1, 0)), algo, group_size=group_size)


def weight_only_embedding(
    x: Tensor,
    weight: Tensor,
    weight_scale: Tensor,
    weight_dtype: str = "int8",
    group_size: int = -1,
    padding_idx: int | None = None,
) -> Tensor:
    """Look integer ids up in a table quantised by :func:`embedding_quantize`: ``x.shape +
    [dim]`` rows, dequantised as gathered, of the scale's dtype; rows at ``padding_idx`` are 0
    (as ``F.embedding``).

    Args:
        x (Tensor): integer ids in ``[0, vocab)``.
        weight (Tensor): ``q`` from :func:`embedding_quantize`.
        weight_scale (Tensor): its scale.
        weight_dtype (str): ``"int8"``, ``"int4"`` or ``"fp8"``.
        group_size (int): as given to :func:`embedding_quantize`.
        padding_idx (int, optional): the id whose rows are zeros.

    Example:
        >>> import framework as fw
        >>> from framework.nn.quant import embedding_quantize, weight_only_embedding
        >>> q, s = embedding_quantize(fw.to_tensor([[1.0, -0.5], [0.5, 2.0]]))
        >>> weight_only_embedding(fw.to_tensor([1, 1]), q, s).numpy().round(2).tolist()
        [[0.5, 2.0], [0.5, 2.0]]
    """
    name = "weight_only_embedding"
    x = tensor_arg(name, x)
    if x.dtype.kind not in "iu":
        raise OpArgumentError(
            f"[{name}] ids must be integers, got dtype {x.dtype}; cast with x.astype('int64')"
        )
    if weight_dtype not in _WEIGHT_DTYPES:
        raise OpArgumentError(f"[{name}] weight_dtype must be 'int8', 'int4' or 'fp8', got {weight_dtype!r}")
    algo = _WEIGHT_DTYPES[weight_dtype]
    group_size = _check_group(name, group_size)
    _check_quantised(name, weight, weight_scale, algo, group_size)
    vocab = weight.shape[0] * (2 if weight_dtype == "int4" else 1)
    out = call(OPS[name], [x, weight, weight_scale], {"weight_dtype": weight_dtype, "group_size": group_size})
    if padding_idx is not None:
        out = masked_fill(out, (x == padding_idx % vocab).unsqueeze(-1), 0.0)
    return out
