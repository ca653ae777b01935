"""Device runtime: the first of the four interfaces a plugin implements.

A plugin subclasses :class:`DeviceRuntime` once per device type and registers the class (or
any zero-argument factory) with ``registry.add_runtime("mydev", MyRuntime)``. The core creates
the runtime lazily, the first time a device of that type is used, so constructing it may open
contexts and queues.

Buffers, streams and events are *opaque handles*: whatever objects the plugin likes. The core
only passes them back. All sizes and offsets are in bytes.

Methods that raise ``NotImplementedError("need ...")`` are required; the others have working
defaults (synchronous execution on one implicit stream).

Example (the smallest useful runtime, host memory standing in for a device)::

    class MyRuntime(DeviceRuntime):
        def device_count(self):
            return 1
        def properties(self, index):
            return DeviceProperties(name="sim", vendor="me")
        def allocate(self, index, nbytes):
            return bytearray(nbytes)
        def free(self, index, buffer):
            pass
        def view(self, buffer, offset, shape, dtype):
            n = int(np.prod(shape)) * np.dtype(dtype).itemsize
            return np.frombuffer(buffer, np.uint8, n, offset).view(dtype).reshape(shape)
        ...
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass
class DeviceProperties:
    """What ``oarlock devices`` and ``fw.get_device_properties`` show for one device."""

    name: str
    vendor: str = "unknown"
    total_memory: int = 0  #: bytes, 0 when unknown
    compute_units: int = 0
    dtypes: tuple[str, ...] = ()  #: dtype names the device can hold (kernels say what runs)
    driver_version: str = ""
    runtime_version: str = ""
    extra: dict[str, Any] = field(default_factory=dict)  #: anything else worth showing


class DeviceRuntime:
    """Memory, copies, streams and events of one device type.

    ``index`` arguments are the device ordinal (``opencl:1`` -> 1). ``stream`` arguments are
    handles from :meth:`create_stream` or :meth:`default_stream`.
    """

    #: True when the plugin pools memory itself; the core's caching allocator then passes
    #: allocations straight through (statistics still work).
    own_pool: bool = False

    # -- devices ------------------------------------------------------------------------
    def device_count(self) -> int:
        """Number of devices of this type; 0 is allowed (the type is then listed as empty)."""
        raise NotImplementedError("need device_count")

    def properties(self, index: int) -> DeviceProperties:
        """Name, vendor, memory and versions of device ``index``."""
        raise NotImplementedError("need properties")

    # -- memory -------------------------------------------------------------------------
    def allocate(self, index: int, nbytes: int) -> Any:
        """Return a new buffer of at least ``nbytes`` bytes (``nbytes`` may be 0).

        Raise :class:`adapter_api.OutOfMemoryError` when the device has no room: the core
        then releases its cache and retries once.
        """
        raise NotImplementedError("need allocate")

    def free(self, index: int, buffer: Any) -> None:
        """Release a buffer. The core calls it only when no queued work still uses it
        (or the device orders frees after earlier work on the same stream)."""
        raise NotImplementedError("need free")

    def view(self, buffer: Any, offset: int, shape: tuple[int, ...], dtype: np.dtype) -> Any:
        """Return the native array object kernels receive for a contiguous region
        (a numpy array, a pyopencl array, a cupy array, ...)."""
        raise NotImplementedError("need view")

    def memset(self, index: int, buffer: Any, offset: int, value: int, nbytes: int, stream: Any) -> None:
        """Set ``nbytes`` bytes at ``offset`` to the byte ``value``."""
        raise NotImplementedError("need memset")

    # -- copies -------------------------------------------------------------------------
    def copy_h2d(
        self, index: int, dst: Any, dst_offset: int, src: np.ndarray, stream: Any, blocking: bool = True
    ) -> None:
        """Copy the bytes of the C-contiguous host array ``src`` into ``dst`` at ``dst_offset``.

        With ``blocking=False`` the copy may still run when this returns; the caller keeps
        ``src`` alive until the stream is synchronized.
        """
        raise NotImplementedError("need copy_h2d")

    def copy_d2h(
        self, index: int, dst: np.ndarray, src: Any, src_offset: int, stream: Any, blocking: bool = True
    ) -> None:
        """Copy ``dst.nbytes`` bytes from ``src`` at ``src_offset`` into the host array ``dst``."""
        raise NotImplementedError("need copy_d2h")

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
        """Copy ``nbytes`` bytes between two buffers of the same device."""
        raise NotImplementedError("need copy_d2d")

    # -- streams (defaults: one synchronous stream) -------------------------------------
    def default_stream(self, index: int) -> Any:
        """The stream kernels run on unless the user picks another."""
        return None

    def create_stream(self, index: int) -> Any:
        """A new stream; work on one stream runs in order."""
        return None

    def synchronize_stream(self, stream: Any) -> None:
        """Block until all work queued on ``stream`` has finished."""

    def query_stream(self, stream: Any) -> bool:
        """True when all work queued on ``stream`` has finished."""
        return True

    # -- events -------------------------------------------------------------------------
    def create_event(self, index: int) -> Any:
        """A new event, able to measure time."""
        raise NotImplementedError("need create_event")

    def record_event(self, event: Any, stream: Any) -> None:
        """Mark ``event`` as completing when the work queued so far on ``stream`` finishes."""
        raise NotImplementedError("need record_event")

    def stream_wait_event(self, stream: Any, event: Any) -> None:
        """Make later work on ``stream`` wait until ``event`` has completed."""
        self.synchronize_event(event)

    def synchronize_event(self, event: Any) -> None:
        """Block until ``event`` has completed."""
        raise NotImplementedError("need synchronize_event")

    def query_event(self, event: Any) -> bool:
        """True when ``event`` has completed."""
        self.synchronize_event(event)
        return True

    def elapsed_ms(self, start: Any, end: Any) -> float:
        """Milliseconds between two completed events."""
        raise NotImplementedError("need elapsed_ms")

    def synchronous_stream(self, stream: Any) -> bool:
        """True when work launched on ``stream`` has finished by the time the launching call
        returns (the kernel runs in the caller's thread, as on a host device's default
        stream), so that an event recorded there would only read the host clock. The
        profiler then times a kernel on that stream by two host clock reads around its launch
        instead of two events through :meth:`create_event` / :meth:`record_event` /
        :meth:`elapsed_ms`: the same device span, at a fraction of the cost. Default False
        (an asynchronous queue: the profiler uses the events).

        Example (a host device whose default stream, ``None``, runs work in the call)::

            def synchronous_stream(self, stream):
                return stream is None
        """
        return False

    # -- whole device -------------------------------------------------------------------
    def synchronize(self, index: int) -> None:
        """Block until all work on device ``index`` has finished."""

    # -- graph capture and replay (optional) ----------------------------------------------
    # A runtime that can record the work launched on a stream and launch the recording again
    # (CUDA graphs, a command buffer, a host-side list of bound calls) offers it here; the
    # executor then runs a whole static program as one launch. Plugins without it run the
    # program's instruction list: nothing is lost but the launch overhead.
    def supports_graphs(self, index: int) -> bool:
        """True when device ``index`` implements :meth:`begin_capture`, :meth:`end_capture`
        and :meth:`launch_graph`. Default False: the executor never asks for a capture."""
        return False

    def graph_worthwhile(self, index: int, launches: int, copy_bytes: int) -> bool:
        """Whether replaying a graph of ``launches`` kernel launches, which needs
        ``copy_bytes`` of device-to-device copies around each replay (inputs in, outputs
        out, parameters an optimizer moved), beats launching the kernels one by one.
        Default True: on an accelerator a launch costs microseconds and a copy runs at memory
        bandwidth. A host device, where a copy competes with the work itself, may say no for
        programs that move much data per launch; the executor then runs the list."""
        return True

    def begin_capture(self, index: int, stream: Any) -> None:
        """Start capturing ``stream`` (one from :meth:`create_stream`): until
        :meth:`end_capture`, work launched on it (kernels called with this stream in
        ``ctx.stream``, copies, memsets) is recorded in order and **not run**. Nothing may
        synchronize the stream or read device memory back while it captures.

        Example (the executor's use)::

            s = rt.create_stream(0)
            rt.begin_capture(0, s)
            for instr in program: instr(ctx_on_s)      # recorded, not run
            g = rt.end_capture(0, s)
            rt.launch_graph(g, stream)                 # runs it; again on every step
        """
        raise NotImplementedError(
            "graph capture is optional: need begin_capture when supports_graphs() is True"
        )

    def end_capture(self, index: int, stream: Any) -> Any:
        """Stop capturing ``stream``; return the graph (an opaque handle) of the work
        launched on it since :meth:`begin_capture`. Raise if the capture failed (the stream
        must be usable again afterwards either way)."""
        raise NotImplementedError(
            "graph capture is optional: need end_capture when supports_graphs() is True"
        )

    def launch_graph(self, graph: Any, stream: Any) -> None:
        """Queue the captured work on ``stream`` (any stream of the device: the default
        one is None for the cpu plugin), reading and writing the very buffers it was captured
        with, in the captured order; it is ordered after earlier work on ``stream``."""
        raise NotImplementedError(
            "graph capture is optional: need launch_graph when supports_graphs() is True"
        )

    def destroy_graph(self, graph: Any) -> None:
        """Release a graph (called when its program's plan is dropped); default: nothing."""
