"""The caching allocator every plugin gets for free.

Blocks are rounded up (512 B below 1 MiB, 128 KiB above) and kept in per-size free lists
when tensors die, so steady-state training makes no raw device allocations. Statistics
follow PyTorch's ``memory_stats`` in spirit. On out-of-memory the cache is released and the
allocation retried once; then the error names the device and the sizes.

Streams. Work queued on a stream may still read a block after its tensor died, so a freed
block goes back to the pool of the stream it was allocated on (:attr:`Block.stream`, the
device's current stream at allocation): later work on that stream runs after the queued
work, so it may reuse the block at once. Another stream takes it only once an event recorded
on the block's stream at free time has completed (a free comes from a finaliser, which must
not call into the plugin, so that event is recorded at the next allocation: it covers at
least the work queued when the block was freed) (while only one stream was ever used, no
event is recorded: the free costs what it did; nor for the ``None`` stream, the contract's
synchronous queue). A block used on a further stream
(:meth:`CachingAllocator.record_stream`, PyTorch's ``record_stream``; the executor calls it
when a plan's buffers move to another stream) waits for events on each of those streams
before any stream reuses it. :meth:`CachingAllocator.empty_cache` waits for those events
before it returns blocks to the device (``DeviceRuntime.free`` is called only when no queued
work still uses the buffer).
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Callable
from typing import Any

from adapter_api import OutOfMemoryError

_SMALL = 1 << 20

#: ``fn(allocator, nbytes, allocated)`` on every allocation (``allocated`` True) and free of a
#: block while set: ``fw.profiler``'s ``profile_memory`` (``_src/profiling.py``); None costs
#: one read per allocation and free
WATCH: Callable[[CachingAllocator, int, bool], None] | None = None


def round_size(nbytes: int) -> int:
    if nbytes <= 0:
        return 512
    if nbytes < _SMALL:
        return (nbytes + 511) & ~511
    return (nbytes + (128 << 10) - 1) & ~((128 << 10) - 1)


class Block:
    """One allocation: the plugin's buffer handle, its rounded size, the stream it was
    allocated on and the further streams it was used on (:meth:`CachingAllocator.record_stream`)."""

    __slots__ = ("handle", "size", "allocator", "stream", "uses", "written_at", "__weakref__")

    def __init__(self, handle: Any, size: int, allocator: CachingAllocator, stream: Any = None) -> None:
        self.handle = handle
        self.size = size
        self.allocator = allocator
        self.stream = stream
        self.uses: list[Any] | None = None
        #: ``Tensor._clock``'s time of the last write into this memory in place, which every
        #: tensor sharing it sees (an optimizer's fused update); -1: none (autograd's check)
        self.written_at = -1

    def __del__(self) -> None:
        alloc = self.allocator
        if alloc is not None:
            self.allocator = None
            try:
                alloc.release(self)
            except Exception:  # noqa: BLE001 — never raise from a finaliser at shutdown
                pass


class CachingAllocator:
    """Pools raw allocations of one device."""

    #: the fields every allocation and free reads are slots (Python reads them through slot
    #: descriptors; the eager fast path, ``_src/fastcall.c``, at their offsets, without
    #: turning the instance's other attributes into a dict); the rest live in ``__dict__``
    __slots__ = (
        "passthrough",
        "stream",
        "_free",
        "_deferred",
        "multi",
        "allocated",
        "peak_allocated",
        "num_requests",
        "num_cache_hits",
        "__dict__",
        "__weakref__",
    )

    def __init__(self, runtime: Any, index: int, name: str, stream: Any = None) -> None:
        self.runtime = runtime
        self.index = index
        self.name = name
        self.passthrough = bool(getattr(runtime, "own_pool", False))
        #: the stream allocations are made on now (the device's current stream; the device
        #: layer sets it through :meth:`use_stream`)
        self.stream: Any = stream
        #: stream -> size -> free handles; ``_free`` is the current stream's entry
        self._pools: dict[Any, defaultdict[int, list[Any]]] = {}
        self._free: defaultdict[int, list[Any]] = self._pool_of(stream)
        #: more than one stream has been used: frees record events, misses look at other pools
        self.multi = False
        #: id(handle) -> the event recorded on its stream when it was freed (absent: complete)
        self._events: dict[int, Any] = {}
        #: blocks used on further streams, not reusable until their events complete:
        #: (handle, size, stream, events)
        self._pending: list[tuple[Any, int, Any, list[Any]]] = []
        #: frees that need an event, made by finalisers: recorded at the next allocation, never
        #: inside the finaliser (it may run while the plugin's own code holds a lock — a
        #: ThreadPoolExecutor's submit starting a thread — and recording calls into the plugin)
        self._deferred: deque[tuple[Any, int, Any, list[Any] | None]] = deque()
        self.allocated = 0
        self.reserved = 0
        self.peak_allocated = 0
        self.peak_reserved = 0
        self.num_device_allocs = 0
        self.num_device_frees = 0
        self.num_requests = 0
        self.num_cache_hits = 0
        self.num_ooms = 0

    def malloc(self, nbytes: int, prefer: int | None = None) -> Block:
        """A block of at least ``nbytes``. ``prefer``: the ``id`` of a handle this caller had
        before, taken again when it is free in the current stream's pool (a program's output
        lands where the instructions reading it are bound: several blocks of one size
        otherwise come back from the pool in another order each time). An id, not the
        handle: holding a handle would keep its memory after :meth:`empty_cache`; an id
        reused by another handle only picks another free block of the size."""
        if 0 < nbytes < _SMALL:
            size = (nbytes + 511) & ~511
        else:
            size = round_size(nbytes)
        self.num_requests += 1
        if self._deferred:
            self._drain()
        pool = self._free.get(size)
        if pool:
            handle = pool.pop()
            if prefer is not None and id(handle) != prefer:
                for i, h in enumerate(pool):
                    if id(h) == prefer:
                        pool[i], handle = handle, h
                        break
            self.num_cache_hits += 1
        elif self.multi and (handle := self._from_other_streams(size)) is not None:
            self.num_cache_hits += 1
        else:
            handle = self._raw_alloc(size, nbytes)
            self.reserved += size
            if self.reserved > self.peak_reserved:
                self.peak_reserved = self.reserved
        self.allocated += size
        if self.allocated > self.peak_allocated:
            self.peak_allocated = self.allocated
        if WATCH is not None:
            WATCH(self, size, True)
        return Block(handle, size, self, self.stream)

    # -- streams ------------------------------------------------------------------------
    def _pool_of(self, stream: Any) -> defaultdict[int, list[Any]]:
        pool = self._pools.get(stream)
        if pool is None:
            pool = self._pools[stream] = defaultdict(list)
        return pool

    def use_stream(self, stream: Any) -> None:
        """Allocate on ``stream`` from now on (the device layer calls it when the current
        stream changes). The first switch to a second stream marks what the first one's
        pool holds with an event (it was freed without one)."""
        if stream is self.stream:
            return
        if self._deferred:
            self._drain()
        if not self.multi:
            self._go_multi()
        self.stream = stream
        self._free = self._pool_of(stream)

    def record_stream(self, block: Block, stream: Any) -> None:
        """``block`` is used by work on ``stream`` too (not only the one it was allocated
        on): when freed it waits for that work before any stream reuses it."""
        if stream is block.stream or block.allocator is not self:
            return
        if block.uses is None:
            block.uses = [stream]
        elif not any(s is stream for s in block.uses):
            block.uses.append(stream)
        if not self.multi:
            self._go_multi()

    def _go_multi(self) -> None:
        """A second stream appears: what the pool holds was freed without an event, so it
        gets one now (the work queued on its stream so far)."""
        self.multi = True
        handles = [h for hs in self._free.values() for h in hs]
        ev = self._record(self.stream) if handles else None
        if ev is not None:
            for h in handles:
                self._events[id(h)] = ev

    def _mark(self, handle: Any, stream: Any) -> None:
        """Record (or clear) the free-time event of ``handle``."""
        ev = self._record(stream)
        if ev is None:
            self._events.pop(id(handle), None)
        else:
            self._events[id(handle)] = ev

    def _record(self, stream: Any) -> Any:
        """An event completing when the work queued on ``stream`` so far is done, or None
        when nothing can be pending: the ``None`` stream is the contract's synchronous queue
        (a runtime without events waits here instead)."""
        if stream is None:
            return None
        rt = self.runtime
        try:
            ev = rt.create_event(self.index)
        except NotImplementedError:
            rt.synchronize_stream(stream)
            return None
        rt.record_event(ev, stream)
        return ev

    def _done(self, ev: Any) -> bool:
        return ev is None or bool(self.runtime.query_event(ev))

    def _from_other_streams(self, size: int) -> Any:
        """A free handle of ``size`` whose free-time event has completed, from the pool of
        another stream (or a block used on several streams whose work is all done)."""
        if self._pending:
            self._settle()
            pool = self._free.get(size)
            if pool:
                return pool.pop()
        events = self._events
        for stream, pools in self._pools.items():
            if stream is self.stream:
                continue
            handles = pools.get(size)
            if not handles:
                continue
            for i, h in enumerate(handles):
                ev = events.get(id(h))
                if self._done(ev):
                    events.pop(id(h), None)
                    return handles.pop(i)
        return None

    def _settle(self) -> None:
        """Blocks used on several streams whose events have all completed go back to the
        pools of their streams."""
        still = []
        for h, size, stream, evs in self._pending:
            if all(self._done(e) for e in evs):
                self._pool_of(stream)[size].append(h)
                self._events.pop(id(h), None)
            else:
                still.append((h, size, stream, evs))
        self._pending = still

    def _raw_alloc(self, size: int, nbytes: int) -> Any:
        try:
            h = self.runtime.allocate(self.index, size)
        except OutOfMemoryError:
            self.num_ooms += 1
            self.empty_cache()
            try:
                h = self.runtime.allocate(self.index, size)
            except OutOfMemoryError as exc:
                raise OutOfMemoryError(
                    f"[memory] out of memory on {self.name}: asked for {nbytes} bytes, "
                    f"{self.allocated} bytes in use by tensors, {self.reserved} reserved; free "
                    f"tensors you no longer need or use a smaller batch"
                ) from exc
        self.num_device_allocs += 1
        return h

    def release(self, block: Block) -> None:
        self.allocated -= block.size
        if WATCH is not None:
            WATCH(self, block.size, False)
        if self.passthrough:
            self.reserved -= block.size
            self.num_device_frees += 1
            self.runtime.free(self.index, block.handle)
        elif not block.uses and not self.multi and block.stream is self.stream:
            self._free[block.size].append(block.handle)  # one stream: no event, no plugin call
        else:
            self._deferred.append((block.handle, block.size, block.stream, block.uses))

    def _drain(self) -> None:
        """File the deferred frees: record their events (now, outside any finaliser: the
        event covers at least the work queued when the block was freed) and pool them."""
        d = self._deferred
        while d:
            h, size, stream, uses = d.popleft()
            if uses:
                evs = [self._record(s) for s in (stream, *uses)]
                self._pending.append((h, size, stream, [e for e in evs if e is not None]))
            elif stream is self.stream:
                self._free[size].append(h)
                if self.multi:
                    self._mark(h, stream)
            else:
                self._pool_of(stream)[size].append(h)
                self._mark(h, stream)

    def empty_cache(self) -> None:
        """Return every cached (unused) block to the device, once the work queued when it
        was freed is done."""
        rt = self.runtime
        self._drain()
        pending = [(h, size, evs) for h, size, _, evs in self._pending]
        self._pending = []
        for pools in self._pools.values():
            for size, handles in pools.items():
                pending += [(h, size, [self._events.pop(id(h), None)]) for h in handles]
                handles.clear()
        for h, size, evs in pending:
            for e in evs:
                if e is not None:
                    rt.synchronize_event(e)
            rt.free(self.index, h)
            self.reserved -= size
            self.num_device_frees += 1

    def stats(self) -> dict[str, int]:
        return {
            "allocated_bytes": self.allocated,
            "reserved_bytes": self.reserved,
            "peak_allocated_bytes": self.peak_allocated,
            "peak_reserved_bytes": self.peak_reserved,
            "num_device_allocs": self.num_device_allocs,
            "num_device_frees": self.num_device_frees,
            "num_alloc_requests": self.num_requests,
            "num_cache_hits": self.num_cache_hits,
            "num_ooms": self.num_ooms,
        }

    def reset_peak_stats(self) -> None:
        self.peak_allocated = self.allocated
        self.peak_reserved = self.reserved
