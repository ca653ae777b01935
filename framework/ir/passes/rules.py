"""The rewrite rules, as data (:mod:`.drr`).

``CANONICAL`` rules simplify without changing a single bit of any result (IEEE-exact):
``x * 1``, ``x / 1``, ``x - 0.0`` and ``x + (-0.0)`` are ``x``; ``x + 0.0`` is not (it turns
``-0.0`` into ``+0.0``), so it is only dropped under the ``no_signed_zeros`` flag (or for
integers). These identities are the ops' own (``OpDef.identity``) and the question "does
``x op c`` fold to ``x``" has one answer, :func:`framework._src.opdef.folds_to`, which the
compiler's loop IR asks too. Data movement folds: permute of permute is one permute (or none), a reshape of a
reshape one reshape (or none), an expand or cast to what the value already is nothing.

``FUSION`` rules replace primitives by a composite the device's plugin has a fused kernel
for: ``matmul(x, w) + b`` becomes ``linear(x, w, b)``.
"""

from __future__ import annotations

from collections.abc import Callable

from ..._src.opdef import OpDef, folds_to
from ..._src.ops.base import OPS
from .drr import Attr, Const, Match, Pat, Res, Rule, Var, has_kernel, rank, same_type


def _identity(name: str) -> object:
    return lambda m: tuple(m[name]) == tuple(range(len(m[name])))


def _identity_rules() -> list[Rule]:
    """``x op c -> x`` for each op with an identity (``OpDef.identity``), where
    :func:`~framework._src.opdef.folds_to` says the fold is bit-exact for ``x``'s dtype (or the
    pass allows ``no_signed_zeros``): the one place that decides it, read by the compiler's
    loop IR too. A commutative op's rule matches the constant on either side."""
    out = []
    for name, d in OPS.items():
        if d.identity is None:
            continue
        sides = [1] if d.commutative or not d.identity.both else [1, 0]
        for side in sides:
            operands = (Var("x"), Const("c")) if side == 1 else (Const("c"), Var("x"))
            out.append(
                Rule(
                    f"{name}_identity" + ("" if side == 1 else "_left"),
                    source=Pat(name, *operands),
                    result="x",
                    where=[_folds(d, side), same_type("x")],
                )
            )
    return out


def _folds(d: OpDef, side: int) -> Callable[[Match], bool]:
    return lambda m: folds_to(d, m["c"], m["x"].type.dtype, side, m.ctx.no_signed_zeros)


CANONICAL = [
    Rule(
        "permute_of_permute",  # position i reads axis p[q[i]] of x
        source=Pat("permute", Pat("permute", Var("x"), perm=Attr("p")), perm=Attr("q")),
        result=Res("permute", "x", perm=lambda m: tuple(m["p"][i] for i in m["q"])),
    ),
    Rule(
        "permute_identity",
        source=Pat("permute", Var("x"), perm=Attr("p")),
        result="x",
        where=[_identity("p")],
    ),
    Rule(
        "reshape_of_reshape",
        source=Pat("reshape", Pat("reshape", Var("x")), shape=Attr("s")),
        result=Res("reshape", "x", shape=Attr("s")),
    ),
    Rule("reshape_to_same", source=Pat("reshape", Var("x")), result="x", where=[same_type("x")]),
    Rule("expand_to_same", source=Pat("expand", Var("x")), result="x", where=[same_type("x")]),
    Rule("cast_to_same", source=Pat("cast", Var("x")), result="x", where=[same_type("x")]),
    *_identity_rules(),
]

FUSION = [
    Rule(
        "matmul_add_to_linear",
        source=Pat("add", Pat("matmul", Var("x"), Var("w")), Var("b")),
        result=Res("linear", "x", "w", "b"),
        where=[
            rank("w", 2),
            rank("b", 1),
            lambda m: m["x"].type.rank >= 2,
            lambda m: m["x"].type.dtype == m["w"].type.dtype == m["b"].type.dtype,
            lambda m: m["b"].type.shape == m["w"].type.shape[-1:],
            has_kernel("linear"),
        ],
    ),
]

__all__ = ["CANONICAL", "FUSION"]
