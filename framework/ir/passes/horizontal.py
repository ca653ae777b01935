"""Horizontal fusion: independent fusion groups of a program become one ``fused.h<id>`` op,
whose kernel runs every group (a *part*) in one launch.

The fusion pass (:mod:`.fusion`) merges ops that feed each other; what is left are groups
with no data between them: every parameter's sum of squares for a global-norm clip, then
every parameter's update (an optimizer step over 17 tensors is 25 small kernels after the
fusion pass), or the weight-gradient reductions of a backward program. This pass merges them.

Levels: a group's level is the longest chain of groups before it (through any ops), so groups
of one level never reach each other and merging every level into one op cannot make a cycle
(an edge between merged ops always goes from a lower level to a higher one). An op that the
fusion pass left alone because one op saves nothing vertically (a lone ``mul``) is a part
too, made a one-op group first, when the compiler can lower it.

The cost model (what the backend says of the device, :class:`Limits`): merging saves
launches, never bytes, so a level is cut into kernels of at most ``max_parts`` parts and
``max_args`` kernel arguments (an OpenCL device takes 1024 bytes of arguments at the least,
a C function 127 parameters: the kernel would not build past them) spanning at most
``window`` ops of the program (a merged op runs where its last part was: merging far apart
would keep the first parts' inputs live that long), and a part of ``big`` elements or more
stays alone (its own launch is noise next to it, and its own kernel may stream its output,
which a merged one does not). A kernel of one part is not made. No
part is ever split or repeated: the parts of a merged kernel run side by side (the C kernel
hands out tiles of rows of every part to its threads, the OpenCL and CUDA kernels give each
row of each part its own work-group), so merging never makes a kernel serialise.

A merged op's OpDef has its parts as its decomposition: when its kernel does not build, the
executor runs each part as its own kernel (a ``CompileWarning`` once, counted in
``fusion_stats()["failed"]``), and a part that does not build either runs unfused.
``OARLOCK_PRINT_IR=fusion`` prints every merged op: its parts and its generated source.
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ..._src import dispatch, env
from ..._src.opdef import OpDef
from ..._src.ops import base
from ..._src.tensor import Tensor, empty
from ..core import Operation, Program, SymDim, TensorType, Value, print_program, resolve
from ..dialects import OpInfo, lookup, register
from . import fusion
from .dce import eliminate_dead_code
from .manager import Pass, PassContext, register_pass


def enabled() -> bool:
    """``OARLOCK_HORIZONTAL`` (default on; ``0`` keeps one kernel per fusion group)."""
    return env.flag("OARLOCK_HORIZONTAL", True)


@dataclass(frozen=True)
class Limits:
    """What one merged kernel may hold on a device (see the module docstring)."""

    max_args: int
    max_parts: int = 48
    big: int = 1 << 22
    #: the most ops between a merged kernel's first part and its last: a merged op sits at its
    #: last part, so merging far apart keeps the earlier parts' inputs live that long (a
    #: forward's activations until the backward)
    window: int = 256


class Backend(Protocol):
    """What the pass asks of the compiler (``framework.compiler`` registers one)."""

    def limits(self, device: str) -> Limits | None:
        """The limits of a merged kernel on ``device``, or None when it makes none."""
        ...

    def source(self, group: HGroup, device: str) -> str:
        """The generated source of ``group`` on ``device`` (for ``OARLOCK_PRINT_IR``)."""
        ...


#: horizontal fusion backends, the last one is used (``framework.compiler`` adds itself)
BACKENDS: list[Backend] = []


@dataclass
class HGroup:
    """A merged op: its name, its parts (``fused.g`` ops) as a program, its symbols."""

    name: str
    body: Program
    symbols: tuple[str, ...]
    opdef: OpDef

    @property
    def parts(self) -> list[Operation]:
        return [op for op in self.body.block.ops if op.name != "builtin.return"]


#: every merged op made so far, by op name (``fused.h<id>``: a hash of the body and the device)
HGROUPS: dict[str, HGroup] = {}


def elements(op: Operation) -> int:
    """The work of a part as the cost model counts it: its largest value's elements."""
    types = [v.type for v in (*op.operands, *op.results) if isinstance(v.type, TensorType)]
    return max((fusion.type_bytes(t) // max(t.dtype.itemsize, 1) for t in types), default=0)  # type: ignore[arg-type]


def arguments(ops: Sequence[Operation]) -> int:
    """The kernel arguments of a merged kernel of ``ops``: each distinct input, each output,
    and the row count (and row length) of every part whose shape is symbolic."""
    ins = {v for op in ops for v in op.operands}
    outs = sum(len(op.results) for op in ops)
    symbolic = sum(1 for op in ops if "dims" in op.attrs)
    return len(ins) + outs + 2 * symbolic


class HorizontalFusion(Pass):
    """Merge independent fusion groups for ``ctx.device`` (see the module docstring); runs
    after :class:`~.fusion.Fusion`. After a run ``groups`` holds the merged ops made."""

    name = "horizontal_fusion"

    def __init__(self) -> None:
        self.groups: list[HGroup] = []

    def run(self, program: Program, ctx: PassContext) -> int:
        self.groups = []
        device = ctx.device
        if device is None or not BACKENDS or not fusion.BACKENDS or not enabled():
            return 0
        limits = BACKENDS[-1].limits(device)
        if limits is None or not fusion.BACKENDS[-1].available(device):
            return 0
        chunks = self._chunks(program, device, limits)
        for chunk in chunks:
            parts = [self._as_group(program, op, est, device) for op, est in chunk]
            self.groups.append(_merge(program, parts, device))
        if chunks:
            fusion._topological_order(program)
            eliminate_dead_code(program)
        merged = sum(len(c) for c in chunks)
        fusion.count("horizontal", len(chunks))
        if fusion._printing("fusion"):
            self._print(device)
        return merged

    def _chunks(
        self, program: Program, device: str, limits: Limits
    ) -> list[list[tuple[Operation, fusion.Estimate | None]]]:
        """The parts of each merged kernel: candidates by level, cut by the limits."""
        backend = fusion.BACKENDS[-1]
        returned = set(program.outputs)
        level_in: dict[Operation, int] = {}
        position = {op: k for k, op in enumerate(program.block.ops)}
        parts: set[Operation] = set()
        levels: dict[int, list[tuple[Operation, fusion.Estimate | None]]] = {}
        for op in program.block.ops:
            producers = [v.defining_op for v in fusion._reads(op)]
            here = max((level_in[p] + (p in parts) for p in producers if p in level_in), default=0)
            level_in[op] = here
            est = _candidate(op, backend, device, returned)
            if est is not False:
                parts.add(op)
                if elements(op) < limits.big:
                    levels.setdefault(here, []).append((op, est))
        chunks = []
        for level in sorted(levels):
            chunk: list[tuple[Operation, fusion.Estimate | None]] = []
            for item in levels[level]:
                ops = [op for op, _ in chunk] + [item[0]]
                far = chunk and position[item[0]] - position[chunk[0][0]] > limits.window
                if chunk and (far or len(ops) > limits.max_parts or arguments(ops) > limits.max_args):
                    chunks.append(chunk)
                    chunk = []
                chunk.append(item)
            chunks.append(chunk)
        return [c for c in chunks if len(c) > 1]

    @staticmethod
    def _as_group(program: Program, op: Operation, est: fusion.Estimate | None, device: str) -> Operation:
        """``op`` as a ``fused.g`` op: itself, or a one-op group made of it."""
        if est is None:
            return op
        cand = fusion._Candidate([op], set(program.outputs))
        g = fusion._group(cand, device, est)
        at = program.block.ops.index(op)
        attrs = {"dims": tuple(SymDim.of(s) for s in g.symbols)} if g.symbols else {}
        new = Operation(g.name, list(cand.inputs), [v.type for v in cand.outputs], attrs)
        program.block.insert_op(at + 1, new)
        for old, r in zip(cand.outputs, new.results):
            old.replace_all_uses_with(r)
        op.erase()
        return new

    def _print(self, device: str) -> None:
        out = sys.stderr
        out.write(f"// ----- horizontal fusion: {len(self.groups)} merged kernels -----\n")
        for h in self.groups:
            parts = ", ".join(op.name for op in h.parts)
            out.write(f"// merged {h.name}: {len(h.parts)} parts ({parts}), {arguments(h.parts)} arguments\n")
            out.write(print_program(h.body))
            out.write(f"// generated source of {h.name}:\n{BACKENDS[-1].source(h, device)}\n")


def _candidate(op: Operation, backend: fusion.Backend, device: str, returned: set[Value]) -> Any:
    """None for a fusion group, an estimate for an op the compiler can make a one-op group
    of, False for anything else."""
    if op.name in fusion.GROUPS:
        return None
    if not fusion.can_join(op) or lookup(op.name).opdef.kind == "view":  # type: ignore[union-attr]
        return False
    est = backend.check(fusion._Candidate([op], returned).body(), device, True)
    return False if isinstance(est, str) else est


def _merge(program: Program, parts: list[Operation], device: str) -> HGroup:
    """Replace ``parts`` (``fused.g`` ops of one level) by one ``fused.h`` op."""
    inputs = list(dict.fromkeys(v for op in parts for v in op.operands))
    outputs = [r for op in parts for r in op.results]
    body = Program("hgroup")
    m: dict[Value, Value] = {v: body.block.add_argument(v.type) for v in inputs}
    for op in parts:
        new = body.block.append_op(
            Operation(op.name, [m[v] for v in op.operands], [r.type for r in op.results], dict(op.attrs))
        )
        m.update(zip(op.results, new.results))
    body.block.append("builtin.return", [m[v] for v in outputs], [])
    h = _hgroup(body, device)
    attrs = {"dims": tuple(SymDim.of(s) for s in h.symbols)} if h.symbols else {}
    at = max(program.block.ops.index(op) for op in parts)
    new = Operation(h.name, inputs, [v.type for v in outputs], attrs)
    program.block.insert_op(at + 1, new)
    for old, r in zip(outputs, new.results):
        old.replace_all_uses_with(r)
    for op in parts:
        op.erase()
    return h


def _hgroup(body: Program, device: str) -> HGroup:
    digest = hashlib.sha256((device + "\n" + print_program(body)).encode()).hexdigest()[:12]
    name = f"fused.h{digest}"
    h = HGROUPS.get(name)
    if h is not None:
        return h
    body.name = f"h{digest}"
    symbols = fusion.symbols_of(body.inputs, body.block.ops)

    def parts_one_by_one(*ins: Tensor, dims: tuple[int, ...] = ()) -> list[Tensor]:
        if base.TRACER.get() is None:
            fusion.count("unfused_runs")
        return run_parts(body, ins, dict(zip(symbols, dims)))

    opdef = OpDef(
        name, "composite", None, None, False, parts_one_by_one, f"{len(body.block.ops) - 1} fusion groups"
    )
    register(OpInfo(name, frozenset({"composite", "side_effect_free", "fused"}), opdef, None, ("dims",)))
    h = HGROUPS[name] = HGroup(name, body, symbols, opdef)
    return h


def run_parts(body: Program, ins: Sequence[Tensor], binding: Mapping[str, int]) -> list[Tensor]:
    """Run a merged op's parts one by one: each its own kernel, or its ops unfused when that
    does not build (the fallback of a merged kernel that does not build)."""
    vals: dict[Value, Tensor] = dict(zip(body.inputs, ins))
    dev = ins[0].device
    for op in body.block.ops:
        if op.name == "builtin.return":
            break
        d = lookup(op.name).opdef
        assert d is not None
        args = [vals[v] for v in op.operands]
        attrs = {k: resolve(v, binding) for k, v in op.attrs.items()}
        entry = dispatch.find_kernel(d.name, dev.type, args[0].dtype) if args else None
        if entry is None:
            outs = d.decomposition(*args, **attrs)  # type: ignore[misc]
        else:
            types = [r.type for r in op.results]
            outs = [empty(t.concrete(binding), t.dtype, dev) for t in types]  # type: ignore[union-attr]
            entry.fn(dispatch.context(dev), [o.native() for o in outs], [a.native() for a in args], **attrs)
        vals.update(zip(op.results, outs))
    return [vals[v] for v in body.outputs]


def merged_parts(h: HGroup) -> list[fusion.Group]:
    """The fusion groups of a merged op's parts, in order."""
    return [fusion.GROUPS[op.name] for op in h.parts]


register_pass("horizontal_fusion", HorizontalFusion)
fusion.AFTER.append(HorizontalFusion)
