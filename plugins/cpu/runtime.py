"""CPU device runtime: host memory as numpy byte arrays; streams are worker threads."""

from __future__ import annotations

import functools
import os
import platform
import threading
import time
import weakref
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np

from adapter_api import DeviceError, DeviceProperties, DeviceRuntime, OutOfMemoryError
from adapter_api.primitives import FLOAT8, UINT_WIDE

from . import bf16
from .compiler import cpu_info
from .threads import blas_pools

#: bytes every buffer starts on (a cache line, an AVX-512 vector; numpy's own start on 16):
#: whole-line non-temporal stores need it, and the Llama block's step ran ~2 % faster
ALIGN = 64

_DTYPES = ("float32", "float64", "float16", "bfloat16", "int8", "int16", "int32", "int64", "uint8", "bool")
_DTYPES += (*UINT_WIDE, *FLOAT8)  # the low-precision dtypes (adapter_api.primitives.LOWP)
#: complex64/complex128 (issue 40): numpy kernels for the ops complex tensors use (complex_kernels.py)
_DTYPES += ("complex64", "complex128")


class CPUStream:
    """An in-order queue run by one worker thread (numpy releases the GIL in kernels).

    While it captures (:meth:`CPURuntime.begin_capture`), work submitted to it is recorded as
    bound calls, ``partial(fn, *args)``, instead of run (the kernels submit their arrays, not
    the caller's lists, so what is recorded is what was launched)."""

    def __init__(self) -> None:
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="oarlock-cpu-stream")
        self._last: Future[Any] | None = None
        self.capture: list[Any] | None = None

    def submit(self, fn: Any, *args: Any) -> Future[Any] | None:
        cap = self.capture
        if cap is not None:
            cap.append(functools.partial(fn, *args) if args else fn)
            return None
        self._last = f = self._pool.submit(fn, *args)
        return f

    def synchronize(self) -> None:
        if self.capture is not None:
            raise DeviceError(
                "[cpu] a stream was synchronized (or a blocking copy queued on it) while it captures; "
                "capture only work that runs without waiting (no reads back to the host)"
            )
        f = self._last
        if f is not None:
            f.result()  # re-raises the first error of the last task

    def done(self) -> bool:
        return self._last is None or self._last.done()


class CPUGraph:
    """What a capture recorded: zero-argument calls, run in order by each launch."""

    __slots__ = ("calls",)

    def __init__(self, calls: list[Any]) -> None:
        self.calls = tuple(calls)

    def run(self) -> None:
        for call in self.calls:
            call()


#: the flag of every event recorded on the default stream: set, as the work before it ran in the call
_DONE = threading.Event()
_DONE.set()


class CPUEvent:
    """When the work before it finished (``time``, from ``perf_counter``). ``flag`` is None
    until it is recorded (a never-recorded event counts as complete, as on OpenCL and CUDA),
    the shared set :data:`_DONE` when recorded on the default stream, and a fresh
    ``threading.Event`` set by the stream's worker when recorded on a stream: an event on the
    default stream costs no lock (the profiler records two per kernel)."""

    __slots__ = ("time", "flag")

    def __init__(self) -> None:
        self.time = 0.0
        self.flag: threading.Event | None = None

    def fire(self) -> None:
        self.time = time.perf_counter()
        self.flag.set()  # type: ignore[union-attr]

    def wait(self) -> None:
        flag = self.flag
        if flag is not None:
            flag.wait()


def _cpu_name() -> str:
    return cpu_info().get("model name") or platform.processor() or platform.machine()


@functools.cache
def _cpu_extra() -> dict[str, str]:
    """What tells two CPUs of one name apart (an "AMD EPYC" is a Zen 4 or a Zen 5), and the BLAS
    numpy loaded with the kernels it picked for this CPU (products may run on MKL instead:
    gemm.py). An ``OPENBLAS_CORETYPE`` in the environment overrides the pick: Haswell's
    kernels ran the tiny Llama's products at 58 % of SkylakeX's speed on a Zen 5."""
    info = cpu_info()
    out = {f"cpu_{k.split()[-1]}": info[k] for k in ("cpu family", "model") if k in info}
    pools = blas_pools()
    if pools:
        p = pools[0]
        arch = f", {p['architecture']} kernels" if p.get("architecture") else ""
        forced = os.environ.get("OPENBLAS_CORETYPE") if p.get("internal_api") == "openblas" else None
        out["numpy_blas"] = f"{p.get('internal_api')} {p.get('version')}{arch}" + (
            f" (OPENBLAS_CORETYPE={forced})" if forced else ""
        )
    return out


class CPURuntime(DeviceRuntime):
    """One device, ``cpu:0``: the host."""

    def __init__(self) -> None:
        from .threads import apply

        apply()  # one thread budget for BLAS and generated kernels (threads.py)
        self._streams: weakref.WeakSet[CPUStream] = weakref.WeakSet()

    def device_count(self) -> int:
        return 1

    def properties(self, index: int) -> DeviceProperties:
        try:
            total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        except (ValueError, OSError, AttributeError):
            total = 0
        return DeviceProperties(
            name=_cpu_name(),
            vendor=platform.machine(),
            total_memory=total,
            compute_units=os.cpu_count() or 1,
            dtypes=_DTYPES,
            driver_version=f"numpy {np.__version__}",
            runtime_version=f"python {platform.python_version()}",
            extra={**_cpu_extra(), **bf16.describe()},
        )

    # -- memory -------------------------------------------------------------------------
    def allocate(self, index: int, nbytes: int) -> np.ndarray:
        try:
            raw = np.empty(max(nbytes, 1) + ALIGN, np.uint8)
            skip = -raw.ctypes.data % ALIGN
            return raw[skip : skip + max(nbytes, 1)]
        except MemoryError as exc:
            raise OutOfMemoryError(f"[cpu] cannot allocate {nbytes} bytes of host memory") from exc

    def free(self, index: int, buffer: Any) -> None:
        pass  # numpy frees the array when the last reference goes

    def view(self, buffer: np.ndarray, offset: int, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        return np.ndarray(shape, dtype, buffer, offset)

    def memset(
        self, index: int, buffer: np.ndarray, offset: int, value: int, nbytes: int, stream: Any
    ) -> None:
        self._run(stream, buffer[offset : offset + nbytes].fill, value)

    # -- copies -------------------------------------------------------------------------
    def _run(self, stream: Any, fn: Any, *args: Any, blocking: bool = True) -> None:
        if stream is None:
            fn(*args)
            return
        if blocking and stream.capture is not None:
            stream.synchronize()  # raises: a capture cannot wait
        f = stream.submit(fn, *args)
        if blocking:
            f.result()

    def copy_h2d(
        self,
        index: int,
        dst: np.ndarray,
        dst_offset: int,
        src: np.ndarray,
        stream: Any,
        blocking: bool = True,
    ) -> None:
        flat = src.reshape(-1).view(np.uint8)
        self._run(stream, np.copyto, dst[dst_offset : dst_offset + flat.size], flat, blocking=blocking)

    def copy_d2h(
        self,
        index: int,
        dst: np.ndarray,
        src: np.ndarray,
        src_offset: int,
        stream: Any,
        blocking: bool = True,
    ) -> None:
        flat = dst.reshape(-1).view(np.uint8)
        self._run(stream, np.copyto, flat, src[src_offset : src_offset + flat.size], blocking=blocking)

    def copy_d2d(
        self,
        index: int,
        dst: np.ndarray,
        dst_offset: int,
        src: np.ndarray,
        src_offset: int,
        nbytes: int,
        stream: Any,
        blocking: bool = True,
    ) -> None:
        self._run(
            stream,
            np.copyto,
            dst[dst_offset : dst_offset + nbytes],
            src[src_offset : src_offset + nbytes],
            blocking=blocking,
        )

    # -- streams and events -------------------------------------------------------------
    def default_stream(self, index: int) -> Any:
        return None  # the calling thread: work runs immediately

    def create_stream(self, index: int) -> CPUStream:
        s = CPUStream()
        self._streams.add(s)
        return s

    def synchronize_stream(self, stream: Any) -> None:
        if stream is not None:
            stream.synchronize()

    def query_stream(self, stream: Any) -> bool:
        return stream is None or stream.done()

    def create_event(self, index: int) -> CPUEvent:
        return CPUEvent()

    def record_event(self, event: CPUEvent, stream: Any) -> None:
        if stream is None:
            event.time = time.perf_counter()
            event.flag = _DONE
        else:
            event.flag = threading.Event()
            stream.submit(event.fire)

    def synchronous_stream(self, stream: Any) -> bool:
        # the default stream runs work in the calling thread; a CPUStream queues it to a worker
        return stream is None

    def stream_wait_event(self, stream: Any, event: CPUEvent) -> None:
        if stream is None:
            event.wait()
        else:
            stream.submit(event.wait)

    def synchronize_event(self, event: CPUEvent) -> None:
        event.wait()

    def query_event(self, event: CPUEvent) -> bool:
        return event.flag is None or event.flag.is_set()

    def elapsed_ms(self, start: CPUEvent, end: CPUEvent) -> float:
        if start.flag is None or end.flag is None:
            raise DeviceError(
                "[cpu] elapsed_ms needs two recorded events; record both with record_event first"
            )
        start.wait()
        end.wait()
        return (end.time - start.time) * 1000.0

    def synchronize(self, index: int) -> None:
        for s in list(self._streams):
            s.synchronize()

    # -- graph capture: the bound calls launched on a stream, replayed -------------------
    def supports_graphs(self, index: int) -> bool:
        return True

    def graph_worthwhile(self, index: int, launches: int, copy_bytes: int) -> bool:
        # NOTE: a replay saves ~1 us of Python per launch; memcpy moves ~8 KiB in that time
        return copy_bytes <= 8192 * launches

    def begin_capture(self, index: int, stream: Any) -> None:
        if not isinstance(stream, CPUStream):
            raise DeviceError(
                f"[cpu] begin_capture needs a stream from create_stream, got {stream!r} (the default "
                f"stream runs work at once and cannot capture)"
            )
        if stream.capture is not None:
            raise DeviceError("[cpu] begin_capture on a stream that already captures; end that capture first")
        stream.synchronize()  # earlier work first: a capture starts from an idle queue
        stream.capture = []

    def end_capture(self, index: int, stream: Any) -> CPUGraph:
        calls = getattr(stream, "capture", None)
        if calls is None:
            raise DeviceError("[cpu] end_capture on a stream that does not capture; call begin_capture first")
        stream.capture = None
        return CPUGraph(calls)

    def launch_graph(self, graph: CPUGraph, stream: Any) -> None:
        if stream is None:
            graph.run()
        else:
            stream.submit(graph.run)
