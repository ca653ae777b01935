"""``Profiler``, its scheduler and states, ``RecordEvent``: Paddle's ``paddle.profiler`` API over
Oarlock's span recording (``framework/_src/profiling.py``)."""

from __future__ import annotations

import datetime
import os
import socket
import warnings
from collections.abc import Callable, Iterable
from contextlib import ContextDecorator
from enum import Enum
from types import TracebackType
from typing import Any

from adapter_api import OpArgumentError

from .._src import profiling as _rec
from .result import ProfilerResult, SortedKeys, SummaryView


class ProfilerState(Enum):
    """The state a scheduler gives each step.

    - ``CLOSED``: nothing recorded; ``READY``: about to record (nothing recorded yet);
    - ``RECORD``: spans recorded; ``RECORD_AND_RETURN``: the last recorded step of a period,
      after which ``on_trace_ready`` gets the result.

    Example:
        >>> import framework as fw
        >>> fw.profiler.make_scheduler(closed=1, ready=0, record=1)(0)
        <ProfilerState.CLOSED: 0>
    """

    CLOSED = 0
    READY = 1
    RECORD = 2
    RECORD_AND_RETURN = 3


class ProfilerTarget(Enum):
    """What a :class:`Profiler` records.

    - ``CPU``: host spans (every eager op, composite, backward node, program instruction,
      :class:`RecordEvent` and step); always recorded.
    - ``GPU``: device spans of kernels on ``cuda`` devices, from the runtime's events.
    - ``CUSTOM_DEVICE``: device spans of kernels on every other plugin's devices (``cpu``,
      ``opencl``, a vendor's), from the runtime's events.
    - ``XPU``: not offered (warned and dropped, as Paddle does for an unsupported target).

    Example:
        >>> import framework as fw
        >>> fw.profiler.ProfilerTarget.CPU.name
        'CPU'
    """

    CPU = 0
    GPU = 1
    XPU = 2
    CUSTOM_DEVICE = 3


class TracerEventType(Enum):
    """Kinds of span, as Paddle names them (``RecordEvent``'s ``event_type``).

    Example:
        >>> import framework as fw
        >>> fw.profiler.TracerEventType.PythonUserDefined.value
        'UserDefined'
    """

    Operator = _rec.OPERATOR
    Kernel = _rec.KERNEL
    ProfileStep = _rec.STEP
    Backward = _rec.BACKWARD
    Forward = "Forward"
    Optimization = "Optimization"
    Dataloader = "Dataloader"
    Communication = "Communication"
    UserDefined = _rec.USER
    PythonUserDefined = _rec.USER


def make_scheduler(
    *, closed: int, ready: int, record: int, repeat: int = 0, skip_first: int = 0
) -> Callable[[int], ProfilerState]:
    """A scheduler: after ``skip_first`` steps, periods of ``closed`` steps, ``ready`` steps and
    ``record`` steps (the last of them ``RECORD_AND_RETURN``), ``repeat`` times (0: forever).

    Args:
        closed (int): steps not recorded at the start of each period.
        ready (int): steps prepared but not recorded.
        record (int): steps recorded (at least 1).
        repeat (int): periods (0: until the profiler stops).
        skip_first (int): steps skipped before the first period.

    Returns:
        Callable[[int], ProfilerState]: the state of step ``n``.

    Example:
        >>> import framework as fw
        >>> s = fw.profiler.make_scheduler(closed=1, ready=1, record=2, repeat=1)
        >>> [s(i).name for i in range(5)]
        ['CLOSED', 'READY', 'RECORD', 'RECORD_AND_RETURN', 'CLOSED']
    """
    for name, v, least in (("closed", closed, 0), ("ready", ready, 0), ("record", record, 1)):
        if not isinstance(v, int) or v < least:
            raise OpArgumentError(f"[profiler] make_scheduler: {name} must be an int >= {least}, got {v!r}")
    if repeat < 0 or skip_first < 0:
        raise OpArgumentError(
            f"[profiler] make_scheduler: repeat and skip_first must be >= 0, got {repeat}, {skip_first}"
        )
    period = closed + ready + record

    def state(step: int) -> ProfilerState:
        if step < skip_first:
            return ProfilerState.CLOSED
        step -= skip_first
        if repeat > 0 and step // period >= repeat:
            return ProfilerState.CLOSED
        m = step % period
        if m < closed:
            return ProfilerState.CLOSED
        if m < closed + ready:
            return ProfilerState.READY
        return ProfilerState.RECORD if m < period - 1 else ProfilerState.RECORD_AND_RETURN

    return state


def _range_scheduler(start: int, end: int) -> Callable[[int], ProfilerState]:
    """Paddle's ``scheduler=(start, end)``: record steps ``start .. end-1``, once."""
    if not (isinstance(start, int) and isinstance(end, int) and end > start >= 0):
        raise OpArgumentError(
            f"[profiler] scheduler=(start, end) needs 0 <= start < end, got ({start!r}, {end!r})"
        )
    if start >= 1:
        return make_scheduler(closed=start - 1, ready=1, record=end - start, repeat=1)
    return make_scheduler(closed=0, ready=0, record=end - start, repeat=1)


def _always(step: int) -> ProfilerState:
    return ProfilerState.RECORD


def export_chrome_tracing(dir_name: str, worker_name: str | None = None) -> Callable[[Profiler], None]:
    """An ``on_trace_ready`` that writes each result as Chrome-trace JSON into ``dir_name``
    (``{worker_name}_time_{stamp}.paddle_trace.json``; ``worker_name`` defaults to
    ``host_{hostname}pid_{pid}``, as Paddle names it). Perfetto (ui.perfetto.dev) and
    chrome://tracing open it.

    Example:
        >>> import framework as fw, tempfile, os
        >>> d = tempfile.mkdtemp()
        >>> with fw.profiler.Profiler(on_trace_ready=fw.profiler.export_chrome_tracing(d)):
        ...     _ = fw.ones([4]) + 1
        >>> [f.endswith(".paddle_trace.json") for f in os.listdir(d)]
        [True]
    """
    try:
        os.makedirs(dir_name, exist_ok=True)
    except OSError as exc:
        raise OpArgumentError(f"[profiler] cannot create the trace directory {dir_name!r}: {exc}") from exc

    def handle(prof: Profiler) -> None:
        name = worker_name or f"host_{socket.gethostname()}pid_{os.getpid()}"
        stamp = datetime.datetime.now().strftime("%Y_%m_%d_%H_%M_%S_%f")
        prof.export(os.path.join(dir_name, f"{name}_time_{stamp}.paddle_trace.json"), "json")

    return handle


class RecordEvent(ContextDecorator):
    """A span of your own in the profile: a context manager, a decorator, or ``begin()`` /
    ``end()``; recorded only while a :class:`Profiler` records.

    Args:
        name (str): the span's name in the trace and the summary.
        event_type (TracerEventType): its kind (``PythonUserDefined`` by default).

    Example:
        >>> import framework as fw
        >>> with fw.profiler.Profiler(on_trace_ready=lambda p: None) as prof:
        ...     with fw.profiler.RecordEvent("my_block"):
        ...         _ = fw.ones([4]) * 2
        >>> [e.name for e in prof.profiler_result.events if e.cat == "UserDefined"]
        ['my_block']
    """

    def __init__(self, name: str, event_type: TracerEventType = TracerEventType.PythonUserDefined) -> None:
        if not isinstance(name, str) or not name:
            raise OpArgumentError(f"[profiler] RecordEvent needs a non-empty name, got {name!r}")
        self.name = name
        self.event_type = event_type
        self._t0: int | None = None

    def __enter__(self) -> RecordEvent:
        self.begin()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.end()

    def begin(self) -> None:
        """Start the span (a no-op while no profiler records)."""
        self._t0 = _rec.now() if _rec.ACTIVE else None

    def end(self) -> None:
        """End the span begun by :meth:`begin`."""
        if self._t0 is not None:
            _rec.span(self.event_type.value, self.name, self._t0)
            self._t0 = None


class Profiler:
    """Record where time goes: host spans per eager op, composite, backward node, program
    instruction and :class:`RecordEvent`; device spans per kernel from the plugins' events.

    Args:
        targets (Iterable[ProfilerTarget] | None): what to record (default: CPU, GPU and
            CUSTOM_DEVICE: host spans and every device's kernel spans).
        scheduler (Callable[[int], ProfilerState] | tuple[int, int] | None): the state of each
            step; ``(start, end)`` records steps ``start .. end-1``; None records from
            :meth:`start` to :meth:`stop`.
        on_trace_ready (Callable[[Profiler], None] | None): called with the profiler after each
            recorded period (default: :func:`export_chrome_tracing` into ``./profiler_log/``).
        record_shapes (bool): each op's (and program instruction's) input shapes and dtypes
            in its span's args (the trace) and an ``Input Shapes`` column in the summary, one
            row per op and shapes.
        profile_memory (bool): every allocation and free of the devices' allocators, the op
            that made it and each device's peak (:attr:`ProfilerResult.memory`,
            :attr:`ProfilerResult.peaks`; a memory counter in the trace; the summary's
            ``MemoryView``). Sizes are the allocator's blocks (rounded up to 512 bytes).
        with_flops (bool): each op's floating-point operations, from its definition (2·M·N·K
            for a product; one per element for element-wise ops and reductions; 0 for data
            movement), in its span's args and a ``FLOPs`` column in the summary.
        timer_only (bool): only time steps (:meth:`step_info`), record no spans.
        custom_device_types (list[str]): with ``CUSTOM_DEVICE``, only these device types.
        emit_nvtx (bool): accepted for Paddle's signature; no NVTX ranges are emitted.

    Example:
        >>> import framework as fw
        >>> x = fw.ones([16])
        >>> with fw.profiler.Profiler(scheduler=(1, 3), on_trace_ready=lambda p: None) as prof:
        ...     for _ in range(4):
        ...         _ = x + x
        ...         prof.step()
        >>> r = prof.profiler_result
        >>> sorted({e.name for e in r.events if e.cat == "ProfileStep"})
        ['ProfileStep#1', 'ProfileStep#2']
        >>> sum(1 for e in r.events if e.cat == "Operator" and e.name == "add")
        2
        >>> with fw.profiler.Profiler(record_shapes=True, with_flops=True, profile_memory=True,
        ...                           on_trace_ready=lambda p: None) as prof:
        ...     _ = fw.ones([8, 4]) @ fw.ones([4, 2])
        >>> [(e.args["input_shapes"], e.args["flops"]) for e in prof.profiler_result.events if e.name == "matmul"]
        [([[8, 4], [4, 2]], 128)]
    """

    def __init__(
        self,
        *,
        targets: Iterable[ProfilerTarget] | None = None,
        scheduler: Callable[[int], ProfilerState] | tuple[int, int] | None = None,
        on_trace_ready: Callable[[Profiler], None] | None = None,
        record_shapes: bool = False,
        profile_memory: bool = False,
        timer_only: bool = False,
        emit_nvtx: bool = False,
        custom_device_types: list[str] | None = None,
        with_flops: bool = False,
    ) -> None:
        wanted = (
            set(targets)
            if targets
            else {ProfilerTarget.CPU, ProfilerTarget.GPU, ProfilerTarget.CUSTOM_DEVICE}
        )
        for t in wanted:
            if not isinstance(t, ProfilerTarget):
                raise OpArgumentError(f"[profiler] targets must be ProfilerTarget members, got {t!r}")
        if ProfilerTarget.XPU in wanted:
            warnings.warn(
                "[profiler] Profiling ProfilerTarget.XPU is not supported; it is dropped", stacklevel=2
            )
            wanted.discard(ProfilerTarget.XPU)
        self.targets = wanted
        self._custom = set(custom_device_types or [])
        if callable(scheduler):
            self.scheduler = scheduler
        elif isinstance(scheduler, (tuple, list)):
            if len(scheduler) != 2:
                raise OpArgumentError(f"[profiler] scheduler=(start, end) takes two steps, got {scheduler!r}")
            self.scheduler = _range_scheduler(*scheduler)
        elif scheduler is None:
            self.scheduler = _always
        else:
            raise OpArgumentError(
                f"[profiler] scheduler must be a callable, a (start, end) pair or None, got {scheduler!r}"
            )
        self.on_trace_ready = (
            on_trace_ready if on_trace_ready is not None else export_chrome_tracing("./profiler_log/")
        )
        self.timer_only = timer_only
        self.record_shapes, self.profile_memory, self.with_flops = record_shapes, profile_memory, with_flops
        self.emit_nvtx = emit_nvtx
        self.step_num = 0
        self.previous_state = ProfilerState.CLOSED
        self.current_state = self.scheduler(0)
        self.profiler_result: ProfilerResult | None = None
        self._step_t0: int | None = None
        self._running = False
        self._times: list[float] = []  # seconds of each step since the last step_info
        self._samples: list[int] = []

    # -- what is recorded ----------------------------------------------------------------
    def _device_events(self, device_type: str) -> bool:
        if device_type == "cuda":
            return ProfilerTarget.GPU in self.targets
        if ProfilerTarget.CUSTOM_DEVICE not in self.targets:
            return False
        return not self._custom or device_type in self._custom

    def _open(self) -> None:
        if _rec.current() is not None:
            raise OpArgumentError(
                "[profiler] another Profiler is already recording; stop it before starting this one"
            )
        _rec.start(
            _rec.Recording(self._device_events, self.record_shapes, self.with_flops, self.profile_memory)
        )

    def _close(self) -> None:
        rec = _rec.stop()
        if rec is not None:
            self.profiler_result = ProfilerResult.from_recording(rec)

    @staticmethod
    def _records(state: ProfilerState) -> bool:
        return state in (ProfilerState.RECORD, ProfilerState.RECORD_AND_RETURN)

    # -- control -------------------------------------------------------------------------
    def __enter__(self) -> Profiler:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def start(self) -> None:
        """Enter step 0 in the scheduler's state for it (recording when it says so).

        Example:
            >>> import framework as fw
            >>> p = fw.profiler.Profiler(on_trace_ready=lambda p: None)
            >>> p.start(); _ = fw.ones([2]) + 1; p.stop()
            >>> any(e.name == "add" for e in p.profiler_result.events)
            True
        """
        self._running = True
        self._step_t0 = _rec.now()
        if self.timer_only:
            return
        if self._records(self.current_state):
            self._open()

    def stop(self) -> None:
        """End the last step; a recording period in progress ends and goes to ``on_trace_ready``.

        Example:
            >>> import framework as fw
            >>> p = fw.profiler.Profiler(on_trace_ready=lambda p: None)
            >>> p.start(); p.stop(); p.profiler_result is not None
            True
        """
        if not self._running:
            return
        self._end_step()
        self._running = False
        if self.timer_only:
            return
        if self.current_state == ProfilerState.READY:
            warnings.warn("[profiler] stopped in a READY step: nothing was recorded", stacklevel=2)
        if _rec.current() is not None:
            self._close()
            if self.on_trace_ready:
                self.on_trace_ready(self)

    def _end_step(self) -> None:
        t1 = _rec.now()
        if self._step_t0 is not None:
            self._times.append((t1 - self._step_t0) * 1e-9)
            if _rec.ACTIVE:
                _rec.current().span(_rec.STEP, f"ProfileStep#{self.step_num}", self._step_t0, t1)  # type: ignore[union-attr]
        self._step_t0 = _rec.now()

    def step(self, num_samples: int | None = None) -> None:
        """Mark the end of a step: the scheduler's state for the next one starts or ends recording.

        Args:
            num_samples (int | None): the step's batch size, for :meth:`step_info`'s throughput.

        Example:
            >>> import framework as fw
            >>> with fw.profiler.Profiler(scheduler=(0, 1), on_trace_ready=lambda p: None) as p:
            ...     p.step()
            >>> p.step_num
            1
        """
        self._end_step()
        if num_samples is not None:
            self._samples.append(num_samples)
        self.previous_state = self.current_state
        self.step_num += 1
        self.current_state = self.scheduler(self.step_num)
        if self.timer_only:
            return
        was, now = self._records(self.previous_state), self._records(self.current_state)
        period_ends = self.previous_state == ProfilerState.RECORD_AND_RETURN
        if was and (period_ends or not now):
            if not period_ends:
                warnings.warn(
                    f"[profiler] schedule goes {self.previous_state.name} -> {self.current_state.name}: "
                    f"the recorded steps are dropped",
                    stacklevel=2,
                )
                _rec.stop()
            else:
                self._close()
                if self.on_trace_ready:
                    self.on_trace_ready(self)
        if now and _rec.current() is None:
            self._open()
        self._step_t0 = _rec.now()

    def step_info(self, unit: str | None = None) -> str:
        """Mean step time and throughput of the steps since the last call.

        Example:
            >>> import framework as fw
            >>> with fw.profiler.Profiler(timer_only=True) as p:
            ...     p.step(num_samples=8)
            >>> p.step_info().startswith("batch_cost:")
            True
        """
        times, samples = self._times, self._samples
        self._times, self._samples = [], []
        if not times:
            return "batch_cost: no step finished"
        mean = sum(times) / len(times)
        per = (sum(samples) / len(samples)) if samples else 1
        what = (unit or "samples") if samples else "steps"
        return f"batch_cost: {mean:.5f} s, ips: {per / mean if mean else float('inf'):.3f} {what}/s"

    def export(self, path: str = "", format: str = "json") -> None:
        """Write the last result to ``path`` (``format="json"``: Chrome trace).

        Example:
            >>> import framework as fw, tempfile, os, json
            >>> p = fw.profiler.Profiler(on_trace_ready=lambda p: None)
            >>> p.start(); _ = fw.ones([2]) + 1; p.stop()
            >>> f = os.path.join(tempfile.mkdtemp(), "t.json"); p.export(f)
            >>> "traceEvents" in json.load(open(f))
            True
        """
        if self.profiler_result is not None:
            self.profiler_result.save(path, format)

    def summary(
        self,
        sorted_by: SortedKeys = SortedKeys.CPUTotal,
        op_detail: bool = True,
        thread_sep: bool = False,
        time_unit: str = "ms",
        views: SummaryView | list[SummaryView] | None = None,
    ) -> None:
        """Print the tables of the last result: overview, operators, kernels, program
        instructions, backward nodes and your own events (calls, total, mean, min, max, % of
        the recorded steps; FLOPs and input shapes when recorded), and memory when profiled.

        Example:
            >>> import framework as fw
            >>> with fw.profiler.Profiler(on_trace_ready=lambda p: None) as p:
            ...     _ = fw.ones([4]) + 1
            >>> p.summary(views=fw.profiler.SummaryView.OperatorView)  # doctest: +ELLIPSIS
            ---...Operator Summary...
        """
        if self.profiler_result is not None:
            print(self.profiler_result.table(sorted_by=sorted_by, time_unit=time_unit, views=views))
