"""Pattern rewriting (MLIR's greedy driver): patterns rooted at an op name, tried in order of
benefit on a worklist of ops until nothing changes.

A hand-written pattern subclasses :class:`RewritePattern` and rewrites through the
:class:`PatternRewriter` (which keeps the worklist and the counts right); a declarative rule
(:mod:`.drr`) compiles into one. After a rewrite, the new ops, the readers of replaced values
and the definers of the erased op's operands are revisited; ops left without readers are
erased on the way (their definers revisited in turn).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ..core import IRError, Operation, Program, Type, Value
from .manager import PassContext
from .traits import removable


class RewritePattern:
    """Match an op rooted at ``root`` (an op name, or None for any op) and rewrite it.

    ``benefit`` orders patterns on the same op (higher first)."""

    root: str | None = None
    benefit: int = 1
    name: str = ""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> bool:
        """Rewrite ``op`` through ``rewriter`` and return True, or return False untouched."""
        raise NotImplementedError(f"need match_and_rewrite in pattern {type(self).__name__}")

    def __repr__(self) -> str:
        return f"<RewritePattern {self.name or type(self).__name__} on {self.root or '*'}>"


class PatternRewriter:
    """The only way patterns change the program: it keeps the worklist and statistics."""

    def __init__(self, program: Program, ctx: PassContext) -> None:
        self.program = program
        self.ctx = ctx
        self.worklist: list[Operation] = []
        self.rewrites = 0
        self.applied: dict[str, int] = {}

    def _push(self, op: Operation | None) -> None:
        if op is not None and op.parent is not None:
            self.worklist.append(op)

    def create(
        self,
        name: str,
        operands: Sequence[Value],
        result_types: Sequence[Type],
        attrs: dict[str, Any] | None = None,
        before: Operation | None = None,
    ) -> Operation:
        """A new op inserted before ``before`` (the op being rewritten)."""
        if before is None or before.parent is None:
            raise IRError(f"[passes] {name} must be created before an op that is in the program")
        blk = before.parent
        new = Operation(name, list(operands), list(result_types), attrs)
        blk.insert_op(blk.ops.index(before), new)
        self._push(new)
        return new

    def replace_op(self, op: Operation, values: Sequence[Value]) -> None:
        """Make every reader of ``op``'s results read ``values`` and erase ``op`` (and the
        ops it leaves without readers)."""
        if len(values) != len(op.results):
            raise IRError(
                f"[passes] replacing {op.name} ({len(op.results)} results) with {len(values)} values"
            )
        for old, new in zip(op.results, values):
            if old.type != new.type:
                raise IRError(
                    f"[passes] a rewrite of {op.name} changes the type of result {old.index} from "
                    f"{old.type} to {new.type}; a rewrite must keep types"
                )
            for user, _ in old.uses:
                self._push(user)
            old.replace_all_uses_with(new)
            self._push(new.defining_op)
        self.erase_op(op)
        self.rewrites += 1

    def erase_op(self, op: Operation) -> None:
        """Erase ``op`` (no readers left) and then every definer of its operands that has no
        reader left and no side effect."""
        stack = [op]
        while stack:
            o = stack.pop()
            if o.parent is None:
                continue
            defs = [v.defining_op for v in o.operands]
            o.erase()
            for d in defs:
                if (
                    d is not None
                    and d.parent is not None
                    and removable(d)
                    and all(not r.uses for r in d.results)
                ):
                    stack.append(d)
                else:
                    self._push(d)


def apply_patterns_greedily(
    program: Program,
    patterns: Iterable[RewritePattern],
    ctx: PassContext | None = None,
    max_rewrites: int | None = None,
) -> PatternRewriter:
    """Apply ``patterns`` until none matches (a fixpoint); returns the rewriter with its counts
    (``rewrites``, ``applied`` per pattern name). ``max_rewrites`` (default: 10 per op + 100)
    stops patterns that undo each other, with an error naming the last one."""
    by_root: dict[str | None, list[RewritePattern]] = {}
    for p in sorted(patterns, key=lambda p: -p.benefit):  # stable: equal benefits keep their order
        by_root.setdefault(p.root, []).append(p)
    generic = by_root.get(None, [])
    rw = PatternRewriter(program, ctx or PassContext())
    rw.worklist = list(reversed(list(program.walk())))  # pop() visits in program order, regions too
    limit = max_rewrites if max_rewrites is not None else 10 * len(rw.worklist) + 100
    while rw.worklist:
        op = rw.worklist.pop()
        if op.parent is None:
            continue
        if removable(op) and op.results and all(not r.uses for r in op.results):
            rw.erase_op(op)
            continue
        cands = by_root.get(op.name, [])
        if generic:
            cands = sorted(cands + generic, key=lambda p: -p.benefit)
        for p in cands:
            if p.match_and_rewrite(op, rw):
                name = p.name or type(p).__name__
                rw.applied[name] = rw.applied.get(name, 0) + 1
                if rw.rewrites > limit:
                    raise IRError(
                        f"[passes] pattern rewriting of @{program.name} did not reach a fixpoint after "
                        f"{limit} rewrites (last: {name}); two patterns probably undo each other"
                    )
                break
    return rw
