"""The OpenCL device runtime: every device of every platform, buffers, queues and events."""

from __future__ import annotations

import collections
import functools
import math
import os
import time
import weakref
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import pyopencl as cl

from adapter_api import DeviceError, DeviceProperties, DeviceRuntime, OpArgumentError, OutOfMemoryError

from . import platforms as platforms_mod
from . import profile, programs
from .errors import check

_PROFILING = cl.command_queue_properties.PROFILING_ENABLE
_COMPLETE = cl.command_execution_status.COMPLETE
_MEM = cl.MemoryObjectHolder
_ZERO = np.int64(0)
#: every launch goes through this (OARLOCK_OPENCL_PROFILE=1: keeping its event, see profile.py)
_enqueue = profile.enqueue if profile.ENABLED else cl.enqueue_nd_range_kernel
_SMALL_H2D = 1 << 16  #: host->device copies up to this many bytes do not wait (see copy_h2d)
# NOTE: pyopencl's generic Kernel.set_arg probes each by-value argument's type (through
# exceptions) before taking its bytes: about 9 us per numpy scalar on PoCL, most of a launch.
# The multi-setters its own generated invokers use take buffers and by-value bytes directly.
_FAST_ARGS = hasattr(cl.Kernel, "_set_arg_multi") and hasattr(cl.Kernel, "_set_arg_buf_multi")


class CLView(NamedTuple):
    """What kernels receive for a tensor: a contiguous region of a ``cl.Buffer``.

    ``offset`` is in bytes (a multiple of the itemsize); kernels pass ``eoff`` (elements).
    """

    buffer: Any  #: pyopencl.Buffer
    offset: int  #: bytes from the start of ``buffer``
    shape: tuple[int, ...]
    dtype: np.dtype

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def eoff(self) -> np.int64:
        # NOTE: most views start at 0; building an np.int64 costs about a microsecond per operand
        return np.int64(self.offset // self.dtype.itemsize) if self.offset else _ZERO

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize


def _set_args(kernel: cl.Kernel, args: tuple[Any, ...]) -> None:
    if _FAST_ARGS:
        bufs: list[Any] = []
        vals: list[Any] = []
        for i, a in enumerate(args):
            if isinstance(a, _MEM):
                bufs += (i, a)
            else:
                vals += (i, a)
        kernel._set_arg_multi(tuple(bufs))
        kernel._set_arg_buf_multi(tuple(vals))
    else:
        kernel.set_args(*args)


class Recorder:
    """Stands in for a command queue while a kernel's binder runs it once (see kernels.bind).

    ``OpenCLDevice.launch`` / ``copy`` / ``fill`` given a Recorder record their work instead of
    enqueuing it: each launch gets a private ``cl.Kernel`` (from the device's pool) whose
    arguments are set here, once, so a replay is one ``enqueue_nd_range_kernel`` per launch.
    Scratch buffers the kernel asked for stay with the recording. An index check
    (``launch._check_index``) becomes a note the next host synchronisation of ``queue`` reads
    (:meth:`OpenCLDevice.settle`), not a blocking read per call.
    """

    __slots__ = ("dev", "queue", "steps", "private", "keep")

    def __init__(self, dev: OpenCLDevice, queue: cl.CommandQueue) -> None:
        self.dev, self.queue = dev, queue
        self.steps: list[Any] = []
        self.private: list[tuple[tuple[str, str, str], cl.Kernel]] = []
        #: the launches' arguments: a kernel object holds no reference to its buffers
        self.keep: list[tuple[Any, ...]] = []

    def launch(self, kernel: cl.Kernel, grid: tuple[int, ...], local: Any, args: tuple[Any, ...]) -> None:
        key = self.dev.kernel_keys.get(id(kernel))
        if key is None:
            raise LookupError(f"kernel {kernel.function_name!r} was not made by OpenCLDevice.kernel")
        pool = self.dev.kernel_pool.get(key)
        pk = pool.pop() if pool else self.dev.new_kernel(key)
        self.private.append((key, pk))
        _set_args(pk, args)
        self.keep.append(args)
        self.steps.append(functools.partial(_enqueue, self.queue, pk, grid, local))

    def buffers(self) -> list[Any]:
        """Every buffer the recorded launches take (each once)."""
        seen = {id(a): a for args in self.keep for a in args if isinstance(a, _MEM)}
        return list(seen.values())

    def check(self, note: tuple[Any, ...]) -> None:
        self.steps.append(functools.partial(self.dev.note_check, self.queue, note))

    def finish(self) -> Any:
        """The zero-argument call that replays what was recorded; its private kernels go back
        to the device's pool when it is dropped (OpenCL takes arguments at enqueue time)."""
        steps = tuple(self.steps)
        if len(steps) == 1:
            call = steps[0]
        else:

            def call() -> None:
                for f in steps:
                    f()

        call.keep = self.keep  # type: ignore[attr-defined]  # scratch buffers live as long as the call
        if self.private:
            weakref.finalize(call, self.dev.give_back, self.private)
        return call


@dataclass(slots=True)
class OpenCLEvent:
    """An event handle: the marker enqueued by the last ``record_event`` (None before)."""

    index: int
    marker: Any = None


class OpenCLDevice:
    """One OpenCL device: its context, default queue and built programs, created on first use."""

    def __init__(self, index: int, device: cl.Device) -> None:
        self.index = index
        self.device = device
        self.name = device.name.strip()
        exts = device.extensions.split()
        self.has_fp64 = "cl_khr_fp64" in exts or bool(device.double_fp_config)
        self.has_fp16 = "cl_khr_fp16" in exts
        self.has_int64_atomics = "cl_khr_int64_base_atomics" in exts
        #: CPU devices (PoCL) get kernels shaped for caches and vector registers, not warps;
        #: OARLOCK_OPENCL_SHAPES=gpu|cpu overrides the guess (e.g. to test the GPU kernels on PoCL)
        shapes = os.environ.get("OARLOCK_OPENCL_SHAPES", "").lower()
        self.is_cpu = shapes == "cpu" or (shapes != "gpu" and bool(device.type & cl.device_type.CPU))
        wg = device.max_work_group_size
        #: work-group size of 1-d kernels and row reductions (a power of two)
        self.local_size = min(256, 1 << (wg.bit_length() - 1))
        # NOTE: PoCL's CPU device pays per work-group and its vectoriser likes contiguous loops:
        # elementwise kernels there take 64 consecutive elements per item, 16 items a group
        # (2x the bandwidth of one element per item; see benchmarks/opencl.py). GPUs keep one
        # element per item, so neighbouring items touch neighbouring addresses.
        #: elements per work item, and work-group size, of elementwise kernels
        self.per_item = 64 if self.is_cpu else 1
        self.ew_local = min(16, self.local_size) if self.is_cpu else self.local_size
        self._context: cl.Context | None = None
        self._queue: cl.CommandQueue | None = None
        self.queues: list[cl.CommandQueue] = []
        self.kernels: dict[tuple[str, str, str], cl.Kernel] = {}
        self.programs: dict[tuple[str, str], cl.Program] = {}
        self.allocated = 0
        self._err: cl.Buffer | None = None
        #: id of a shared kernel -> its (family, key, name); idle private kernels per key
        self.kernel_keys: dict[int, tuple[str, str, str]] = {}
        self.kernel_pool: dict[tuple[str, str, str], list[cl.Kernel]] = {}
        #: queue -> index checks of bound launches not yet read (see :meth:`settle`)
        self.unchecked: dict[Any, set[tuple[Any, ...]]] = {}
        #: recorded bound calls by kernel, queue, views and attributes (see launch._binder)
        self.bound: collections.OrderedDict[tuple[Any, ...], Any] = collections.OrderedDict()
        self.bound_scratch = 0  #: bytes of scratch buffers the cached calls hold
        #: events of small host->device copies not waited for (see copy_h2d)
        self.inflight: list[Any] = []

    @property
    def context(self) -> cl.Context:
        if self._context is None:
            with check("creating a context", self.name):
                self._context = cl.Context([self.device])
        return self._context

    @property
    def queue(self) -> cl.CommandQueue:
        if self._queue is None:
            self._queue = self.new_queue()
        return self._queue

    def new_queue(self) -> cl.CommandQueue:
        with check("creating a command queue", self.name):
            q = cl.CommandQueue(self.context, self.device, properties=_PROFILING)
        self.queues.append(q)
        return q

    def kernel(self, family: str, key: str, name: str) -> cl.Kernel:
        """The kernel ``name`` of program (family, key), building the program on first use."""
        k = self.kernels.get((family, key, name))
        if k is None:
            prg = self.programs.get((family, key))
            if prg is None:
                prg = self.programs[(family, key)] = programs.build(self, family, key)
            with check(f"creating kernel '{name}' of program '{family}/{key}'", self.name):
                k = self.kernels[(family, key, name)] = cl.Kernel(prg, name)
            self.kernel_keys[id(k)] = (family, key, name)
        return k

    def new_kernel(self, key: tuple[str, str, str]) -> cl.Kernel:
        """A kernel object of its own for a bound launch (its arguments stay set)."""
        family, pkey, name = key
        with check(f"creating kernel '{name}' of program '{family}/{pkey}'", self.name):
            return cl.Kernel(self.programs[(family, pkey)], name)

    def give_back(self, private: list[tuple[tuple[str, str, str], cl.Kernel]]) -> None:
        for key, k in private:
            self.kernel_pool.setdefault(key, []).append(k)

    def note_check(self, queue: Any, note: tuple[Any, ...]) -> None:
        s = self.unchecked.get(queue)
        if s is None:
            s = self.unchecked[queue] = set()
        s.add(note)

    def read_checks(self, queue: Any) -> Any:
        """Before a blocking read of ``queue``: where bound launches left index checks on it,
        enqueue a read of the error words too (no wait; the blocking read waits for both)."""
        if queue not in self.unchecked:
            return None
        host = np.empty(2, np.int64)
        return host, cl.enqueue_copy(queue, host, self.error_buffer, is_blocking=False)

    def drained(self, queue: Any, checks: Any = None) -> None:
        """``queue`` has no work left: forget finished copies, read pending index checks
        (``checks``: what :meth:`read_checks` enqueued before the wait)."""
        if self.inflight:
            self.inflight = [e for e in self.inflight if e.command_queue != queue]
        if self.unchecked:
            self.settle(queue, checks)

    def settle(self, queue: Any, checks: Any = None) -> None:
        """Read the index checks bound launches left on ``queue`` (call once it is drained):
        raise the error a kernel reported, naming the ops it may have come from."""
        notes = self.unchecked.pop(queue, None)
        if not notes:
            return
        if checks is None:
            bad = self.take_error(queue)
        else:
            host, evt = checks
            evt.wait()  # already complete: the queue is in order and was drained after it
            bad = None
            if host[0]:
                bad = int(host[1])
                cl.enqueue_fill_buffer(queue, self.error_buffer, np.uint8(0), 0, 16).wait()
        if bad is None:
            return
        from .launch import index_error

        raise index_error(bad, sorted(notes, key=repr))

    def launch(
        self,
        queue: cl.CommandQueue,
        kernel: cl.Kernel,
        grid: tuple[int, ...],
        local: tuple[int, ...] | None,
        *args: Any,
    ) -> None:
        """Set ``args`` (buffers, numpy scalars, numpy structs) and enqueue ``kernel`` (or
        record both, when ``queue`` is a :class:`Recorder`)."""
        if type(queue) is Recorder:
            queue.launch(kernel, grid, local, args)
            return
        _set_args(kernel, args)
        _enqueue(queue, kernel, grid, local)

    @property
    def error_buffer(self) -> cl.Buffer:
        """Two int64 words kernels set on a bad index: (flag, offending value); kept zeroed."""
        if self._err is None:
            self._err = cl.Buffer(self.context, cl.mem_flags.READ_WRITE, 16)
            cl.enqueue_fill_buffer(self.queue, self._err, np.uint8(0), 0, 16).wait()
        return self._err

    def take_error(self, queue: cl.CommandQueue) -> int | None:
        """Wait for ``queue``; return the bad index a kernel reported (and clear it), or None."""
        host = np.zeros(2, np.int64)
        cl.enqueue_copy(queue, host, self.error_buffer, is_blocking=True)
        if not host[0]:
            return None
        cl.enqueue_fill_buffer(queue, self._err, np.uint8(0), 0, 16).wait()
        return int(host[1])

    # -- helpers for kernels: scratch buffers, fills and plain copies -------------------
    def temp(self, nbytes: int) -> cl.Buffer:
        """A scratch buffer; dropping it is safe while queued work still uses it."""
        return cl.Buffer(self.context, cl.mem_flags.READ_WRITE, max(8, nbytes))

    def fill(
        self, queue: cl.CommandQueue, buf: cl.Buffer, pattern: np.ndarray, offset: int, nbytes: int
    ) -> None:
        if nbytes > 0:
            if type(queue) is Recorder:
                queue.steps.append(
                    functools.partial(cl.enqueue_fill_buffer, queue.queue, buf, pattern, offset, nbytes)
                )
                return
            cl.enqueue_fill_buffer(queue, buf, pattern, offset, nbytes)

    def copy(
        self,
        queue: cl.CommandQueue,
        dst: cl.Buffer,
        dst_offset: int,
        src: cl.Buffer,
        src_offset: int,
        nbytes: int,
    ) -> None:
        if nbytes > 0 and not (dst == src and dst_offset == src_offset):
            if type(queue) is Recorder:
                queue.steps.append(
                    functools.partial(
                        cl.enqueue_copy,
                        queue.queue,
                        dst,
                        src,
                        byte_count=nbytes,
                        src_offset=src_offset,
                        dst_offset=dst_offset,
                    )
                )
                return
            cl.enqueue_copy(queue, dst, src, byte_count=nbytes, src_offset=src_offset, dst_offset=dst_offset)


def _device_type(bits: int) -> str:
    names = [
        n
        for n, b in (
            ("cpu", cl.device_type.CPU),
            ("gpu", cl.device_type.GPU),
            ("accelerator", cl.device_type.ACCELERATOR),
        )
        if bits & b
    ]
    return "|".join(names) or "other"


@dataclass(frozen=True, slots=True)
class Unavailable:
    """A device the plugin does not offer, and why (its compiler cannot build, or it is hidden)."""

    platform: str
    device: str
    reason: str

    def __str__(self) -> str:
        return f"{self.platform} / {self.device}: {self.reason}"


def _list_devices() -> tuple[list[cl.Device], list[Unavailable], str]:
    """Working devices in offer order, the devices left out (with why), and why there are none."""
    try:
        platforms = cl.get_platforms()
    except (cl.Error, RuntimeError) as exc:
        return (
            [],
            [],
            (
                f"no OpenCL platform found ({exc}); install a driver, e.g. pip install "
                f"pocl-binary-distribution"
            ),
        )
    found, left_out = [], []
    for p in platforms:
        try:
            devs = p.get_devices()
        except cl.Error:
            continue
        for d in devs:
            if platforms_mod.hidden(p.name):
                left_out.append(Unavailable(p.name, d.name.strip(), "hidden by OARLOCK_OPENCL_HIDE"))
            else:
                found.append(d)
    found.sort(key=lambda d: (*platforms_mod.sort_key(d.platform.name, _device_type(d.type)), d.name))
    usable = []
    for d, res in zip(found, platforms_mod.probe(found), strict=True):
        if res.ok:
            usable.append(d)
        else:
            left_out.append(
                Unavailable(
                    d.platform.name,
                    d.name.strip(),
                    f"its OpenCL compiler cannot build a program ({res.reason}); {platforms_mod.FIX_BUILD}",
                )
            )
    reason = ""
    if not usable:
        reason = (
            "OpenCL platforms found, but none has a device; install a driver"
            if not left_out
            else "no usable OpenCL device: " + "; ".join(str(u) for u in left_out)
        )
    return usable, left_out, reason


class OpenCLRuntime(DeviceRuntime):
    """Every working device of every OpenCL platform: GPUs and accelerators first, then CPUs
    (PoCL before Intel's CPU runtime), then by platform and device name.

    A device whose compiler cannot build the probe program, or whose platform
    ``OARLOCK_OPENCL_HIDE`` names, is not given an index; :attr:`unavailable` lists it with why.

    Contexts and queues are created on the first use of a device index. Streams are command
    queues (with profiling), events are markers, buffers are ``cl.Buffer``.
    """

    def __init__(self) -> None:
        cl_devices, self.unavailable, self.reason = _list_devices()
        #: ``unavailable``: devices not offered, with why; ``reason``: why there are none ("" when
        #: there are some)
        self.devices = [OpenCLDevice(i, d) for i, d in enumerate(cl_devices)]

    @property
    def unavailable_reason(self) -> str | None:
        """Why a device index past the last is not there: the devices left out, or no driver."""
        if self.devices and self.unavailable:
            return "not offered: " + "; ".join(str(u) for u in self.unavailable)
        return self.reason or None

    # -- devices -----------------------------------------------------------------------
    def device(self, index: int) -> OpenCLDevice:
        try:
            return self.devices[index]
        except (IndexError, TypeError):
            names = ", ".join(f"opencl:{d.index} ({d.name})" for d in self.devices) or "none"
            raise DeviceError(
                f"[opencl] no device with index {index!r}; devices: {names}"
                + (f" ({self.reason})" if self.reason else "")
            ) from None

    def device_count(self) -> int:
        return len(self.devices)

    def properties(self, index: int) -> DeviceProperties:
        dev = self.device(index)
        d = dev.device
        dtypes = ["bool", "uint8", "int32", "int64", "float16", "float32", "uint16", "uint32", "uint64"]
        # NOTE: complex64/complex128 are not held and no kernel is registered for them: the core
        # runs a complex op on the cpu plugin (a FallbackWarning; strict mode raises naming the op
        # and the dtype), and a cast to them declines (KernelNotFoundError) the same way
        if dev.has_fp64:
            dtypes.append("float64")
        return DeviceProperties(
            name=dev.name,
            vendor=d.vendor.strip(),
            total_memory=d.global_mem_size,
            compute_units=d.max_compute_units,
            dtypes=tuple(dtypes),
            driver_version=d.driver_version,
            runtime_version=d.version,
            extra={
                "platform": d.platform.name,
                "implementation": platforms_mod.implementation(d.platform.name),
                "platform_version": d.platform.version,
                "opencl_c_version": d.opencl_c_version,
                "device_type": _device_type(d.type),
                "local_memory": d.local_mem_size,
                "max_alloc": d.max_mem_alloc_size,
                "max_work_group_size": d.max_work_group_size,
                "max_clock_mhz": d.max_clock_frequency,
                "fp64": dev.has_fp64,
                "fp16": dev.has_fp16,
                "pyopencl": cl.VERSION_TEXT,
            },
        )

    # -- memory ------------------------------------------------------------------------
    def allocate(self, index: int, nbytes: int) -> cl.Buffer:
        dev = self.device(index)
        # NOTE: rounded up to 8 bytes (at least 1 is required): scatter_add on 1- and 2-byte
        # dtypes does compare-and-swap on the enclosing 32-bit word.
        size = max(8, (int(nbytes) + 7) & ~7)
        max_alloc = dev.device.max_mem_alloc_size
        if size > max_alloc:
            raise OutOfMemoryError(
                f"[opencl] allocating {nbytes} bytes on opencl:{index} ('{dev.name}') failed: the "
                f"device allows at most {max_alloc} bytes per buffer ({dev.allocated} bytes in "
                f"use); use smaller tensors"
            )
        with check(f"allocating on opencl:{index} ({dev.allocated} bytes in use)", dev.name, nbytes=nbytes):
            buf = cl.Buffer(dev.context, cl.mem_flags.READ_WRITE, size)
        dev.allocated += size
        return buf

    def free(self, index: int, buffer: cl.Buffer) -> None:
        dev = self.device(index)
        dev.allocated -= buffer.size
        buffer.release()

    def view(self, buffer: Any, offset: int, shape: tuple[int, ...], dtype: np.dtype) -> CLView:
        dtype = np.dtype(dtype)
        if offset % dtype.itemsize:
            raise OpArgumentError(
                f"[opencl] view offset {offset} is not a multiple of the itemsize of {dtype}; "
                f"align tensor offsets to their element size"
            )
        return CLView(buffer, offset, tuple(shape), dtype)

    def memset(self, index: int, buffer: Any, offset: int, value: int, nbytes: int, stream: Any) -> None:
        if nbytes <= 0:
            return
        dev = self.device(index)
        with check("memset", dev.name, nbytes=nbytes):
            cl.enqueue_fill_buffer(stream or dev.queue, buffer, np.uint8(value & 0xFF), offset, nbytes)

    # -- copies ------------------------------------------------------------------------
    def copy_h2d(
        self, index: int, dst: Any, dst_offset: int, src: np.ndarray, stream: Any, blocking: bool = True
    ) -> None:
        if src.nbytes == 0:
            return
        if not src.flags.c_contiguous:
            if not blocking:
                raise OpArgumentError(
                    "[opencl] copy_h2d got a non-contiguous host array for an "
                    "async copy; pass np.ascontiguousarray(src)"
                )
            src = np.ascontiguousarray(src)
        dev = self.device(index)
        q = stream or dev.queue
        with check("copy host->device", dev.name, nbytes=src.nbytes):
            if blocking and src.nbytes <= _SMALL_H2D:
                # NOTE: a blocking write waits for the whole queue (a host synchronisation per
                # input of every static run); a small one copies the host array and enqueues
                # without waiting. pyopencl's event keeps that copy alive and waits for it when
                # dropped, so the events are kept until the queue is next drained.
                evt = cl.enqueue_copy(
                    q, dst, src.reshape(-1).copy(), dst_offset=dst_offset, is_blocking=False
                )
                dev.inflight.append(evt)
                if len(dev.inflight) > 256:
                    dev.inflight.pop(0).wait()
                return
            cl.enqueue_copy(q, dst, src.reshape(-1), dst_offset=dst_offset, is_blocking=blocking)

    def copy_d2h(
        self, index: int, dst: np.ndarray, src: Any, src_offset: int, stream: Any, blocking: bool = True
    ) -> None:
        if dst.nbytes == 0:
            return
        if not dst.flags.c_contiguous:
            raise OpArgumentError(
                "[opencl] copy_d2h needs a C-contiguous host array; got a "
                "strided one; pass np.empty(shape, dtype)"
            )
        dev = self.device(index)
        q = stream or dev.queue
        checks = dev.read_checks(q) if blocking and dev.unchecked else None
        with check("copy device->host", dev.name, nbytes=dst.nbytes):
            cl.enqueue_copy(q, dst.reshape(-1), src, src_offset=src_offset, is_blocking=blocking)
        if blocking:
            dev.drained(q, checks)

    def copy_d2d(
        self,
        index: int,
        dst: Any,
        dst_offset: int,
        src: Any,
        src_offset: int,
        nbytes: int,
        stream: Any,
        blocking: bool = True,
    ) -> None:
        if nbytes <= 0:
            return
        dev = self.device(index)
        with check("copy device->device", dev.name, nbytes=nbytes):
            evt = cl.enqueue_copy(
                stream or dev.queue, dst, src, byte_count=nbytes, src_offset=src_offset, dst_offset=dst_offset
            )
            if blocking:
                evt.wait()

    # -- streams -----------------------------------------------------------------------
    def default_stream(self, index: int) -> cl.CommandQueue:
        return self.device(index).queue

    def create_stream(self, index: int) -> cl.CommandQueue:
        return self.device(index).new_queue()

    def synchronize_stream(self, stream: Any) -> None:
        stream.finish()
        for dev in self.devices:
            if dev._queue is not None and (stream is dev._queue or stream in dev.queues):
                dev.drained(stream)

    def query_stream(self, stream: Any) -> bool:
        # NOTE: OpenCL cannot ask a queue whether it is idle; a marker enqueued now completes
        # within microseconds on an idle queue, so give it a moment before answering "busy".
        marker = cl.enqueue_marker(stream)
        stream.flush()
        deadline = time.perf_counter() + 0.002
        while marker.command_execution_status != _COMPLETE:
            if time.perf_counter() > deadline:
                return False
            time.sleep(0)
        return True

    # -- events ------------------------------------------------------------------------
    def create_event(self, index: int) -> OpenCLEvent:
        self.device(index)
        return OpenCLEvent(index)

    def record_event(self, event: OpenCLEvent, stream: Any) -> None:
        event.marker = cl.enqueue_marker(stream or self.device(event.index).queue)

    def stream_wait_event(self, stream: Any, event: OpenCLEvent) -> None:
        if event.marker is not None:
            cl.enqueue_barrier(stream or self.device(event.index).queue, wait_for=[event.marker])

    def synchronize_event(self, event: OpenCLEvent) -> None:
        if event.marker is not None:
            event.marker.wait()

    def query_event(self, event: OpenCLEvent) -> bool:
        if event.marker is None:
            return True
        return event.marker.command_execution_status == _COMPLETE

    def elapsed_ms(self, start: OpenCLEvent, end: OpenCLEvent) -> float:
        if start.marker is None or end.marker is None:
            raise OpArgumentError(
                "[opencl] elapsed_ms needs two recorded events; got an event "
                "never recorded; call record_event first"
            )
        end.marker.wait()
        start.marker.wait()
        dev = self.device(start.index)
        with check("reading event profiling info", dev.name):
            return (end.marker.profile.end - start.marker.profile.end) * 1e-6

    # -- whole device ------------------------------------------------------------------
    def synchronize(self, index: int) -> None:
        dev = self.device(index)
        for q in dev.queues:
            q.finish()
        for q in dev.queues:
            dev.drained(q)
