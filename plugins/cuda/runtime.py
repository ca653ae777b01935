"""The CUDA device runtime on cupy: memory, copies, streams and events.

Nothing here imports cupy at module level: the runtime is built by the core on first use, and
on a machine without cupy or without a GPU it reports ``device_count() == 0`` with the reason
in :attr:`CUDARuntime.unavailable_reason`.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np

from adapter_api import DeviceError, DeviceProperties, DeviceRuntime, OpArgumentError, OutOfMemoryError

from .errors import import_cupy, unavailable_reason, vendor_errors

#: The dtypes a CUDA device holds. bfloat16 lives in memory as raw uint16 bits (cupy has no
#: bfloat16 dtype); kernels registered for it convert to float32 and back.
DTYPES = ("float32", "float64", "float16", "bfloat16", "int8", "int16", "int32", "int64", "uint8", "bool")

_CP: list[Any] = []  # cupy, once imported

# cudaMemcpyKind
_H2D, _D2H, _D2D = 1, 2, 3


def storage_dtype(dtype: Any) -> np.dtype:
    """The cupy dtype that holds ``dtype``: itself, or uint16 for bfloat16."""
    dt = _STORAGE.get(dtype)
    if dt is None:
        dt = np.dtype(dtype)
        dt = _STORAGE[dtype] = np.dtype(np.uint16) if dt.name == "bfloat16" else dt
    return dt


_STORAGE: dict[Any, np.dtype] = {}  # NOTE: one dict lookup per view on the eager path


@dataclass(eq=False)
class CUDABuffer:
    """One allocation: a cupy ``MemoryPointer`` from the pool and the size asked for."""

    ptr: Any  #: cupy.cuda.MemoryPointer; None once freed
    nbytes: int
    device: int

    def address(self, offset: int = 0) -> int:
        if self.ptr is None:
            raise DeviceError(
                f"[cuda] buffer of {self.nbytes} bytes on cuda:{self.device} was already freed; "
                "keep the tensor alive while it is used"
            )
        return int(self.ptr.ptr) + offset


@dataclass(eq=False)
class CUDAGraph:
    """A captured CUDA graph (``cupy.cuda.Graph``) and the pool its temporaries came from."""

    graph: Any
    pool: Any
    device: int


class CUDARuntime(DeviceRuntime):
    """Memory, copies, streams and events of NVIDIA GPUs through cupy.

    Tensor memory is pooled by the core's caching allocator (``own_pool`` is False):
    :meth:`allocate` is a plain ``cudaMalloc`` (``cupy.cuda.Memory``) and :meth:`free` a
    ``cudaFree``, both rare once the cache is warm, and ``fw.memory_stats`` counts cache hits as
    on every other device. A cached block is reused by later work; kernels, copies and frees
    without an explicit stream run on the device's one default stream, so that work is ordered
    after the block's last use. Temporaries inside cupy routines (reductions, casts of
    bfloat16) still come from cupy's own pool. On out-of-memory cupy's pool gives its free
    blocks back and the allocation is retried once before :class:`adapter_api.OutOfMemoryError`
    is raised (the core then empties its cache and retries once more).

    Every device gets one default stream, created lazily as a non-blocking ``cupy.cuda.Stream``;
    kernels, copies and frees without an explicit stream use it. ``copy_h2d`` and
    ``copy_d2h`` with ``blocking=False`` stage through pinned host memory; the staged
    device-to-host result lands in ``dst`` when the stream (or device, or a later event) is
    synchronized through this runtime.

    Example::

        rt = CUDARuntime()
        if rt.device_count() == 0:
            print("no CUDA device", rt.unavailable_reason)
    """

    own_pool = False

    def __init__(self) -> None:
        #: Why no device can be used, or None when at least one can.
        self.unavailable_reason: str | None = unavailable_reason()
        self._count: int | None = None
        self._streams: dict[int, Any] = {}
        self._pending: list[tuple[Any, Any, np.ndarray | None]] = []  # (event, pinned staging, d2h dst)
        self._captures: dict[int, tuple[Any, Any]] = {}  # id(stream) -> (graph's pool, allocator scope)
        self._lock = threading.Lock()

    # -- devices ------------------------------------------------------------------------
    def device_count(self) -> int:
        if self.unavailable_reason is not None:
            return 0
        if self._count is None:
            try:
                self._count = int(import_cupy().cuda.runtime.getDeviceCount())
            except Exception as exc:  # noqa: BLE001 — counting never raises
                self.unavailable_reason = f"no CUDA device ({exc})"
                self._count = 0
        return self._count

    def _cupy(self, index: int | None = None) -> Any:
        if self.unavailable_reason is not None:
            raise DeviceError(
                f"[cuda] cannot use a CUDA device: {self.unavailable_reason}; "
                "use another device such as 'cpu', or run on a machine with an NVIDIA GPU"
            )
        cp = import_cupy()
        if index is not None and not 0 <= index < self.device_count():
            raise DeviceError(
                f"[cuda] device index {index} is out of range, this machine has "
                f"{self.device_count()} CUDA device(s); use cuda:0 .. cuda:{self.device_count() - 1}"
            )
        return cp

    def properties(self, index: int) -> DeviceProperties:
        cp = self._cupy(index)
        rt = cp.cuda.runtime
        with vendor_errors("read device properties", device=index):
            p = rt.getDeviceProperties(index)
            driver, runtime = rt.driverGetVersion(), rt.runtimeGetVersion()
        name = p.get("name", b"")
        name = name.decode(errors="replace") if isinstance(name, bytes) else str(name)
        extra = {
            "compute_capability": f"{p.get('major', 0)}.{p.get('minor', 0)}",
            "multiprocessors": p.get("multiProcessorCount", 0),
            "clock_khz": p.get("clockRate", 0),
            "memory_clock_khz": p.get("memoryClockRate", 0),
            "memory_bus_width_bits": p.get("memoryBusWidth", 0),
            "l2_cache_bytes": p.get("l2CacheSize", 0),
            "cupy_version": cp.__version__,
            "memory_pool": "Oarlock caching allocator over cudaMalloc (cupy's pool for temporaries)",
        }
        return DeviceProperties(
            name=name,
            vendor="NVIDIA",
            total_memory=int(p.get("totalGlobalMem", 0)),
            compute_units=int(p.get("multiProcessorCount", 0)),
            dtypes=DTYPES,
            driver_version=_cuda_version(driver),
            runtime_version=_cuda_version(runtime),
            extra=extra,
        )

    # -- memory -------------------------------------------------------------------------
    def allocate(self, index: int, nbytes: int) -> CUDABuffer:
        cp = self._cupy(index)
        pool = cp.get_default_memory_pool()
        with cp.cuda.Device(index):
            for attempt in (0, 1):
                try:
                    return CUDABuffer(cp.cuda.MemoryPointer(cp.cuda.Memory(nbytes), 0), nbytes, index)
                except Exception as exc:
                    if not _is_oom(exc):
                        with vendor_errors(f"allocate {nbytes} bytes", device=index):
                            raise
                    if attempt == 0:
                        pool.free_all_blocks()
                        continue
                    try:
                        free, total = cp.cuda.runtime.memGetInfo()
                    except Exception:  # noqa: BLE001
                        free, total = -1, -1
                    raise OutOfMemoryError(
                        f"[cuda] out of memory on cuda:{index}, asked for {nbytes} bytes ({pool.used_bytes()} "
                        f"bytes of cupy temporaries, {free} of {total} free on the device); "
                        "free tensors, use a smaller batch, or call empty_cache()"
                    ) from exc
        raise AssertionError("unreachable")

    def free(self, index: int, buffer: CUDABuffer) -> None:
        # Dropping the last reference is cudaFree (the core calls this from empty_cache only).
        buffer.ptr = None

    def view(self, buffer: CUDABuffer, offset: int, shape: tuple[int, ...], dtype: np.dtype) -> Any:
        cp = _CP[0] if _CP else _CP.append(import_cupy()) or _CP[0]
        dt = storage_dtype(dtype)
        nbytes = math.prod(shape) * dt.itemsize
        if offset < 0 or offset + nbytes > buffer.nbytes:
            raise OpArgumentError(
                f"[cuda] view of {nbytes} bytes at offset {offset} does not fit a buffer of "
                f"{buffer.nbytes} bytes; check the tensor's offset and shape"
            )
        ptr = buffer.ptr
        if ptr is None:
            buffer.address()  # raises: the buffer was freed
        return cp.ndarray(shape, dt, ptr + offset if offset else ptr)

    def memset(
        self, index: int, buffer: CUDABuffer, offset: int, value: int, nbytes: int, stream: Any
    ) -> None:
        cp = self._cupy(index)
        s = self._stream(index, stream)
        with cp.cuda.Device(index), vendor_errors(f"memset of {nbytes} bytes", device=index):
            if nbytes:
                cp.cuda.runtime.memsetAsync(buffer.address(offset), int(value) & 0xFF, nbytes, s.ptr)

    # -- copies -------------------------------------------------------------------------
    def copy_h2d(
        self,
        index: int,
        dst: CUDABuffer,
        dst_offset: int,
        src: np.ndarray,
        stream: Any,
        blocking: bool = True,
    ) -> None:
        cp = self._cupy(index)
        src = np.ascontiguousarray(src)
        n = src.nbytes
        _check_fits("host-to-device copy", n, dst_offset, dst)
        if n == 0:
            return
        s = self._stream(index, stream)
        with cp.cuda.Device(index), vendor_errors(f"copy of {n} bytes host to device", device=index):
            if blocking:
                cp.cuda.runtime.memcpyAsync(dst.address(dst_offset), src.ctypes.data, n, _H2D, s.ptr)
                s.synchronize()
                return
            staging = cp.cuda.alloc_pinned_memory(n)
            np.frombuffer(staging, np.uint8, n)[:] = src.reshape(-1).view(np.uint8)
            cp.cuda.runtime.memcpyAsync(dst.address(dst_offset), staging.ptr, n, _H2D, s.ptr)
            self._keep_until_done(cp, s, staging, None)

    def copy_d2h(
        self,
        index: int,
        dst: np.ndarray,
        src: CUDABuffer,
        src_offset: int,
        stream: Any,
        blocking: bool = True,
    ) -> None:
        cp = self._cupy(index)
        if not (dst.flags.c_contiguous and dst.flags.writeable):
            raise OpArgumentError(
                "[cuda] device-to-host copy needs a C-contiguous writeable host array, "
                f"got flags {dst.flags}; pass np.empty(shape, dtype)"
            )
        n = dst.nbytes
        _check_fits("device-to-host copy", n, src_offset, src)
        if n == 0:
            return
        s = self._stream(index, stream)
        with cp.cuda.Device(index), vendor_errors(f"copy of {n} bytes device to host", device=index):
            if blocking:
                cp.cuda.runtime.memcpyAsync(dst.ctypes.data, src.address(src_offset), n, _D2H, s.ptr)
                s.synchronize()
                return
            staging = cp.cuda.alloc_pinned_memory(n)
            cp.cuda.runtime.memcpyAsync(staging.ptr, src.address(src_offset), n, _D2H, s.ptr)
            self._keep_until_done(cp, s, staging, dst)

    def copy_d2d(
        self,
        index: int,
        dst: CUDABuffer,
        dst_offset: int,
        src: CUDABuffer,
        src_offset: int,
        nbytes: int,
        stream: Any,
        blocking: bool = True,
    ) -> None:
        cp = self._cupy(index)
        _check_fits("device-to-device copy", nbytes, dst_offset, dst)
        _check_fits("device-to-device copy", nbytes, src_offset, src)
        if nbytes == 0:
            return
        s = self._stream(index, stream)
        with cp.cuda.Device(index), vendor_errors(f"copy of {nbytes} bytes device to device", device=index):
            cp.cuda.runtime.memcpyAsync(dst.address(dst_offset), src.address(src_offset), nbytes, _D2D, s.ptr)
            if blocking:
                s.synchronize()

    def _keep_until_done(self, cp: Any, stream: Any, staging: Any, dst: np.ndarray | None) -> None:
        """Hold pinned staging memory until the stream passes this point; for device-to-host
        copies, move the staged bytes into ``dst`` then (see :meth:`_drain`)."""
        event = cp.cuda.Event(disable_timing=True)
        event.record(stream)
        with self._lock:
            self._pending.append((event, staging, dst))
        self._drain(wait=False)

    def _drain(self, wait: bool) -> None:
        """Finish staged copies whose event has completed (all of them when ``wait``)."""
        with self._lock:
            pending, self._pending = self._pending, []
        keep = []
        for event, staging, dst in pending:
            if wait:
                event.synchronize()
            elif not event.done:
                keep.append((event, staging, dst))
                continue
            if dst is not None:
                dst.reshape(-1).view(np.uint8)[:] = np.frombuffer(staging, np.uint8, dst.nbytes)
        if keep:
            with self._lock:
                self._pending[:0] = keep

    # -- streams ------------------------------------------------------------------------
    def default_stream(self, index: int) -> Any:
        s = self._streams.get(index)
        if s is None:
            cp = self._cupy(index)
            with cp.cuda.Device(index), vendor_errors("create the default stream", device=index):
                s = self._streams.setdefault(index, cp.cuda.Stream(non_blocking=True))
        return s

    def create_stream(self, index: int) -> Any:
        cp = self._cupy(index)
        with cp.cuda.Device(index), vendor_errors("create a stream", device=index):
            return cp.cuda.Stream(non_blocking=True)

    def _stream(self, index: int, stream: Any) -> Any:
        return self.default_stream(index) if stream is None else stream

    def synchronize_stream(self, stream: Any) -> None:
        with vendor_errors("synchronize a stream"):
            stream.synchronize()
        self._drain(wait=False)

    def query_stream(self, stream: Any) -> bool:
        done = bool(stream.done)
        if done:
            self._drain(wait=False)
        return done

    # -- events -------------------------------------------------------------------------
    def create_event(self, index: int) -> Any:
        cp = self._cupy(index)
        with cp.cuda.Device(index), vendor_errors("create an event", device=index):
            return cp.cuda.Event()

    def record_event(self, event: Any, stream: Any) -> None:
        with vendor_errors("record an event"):
            event.record(stream)

    def stream_wait_event(self, stream: Any, event: Any) -> None:
        with vendor_errors("make a stream wait for an event"):
            stream.wait_event(event)

    def synchronize_event(self, event: Any) -> None:
        with vendor_errors("synchronize an event"):
            event.synchronize()
        self._drain(wait=False)

    def query_event(self, event: Any) -> bool:
        done = bool(event.done)
        if done:
            self._drain(wait=False)
        return done

    def elapsed_ms(self, start: Any, end: Any) -> float:
        cp = import_cupy()
        with vendor_errors(
            "measure the time between two events", "record both events and synchronize the second"
        ):
            return float(cp.cuda.get_elapsed_time(start, end))

    # -- whole device -------------------------------------------------------------------
    def synchronize(self, index: int) -> None:
        cp = self._cupy(index)
        with vendor_errors("synchronize the device", device=index):
            cp.cuda.Device(index).synchronize()
        self._drain(wait=True)

    # -- graph capture: CUDA graphs through cupy's stream capture ------------------------
    def supports_graphs(self, index: int) -> bool:
        """CUDA graphs: on NVIDIA devices whose cupy has stream capture (not on HIP)."""
        if self.device_count() == 0:
            return False
        cp = self._cupy(index)
        return not getattr(cp.cuda.runtime, "is_hip", False) and hasattr(cp.cuda.Stream, "begin_capture")

    def begin_capture(self, index: int, stream: Any) -> None:
        """Start a relaxed-mode capture on ``stream`` (a non-blocking stream from
        :meth:`create_stream`). Temporaries cupy allocates while capturing (reduction
        scratch, bfloat16 casts) come from a memory pool the graph keeps: the replayed
        kernels write to those addresses, so no one else may get them meanwhile."""
        cp = self._cupy(index)
        if stream is None or stream.ptr in (0, 1):
            raise DeviceError(
                "[cuda] a graph capture needs a stream from create_stream (the legacy default stream cannot capture)"
            )
        pool = cp.cuda.MemoryPool()
        # NOTE: using_allocator is this thread's only (a loader thread keeps the default pool);
        # it is entered here and left in end_capture, which the executor calls on this thread
        scope = cp.cuda.using_allocator(pool.malloc)
        with cp.cuda.Device(index), vendor_errors("begin a CUDA graph capture", device=index):
            scope.__enter__()
            try:
                stream.begin_capture()
            except BaseException:
                scope.__exit__(None, None, None)
                raise
        with self._lock:
            self._captures[id(stream)] = (pool, scope)

    def end_capture(self, index: int, stream: Any) -> CUDAGraph:
        cp = self._cupy(index)
        with self._lock:
            pool, scope = self._captures.pop(id(stream), (None, None))
        if pool is None:
            raise DeviceError(
                "[cuda] end_capture on a stream that does not capture; call begin_capture first"
            )
        try:
            with (
                cp.cuda.Device(index),
                vendor_errors(
                    "end a CUDA graph capture",
                    "something in the captured work synchronized or copied to the host; run without graphs "
                    "(OARLOCK_GRAPHS=0) to find it",
                    device=index,
                ),
            ):
                graph = stream.end_capture()
        finally:
            scope.__exit__(None, None, None)
        return CUDAGraph(graph, pool, index)

    def launch_graph(self, graph: CUDAGraph, stream: Any) -> None:
        cp = self._cupy(graph.device)
        s = self._stream(graph.device, stream)
        with cp.cuda.Device(graph.device), vendor_errors("launch a CUDA graph", device=graph.device):
            graph.graph.launch(s)

    def destroy_graph(self, graph: CUDAGraph) -> None:
        graph.graph = None
        if graph.pool is not None:
            graph.pool.free_all_blocks()
            graph.pool = None

    # -- extras (not in the contract) ---------------------------------------------------
    def memory_info(self, index: int) -> dict[str, int]:
        """Bytes in use and reserved by cupy's pool (temporaries), and free/total on the device."""
        cp = self._cupy(index)
        pool = cp.get_default_memory_pool()
        with cp.cuda.Device(index), vendor_errors("read memory info", device=index):
            free, total = cp.cuda.runtime.memGetInfo()
            return {"used": pool.used_bytes(), "reserved": pool.total_bytes(), "free": free, "total": total}

    def empty_cache(self, index: int) -> None:
        """Give the free blocks of cupy's pool (temporaries) back to the driver."""
        cp = self._cupy(index)
        with cp.cuda.Device(index):
            cp.get_default_memory_pool().free_all_blocks()


def _is_oom(exc: BaseException) -> bool:
    """Whether a cupy exception from cudaMalloc means out of memory."""
    return type(exc).__name__ == "OutOfMemoryError" or "MemoryAllocation" in str(exc)


def _check_fits(what: str, nbytes: int, offset: int, buffer: CUDABuffer) -> None:
    if offset < 0 or nbytes < 0 or offset + nbytes > buffer.nbytes:
        raise OpArgumentError(
            f"[cuda] {what} of {nbytes} bytes at offset {offset} does not fit a buffer of "
            f"{buffer.nbytes} bytes; check the sizes the core passed"
        )


def _cuda_version(v: int) -> str:
    """12040 -> '12.4'."""
    return f"{v // 1000}.{(v % 1000) // 10}" if v else ""
