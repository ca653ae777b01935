"""Dead code elimination: drop every side-effect-free op whose results nobody reads, in the
program's body and in the regions of control-flow ops."""

from __future__ import annotations

from ..core import Block, Program
from .manager import Pass, PassContext, register_pass
from .traits import removable


def eliminate_dead_code(program: Program, ctx: PassContext | None = None) -> int:
    """Erase dead ops (walking backwards, so a chain dies in one sweep); drop named
    constants no op reads from ``ctx.constants``. Returns the number of ops erased."""
    erased = _dce_block(program.block)
    if ctx is not None and ctx.constants:
        read = {op.attrs.get("name") for op in program.walk() if op.name == "builtin.constant"}
        for name in [n for n in ctx.constants if n not in read]:
            del ctx.constants[name]
    return erased


def _dce_block(block: Block) -> int:
    """Backwards over ``block``; the regions of an op that stays are swept too (before the ops
    above it, so what only they read dies in the same sweep)."""
    erased = 0
    for op in reversed(list(block.ops)):
        if removable(op) and all(not r.uses for r in op.results):
            op.erase()
            erased += 1
            continue
        for r in op.regions:
            for b in r.blocks:
                erased += _dce_block(b)
    return erased


class DeadCodeElimination(Pass):
    name = "dce"

    def run(self, program: Program, ctx: PassContext) -> int:
        eliminate_dead_code(program, ctx)
        return 0


register_pass("dce", DeadCodeElimination)
