"""The C helpers generated kernels call (16-bit floats, Philox, integer division and powers,
non-temporal stores, vectorisable exp/tanh/erf), kept as C and OpenCL C files in this package
and read once when it is imported.

Each file starts with a ``/* ... */`` comment for its readers; a kernel gets the lines after
it as they are (a blank line after the comment included: it separates the helper from the
line before it in the kernel) without the file's last newline.
"""

from __future__ import annotations

from importlib import resources

from .. import loop_ir
from .base import HALVES, is_float


def source(name: str) -> str:
    """The helper in file ``name`` of this package, as kernels get it (see the module)."""
    text = resources.files(__package__).joinpath(name).read_text()
    if text.startswith("/*"):
        text = text[text.index("*/") + 2 :].removeprefix("\n")
    return text.removesuffix("\n")


#: float16 / bfloat16 through double (C and CUDA C)
C_HALF = source("half.h")
#: Philox-4x32-10, element i of the stream (adapter_api.primitives: philox_uniform)
C_PHILOX = source("philox.h")
#: integer pow, numpy's floor_divide and remainder
C_INT = source("int.h")


def needed_helpers(progs: list[loop_ir.Program]) -> list[str]:
    """Which helper families the programs' source needs: "half", "philox", "int"."""
    names: set[str] = set()
    ops: set[str] = set()
    for prog in progs:
        nodes = loop_ir.live_nodes(prog.outputs)
        names |= {d.name for d, _, _ in prog.inputs} | {n.dtype.name for n in nodes}
        ops |= {n.op for n in nodes if not n.args or not is_float(n.args[0].dtype)}
    need = (
        ("half", bool(names & set(HALVES))),
        ("philox", "philox" in ops),
        ("int", bool(ops & {"pow", "floor_divide", "remainder"})),
    )
    return [h for h, yes in need if yes]
