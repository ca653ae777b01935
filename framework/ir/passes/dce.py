"""Dead code elimination: drop every side-effect-free op whose results nobody reads."""

from __future__ import annotations

from ..core import Program
from .manager import Pass, PassContext, register_pass
from .traits import removable


def eliminate_dead_code(program: Program, ctx: PassContext | None = None) -> int:
    """Erase dead ops (walking backwards, so a chain dies in one sweep); drop named
    constants no op reads from ``ctx.constants``. Returns the number of ops erased."""
    erased = 0
    for op in reversed(list(program.block.ops)):
        if removable(op) and all(not r.uses for r in op.results):
            op.erase()
            erased += 1
    if ctx is not None and ctx.constants:
        read = {op.attrs.get("name") for op in program.block.ops if op.name == "builtin.constant"}
        for name in [n for n in ctx.constants if n not in read]:
            del ctx.constants[name]
    return erased


class DeadCodeElimination(Pass):
    name = "dce"

    def run(self, program: Program, ctx: PassContext) -> int:
        eliminate_dead_code(program, ctx)
        return 0


register_pass("dce", DeadCodeElimination)
