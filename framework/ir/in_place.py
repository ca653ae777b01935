"""In-place outputs (``Executor(inplace=...)``): whether the kernel computing an output may
write it straight into its input's storage (nothing reads the input after it, and it reads the
input element-wise only, at the index it writes), and the check that an input written in place
shares no storage with another input."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from adapter_api import OpArgumentError

from .._src.ops import base
from .._src.tensor import Tensor
from .core import Program, Value
from .dialects import lookup

if TYPE_CHECKING:
    from .executor import Executor


def _check_overlap(ex: Executor, inputs: Sequence[Tensor]) -> None:
    """An input written in place must not share storage with another input."""
    own = ex.inplace.values()
    blocks = {id(inputs[j]._block) for j in own}
    if len(blocks) == len(own) and not any(
        id(t._block) in blocks for i, t in enumerate(inputs) if i not in ex.inplace_inputs
    ):
        return  # the usual case: every in-place input alone in its block
    for j in own:
        t = inputs[j]
        lo, hi = t._offset, t._offset + t.size * t.dtype.itemsize
        for i, u in enumerate(inputs):
            if (
                i != j
                and u._block is t._block
                and u._offset < hi
                and lo < u._offset + u.size * u.dtype.itemsize
            ):
                raise OpArgumentError(
                    f"[executor] input {j} of @{ex.program.name} is written in place, but input {i} "
                    f"shares its storage; pass a copy (x.clone()) for one of them"
                )


def _writes_in_place(steps: list, w: int, si: int, so: int, root: Any) -> bool:
    """Whether step ``w`` may write its output ``so`` into input slot ``si``'s storage: no
    later step reads ``si``, and if ``w`` reads it, only element-wise at the index it writes
    (see :func:`_reads_in_step`)."""
    for k in range(w + 1, len(steps)):
        if any(root(s) == si for s, _ in steps[k][2]):
            return False
    _, payload, refs, outs, _ = steps[w]
    reads = [j for j, (s, _) in enumerate(refs) if root(s) == si]
    if not reads:
        return True
    if any(refs[j][0] != si or refs[j][1] is not None for j in reads):
        return False  # read through a view or padded: not the index written
    return _reads_in_step(payload[1], reads, outs.index(so))


def _reads_in_step(name: str, positions: list[int], out: int) -> bool:
    """Whether op ``name`` reads its operands at ``positions`` only at the index where it
    writes result ``out``: an element-wise op; a fusion group in which everything computed
    from them is element-wise; a merged kernel (``fused.h``) in which only the part writing
    ``out`` reads them, and does so."""
    if not name.startswith("fused."):
        opdef = base.OPS.get(name)
        return opdef is not None and opdef.elementwise
    from .passes import fusion

    group: Any = fusion.GROUPS.get(name)
    if group is None and name.startswith("fused.h"):  # merged by the horizontal pass
        from .passes import horizontal

        group = horizontal.HGROUPS.get(name)
    if group is None:
        return False
    body = group.body
    ins = {body.inputs[j] for j in positions}
    readers = [
        op for op in body.block.ops if op.name != "builtin.return" and any(v in ins for v in op.operands)
    ]
    if any(op.name.startswith("fused.") for op in readers):  # parts run side by side
        ret = body.return_op
        assert ret is not None
        res = ret.operands[out]
        part = readers[0]
        return (
            len(readers) == 1
            and res.owner is part
            and _reads_in_step(part.name, [k for k, v in enumerate(part.operands) if v in ins], res.index)
        )
    return _pointwise_from(body, positions, out)


def _pointwise_from(body: Program, positions: list[int], out: int) -> bool:
    """Whether a group kernel reads its inputs at ``positions`` only at the index where it
    writes output ``out``, and never after writing it: every op computed from them is
    element-wise and keeps their shape (none feeds a reduction), and every output computed
    from them is stored in the same pass along the row as ``out``, or an earlier one (a row
    kernel's pass ``k`` stores the element outputs of reduction depth ``k``: see
    ``framework.compiler.loop_ir.schedule``), so no later pass reads them again."""
    shape = body.inputs[positions[0]].type.shape
    tainted = {body.inputs[j] for j in positions}
    depth: dict[Value, int] = {}
    for op in body.block.ops:
        if op.name == "builtin.return":
            continue
        opdef = lookup(op.name).opdef
        d = max((depth.get(v, 0) for v in op.operands), default=0)
        if opdef is None or not opdef.elementwise:
            if any(v in tainted for v in op.operands):
                return False
            d += op.name in _REDUCE_OPS
        elif any(v in tainted for v in op.operands):
            if any(r.type.shape != shape for r in op.results):
                return False
            tainted.update(op.results)
        for r in op.results:
            depth[r] = d
    ret = body.return_op
    assert ret is not None
    last = depth.get(ret.operands[out], 0)
    return all(depth.get(v, 0) <= last for v in ret.operands if v in tainted)


#: the ops a row kernel reduces in a pass of its own
_REDUCE_OPS = ("op.sum", "op.max", "op.min", "op.prod", "op.mean", "op.argmax", "op.argmin")
