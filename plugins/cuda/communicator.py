"""Collectives for CUDA devices on NCCL (``cupy.cuda.nccl``).

Rank 0 calls :meth:`NCCLCommunicator.unique_id`; the core broadcasts the bytes over MPI; every
rank then builds ``NCCLCommunicator(runtime, device_index, rank, size, uid)``. Buffers are cupy
arrays from ``CUDARuntime.view``; bfloat16 arrives as uint16 bits (Oarlock has no uint16 dtype,
so uint16 always means bfloat16 here).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from adapter_api import REDUCE_OPS, CommunicationError, Communicator, PendingCollective

from .errors import import_cupy, vendor_errors

# ncclDataType_t and ncclRedOp_t values (stable across NCCL 2.x).
_NCCL_TYPES = {
    "int8": 0,
    "uint8": 1,
    "bool": 1,
    "int32": 2,
    "uint32": 3,
    "int64": 4,
    "uint64": 5,
    "float16": 6,
    "float32": 7,
    "float64": 8,
    "uint16": 9,
}  # uint16 bits = bfloat16
_NCCL_OPS = {"sum": 0, "prod": 1, "max": 2, "min": 3, "avg": 0}  # avg: a sum, then a scale
NCCL_UNIQUE_ID_BYTES = 128


def unique_id_bytes(raw: Any) -> bytes:
    """``nccl.get_unique_id()`` as bytes: cupy 14 returns bytes, older cupy a tuple of C chars
    (ints in -128..127)."""
    if isinstance(raw, (bytes, bytearray)):
        return bytes(raw)
    return bytes(int(v) & 0xFF for v in raw)


def comm_id(uid: bytes, cupy_version: str) -> bytes | tuple[int, ...]:
    """The unique id in the form ``nccl.NcclCommunicator`` of this cupy takes: bytes from cupy
    14 on, before that a tuple of signed C chars."""
    if not isinstance(uid, (bytes, bytearray)) or len(uid) != NCCL_UNIQUE_ID_BYTES:
        got = f"{len(uid)} bytes" if isinstance(uid, (bytes, bytearray)) else type(uid).__name__
        raise CommunicationError(
            f"[cuda] NCCL unique id must be {NCCL_UNIQUE_ID_BYTES} bytes, got {got}; pass every rank "
            "the bytes NCCLCommunicator.unique_id() returned on rank 0"
        )
    try:
        major = int(cupy_version.split(".")[0])
    except ValueError:
        major = 14
    if major >= 14:
        return bytes(uid)
    return tuple(b - 256 if b > 127 else b for b in uid)


def _nccl() -> Any:
    import_cupy()
    from cupy.cuda import nccl

    if not getattr(nccl, "available", True):
        raise CommunicationError("[cuda] NCCL could not be loaded; pip install 'nvidia-nccl-cu12>=2.18'")
    return nccl


class NCCLCommunicator(Communicator):
    """All-reduce, broadcast, reduce, all-gather, reduce-scatter, all-to-all, send/recv on NCCL.

    Example (every rank; ``uid`` came from rank 0 over MPI)::

        comm = NCCLCommunicator(runtime, 0, rank, size, uid)
        comm.all_reduce(grad, grad, "avg", stream)
    """

    @classmethod
    def unique_id(cls) -> bytes:
        nccl = _nccl()
        with vendor_errors("create an NCCL unique id"):
            return unique_id_bytes(nccl.get_unique_id())

    def __init__(self, runtime: Any, device_index: int, rank: int, size: int, uid: bytes) -> None:
        super().__init__(runtime, device_index, rank, size, uid)
        nccl = _nccl()
        cp = import_cupy()
        commid = comm_id(uid, cp.__version__)
        with (
            cp.cuda.Device(device_index),
            vendor_errors(
                f"create the NCCL communicator (rank {rank} of {size})",
                "check that every rank passed the same unique id and size",
                device=device_index,
            ),
        ):
            self._comm = nccl.NcclCommunicator(size, commid, rank)
        self._nccl = nccl
        self._cp = cp

    # -- helpers ------------------------------------------------------------------------
    def _type(self, buf: Any) -> int:
        name = buf.dtype.name
        if name not in _NCCL_TYPES:
            raise CommunicationError(
                f"[cuda] NCCL has no {name} type; cast the tensor to int32 or float32 first"
            )
        return _NCCL_TYPES[name]

    def _op(self, op: str) -> int:
        if op not in REDUCE_OPS:
            raise CommunicationError(
                f"[cuda] reduce op {op!r} is unknown; use one of {', '.join(REDUCE_OPS)}"
            )
        return _NCCL_OPS[op]

    def _stream(self, stream: Any) -> Any:
        return stream if stream is not None else self.runtime.default_stream(self.device_index)

    @contextlib.contextmanager
    def _run(self, what: str) -> Iterator[None]:
        """One NCCL call: on this communicator's device, vendor errors translated."""
        with (
            self._cp.cuda.Device(self.device_index),
            vendor_errors(
                f"NCCL {what} (rank {self.rank} of {self.size})",
                "check that every rank makes the same call with the same sizes",
                device=self.device_index,
            ),
        ):
            yield

    def _scale_avg(self, buf: Any, stream: Any) -> None:
        from .kernels import bf16_to_f32, f32_to_bf16

        cp = self._cp
        with stream:
            if buf.dtype.name == "uint16":
                f32_to_bf16(cp, bf16_to_f32(cp, buf) / self.size, buf)
            elif buf.dtype.kind == "f":
                buf *= buf.dtype.type(1.0 / self.size)
            else:
                cp.floor_divide(buf, self.size, out=buf)

    # -- collectives --------------------------------------------------------------------
    def all_reduce(self, send: Any, recv: Any, op: str, stream: Any) -> None:
        s = self._stream(stream)
        with self._run(f"all_reduce({op}) of {send.size} elements"):
            self._comm.allReduce(
                send.data.ptr, recv.data.ptr, send.size, self._type(send), self._op(op), s.ptr
            )
            if op == "avg":
                self._scale_avg(recv, s)

    def broadcast(self, buf: Any, root: int, stream: Any) -> None:
        s = self._stream(stream)
        with self._run(f"broadcast from rank {root}"):
            self._comm.broadcast(buf.data.ptr, buf.data.ptr, buf.size, self._type(buf), root, s.ptr)

    def reduce(self, send: Any, recv: Any, op: str, root: int, stream: Any) -> None:
        s = self._stream(stream)
        with self._run(f"reduce({op}) to rank {root}"):
            self._comm.reduce(
                send.data.ptr, recv.data.ptr, send.size, self._type(send), self._op(op), root, s.ptr
            )
            if op == "avg" and self.rank == root:
                self._scale_avg(recv, s)

    def all_gather(self, send: Any, recv: Any, stream: Any) -> None:
        s = self._stream(stream)
        self._check_multiple("all_gather", recv.size, send.size * self.size)
        with self._run("all_gather"):
            self._comm.allGather(send.data.ptr, recv.data.ptr, send.size, self._type(send), s.ptr)

    def reduce_scatter(self, send: Any, recv: Any, op: str, stream: Any) -> None:
        s = self._stream(stream)
        self._check_multiple("reduce_scatter", send.size, recv.size * self.size)
        with self._run(f"reduce_scatter({op})"):
            self._comm.reduceScatter(
                send.data.ptr, recv.data.ptr, recv.size, self._type(send), self._op(op), s.ptr
            )
            if op == "avg":
                self._scale_avg(recv, s)

    def reduce_scatter_async(self, send: Any, recv: Any, op: str, stream: Any) -> PendingCollective:
        """NCCL enqueues on ``stream`` and returns: already asynchronous for the host (the
        core's task waits on an event recorded on the stream after it)."""
        self.reduce_scatter(send, recv, op, stream)
        return PendingCollective()

    def all_to_all(self, send: Any, recv: Any, stream: Any) -> None:
        s = self._stream(stream)
        self._check_multiple("all_to_all", send.size, recv.size)
        if send.size % self.size:
            raise CommunicationError(
                f"[cuda] all_to_all needs a size divisible by {self.size} ranks, got "
                f"{send.size} elements; pad the tensor"
            )
        chunk = send.size // self.size
        step = chunk * send.dtype.itemsize
        dtype = self._type(send)
        with self._run("all_to_all"):
            self._nccl.groupStart()
            try:
                for peer in range(self.size):
                    self._comm.send(send.data.ptr + peer * step, chunk, dtype, peer, s.ptr)
                    self._comm.recv(recv.data.ptr + peer * step, chunk, dtype, peer, s.ptr)
            finally:
                self._nccl.groupEnd()

    def send(self, buf: Any, peer: int, stream: Any) -> None:
        s = self._stream(stream)
        with self._run(f"send to rank {peer}"):
            self._comm.send(buf.data.ptr, buf.size, self._type(buf), peer, s.ptr)

    def recv(self, buf: Any, peer: int, stream: Any) -> None:
        s = self._stream(stream)
        with self._run(f"recv from rank {peer}"):
            self._comm.recv(buf.data.ptr, buf.size, self._type(buf), peer, s.ptr)

    def barrier(self) -> None:
        s = self._stream(None)
        with self._run("barrier"), s:
            one = self._cp.ones(1, dtype=self._cp.int32)
            self._comm.allReduce(one.data.ptr, one.data.ptr, 1, _NCCL_TYPES["int32"], _NCCL_OPS["sum"], s.ptr)
            s.synchronize()

    def group_start(self) -> None:
        with self._run("group start"):
            self._nccl.groupStart()

    def group_end(self) -> None:
        with self._run("group end"):
            self._nccl.groupEnd()

    def destroy(self) -> None:
        comm, self._comm = getattr(self, "_comm", None), None
        if comm is not None:
            with self._run("destroy the communicator"):
                comm.destroy()

    def _check_multiple(self, op: str, got: int, expected: int) -> None:
        if got != expected:
            raise CommunicationError(
                f"[cuda] {op} buffer sizes do not match {self.size} ranks: {got} != {expected} "
                "elements; allocate the receive buffer as the contract says"
            )
