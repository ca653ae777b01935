"""``fw.profiler``: where a step's time goes, with Paddle's ``paddle.profiler`` API.

Host spans for every eager op, composite, backward node and program instruction (the
executor's), device spans for every kernel from the plugin's own events (``cpu``, OpenCL
profiling events, CUDA events), kernels named as the plugin registered them
(``plugin/op/dtype``), the compiler's fused groups named with their ops. Results go to
Chrome-trace JSON (open it at https://ui.perfetto.dev) and to summary tables. When no profiler
records, the cost is one flag read per op.

Example:
    >>> import framework as fw
    >>> import framework.profiler as profiler
    >>> x = fw.ones([16])
    >>> with profiler.Profiler(targets=[profiler.ProfilerTarget.CPU], scheduler=(1, 3),
    ...                        on_trace_ready=lambda p: None) as prof:
    ...     for step in range(4):
    ...         with profiler.RecordEvent("my_step_body"):
    ...             y = (x + x) * x
    ...         prof.step()
    >>> rows = {r[0]: r[1] for r in prof.profiler_result.rows("Operator")}
    >>> rows["add"], rows["mul"]
    (2, 2)

See docs/profiler.md.
"""

from .profiler import (
    Profiler,
    ProfilerState,
    ProfilerTarget,
    RecordEvent,
    TracerEventType,
    export_chrome_tracing,
    make_scheduler,
)
from .result import ProfilerResult, SortedKeys, SummaryView, load_profiler_result

__all__ = [
    "Profiler",
    "ProfilerResult",
    "ProfilerState",
    "ProfilerTarget",
    "RecordEvent",
    "SortedKeys",
    "SummaryView",
    "TracerEventType",
    "export_chrome_tracing",
    "load_profiler_result",
    "make_scheduler",
]
