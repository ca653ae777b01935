"""The executor: a program lowered once to a flat instruction list and run with no shape
inference, dispatch or autograd on the way.

Lowering happens once per binding of the program's symbols (one per batch size seen) and
does, for every op:

- picks the kernel through the dispatcher's kernel table (``(op, device type, dtype)``), once;
  an op the device has no kernel for (a composite without a fused kernel, a primitive the
  plugin lacks) becomes an *eager step*: it runs through the dispatcher as in eager mode
  (decomposition, CPU fallback with its warning);
- resolves elementwise broadcasting once: a rank-padded view for kernels that broadcast, an
  ``expand`` instruction for those that do not (what ``dispatch.run`` does on every call);
- assigns every value a slot. Intermediates get buffers planned by liveness: a buffer is
  handed back to a pool after the last instruction that reads it and reused by a later value
  of the same byte size, so the plan holds the peak of live values, not their sum. Program
  outputs get fresh buffers on every run (the caller keeps them); inputs, parameters (read
  from the Layer's tensors on every run, so an optimizer step is seen) and eager-step results
  are patched into the instructions that read them.

A run is then ``for fn, ctx, outs, ins, attrs in instrs: fn(ctx, outs, ins, **attrs)``.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from adapter_api import KernelError, OarlockError, OpArgumentError

from .._src import autograd, dispatch
from .._src import device as _dev
from .._src.ops import base
from .._src.tensor import Tensor
from . import control
from .core import IRError, Program, SymDim, TensorType, Value, resolve
from .dialects import infer_shapes, lookup
from .verify import verify

_FIXED, _START, _LATE = 0, 1, 2


class Executor:
    """Runs a :class:`Program` on one device.

    ``params`` maps each ``builtin.parameter`` name to its tensor (shared, not copied);
    ``constants`` maps each named ``builtin.constant`` to a tensor or array."""

    def __init__(
        self,
        program: Program,
        device: Any,
        params: Mapping[str, Tensor] | None = None,
        constants: Mapping[str, Any] | None = None,
    ) -> None:
        verify(program)
        self.program = program
        self.device = _dev.parse(device) if not isinstance(device, _dev.Device) else device
        self.params = dict(params or {})
        self.constants = dict(constants or {})
        self.symbols = program.symbols()
        self._plans: dict[tuple[int, ...], _Plan] = {}
        for op in program.block.ops:
            if op.name == "builtin.parameter" and op.attrs["name"] not in self.params:
                raise IRError(
                    f"[executor] @{program.name} reads parameter '{op.attrs['name']}', which was not given; "
                    f"pass every parameter of the program (got {sorted(self.params)[:5]})"
                )

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
            pl = self._plans[key] = _Plan(self, dict(binding))
        return pl

    def __call__(self, *inputs: Tensor) -> list[Tensor]:
        binding = self.bind(inputs)
        pl = self._plans.get(tuple(binding[s] for s in self.symbols)) or self.plan(binding)
        return pl.run(inputs)

    def memory_stats(self, binding: Mapping[str, int]) -> dict[str, int]:
        """Bytes of intermediates: ``planned`` (the buffers the plan holds after reuse) and
        ``unplanned`` (what one buffer per value would take)."""
        pl = self.plan(binding)
        return {"planned": pl.planned_bytes, "unplanned": pl.unplanned_bytes, "instructions": len(pl.instrs)}


class _Info:
    __slots__ = ("shape", "dtype", "cls", "base", "fresh", "last")

    def __init__(self, shape: tuple[int, ...], dtype: np.dtype) -> None:
        self.shape = shape
        self.dtype = dtype
        self.cls = _FIXED
        self.base: int | None = None  # a view of this slot
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

    def __call__(self, ctx: Any, o: Any, i: Any) -> None:
        slots = self.plan.slots
        ins = [slots[s] if shape is None else slots[s]._reshaped(shape) for s, shape in self.ins]
        if self.opdef.kind == "composite":
            r = base.call(self.opdef, ins, self.attrs)
            res = [r] if isinstance(r, Tensor) else list(r)
        else:
            res = dispatch.run(self.opdef, ins, self.attrs, self.plan.device if not ins else None)
        for s, t in zip(self.outs, res):
            self.plan.set(s, t)


class _View:
    """A reshape of a value known only while running (an eager step's result)."""

    __slots__ = ("plan", "src", "dst", "shape")

    def __init__(self, plan: _Plan, src: int, dst: int, shape: tuple[int, ...]) -> None:
        self.plan, self.src, self.dst, self.shape = plan, src, dst, shape

    def __call__(self, ctx: Any, o: Any, i: Any) -> None:
        self.plan.set(self.dst, self.plan.slots[self.src]._reshaped(self.shape))


class _Plan:
    """The instruction list of one program for one binding of its symbols."""

    def __init__(self, ex: Executor, binding: dict[str, int]) -> None:
        self.ex = ex
        self.device = dev = ex.device
        self.binding = binding
        st = dispatch.state(dev)
        self.alloc, self.view_fn = st.alloc, st.view
        ctx = st.ctx
        prog = ex.program
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
            info = lookup(op.name)
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
            attrs = {a: resolve(v, binding) for a, v in op.attrs.items()}
            opdef = info.opdef
            assert opdef is not None
            metas = [(concrete(r), r.type.dtype) for r in op.results]
            if any(d < 0 for sh, _ in metas for d in sh):
                metas = infer_shapes(op, binding) or metas
            outs = [new(sh, dt) for sh, dt in metas]
            for r, s in zip(op.results, outs):
                slot_of[r] = s
            ins = [slot_of[v] for v in op.operands]
            if opdef.kind == "view":
                src = ins[0]
                infos[outs[0]].base = src
                infos[outs[0]].cls = infos[src].cls
                steps.append(("view", None, [(src, None)], outs, {}))
                continue
            key = ins[opdef.spec.key_input if opdef.spec else 0] if ins else None
            key_dtype = infos[key].dtype if key is not None else metas[0][1]
            entry = (
                dispatch.find_kernel(opdef.name, dev.type, key_dtype)
                if opdef.kind in ("primitive", "composite")
                else None
            )
            if entry is None:
                for s in outs:
                    infos[s].cls = _LATE
                steps.append(("eager", opdef, [(s, None) for s in ins], outs, attrs))
                continue
            refs: list[tuple[int, tuple[int, ...] | None]] = []
            for s in ins:
                shape = infos[s].shape
                out_shape = metas[0][0]
                if not opdef.elementwise or shape == out_shape:
                    refs.append((s, None))
                    continue
                padded = (1,) * (len(out_shape) - len(shape)) + shape
                if entry.broadcast:
                    refs.append((s, padded if padded != shape else None))
                else:  # the kernel wants equal shapes: expand once into a temporary
                    tmp = new(out_shape, infos[s].dtype)
                    exp = dispatch.find_kernel("expand", dev.type, infos[s].dtype)
                    if exp is None:
                        raise IRError(
                            f"[executor] {op.name} needs 'expand' to broadcast on {dev}, which has no kernel for it"
                        )
                    steps.append(
                        (
                            "kernel",
                            exp,
                            [(s, padded if padded != shape else None)],
                            [tmp],
                            {"shape": out_shape},
                        )
                    )
                    refs.append((tmp, None))
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

    def _plan_memory(self, infos: list[_Info], steps: list, fixed: dict[int, Tensor], ctx: Any) -> None:
        def root(s: int) -> int:
            while infos[s].base is not None:
                s = infos[s].base  # type: ignore[assignment]
            return s

        for s in self.output_slots:  # outputs (and what they view) are new each run
            r = root(s)
            if infos[r].cls == _FIXED and r not in fixed:
                infos[r].fresh = True
                infos[r].cls = _START
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
            for s in outs if kind == "kernel" else ():
                inf = infos[s]
                if inf.cls != _FIXED or s in fixed or inf.base is not None:
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
        # materialise: tensors of fixed slots, native views, patch sites
        slots: list[Tensor | None] = [None] * len(infos)
        for s, t in fixed.items():
            slots[s] = t
        for s, blk in blocks.items():
            slots[s] = Tensor._make(blk, 0, infos[s].shape, infos[s].dtype, self.device)
        for s, inf in enumerate(infos):  # fixed views, in slot order (a view follows its base)
            if inf.base is not None and inf.cls == _FIXED:
                slots[s] = slots[inf.base]._reshaped(inf.shape)  # type: ignore[union-attr]
        self.slots = slots
        sites: dict[int, list[tuple[list[Any], int, tuple[int, ...] | None]]] = defaultdict(list)
        instrs: list[tuple[Any, Any, list[Any], list[Any], dict[str, Any]]] = []
        names: list[str] = []
        self.start_views: list[tuple[int, int, tuple[int, ...]]] = []
        for kind, payload, refs, outs, attrs in steps:
            if kind == "view":
                src, dst = refs[0][0], outs[0]
                if infos[dst].cls == _START:
                    self.start_views.append((src, dst, infos[dst].shape))
                elif infos[dst].cls == _LATE:
                    instrs.append((_View(self, src, dst, infos[dst].shape), None, None, None, {}))
                    names.append("reshape")
                continue
            if kind == "eager":
                instrs.append((_Eager(self, payload, refs, outs, attrs), None, None, None, {}))
                names.append(payload.name)
                continue
            if kind == "control":
                instrs.append((payload.instruction(self, refs, outs), None, None, None, {}))
                names.append(payload.name)
                continue
            entry, name = payload
            ilist: list[Any] = [None] * len(refs)
            olist: list[Any] = [None] * len(outs)
            for j, (s, shape) in enumerate(refs):
                t = slots[s]
                if infos[s].cls == _FIXED and t is not None:
                    ilist[j] = (t if shape is None else t._reshaped(shape)).native()
                else:
                    sites[s].append((ilist, j, shape))
            for j, s in enumerate(outs):
                t = slots[s]
                if infos[s].cls == _FIXED and t is not None:
                    olist[j] = t.native()
                else:
                    sites[s].append((olist, j, None))
            instrs.append((entry.fn, ctx, olist, ilist, attrs))
            names.append(name)
        self.instrs = instrs
        self.names = names
        self.sites = {s: tuple(v) for s, v in sites.items()}
        self.fresh = [(s, infos[s].shape, infos[s].dtype) for s, inf in enumerate(infos) if inf.fresh]
        self.dynamic = [s for s, inf in enumerate(infos) if inf.cls != _FIXED]

    # -- running --------------------------------------------------------------------------
    def set(self, s: int, t: Tensor) -> None:
        self.slots[s] = t
        sites = self.sites.get(s)
        if sites:
            nv = t._nv if t._nv is not None else t.native()
            for lst, j, shape in sites:
                lst[j] = nv if shape is None else t._reshaped(shape).native()

    def run(self, inputs: Sequence[Tensor]) -> list[Tensor]:
        slots = self.slots
        dev = self.device
        for s, t in zip(self.input_slots, inputs):
            self.set(s, t)
        for s, t in self.param_slots:
            self.set(s, t)
        malloc, view = self.alloc.malloc, self.view_fn
        for s, shape, dtype in self.fresh:
            o = Tensor._make(malloc(math.prod(shape) * dtype.itemsize), 0, shape, dtype, dev)
            o._nv = view(o._block.handle, 0, shape, dtype)
            self.set(s, o)
        for src, dst, shape in self.start_views:
            self.set(dst, slots[src]._reshaped(shape))  # type: ignore[union-attr]
        k = 0
        try:
            with autograd.no_grad():
                for k, (fn, ctx, o, i, a) in enumerate(self.instrs):  # noqa: B007 — k names the failing one
                    fn(ctx, o, i, **a)
        except OarlockError:
            raise
        except Exception as exc:  # noqa: BLE001 — a kernel's failure becomes a readable error
            raise KernelError(
                f"[executor] instruction {k} ({self.names[k]}) of @{self.ex.program.name} failed on "
                f"{dev}: {type(exc).__name__}: {exc}; run the function eagerly to see which op and "
                f"inputs, and report it to the plugin's vendor"
            ) from exc
        outs = [slots[s] for s in self.output_slots]
        for s in self.dynamic:
            slots[s] = None
        return outs  # type: ignore[return-value]
