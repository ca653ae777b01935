"""Sharding (SPMD) rules as OpDefs carry them (``OpDef.sharding``): each is a function of the
op's attrs and inputs (global shapes and dtypes) that returns an :class:`SpmdRule` in the
einsum-like notation that ``framework.distributed.auto_parallel.rules`` plans with:
``"inputs->output | kept"``, one letter per dim, ``*`` for the leading (broadcast) dims, a
letter missing from the output contracted, letters after ``|`` whole on every rank.

These constructors build the rules the op definitions name; the distributed layer reads
them from the OpDefs only (one table: the OpDefs).

>>> import framework
>>> from framework._src.opdef import OPS
>>> OPS["matmul"].sharding({}, [framework.ones([2, 3]), framework.ones([3, 4])])
SpmdRule(rule='*mk,*kn->*mn', linear='one', reduce='', local_attrs=None, local='')
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..opdef import SpmdRule

__all__ = [
    "attention",
    "axis_kept",
    "cast",
    "concat",
    "elementwise",
    "expand",
    "gather",
    "linear",
    "matmul",
    "matmul_t",
    "norm",
    "pad",
    "permute",
    "reduction",
    "slice_",
]

Rule = Callable[[dict[str, Any], list[Any]], SpmdRule | None]

_LOW = "abcdefghijklmnop"


def elementwise(linear: str = "") -> Rule:
    """Element-wise over any number of broadcast inputs (``*,*->*``); ``linear`` says how
    partial values pass: "all" (add, subtract), "one" (multiply, negate, copy), "first"
    (divide), "" (reduced first)."""
    return lambda attrs, ins: SpmdRule(",".join(["*"] * len(ins)) + "->*", linear)


def _reduced(ndim: int, axes: Sequence[int], keepdim: bool, linear: str, reduce: str, kept: bool) -> SpmdRule:
    inl = _LOW[:ndim]
    out = "".join(("Z" if keepdim else "") if i in axes else c for i, c in enumerate(inl))
    keep = "".join(inl[i] for i in axes) if kept else ""
    return SpmdRule(f"{inl}->{out}" + (f" | {keep}" if keep else ""), linear, reduce)


def reduction(linear: str = "", reduce: str = "", kept: bool = False, axis_attr: str = "axes") -> Rule:
    """A reduction over the ``axes`` attr (or the single ``axis``): a sharded reduced axis gives
    a partial result reduced with ``reduce`` ("sum", "max", "min"); ``kept``: the reduced
    axes must be whole instead (prod, argmax, logsumexp)."""

    def rule(attrs: dict[str, Any], ins: list[Any]) -> SpmdRule:
        axes = attrs["axes"] if axis_attr == "axes" else [attrs[axis_attr]]
        return _reduced(ins[0].ndim, axes, attrs["keepdim"], linear, reduce, kept)

    return rule


def axis_kept(attrs: dict[str, Any], ins: list[Any]) -> SpmdRule:
    """Element-wise, with the ``axis`` attr whole on every rank (softmax, log_softmax)."""
    ndim = ins[0].ndim
    inl = _LOW[:ndim]
    return SpmdRule(f"{inl}->{inl} | " + inl[attrs["axis"] % ndim])


def matmul(attrs: dict[str, Any], ins: list[Any]) -> SpmdRule:
    """``*mk,*kn->*mn``: a sharded ``k`` gives a partial sum."""
    return SpmdRule("*mk,*kn->*mn", "one")


def matmul_t(attrs: dict[str, Any], ins: list[Any]) -> SpmdRule:
    """A matmul with either operand transposed."""
    x = "*km" if attrs["transpose_x"] else "*mk"
    y = "*nk" if attrs["transpose_y"] else "*kn"
    return SpmdRule(f"{x},{y}->*mn", "one")


def linear(attrs: dict[str, Any], ins: list[Any]) -> SpmdRule | None:
    """``x @ w`` (``*mk,kn->*mn``); with a bias none: the decomposition's matmul and add."""
    return SpmdRule("*mk,kn->*mn", "one") if len(ins) == 2 else None


def permute(attrs: dict[str, Any], ins: list[Any]) -> SpmdRule:
    """Placements follow their dims."""
    inl = _LOW[: ins[0].ndim]
    return SpmdRule(f"{inl}->" + "".join(inl[p] for p in attrs["perm"]), "one")


def cast(attrs: dict[str, Any], ins: list[Any]) -> SpmdRule:
    """Element-wise; partial values pass a float-to-float cast."""
    return SpmdRule("*->*", "one" if ins[0].dtype.kind == "f" and attrs["dtype"].kind == "f" else "")


def expand(attrs: dict[str, Any], ins: list[Any]) -> SpmdRule:
    """New leading dims replicated; the local ``shape`` attr is this rank's part."""
    out = tuple(attrs["shape"])
    nd, nx = len(out), ins[0].ndim
    inl = _LOW[:nx]
    new = "QRSTUVWXY"[: nd - nx]
    return SpmdRule(f"{inl}->{new}{inl}", "one", local_attrs=lambda a, ts, here: {**a, "shape": tuple(here)})


def slice_(attrs: dict[str, Any], ins: list[Any]) -> SpmdRule:
    """The dims a slice cuts are whole; the others keep their shards."""
    x = ins[0]
    inl = _LOW[: x.ndim]
    cut = [
        d
        for d, (s, e, st) in enumerate(zip(attrs["starts"], attrs["stops"], attrs["steps"]))
        if (s, e, st) != (0, x.shape[d], 1)
    ]

    def local_attrs(a: dict[str, Any], ts: list[Any], here: list[int]) -> dict[str, Any]:
        stops = [a["stops"][d] if d in cut else ts[0].shape[d] for d in range(x.ndim)]
        return {**a, "stops": tuple(stops)}

    kept = "".join(inl[d] for d in cut)
    return SpmdRule(f"{inl}->{inl}" + (f" | {kept}" if kept else ""), "one", local_attrs=local_attrs)


def pad(attrs: dict[str, Any], ins: list[Any]) -> SpmdRule:
    """The padded dims are whole."""
    inl = _LOW[: ins[0].ndim]
    kept = "".join(inl[d] for d, (b, e) in enumerate(attrs["pads"]) if b or e)
    return SpmdRule(f"{inl}->{inl}" + (f" | {kept}" if kept else ""))


def concat(attrs: dict[str, Any], ins: list[Any]) -> SpmdRule:
    """The joined axis is whole; the other dims keep their shards."""
    nd, axis = ins[0].ndim, attrs["axis"]
    inl, own = _LOW[:nd], "QRSTUVWXY"
    if len(ins) > len(own):
        return SpmdRule("", "")  # too many inputs to spell: run replicated
    specs = [inl[:axis] + own[i] + inl[axis + 1 :] for i in range(len(ins))]
    out = inl[:axis] + "Z" + inl[axis + 1 :]
    return SpmdRule(f"{','.join(specs)}->{out} | {own[: len(ins)]}", "all")


def gather(attrs: dict[str, Any], ins: list[Any]) -> SpmdRule:
    """``gather(x, index, axis)``: the rows of an axis-0 gather may stay sharded (Paddle's
    vocabulary-parallel embedding: each rank looks up the ids in its rows, zeros the others,
    the output is Partial(sum): the ``"rows"`` local strategy, for ids in ``[0, n)``: not with
    ``wrap``); another gathered axis is made whole."""
    x = ins[0]
    axis = attrs["axis"]
    inl = _LOW[: x.ndim]
    out = inl[:axis] + "*" + inl[axis + 1 :]
    kept = "" if axis == 0 else f" | {inl[axis]}"
    rows = axis == 0 and not attrs.get("wrap")  # the local lookup reads ids in [0, n) only
    return SpmdRule(f"{inl},*->{out}{kept}", "", "sum", local="rows" if rows else "")


def norm(attrs: dict[str, Any], ins: list[Any]) -> SpmdRule:
    """A norm over the last axis with per-feature weights (``*a,a->*a | a``)."""
    return SpmdRule("*a" + ",a" * (len(ins) - 1) + "->*a | a")


def attention(attrs: dict[str, Any], ins: list[Any]) -> SpmdRule:
    """Heads and batch shard; the sequence and head dims are whole."""
    mask = ",*st" if len(ins) == 4 else ""
    return SpmdRule(f"*sd,*td,*te{mask}->*se | s t d")
