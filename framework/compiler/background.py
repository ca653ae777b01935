"""Kernel builds off the critical path: a new program runs while its kernels compile.

On a cold kernel cache the prebuild (``fused.prebuild``) would hold a program's first run
until every generated kernel and the plugin's own C it needs were built: seconds of C compiler
on a small machine. Instead, the builds that would compile (not found in the cache, on disk
or in memory) go to a pool of worker threads (:func:`submit`), one compiler process per core,
and the program runs at once:

- a fusion group (or merged group) whose kernel is not built yet gets a stand-in kernel
  entry (:func:`waiting_entry`): it runs the group's ops one by one through the plugin's own
  kernels, as a group whose kernel does not build does, and the built kernel from the first
  call after its build landed;
- the plugin's own C (attention, the split product...) is marked queued; until it lands the
  plugin takes the path it takes without a C compiler (numpy);
- when a batch has landed, every executor that planned while it was in flight plans again at
  its next call (``ir.executor.BUILDS``), so the kernels' bound fast paths replace the
  stand-ins.

A warm process (everything in the cache) runs no stand-in: what the cache holds is loaded
before the first run, as before. The trade: the first steps of a cold run compute the
unfused ops, whose rounding differs from the fused kernels' (within float32 tolerance), and
when the swap happens depends on the compiler's speed, so a cold run is not bit for bit
reproducible; ``OARLOCK_COMPILE_BACKGROUND=0`` waits for the builds instead (every run the
same bits). The pool's workers finish their builds before the interpreter exits (the cache
is filled for the next process). :func:`wait_for_builds` waits for them;
:func:`background_stats` counts them.

>>> from framework import compiler
>>> compiler.wait_for_builds()   # every background build landed
True
"""

from __future__ import annotations

import functools
import os
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import Any

import numpy as np

from adapter_api import KernelEntry

from .._src import autograd, env
from .._src import device as _dev
from .._src.tensor import Tensor, from_numpy_copy
from ..ir import executor
from ..ir.core import resolve
from ..ir.passes import fusion, horizontal
from .cache import build_batch

_LOCK = threading.Lock()
_POOL: list[ThreadPoolExecutor] = []
#: the builds in flight of each kernel, by (source, entry, options)
_PENDING: dict[tuple[str, str, tuple[str, ...]], list[Future[Any]]] = {}
_STATS = {"batches": 0, "builds": 0, "stand_in_runs": 0, "swaps": 0}


def enabled() -> bool:
    """``OARLOCK_COMPILE_BACKGROUND`` (default on): whether a new program runs while its
    kernels compile (else its first run waits for them)."""
    return env.flag("OARLOCK_COMPILE_BACKGROUND", True)


def background_stats() -> dict[str, int]:
    """Counters since start: ``batches`` and ``builds`` sent to the background, runs of
    stand-ins for a kernel not built yet (``stand_in_runs``) and ``swaps`` to the built kernel.

    >>> from framework import compiler
    >>> sorted(compiler.background_stats())
    ['batches', 'builds', 'stand_in_runs', 'swaps']
    """
    return dict(_STATS)


def _forget() -> None:
    """In a forked child: the parent's pool threads are not there (its builds land in the
    parent); a build this process sends starts a pool of its own."""
    global _LOCK
    _LOCK = threading.Lock()
    _POOL.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget)


def _key(kernel: Any) -> tuple[str, str, tuple[str, ...]]:
    return (kernel.source, kernel.entry, tuple(kernel.options))


def _pool() -> ThreadPoolExecutor:
    with _LOCK:
        if not _POOL:
            _POOL.append(ThreadPoolExecutor(os.cpu_count() or 1, thread_name_prefix="oarlock-build"))
        return _POOL[0]


def submit(language: str, builds: Sequence[Callable[[], Any]], kernels: Sequence[Sequence[Any]]) -> None:
    """Run ``builds`` on the pool and return at once; ``kernels[i]`` are the generated
    kernels ``builds[i]`` builds (their lookups get stand-ins until it lands). One progress
    line for the batch when it compiles for over a second ("compiling 21 kernels (c)…")."""
    pool = _pool()
    n = sum(getattr(b, "kernels", 1) for b in builds)
    started = threading.Event()
    with _LOCK:
        futures = [pool.submit(_after, started, b) for b in builds]
        for f, ks in zip(futures, kernels):
            for k in ks:
                _PENDING.setdefault(_key(k), []).append(f)
        executor.BUILDS.in_flight += 1
        _STATS["batches"] += 1
        _STATS["builds"] += len(builds)

    def watch() -> None:
        try:
            with build_batch(language, n) as done:
                started.set()
                left = set(futures)
                while left:
                    finished, left = wait(left, return_when="FIRST_COMPLETED")
                    for f in finished:
                        done(getattr(builds[futures.index(f)], "kernels", 1))
        finally:
            started.set()
            with _LOCK:
                for f, ks in zip(futures, kernels):
                    for k in ks:
                        got = _PENDING.get(_key(k))
                        if got is not None and f in got:
                            got.remove(f)
                            if not got:
                                del _PENDING[_key(k)]
                executor.BUILDS.in_flight -= 1
                executor.BUILDS.landed += 1

    threading.Thread(target=watch, name="oarlock-build-batch", daemon=True).start()


def _after(started: threading.Event, build: Callable[[], Any]) -> Any:
    started.wait()  # the batch's progress line is counting (its builds say nothing each)
    return build()


def pending(kernel: Any) -> list[Future[Any]]:
    """The builds in flight that ``kernel`` (and its vector-width variants) waits for."""
    with _LOCK:
        return list(_PENDING.get(_key(kernel), ()))


def wait_for_builds(timeout: float | None = None) -> bool:
    """Wait until every build sent to the background has landed (False when ``timeout``
    seconds passed first). A program's run after it uses the built kernels.

    >>> from framework import compiler
    >>> compiler.wait_for_builds(timeout=600)
    True
    """
    with _LOCK:
        futures = [f for fs in _PENDING.values() for f in fs]
    _, left = wait(futures, timeout=timeout)
    if left:
        return False
    # the batches' bookkeeping (their watcher threads) follows the last build at once
    end = None if timeout is None else time.monotonic() + timeout
    while executor.BUILDS.in_flight and (end is None or time.monotonic() < end):
        time.sleep(0.005)
    return not executor.BUILDS.in_flight


def waiting_entry(
    op: str,
    device_type: str,
    builds: list[Future[Any]],
    built: Callable[[], KernelEntry | None],
    plugin: str = "oarlock.compiler (fused)",
) -> KernelEntry:
    """The kernel entry of fused op ``op`` while ``builds`` are in flight: its ops run unfused
    (:func:`run_unfused`) until they have landed, then ``built()`` gives the kernel's entry
    (None: it did not build; the ops stay unfused, warned once by ``built``). For compilers
    whose buffers are host arrays (the C compiler's): the ops run on copies of them.
    ``plugin``: the name the built kernel's entry has (the lowering records it)."""
    state: list[Any] = []  # [the built entry or None] once the builds have landed

    def current() -> KernelEntry | None:
        if not state:
            if not all(f.done() for f in builds):
                return None
            state.append(built())
            if state[0] is not None:
                _STATS["swaps"] += 1
        return state[0]

    def launch(ctx: Any, outs: list[Any], ins: list[Any], dims: tuple[int, ...] = ()) -> None:
        e = current()
        if e is None and not state and ctx.stream is not None:
            wait(builds)  # work queued on a stream before this op: wait for the kernel
            e = current()
        if e is not None:
            e.fn(ctx, outs, ins, dims=dims)
            return
        if ctx.stream is not None:  # it did not build: the ops read what the stream wrote
            ctx.runtime.synchronize(ctx.device_index)
        _STATS["stand_in_runs"] += 1
        dev = _dev.Device(device_type, ctx.device_index)
        with autograd.no_grad():
            res = run_unfused(op, [from_numpy_copy(np.asarray(a), dev) for a in ins], tuple(dims))
        for o, r in zip(outs, res):
            np.copyto(o, r.numpy())

    def bind(ctx: Any, outs: list[Any], ins: list[Any], dims: tuple[int, ...] = ()) -> Any:
        e = current()
        if e is not None:
            return None if e.bind is None else e.bind(ctx, outs, ins, dims=dims)
        return functools.partial(launch, ctx, outs, ins, dims)

    return KernelEntry(launch, plugin, bind=bind)


def run_unfused(op: str, ins: list[Tensor], dims: tuple[int, ...]) -> list[Tensor]:
    """Fused op ``op`` (a fusion group or a merged group of them) as its ops one by one,
    through the device's own kernels (never a generated kernel of the group: it is the one
    being built)."""
    g = fusion.GROUPS.get(op)
    if g is not None:
        return fusion.replay(g.body, ins, dict(zip(g.symbols, dims)))
    h = horizontal.HGROUPS[op]
    binding = dict(zip(h.symbols, dims))
    vals: dict[Any, Tensor] = dict(zip(h.body.inputs, ins))
    for part in h.parts:
        part_dims = resolve(part.attrs.get("dims", ()), binding)
        outs = run_unfused(part.name, [vals[v] for v in part.operands], tuple(part_dims))
        vals.update(zip(part.results, outs))
    return [vals[v] for v in h.body.outputs]
