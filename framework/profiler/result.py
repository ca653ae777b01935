"""What a profiling period recorded: its events, as Chrome-trace JSON and as summary tables."""

from __future__ import annotations

import json
import os
import statistics
import threading
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from adapter_api import OpArgumentError

from .._src import profiling as _rec


class SortedKeys(Enum):
    """How :meth:`Profiler.summary` orders rows: by host (CPU*) or device (GPU*) time.

    Example:
        >>> import framework as fw
        >>> fw.profiler.SortedKeys.CPUTotal.name
        'CPUTotal'
    """

    CPUTotal = 0
    CPUAvg = 1
    CPUMax = 2
    CPUMin = 3
    GPUTotal = 4
    GPUAvg = 5
    GPUMax = 6
    GPUMin = 7


class SummaryView(Enum):
    """The tables :meth:`Profiler.summary` can print (Paddle's names; Oarlock prints
    ``OverView``, ``OperatorView`` (operators, composites, backward nodes, program
    instructions), ``KernelView``, ``UDFView`` and, with ``profile_memory``, ``MemoryView``;
    the others print nothing).

    Example:
        >>> import framework as fw
        >>> fw.profiler.SummaryView.KernelView.value
        4
    """

    DeviceView = 0
    OverView = 1
    ModelView = 2
    DistributedView = 3
    KernelView = 4
    OperatorView = 5
    MemoryView = 6
    MemoryManipulationView = 7
    UDFView = 8


#: the host categories each view's tables show, with their titles
_HOST_TABLES = {
    SummaryView.OperatorView: [
        (_rec.OPERATOR, "Operator Summary (eager primitives: kernel, allocation, autograd record)"),
        (_rec.COMPOSITE, "Composite Summary (fused kernel, generated kernel or decomposition)"),
        (_rec.BACKWARD, "Backward Summary (gradient rule of each autograd node)"),
        (_rec.INSTRUCTION, "Program Instruction Summary (the executor's instructions)"),
        (_rec.TRACED, "Traced Op Summary (ops recorded into programs, not run)"),
    ],
    SummaryView.UDFView: [(_rec.USER, "UserDefined Summary (RecordEvent)")],
}
_UNITS = {"s": 1e9, "ms": 1e6, "us": 1e3, "ns": 1.0}


@dataclass
class Event:
    """One span: ``track`` is ``"host"`` or the device (``"cpu:0"``); times in ns on the
    host's ``perf_counter_ns`` clock."""

    cat: str
    name: str
    start_ns: int
    end_ns: int
    tid: int
    track: str = "host"
    args: dict[str, Any] | None = field(default=None)

    @property
    def dur_ns(self) -> int:
        return self.end_ns - self.start_ns


@dataclass
class MemoryEvent:
    """One allocation (``bytes`` > 0) or free (``bytes`` < 0) of a device's allocator, the
    device's allocated and reserved bytes after it, and the op (or program instruction) that
    ran then ("" outside any)."""

    ns: int
    device: str
    bytes: int
    allocated: int
    reserved: int
    op: str


def fused_groups(names: set[str]) -> dict[str, str]:
    """``{"fused.g..": "op, op, ..."}``: the ops of each compiler fusion group among ``names``."""
    if not any(n.startswith("fused.") for n in names):
        return {}
    from ..ir.passes import fusion, horizontal

    def ops(name: str) -> str:
        g = fusion.GROUPS.get(name)
        if g is not None:
            names = [op.name.split(".", 1)[-1] for op in g.body.block.ops]
            return _runs([n for n in names if n not in ("return", "constant")])
        h = horizontal.HGROUPS.get(name)  # a merged op: its parts, each in brackets
        return "" if h is None else _runs([f"[{ops(op.name)}]" for op in h.parts], " ")

    return {n: ops(n) for n in names if n.startswith("fused.") and ops(n)}


def _runs(items: list[str], sep: str = ", ") -> str:
    """``a, b, b, b`` as ``a, b x3``: a group's ops (or a merged op's parts) in a line."""
    out: list[str] = []
    i = 0
    while i < len(items):
        j = i
        while j < len(items) and items[j] == items[i]:
            j += 1
        out.append(items[i] if j - i == 1 else f"{items[i]} x{j - i}")
        i = j
    return sep.join(out)


class ProfilerResult:
    """The events of one recorded period; :meth:`save` writes them as Chrome-trace JSON,
    :meth:`table` as the summary tables.

    Example:
        >>> import framework as fw
        >>> with fw.profiler.Profiler(on_trace_ready=lambda p: None) as p:
        ...     _ = fw.ones([4]) + 1
        >>> r = p.profiler_result
        >>> [e.name for e in r.events if e.cat == "Operator"]
        ['add']
    """

    def __init__(
        self,
        events: list[Event],
        start_ns: int,
        end_ns: int,
        notes: dict[str, str] | None = None,
        memory: list[MemoryEvent] | None = None,
        peaks: dict[str, dict[str, int]] | None = None,
    ) -> None:
        self.events = sorted(events, key=lambda e: (e.start_ns, -e.end_ns))
        self.start_ns, self.end_ns = start_ns, end_ns
        self.notes = notes or {}  #: device -> why it has no device spans
        #: with ``profile_memory``: every allocation (bytes > 0) and free (bytes < 0), in order
        self.memory: list[MemoryEvent] = memory or []
        #: with ``profile_memory``: per device, the bytes allocated and reserved when first
        #: seen (``start_allocated``, ``start_reserved``), their peaks (``peak_allocated``,
        #: ``peak_reserved``) and ``peak_increase``, the peak above the start
        self.peaks: dict[str, dict[str, int]] = {
            d: {**p, "peak_increase": p["peak_allocated"] - p["start_allocated"]}
            for d, p in (peaks or {}).items()
        }
        self.groups = fused_groups({e.name for e in self.events})
        for e in self.events:
            if e.name in self.groups:
                e.args = dict(e.args or {}, ops=self.groups[e.name])

    @classmethod
    def from_recording(cls, rec: _rec.Recording) -> ProfilerResult:
        events = [Event(c, n, a, b, t, "host", x) for c, n, a, b, t, x in rec.spans]
        events += [Event(_rec.KERNEL, n, a, b, 0, dev, x) for dev, n, a, b, _t, x in rec.device_spans()]
        memory = [MemoryEvent(*m) for m in rec.memory]
        return cls(events, rec.start_ns, rec.end_ns, dict(rec.untimed), memory, rec.peaks)

    # -- Chrome trace --------------------------------------------------------------------
    def chrome_trace(self) -> dict[str, Any]:
        """The events as a Chrome-trace object (``traceEvents`` of complete ``"X"`` events,
        microseconds from the period's start; one process for the host, one per device)."""
        host_pid = os.getpid()
        devices = sorted({e.track for e in self.events if e.track != "host"})
        pids = {"host": host_pid, **{d: 1_000_000 + i for i, d in enumerate(devices)}}
        out: list[dict[str, Any]] = [
            {"ph": "M", "name": "process_name", "pid": host_pid, "tid": 0, "args": {"name": "host (python)"}}
        ]
        for d in devices:
            out.append(
                {"ph": "M", "name": "process_name", "pid": pids[d], "tid": 0, "args": {"name": f"device {d}"}}
            )
        tids: dict[int, int] = {}
        names = {t.ident: t.name for t in threading.enumerate()}
        for e in self.events:
            if e.track == "host" and e.tid not in tids:
                tids[e.tid] = len(tids) + 1
                out.append(
                    {
                        "ph": "M",
                        "name": "thread_name",
                        "pid": host_pid,
                        "tid": tids[e.tid],
                        "args": {"name": names.get(e.tid, f"thread {e.tid}")},
                    }
                )
        for e in self.events:
            ev = {
                "ph": "X",
                "cat": e.cat,
                "name": e.name,
                "pid": pids[e.track],
                "tid": tids.get(e.tid, 0) if e.track == "host" else 0,
                "ts": (e.start_ns - self.start_ns) / 1e3,
                "dur": e.dur_ns / 1e3,
            }
            if e.args:
                ev["args"] = e.args
            out.append(ev)
        for m in self.memory:  # Perfetto draws a counter track per device
            out.append(
                {
                    "ph": "C",
                    "name": f"Memory {m.device}",
                    "pid": host_pid,
                    "ts": (m.ns - self.start_ns) / 1e3,
                    "args": {"allocated": m.allocated, "reserved": m.reserved},
                }
            )
        return {"traceEvents": out, "displayTimeUnit": "ms", "otherData": {"producer": "oarlock fw.profiler"}}

    def save(self, path: str, format: str = "json") -> None:
        """Write the Chrome trace to ``path`` (only ``format="json"``)."""
        if format != "json":
            raise OpArgumentError(
                f"[profiler] export format {format!r} is not offered; use 'json' (Chrome trace)"
            )
        if not path:
            raise OpArgumentError("[profiler] export needs a file path")
        tmp = f"{path}.tmp{os.getpid()}"
        with open(tmp, "w") as f:
            json.dump(self.chrome_trace(), f)
        os.replace(tmp, path)

    # -- summary -------------------------------------------------------------------------
    def step_ns(self) -> int:
        """The recorded steps' total time (the whole period when no step was marked)."""
        steps = [e.dur_ns for e in self.events if e.cat == _rec.STEP]
        return sum(steps) if steps else max(self.end_ns - self.start_ns, 1)

    def rows(self, cat: str | None = None, track: str = "host") -> list[tuple[str, int, int, int, int]]:
        """``(name, calls, total ns, min ns, max ns)`` per name of the events of ``cat`` on
        ``track`` (any device for ``track="device"``)."""
        acc: dict[str, list[int]] = {}
        for e in self.events:
            if (cat is None or e.cat == cat) and (
                e.track == track or (track == "device" and e.track != "host")
            ):
                acc.setdefault(e.name, []).append(e.dur_ns)
        return [(n, len(v), sum(v), min(v), max(v)) for n, v in acc.items()]

    def detail_rows(
        self, cat: str, track: str = "host"
    ) -> list[tuple[str, int, int, int, int, int | None, str]]:
        """``(name, calls, total ns, min ns, max ns, flops, input shapes)`` per name and input
        shapes of the events of ``cat``: flops summed over the calls (None where none was
        recorded), shapes as ``[2, 3], [3]`` ("" where none were recorded)."""
        acc: dict[tuple[str, str], list[Any]] = {}
        for e in self.events:
            if e.cat == cat and e.track == track:
                a = e.args or {}
                shapes = ", ".join(str(list(s)) for s in a["input_shapes"]) if "input_shapes" in a else ""
                row = acc.setdefault((e.name, shapes), [[], None])
                row[0].append(e.dur_ns)
                if "flops" in a:
                    row[1] = (row[1] or 0) + a["flops"]
        return [(n, len(v), sum(v), min(v), max(v), f, sh) for (n, sh), (v, f) in acc.items()]

    def table(
        self,
        sorted_by: SortedKeys = SortedKeys.CPUTotal,
        time_unit: str = "ms",
        views: SummaryView | list[SummaryView] | None = None,
    ) -> str:
        """The summary as text (what :meth:`Profiler.summary` prints)."""
        if time_unit not in _UNITS:
            raise OpArgumentError(f"[profiler] time_unit must be one of {sorted(_UNITS)}, got {time_unit!r}")
        if isinstance(views, SummaryView):
            views = [views]
        given = views
        views = views or [
            SummaryView.OverView,
            SummaryView.OperatorView,
            SummaryView.KernelView,
            SummaryView.UDFView,
        ]
        div, step = _UNITS[time_unit], self.step_ns()
        parts = []
        if SummaryView.OverView in views:
            parts.append(self._overview(div, time_unit, step))
        for view in views:
            for cat, title in _HOST_TABLES.get(view, ()):
                rows = self.detail_rows(cat)
                if rows:
                    parts.append(_table(title, rows, sorted_by, div, time_unit, step))
        if SummaryView.KernelView in views:
            for dev in sorted({e.track for e in self.events if e.track != "host"}):
                rows = self.detail_rows(_rec.KERNEL, dev)
                parts.append(
                    _table(
                        f"Kernel Summary on {dev} (device time from its events)",
                        rows,
                        sorted_by,
                        div,
                        time_unit,
                        step,
                    )
                )
            for dev, why in sorted(self.notes.items()):
                parts.append(f"(no device spans on {dev}: {why})")
        if self.peaks and (SummaryView.MemoryView in views or given is None):
            parts.append(self._memory_table())
        if self.groups and SummaryView.OperatorView in views:
            parts.append(
                "Fused groups:\n" + "\n".join(f"  {n}: {ops}" for n, ops in sorted(self.groups.items()))
            )
        return "\n\n".join(parts)

    def _memory_table(self) -> str:
        """Per device (Paddle's ``Memory Summary - Place``): the peaks, then per op the
        allocations and frees made while it ran."""
        out = []
        for dev, p in sorted(self.peaks.items()):
            lines = ["-" * 30 + f" Memory Summary - {dev} " + "-" * 30]
            lines.append(
                f"Peak Allocated Memory: {p['peak_allocated']} B (at start {p['start_allocated']} B, "
                f"increase {p['peak_increase']} B)"
            )
            lines.append(f"Peak Reserved Memory: {p['peak_reserved']} B (at start {p['start_reserved']} B)")
            acc: dict[str, list[int]] = {}
            for m in self.memory:
                if m.device == dev:
                    r = acc.setdefault(m.op or "(outside ops)", [0, 0, 0, 0])
                    if m.bytes > 0:
                        r[0] += 1
                        r[2] += m.bytes
                    else:
                        r[1] += 1
                        r[3] -= m.bytes
            width = max([len(n) for n in acc] + [20])
            head = (
                f"{'Name':<{width}} {'Allocation Count':>16} {'Free Count':>10} {'Allocation Size':>15} "
                f"{'Free Size':>12} {'Increased Size':>14}"
            )
            lines += [head, "-" * len(head)]
            for n, (na, nf, sa, sf) in sorted(acc.items(), key=lambda kv: -kv[1][2]):
                lines.append(f"{n:<{width}} {na:>16} {nf:>10} {sa:>15} {sf:>12} {sa - sf:>14}")
            out.append("\n".join(lines))
        return "\n\n".join(out)

    def _overview(self, div: float, unit: str, step: int) -> str:
        steps = [e.dur_ns for e in self.events if e.cat == _rec.STEP]
        lines = ["-" * 30 + " Overview Summary " + "-" * 30]
        lines.append(f"recorded {(self.end_ns - self.start_ns) / div:.3f} {unit}; steps: {len(steps)}")
        if steps:
            lines.append(
                f"step time: total {sum(steps) / div:.3f} {unit}, mean {statistics.mean(steps) / div:.3f} {unit}"
            )
        for cat in (_rec.OPERATOR, _rec.COMPOSITE, _rec.BACKWARD, _rec.INSTRUCTION, _rec.USER):
            total = sum(r[2] for r in self.rows(cat))
            if total:
                lines.append(f"{cat:<12} {total / div:12.3f} {unit} ({100 * total / step:5.1f} % of step)")
        for dev in sorted({e.track for e in self.events if e.track != "host"}):
            total = sum(r[2] for r in self.rows(_rec.KERNEL, dev))
            lines.append(f"kernels on {dev}: {total / div:.3f} {unit} ({100 * total / step:5.1f} % of step)")
        return "\n".join(lines)


def _table(
    title: str,
    rows: list[tuple[str, int, int, int, int, int | None, str]],
    key: SortedKeys,
    div: float,
    unit: str,
    step: int,
) -> str:
    """One summary table; a ``FLOPs`` column where flops were recorded and an ``Input Shapes``
    column (one row per shapes) where shapes were."""
    sort = {
        "Total": lambda r: -r[2],
        "Avg": lambda r: -r[2] / r[1],
        "Max": lambda r: -r[4],
        "Min": lambda r: r[3],
    }[key.name[3:]]
    rows = sorted(rows, key=sort)
    flops = any(r[5] is not None for r in rows)
    shapes = any(r[6] for r in rows)
    width = max([len(r[0]) for r in rows] + [20])
    head = f"{'Name':<{width}} {'Calls':>7} {'Total(' + unit + ')':>12} {'Avg(' + unit + ')':>11} {'Min(' + unit + ')':>11} {'Max(' + unit + ')':>11} {'Ratio(%)':>9}"
    head += f" {'FLOPs':>14}" * flops + "  Input Shapes" * shapes
    lines = ["-" * 12 + f" {title} " + "-" * 12, head, "-" * len(head)]
    for name, n, total, lo, hi, f, sh in rows:
        line = f"{name:<{width}} {n:>7} {total / div:>12.4f} {total / n / div:>11.4f} {lo / div:>11.4f} {hi / div:>11.4f} {100 * total / step:>9.2f}"
        if flops:
            line += f" {'-' if f is None else f:>14}"
        if shapes:
            line += f"  {sh or '-'}"
        lines.append(line)
    return "\n".join(lines)


def load_profiler_result(filename: str) -> ProfilerResult:
    """Read a trace written by :func:`export_chrome_tracing` (or ``Profiler.export``) back.

    Example:
        >>> import framework as fw, tempfile, os
        >>> with fw.profiler.Profiler(on_trace_ready=lambda p: None) as p:
        ...     _ = fw.ones([4]) + 1
        >>> f = os.path.join(tempfile.mkdtemp(), "t.json"); p.export(f)
        >>> [e.name for e in fw.profiler.load_profiler_result(f).events if e.cat == "Operator"]
        ['add']
    """
    with open(filename) as f:
        data = json.load(f)
    procs = {
        e["pid"]: e["args"]["name"]
        for e in data["traceEvents"]
        if e.get("ph") == "M" and e["name"] == "process_name"
    }
    events = []
    for e in data["traceEvents"]:
        if e.get("ph") != "X":
            continue
        p = procs.get(e["pid"], "host")
        track = p[len("device ") :] if p.startswith("device ") else "host"
        t0 = int(e["ts"] * 1e3)
        events.append(
            Event(e["cat"], e["name"], t0, t0 + int(e["dur"] * 1e3), e["tid"], track, e.get("args"))
        )
    end = max((e.end_ns for e in events), default=0)
    return ProfilerResult(events, 0, end)
