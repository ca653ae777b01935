"""Graph replay: a plan's run captured once through the device runtime's graph capture
(:meth:`adapter_api.DeviceRuntime.begin_capture`) and replayed on every later run, where the
runtime offers capture and finds it worthwhile."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from adapter_api import KernelContext, KernelError, OarlockError, OpArgumentError

from .._src.tensor import Tensor
from .steps import _viewed

if TYPE_CHECKING:
    from .memory_plan import _Plan


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
