"""The rewrite rules, as data (:mod:`.drr`).

``CANONICAL`` rules simplify without changing a single bit of any result (IEEE-exact):
``x * 1``, ``x / 1``, ``x - 0.0`` and ``x + (-0.0)`` are ``x``; ``x + 0.0`` is not (it turns
``-0.0`` into ``+0.0``), so it is only dropped under the ``no_signed_zeros`` flag (or for
integers). Data movement folds: permute of permute is one permute (or none), a reshape of a
reshape one reshape (or none), an expand or cast to what the value already is nothing.

``FUSION`` rules replace primitives by a composite the device's plugin has a fused kernel
for: ``matmul(x, w) + b`` becomes ``linear(x, w, b)``.
"""

from __future__ import annotations

from .drr import Attr, Const, Pat, Res, Rule, Var, has_kernel, is_scalar, rank, same_type


def _identity(name: str) -> object:
    return lambda m: tuple(m[name]) == tuple(range(len(m[name])))


def _int_or(flag_name: str) -> object:
    return lambda m: m["x"].type.dtype.kind in "iub" or getattr(m.ctx, flag_name)


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
    Rule(
        "mul_one",
        source=Pat("mul", Var("x"), Const("c")),
        result="x",
        where=[is_scalar("c", 1), same_type("x")],
    ),
    Rule(
        "div_one",
        source=Pat("div", Var("x"), Const("c")),
        result="x",
        where=[is_scalar("c", 1), same_type("x")],
    ),
    Rule(
        "sub_zero",
        source=Pat("sub", Var("x"), Const("c")),
        result="x",
        where=[is_scalar("c", 0.0), same_type("x")],
    ),
    Rule(
        "add_negative_zero",
        source=Pat("add", Var("x"), Const("c")),
        result="x",
        where=[is_scalar("c", -0.0), same_type("x")],
    ),
    Rule(
        "add_zero",
        source=Pat("add", Var("x"), Const("c")),
        result="x",
        where=[is_scalar("c", 0.0, signed_zero=False), same_type("x"), _int_or("no_signed_zeros")],
    ),
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
