"""Common subexpression elimination: a side-effect-free op equal to an earlier one (same
name, operands, attributes and result types; operands sorted for commutative ops) is replaced
by it. Random ops are never merged."""

from __future__ import annotations

from typing import Any

from ..core import Program
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
    seen: dict[tuple[Any, ...], Any] = {}
    merged = 0
    for op in list(program.block.ops):
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
