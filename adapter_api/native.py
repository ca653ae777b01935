"""Native plugins: a shared library that fills the C table of ``include/oarlock_device.h``.

The loader turns the library into an ordinary plugin object (``CONTRACT``, ``oarlock_register``,
``oarlock_plugin_info``), so a native plugin is found through the same entry-point group as a
Python one. The vendor package holds the library and a two-line module::

    # oarlock_mydev/__init__.py
    from adapter_api.native import NativePlugin
    plugin = NativePlugin.beside(__file__, "_mydev")      # oarlock_mydev/_mydev*.so

    # pyproject.toml
    [project.entry-points."oarlock.plugins"]
    mydev = "oarlock_mydev:plugin"

Nothing is opened at import: the library is loaded (``dlopen`` and ``oarlock_plugin_init``,
which must not touch the device) when the core registers plugins, on first device use.

Tensors cross as pointers: a kernel gets each tensor's buffer handle, byte offset, dtype and
shape (``oarlock_tensor``); host arrays cross as their addresses. No device memory passes
through Python.

A library of ABI 1.1 may fill two optional groups of entries, each all or none: collectives
(:class:`NativeCommunicator`, the plugin's own, created from a unique id that rank 0's
``comm_unique_id`` makes and the host communicator carries to every rank) and compile access
(:class:`NativeCompiler`). Without the collective entries the device gets host-staged
collectives (:class:`NativeStagedCommunicator`); without compile entries, a package may still
pass a Python :class:`Compiler` as ``NativePlugin(..., compiler=...)``.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
from functools import cache
from typing import Any

import numpy as np

from .communicator import REDUCE_OPS, Communicator, StagedCommunicator
from .compiler import Compiler
from .errors import (
    CommunicationError,
    CompileError,
    DeviceError,
    KernelError,
    KernelNotFoundError,
    OpArgumentError,
    OutOfMemoryError,
    PluginError,
)
from .hookspecs import hookimpl
from .runtime import DeviceProperties, DeviceRuntime

INCLUDE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "include")
HEADER = os.path.join(INCLUDE_DIR, "oarlock_device.h")

#: oarlock_dtype codes, in the header's order.
DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "float16", "bfloat16", "float32", "float64")
MAX_DIMS = 8

#: Entries a plugin must fill; the loader names the first missing one.
MANDATORY = (
    "device_type",
    "last_error",
    "device_count",
    "properties",
    "allocate",
    "free",
    "memset",
    "copy_h2d",
    "copy_d2h",
    "copy_d2d",
    "create_event",
    "record_event",
    "synchronize_event",
    "elapsed_ms",
    "kernels",
)
STREAM_ENTRIES = (
    "default_stream",
    "create_stream",
    "synchronize_stream",
    "query_stream",
    "stream_wait_event",
)
#: ABI 1.1: optional groups, each all or none (the loader names the first missing entry).
COLLECTIVE_ENTRIES = (
    "comm_unique_id",
    "comm_create",
    "comm_destroy",
    "comm_set_timeout",
    "all_reduce",
    "reduce",
    "broadcast",
    "all_gather",
    "reduce_scatter",
    "all_to_all",
    "send",
    "recv",
    "barrier",
)
COMPILE_ENTRIES = (
    "kernel_language",
    "compiler_identity",
    "compile",
    "free_binary",
    "load",
    "launch",
    "free_program",
)

_ERRORS = {2: OutOfMemoryError, 3: OpArgumentError, 4: KernelNotFoundError}


def include_dir() -> str:
    """The folder holding ``oarlock_device.h``, for a plugin's build (``-I``)."""
    return INCLUDE_DIR


def find_cc() -> str | None:
    """The C compiler a build at run time uses (the cpu plugin's kernels, the core's eager fast
    path): ``$CC`` when set (the only one tried), else ``cc``, ``gcc``, ``clang``; None if none.

    Example:
        >>> from adapter_api.native import find_cc
        >>> find_cc() is None or os.path.isabs(find_cc())
        True
    """
    cc = os.environ.get("CC")
    for name in (cc,) if cc else ("cc", "gcc", "clang"):
        path = shutil.which(name)
        if path:
            return path
    return None


@cache
def ffi() -> Any:
    """One cffi FFI with the header's declarations (ABI mode: no compiler at run time)."""
    import cffi

    with open(HEADER) as f:
        text = f.read()
    body = text.split("/* cdef:begin", 1)[1].split("*/", 1)[1].split("/* cdef:end */", 1)[0]
    body = "\n".join(ln for ln in body.splitlines() if not ln.lstrip().startswith("#"))
    body = re.sub(r"/\*.*?\*/", "", body, flags=re.S)
    out = cffi.FFI()
    out.cdef(body)
    return out


def _dtype_code(dtype: Any) -> int:
    name = np.dtype(dtype).name
    try:
        return DTYPES.index(name)
    except ValueError:
        raise KernelNotFoundError(f"[native] dtype {name} has no oarlock_dtype code") from None


class NativeView:
    """What a native kernel receives for one tensor: buffer handle, byte offset, shape, dtype."""

    __slots__ = ("buffer", "offset", "shape", "dtype", "size")

    def __init__(self, buffer: Any, offset: int, shape: tuple[int, ...], dtype: Any) -> None:
        self.buffer, self.offset, self.shape, self.dtype = buffer, offset, tuple(shape), np.dtype(dtype)
        self.size = int(np.prod(self.shape, dtype=np.int64))

    def fill(self, t: Any) -> None:
        """Write this view into the ``oarlock_tensor`` ``t``."""
        if len(self.shape) > MAX_DIMS:
            raise KernelNotFoundError(
                f"[native] a {len(self.shape)}-d tensor exceeds OARLOCK_MAX_DIMS ({MAX_DIMS})"
            )
        t.data, t.offset, t.dtype, t.ndim = self.buffer, self.offset, _dtype_code(self.dtype), len(self.shape)
        t.shape[0 : len(self.shape)] = self.shape

    def __repr__(self) -> str:
        return f"NativeView({self.dtype}{list(self.shape)} at +{self.offset})"


class NativeLibrary:
    """A loaded library and its filled ``oarlock_plugin`` table."""

    def __init__(self, path: str) -> None:
        self.path = path
        f = ffi()
        try:
            self.lib = f.dlopen(path)
        except OSError as exc:
            raise PluginError(
                f"[native] cannot load the library {path}: {exc}; rebuild or reinstall the plugin"
            ) from exc
        self.table = f.new("oarlock_plugin *")
        self.table.struct_size = f.sizeof("oarlock_plugin")
        try:
            init = self.lib.oarlock_plugin_init
        except (AttributeError, OSError):
            raise PluginError(
                f"[native] {path} exports no oarlock_plugin_init; export "
                f"'int oarlock_plugin_init(oarlock_plugin *)' from the library"
            ) from None
        status = init(self.table)
        t = self.table
        if status != 0:
            raise PluginError(
                f"[native] oarlock_plugin_init of {path} returned status {status}: {self._message()}; "
                f"the library may have been built for another oarlock_device.h"
            )
        major, minor = t.abi_major, t.abi_minor
        cmaj, cmin = self.lib.OARLOCK_ABI_MAJOR, self.lib.OARLOCK_ABI_MINOR
        if major != cmaj or minor > cmin:
            fix = (
                "upgrade oarlock"
                if (major, minor) > (cmaj, cmin)
                else "rebuild the plugin against this oarlock_device.h"
            )
            raise PluginError(
                f"[native] {path} was built for native ABI {major}.{minor}, but this oarlock implements "
                f"{cmaj}.{cmin}; {fix}"
            )
        if t.struct_size > f.sizeof("oarlock_plugin"):
            raise PluginError(
                f"[native] {path} fills a {t.struct_size}-byte oarlock_plugin table, larger than this "
                f"oarlock's {f.sizeof('oarlock_plugin')} bytes; upgrade oarlock"
            )
        for name in MANDATORY:
            if getattr(t, name) == f.NULL:
                raise PluginError(
                    f"[native] {path} leaves the mandatory entry '{name}' of oarlock_plugin NULL; "
                    f"fill it in oarlock_plugin_init (see oarlock_device.h)"
                )
        given = [n for n in STREAM_ENTRIES if getattr(t, n) != f.NULL]
        if given and len(given) != len(STREAM_ENTRIES):
            missing = [n for n in STREAM_ENTRIES if n not in given]
            raise PluginError(
                f"[native] {path} fills the stream entries {given} but not {missing}; fill all of "
                f"them or none (one synchronous stream)"
            )
        self.device_type = f.string(t.device_type).decode()
        self.has_streams = bool(given)
        self.has_collectives = minor >= 1 and self._group(
            COLLECTIVE_ENTRIES, "collective", "host-staged collectives"
        )
        self.has_compiler = minor >= 1 and self._group(COMPILE_ENTRIES, "compile", "no compile access")

    def _group(self, entries: tuple[str, ...], what: str, default: str) -> bool:
        """Whether the optional group ``entries`` is filled; refuses a partly filled one."""
        t, null = self.table, ffi().NULL
        given = [n for n in entries if getattr(t, n) != null]
        if given and len(given) != len(entries):
            missing = next(n for n in entries if n not in given)
            raise PluginError(
                f"[native] {self.path} fills {len(given)} of the {len(entries)} {what} entries of "
                f"oarlock_plugin but leaves '{missing}' NULL; fill all of them or none ({default}); "
                f"see oarlock_device.h"
            )
        return bool(given)

    def _message(self) -> str:
        t = self.table
        if t.last_error == ffi().NULL:
            return "(no message: last_error is NULL)"
        p = t.last_error()
        return ffi().string(p).decode(errors="replace") if p != ffi().NULL else "(no message)"

    def check(
        self,
        status: int,
        entry: str,
        default: type[Exception] = DeviceError,
        declined: type[Exception] = KernelNotFoundError,
    ) -> None:
        """Raise the Oarlock error for a failed call of ``entry`` (``declined`` for NOT_SUPPORTED)."""
        if status:
            cls = declined if status == 4 else _ERRORS.get(status, default)
            raise cls(f"[{self.device_type}] {entry}: {self._message()}")

    def kernels(self) -> list[tuple[str, str, int, Any]]:
        t, out = self.table, []
        for k in range(t.kernel_count):
            d = t.kernels[k]
            if not 0 <= d.dtype < len(DTYPES):
                raise PluginError(
                    f"[native] kernel row {k} ({ffi().string(d.op).decode()}) has dtype code {d.dtype}; "
                    f"use an oarlock_dtype"
                )
            out.append((ffi().string(d.op).decode(), DTYPES[d.dtype], d.flags, d.fn))
        return out


class NativeRuntime(DeviceRuntime):
    """:class:`DeviceRuntime` over the table's function pointers."""

    def __init__(self, lib: NativeLibrary) -> None:
        self.native, self.t, self.f = lib, lib.table, ffi()
        self.check = lib.check
        self._out_ptr = self.f.new("void **")
        self._done = self.f.new("int32_t *")

    # -- devices ------------------------------------------------------------------------
    def device_count(self) -> int:
        n = self.f.new("int32_t *")
        self.check(self.t.device_count(n), "device_count")
        return int(n[0])

    def properties(self, index: int) -> DeviceProperties:
        p = self.f.new("oarlock_device_properties *")
        self.check(self.t.properties(index, p), "properties")
        s = lambda c: self.f.string(c).decode(errors="replace")  # noqa: E731
        return DeviceProperties(
            name=s(p.name),
            vendor=s(p.vendor),
            total_memory=int(p.total_memory),
            compute_units=int(p.compute_units),
            driver_version=s(p.driver_version),
            runtime_version=s(p.runtime_version),
            dtypes=tuple(n for i, n in enumerate(DTYPES) if p.dtypes >> i & 1),
            extra={"library": self.native.path},
        )

    # -- memory -------------------------------------------------------------------------
    def allocate(self, index: int, nbytes: int) -> Any:
        out = self.f.new("void **")
        self.check(self.t.allocate(index, nbytes, out), f"allocate({nbytes} bytes)")
        return out[0]

    def free(self, index: int, buffer: Any) -> None:
        self.check(self.t.free(index, buffer), "free")

    def view(self, buffer: Any, offset: int, shape: tuple[int, ...], dtype: np.dtype) -> NativeView:
        return NativeView(buffer, offset, shape, dtype)

    def memset(self, index: int, buffer: Any, offset: int, value: int, nbytes: int, stream: Any) -> None:
        self.check(self.t.memset(index, buffer, offset, value, nbytes, stream or self.f.NULL), "memset")

    # -- copies -------------------------------------------------------------------------
    def _host(self, a: np.ndarray) -> Any:
        if not a.flags.c_contiguous:
            raise OpArgumentError("[native] host arrays must be C-contiguous")
        return self.f.cast("void *", a.ctypes.data)

    def copy_h2d(
        self, index: int, dst: Any, dst_offset: int, src: np.ndarray, stream: Any, blocking: bool = True
    ) -> None:
        self.check(
            self.t.copy_h2d(
                index, dst, dst_offset, self._host(src), src.nbytes, stream or self.f.NULL, int(blocking)
            ),
            "copy_h2d",
        )

    def copy_d2h(
        self, index: int, dst: np.ndarray, src: Any, src_offset: int, stream: Any, blocking: bool = True
    ) -> None:
        self.check(
            self.t.copy_d2h(
                index, self._host(dst), src, src_offset, dst.nbytes, stream or self.f.NULL, int(blocking)
            ),
            "copy_d2h",
        )

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
        self.check(
            self.t.copy_d2d(
                index, dst, dst_offset, src, src_offset, nbytes, stream or self.f.NULL, int(blocking)
            ),
            "copy_d2d",
        )

    # -- streams --------------------------------------------------------------------------
    def default_stream(self, index: int) -> Any:
        if not self.native.has_streams:
            return None
        out = self.f.new("void **")
        self.check(self.t.default_stream(index, out), "default_stream")
        return out[0]

    def create_stream(self, index: int) -> Any:
        if not self.native.has_streams:
            return None
        out = self.f.new("void **")
        self.check(self.t.create_stream(index, out), "create_stream")
        return out[0]

    def synchronize_stream(self, stream: Any) -> None:
        if self.native.has_streams:
            self.check(self.t.synchronize_stream(stream or self.f.NULL), "synchronize_stream")

    def query_stream(self, stream: Any) -> bool:
        if not self.native.has_streams:
            return True
        done = self.f.new("int32_t *")
        self.check(self.t.query_stream(stream or self.f.NULL, done), "query_stream")
        return bool(done[0])

    def stream_wait_event(self, stream: Any, event: Any) -> None:
        if not self.native.has_streams:
            return self.synchronize_event(event)
        self.check(self.t.stream_wait_event(stream or self.f.NULL, event), "stream_wait_event")

    # -- events ---------------------------------------------------------------------------
    def create_event(self, index: int) -> Any:
        out = self.f.new("void **")
        self.check(self.t.create_event(index, out), "create_event")
        event = out[0]
        if self.t.destroy_event != self.f.NULL:
            event = self.f.gc(event, self._destroy_event)
        return event

    def _destroy_event(self, event: Any) -> None:
        self.t.destroy_event(event)

    def record_event(self, event: Any, stream: Any) -> None:
        self.check(self.t.record_event(event, stream or self.f.NULL), "record_event")

    def synchronize_event(self, event: Any) -> None:
        self.check(self.t.synchronize_event(event), "synchronize_event")

    def query_event(self, event: Any) -> bool:
        if self.t.query_event == self.f.NULL:
            return super().query_event(event)
        done = self.f.new("int32_t *")
        self.check(self.t.query_event(event, done), "query_event")
        return bool(done[0])

    def elapsed_ms(self, start: Any, end: Any) -> float:
        ms = self.f.new("double *")
        self.check(self.t.elapsed_ms(start, end, ms), "elapsed_ms")
        return float(ms[0])

    def synchronize(self, index: int) -> None:
        if self.t.synchronize != self.f.NULL:
            self.check(self.t.synchronize(index), "synchronize")


def _int64(v: Any) -> int:
    """``v`` as int64_t: values up to 2**64 - 1 (a seed) keep their bit pattern (read them as uint64_t)."""
    v = int(v)
    if not -(1 << 63) <= v < 1 << 64:
        raise KernelNotFoundError(f"[native] the integer attribute {v} does not fit in 64 bits")
    return v - (1 << 64) if v >= 1 << 63 else v


def _attrs(f: Any, attrs: dict[str, Any]) -> tuple[Any, list[Any]]:
    """``oarlock_attr[]`` for the attributes, and the objects that must outlive the call."""
    arr = f.new("oarlock_attr[]", max(1, len(attrs)))
    keep: list[Any] = [arr]
    for k, (name, v) in enumerate(attrs.items()):
        a = arr[k]
        cname = f.new("char[]", name.encode())
        keep.append(cname)
        a.name = cname
        if isinstance(v, (bool, int, np.integer, np.bool_)):
            a.kind, a.i = 0, _int64(v)
        elif isinstance(v, (float, np.floating)):
            a.kind, a.f = 1, float(v)
        elif isinstance(v, (np.dtype, type)) or (name == "dtype" and isinstance(v, str)):
            a.kind, a.i = 3, _dtype_code(v)
        elif isinstance(v, (tuple, list)):
            flat = [_int64(x) for item in v for x in (item if isinstance(item, (tuple, list)) else (item,))]
            ints = f.new("int64_t[]", flat or [0])
            keep.append(ints)
            a.kind, a.count, a.ints = 2, len(flat), ints
        else:
            raise KernelNotFoundError(f"[native] attribute {name}={v!r} has no C form")
    return arr, keep


def native_kernel(lib: NativeLibrary, op: str, fn: Any) -> Any:
    """A Python kernel ``fn(ctx, outs, ins, **attrs)`` that calls the C function ``fn``."""
    f = ffi()
    check = lib.check

    def kernel(ctx: Any, outs: list[NativeView], ins: list[NativeView], **attrs: Any) -> None:
        o = f.new("oarlock_tensor[]", max(1, len(outs)))
        i = f.new("oarlock_tensor[]", max(1, len(ins)))
        for k, v in enumerate(outs):
            v.fill(o[k])
        for k, v in enumerate(ins):
            v.fill(i[k])
        c = f.new("oarlock_kernel_ctx *")
        c.device = ctx.device_index
        c.stream = ctx.stream or f.NULL
        arr, keep = _attrs(f, attrs)
        status = fn(c, o, len(outs), i, len(ins), arr, len(attrs))
        del keep
        check(status, op, KernelError)

    kernel.__name__ = kernel.__qualname__ = f"native_{op}"
    return kernel


class NativeStagedCommunicator(StagedCommunicator):
    """Host-staged collectives for a native device without collective entries, through its copies."""

    def download(self, view: NativeView, stream: Any) -> np.ndarray:
        out = np.empty(view.shape, view.dtype)
        if out.nbytes:
            self.runtime.copy_d2h(self.device_index, out, view.buffer, view.offset, stream, True)
        return out

    def upload(self, view: NativeView, array: np.ndarray, stream: Any) -> None:
        array = np.ascontiguousarray(array, dtype=view.dtype)
        if array.nbytes:
            self.runtime.copy_h2d(self.device_index, view.buffer, view.offset, array, stream, True)


class NativeCommunicator(Communicator):
    """The library's own collectives (ABI 1.1 entries) on device buffers.

    Not a bootstrap communicator: :meth:`create` sends rank 0's ``comm_unique_id`` to every
    rank of the group over the host communicator, then each rank calls ``comm_create``.
    """

    def __init__(
        self,
        runtime: NativeRuntime,
        device_index: int,
        rank: int,
        size: int,
        uid: bytes,
        timeout: float = Communicator.timeout,
    ) -> None:
        super().__init__(runtime, device_index, rank, size, uid)
        self.native, self.t, self.f = runtime.native, runtime.native.table, ffi()
        self.handle: Any = None
        want = self.f.sizeof("uint8_t[OARLOCK_UNIQUE_ID_BYTES]")
        if len(uid) != want:
            raise CommunicationError(
                f"[{self.native.device_type}] comm_create: the unique id has {len(uid)} bytes, "
                f"expected {want}; every rank must get rank 0's comm_unique_id"
            )
        self._timeout = float(timeout)
        out = self.f.new("void **")
        self._check(
            self.t.comm_create(device_index, uid, rank, size, self._timeout, out),
            f"comm_create(rank {rank} of {size})",
        )
        self.handle = out[0]

    @classmethod
    def create(cls, runtime: Any, device_index: int, host: Communicator) -> Communicator:
        lib = runtime.native
        uid = b""
        if host.rank == 0:
            buf = ffi().new("uint8_t[OARLOCK_UNIQUE_ID_BYTES]")
            lib.check(lib.table.comm_unique_id(device_index, buf), "comm_unique_id", CommunicationError)
            uid = bytes(ffi().buffer(buf))
        uid = host.broadcast_bytes(uid, 0)
        return cls(runtime, device_index, host.rank, host.size, uid, host.timeout)

    @property
    def timeout(self) -> float:  # type: ignore[override]
        return self._timeout

    @timeout.setter
    def timeout(self, seconds: float) -> None:
        self._timeout = float(seconds)
        if self.handle is not None:
            self._check(self.t.comm_set_timeout(self.handle, self._timeout), "comm_set_timeout")

    def _check(self, status: int, entry: str) -> None:
        self.native.check(status, entry, CommunicationError, declined=CommunicationError)

    def _args(self, name: str, send: NativeView, recv: NativeView, recv_size: int) -> tuple[Any, ...]:
        if recv.dtype != send.dtype or recv.size != recv_size:
            raise OpArgumentError(
                f"[{self.native.device_type}] {name}: the output must hold {recv_size} "
                f"{send.dtype}, got {recv.size} {recv.dtype}"
            )
        return self.handle, send.buffer, send.offset, recv.buffer, recv.offset

    @staticmethod
    def _op(name: str, op: str) -> int:
        if op not in REDUCE_OPS:
            raise OpArgumentError(f"[native] {name}: reduce op {op!r} is not one of {REDUCE_OPS}")
        return REDUCE_OPS.index(op)

    def _stream(self, stream: Any) -> Any:
        return stream or self.f.NULL

    # -- collectives --------------------------------------------------------------------
    def all_reduce(self, send: NativeView, recv: NativeView, op: str, stream: Any) -> None:
        a = self._args("all_reduce", send, recv, send.size)
        self._check(
            self.t.all_reduce(
                *a, send.size, _dtype_code(send.dtype), self._op("all_reduce", op), self._stream(stream)
            ),
            f"all_reduce({op})",
        )

    def reduce(self, send: NativeView, recv: NativeView, op: str, root: int, stream: Any) -> None:
        a = self._args("reduce", send, recv, send.size)
        self._check(
            self.t.reduce(
                *a, send.size, _dtype_code(send.dtype), self._op("reduce", op), root, self._stream(stream)
            ),
            f"reduce({op}) to rank {root}",
        )

    def broadcast(self, buf: NativeView, root: int, stream: Any) -> None:
        self._check(
            self.t.broadcast(
                self.handle,
                buf.buffer,
                buf.offset,
                buf.size,
                _dtype_code(buf.dtype),
                root,
                self._stream(stream),
            ),
            f"broadcast from rank {root}",
        )

    def all_gather(self, send: NativeView, recv: NativeView, stream: Any) -> None:
        a = self._args("all_gather", send, recv, send.size * self.size)
        self._check(
            self.t.all_gather(*a, send.size, _dtype_code(send.dtype), self._stream(stream)), "all_gather"
        )

    def reduce_scatter(self, send: NativeView, recv: NativeView, op: str, stream: Any) -> None:
        if send.size != recv.size * self.size:
            raise OpArgumentError(
                f"[{self.native.device_type}] reduce_scatter: the input must hold {self.size} x "
                f"{recv.size} elements, got {send.size}"
            )
        a = self._args("reduce_scatter", send, recv, recv.size)
        self._check(
            self.t.reduce_scatter(
                *a, recv.size, _dtype_code(send.dtype), self._op("reduce_scatter", op), self._stream(stream)
            ),
            f"reduce_scatter({op})",
        )

    def all_to_all(self, send: NativeView, recv: NativeView, stream: Any) -> None:
        if send.size % self.size:
            raise OpArgumentError(
                f"[{self.native.device_type}] all_to_all: {send.size} elements do not split "
                f"into {self.size} equal chunks"
            )
        a = self._args("all_to_all", send, recv, send.size)
        self._check(
            self.t.all_to_all(*a, send.size // self.size, _dtype_code(send.dtype), self._stream(stream)),
            "all_to_all",
        )

    def send(self, buf: NativeView, peer: int, stream: Any) -> None:
        self._check(
            self.t.send(
                self.handle,
                buf.buffer,
                buf.offset,
                buf.size,
                _dtype_code(buf.dtype),
                peer,
                self._stream(stream),
            ),
            f"send to rank {peer}",
        )

    def recv(self, buf: NativeView, peer: int, stream: Any) -> None:
        self._check(
            self.t.recv(
                self.handle,
                buf.buffer,
                buf.offset,
                buf.size,
                _dtype_code(buf.dtype),
                peer,
                self._stream(stream),
            ),
            f"recv from rank {peer}",
        )

    def barrier(self) -> None:
        self._check(self.t.barrier(self.handle), "barrier")

    def destroy(self) -> None:
        if self.handle is not None:
            handle, self.handle = self.handle, None
            self._check(self.t.comm_destroy(handle), "comm_destroy")


class NativeCompiler(Compiler):
    """The library's compile access (ABI 1.1 entries) as a :class:`Compiler`.

    ``identity()`` starts with the device type and library version, so two native plugins whose
    compilers describe themselves alike never share cached binaries (the cache keys by this
    class, the same for every native plugin).
    """

    #: OARLOCK_MAX_LAUNCH_ARGS of oarlock_device.h: a native launch gets a fixed-size array
    max_args = 64

    def __init__(self, lib: NativeLibrary, device_index: int = 0) -> None:
        self.native, self.t, self.f, self.device_index = lib, lib.table, ffi(), device_index
        self.language = self.f.string(self.t.kernel_language).decode()

    @classmethod
    def factory(cls, lib: NativeLibrary) -> Any:
        """``factory(runtime, device_index)`` for ``registry.add_compiler``."""
        return lambda runtime=None, device_index=0: cls(lib, device_index)

    def identity(self) -> str:
        buf = self.f.new("char[]", 1024)
        self.native.check(
            self.t.compiler_identity(self.device_index, buf, len(buf)), "compiler_identity", CompileError
        )
        version = self.f.string(self.t.version).decode() if self.t.version != self.f.NULL else "?"
        return f"{self.native.device_type} {version} | {self.f.string(buf).decode(errors='replace')}"

    def compile(self, source: str, entry: str, options: tuple[str, ...] = ()) -> bytes:
        opts = [self.f.new("char[]", o.encode()) for o in options]
        arr = self.f.new("char *[]", opts or [self.f.NULL])
        binary, nbytes = self.f.new("void **"), self.f.new("uint64_t *")
        self.native.check(
            self.t.compile(
                self.device_index, source.encode(), entry.encode(), arr, len(opts), binary, nbytes
            ),
            f"compile({entry})",
            CompileError,
            declined=CompileError,
        )
        try:
            return bytes(self.f.buffer(self.f.cast("char *", binary[0]), nbytes[0]))
        finally:
            self.t.free_binary(binary[0])

    def load(self, binary: bytes, entry: str) -> Any:
        out = self.f.new("void **")
        self.native.check(
            self.t.load(self.device_index, self.f.from_buffer(binary), len(binary), entry.encode(), out),
            f"load({entry})",
            CompileError,
            declined=CompileError,
        )
        return self.f.gc(out[0], self.t.free_program)

    def launch(
        self, program: Any, args: list[Any], grid: tuple[int, ...], local: tuple[int, ...] | None, stream: Any
    ) -> None:
        a = self.f.new("oarlock_launch_arg[]", max(1, len(args)))
        for k, v in enumerate(args):
            if isinstance(v, NativeView):
                a[k].kind, a[k].dtype, a[k].data, a[k].offset = 0, _dtype_code(v.dtype), v.buffer, v.offset
            elif isinstance(v, (bool, int, np.integer)):
                a[k].kind, a[k].dtype, a[k].i = 1, _dtype_code(np.asarray(v).dtype), _int64(v)
            elif isinstance(v, (float, np.floating)):
                a[k].kind, a[k].dtype, a[k].f = 2, _dtype_code(np.asarray(v).dtype), float(v)
            else:
                raise KernelError(
                    f"[{self.native.device_type}] launch argument {k} is {type(v).__name__}; pass "
                    f"the tensors' native views and numpy scalars"
                )
        g = self.f.new("int64_t[]", list(grid) or [1])
        loc = self.f.new("int64_t[]", list(local)) if local else self.f.NULL
        self.native.check(
            self.t.launch(
                program, a, len(args), g, len(grid), loc, len(local) if local else 0, stream or self.f.NULL
            ),
            "launch",
            KernelError,
        )


class NativePlugin:
    """A native library as a plugin object: what an entry point of ``oarlock.plugins`` names.

    ``compiler`` optionally adds compile access written in Python (a :class:`Compiler`
    class or factory), registered for the library's device type; it takes the place of the
    library's own compile entries when both are given.
    """

    #: the native ABI's own version is checked at load; the C ABI's gather has no ``wrap``
    #: (contract 1.2), so a native plugin gets 1.1's gather: indices already in [0, n)
    CONTRACT = (1, 1)

    def __init__(self, path: str, name: str | None = None, compiler: Any = None) -> None:
        self.path = path
        self.__name__ = name or f"native:{os.path.basename(path)}"
        self.compiler = compiler
        self._lib: NativeLibrary | None = None

    @classmethod
    def beside(cls, module_file: str, stem: str, **kw: Any) -> NativePlugin:
        """The library ``stem*.so`` (or ``.dylib``/``.dll``) in the folder of ``module_file``."""
        folder = os.path.dirname(os.path.abspath(module_file))
        found = sorted(
            p
            for ext in ("so", "dylib", "dll", "pyd")
            for p in glob.glob(os.path.join(folder, f"{stem}*.{ext}"))
        )
        package = os.path.basename(folder)
        path = found[0] if found else os.path.join(folder, f"{stem}.so")
        return cls(path, name=kw.pop("name", package), **kw)

    @property
    def library(self) -> NativeLibrary:
        if self._lib is None:
            if not os.path.exists(self.path):
                raise PluginError(
                    f"[native] the library {self.path} does not exist; build the plugin "
                    f"(pip install the package) before using it"
                )
            self._lib = NativeLibrary(self.path)
        return self._lib

    @hookimpl
    def oarlock_register(self, registry: Any) -> None:
        lib = self.library
        typ = lib.device_type
        registry.add_runtime(typ, lambda: NativeRuntime(lib))
        for op, dtype, flags, fn in lib.kernels():
            registry.add_kernel(op, typ, [dtype], native_kernel(lib, op, fn), broadcast=bool(flags & 1))
        registry.add_communicator(
            typ, NativeCommunicator if lib.has_collectives else NativeStagedCommunicator
        )
        if self.compiler is not None:
            registry.add_compiler(typ, self.compiler)
        elif lib.has_compiler:
            registry.add_compiler(typ, NativeCompiler.factory(lib))

    @hookimpl
    def oarlock_plugin_info(self) -> dict[str, Any]:
        t, f = self.library.table, ffi()
        info = {
            "library": self.path,
            "native_abi": f"{t.abi_major}.{t.abi_minor}",
            "collectives": "native" if self.library.has_collectives else "host-staged",
            "compile": (
                "python"
                if self.compiler is not None
                else f.string(t.kernel_language).decode()
                if self.library.has_compiler
                else "none"
            ),
        }
        if t.version != f.NULL:
            info["version"] = f.string(t.version).decode()
        if t.description != f.NULL:
            info["description"] = f.string(t.description).decode()
        return info
