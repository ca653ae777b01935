"""The fusion pass: neighbouring element-wise, broadcast, row-reduction and reshape ops of a
program become one ``fused.g<id>`` op, whose kernel the compiler generates.

A *fusion group* is a convex set of ops (no path leaves the group and comes back) whose values
all fit the compiler's loop IR: full rows of one ``(rows, n)`` view, per-row values (a
reduction along the row: ``sum``, ``max``, ``min``), per-column vectors and scalars, any
input broadcast to the rows (a ``[seq, seq]`` mask under ``[batch, heads, seq, seq]`` scores)
and, as an output, a sum over the rows (a norm weight's gradient: partial sums per row, then
one ``sum``). Residual add + rms_norm, bias + gelu, scale + mask + softmax, the rotary
embedding, cross-entropy's log-softmax and the element-wise chains of a backward program are
such groups.

Grouping walks the program in order. An op that can join a group (its OpDef lowers to the
loop IR, an element-wise activation's by its decomposition, or it is a reshape) joins the groups of its operands (all of them at a join, else
one) when the union stays convex, every other group counted as one node (a fused op runs
whole, so two groups that read each other would be a cycle), and the compiler can still
trace it (:data:`BACKENDS`: ``framework.compiler`` registers one); otherwise it starts a
group. No op is ever put in two groups, so nothing is
recomputed and no reduction is duplicated. The cost model then keeps a group when the bytes
its one kernel moves (each input read once per pass over the row, each output written once)
are no more than the bytes its ops move one by one (every operand read, every result
written): the intermediates it saves outweigh the extra passes a second reduction level
needs (a tie still saves launches).

Each kept group becomes one op whose operands are the group's inputs and whose results are
the values read after it. Its OpDef (a composite registered in the IR's op table only, never
in the eager op table) has the group's ops as its decomposition, so the executor finds the
generated kernel through ``dispatch.find_kernel`` (the compiler's ``KERNEL_SOURCES`` entry)
and, when the kernel does not build, runs the unfused ops as an eager step (a
``CompileWarning`` once, counted in :func:`fusion_stats`). The group's symbolic dims are the
op's ``dims`` attribute, so one kernel serves every batch size.

Programs keep their portable form: :func:`fuse_program` fuses a copy for one device (what
``to_static`` and ``jit.load`` hand to the executor); ``jit.save`` writes the unfused program.
``OARLOCK_PRINT_IR=fusion`` prints the program around the pass, every group's ops and its
generated source.
"""

from __future__ import annotations

import hashlib
import heapq
import math
import os
import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from ..._src import dispatch, env
from ..._src import dtypes as _dt
from ..._src.opdef import OpDef
from ..._src.ops import base
from ..._src.tensor import Tensor, from_numpy_copy
from ..core import (
    Operation,
    Program,
    SymDim,
    TensorType,
    Value,
    clone_op,
    free_values,
    print_program,
    resolve,
)
from ..dialects import OpInfo, lookup, register
from .dce import eliminate_dead_code
from .manager import Pass, PassContext, PassManager, register_pass

#: ops with these loop-IR roles may join a group (besides reshapes)
_ROLES = ("expr", "cast", "pass", "reduce", "take", "decompose")
#: a constant index of a gather in a group is inlined into the group's body up to this length
_INDEX_MAX = 4096
#: what the cost model evaluates a symbolic dim at (bytes are compared, not measured)
_SIZE_OF_SYMBOL = 64


@dataclass
class Estimate:
    """What a backend says of a group it can emit: ``passes`` over the row the kernel makes
    (each reads the group's full inputs again) and the generated ``source`` (when asked)."""

    passes: int
    source: str = ""
    #: bytes the kernel writes and reads back besides its outputs (partial sums over rows)
    scratch: int = 0


class Backend(Protocol):
    """What the fusion pass asks of the compiler (``framework.compiler`` registers one)."""

    def available(self, device: str) -> bool:
        """Whether fused kernels can be generated for ``device`` (compile access, switched on)."""
        ...

    def check(self, body: Program, device: str, full: bool) -> Estimate | str:
        """An :class:`Estimate` when ``body`` (a group as a program) can be emitted for
        ``device``, else why not. ``full`` checks every batch size and emits the source;
        otherwise one size is traced (the quick check made while a group grows)."""
        ...

    # Optional: ``kept_groups(text, device)`` -> ``(groups as lists of op positions, {index
    # constant: values read})`` or None, and ``keep_groups(text, device, groups, reads)``: the
    # growing's answers kept across processes (see :meth:`FusionPass._kept_grow`).


#: fusion backends, the last one is used (``framework.compiler`` adds itself on import)
BACKENDS: list[Backend] = []


@dataclass
class Group:
    """A fusion group made into an op: its name, its ops as a program, its symbols."""

    name: str
    body: Program
    symbols: tuple[str, ...]
    opdef: OpDef
    estimate: Estimate


#: every group made so far, by op name (``fused.g<id>``: a hash of the body and the device)
GROUPS: dict[str, Group] = {}
_STATS: Counter[str] = Counter()


def fusion_stats() -> dict[str, int]:
    """Counters since start: ``groups`` made, ``ops`` fused into them, ``horizontal`` merged
    kernels made of independent groups (:mod:`.horizontal`), ``kernels`` built, ``failed``
    builds (those groups run unfused, merged ones part by part) and ``unfused_runs`` of
    failed groups."""
    keys = ("groups", "ops", "horizontal", "kernels", "failed", "unfused_runs")
    return {k: _STATS[k] for k in keys}


def count(key: str, n: int = 1) -> None:
    """Add to a :func:`fusion_stats` counter (the compiler counts builds and failures)."""
    _STATS[key] += n


def replay(body: Program, ins: Sequence[Tensor], binding: Mapping[str, int]) -> list[Tensor]:
    """Run a group's ops one by one on ``ins``: through the kernels (the unfused fallback), or
    recorded by the tracer in place (the compiler tracing the group to its loop IR)."""
    vals: dict[Value, Tensor] = dict(zip(body.inputs, ins))
    dev = ins[0].device
    tracer = base.TRACER.get()
    for op in body.block.ops:
        if op.name == "builtin.return":
            break
        if op.name == "builtin.constant":
            ty = op.result.type
            assert isinstance(ty, TensorType)
            if "index" in op.attrs:  # a gather's index (``_Candidate``)
                vals[op.result] = from_numpy_copy(np.asarray(op.attrs["index"], ty.dtype), dev)
            else:
                vals[op.result] = base.full_tensor(ty.concrete(binding), op.attrs["value"], ty.dtype, dev)
            continue
        d = lookup(op.name).opdef
        assert d is not None
        args = [vals[v] for v in op.operands]
        attrs = {k: resolve(v, binding) for k, v in op.attrs.items()}
        if d.kind == "view":
            outs = [args[0]._reshaped(tuple(attrs["shape"]))]
        elif tracer is not None:
            outs = tracer(d, args, attrs)
        else:
            outs = dispatch.run(d, args, attrs)
        vals.update(zip(op.results, outs))
    return [vals[v] for v in body.outputs]


# -- grouping -------------------------------------------------------------------------------
def _fusible_type(v: Value) -> bool:
    t = v.type
    # bfloat16 (numpy kind "V") too: AMP programs keep bf16 between products and fused kernels
    return isinstance(t, TensorType) and (t.dtype.kind == "b" or _dt.is_floating(t.dtype))


def can_join(op: Operation) -> bool:
    """Whether ``op`` may be part of a group (what the compiler then checks in full)."""
    if not op.name.startswith("op.") or len(op.results) != 1 or op.regions:
        return False
    d = lookup(op.name).opdef
    if d is None or op.name == "op.full":
        return False
    if d.kind != "view" and (d.lower is None or d.lower.role not in _ROLES):
        return False
    if d.lower is not None and d.lower.role == "take":  # a gather: by a constant index
        data, index = op.operands
        return _index_const(index) and all(_fusible_type(v) for v in (data, *op.results))
    return all(_fusible_type(v) for v in (*op.operands, *op.results))


def _index_const(v: Value) -> bool:
    """Whether ``v`` is a small named integer constant (a gather's index inlined in a group)."""
    d, t = v.defining_op, v.type
    return (
        d is not None
        and d.name == "builtin.constant"
        and "name" in d.attrs
        and isinstance(t, TensorType)
        and t.dtype.kind in "iu"
        and t.rank == 1
        and isinstance(t.shape[0], int)
        and t.shape[0] <= _INDEX_MAX
    )


def _scalar_const(v: Value) -> bool:
    d = v.defining_op
    return d is not None and d.name == "builtin.constant" and "value" in d.attrs


def _bytes(v: Value) -> int:
    return type_bytes(v.type)  # type: ignore[arg-type]


def type_bytes(t: TensorType) -> int:
    """The bytes of a value of type ``t`` as the cost model counts them (symbols at 64)."""
    dims = [_SIZE_OF_SYMBOL if isinstance(d, SymDim) else max(d, 0) for d in t.shape]
    return math.prod(dims) * t.dtype.itemsize


def symbols_of(values: Sequence[Value], ops: Sequence[Operation]) -> tuple[str, ...]:
    """The symbols in the types of ``values`` and of ``ops``' results and attributes, sorted."""
    seen: dict[str, None] = {}

    def add(x: Any) -> None:
        if isinstance(x, SymDim):
            seen.update(dict.fromkeys(x.symbols))
        elif isinstance(x, tuple):
            for y in x:
                add(y)

    for v in values:
        if isinstance(v.type, TensorType):
            add(tuple(v.type.shape))
    for op in ops:
        for r in op.results:
            if isinstance(r.type, TensorType):
                add(tuple(r.type.shape))
        add(tuple(op.attrs.values()))
    return tuple(sorted(seen))


class _IndexValues(dict):  # type: ignore[type-arg]
    """A program's named constants as tuples of ints, each read from its tensor once per pass
    (a group is checked many times while it grows; on a GPU each read is a copy to the host)."""

    def __init__(self, constants: Mapping[str, Any]) -> None:
        super().__init__()
        self.constants = constants

    def __contains__(self, name: object) -> bool:
        return name in self.constants

    def __missing__(self, name: str) -> tuple[int, ...]:
        src = self.constants[name]
        arr = src.numpy() if isinstance(src, Tensor) else np.asarray(src)
        values = self[name] = tuple(int(i) for i in arr.reshape(-1))
        return values


class _Candidate:
    """A group being built: its ops in program order, its inputs and outputs."""

    def __init__(
        self, ops: list[Operation], returned: set[Value], indices: Mapping[str, tuple[int, ...]] | None = None
    ) -> None:
        self.ops = ops
        inside = set(ops)
        self.inputs: list[Value] = []
        #: scalar constants and a gather's constant index (its values from ``indices``:
        #: :class:`_IndexValues` of the program's constants): part of the body, not inputs
        self.consts: list[Value] = []
        self.values: dict[Value, tuple[int, ...]] = {}
        for op in ops:
            for v in op.operands:
                d = v.defining_op
                if d in inside or v in self.inputs or v in self.consts:
                    continue
                if _scalar_const(v):
                    self.consts.append(v)
                elif indices is not None and _index_const(v) and d.attrs["name"] in indices:  # type: ignore[union-attr]
                    self.values[v] = indices[d.attrs["name"]]  # type: ignore[union-attr]
                    self.consts.append(v)
                else:
                    self.inputs.append(v)
        escaping = [
            r for op in ops for r in op.results if r in returned or any(u not in inside for u, _ in r.uses)
        ]
        #: escaping results that only reshape a group input: a view of the input outside the
        #: group, not an output the kernel copies (the SwiGLU gate and up, reshaped for the
        #: backward, were two full-size copies)
        self.views: list[tuple[Value, Value, Operation]] = []
        #: escaping results that only reshape another escaping result of the group: that
        #: result is the output, reshaped outside (bias add + relu in the feed-forward layer, its
        #: [8, 128, 1024] result and the [1024, 1024] view of it, wrote 4 MB twice)
        self.out_views: list[tuple[Value, Value, Operation]] = []
        self.outputs = []
        for r in escaping:
            src = r
            while src.defining_op in inside and _is_view(src.defining_op):  # type: ignore[arg-type]
                src = src.defining_op.operands[0]  # type: ignore[union-attr]
            if src is not r and src in self.inputs:
                self.views.append((r, src, r.defining_op))  # type: ignore[arg-type]
            elif src is not r and src in escaping and _reshapes(r, src):
                self.out_views.append((r, src, r.defining_op))  # type: ignore[arg-type]
            else:
                self.outputs.append(r)

    def body(self, name: str = "group") -> Program:
        """The group as a program: its inputs, its scalar constants, its ops, its outputs."""
        p = Program(name)
        m: dict[Value, Value] = {v: p.block.add_argument(v.type) for v in self.inputs}
        for v in self.consts:
            d = v.defining_op
            assert d is not None
            # a gather's index: its values in the body (they name the group's kernel)
            attrs = {"index": self.values[v]} if v in self.values else dict(d.attrs)
            m[v] = p.block.append("builtin.constant", [], [v.type], attrs)  # type: ignore[assignment]
        for op in self.ops:
            new = p.block.append_op(
                Operation(op.name, [m[v] for v in op.operands], [r.type for r in op.results], dict(op.attrs))
            )
            m.update(zip(op.results, new.results))
        p.block.append("builtin.return", [m[v] for v in self.outputs], [])
        return p

    def compute_ops(self) -> int:
        return sum(1 for op in self.ops if lookup(op.name).opdef.kind != "view")  # type: ignore[union-attr]

    def unfused_bytes(self) -> int:
        """Bytes the ops move one by one: every operand read, every result written."""
        total = 0
        for op in self.ops:
            if lookup(op.name).opdef.kind == "view":  # type: ignore[union-attr]
                continue
            total += sum(_bytes(v) for v in op.operands if not _scalar_const(v))
            total += sum(_bytes(r) for r in op.results)
        return total

    def fused_bytes(self, est: Estimate) -> int:
        """Bytes one kernel moves: each input read on every pass, each output written once,
        partial sums written and read back."""
        ins = sum(_bytes(v) for v in self.inputs)
        return ins * max(est.passes, 1) + sum(_bytes(v) for v in self.outputs) + est.scratch


class Fusion(Pass):
    """Group ops into fused ops for ``ctx.device`` (see the module docstring). After a run,
    ``groups`` holds the groups made and ``rejected`` why candidates were left unfused."""

    name = "fusion"

    def __init__(self) -> None:
        self.groups: list[Group] = []
        self.rejected: list[tuple[int, str]] = []

    def run(self, program: Program, ctx: PassContext) -> int:
        self.groups, self.rejected = [], []
        if ctx.device is None or not BACKENDS or not BACKENDS[-1].available(ctx.device):
            return 0
        backend, device = BACKENDS[-1], ctx.device
        returned = set(program.outputs)
        indices = _IndexValues(ctx.constants)
        found = self._kept_grow(program, backend, device, returned, indices)
        made: list[tuple[_Candidate, Group, str]] = []
        for ops in found:
            cand = _Candidate(ops, returned, indices)
            if cand.compute_ops() < 2:
                continue
            est = backend.check(cand.body(), device, True)
            if isinstance(est, str):
                self.rejected.append((len(ops), est))
                continue
            fused, unfused = cand.fused_bytes(est), cand.unfused_bytes()
            if fused > unfused and est.scratch:  # the rest, the sums over rows left unfused
                rest = _without_row_sums(ops)
                if len(rest) < len(ops) and _Candidate(rest, returned, indices).compute_ops() >= 2:
                    self.rejected.append((len(ops), f"moves {fused} bytes fused, {unfused} unfused"))
                    ops, cand = rest, _Candidate(rest, returned, indices)
                    est = backend.check(cand.body(), device, True)
                    if isinstance(est, str):
                        self.rejected.append((len(ops), est))
                        continue
                    fused, unfused = cand.fused_bytes(est), cand.unfused_bytes()
            if fused > unfused:  # a tie still saves launches
                self.rejected.append((len(ops), f"moves {fused} bytes fused, {unfused} unfused"))
                continue
            summary = (
                f"{len(ops)} ops, {len(cand.inputs)} inputs, {len(cand.outputs)} outputs, "
                f"{est.passes} passes, {fused} bytes fused vs {unfused} unfused"
            )
            made.append((cand, _group(cand, device, est), summary))
        for cand, g, _ in made:  # inputs again: an earlier group's results replaced some
            _rewrite(program, _Candidate(cand.ops, set(program.outputs), indices), g)
        if made:
            _topological_order(program)
            eliminate_dead_code(program)
        self.groups = [g for _, g, _ in made]
        fused_ops = sum(len(c.ops) for c, _, _ in made)
        count("groups", len(made))
        count("ops", fused_ops)
        if _printing("fusion"):
            self._print([(g, s) for _, g, s in made])
        return fused_ops

    def _kept_grow(
        self,
        program: Program,
        backend: Backend,
        device: str,
        returned: set[Value],
        indices: _IndexValues,
    ) -> list[list[Operation]]:
        """:meth:`_grow`'s groups, from the backend's kept answers when it keeps them (the
        optional ``kept_groups``/``keep_groups``: a warm process skips the growing, quadratic in
        a group's size): by the program's text, which values it returns and the index
        constants the growing read (their values are checked again before an answer is used)."""
        kept, keep = getattr(backend, "kept_groups", None), getattr(backend, "keep_groups", None)
        if kept is None or keep is None:
            return self._grow(program, backend, device, returned, indices)
        ops = program.block.ops
        where = {v: f"i{k}" for k, v in enumerate(program.inputs)}
        for k, op in enumerate(ops):
            where.update((r, f"o{k}.{j}") for j, r in enumerate(op.results))
        text = print_program(program) + "returns " + " ".join(where.get(v, "?") for v in program.outputs)
        got = kept(text, device)
        if got is not None:
            groups, reads = got
            if all(n in indices and list(indices[n]) == list(vals) for n, vals in reads.items()):
                return [[ops[i] for i in g] for g in groups]
        found = self._grow(program, backend, device, returned, indices)
        pos = {op: k for k, op in enumerate(ops)}
        keep(text, device, [[pos[op] for op in g] for g in found], {n: list(v) for n, v in indices.items()})
        return found

    def _grow(
        self,
        program: Program,
        backend: Backend,
        device: str,
        returned: set[Value],
        indices: Mapping[str, tuple[int, ...]],
    ) -> list[list[Operation]]:
        """Groups in program order: each op joins (or joins up) the groups of its operands
        when the result stays convex and traceable, else it starts a group."""
        group_of: dict[Operation, int] = {}
        members: dict[int, list[Operation]] = {}
        parent: dict[int, int] = {}

        def find(g: int) -> int:
            while parent[g] != g:
                parent[g] = parent[parent[g]]
                g = parent[g]
            return g

        def gid(op: Operation) -> int | None:
            g = group_of.get(op)
            return None if g is None else find(g)

        def fits(ops: list[Operation]) -> bool:
            return not isinstance(
                backend.check(_Candidate(ops, returned, indices).body(), device, False), str
            )

        def convex(ops: list[Operation]) -> bool:
            """No path leaves ``ops`` and comes back, with every other group one node (its
            fused op runs whole): group A reading B while B reads A is a cycle even when no
            single op path leaves either and comes back. Walks back from what ``ops`` read."""
            inside = set(ops)
            seen: set[Operation] = set()
            seen_groups: set[int] = set()
            stack = [d for m in ops for d in _producers(m) if d not in inside]
            while stack:
                p = stack.pop()
                if p in inside:
                    return False  # a path leaves the group and comes back
                if p in seen:
                    continue
                seen.add(p)
                g = gid(p)
                if g is None:
                    stack += _producers(p)
                elif g not in seen_groups:
                    seen_groups.add(g)
                    seen.update(members[g])
                    stack += [d for m in members[g] for d in _producers(m)]
            return True

        #: the longest chain of groups up to a group (itself included: ``depth``) or an op
        #: outside groups (``chain``); an op joins its deepest neighbour first, which keeps the
        #: chain, and with it the horizontal fusion's levels, short (a global norm's sum of
        #: squares feeds one chain of adds, not one add per parameter's group)
        depth: dict[int, int] = {}
        chain: dict[Operation, int] = {}

        def out(p: Operation) -> int:
            g = gid(p)
            return chain.get(p, 0) if g is None else depth[g] + 1

        order = {op: k for k, op in enumerate(program.block.ops)}
        #: ops that may join a group but cannot be one alone (a comparison: its bool result
        #: is no group's output); a consumer's group takes them in (relu's gradient: eq +
        #: where; a decomposed relu's le(x + b, 0) + where in x + b's group). An equality
        #: against a reduction made in the group (max's gradient eq(x, max(x))) is refused:
        #: see _equates_a_reduction
        pending: set[Operation] = set()
        for op in program.block.ops:
            producers = _producers(op)
            if not can_join(op):
                continue
            lead = sorted({p for p in producers if p in pending}, key=lambda m: order[m])
            near = list(dict.fromkeys(g for g in (gid(p) for p in reversed(producers)) if g is not None))
            tries = [near] if len(near) > 1 else []  # join them all up first, then one by one
            tries += sorted(([g] for g in near), key=lambda ids: -depth[ids[0]])
            placed, pulled = None, None
            for ids in tries:
                for extra in ([lead] if lead else []) + [[]]:  # with the pending ops it reads, if they fit
                    ops = sorted([m for g in ids for m in members[g]] + extra, key=lambda m: order[m])
                    ops.append(op)
                    if convex(ops) and not _equates_a_reduction(ops) and fits(ops):
                        placed, pulled = ids, extra
                        break
                if placed is not None:
                    break
            if placed is None:  # a group of its own, with the pending ops it reads when they fit
                extras = ([lead] if lead else []) + [[]]
                pulled = next((e for e in extras if fits([*e, op])), None)  # type: ignore[assignment]
            for m in pulled or ():
                pending.discard(m)
            outside = [out(p) for p in producers if gid(p) not in (placed or ()) and p not in (pulled or ())]
            if placed is not None:
                g0 = placed[0]
                depth[g0] = max([depth[g] for g in placed] + outside)
                for g in placed[1:]:
                    parent[g] = g0
                    members[g0] += members.pop(g)
                members[g0] += pulled  # type: ignore[operator]
                members[g0].sort(key=lambda m: order[m])
                members[g0].append(op)
                for m in (*pulled, op):  # type: ignore[misc]
                    group_of[m] = g0
            elif pulled is not None:
                g = len(parent)
                parent[g] = g
                members[g] = [*pulled, op]
                for m in members[g]:
                    group_of[m] = g
                depth[g] = max(outside, default=0)
            else:
                pending.add(op)
                chain[op] = max(outside, default=0)
        return list(members.values())

    def _print(self, made: list[tuple[Group, str]]) -> None:
        out = sys.stderr
        out.write(f"// ----- fusion: {len(made)} groups (symbolic dims counted as {_SIZE_OF_SYMBOL}) -----\n")
        for g, summary in made:
            out.write(f"// group {g.name}: {summary}\n")
            out.write(print_program(g.body))
            out.write(f"// generated source of {g.name}:\n{g.estimate.source}\n")
        for n, why in self.rejected:
            out.write(f"// not fused ({n} ops): {why}\n")


def _without_row_sums(ops: list[Operation]) -> list[Operation]:
    """``ops`` less its sums over leading axes (a bias's gradient: written as partial sums per
    row, as many bytes as the summed value, then summed) and what reads them in the group:
    where those cost more than they save, the element-wise rest may still pay (relu's
    gradient, eq + where, beside its bias's column sum). Still convex: what is dropped is
    closed under use within the group."""
    dropped: set[Value] = set()
    rest = []
    for op in ops:
        t = op.operands[0].type if op.operands else None
        row_sum = (
            op.name == "op.sum"
            and isinstance(t, TensorType)
            and t.rank >= 2
            and (t.rank - 1) not in {a % t.rank for a in op.attrs.get("axes", ())}
        )
        if row_sum or any(v in dropped for v in op.operands):
            dropped.update(op.results)
        else:
            rest.append(op)
    return rest


def _printing(name: str) -> bool:
    names = {n.strip() for n in os.environ.get("OARLOCK_PRINT_IR", "").split(",")}
    return name in names or "all" in names


def _group(cand: _Candidate, device: str, est: Estimate) -> Group:
    body = cand.body()
    digest = hashlib.sha256((device + "\n" + print_program(body)).encode()).hexdigest()[:12]
    name = f"fused.g{digest}"
    g = GROUPS.get(name)
    if g is not None:
        return g
    body.name = f"g{digest}"
    symbols = symbols_of(body.inputs, body.block.ops)

    def unfused(*ins: Tensor, dims: tuple[int, ...] = ()) -> list[Tensor]:
        if base.TRACER.get() is None:
            count("unfused_runs")
        return replay(body, ins, dict(zip(symbols, dims)))

    opdef = OpDef(name, "composite", None, None, False, unfused, f"fusion group of {len(cand.ops)} ops")
    register(OpInfo(name, frozenset({"composite", "side_effect_free", "fused"}), opdef, None, ("dims",)))
    g = GROUPS[name] = Group(name, body, symbols, opdef, est)
    return g


def _role(op: Operation) -> str:
    d = lookup(op.name).opdef
    return "view" if d is not None and d.kind == "view" else getattr(getattr(d, "lower", None), "role", "")


def _equates_a_reduction(ops: list[Operation]) -> bool:
    """Whether an equality in ``ops`` reads a reduction made in ``ops`` (max's gradient,
    ``eq(x, max(x))``, through expands and views). Such a group is refused: its kernel takes
    the max in one pass and recomputes ``x`` in a later one, and gcc may vectorise one pass
    (libmvec's expf) and not the other (glibc's), so no recomputed element equals the max
    (tests/test_fusion_random.py seed 2: a count of 0, all NaN). Groups that merge later can
    bring the two together even though the comparison joined compare loaded values."""
    inside = set(ops)
    for op in ops:
        if op.name not in ("op.eq", "op.ne"):
            continue
        for v in op.operands:
            d = v.defining_op
            while d is not None and d in inside and _role(d) in ("view", "pass") and d.operands:
                d = d.operands[0].defining_op
            if d is not None and d in inside and _role(d) == "reduce":
                return True
    return False


def _reshapes(r: Value, src: Value) -> bool:
    """Whether ``r`` is ``src`` through reshapes only (so one reshape of ``src`` gives it)."""
    while r is not src:
        d = r.defining_op
        if d is None or d.name != "op.reshape":
            return False
        r = d.operands[0]
    return True


def _is_view(op: Operation) -> bool:
    return lookup(op.name).opdef.kind == "view"  # type: ignore[union-attr]


def _rewrite(program: Program, cand: _Candidate, g: Group) -> None:
    block = program.block
    at = block.ops.index(cand.ops[-1])
    attrs = {"dims": tuple(SymDim.of(s) for s in g.symbols)} if g.symbols else {}
    new = Operation(g.name, list(cand.inputs), [v.type for v in cand.outputs], attrs)
    block.insert_op(at + 1, new)
    for old, r in zip(cand.outputs, new.results):
        old.replace_all_uses_with(r)
    for old, src, view in cand.views:  # the input viewed outside the group
        alias = Operation(view.name, [src], [old.type], dict(view.attrs))
        block.insert_op(block.ops.index(new), alias)
        old.replace_all_uses_with(alias.results[0])
    for old, src, view in cand.out_views:  # an output reshaped outside the group
        res = new.results[cand.outputs.index(src)]
        alias = Operation(view.name, [res], [old.type], dict(view.attrs))
        block.insert_op(block.ops.index(new) + 1, alias)
        old.replace_all_uses_with(alias.results[0])
    for op in reversed(cand.ops):
        op.erase()


def _producers(op: Operation) -> list[Operation]:
    """The ops that define what ``op`` reads."""
    return [d for d in (v.defining_op for v in _reads(op)) if d is not None]


def _reads(op: Operation) -> list[Value]:
    """What ``op`` reads: its operands and the values its regions capture (``cf.cond``)."""
    return list(op.operands) + free_values(op) if op.regions else op.operands


def _topological_order(program: Program) -> None:
    """Reorder the block so every value is defined before it is read, keeping the program
    order wherever the data allows (a fused op sits at its group's last op, which may come
    after a reader of one of its earlier results)."""
    ops = program.block.ops
    body, ret = (ops[:-1], ops[-1]) if ops and ops[-1].name == "builtin.return" else (ops, None)
    index = {op: k for k, op in enumerate(body)}
    waiting = {op: 0 for op in body}
    readers: dict[Operation, list[Operation]] = {op: [] for op in body}
    for op in body:
        for d in {v.defining_op for v in _reads(op)}:
            if d in index:
                waiting[op] += 1
                readers[d].append(op)
    ready = [(index[op], op) for op in body if waiting[op] == 0]
    heapq.heapify(ready)
    order: list[Operation] = []
    while ready:
        _, op = heapq.heappop(ready)
        order.append(op)
        for r in readers[op]:
            waiting[r] -= 1
            if waiting[r] == 0:
                heapq.heappush(ready, (index[r], r))
    assert len(order) == len(body), "[fusion] a group made a cycle"
    program.block.ops[:] = order + ([ret] if ret is not None else [])


#: passes :func:`fuse_program` runs after this one (:mod:`.horizontal` adds its own)
AFTER: list[Any] = []


def compile_enabled() -> bool:
    """``OARLOCK_COMPILE`` (default on): fused kernels for programs, as generated kernels in eager."""
    return env.flag("OARLOCK_COMPILE", True)


def fuses(device: Any) -> bool:
    """Whether :func:`fuse_program` makes fusion groups for ``device`` (the compiler is on and
    the device has compile access)."""
    return compile_enabled() and bool(BACKENDS) and BACKENDS[-1].available(str(device))


def fuse_program(program: Program, device: Any, constants: Mapping[str, Any] | None = None) -> Program:
    """A copy of ``program`` with its fusion groups made into fused ops for ``device``, or
    ``program`` itself when nothing was fused (``OARLOCK_COMPILE=0``, no compile access, no
    group worth it). What ``to_static`` and ``jit.load`` hand to the executor. ``constants``
    are the program's named constants (a gather's constant index is read into its group)."""
    dev = str(device)
    if not fuses(dev):
        return program
    copy = Program(program.name)
    mapping: dict[Value, Value] = {v: copy.block.add_argument(v.type) for v in program.inputs}
    for op in program.block.ops:
        copy.block.append_op(clone_op(op, mapping))
    pm = PassManager([Fusion(), *(make() for make in AFTER)])
    pm.run(copy, PassContext(constants=dict(constants or {}), device=dev))
    return copy if any(s.rewritten for s in pm.stats) else program


register_pass("fusion", Fusion)
