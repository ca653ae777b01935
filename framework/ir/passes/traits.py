"""What the passes ask of an operation, read from the IR's traits (which come from the OpDefs)."""

from __future__ import annotations

from ..control import draws_at_run
from ..core import Operation
from ..dialects import lookup


def removable(op: Operation) -> bool:
    """Free of side effects and not a terminator: DCE may drop it once nothing reads it.

    A draw from the global generator at run time (``seed = none``) has one: it advances the
    generator, so a later draw (in the program or after it, eagerly) depends on it. A
    ``cf.cond`` is removable when every op in its regions is; a ``cf.while`` never is (it
    may not end)."""
    if op.regions:
        return op.name == "cf.cond" and all(o.name == "cf.yield" or removable(o) for o in op.walk())
    info = lookup(op.name)
    return info.has("side_effect_free") and not info.has("terminator") and not draws_at_run(op)


def mergeable(op: Operation) -> bool:
    """Two such ops with equal operands and attributes compute the same values (CSE); never
    an op with regions (equal operands say nothing of what the regions compute)."""
    return removable(op) and not random(op) and bool(op.results) and not op.regions


def random(op: Operation) -> bool:
    """The result is a draw of random bits (``OpDef.random``): never merged by CSE or folded,
    so two dropout masks stay two even when their attributes happen to agree."""
    return lookup(op.name).has("random")


def commutative(op: Operation) -> bool:
    return lookup(op.name).has("commutative")


def returned(op: Operation) -> bool:
    """A result of ``op`` is a program output: the executor gives outputs fresh buffers, so
    such a result must not become a constant, an input or a parameter (the caller would get
    the program's own tensor, shared between runs, or its argument back)."""
    return any(u.name == "builtin.return" for r in op.results for u, _ in r.uses)


def aliases_storage(v: object) -> bool:
    """``v`` is an input, a parameter or a constant (not a fresh result of an op)."""
    d = getattr(v, "defining_op", None)
    return d is None or d.name.startswith("builtin.")
