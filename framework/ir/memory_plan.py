"""The plan of one program for one binding of its symbols: its instruction list, a slot per
value and the buffers planned for them by liveness (see :mod:`.executor`), in-place outputs
placed (:mod:`.in_place`), concats whose inputs are written in place; bound once and run."""

from __future__ import annotations

import functools
import math
from collections import defaultdict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from adapter_api import KernelError, KernelNotFoundError, OarlockError

from .._src import autograd, dispatch
from .._src import profiling as _profiling
from .._src.ops import base
from .._src.ops.shape import contiguous_slice
from .._src.tensor import Tensor
from . import control
from .core import IRError, Value, resolve
from .dialects import infer_shapes, lookup
from .graph_replay import _Graph
from .in_place import _check_overlap, _writes_in_place
from .passes import fusion, horizontal
from .passes.lower import VIEW, base_name, kernel_entry, kernel_name, op_attrs
from .steps import _CopyBack, _Declined, _Eager, _View, _viewed

if TYPE_CHECKING:
    from .executor import Executor

_FIXED, _START, _LATE = 0, 1, 2
_NEVER = object()


def _key_input(op: str) -> int:
    """The input whose dtype picks the kernel of ``op`` (``where``: x, not the condition)."""
    d = base.OPS.get(op)
    return d.spec.key_input if d is not None and d.spec is not None else 0


def group_flops(name: str) -> int | None:
    """The FLOPs of one run of the compiler's group ``name`` (``fused.g…``; a merged
    ``fused.h…``: its parts'), the sum of its ops' (each OpDef's ``flops``), or None where it is
    no group or a shape in it is not a number.

    >>> group_flops("op.add") is None
    True
    """
    g = fusion.GROUPS.get(name)
    if g is None:
        h = horizontal.HGROUPS.get(name)
        parts = None if h is None else [group_flops(op.name) for op in h.parts]
        return None if not parts or None in parts else sum(parts)  # type: ignore[arg-type]
    total = 0
    for op in g.body.block.ops:
        try:
            d = lookup(op.name).opdef
        except IRError:  # a builtin the table does not know: no arithmetic
            d = None
        if d is None or d.flops is None:
            continue
        ins = [getattr(v.type, "shape", None) for v in op.operands]
        outs = [getattr(r.type, "shape", None) for r in op.results]
        if any(sh is None or any(not isinstance(n, int) or n < 0 for n in sh) for sh in (*ins, *outs)):
            return None
        total += int(d.flops([tuple(sh) for sh in ins], [tuple(sh) for sh in outs], dict(op.attrs)))
    return total


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
        #: kernel instruction -> what the profiler shows of it: (its kernel, ``plugin/op/dtype``;
        #: its input shapes and dtypes, output shapes, attrs)
        details: dict[
            int, tuple[str, list[tuple[int, ...]], list[str], list[tuple[int, ...]], dict[str, Any]]
        ] = {}
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
            key = refs[min(_key_input(name), len(refs) - 1)][0] if refs else outs[0]
            details[k] = (
                kernel_name(entry, name, infos[key].dtype),
                [infos[s].shape if shape is None else shape for s, shape in refs],
                [str(infos[s].dtype) for s, _ in refs],
                [infos[s].shape for s in outs],
                attrs,
            )
            if kind == "kernel":
                declinable[k] = (name, refs, outs, attrs)
        for si, so in aliased:  # written straight into the input: a view of it, set per run
            self.start_views.append((si, so, infos[so].shape, 0))
        self.instrs = instrs
        self.names = names
        self.details = details
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
        st = dispatch._STATE.get(dev._name) or dispatch.state(dev)
        if st.ctx is not self.ctx or self.ran_on is not st.ctx.stream:
            self._restream(st.ctx)
        self.ran_on = st.ctx.stream
        self.runs += 1
        if self.ex.inplace:
            _check_overlap(self.ex, inputs)
        g = self.graph
        if _profiling.ACTIVE:  # fw.profiler: the instruction list (a span each), not a replay
            g = None
            self.runs -= 1  # nor counted towards capture
        elif g is not None:
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

    def _profile_args(self, k: int, rec: _profiling.Recording) -> dict[str, Any]:
        """What instruction ``k``'s span carries in the profile: its program and index, and
        for a kernel its name ``plugin/op/dtype`` and the details ``rec`` asks for."""
        args: dict[str, Any] = {"program": self.ex.program.name, "index": k}
        d = self.details.get(k)
        if d is None:
            return args
        args["kernel"] = d[0]
        args = rec.details(base.OPS.get(self.names[k]), d[1], d[2], d[3], d[4], args)
        if rec.flops and self.names[k].startswith("fused."):  # a group: its ops' sum
            n = group_flops(self.names[k])
            if n is not None:
                args["flops"] = n
        return args

    def _launch(self, start: int = 0) -> None:
        """Run the instructions from ``start`` on."""
        bound = self.bound
        if _profiling.ACTIVE:  # fw.profiler: each instruction in its span
            ctxs = [ins[1] for ins in self.instrs]
            bound = _profiling.instructions(
                bound, self.names, ctxs, self.device.type, self.ex.program.name, self._profile_args
            )
        it = iter(bound if not start else bound[start:])
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
