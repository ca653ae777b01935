"""Communication: the third interface, collectives in the style of NCCL/xccl.

A plugin registers a :class:`Communicator` subclass with
``registry.add_communicator("mydev", MyCommunicator)``.

Bootstrap
---------
Processes are started by a launcher (``mpiexec``). Exactly one registered communicator is the
**host (bootstrap) communicator**: its class sets ``bootstrap = True`` (the CPU plugin's, on
MPI). It needs no unique id, because the launcher itself is its bootstrap:

1. the core calls ``Host.world()`` -> ``(rank, size)`` of this process in the launch;
2. the core builds ``Host(cpu_runtime, 0, rank, size, b"")`` -- the world group;
3. for a sub-group the core calls ``host.split(ranks)`` on every rank of the parent group
   (members get a new host communicator, the others ``None``);
4. for a device type the core calls ``DeviceComm.create(runtime, device_index, host)`` on every
   member of the group. The default :meth:`Communicator.create` is the NCCL recipe: rank 0
   calls ``unique_id()``, the bytes travel to every rank with ``host.broadcast_bytes``, then
   every rank constructs ``DeviceComm(runtime, device_index, rank, size, uid)``. A plugin
   without a collective library derives from :class:`StagedCommunicator` instead: it copies
   device buffers to host arrays and runs the host communicator's collectives on them.

Buffers and streams
-------------------
Buffers are native views (see ``DeviceRuntime.view``) of contiguous device memory, all of one
dtype; ``op`` is one of ``"sum" "avg" "max" "min" "prod"`` (``avg`` of integers rounds down).
Calls are enqueued on ``stream`` after the work already queued there; the core synchronizes
when the user waits on the returned task. ``send`` and ``recv`` may be the same buffer
(in place).

Asynchronous all-reduce
-----------------------
:meth:`Communicator.all_reduce_async` starts an all-reduce and returns a
:class:`PendingCollective` at once; the core calls its ``wait()`` before anyone reads
``recv`` (``task.wait()`` of ``all_reduce(..., sync_op=False)``, DataParallel before the
optimizer step) and its ``test()`` between other work, to let a library that progresses only
inside its calls (MPI) move the transfer along. Several may be outstanding; every rank starts
them in the same order. The default runs :meth:`Communicator.all_reduce` and returns a finished
one, so a plugin with only the synchronous form works unchanged (no contract version needed:
the core supplies the default).

Asynchronous reduce-scatter (contract 1.3)
------------------------------------------
:meth:`Communicator.reduce_scatter_async` is the same for :meth:`Communicator.reduce_scatter`:
data parallelism with sharded gradients (ZeRO stages 2 and 3) starts one per gradient bucket
while the backward goes on. The core calls it only where the plugin declares ``CONTRACT >=
(1, 3)`` and the class defines it (:func:`defines_own`); otherwise the core all-reduces the
bucket asynchronously and keeps this rank's part (the same values, twice the bytes on the
wire). :class:`StagedCommunicator` defines it: the host communicator's own asynchronous
reduce-scatter where it has one, else its asynchronous all-reduce, this rank's chunk uploaded.

Faults
------
A collective must never hang forever: when a peer does not arrive within the communicator's
``timeout`` seconds (default 300; the core sets the attribute after construction, and the host
communicator reads ``OARLOCK_COLLECTIVE_TIMEOUT`` while it starts), raise
:class:`adapter_api.CommunicationError` naming the collective and the missing rank(s).
"""

from __future__ import annotations

from typing import Any

import numpy as np

REDUCE_OPS = ("sum", "avg", "max", "min", "prod")


class PendingCollective:
    """A collective started by :meth:`Communicator.all_reduce_async`; this base one is finished.

    A plugin returns a subclass whose ``test`` lets the transfer progress and says whether it
    finished, and whose ``wait`` finishes it (raising :class:`adapter_api.CommunicationError`,
    naming the collective, where a peer does not arrive within the communicator's timeout).
    Both may be called again after it finished.

    Example::

        pending = comm.all_reduce_async(grad, grad, "avg", stream)
        ...                        # other work; pending.test() now and then
        pending.wait()             # grad now holds the average
    """

    def test(self) -> bool:
        """Progress the transfer; True once it finished (then ``recv`` holds the result)."""
        return True

    def wait(self) -> None:
        """Block until it finished (``recv`` holds the result)."""


class Communicator:
    """Collectives across ``size`` processes for one device type.

    Required: the collectives below that raise ``NotImplementedError("need ...")``. Optional:
    ``all_reduce_async``/``group_start``/``group_end``/``destroy`` (harmless defaults) and, for the host
    communicator only, ``world``/``broadcast_bytes``/``all_gather_bytes``/``split``.
    """

    #: True for the host communicator that starts from the launcher alone (no unique id).
    bootstrap: bool = False
    #: seconds a collective waits for the slowest rank before raising CommunicationError.
    timeout: float = 300.0

    def __init__(self, runtime: Any, device_index: int, rank: int, size: int, uid: bytes) -> None:
        self.runtime = runtime
        self.device_index = device_index
        self.rank = rank
        self.size = size

    @classmethod
    def unique_id(cls) -> bytes:
        """Bytes that identify a new communicator (called on rank 0 only)."""
        return b""

    @classmethod
    def create(cls, runtime: Any, device_index: int, host: Communicator) -> Communicator:
        """Build this communicator for the group of the host communicator ``host``.

        Called on every rank of the group at the same time. The default broadcasts rank 0's
        :meth:`unique_id` over ``host`` and calls the constructor; override it when the
        communicator rides on the host one (see :class:`StagedCommunicator`).
        """
        uid = host.broadcast_bytes(cls.unique_id() if host.rank == 0 else b"", 0)
        comm = cls(runtime, device_index, host.rank, host.size, uid)
        comm.timeout = host.timeout
        return comm

    # -- host (bootstrap) communicator only ---------------------------------------------
    @classmethod
    def world(cls) -> tuple[int, int]:
        """``(rank, size)`` of this process in the launch (host communicator only)."""
        raise NotImplementedError("need world (bootstrap communicators only)")

    def broadcast_bytes(self, data: bytes, root: int) -> bytes:
        """Return ``root``'s ``data`` on every rank (host communicator only)."""
        raise NotImplementedError("need broadcast_bytes (bootstrap communicators only)")

    def all_gather_bytes(self, data: bytes) -> list[bytes]:
        """Every rank's ``data``, in rank order (host communicator only)."""
        raise NotImplementedError("need all_gather_bytes (bootstrap communicators only)")

    def split(self, ranks: list[int]) -> Communicator | None:
        """A communicator over ``ranks`` (ranks of this group, in that order); called on every
        rank of this group; ``None`` on ranks outside ``ranks`` (host communicator only)."""
        raise NotImplementedError("need split (bootstrap communicators only)")

    # -- collectives --------------------------------------------------------------------
    def all_reduce(self, send: Any, recv: Any, op: str, stream: Any) -> None:
        """``recv`` = reduction of every rank's ``send`` (may be the same buffer)."""
        raise NotImplementedError("need all_reduce")

    def all_reduce_async(self, send: Any, recv: Any, op: str, stream: Any) -> PendingCollective:
        """Start :meth:`all_reduce` and return without waiting for it (optional).

        ``send`` and ``recv`` must stay untouched until the returned
        :class:`PendingCollective` finished. The default runs :meth:`all_reduce` now.
        """
        self.all_reduce(send, recv, op, stream)
        return PendingCollective()

    def broadcast(self, buf: Any, root: int, stream: Any) -> None:
        """Copy ``buf`` from ``root`` to every rank, in place."""
        raise NotImplementedError("need broadcast")

    def reduce(self, send: Any, recv: Any, op: str, root: int, stream: Any) -> None:
        """Like all_reduce, but only ``root``'s ``recv`` receives the result."""
        raise NotImplementedError("need reduce")

    def all_gather(self, send: Any, recv: Any, stream: Any) -> None:
        """``recv`` (``size`` times larger, rank-major) = every rank's ``send``."""
        raise NotImplementedError("need all_gather")

    def reduce_scatter(self, send: Any, recv: Any, op: str, stream: Any) -> None:
        """``recv`` = this rank's chunk of the reduction of every rank's ``send``."""
        raise NotImplementedError("need reduce_scatter")

    def reduce_scatter_async(self, send: Any, recv: Any, op: str, stream: Any) -> PendingCollective:
        """Start :meth:`reduce_scatter` and return without waiting for it (optional, contract 1.3).

        ``send`` (``size`` times ``recv``'s elements, rank-major) and ``recv`` must stay
        untouched until the returned :class:`PendingCollective` finished; several may be
        outstanding, with all-reduces among them, started in the same order on every rank.
        The default runs :meth:`reduce_scatter` now; the core calls a plugin's own only (see
        the module), so a plugin that leaves it keeps the core's overlapped fallback.

        Example::

            pending = comm.reduce_scatter_async(bucket, mine, "sum", stream)
            ...                        # the backward goes on; pending.test() now and then
            pending.wait()             # mine holds this rank's chunk of the sum
        """
        self.reduce_scatter(send, recv, op, stream)
        return PendingCollective()

    def all_to_all(self, send: Any, recv: Any, stream: Any) -> None:
        """Chunk ``j`` of ``send`` goes to rank ``j``; chunk ``i`` of ``recv`` comes from rank ``i``."""
        raise NotImplementedError("need all_to_all")

    def send(self, buf: Any, peer: int, stream: Any) -> None:
        """Send ``buf`` to rank ``peer``."""
        raise NotImplementedError("need send")

    def recv(self, buf: Any, peer: int, stream: Any) -> None:
        """Receive into ``buf`` from rank ``peer``."""
        raise NotImplementedError("need recv")

    def barrier(self) -> None:
        """Block until every rank has reached the barrier."""
        raise NotImplementedError("need barrier")

    def group_start(self) -> None:
        """Start batching point-to-point calls (optional): until :meth:`group_end`, ``send``
        and ``recv`` are only posted (buffers stay untouched by the caller), so a batch that
        sends to and receives from a peer which does the same cannot deadlock (NCCL's
        ``ncclGroupStart``). Without it the core orders such a batch itself: the lower rank
        of a pair sends first."""

    def group_end(self) -> None:
        """Finish every call posted since :meth:`group_start` (optional)."""

    def destroy(self) -> None:
        """Release resources."""


def defines_own(comm: Any, method: str) -> bool:
    """Whether ``comm``'s class defines ``method`` itself rather than inheriting the contract's
    default from :class:`Communicator` (the core calls an optional method added after 1.0 only
    then, and only for a plugin declaring its version: :func:`adapter_api.calls_method`).

    Example:
        >>> defines_own(Communicator(None, 0, 0, 1, b""), "reduce_scatter_async")
        False
    """
    return getattr(type(comm), method, None) is not getattr(Communicator, method, None)


class _StagedPending(PendingCollective):
    """A host collective in flight, and the upload that finishes it."""

    def __init__(self, host: PendingCollective, finish: Any) -> None:
        self._host, self._finish = host, finish

    def _done(self) -> None:
        finish, self._finish = self._finish, None
        if finish is not None:
            finish()

    def test(self) -> bool:
        if self._finish is not None and not self._host.test():
            return False
        self._done()
        return True

    def wait(self) -> None:
        if self._finish is not None:
            self._host.wait()
            self._done()


class StagedCommunicator(Communicator):
    """Collectives for a device with no collective library: copy to host, run the host
    communicator's collective on host arrays, copy back. A plugin supplies two methods::

        class MyDevComm(StagedCommunicator):
            def download(self, view, stream):        # device view -> new host numpy array
                ...
            def upload(self, view, array, stream):   # host array -> device view (in place)
                ...

    ``timeout`` and fault reports come from the host communicator.
    """

    def __init__(self, runtime: Any, device_index: int, host: Communicator) -> None:
        super().__init__(runtime, device_index, host.rank, host.size, b"")
        self.host = host
        self.timeout = host.timeout

    @classmethod
    def create(cls, runtime: Any, device_index: int, host: Communicator) -> Communicator:
        return cls(runtime, device_index, host)

    def download(self, view: Any, stream: Any) -> np.ndarray:
        """A host copy of ``view`` (waits for the work queued on ``stream``)."""
        raise NotImplementedError("need download")

    def upload(self, view: Any, array: np.ndarray, stream: Any) -> None:
        """Copy the host ``array`` into ``view`` (finished when this returns)."""
        raise NotImplementedError("need upload")

    def _empty(self, view: Any) -> np.ndarray:
        return np.empty(tuple(view.shape), np.dtype(view.dtype))

    # -- collectives, staged ------------------------------------------------------------
    def all_reduce(self, send: Any, recv: Any, op: str, stream: Any) -> None:
        h = self.download(send, stream)
        self.host.all_reduce(h, h, op, None)
        self.upload(recv, h, stream)

    def all_reduce_async(self, send: Any, recv: Any, op: str, stream: Any) -> PendingCollective:
        """Download now, start the host communicator's all-reduce, upload when it finished."""
        h = self.download(send, stream)
        return _StagedPending(
            self.host.all_reduce_async(h, h, op, None), lambda: self.upload(recv, h, stream)
        )

    def reduce_scatter_async(self, send: Any, recv: Any, op: str, stream: Any) -> PendingCollective:
        """Download now; the host communicator's own asynchronous reduce-scatter where it has
        one, else its asynchronous all-reduce of the whole buffer; upload this rank's chunk
        when it finished."""
        h = self.download(send, stream)
        n = int(np.prod(tuple(recv.shape)))
        if defines_own(self.host, "reduce_scatter_async"):
            out = self._empty(recv)
            started = self.host.reduce_scatter_async(h, out, op, None)
            return _StagedPending(started, lambda: self.upload(recv, out, stream))
        flat = h.reshape(-1)
        mine = flat[self.rank * n : (self.rank + 1) * n]
        started = self.host.all_reduce_async(flat, flat, op, None)
        return _StagedPending(started, lambda: self.upload(recv, mine.reshape(tuple(recv.shape)), stream))

    def broadcast(self, buf: Any, root: int, stream: Any) -> None:
        h = self.download(buf, stream) if self.rank == root else self._empty(buf)
        self.host.broadcast(h, root, None)
        if self.rank != root:
            self.upload(buf, h, stream)

    def reduce(self, send: Any, recv: Any, op: str, root: int, stream: Any) -> None:
        h = self.download(send, stream)
        out = self._empty(recv)
        self.host.reduce(h, out, op, root, None)
        if self.rank == root:
            self.upload(recv, out, stream)

    def all_gather(self, send: Any, recv: Any, stream: Any) -> None:
        h, out = self.download(send, stream), self._empty(recv)
        self.host.all_gather(h, out, None)
        self.upload(recv, out, stream)

    def reduce_scatter(self, send: Any, recv: Any, op: str, stream: Any) -> None:
        h, out = self.download(send, stream), self._empty(recv)
        self.host.reduce_scatter(h, out, op, None)
        self.upload(recv, out, stream)

    def all_to_all(self, send: Any, recv: Any, stream: Any) -> None:
        h, out = self.download(send, stream), self._empty(recv)
        self.host.all_to_all(h, out, None)
        self.upload(recv, out, stream)

    def send(self, buf: Any, peer: int, stream: Any) -> None:
        self.host.send(self.download(buf, stream), peer, None)

    def recv(self, buf: Any, peer: int, stream: Any) -> None:
        out = self._empty(buf)
        self.host.recv(out, peer, None)
        if self._uploads is not None:  # grouped: the data is there after group_end
            self._uploads.append((buf, out, stream))
        else:
            self.upload(buf, out, stream)

    _uploads: list[tuple[Any, np.ndarray, Any]] | None = None

    def group_start(self) -> None:
        self.host.group_start()
        if self._uploads is None:
            self._uploads = []

    def group_end(self) -> None:
        uploads, self._uploads = self._uploads or [], None
        self.host.group_end()
        for buf, out, stream in uploads:
            self.upload(buf, out, stream)

    def barrier(self) -> None:
        self.host.barrier()
