"""Span recording for ``fw.profiler``: the one flag the eager path, autograd and the executor
read, and the recording they write to while it is set.

The engine knows no profiler: ``framework.profiler`` starts a :class:`Recording` with
:func:`start` and takes it back with :func:`stop`. While none runs, :data:`ACTIVE` is False and
each hooked place costs one read of it (``ops.base.apply`` per primitive, ``ops.base.call`` per
composite, autograd per backward node, the executor per run).

What a span carries beyond its times is asked for per recording: ``shapes`` (each op's input
shapes and dtypes), ``flops`` (each op's arithmetic, from its OpDef's ``flops`` field) and
``memory`` (every allocation and free of the caching allocators, the op that made it, and each
device's peak, through ``allocator.WATCH``).

Spans are kept as tuples ``(category, name, start ns, end ns, thread, args)`` on the host's
``time.perf_counter_ns`` clock. Device spans come from the device runtime's own events
(``create_event`` / ``record_event`` / ``elapsed_ms`` of the adapter contract), recorded on the
kernel's stream around each launch and read only when the recording stops; a reference event
per device, recorded when the device is first seen, places them on the host's clock. Where the
runtime says its stream is synchronous (``DeviceRuntime.synchronous_stream``: the launch has run
when the launching call returns, as on the cpu device's default stream), an event would read the
host clock at the moment it is recorded, so the kernel's device span is timed by two host clock
reads around the launch instead: the same span, no events through the contract.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from . import allocator as _allocator

#: True while a :class:`Recording` runs (read on every hooked path; written only here)
ACTIVE = False
_REC: Recording | None = None
now = time.perf_counter_ns
_ident = threading.get_ident
_UNSEEN = object()

#: categories, the names Paddle's trace uses for the same kinds of span
OPERATOR = "Operator"
COMPOSITE = "Composite"
BACKWARD = "Backward"
INSTRUCTION = "Instruction"
KERNEL = "Kernel"
USER = "UserDefined"
STEP = "ProfileStep"
TRACED = "Trace"  #: an op recorded by a tracer (``to_static``'s first call), not run


class Recording:
    """What one profiling period collects.

    Args:
        device_events: ``fn(device_type) -> bool``: whether kernels on that device type get
            device spans (their events); host spans are always kept.
        shapes: each op span's args get ``input_shapes`` and ``input_dtypes``.
        flops: each op span's args get ``flops`` (its OpDef's ``flops`` field; 0 without one).
        memory: keep every allocation and free (:attr:`memory`) and each device's peak
            (:attr:`peaks`).
    """

    def __init__(
        self,
        device_events: Callable[[str], bool],
        shapes: bool = False,
        flops: bool = False,
        memory: bool = False,
    ) -> None:
        self.shapes, self.flops, self.memory_on = shapes, flops, memory
        #: the op (or program instruction) running now, to which allocations are attributed
        self.cur = ""
        #: (ns, device, bytes (+ allocated, - freed), allocated after, reserved after, op)
        self.memory: list[tuple[int, str, int, int, int, str]] = []
        #: device -> {"start_allocated", "start_reserved", "peak_allocated", "peak_reserved"}
        self.peaks: dict[str, dict[str, int]] = {}
        self.spans: list[tuple[str, str, int, int, int, dict[str, Any] | None]] = []
        #: (name, device key, runtime, begin event, end event, thread, args)
        self.launches: list[tuple[str, str, Any, Any, Any, int, dict[str, Any] | None]] = []
        #: launches on synchronous streams, already device spans: (device key, name, start ns,
        #: end ns, 0, args) on the host clock
        self.host_launches: list[tuple[str, str, int, int, int, dict[str, Any] | None]] = []
        #: device key -> (runtime, reference event, host ns when it was recorded)
        self.refs: dict[str, tuple[Any, Any, int]] = {}
        self.wants: dict[str, bool] = {}
        #: id of a kernel context -> (context, runtime, device key, synchronous stream), None: no
        #: device spans there
        self.lanes: dict[int, tuple[Any, Any, str, bool] | None] = {}
        self.device_events = device_events
        self.start_ns = now()
        self.end_ns = 0
        #: device key -> why its device spans are missing (the runtime cannot time events)
        self.untimed: dict[str, str] = {}

    def span(self, cat: str, name: str, t0: int, t1: int, args: dict[str, Any] | None = None) -> None:
        self.spans.append((cat, name, t0, t1, _ident(), args))

    def op_args(self, op: Any, ins: Sequence[Any], outs: Sequence[Any] | None, attrs: dict[str, Any]) -> Any:
        """The details asked for of one call of ``op`` (an OpDef) on tensors ``ins`` giving
        ``outs`` (None: not run, no flops), or None when none were asked for."""
        if not (self.shapes or self.flops):
            return None
        return self.details(
            op,
            [tuple(t.shape) for t in ins],
            [t.dtype for t in ins],
            None if outs is None else [tuple(o.shape) for o in outs],
            attrs,
            {},
        )

    def details(
        self,
        op: Any,
        in_shapes: Sequence[tuple[int, ...]],
        in_dtypes: Sequence[Any],
        out_shapes: Sequence[tuple[int, ...]] | None,
        attrs: dict[str, Any],
        args: dict[str, Any],
    ) -> dict[str, Any]:
        """``args`` with the details asked for of one call of ``op`` (an OpDef, or None for an
        op the core does not define, a compiler's fused group: no count): ``input_shapes`` and
        ``input_dtypes``; ``flops`` from the OpDef's ``flops`` field (0 without one; none when
        ``out_shapes`` is None: the op did not run)."""
        if self.shapes:
            args["input_shapes"] = [list(s) for s in in_shapes]
            args["input_dtypes"] = [str(d) for d in in_dtypes]
        if self.flops and out_shapes is not None and op is not None:
            fn = op.flops
            args["flops"] = 0 if fn is None else int(fn(list(in_shapes), list(out_shapes), attrs))
        return args

    # -- memory -------------------------------------------------------------------------
    def watch(self, alloc: Any, nbytes: int, allocated: bool) -> None:
        """``allocator.WATCH``: one allocation (or free) of ``nbytes`` by ``alloc``."""
        dev = alloc.name
        p = self.peaks.get(dev)
        if p is None:  # first seen: what it held before this event
            before = alloc.allocated - nbytes if allocated else alloc.allocated + nbytes
            p = self.peaks[dev] = {
                "start_allocated": before,
                "start_reserved": alloc.reserved,
                "peak_allocated": before,
                "peak_reserved": alloc.reserved,
            }
        if alloc.allocated > p["peak_allocated"]:
            p["peak_allocated"] = alloc.allocated
        if alloc.reserved > p["peak_reserved"]:
            p["peak_reserved"] = alloc.reserved
        self.memory.append(
            (now(), dev, nbytes if allocated else -nbytes, alloc.allocated, alloc.reserved, self.cur)
        )

    # -- device spans -------------------------------------------------------------------
    def begin_launch(self, ctx: Any, device_type: str) -> Any:
        """A begin event recorded on ``ctx``'s stream (on a synchronous stream: the host clock's
        ns now), or None when this device gets no device spans (not asked for, or its runtime
        cannot make events)."""
        lane = self.lanes.get(id(ctx), _UNSEEN)
        if lane is _UNSEEN:
            lane = self._lane(ctx, device_type)
        if lane is None:
            return None
        if lane[3]:  # synchronous stream: the kernel runs inside the launching call
            return now()
        rt = lane[1]
        try:
            ev = rt.create_event(ctx.device_index)
            rt.record_event(ev, ctx.stream)
        except Exception as exc:  # noqa: BLE001 — events that stopped working: host spans only
            self.untimed[lane[2]] = f"{type(exc).__name__}: {exc}"
            self.lanes[id(ctx)] = None
            return None
        return ev

    def _lane(self, ctx: Any, device_type: str) -> tuple[Any, Any, str, bool] | None:
        """The first launch on kernel context ``ctx``: whether its device gets device spans,
        whether its stream is synchronous (host-timed: no events), and otherwise its reference
        event (the first on the device); kept per context for the next launches as ``(ctx,
        runtime, device key, synchronous)`` (``ctx`` held: its ``id`` stays its own)."""
        want = self.wants.get(device_type)
        if want is None:
            want = self.wants[device_type] = bool(self.device_events(device_type))
        key = f"{device_type}:{ctx.device_index}"
        if not want or key in self.untimed:
            self.lanes[id(ctx)] = None
            return None
        rt = ctx.runtime
        try:  # a runtime that is no DeviceRuntime, or whose answer fails: its events
            sync = bool(rt.synchronous_stream(ctx.stream))
        except Exception:  # noqa: BLE001
            sync = False
        lane = (ctx, rt, key, sync)
        if not lane[3] and key not in self.refs:
            try:
                ref = rt.create_event(ctx.device_index)
                t = now()
                rt.record_event(ref, ctx.stream)
                self.refs[key] = (rt, ref, (t + now()) // 2)  # NOTE: placed to +-half the record's time
            except Exception as exc:  # noqa: BLE001 — a runtime without events: host spans only
                self.untimed[key] = f"{type(exc).__name__}: {exc}"
                lane = None
        self.lanes[id(ctx)] = lane
        return lane

    def end_launch(
        self, ctx: Any, device_type: str, ev0: Any, name: str, args: dict[str, Any] | None
    ) -> None:
        _, rt, key, sync = self.lanes[id(ctx)]
        if sync:
            self.host_launches.append((key, name, ev0, now(), 0, args))
            return
        ev1 = rt.create_event(ctx.device_index)
        rt.record_event(ev1, ctx.stream)
        self.launches.append((name, key, rt, ev0, ev1, _ident(), args))

    def device_spans(self) -> list[tuple[str, str, int, int, int, dict[str, Any] | None]]:
        """The launches as device spans ``(device key, name, start ns, end ns, 0, args)`` on the
        host clock (waits for every event; those on synchronous streams were timed on it)."""
        out = list(self.host_launches)
        for name, key, rt, ev0, ev1, _tid, args in self.launches:
            if key in self.untimed:
                continue
            _, ref, ref_ns = self.refs[key]
            try:
                start = ref_ns + int(rt.elapsed_ms(ref, ev0) * 1e6)
                dur = int(rt.elapsed_ms(ev0, ev1) * 1e6)
            except Exception as exc:  # noqa: BLE001 — events that cannot be timed: say so once
                self.untimed[key] = f"{type(exc).__name__}: {exc}"
                continue
            out.append((key, name, start, start + max(dur, 0), 0, args))
        return out


def start(rec: Recording) -> None:
    """Make ``rec`` the recording every hooked path writes to."""
    global ACTIVE, _REC
    _REC = rec
    ACTIVE = True
    if rec.memory_on:
        _allocator.WATCH = rec.watch


def stop() -> Recording | None:
    """End the running recording and return it (None when none ran)."""
    global ACTIVE, _REC
    rec, _REC, ACTIVE = _REC, None, False
    _allocator.WATCH = None
    if rec is not None:
        rec.end_ns = now()
    return rec


def current() -> Recording | None:
    """The running recording, or None."""
    return _REC


def span(cat: str, name: str, t0: int, args: dict[str, Any] | None = None) -> None:
    """Close a span begun at ``t0`` (``now()``) in the running recording, if one runs."""
    rec = _REC
    if rec is not None:
        rec.span(cat, name, t0, now(), args)


def end_launch(ctx: Any, device_type: str, ev0: Any, name: str, args: dict[str, Any] | None = None) -> None:
    """Close the device span begun by :func:`begin_launch` (the kernel ``name``)."""
    rec = _REC
    if rec is not None:
        rec.end_launch(ctx, device_type, ev0, name, args)


def begin_launch(ctx: Any, device_type: str) -> Any:
    """The running recording's begin event for a launch on ``ctx`` (None: no device span)."""
    rec = _REC
    return None if rec is None else rec.begin_launch(ctx, device_type)


def instructions(
    bound: Sequence[Callable[[], Any]],
    names: Sequence[str],
    ctxs: Sequence[Any],
    device_type: str,
    program: str,
    details: Callable[[int, Recording], dict[str, Any]] | None = None,
) -> list[Callable[[], Any]]:
    """The executor's bound instructions, each wrapped in an instruction span (and, where
    ``ctxs[k]`` is a kernel context, a device span from the runtime's events, named by the
    args' ``kernel``: ``plugin/op/dtype``); ``details(k, recording)`` gives instruction ``k``'s
    args (default: its program and index). Allocations while one runs are its own. Built
    per profiled run."""
    rec = _REC
    if rec is None:
        return list(bound)

    def wrap(k: int, f: Callable[[], Any]) -> Callable[[], Any]:
        name = names[k]
        ctx = ctxs[k]
        args = details(k, rec) if details is not None else {"program": program, "index": k}
        kname = args.get("kernel", name)

        def run() -> None:
            t0 = now()
            ev0 = rec.begin_launch(ctx, device_type) if ctx is not None else None
            outer, rec.cur = rec.cur, name
            try:
                f()
            finally:
                rec.cur = outer
            if ev0 is not None:
                rec.end_launch(ctx, device_type, ev0, kname, args)
            rec.span(INSTRUCTION, name, t0, now(), args)

        return run

    return [wrap(k, f) for k, f in enumerate(bound)]
