"""Integer ids to vectors: embedding (rows of a weight) and one_hot."""

from __future__ import annotations

from adapter_api import OpArgumentError

from ... import dtypes as _dt
from ...tensor import Tensor
from .. import creation as C
from .. import math as M
from ..indexing import checked_index, masked_fill, take_rows
from ._common import tensor_arg


def embedding(
    x: Tensor, weight: Tensor, padding_idx: int | None = None, sparse: bool = False, name: str | None = None
) -> Tensor:
    """Rows of ``weight`` picked by the integer ids ``x`` (a ``gather`` on axis 0); the row at
    ``padding_idx`` gets no gradient."""
    x = tensor_arg("embedding", x)
    weight = tensor_arg("embedding", weight, "weight")
    if x.dtype.kind not in "iu":
        raise OpArgumentError(
            f"[embedding] ids must be integers, got dtype {x.dtype}; cast with x.astype('int64')"
        )
    out = take_rows(weight, x, 0)  # ids out of [0, rows) raise (Paddle gives zeros)
    if padding_idx is not None:
        pad = padding_idx % weight.shape[0]
        out = masked_fill(out, (x == pad).unsqueeze(-1), 0.0)
    return out


def one_hot(x: Tensor, num_classes: int, name: str | None = None) -> Tensor:
    """``x[..., None] == arange(num_classes)`` as the default float dtype."""
    x = tensor_arg("one_hot", x)
    if x.dtype.kind not in "iu":
        raise OpArgumentError(f"[one_hot] x must hold integer class ids, got dtype {x.dtype}")
    if not isinstance(num_classes, int) or isinstance(num_classes, bool) or num_classes <= 0:
        raise OpArgumentError(f"[one_hot] num_classes must be a positive int, got {num_classes!r}")
    x = checked_index("one_hot", x, num_classes, f"class ids (num_classes={num_classes})")
    return one_hot_unchecked(x, num_classes)


def one_hot_unchecked(x: Tensor, num_classes: int) -> Tensor:
    """:func:`one_hot` for ids already known to lie in ``[0, num_classes)``."""
    classes = C.arange(num_classes, device=x.device)
    return M.cast(x.unsqueeze(-1) == classes, _dt.get_default_dtype())
