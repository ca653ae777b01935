"""The executor's steps that are not kernel calls: zero-argument callables in an instruction
list (:mod:`.memory_plan`) that run an op through the dispatcher (an op with no kernel on the
device, or a kernel that declined its inputs), copy an in-place output into its input, or
view a value known only while running."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._src import dispatch
from .._src.ops import base
from .._src.tensor import Tensor

if TYPE_CHECKING:
    from .memory_plan import _Plan


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
