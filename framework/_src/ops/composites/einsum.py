"""Einstein summation (``einsum``) as aligned broadcast products and sums of existing ops."""

from __future__ import annotations

import string

from adapter_api import OpArgumentError

from ...tensor import Tensor
from .. import math as M
from .. import shape as S
from ._common import tensor_arg
from .diagonals import diagonal


def einsum(equation: str, *operands: Tensor) -> Tensor:
    """Einstein summation over the operands, as ``equation`` spells it.

    The output is explicit (``"ij,jk->ik"``) or implicit (the letters that occur once, sorted);
    ``...`` stands for broadcast dims, and a letter repeated in one term takes a diagonal.
    Operands are aligned on one letter order, multiplied with broadcasting and summed over the
    letters not in the output.

    Args:
        equation (str): the subscripts, e.g. ``"ij,jk->ik"``.
        *operands (Tensor): the tensors, one per term (or one list of them).

    Returns:
        Tensor: the result.

    Example:
        >>> import framework as fw
        >>> a = fw.to_tensor([[1.0, 2.0], [3.0, 4.0]])
        >>> fw.einsum("ij,jk->ik", a, fw.eye(2)).tolist()
        [[1.0, 2.0], [3.0, 4.0]]
        >>> fw.einsum("ii", a)
        Tensor(shape=[], dtype=float32, device=cpu:0,
               5.)
        >>> fw.einsum("i,j->ij", fw.to_tensor([1, 2]), fw.to_tensor([3, 4])).tolist()
        [[3, 4], [6, 8]]
    """
    ops = (
        list(operands[0]) if len(operands) == 1 and isinstance(operands[0], (list, tuple)) else list(operands)
    )
    eq = equation.replace(" ", "")
    lhs, _, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ops):
        raise OpArgumentError(f"[einsum] the equation names {len(terms)} operands, got {len(ops)}")
    free = [c for c in string.ascii_letters if c not in eq]
    ell: list[str] = []
    parsed = []
    for term, t in zip(terms, ops):
        tensor_arg("einsum", t)
        if "..." in term:
            n = t.ndim - (len(term) - 3)
            if n > len(ell):
                ell = free[:n]
            term = term.replace("...", "".join(ell[len(ell) - n :]) if n else "")
        if len(term) != t.ndim:
            raise OpArgumentError(
                f"[einsum] term '{term}' has {len(term)} letters but its operand has {t.ndim} dims (shape {t.shape})"
            )
        parsed.append(term)
    if not _:
        counts: dict[str, int] = {}
        for term in parsed:
            for c in term:
                counts[c] = counts.get(c, 0) + 1
        rhs = "".join(ell) + "".join(sorted(c for c, n in counts.items() if n == 1 and c not in ell))
    else:
        rhs = rhs.replace("...", "".join(ell))
    letters = list(dict.fromkeys(rhs + "".join(parsed)))
    aligned = []
    for term, t in zip(parsed, ops):
        # repeated letters in one term: take the diagonal
        while len(set(term)) != len(term):
            c = next(c for c in term if term.count(c) > 1)
            i, j = term.index(c), term.index(c, term.index(c) + 1)
            t = diagonal(t, 0, i, j)
            term = "".join(ch for k, ch in enumerate(term) if k not in (i, j)) + c
        order = [term.index(c) for c in letters if c in term]
        t = S.transpose(t, order) if order != list(range(len(order))) else t
        shp = [t.shape[[c for c in letters if c in term].index(c)] if c in term else 1 for c in letters]
        aligned.append(t.reshape(shp))
    out = aligned[0]
    for t in aligned[1:]:
        out = out * t
    summed = [i for i, c in enumerate(letters) if c not in rhs]
    if summed:
        out = M.sum(out, axis=summed)
    kept = [c for c in letters if c in rhs]
    return S.transpose(out, [kept.index(c) for c in rhs]) if kept != list(rhs) else out
