"""Common subexpression elimination: a side-effect-free op equal to an earlier one (same
name, operands, attributes and result types; operands sorted for commutative ops) is replaced
by it, in the program's body and in regions (an op in a region may be replaced by an equal one
of an enclosing block before it). Random ops and ops with regions are never merged."""

from __future__ import annotations

from typing import Any

from ..core import Block, Program
from .manager import Pass, PassContext, register_pass
from .traits import commutative, mergeable


def _freeze(v: Any) -> Any:
    """An attribute as a key that tells 1 from 1.0 from True and -0.0 from 0.0 (NaN equals NaN)."""
    if isinstance(v, tuple):
        return tuple(_freeze(x) for x in v)
    if isinstance(v, float):
        return float, repr(v)
    return type(v), v


def _key(op: Any) -> tuple[Any, ...]:
    ids = [id(v) for v in op.operands]
    if commutative(op) and len({v.type for v in op.operands}) == 1:
        ids.sort()
    attrs = tuple((k, _freeze(op.attrs[k])) for k in sorted(op.attrs))
    return op.name, tuple(ids), attrs, tuple(r.type for r in op.results)


def eliminate_common_subexpressions(program: Program) -> int:
    """Merge equal ops into their first occurrence; returns how many were merged."""
    return _cse_block(program.block, {})


def _cse_block(block: Block, seen: dict[tuple[Any, ...], Any]) -> int:
    """Merge in ``block``; ``seen`` holds the ops of enclosing blocks before it (a region may
    reuse them, never the other way round: each region gets a copy)."""
    merged = 0
    for op in list(block.ops):
        for r in op.regions:
            for b in r.blocks:
                merged += _cse_block(b, dict(seen))
        if not mergeable(op):
            continue
        k = _key(op)
        first = seen.get(k)
        if first is None:
            seen[k] = op
            continue
        for old, new in zip(op.results, first.results):
            old.replace_all_uses_with(new)
        op.erase()
        merged += 1
    return merged


class CommonSubexpressionElimination(Pass):
    name = "cse"

    def run(self, program: Program, ctx: PassContext) -> int:
        eliminate_common_subexpressions(program)
        return 0  # merged ops are counted as removed


register_pass("cse", CommonSubexpressionElimination)
