"""The caching allocator every plugin gets for free.

Blocks are rounded up (512 B below 1 MiB, 128 KiB above) and kept in per-size free lists
when tensors die, so steady-state training makes no raw device allocations. Statistics
follow PyTorch's ``memory_stats`` in spirit. On out-of-memory the cache is released and the
allocation retried once; then the error names the device and the sizes.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from adapter_api import OutOfMemoryError

_SMALL = 1 << 20


def round_size(nbytes: int) -> int:
    if nbytes <= 0:
        return 512
    if nbytes < _SMALL:
        return (nbytes + 511) & ~511
    return (nbytes + (128 << 10) - 1) & ~((128 << 10) - 1)


class Block:
    """One allocation: the plugin's buffer handle and its rounded size."""

    __slots__ = ("handle", "size", "allocator", "__weakref__")

    def __init__(self, handle: Any, size: int, allocator: CachingAllocator) -> None:
        self.handle = handle
        self.size = size
        self.allocator = allocator

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

    def __init__(self, runtime: Any, index: int, name: str) -> None:
        self.runtime = runtime
        self.index = index
        self.name = name
        self.passthrough = bool(getattr(runtime, "own_pool", False))
        self._free: dict[int, list[Any]] = defaultdict(list)
        self.allocated = 0
        self.reserved = 0
        self.peak_allocated = 0
        self.peak_reserved = 0
        self.num_device_allocs = 0
        self.num_device_frees = 0
        self.num_requests = 0
        self.num_cache_hits = 0
        self.num_ooms = 0

    def malloc(self, nbytes: int) -> Block:
        if 0 < nbytes < _SMALL:
            size = (nbytes + 511) & ~511
        else:
            size = round_size(nbytes)
        self.num_requests += 1
        pool = self._free.get(size)
        if pool:
            handle = pool.pop()
            self.num_cache_hits += 1
        else:
            handle = self._raw_alloc(size, nbytes)
            self.reserved += size
            if self.reserved > self.peak_reserved:
                self.peak_reserved = self.reserved
        self.allocated += size
        if self.allocated > self.peak_allocated:
            self.peak_allocated = self.allocated
        return Block(handle, size, self)

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
        if self.passthrough:
            self.reserved -= block.size
            self.num_device_frees += 1
            self.runtime.free(self.index, block.handle)
        else:
            self._free[block.size].append(block.handle)

    def empty_cache(self) -> None:
        """Return every cached (unused) block to the device."""
        for size, handles in self._free.items():
            for h in handles:
                self.runtime.free(self.index, h)
                self.reserved -= size
                self.num_device_frees += 1
        self._free.clear()

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
