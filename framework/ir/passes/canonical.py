"""Canonicalisation and fusion: the rules of :mod:`.rules` through the greedy pattern driver.

:class:`PermuteOfPermute` is the ``permute_of_permute`` rule written by hand, kept to show
(docs/architecture.md) and test that the two spellings rewrite alike.
"""

from __future__ import annotations

from ..core import Operation, Program
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


class Canonicalize(Pass):
    """IEEE-exact simplifications (the ``CANONICAL`` rules), greedily to a fixpoint."""

    name = "canonicalize"
    rules = CANONICAL

    def __init__(self) -> None:
        self.patterns = [r.pattern() for r in self.rules]
        self.applied: dict[str, int] = {}

    def run(self, program: Program, ctx: PassContext) -> int:
        rw = apply_patterns_greedily(program, self.patterns, ctx)
        self.applied = rw.applied
        return rw.rewrites


class Fuse(Canonicalize):
    """Primitives replaced by composites the device has a fused kernel for (``FUSION``)."""

    name = "fuse"
    rules = FUSION


register_pass("canonicalize", Canonicalize)
register_pass("fuse", Fuse)
