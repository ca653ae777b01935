"""Per-kernel device time from OpenCL event profiling.

With ``OARLOCK_OPENCL_PROFILE=1`` every kernel launch of the plugin (its own kernels and those
the compiler generates) keeps its event; at exit a table goes to stderr, slowest first::

    [opencl] kernel time by kernel (OpenCL event profiling, end - start of each launch)
      kernel                                   launches   total ms    mean us
      matmul_strided                                530     148.21      279.6
      ...

Queues are created with profiling enabled anyway; what this adds is a wait on each event
when its time is read (every 4096 launches, and at exit), so timings of the program itself
are not representative while it is on. :func:`table` and :func:`reset` serve scripts that
profile one region (e.g. one training step).
"""

from __future__ import annotations

import atexit
import os
import sys
from typing import Any, TextIO

import pyopencl as cl

ENABLED = os.environ.get("OARLOCK_OPENCL_PROFILE", "") == "1"
_FOLD = 4096  #: launches kept unread before their events are waited for and summed

_pending: list[tuple[str, Any]] = []
_totals: dict[str, list[int]] = {}  #: kernel name -> [launches, nanoseconds]


def enqueue(queue: Any, kernel: Any, grid: Any, local: Any) -> Any:
    """``cl.enqueue_nd_range_kernel`` that keeps the launch's event for :func:`table`."""
    evt = cl.enqueue_nd_range_kernel(queue, kernel, grid, local)
    if not _pending and not _totals:
        atexit.register(report)
    _pending.append((kernel.function_name, evt))
    if len(_pending) >= _FOLD:
        _fold()
    return evt


def _fold() -> None:
    for name, evt in _pending:
        evt.wait()
        t = _totals.setdefault(name, [0, 0])
        t[0] += 1
        t[1] += evt.profile.end - evt.profile.start
    _pending.clear()


def table() -> list[tuple[str, int, float]]:
    """(kernel, launches, total ms) of every launch since the start or :func:`reset`, slowest
    first (waits for the launches still queued)."""
    _fold()
    rows = [(name, n, ns * 1e-6) for name, (n, ns) in _totals.items()]
    return sorted(rows, key=lambda r: -r[2])


def reset() -> None:
    """Forget the launches so far (those still queued included)."""
    _pending.clear()
    _totals.clear()


def report(file: TextIO | None = None) -> None:
    """Print :func:`table` (to stderr by default)."""
    rows = table()
    if not rows:
        return
    out = file or sys.stderr
    print("[opencl] kernel time by kernel (OpenCL event profiling, end - start of each launch)", file=out)
    print(f"  {'kernel':<40} {'launches':>8} {'total ms':>10} {'mean us':>10}", file=out)
    for name, n, ms in rows:
        print(f"  {name:<40} {n:>8} {ms:>10.2f} {ms * 1e3 / n:>10.1f}", file=out)
