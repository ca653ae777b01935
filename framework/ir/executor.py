"""The executor: a program lowered once to a flat instruction list and run with no shape
inference, dispatch or autograd on the way.

The program is first lowered to the kernel dialect for the device, once per executor
(:func:`framework.ir.passes.lower.lower`): every op's kernel is chosen there (the dispatcher's
kernel table, ``(op, device type, dtype)``), an op the device has no kernel for becomes a
``kernel.eager`` step (it runs through the dispatcher as in eager mode: decomposition, CPU
fallback with its warning) and broadcasting for kernels that do not broadcast is made explicit
(``kernel.expand``). The instruction list is built from that program once per binding of its
symbols (one per batch size seen); for every op it

- reads the kernel from the op's ``kernel.name`` (no choice is made here);
- pads element-wise operands to the result's rank (a view) for the kernels that broadcast;
- assigns every value a slot. Intermediates get buffers planned by liveness: a buffer is
  handed back to a pool after the last instruction that reads it and reused by a later value
  of the same byte size, so the plan holds the peak of live values, not their sum. Program
  outputs get fresh buffers on every run (the caller keeps them); inputs, parameters (read
  from the Layer's tensors on every run, so an optimizer step is seen) and eager-step results
  are patched into the instructions that read them.

A run is then ``for fn, ctx, outs, ins, attrs in instrs: fn(ctx, outs, ins, **attrs)``.
"""

from __future__ import annotations

import functools
import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from adapter_api import KernelContext, KernelError, KernelNotFoundError, OarlockError, OpArgumentError

from .._src import autograd, dispatch, env
from .._src import device as _dev
from .._src.ops import base
from .._src.ops.shape import contiguous_slice  # noqa: F401 — the rule views of slices follow
from .._src.tensor import Tensor
from . import control
from .core import IRError, Program, SymDim, TensorType, Value, resolve
from .dialects import infer_shapes, lookup
from .passes.lower import VIEW, StaleKernelError, base_name, kernel_entry, lower, op_attrs
from .verify import verify

_FIXED, _START, _LATE = 0, 1, 2
_NEVER = object()
#: graph replay where the runtime offers it (``OARLOCK_GRAPHS=0`` turns it off everywhere)
GRAPHS_DEFAULT = env.flag("OARLOCK_GRAPHS", True)


class Executor:
    """Runs a :class:`Program` on one device.

    ``params`` maps each ``builtin.parameter`` name to its tensor (shared, not copied);
    ``constants`` maps each named ``builtin.constant`` to a tensor or array.

    ``inplace`` maps output indices to input indices: output ``k`` is written into the
    storage of input ``inplace[k]`` (of the same type) and the run returns that input tensor
    for it, as an in-place update (``p.add_(...)``) would; the caller's storage stays where
    it is, so a repeated call binds nothing anew (an optimizer's update of its parameters and
    states). The kernel that computes the output writes straight into the input when nothing
    reads the input after it and it reads the input element-wise only (the same index it
    writes); otherwise the output is computed into a buffer of the plan and copied into the
    input at the end of the run. An input given for an in-place output must not share storage
    with another input."""

    def __init__(
        self,
        program: Program,
        device: Any,
        params: Mapping[str, Tensor] | None = None,
        constants: Mapping[str, Any] | None = None,
        graphs: bool | None = None,
        inplace: Mapping[int, int] | None = None,
    ) -> None:
        verify(program)
        self.device = _dev.parse(device) if not isinstance(device, _dev.Device) else device
        #: the program in the kernel dialect for this device: every kernel chosen once, here
        self.lowered = lower(program, self.device)
        #: replay a whole run as one captured graph where the device runtime offers capture
        #: (None: the ``OARLOCK_GRAPHS`` default, on); False runs the instruction list always
        self.graphs = GRAPHS_DEFAULT if graphs is None else bool(graphs)
        self.program = program
        self.params = dict(params or {})
        self.constants = dict(constants or {})
        self.symbols = program.symbols()
        self._plans: dict[tuple[int, ...], _Plan] = {}
        #: the inputs' (shape, dtype, device) of the last call and its plan: a call with the
        #: same metadata skips the checks and the binding
        self._last: tuple[tuple[tuple[Any, ...], ...], _Plan] | None = None
        self.inplace = self._check_inplace(program, dict(inplace or {}))
        self.inplace_inputs = frozenset(self.inplace.values())
        for op in program.block.ops:
            if op.name == "builtin.parameter" and op.attrs["name"] not in self.params:
                raise IRError(
                    f"[executor] @{program.name} reads parameter '{op.attrs['name']}', which was not given; "
                    f"pass every parameter of the program (got {sorted(self.params)[:5]})"
                )

    @staticmethod
    def _check_inplace(program: Program, inplace: dict[int, int]) -> dict[int, int]:
        n_in, outs = len(program.inputs), program.outputs
        where = f"[executor] inplace of @{program.name}"
        for k, j in inplace.items():
            if not (isinstance(k, int) and 0 <= k < len(outs)):
                raise OpArgumentError(
                    f"{where}: output index {k!r} out of range; the program has {len(outs)} outputs"
                )
            if not (isinstance(j, int) and 0 <= j < n_in):
                raise OpArgumentError(
                    f"{where}: input index {j!r} out of range; the program has {n_in} inputs"
                )
            if outs[k].type != program.inputs[j].type:
                raise OpArgumentError(
                    f"{where}: output {k} is {outs[k].type}, input {j} is {program.inputs[j].type}; an "
                    f"output written in place needs an input of the same type"
                )
        if len(set(inplace.values())) != len(inplace):
            raise OpArgumentError(f"{where}: an input is given for two outputs ({inplace}); one each")
        if len({outs[k] for k in inplace}) != len(inplace):
            raise OpArgumentError(f"{where}: two outputs given in place are the same value; one each")
        return inplace

    def bind(self, inputs: Sequence[Tensor]) -> dict[str, int]:
        """The value of each symbol, read from the inputs' shapes; checks every static dim."""
        p = self.program
        if len(inputs) != len(p.inputs):
            raise OpArgumentError(f"[executor] @{p.name} takes {len(p.inputs)} inputs, got {len(inputs)}")
        binding: dict[str, int] = {}
        for k, (t, v) in enumerate(zip(inputs, p.inputs)):
            ty = v.type
            assert isinstance(ty, TensorType)
            if not isinstance(t, Tensor):
                raise OpArgumentError(
                    f"[executor] input {k} of @{p.name} must be a Tensor, got {type(t).__name__}"
                )
            if len(t.shape) != ty.rank or t.dtype != ty.dtype:
                raise OpArgumentError(
                    f"[executor] input {k} of @{p.name} is {t.dtype}{list(t.shape)}, the program "
                    f"takes {ty.dtype}{[str(d) for d in ty.shape]}"
                )
            if t.device != self.device:
                raise OpArgumentError(
                    f"[executor] input {k} of @{p.name} is on {t.device}, the program runs on "
                    f"{self.device}; move it with x.to('{self.device}')"
                )
            for j, (d, n) in enumerate(zip(ty.shape, t.shape)):
                if isinstance(d, SymDim) and len(d.terms) == 1 and d.terms[0][1] == 1 and d.const == 0:
                    name = d.terms[0][0]
                    if binding.setdefault(name, n) != n:
                        raise OpArgumentError(
                            f"[executor] dim {j} of input {k} of @{p.name} is {n}, but symbol "
                            f"{name} is {binding[name]} from an earlier dim; they must be equal"
                        )
        for k, (t, v) in enumerate(zip(inputs, p.inputs)):
            for j, (d, n) in enumerate(zip(v.type.shape, t.shape)):
                want = d.evaluate(binding) if isinstance(d, SymDim) else d
                if want != -1 and want != n:
                    raise OpArgumentError(
                        f"[executor] dim {j} of input {k} of @{p.name} is {n}, expected {d} = {want}"
                    )
        return binding

    def plan(self, binding: Mapping[str, int]) -> _Plan:
        key = tuple(binding[s] for s in self.symbols)
        pl = self._plans.get(key)
        if pl is None:
            try:
                pl = _Plan(self, dict(binding))
            except StaleKernelError:
                if self.lowered is self.program:  # given lowered: the caller lowers again
                    raise
                # the plugins changed since the lowering (a kernel registered, a source
                # added): lower again, once, and drop the plans built from the old choice
                self.lowered = lower(self.program, self.device)
                self._plans.clear()
                self._last = None
                pl = _Plan(self, dict(binding))
            self._plans[key] = pl
        return pl

    def __call__(self, *inputs: Tensor) -> list[Tensor]:
        last = self._last
        if last is not None and len(inputs) == len(last[0]):
            for t, (shape, dtype, dev) in zip(inputs, last[0]):  # the same metadata as last call
                if (
                    not isinstance(t, Tensor)
                    or t.shape != shape
                    or t.dtype is not dtype
                    or t.device is not dev
                ):
                    break
            else:
                return last[1].run(inputs)
        binding = self.bind(inputs)
        pl = self._plans.get(tuple(binding[s] for s in self.symbols)) or self.plan(binding)
        self._last = (tuple((t.shape, t.dtype, t.device) for t in inputs), pl)
        return pl.run(inputs)

    def memory_stats(self, binding: Mapping[str, int]) -> dict[str, Any]:
        """Bytes of intermediates: ``planned`` (the buffers the plan holds after reuse),
        ``unplanned`` (what one buffer per value would take) and ``held`` (what the plan
        keeps allocated between runs as the allocator counts it: planned buffers rounded,
        plus a captured graph's input and output buffers); ``graph`` says whether runs are
        replayed as one captured graph and, if not, ``graph_off`` says why."""
        pl = self.plan(binding)
        return {
            "planned": pl.planned_bytes,
            "unplanned": pl.unplanned_bytes,
            "held": pl.held_bytes(),
            "instructions": len(pl.instrs),
            "graph": pl.graph is not None,
            "graph_off": pl.graph_failed,
            "graph_offered": self.graphs and _offers_graphs(pl.ctx.runtime, self.device.index),
        }

    def held_bytes(self) -> int:
        """Bytes every plan of this executor keeps allocated between runs."""
        return sum(pl.held_bytes() for pl in self._plans.values())

    def use_graphs(self, plan: _Plan) -> bool:
        """Whether ``plan`` is to be captured: graphs on, no eager step inside, and the
        device runtime offers capture (:meth:`adapter_api.DeviceRuntime.supports_graphs`)."""
        if not self.graphs:
            return False
        if plan.has_eager:
            plan.graph_failed = "the program has eager steps (ops without a kernel on the device)"
            return False
        rt, idx = plan.ctx.runtime, self.device.index
        if not _offers_graphs(rt, idx):
            plan.graph_failed = "the device runtime offers no graph capture"
            return False
        return _worthwhile(plan, plan.copy_bytes())


def _worthwhile(plan: _Plan, copy_bytes: int) -> bool:
    """Ask the runtime whether a replay with these copies beats the instruction list."""
    try:
        ok = bool(plan.ctx.runtime.graph_worthwhile(plan.ctx.device_index, len(plan.instrs), copy_bytes))
    except Exception:  # noqa: BLE001 — a runtime that cannot answer: replay (the contract's default)
        ok = True
    if not ok:
        plan.graph_failed = f"the runtime finds {copy_bytes} bytes of copies per replay too many for {len(plan.instrs)} launches"
    return ok


def _offers_graphs(runtime: Any, index: int) -> bool:
    try:
        return bool(runtime.supports_graphs(index))
    except Exception:  # noqa: BLE001 — a runtime that cannot answer offers none
        return False


class _Info:
    __slots__ = ("shape", "dtype", "cls", "base", "off", "fresh", "last")

    def __init__(self, shape: tuple[int, ...], dtype: np.dtype) -> None:
        self.shape = shape
        self.dtype = dtype
        self.cls = _FIXED
        self.base: int | None = None  # a view of this slot
        self.off = 0  # a view's first element in its base (a slice along a leading axis)
        self.fresh = False  # a program output: a new buffer each run
        self.last = -1  # the last step reading it


class _Eager:
    """An op with no kernel on the device: run it through the dispatcher (decomposition,
    CPU fallback) and patch its results into the instructions that read them."""

    __slots__ = ("plan", "opdef", "ins", "outs", "attrs")

    def __init__(
        self,
        plan: _Plan,
        opdef: base.OpDef,
        ins: list[tuple[int, tuple[int, ...] | None]],
        outs: list[int],
        attrs: dict[str, Any],
    ) -> None:
        self.plan, self.opdef, self.ins, self.outs, self.attrs = plan, opdef, ins, outs, attrs

    def results(self) -> list[Tensor]:
        """The op run through the dispatcher on its inputs' current tensors."""
        slots = self.plan.slots
        ins = [slots[s] if shape is None else slots[s]._reshaped(shape) for s, shape in self.ins]  # type: ignore[union-attr]
        if self.opdef.kind == "composite":
            r = base.call(self.opdef, ins, self.attrs)
            return [r] if isinstance(r, Tensor) else list(r)
        return dispatch.run(self.opdef, ins, self.attrs, self.plan.device if not ins else None)

    def __call__(self) -> None:
        for s, t in zip(self.outs, self.results()):
            self.plan.set(s, t)


class _Declined(_Eager):
    """A kernel that declined its inputs when it ran (it raised ``KernelNotFoundError``
    before doing anything, as the OpenCL plugin's cast to bfloat16 does): from then on the op
    runs through the dispatcher, which falls back to the cpu plugin as eager mode does (warned
    once, counted in ``fw.fallback_stats()``), and its results are copied into the storage the
    plan gave them, which later instructions are bound to."""

    __slots__ = ()

    def __call__(self) -> None:
        slots, ctx = self.plan.slots, self.plan.ctx
        for s, t in zip(self.outs, self.results()):
            o = slots[s]
            assert o is not None and o.shape == t.shape and o.dtype == t.dtype, (self.opdef.name, s)
            n = t.size * t.dtype.itemsize
            if n:
                rt = ctx.runtime
                rt.copy_d2d(
                    ctx.device_index,
                    o._block.handle,
                    o._offset,
                    t._block.handle,
                    t._offset,
                    n,
                    ctx.stream,
                    False,
                )


class _CopyBack:
    """An in-place output copied into its input's storage at the end of a run, through the
    runtime, where the device registers no ``copy`` kernel."""

    __slots__ = ("plan", "src", "dst")

    def __init__(self, plan: _Plan, src: int, dst: int) -> None:
        self.plan, self.src, self.dst = plan, src, dst

    def __call__(self) -> None:
        plan = self.plan
        s, d = plan.slots[self.src], plan.slots[self.dst]
        assert s is not None and d is not None
        ctx = plan.ctx
        n = s.size * s.dtype.itemsize
        ctx.runtime.copy_d2d(
            ctx.device_index, d._block.handle, d._offset, s._block.handle, s._offset, n, ctx.stream, False
        )


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


def _viewed(t: Tensor, shape: tuple[int, ...], off: int) -> Tensor:
    """``t``'s storage from element ``off`` on, as ``shape``."""
    if not off:
        return t if t.shape == shape else t._reshaped(shape)
    return Tensor._make(t._block, t._offset + off * t.dtype.itemsize, shape, t.dtype, t.device)


class _View:
    """A reshape (or a contiguous slice) of a value known only while running (an eager
    step's result)."""

    __slots__ = ("plan", "src", "dst", "shape", "off")

    def __init__(self, plan: _Plan, src: int, dst: int, shape: tuple[int, ...], off: int = 0) -> None:
        self.plan, self.src, self.dst, self.shape, self.off = plan, src, dst, shape, off

    def __call__(self) -> None:
        self.plan.set(self.dst, _viewed(self.plan.slots[self.src], self.shape, self.off))  # type: ignore[arg-type]


class _Plan:
    """The instruction list of one program for one binding of its symbols."""

    def __init__(self, ex: Executor, binding: dict[str, int]) -> None:
        self.ex = ex
        self.device = dev = ex.device
        self.binding = binding
        st = dispatch.state(dev)
        self.alloc, self.view_fn = st.alloc, st.view
        ctx = st.ctx
        prog = ex.lowered
        infos: list[_Info] = []
        slot_of: dict[Value, int] = {}

        def new(shape: tuple[int, ...], dtype: np.dtype) -> int:
            infos.append(_Info(tuple(shape), np.dtype(dtype)))
            return len(infos) - 1

        def concrete(v: Value) -> tuple[int, ...]:
            return v.type.concrete(binding)

        self.slots: list[Tensor | None] = []
        self.input_slots = []
        for v in prog.inputs:
            s = slot_of[v] = new(concrete(v), v.type.dtype)
            infos[s].cls = _START
            self.input_slots.append(s)
        self.param_slots: list[tuple[int, Tensor]] = []
        fixed: dict[int, Tensor] = {}
        # steps: (kind, payload, in refs [(slot, shape override)], out slots, attrs)
        steps: list[tuple[str, Any, list[tuple[int, tuple[int, ...] | None]], list[int], dict[str, Any]]] = []
        for op in prog.block.ops:
            if op.name == "builtin.return":
                break
            if op.name == "builtin.parameter":
                t = ex.params[op.attrs["name"]]
                s = slot_of[op.result] = new(concrete(op.result), op.result.type.dtype)
                self._check_param(op.attrs["name"], t, infos[s])
                infos[s].cls = _START
                self.param_slots.append((s, t))
                continue
            if op.name == "builtin.constant":
                s = slot_of[op.result] = new(concrete(op.result), op.result.type.dtype)
                fixed[s] = self._constant(op.attrs, infos[s])
                continue
            if control.handles(op):  # cf ops, draws from the global generator (framework.ir.control)
                outs = [new(concrete(r), r.type.dtype) for r in op.results]
                for r, s in zip(op.results, outs):
                    slot_of[r], infos[s].cls = s, _LATE
                refs = [(slot_of[v], None) for v in control.reads(op)]
                steps.append(("control", control.lower(op, ex, binding), refs, outs, {}))
                continue
            # the kernel dialect: the lowering chose the kernel (or an eager step) and made
            # broadcasting explicit; what is left here is the shapes of this binding
            attrs = {a: resolve(v, binding) for a, v in op_attrs(op).items()}
            opdef = lookup(base_name(op)).opdef
            assert opdef is not None
            metas = [(concrete(r), r.type.dtype) for r in op.results]
            if any(d < 0 for sh, _ in metas for d in sh):
                metas = infer_shapes(op, binding) or metas
            outs = [new(sh, dt) for sh, dt in metas]
            for r, s in zip(op.results, outs):
                slot_of[r] = s
            ins = [slot_of[v] for v in op.operands]
            if op.name == "kernel.eager":
                for s in outs:
                    infos[s].cls = _LATE
                steps.append(("eager", opdef, [(s, None) for s in ins], outs, attrs))
                continue
            if op.attrs["kernel.name"] == VIEW:
                src = ins[0]
                infos[outs[0]].base = src
                infos[outs[0]].cls = infos[src].cls
                steps.append(("view", None, [(src, None)], outs, {}))
                continue
            if opdef.name == "slice" and len(outs) == 1:
                off = contiguous_slice(infos[ins[0]].shape, attrs)
                if off is not None:  # one run of the input: a view of it, no kernel
                    infos[outs[0]].base, infos[outs[0]].off = ins[0], off
                    infos[outs[0]].cls = infos[ins[0]].cls
                    steps.append(("view", None, [(ins[0], None)], outs, {}))
                    continue
            entry = kernel_entry(op, dev.type)
            rank = len(metas[0][0]) if metas else 0
            pad = opdef.elementwise or opdef.name == "expand"  # operands padded to the result's rank
            refs: list[tuple[int, tuple[int, ...] | None]] = []
            for s in ins:
                shape = infos[s].shape
                refs.append((s, (1,) * (rank - len(shape)) + shape if pad and len(shape) < rank else None))
            steps.append(("kernel", (entry, opdef.name), refs, outs, attrs))
        ret = prog.return_op
        assert ret is not None
        self.output_slots = [slot_of[v] for v in ret.operands]
        self._plan_memory(infos, steps, fixed, ctx)

    # -- building -------------------------------------------------------------------------
    def _check_param(self, name: str, t: Tensor, info: _Info) -> None:
        if tuple(t.shape) != info.shape or t.dtype != info.dtype:
            raise IRError(
                f"[executor] parameter '{name}' is {t.dtype}{list(t.shape)}, the program expects "
                f"{info.dtype}{list(info.shape)}; load the weights this program was saved with"
            )
        if t.device != self.device:
            raise IRError(
                f"[executor] parameter '{name}' is on {t.device}, the program runs on {self.device}; "
                f"move the layer with layer.to('{self.device}')"
            )

    def _constant(self, attrs: dict[str, Any], info: _Info) -> Tensor:
        from .._src.tensor import from_numpy_copy

        if "value" in attrs:
            arr = np.full(info.shape, attrs["value"], dtype=info.dtype)
        else:
            name = attrs.get("name")
            src = self.ex.constants.get(name)
            if src is None:
                raise IRError(f"[executor] constant '{name}' of @{self.ex.program.name} was not given")
            arr = src.numpy() if isinstance(src, Tensor) else np.asarray(src)
        if arr.shape != info.shape or arr.dtype != info.dtype:
            raise IRError(
                f"[executor] constant '{attrs}' is {arr.dtype}{list(arr.shape)}, typed {info.dtype}{list(info.shape)}"
            )
        return from_numpy_copy(arr, self.device)

    def _concat_in_place(self, infos: list[_Info], steps: list, fixed: dict[int, Tensor]) -> list:
        """The steps without the concats whose inputs their kernels can write straight into
        the result: where every dim before the concat's axis is 1, each input is one run of
        the result's elements, so it becomes a view of the result at that run (its writer
        fills it there) and the concat copies nothing. An input qualifies when it is a
        planned intermediate written by one kernel step: not a program input or output, a
        constant, an eager step's result, a view or another concat's input, and not given
        twice."""
        writers: defaultdict[int, list[str]] = defaultdict(list)
        for kind, _, _, outs, _ in steps:
            for s in outs:
                writers[s].append(kind)
        outputs = set(self.output_slots)

        def placeable(s: int) -> bool:
            inf = infos[s]
            return (
                inf.cls == _FIXED
                and inf.base is None
                and s not in fixed
                and s not in outputs
                and writers[s] == ["kernel"]
            )

        kept = []
        for step in steps:
            kind, payload, refs, outs, attrs = step
            if kind == "kernel" and payload[1] == "concat" and len(outs) == 1:
                c, ins = outs[0], [s for s, _ in refs]
                shape = infos[c].shape
                axis = attrs.get("axis", 0) % max(len(shape), 1)
                if (
                    infos[c].cls == _FIXED
                    and infos[c].base is None
                    and c not in fixed
                    and all(d == 1 for d in shape[:axis])
                    and len(set(ins)) == len(ins)
                    and all(placeable(s) and infos[s].dtype == infos[c].dtype for s in ins)
                ):
                    off = 0
                    for s in ins:
                        infos[s].base, infos[s].off = c, off
                        off += math.prod(infos[s].shape)
                    continue
            kept.append(step)
        return kept

    def _alias(
        self, infos: list[_Info], steps: list, fixed: dict[int, Tensor], root: Any
    ) -> list[tuple[int, int]]:
        """Place the in-place outputs (``Executor(inplace=...)``): straight into their input
        where the kernel writing them may (see :func:`_writes_in_place`), else a copy into the
        input appended to ``steps``. Returns the (input slot, output slot) pairs written
        straight into the input."""
        direct: list[tuple[int, int]] = []
        writer = {s: k for k, st in enumerate(steps) if st[0] == "kernel" for s in st[3]}
        for k, j in self.ex.inplace.items():
            so, si = self.output_slots[k], self.input_slots[j]
            if infos[so].shape != infos[si].shape:
                raise IRError(
                    f"[executor] output {k} of @{self.ex.program.name} is {list(infos[so].shape)} here, its "
                    f"in-place input {j} is {list(infos[si].shape)}; they must be equal"
                )
            if root(so) == si:
                continue  # the input itself (or a view of it) is returned: nothing to write
            w = writer.get(so)
            if (
                w is not None
                and infos[so].base is None
                and infos[so].cls == _FIXED
                and so not in fixed
                and sum(1 for x in self.output_slots if root(x) == so) == 1
                and _writes_in_place(steps, w, si, so, root)
            ):
                infos[so].base, infos[so].cls = si, _START
                direct.append((si, so))
                continue
            steps.append(("copyback", None, [(so, None)], [si], {}))
        return direct

    def _plan_memory(self, infos: list[_Info], steps: list, fixed: dict[int, Tensor], ctx: Any) -> None:
        def root(s: int) -> int:
            while infos[s].base is not None:
                s = infos[s].base  # type: ignore[assignment]
            return s

        aliased = self._alias(infos, steps, fixed, root)
        for k, s in enumerate(self.output_slots):  # outputs (and what they view) are new each run
            if k in self.ex.inplace:
                continue  # returned as its input (written into it or copied at the end)
            r = root(s)
            if infos[r].cls == _FIXED and r not in fixed:
                infos[r].fresh = True
                infos[r].cls = _START
        steps[:] = self._concat_in_place(infos, steps, fixed)
        for s, info in enumerate(infos):  # a view's class follows its base's
            if info.base is not None:
                info.cls = infos[root(s)].cls
        for k, (_, _, refs, outs, _) in enumerate(steps):
            for s, _shape in refs:
                infos[root(s)].last = k
            for s in outs:
                r = root(s)
                infos[r].last = max(infos[r].last, k)
        # liveness: a buffer goes back to the pool after its last reader
        pool: dict[int, list[Any]] = defaultdict(list)
        blocks: dict[int, Any] = {}
        held = peak = unplanned = 0
        ends: dict[int, list[int]] = defaultdict(list)
        for k, (kind, _, _, outs, _) in enumerate(steps):
            # a block is taken by the first step writing it: its value's or a view's (a
            # concat's input written in place)
            for s in outs if kind == "kernel" else ():
                s = root(s)
                inf = infos[s]
                if inf.cls != _FIXED or s in fixed or s in blocks:
                    continue
                nbytes = math.prod(inf.shape) * inf.dtype.itemsize
                unplanned += nbytes
                free = pool[nbytes]
                if free:
                    blocks[s] = free.pop()
                else:
                    blocks[s] = self.alloc.malloc(nbytes)
                    held += nbytes
                    peak = max(peak, held)
                ends[max(inf.last, k)].append(s)
            for s in ends.pop(k, []):
                pool[math.prod(infos[s].shape) * infos[s].dtype.itemsize].append(blocks[s])
        self.planned_bytes, self.unplanned_bytes = peak, unplanned
        self.blocks = list({id(b): b for b in blocks.values()}.values())
        # materialise: tensors of fixed slots, native views, patch sites
        slots: list[Tensor | None] = [None] * len(infos)
        for s, t in fixed.items():
            slots[s] = t
        for s, blk in blocks.items():
            slots[s] = Tensor._make(blk, 0, infos[s].shape, infos[s].dtype, self.device)
        for s, inf in enumerate(infos):  # fixed views, in slot order (a view follows its base)
            if inf.base is not None and inf.cls == _FIXED:
                slots[s] = _viewed(slots[inf.base], inf.shape, inf.off)  # type: ignore[arg-type]
        self.slots = slots
        sites: dict[int, list[tuple[int, bool, int, tuple[int, ...] | None]]] = defaultdict(list)
        # one instruction: [fn, ctx, outs, ins, attrs, binder]; eager steps and late views are
        # zero-argument callables in the fn place
        instrs: list[list[Any]] = []
        names: list[str] = []
        declinable: dict[int, tuple[str, Any, list[int], dict[str, Any]]] = {}  # kernel steps' ops
        self.start_views: list[tuple[int, int, tuple[int, ...], int]] = []
        for kind, payload, refs, outs, attrs in steps:
            if kind == "view":
                src, dst = refs[0][0], outs[0]
                inf = infos[dst]
                if inf.cls == _START:
                    self.start_views.append((src, dst, inf.shape, inf.off))
                elif inf.cls == _LATE:
                    instrs.append([_View(self, src, dst, inf.shape, inf.off), None, None, None, None, None])
                    names.append("slice" if inf.off else "reshape")
                continue
            if kind == "eager":
                instrs.append([_Eager(self, payload, refs, outs, attrs), None, None, None, None, None])
                names.append(payload.name)
                continue
            if kind == "control":
                instrs.append([payload.instruction(self, refs, outs), None, None, None, None, None])
                names.append(payload.name)
                continue
            if kind == "copyback":  # an in-place output the kernel could not write into its input
                entry = dispatch.find_kernel("copy", self.device.type, infos[outs[0]].dtype)
                if entry is None:
                    instrs.append([_CopyBack(self, refs[0][0], outs[0]), None, None, None, None, None])
                    names.append("copy")
                    continue
                payload = (entry, "copy")
            entry, name = payload
            k = len(instrs)
            ilist: list[Any] = [None] * len(refs)
            olist: list[Any] = [None] * len(outs)
            for j, (s, shape) in enumerate(refs):
                t = slots[s]
                if infos[s].cls == _FIXED and t is not None:
                    ilist[j] = (t if shape is None else t._reshaped(shape)).native()
                else:
                    sites[s].append((k, False, j, shape))
            for j, s in enumerate(outs):
                t = slots[s]
                if infos[s].cls == _FIXED and t is not None:
                    olist[j] = t.native()
                else:
                    sites[s].append((k, True, j, None))
            instrs.append([entry.fn, ctx, olist, ilist, attrs, entry.bind])
            names.append(name)
            if kind == "kernel":
                declinable[k] = (name, refs, outs, attrs)
        for si, so in aliased:  # written straight into the input: a view of it, set per run
            self.start_views.append((si, so, infos[so].shape, 0))
        self.instrs = instrs
        self.names = names
        self.declinable = declinable
        self.sites = {s: tuple(v) for s, v in sites.items()}
        self.fresh = [(s, infos[s].shape, infos[s].dtype) for s, inf in enumerate(infos) if inf.fresh]
        self.had: dict[int, int] = {}  # fresh slot -> the id of its block's handle in the last run
        self.dynamic = [s for s, inf in enumerate(infos) if inf.cls != _FIXED]
        self.has_eager = any(ins[1] is None for ins in instrs)
        self.roots = [root(s) for s in range(len(infos))]
        self.infos = infos
        self.ctx = ctx
        self.bound: list[Any] = [None] * len(instrs)
        for k in range(len(instrs)):
            self._bind(k)
        self.cur: dict[int, tuple[Any, int]] = {}  # dynamic slot -> (handle, offset) bound now
        self.ran_on: Any = _NEVER  # the stream of the last run
        self.runs = 0
        self.graph: _Graph | None = None
        self.graph_failed: str | None = None  # why this plan cannot be captured

    # -- binding ----------------------------------------------------------------------------
    def _bind(self, k: int) -> None:
        """Make instruction ``k`` a zero-argument call: the kernel's binder (its fast path)
        when it offers one and every array is known, else the kernel with its lists."""
        fn, ctx, o, i, a, binder = self.instrs[k]
        if ctx is None:  # an eager step or a late view
            self.bound[k] = fn
            return
        if binder is not None and all(v is not None for v in o) and all(v is not None for v in i):
            call = binder(ctx, o, i, **a)
            if call is not None:
                self.bound[k] = call
                return
        self.bound[k] = functools.partial(fn, ctx, o, i, **a)

    def _restream(self, ctx: Any) -> None:
        """The current stream changed: order this run after the plan's last run (its
        buffers are reused) with the runtime's events, then launch on the new stream."""
        old = self.ran_on
        rt = ctx.runtime
        if old is not _NEVER and old is not None and old is not ctx.stream:
            ev = rt.create_event(ctx.device_index)
            rt.record_event(ev, old)
            rt.stream_wait_event(ctx.stream, ev)
        if old is not _NEVER and old is not ctx.stream:
            for b in self.blocks:  # the plan's buffers are used on this stream too
                self.alloc.record_stream(b, ctx.stream)
        self.ctx = ctx
        for k, ins in enumerate(self.instrs):
            if ins[1] is not None:
                ins[1] = ctx
                self._bind(k)

    # -- running --------------------------------------------------------------------------
    def set(self, s: int, t: Tensor) -> None:
        self.slots[s] = t
        sites = self.sites.get(s)
        if not sites:
            return
        h, off = t._block.handle, t._offset
        cur = self.cur.get(s)
        if cur is not None and cur[0] is h and cur[1] == off:
            return  # the same memory as bound: nothing to patch
        self.cur[s] = (h, off)
        nv = t._nv if t._nv is not None else t.native()
        instrs = self.instrs
        for k, out, j, shape in sites:
            ins = instrs[k]
            (ins[2] if out else ins[3])[j] = nv if shape is None else t._reshaped(shape).native()
            if ins[5] is not None:
                self._bind(k)

    def run(self, inputs: Sequence[Tensor]) -> list[Tensor]:
        dev = self.device
        st = dispatch._STATE.get(dev) or dispatch.state(dev)
        if st.ctx is not self.ctx or self.ran_on is not st.ctx.stream:
            self._restream(st.ctx)
        self.ran_on = st.ctx.stream
        self.runs += 1
        if self.ex.inplace:
            _check_overlap(self.ex, inputs)
        g = self.graph
        if g is not None:
            outs = g.replay(inputs)
            if outs is not None:
                return outs
        elif self.runs == 2 and self.graph_failed is None and self.ex.use_graphs(self):
            g = self.graph = _Graph.capture(self, inputs)
            if g is not None:
                outs = g.replay(inputs)
                if outs is not None:
                    return outs
        slots = self.slots
        for s, t in zip(self.input_slots, inputs):
            self.set(s, t)
        for s, t in self.param_slots:
            self.set(s, t)
        malloc, view, had = self.alloc.malloc, self.view_fn, self.had
        for s, shape, dtype in self.fresh:
            blk = malloc(math.prod(shape) * dtype.itemsize, had.get(s))  # its last block when free
            had[s] = id(blk.handle)  # not the block: it goes back to the pool with its tensor
            o = Tensor._make(blk, 0, shape, dtype, dev)
            o._nv = view(o._block.handle, 0, shape, dtype)
            self.set(s, o)
        for src, dst, shape, off in self.start_views:
            self.set(dst, _viewed(slots[src], shape, off))  # type: ignore[arg-type]
        self._launch()
        outs = [slots[s] for s in self.output_slots]
        for k, j in self.ex.inplace.items():
            outs[k] = inputs[j]
        for s in self.dynamic:
            slots[s] = None
        return outs  # type: ignore[return-value]

    def _launch(self, start: int = 0) -> None:
        """Run the instructions from ``start`` on."""
        it = iter(self.bound if not start else self.bound[start:])
        # NOTE: no enumerate on the hot path; the iterator knows where it failed
        try:
            if self.has_eager:
                with autograd.no_grad():
                    for f in it:
                        f()
            else:
                for f in it:
                    f()
        except KernelNotFoundError:
            k = start + it.__reduce__()[2] - 1  # type: ignore[index]
            if not self._decline(k):
                raise
            self._launch(k)  # the declined op through the dispatcher, then the rest
        except OarlockError:
            raise
        except Exception as exc:  # noqa: BLE001 — a kernel's failure becomes a readable error
            k = start + it.__reduce__()[2] - 1  # type: ignore[index]
            raise KernelError(
                f"[executor] instruction {k} ({self.names[k]}) of @{self.ex.program.name} failed on "
                f"{self.device}: {type(exc).__name__}: {exc}; run the function eagerly to see which op and "
                f"inputs, and report it to the plugin's vendor"
            ) from exc

    def _decline(self, k: int) -> bool:
        """Instruction ``k``'s kernel declined its inputs: make it a :class:`_Declined` step
        for this and every later run (its argument lists stay, for :meth:`set` to patch).
        False when ``k`` is no kernel step (nothing to fall back to)."""
        step = self.declinable.pop(k, None)
        opdef = None if step is None else base.OPS.get(step[0])
        if step is None or opdef is None:
            return False
        _, refs, outs, attrs = step
        d = _Declined(self, opdef, refs, outs, attrs)
        old = self.instrs[k]
        self.instrs[k] = [d, None, old[2], old[3], old[4], None]
        self.bound[k] = d
        self.has_eager = True
        return True

    def copy_bytes(self) -> int:
        """Bytes a graph replay copies: every input in, every output out."""
        infos, inplace = self.infos, self.ex.inplace
        ins = [s for j, s in enumerate(self.input_slots) if j not in inplace.values()]
        outs = [s for k, s in enumerate(self.output_slots) if k not in inplace]
        return sum(math.prod(infos[s].shape) * infos[s].dtype.itemsize for s in (*ins, *outs))

    def held_bytes(self) -> int:
        """Bytes this plan keeps allocated between runs (planned intermediates, graph buffers),
        as the allocator counts them (rounded blocks)."""
        extra = self.graph.held_bytes() if self.graph is not None else 0
        return sum(b.size for b in self.blocks) + extra


class _Graph:
    """A plan captured once through the runtime's graph capture and replayed on every run.

    The captured work reads and writes fixed buffers, so a replay copies the inputs into the
    captured input buffers, launches the graph on the current stream and copies the outputs
    out into new tensors (the caller keeps them; the next replay overwrites the captured
    ones). Parameters are read where they were when captured: a parameter whose storage was
    replaced since (an optimizer step outside the program) is copied into it first. In-place
    inputs (``Executor(inplace=...)``) are captured where they are and neither copied in nor
    out; a run given one in other storage runs the instruction list instead."""

    def __init__(self, plan: _Plan, graph: Any, stream: Any, ins: list[Tensor], bufs: list[Tensor]) -> None:
        self.plan, self.graph, self.stream, self.ins, self.bufs = plan, graph, stream, ins, bufs
        self.kept: list[Any] = []  # the bound calls captured: they own what the graph reads
        ptensors = {s: t for s, t in plan.param_slots}
        self.params = [(t, t._block, t._offset, t.size * t.dtype.itemsize) for _, t in plan.param_slots]
        self.outs: list[tuple[str, Any]] = []
        inplace = plan.ex.inplace
        #: in-place inputs: (input index, the storage captured) — read and written where they are
        self.own = frozenset(inplace.values())
        self.inplace = [(j, t._block, t._offset) for j, t in enumerate(ins) if j in self.own]
        for k, s in enumerate(plan.output_slots):
            if k in inplace:
                self.outs.append(("input", inplace[k]))
                continue
            t = plan.slots[s]
            assert t is not None
            r = plan.roots[s]
            if r in ptensors and t._offset == ptensors[r]._offset:
                self.outs.append(("param", (ptensors[r], t.shape)))
            else:
                self.outs.append(("copy", t))

    @classmethod
    def capture(cls, plan: _Plan, inputs: Sequence[Tensor]) -> _Graph | None:
        dev, alloc = plan.device, plan.alloc
        ctx = plan.ctx
        rt, idx = ctx.runtime, ctx.device_index

        def buffer(shape: tuple[int, ...], dtype: np.dtype) -> Tensor:
            t = Tensor._make(alloc.malloc(math.prod(shape) * dtype.itemsize), 0, shape, dtype, dev)
            return t

        own = set(plan.ex.inplace.values())  # in-place inputs are captured where they are
        ins = [t if j in own else buffer(tuple(t.shape), t.dtype) for j, t in enumerate(inputs)]
        bufs = [t for j, t in enumerate(ins) if j not in own]
        for s, t in zip(plan.input_slots, ins):
            plan.set(s, t)
        for s, t in plan.param_slots:
            plan.set(s, t)
        for s, shape, dtype in plan.fresh:
            o = buffer(shape, dtype)
            bufs.append(o)
            plan.set(s, o)
        for src, dst, shape, off in plan.start_views:
            plan.set(dst, _viewed(plan.slots[src], shape, off))  # type: ignore[arg-type]
        graph = None
        try:
            cs = rt.create_stream(idx)
            cctx = KernelContext(idx, cs, rt)
            for k, ins_ in enumerate(plan.instrs):
                ins_[1] = cctx
                plan._bind(k)
            rt.begin_capture(idx, cs)
            try:
                for f in plan.bound:
                    f()
            finally:
                graph = rt.end_capture(idx, cs)
            # what the bound calls own (a fused kernel's scratch rows) is read by the graph:
            # it lives as long as the graph
            kept = list(plan.bound)
        except Exception as exc:  # noqa: BLE001 — a capture that fails leaves the instruction list
            plan.graph_failed = f"capture failed: {type(exc).__name__}: {exc}"
            graph = None
        finally:
            for k, ins_ in enumerate(plan.instrs):
                ins_[1] = ctx
                plan._bind(k)
        if graph is None:
            return None
        g = cls(plan, graph, cs, ins, bufs)
        g.kept = kept
        return g

    def replay(self, inputs: Sequence[Tensor]) -> list[Tensor] | None:
        plan = self.plan
        ctx = plan.ctx
        rt, idx, stream = ctx.runtime, ctx.device_index, ctx.stream
        for j, blk, off in self.inplace:
            t = inputs[j]
            if t._block is not blk or t._offset != off:
                return None  # an in-place input in other storage than captured: run the list
        own = self.own
        for j, (t, buf) in enumerate(zip(inputs, self.ins)):
            if t.device != plan.device:
                raise OpArgumentError(
                    f"[executor] an input is on {t.device}, the program runs on {plan.device}"
                )
            if j in own:
                continue  # an in-place input: read and written where it is
            n = t.size * t.dtype.itemsize
            rt.copy_d2d(idx, buf._block.handle, 0, t._block.handle, t._offset, n, stream, False)
        moved = 0
        for t, blk, off, n in self.params:
            if t._block is not blk or t._offset != off:  # replaced since the capture
                rt.copy_d2d(idx, blk.handle, off, t._block.handle, t._offset, n, stream, False)
                moved += n
        try:
            rt.launch_graph(self.graph, stream)
        except OarlockError:
            raise
        except Exception as exc:  # noqa: BLE001
            raise KernelError(
                f"[executor] replaying the captured graph of @{plan.ex.program.name} failed on "
                f"{plan.device}: {type(exc).__name__}: {exc}; run with OARLOCK_GRAPHS=0 to use the "
                f"instruction list, and report it to the plugin's vendor"
            ) from exc
        malloc, dev = plan.alloc.malloc, plan.device
        outs: list[Tensor] = []
        for kind, what in self.outs:
            if kind == "input":
                outs.append(inputs[what])
                continue
            if kind == "param":
                p, shape = what
                outs.append(p if tuple(p.shape) == tuple(shape) else p._reshaped(shape))
                continue
            n = what.size * what.dtype.itemsize
            o = Tensor._make(malloc(n), 0, what.shape, what.dtype, dev)
            rt.copy_d2d(idx, o._block.handle, 0, what._block.handle, what._offset, n, stream, False)
            outs.append(o)
        if moved and not _worthwhile(plan, plan.copy_bytes() + moved):
            plan.graph = None  # parameters move every step (an optimizer outside): run the list
            rt.destroy_graph(self.graph)
        return outs

    def held_bytes(self) -> int:
        """The captured input and output buffers, and the captured storage of parameters
        whose tensors have moved to other storage since (kept for the graph to read)."""
        moved = {id(blk): blk.size for t, blk, _, _ in self.params if t._block is not blk}
        return sum(t._block.size for t in self.bufs) + sum(moved.values())
