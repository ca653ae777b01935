"""Lowering to the kernel dialect: the kernel of every op chosen once, for one device.

:func:`lower` turns a program of the ``op`` dialect (and fused ``fused.g<id>`` ops) into one
of the ``kernel`` dialect, which the executor builds its instruction list from:

- ``kernel.<op>`` (``kernel.add``, ``kernel.fused.g<id>``): the op runs its kernel directly.
  Attributes: the op's own, plus ``kernel.name`` (the kernel chosen: ``plugin/op/dtype``,
  from the dispatcher's table: a registered kernel, a generated primitive or a fusion group's
  kernel from ``dispatch.KERNEL_SOURCES``), ``kernel.device`` (the device), ``kernel.dtype``
  (the dtype the kernel was chosen for: its key operand's) and, for element-wise ops,
  ``kernel.broadcast`` (whether the kernel takes operands broadcastable to its result);
- ``kernel.expand`` in front of an element-wise operand whose shape differs from the
  result's when the kernel does not broadcast (what ``dispatch.run`` does on every call);
- ``kernel.reshape`` with ``kernel.name = "view"``: a view, no kernel (the same buffer);
- ``kernel.eager``: an op that runs through the dispatcher as in eager mode, with
  ``kernel.op`` (the op's IR name) and ``kernel.reason`` (a composite decomposed, a
  primitive with no kernel on the device: the CPU fallback, a host op);
- ``builtin.*`` and ``cf.*`` ops are kept (a cf op's regions are lowered when its
  sub-programs are run), and so is a random draw from the global generator at run time
  (:func:`framework.ir.control.handles`: the executor runs both as run-time steps).

``OARLOCK_PRINT_IR=lower`` prints the program before and after lowering (the ``lower``
pass; the executor lowers every program it runs through it).
"""

from __future__ import annotations

import os
import sys
from typing import Any

import numpy as np

from adapter_api import KernelEntry

from ..._src import device as _dev
from ..._src import dispatch
from .. import control
from ..core import IRError, Operation, Program, TensorType, Value, clone_op
from ..dialects import lookup
from .manager import Pass, PassContext, register_pass

#: the prefix of the attributes the lowering adds (an op's own attributes keep their names)
PREFIX = "kernel."
VIEW = "view"


class StaleKernelError(IRError):
    """A kernel-dialect op names a kernel the dispatcher's table no longer gives."""


def kernel_name(entry: KernelEntry, op: str, dtype: np.dtype) -> str:
    """The stable name of a kernel: the plugin (or generator) that gave it, the op, the dtype."""
    return f"{entry.plugin}/{op}/{np.dtype(dtype).name}"


def base_name(op: Operation) -> str:
    """The IR name of the op a kernel-dialect op lowers (``kernel.add`` -> ``op.add``,
    ``kernel.fused.g1`` -> ``fused.g1``, ``kernel.eager`` -> its ``kernel.op``)."""
    if op.name == "kernel.eager":
        return str(op.attrs["kernel.op"])
    rest = op.opname
    return rest if rest.startswith("fused.") else "op." + rest


def op_attrs(op: Operation) -> dict[str, Any]:
    """The op's own attributes (without the lowering's ``kernel.*`` ones)."""
    return {k: v for k, v in op.attrs.items() if not k.startswith(PREFIX)}


def kernel_entry(op: Operation, device_type: str) -> KernelEntry:
    """The kernel a ``kernel.<op>`` names, from the dispatcher's table. The choice was made
    by :func:`lower`; a table that gives another kernel now (a plugin registered since) is an
    error that asks to lower again."""
    name = op.attrs["kernel.name"]
    opdef = lookup(base_name(op)).opdef
    assert opdef is not None
    dtype = np.dtype(op.attrs["kernel.dtype"])
    entry = dispatch.find_kernel(opdef.name, device_type, dtype)
    if entry is None or kernel_name(entry, opdef.name, dtype) != name:
        now = "none" if entry is None else kernel_name(entry, opdef.name, dtype)
        raise StaleKernelError(
            f"[lower] {op.name} was lowered to kernel '{name}', but {device_type} now gives {now}; "
            f"lower the program again (the plugins changed since)"
        )
    return entry


def _key_dtype(opdef: Any, operands: list[Value], results: list[Value]) -> np.dtype:
    if operands:
        return operands[opdef.spec.key_input if opdef.spec else 0].type.dtype
    return results[0].type.dtype


def _lower_op(op: Operation, dev: _dev.Device, mapping: dict[Value, Value], out: list[Operation]) -> None:
    info = lookup(op.name)
    opdef = info.opdef
    if op.dialect in ("builtin", "cf") or opdef is None or control.handles(op):
        out.append(clone_op(op, mapping))
        return
    ins = [mapping[v] for v in op.operands]
    types = [r.type for r in op.results]
    device = str(dev)
    short = op.name[3:] if op.name.startswith("op.") else op.name

    def emit(name: str, operands: list[Value], attrs: dict[str, Any]) -> None:
        new = Operation(name, operands, types, attrs)
        mapping.update(zip(op.results, new.results))
        out.append(new)

    if opdef.kind == "view":
        emit("kernel." + short, ins, {**op.attrs, "kernel.name": VIEW, "kernel.device": device})
        return
    dtype = _key_dtype(opdef, op.operands, op.results)
    entry = (
        dispatch.find_kernel(opdef.name, dev.type, dtype)
        if opdef.kind in ("primitive", "composite")
        else None
    )
    reason = None
    if entry is None:
        if opdef.kind == "composite":
            reason = f"composite without a kernel on {dev.type}: decomposed by the dispatcher"
        elif opdef.kind == "primitive":
            reason = f"no kernel on {dev.type} for {dtype.name}: the dispatcher's CPU fallback"
        else:
            reason = f"a {opdef.kind} op: runs through the dispatcher"
    expands: list[Operation] = []
    if entry is not None and opdef.elementwise and not entry.broadcast:
        rshape = types[0].shape
        if any(d == -1 for v in [*op.operands, *op.results] for d in v.type.shape):
            reason = "element-wise with unknown dims and a kernel that does not broadcast: the dispatcher broadcasts"
        else:
            for j, (v, src) in enumerate(zip(op.operands, ins)):
                if tuple(v.type.shape) == tuple(rshape):
                    continue
                ex = dispatch.find_kernel("expand", dev.type, v.type.dtype)
                if ex is None:
                    reason = (
                        f"its kernel does not broadcast and {dev.type} has no expand kernel for "
                        f"{np.dtype(v.type.dtype).name}: the dispatcher broadcasts"
                    )
                    break
                t = TensorType(tuple(rshape), v.type.dtype, v.type.device)
                e = Operation(
                    "kernel.expand",
                    [src],
                    [t],
                    {
                        "shape": tuple(rshape),
                        "kernel.name": kernel_name(ex, "expand", v.type.dtype),
                        "kernel.device": device,
                        "kernel.dtype": v.type.dtype,
                    },
                )
                expands.append(e)
                ins[j] = e.result
    if reason is not None:
        for e in expands:  # not used: the dispatcher broadcasts
            e.drop_operands()
        emit(
            "kernel.eager",
            [mapping[v] for v in op.operands],
            {**op.attrs, "kernel.op": op.name, "kernel.device": device, "kernel.reason": reason},
        )
        return
    assert entry is not None
    out += expands
    attrs = {**op.attrs, "kernel.name": kernel_name(entry, opdef.name, dtype), "kernel.device": device}
    attrs["kernel.dtype"] = dtype
    if opdef.elementwise:
        attrs["kernel.broadcast"] = bool(entry.broadcast)
    emit("kernel." + short, ins, attrs)


def lower(program: Program, device: Any, print_ir: bool = True) -> Program:
    """A copy of ``program`` in the kernel dialect for ``device`` (see the module's text), or
    ``program`` itself when it is lowered for ``device`` already;
    ``print_ir``: print before and after when ``OARLOCK_PRINT_IR`` names ``lower``."""
    dev = device if isinstance(device, _dev.Device) else _dev.parse(device)
    new = Program(program.name)
    mapping: dict[Value, Value] = {}
    blk = new.block
    for a in program.inputs:
        mapping[a] = blk.add_argument(a.type)
    ops: list[Operation] = []
    done = {op.attrs.get("kernel.device") for op in program.block.ops if op.dialect == "kernel"}
    if done:  # lowered already (a parsed kernel-dialect program): for this device only
        if done != {str(dev)}:
            raise IRError(
                f"[lower] @{program.name} is lowered for {sorted(map(str, done))}, not {dev}; "
                f"lower the op-dialect program for {dev} instead"
            )
        return program
    for op in program.block.ops:
        _lower_op(op, dev, mapping, ops)
    for op in ops:
        blk.append_op(op)
    if print_ir and _printing():
        sys.stderr.write(f"// ----- IR before pass 'lower' ({dev}) -----\n{program}")
        sys.stderr.write(f"// ----- IR after pass 'lower' ({dev}) -----\n{new}")
    return new


def _printing() -> bool:
    names = {n.strip() for n in os.environ.get("OARLOCK_PRINT_IR", "").split(",")}
    return "lower" in names or "all" in names


class Lower(Pass):
    """The lowering as a pass: the program is replaced by its kernel-dialect form for
    ``ctx.device`` (cpu when none is named)."""

    name = "lower"

    def run(self, program: Program, ctx: PassContext) -> int:
        new = lower(program, ctx.device or "cpu", print_ir=False)  # the manager prints
        program.body = new.body
        return sum(1 for op in program.block.ops if op.dialect == "kernel")


register_pass("lower", Lower)
