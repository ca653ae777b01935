"""What the passes ask of an operation, read from the IR's traits (which come from the OpDefs)."""

from __future__ import annotations

from ..core import Operation
from ..dialects import lookup

#: ops whose result is a draw of random bits: never merged by CSE or folded, so two dropout
#: masks stay two even when their attributes happen to agree
RANDOM = frozenset({"op.philox_uniform"})


def removable(op: Operation) -> bool:
    """Free of side effects and not a terminator: DCE may drop it once nothing reads it."""
    info = lookup(op.name)
    return info.has("side_effect_free") and not info.has("terminator") and not op.regions


def mergeable(op: Operation) -> bool:
    """Two such ops with equal operands and attributes compute the same values (CSE)."""
    return removable(op) and op.name not in RANDOM and bool(op.results)


def commutative(op: Operation) -> bool:
    return lookup(op.name).has("commutative")
