"""Peak memory of a static function against the same call run eagerly.

Both are measured the same way, through the device's caching allocator
(``fw.memory_stats``): the peak of allocated bytes during one call above what was allocated
before it. The static figure adds what the function's executors keep allocated between calls
(the liveness-planned intermediates and a captured graph's buffers, counted as the allocator
rounds them), which are allocated before the measured call.
"""

from __future__ import annotations

import gc
from typing import Any

from .._src import device as _dev
from .._src.tensor import Tensor
from .api import StaticFunction


def _static_of(fn: Any) -> StaticFunction:
    if isinstance(fn, StaticFunction):
        return fn
    fwd = getattr(fn, "forward", None)
    if isinstance(fwd, StaticFunction):
        return fwd
    raise TypeError(
        f"[memory_report] expected a function or Layer converted by fw.jit.to_static, got {type(fn).__name__}"
    )


def memory_report(fn: Any, *args: Tensor, backward: bool = False) -> dict[str, int]:
    """Peak bytes of ``fn(*args)`` (a :func:`~framework.jit.to_static` function or Layer)
    run as a program and run eagerly (its original Python), on the arguments' device.

    With ``backward=True`` the call is followed by ``out.backward()`` in both (``out`` a
    scalar loss), and the parameters' gradients are cleared before each measurement.
    The function runs three times as a program (two warm-up calls build the plan and, where
    the runtime offers it, capture the graph) and once eagerly; a training step inside it
    steps the optimizer each time.

    >>> import framework as fw
    >>> f = fw.jit.to_static(lambda x: (x.exp() * 2).sum())
    >>> r = fw.jit.memory_report(f, fw.ones([256]))
    >>> sorted(r)
    ['eager_peak_bytes', 'static_held_bytes', 'static_peak_bytes', 'static_run_bytes']

    Returns ``eager_peak_bytes``; ``static_run_bytes`` (the peak during the call above what
    was allocated before), ``static_held_bytes`` (kept by the executors between calls) and
    ``static_peak_bytes``, their sum.
    """
    static = _static_of(fn)
    tensors = [a for a in args if isinstance(a, Tensor)]
    if not tensors:
        raise TypeError("[memory_report] pass the tensor arguments the function is called with")
    dev = tensors[0].device
    alloc = _dev.allocator_of(dev)

    def clear() -> None:
        if backward:
            for cp in static.programs:
                for p in cp.params.values():
                    p.clear_grad()

    def measure(call: Any) -> int:
        clear()
        gc.collect()
        base = alloc.allocated
        alloc.reset_peak_stats()
        out = call(*args)
        if backward:
            out.backward()
        peak = alloc.peak_allocated - base
        del out
        return peak

    for _ in range(2):
        measure(static)
    static_run = measure(static)
    eager = measure(static._fn)
    clear()
    held = 0
    for cp in static.programs:
        held += cp.executor.held_bytes()
        if cp.backward is not None:
            held += cp.backward.executor.held_bytes()
    return {
        "eager_peak_bytes": eager,
        "static_run_bytes": static_run,
        "static_held_bytes": held,
        "static_peak_bytes": static_run + held,
    }
