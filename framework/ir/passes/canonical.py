"""Canonicalisation and fusion: the rules of :mod:`.rules` through the greedy pattern driver.

:class:`PermuteOfPermute` is the ``permute_of_permute`` rule written by hand, kept to show
(docs/architecture.md) and test that the two spellings rewrite alike. :class:`CondOfConstant`
inlines the taken region of a ``cf.cond`` whose predicate is a constant (a rewrite across
regions, which a pattern of ops cannot say).
"""

from __future__ import annotations

from ..core import Operation, Program, clone_op, free_values
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


class Canonicalize(Pass):
    """IEEE-exact simplifications (the ``CANONICAL`` rules) and the hand-written patterns,
    greedily to a fixpoint."""

    name = "canonicalize"
    rules = CANONICAL
    hand_written: tuple[type[RewritePattern], ...] = (CondOfConstant,)

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
