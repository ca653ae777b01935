"""Devices by name: ``"cpu"``, ``"opencl:1"``. Runtimes are created on first use."""

from __future__ import annotations

import contextlib
import contextvars
import os
import threading
from collections.abc import Callable, Iterator
from typing import Any

from adapter_api import DeviceError, DeviceProperties, PluginError

from .allocator import CachingAllocator
from .plugins import host


class Device:
    """A device: a type (the plugin's device name) and an ordinal.

    Devices compare and hash by name, and equal their name as a string; functions that take a
    device take a :class:`Device` or its name (``"cpu"``, ``"opencl:1"``).

    Args:
        type (str): the device type, e.g. ``"cpu"``.
        index (int): the ordinal among the devices of that type.

    Example:
        >>> import framework as fw
        >>> d = fw.Device("cpu")
        >>> d
        Device('cpu:0')
        >>> str(d), d == "cpu:0", fw.ones([1]).device == d
        ('cpu:0', True, True)
    """

    __slots__ = ("type", "index", "_name", "_hash")

    def __init__(self, type: str, index: int = 0) -> None:
        self.type = type
        self.index = index
        self._name = f"{type}:{index}"
        self._hash = hash(self._name)

    def __repr__(self) -> str:
        return f"Device('{self._name}')"

    def __str__(self) -> str:
        return self._name

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Device):
            return self._name == other._name
        if isinstance(other, str):
            try:
                return self._name == str(parse(other, check=False))
            except DeviceError:
                return False
        return NotImplemented

    def __hash__(self) -> int:
        return self._hash


class DeviceType:
    """Lazily created runtime, allocators and default streams of one device type."""

    def __init__(self, name: str, plugin: str, factory: Any) -> None:
        self.name = name
        self.plugin = plugin
        self.factory = factory
        self._runtime: Any = None
        self._error: BaseException | None = None
        self.allocators: dict[int, CachingAllocator] = {}
        self.streams: dict[int, Any] = {}
        self.current_streams: dict[int, Any] = {}
        self._lock = threading.Lock()

    @property
    def runtime(self) -> Any:
        rt = self._runtime
        if rt is None:
            with self._lock:
                if self._runtime is None:
                    try:
                        self._runtime = self.factory()
                    except BaseException as exc:
                        raise PluginError(
                            f"[{self.name}] plugin '{self.plugin}' could not create its runtime: "
                            f"{type(exc).__name__}: {exc}; check the plugin's installation, or "
                            f"use another device"
                        ) from exc
                rt = self._runtime
        return rt

    def count(self) -> int:
        try:
            return int(self.runtime.device_count())
        except PluginError:
            return 0

    def allocator(self, index: int) -> CachingAllocator:
        a = self.allocators.get(index)
        if a is None:
            a = self.allocators[index] = CachingAllocator(
                self.runtime, index, f"{self.name}:{index}", self.stream(index)
            )
        return a

    def stream(self, index: int) -> Any:
        """The stream kernels run on now (the user's current stream, else the default)."""
        s = self.current_streams.get(index)
        if s is not None:
            return s
        s = self.streams.get(index)
        if s is None and index not in self.streams:
            s = self.streams[index] = self.runtime.default_stream(index)
        return s


_TYPES: dict[str, DeviceType] = {}


def device_type(name: str) -> DeviceType:
    t = _TYPES.get(name)
    if t is None:
        reg = host().registry.runtimes.get(name)
        if reg is None:
            raise _unknown(name)
        t = _TYPES[name] = DeviceType(name, reg[0], reg[1])
    return t


#: called when the current stream of a device changes (kernel contexts carry the stream)
_STREAM_LISTENERS: list[Callable[[], None]] = []


def on_stream_change(listener: Callable[[], None]) -> None:
    """Call ``listener()`` whenever ``with fw.stream(...)`` switches a device's stream (the
    dispatcher subscribes to rebuild its kernel contexts; this floor knows nothing of it)."""
    _STREAM_LISTENERS.append(listener)


def _stream_changed() -> None:
    for listener in _STREAM_LISTENERS:
        listener()


def _unknown(name: str) -> DeviceError:
    h = host()
    known = sorted(h.registry.runtimes)
    msg = f"[device] unknown device '{name}'; known device types: {', '.join(known) or 'none'}"
    for plugin, err in h.broken().items():
        if plugin == name or name.startswith(plugin):
            return DeviceError(
                f"[device] device '{name}' is unavailable because its plugin failed to load:\n{err}"
            )
        msg += f"\n  plugin '{plugin}' failed to load: {err.splitlines()[0]}"
    return DeviceError(msg + "\n  run `oarlock devices` to see every plugin and its status")


_PARSED: dict[str, Device] = {}


def parse(name: object, check: bool = True) -> Device:
    """Turn ``"opencl:1"``, ``"cpu"``, a Device or a Tensor's device into a Device."""
    if isinstance(name, Device):
        dev = name
    elif isinstance(name, str):
        dev = _PARSED.get(name)
        if dev is None:
            text = name.strip().lower()
            typ, _, idx = text.partition(":")
            if not typ or (idx and not idx.isdigit()):
                raise DeviceError(
                    f"[device] cannot read device name {name!r}; expected 'type' or 'type:index', "
                    f"such as 'cpu' or 'opencl:1'"
                )
            dev = Device(typ, int(idx) if idx else 0)
            if check:
                _PARSED[name] = dev
    else:
        raise DeviceError(
            f"[device] expected a device name such as 'cpu' or 'opencl:0', got {type(name).__name__} {name!r}"
        )
    if check:
        t = device_type(dev.type)
        n = t.count()
        if dev.index >= n:
            reason = getattr(t.runtime, "unavailable_reason", None)
            extra = f" ({reason})" if reason else ""
            _PARSED.pop(name, None) if isinstance(name, str) else None
            raise DeviceError(
                f"[device] '{dev}' does not exist: the '{dev.type}' plugin reports {n} device(s){extra}; "
                f"use an index below {n}"
                if n
                else f"[device] '{dev}' does not exist: the '{dev.type}' plugin reports no device{extra}"
            )
    return dev


# -- the current device ---------------------------------------------------------------------
_current: contextvars.ContextVar[Device | None] = contextvars.ContextVar("oarlock_device", default=None)
_global_default: list[Device | None] = [None]


def get_device() -> Device:
    """The device new tensors go to.

    That is the device of the innermost ``with fw.device(...)``, else the one given to
    :func:`set_device`, else ``OARLOCK_DEVICE``, else ``cpu``.

    Returns:
        Device: the current device.

    Example:
        >>> import framework as fw
        >>> with fw.device("cpu"):
        ...     fw.get_device()
        Device('cpu:0')
    """
    d = _current.get()
    if d is not None:
        return d
    d = _global_default[0]
    if d is None:
        d = _global_default[0] = parse(os.environ.get("OARLOCK_DEVICE", "cpu") or "cpu")
    return d


def set_device(name: object) -> Device:
    """Make a device the default one of this process, for new tensors outside ``with fw.device``.

    Args:
        name (str | Device): e.g. ``"cpu"`` or ``"opencl:1"``; it must exist.

    Returns:
        Device: the device.

    Example:
        >>> import framework as fw
        >>> prev = fw.get_device()
        >>> fw.set_device("cpu")
        Device('cpu:0')
        >>> fw.zeros([1]).device
        Device('cpu:0')
        >>> _ = fw.set_device(prev)
    """
    d = parse(name)
    _global_default[0] = d
    return d


@contextlib.contextmanager
def device(name: object) -> Iterator[Device]:
    """A context manager in which new tensors go to the device ``name``.

    Blocks nest; on leaving one the previous device is current again.

    Args:
        name (str | Device): e.g. ``"cpu"`` or ``"opencl:1"``; it must exist.

    Returns:
        contextlib.AbstractContextManager[Device]: yields the device.

    Example:
        >>> import framework as fw
        >>> with fw.device("cpu") as d:
        ...     x = fw.ones([2])
        >>> d, x.device
        (Device('cpu:0'), Device('cpu:0'))
    """
    d = parse(name)
    token = _current.set(d)
    try:
        yield d
    finally:
        _current.reset(token)


def device_count(type_name: str = "cpu") -> int:
    """The number of devices of one type (0 when its plugin cannot start).

    Args:
        type_name (str): the device type, e.g. ``"cpu"`` or ``"opencl"``.

    Returns:
        int: the count.

    Example:
        >>> import framework as fw
        >>> fw.device_count("cpu")
        1
    """
    return device_type(type_name).count()


def devices() -> list[Device]:
    """Every available device of every loaded plugin, the cpu first.

    Returns:
        list[Device]: the devices.

    Example:
        >>> import framework as fw
        >>> fw.devices()[0]
        Device('cpu:0')
    """
    out = []
    for name in sorted(host().registry.runtimes, key=lambda n: (n != "cpu", n)):
        for i in range(device_type(name).count()):
            out.append(Device(name, i))
    return out


def get_device_properties(name: object = None) -> DeviceProperties:
    """What a device's plugin reports about it: name, vendor, memory, compute units, dtypes.

    Args:
        name (str | Device, optional): the device; default the current one.

    Returns:
        adapter_api.DeviceProperties: the properties.

    Example:
        >>> import framework as fw
        >>> props = fw.get_device_properties("cpu")
        >>> "float32" in props.dtypes, props.total_memory > 0
        (True, True)
    """
    d = get_device() if name is None else parse(name)
    return device_type(d.type).runtime.properties(d.index)


def synchronize(name: object = None) -> None:
    """Wait until all work queued on a device has finished.

    Args:
        name (str | Device, optional): the device; default the current one.

    Example:
        >>> import framework as fw
        >>> y = fw.ones([1000]) * 2
        >>> fw.synchronize("cpu")
        >>> y.sum().item()
        2000.0
    """
    d = get_device() if name is None else parse(name)
    device_type(d.type).runtime.synchronize(d.index)


def allocator_of(dev: Device) -> CachingAllocator:
    return device_type(dev.type).allocator(dev.index)


def memory_stats(name: object = None) -> dict[str, int]:
    """The caching allocator's statistics for a device, in bytes and counts.

    Args:
        name (str | Device, optional): the device; default the current one.

    Returns:
        dict[str, int]: ``allocated_bytes``, ``reserved_bytes``, ``peak_allocated_bytes``,
        ``peak_reserved_bytes``, ``num_device_allocs``, ``num_device_frees``,
        ``num_alloc_requests``, ``num_cache_hits``, ``num_ooms``.

    Example:
        >>> import framework as fw
        >>> stats = fw.memory_stats("cpu")
        >>> sorted(stats)[:3]
        ['allocated_bytes', 'num_alloc_requests', 'num_cache_hits']
    """
    d = get_device() if name is None else parse(name)
    return allocator_of(d).stats()


def empty_cache(name: object = None) -> None:
    """Give the blocks a device's caching allocator keeps free back to the device.

    Args:
        name (str | Device, optional): the device; default the current one.

    Example:
        >>> import framework as fw
        >>> fw.empty_cache("cpu")
        >>> fw.memory_stats("cpu")["reserved_bytes"] >= fw.memory_stats("cpu")["allocated_bytes"]
        True
    """
    d = get_device() if name is None else parse(name)
    allocator_of(d).empty_cache()


def reset_peak_memory_stats(name: object = None) -> None:
    """Reset a device's peak memory statistics to the current values.

    Args:
        name (str | Device, optional): the device; default the current one.

    Example:
        >>> import framework as fw
        >>> fw.reset_peak_memory_stats("cpu")
        >>> s = fw.memory_stats("cpu")
        >>> s["peak_allocated_bytes"] == s["allocated_bytes"]
        True
    """
    d = get_device() if name is None else parse(name)
    allocator_of(d).reset_peak_stats()


# -- streams and events ---------------------------------------------------------------------
_NEW = object()


class Stream:
    """A queue of work on one device; ``with fw.stream(s):`` makes ops run on it.

    Work on one stream runs in order; work on two streams may overlap. ``synchronize`` waits for
    the stream, ``query`` says whether it is idle, ``wait_event`` makes it wait for an
    :class:`Event`, ``record_event`` records one on it.

    Args:
        device (str | Device, optional): the device; default the current one.

    Example:
        >>> import framework as fw
        >>> s = fw.Stream("cpu")
        >>> with fw.stream(s):
        ...     y = fw.ones([2]) + 1
        >>> s.synchronize()
        >>> y.tolist(), s.query()
        ([2.0, 2.0], True)
    """

    def __init__(self, device: object = None, _handle: Any = _NEW) -> None:
        self.device = get_device() if device is None else parse(device)
        self._type = device_type(self.device.type)
        self.handle = _handle if _handle is not _NEW else self._type.runtime.create_stream(self.device.index)

    def synchronize(self) -> None:
        self._type.runtime.synchronize_stream(self.handle)

    def query(self) -> bool:
        return bool(self._type.runtime.query_stream(self.handle))

    def wait_event(self, event: Event) -> None:
        self._type.runtime.stream_wait_event(self.handle, event.handle)

    def record_event(self, event: Event | None = None) -> Event:
        event = event or Event(self.device)
        event.record(self)
        return event


class Event:
    """A marker recorded in a stream: wait for the work before it, or time the work between two.

    ``record`` puts it in a stream (default the current one), ``synchronize`` waits for it,
    ``query`` says whether it has completed, ``elapsed_time`` gives the milliseconds to another.

    Args:
        device (str | Device, optional): the device; default the current one.

    Example:
        >>> import framework as fw
        >>> start, end = fw.Event("cpu"), fw.Event("cpu")
        >>> start.record()
        >>> y = fw.ones([1000]) * 2
        >>> end.record()
        >>> end.synchronize()
        >>> start.elapsed_time(end) >= 0.0
        True
    """

    def __init__(self, device: object = None) -> None:
        self.device = get_device() if device is None else parse(device)
        self._type = device_type(self.device.type)
        self.handle = self._type.runtime.create_event(self.device.index)

    def record(self, stream: Stream | None = None) -> None:
        h = stream.handle if stream is not None else self._type.stream(self.device.index)
        self._type.runtime.record_event(self.handle, h)

    def synchronize(self) -> None:
        self._type.runtime.synchronize_event(self.handle)

    def query(self) -> bool:
        return bool(self._type.runtime.query_event(self.handle))

    def elapsed_time(self, end: Event) -> float:
        """Milliseconds from this event to ``end`` (both recorded and completed)."""
        return float(self._type.runtime.elapsed_ms(self.handle, end.handle))


def current_stream(name: object = None) -> Stream:
    """The stream ops on a device run on now: the one of ``with fw.stream``, else the default.

    Args:
        name (str | Device, optional): the device; default the current one.

    Returns:
        Stream: the stream.

    Example:
        >>> import framework as fw
        >>> fw.current_stream("cpu").device
        Device('cpu:0')
    """
    d = get_device() if name is None else parse(name)
    t = device_type(d.type)
    return Stream(d, _handle=t.stream(d.index))


@contextlib.contextmanager
def stream(s: Stream) -> Iterator[Stream]:
    """A context manager in which ops on the stream's device run on stream ``s``.

    Memory is allocated on (and freed back to) that stream inside the block.

    Args:
        s (Stream): the stream.

    Returns:
        contextlib.AbstractContextManager[Stream]: yields ``s``.

    Example:
        >>> import framework as fw
        >>> s = fw.Stream("cpu")
        >>> with fw.stream(s):
        ...     fw.current_stream("cpu").handle is s.handle
        True
    """
    t = device_type(s.device.type)
    prev = t.current_streams.get(s.device.index)
    t.current_streams[s.device.index] = s.handle
    alloc = t.allocator(s.device.index)
    alloc.use_stream(s.handle)  # blocks are allocated on (and freed back to) the current stream
    _stream_changed()  # kernel contexts pick up the new stream
    try:
        yield s
    finally:
        if prev is None:
            t.current_streams.pop(s.device.index, None)
        else:
            t.current_streams[s.device.index] = prev
        alloc.use_stream(t.stream(s.device.index))
        _stream_changed()


def CPUPlace() -> Device:  # noqa: N802  (Paddle's name)
    """Paddle's place object for the host: the ``cpu`` device (the string ``"cpu"`` works too).

    Returns:
        Device: ``cpu:0``.

    Example:
        >>> import framework as fw
        >>> fw.to_tensor([1.0], place=fw.CPUPlace()).device
        Device('cpu:0')
    """
    return parse("cpu")


def CUDAPlace(id: int = 0) -> Device:  # noqa: N802  (Paddle's name)
    """Paddle's place object for GPU ``id``: the ``cuda:id`` device (``"cuda:0"`` works too).

    Args:
        id (int): the GPU index.

    Returns:
        Device: ``cuda:id`` (a cuda plugin runs it when asked for).

    Example:
        >>> import framework as fw
        >>> str(fw.CUDAPlace(1))
        'cuda:1'
    """
    return parse(f"cuda:{int(id)}", check=False)
