"""Canonicalisation and fusion: the rules of :mod:`.rules` through the greedy pattern driver.

:class:`PermuteOfPermute` is the ``permute_of_permute`` rule written by hand, kept to show
(docs/architecture.md) and test that the two spellings rewrite alike. :class:`CondOfConstant`
inlines the taken region of a ``cf.cond`` whose predicate is a constant (a rewrite across
regions, which a pattern of ops cannot say). :class:`SumOfPads` turns a sum of zero-pads that
tile one axis (a split tensor's gradient) into a concatenation (a tree of adds of any size).
"""

from __future__ import annotations

from ..core import Operation, Program, TensorType, clone_op, free_values
from .manager import Pass, PassContext, register_pass
from .rewrite import PatternRewriter, RewritePattern, apply_patterns_greedily
from .rules import CANONICAL, FUSION


class PermuteOfPermute(RewritePattern):
    """permute(permute(x, p), q) -> permute(x, p∘q), by hand."""

    root = "op.permute"
    benefit = 2

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> bool:
        inner = op.operands[0].defining_op
        if inner is None or inner.name != "op.permute" or len(inner.result.uses) != 1:
            return False
        p, q = inner.attrs["perm"], op.attrs["perm"]
        perm = tuple(p[i] for i in q)
        new = rewriter.create("op.permute", [inner.operands[0]], [op.result.type], {"perm": perm}, before=op)
        rewriter.replace_op(op, [new.result])
        return True


class CondOfConstant(RewritePattern):
    """``cf.cond`` on a constant predicate -> the ops of the region it takes, inlined before it
    (they may read what the region captured; nothing else changes)."""

    root = "cf.cond"
    name = "cond_of_constant"

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> bool:
        d = op.operands[0].defining_op
        if d is None or d.name != "builtin.constant" or "value" not in d.attrs:
            return False
        taken = op.regions[0 if d.attrs["value"] else 1].blocks[0]
        blk = op.parent
        assert blk is not None
        m = {v: v for v in free_values(op)}  # captured values stay what they are
        at = blk.ops.index(op)
        for k, o in enumerate(taken.ops[:-1]):
            rewriter._push(blk.insert_op(at + k, clone_op(o, m)))
        rewriter.replace_op(op, [m[v] for v in taken.ops[-1].operands])
        return True


class SumOfPads(RewritePattern):
    """A sum of zero-pads whose values tile one axis -> their concatenation: the gradient of a
    tensor split into slices (``q, k, v = qkv[0], qkv[1], qkv[2]``) is ``pad(dq) + pad(dk) +
    pad(dv)``, three full-size writes and two full-size adds where one copy does.

    Bit-exact: each element of the sum is its one slice's value plus zeros, which is the value
    except that ``-0.0`` becomes ``+0.0``; so each slice gets ``+ 0.0`` first (fused into
    whatever computes it) unless the values are integers or ``no_signed_zeros`` is on."""

    root = "op.add"
    name = "sum_of_pads"

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> bool:
        ty = op.result.type
        if not isinstance(ty, TensorType) or ty.dtype.kind not in "fiub":
            return False
        leaves: list[Operation] = []
        stack, inner = [op], []
        while stack:  # the tree of single-use adds of one type down to its leaves
            o = stack.pop()
            for v in o.operands:
                d = v.defining_op
                if d is None or v.type != ty or len(v.uses) != 1:
                    return False
                if d.name == "op.add":
                    stack.append(d)
                    inner.append(d)
                elif (
                    d.name == "op.pad" and d.attrs.get("value") == 0 and not _negative_zero(d.attrs["value"])
                ):
                    leaves.append(d)
                else:
                    return False
        tiles = _tiling(leaves, ty)
        if tiles is None:
            return False
        axis, ordered = tiles
        parts = [p.operands[0] for p in ordered]
        if ty.dtype.kind == "f" and not rewriter.ctx.no_signed_zeros:
            zero = rewriter.create(
                "builtin.constant",
                [],
                [TensorType((1,) * len(ty.shape), ty.dtype, ty.device)],
                {"value": 0.0},
                before=op,
            )
            parts = [
                rewriter.create("op.add", [v, zero.result], [v.type], {}, before=op).result for v in parts
            ]
        cat = rewriter.create("op.concat", parts, [ty], {"axis": axis}, before=op)
        rewriter.replace_op(op, [cat.result])
        return True


def _negative_zero(v: object) -> bool:
    return isinstance(v, float) and v == 0.0 and str(v).startswith("-")


def _tiling(pads: list[Operation], ty: TensorType) -> tuple[int, list[Operation]] | None:
    """(axis, the pads in order) when every pad pads one and the same axis only and their
    values tile it end to end; else None."""
    if len(pads) < 2:
        return None
    axes = {k for p in pads for k, (b, e) in enumerate(p.attrs["pads"]) if (b, e) != (0, 0)}
    if len(axes) != 1:
        return None
    (axis,) = axes
    size = ty.shape[axis]
    if not isinstance(size, int) or size < 0:
        return None
    ordered = sorted(pads, key=lambda p: p.attrs["pads"][axis][0])
    at = 0
    for p in ordered:
        b, e = p.attrs["pads"][axis]
        n = p.operands[0].type.shape[axis]
        if (
            not (isinstance(b, int) and isinstance(e, int) and isinstance(n, int))
            or b != at
            or b + n + e != size
        ):
            return None
        at += n
    return (axis, ordered) if at == size else None


class Canonicalize(Pass):
    """IEEE-exact simplifications (the ``CANONICAL`` rules) and the hand-written patterns,
    greedily to a fixpoint."""

    name = "canonicalize"
    rules = CANONICAL
    hand_written: tuple[type[RewritePattern], ...] = (CondOfConstant, SumOfPads)

    def __init__(self) -> None:
        self.patterns = [r.pattern() for r in self.rules] + [p() for p in self.hand_written]
        self.applied: dict[str, int] = {}

    def run(self, program: Program, ctx: PassContext) -> int:
        rw = apply_patterns_greedily(program, self.patterns, ctx)
        self.applied = rw.applied
        return rw.rewrites


class Fuse(Canonicalize):
    """Primitives replaced by composites the device has a fused kernel for (``FUSION``)."""

    name = "fuse"
    rules = FUSION
    hand_written = ()


register_pass("canonicalize", Canonicalize)
register_pass("fuse", Fuse)
