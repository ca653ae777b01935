"""Collectives on MPI (mpi4py), zero-copy on host numpy buffers; the host (bootstrap) communicator.

Every call is a nonblocking MPI request polled against a deadline (``timeout`` seconds), so a
rank that died or never arrives turns into a :class:`CommunicationError` naming the collective
and the missing ranks instead of an endless hang. Missing ranks are found like this: a rank
that has waited more than half a second in collective number ``k`` tells its peers so on a
side communicator; at the deadline, the peers that did not say so are the missing ones.

A peer's death reported by the launcher shortens the wait to a grace period, and a fault makes
the process leave without ``MPI_Finalize``: see faults.py.

float16 and bfloat16 are reduced in float32 (one rounding at the end); bool is reduced as
logical or (``sum``, ``max``) or logical and (``min``, ``prod``).
"""

from __future__ import annotations

import os
import time
from collections import deque
from typing import Any

import numpy as np

from adapter_api import REDUCE_OPS, CommunicationError, Communicator
from adapter_api.communicator import PendingCollective

from . import faults

_ANNOUNCE_AFTER = 0.5  # seconds waited before a rank tells its peers it is waiting
_SPIN = 0.005  # seconds a wait polls MPI without yielding the core
_TAG_WAITING = 7


def _mpi() -> Any:
    try:
        from mpi4py import MPI
    except ImportError as exc:
        raise CommunicationError(
            f"[cpu] collectives need mpi4py and an MPI library ({exc}); pip install 'oarlock[dist]'"
        ) from exc
    return MPI


def _arrive(comm: Any, timeout: float) -> None:
    """A barrier that gives up after ``timeout`` seconds (used before the blocking Dup)."""
    req = comm.Ibarrier()
    t0 = time.monotonic()
    while not req.Test():
        waited = time.monotonic() - t0
        failed = faults.peer_failed()
        if waited > timeout or (failed is not None and time.monotonic() > failed + faults.GRACE):
            faults.mark_broken()
            raise CommunicationError(
                f"[distributed] init_parallel_env timed out after {waited:.1f} s on rank {comm.Get_rank()}: "
                f"not all {comm.Get_size()} ranks arrived (one died, or is stuck before init_parallel_env); "
                f"check every rank's output, or raise OARLOCK_COLLECTIVE_TIMEOUT (now {timeout:g} s)"
            )
        time.sleep(0 if waited < 1.0 else 0.001)


def _types(MPI: Any) -> dict[str, Any]:
    return {
        "int8": MPI.INT8_T,
        "uint8": MPI.UINT8_T,
        "bool": MPI.UINT8_T,
        "int16": MPI.INT16_T,
        "uint16": MPI.UINT16_T,
        "int32": MPI.INT32_T,
        "uint32": MPI.UINT32_T,
        "int64": MPI.INT64_T,
        "uint64": MPI.UINT64_T,
        "float32": MPI.FLOAT,
        "float64": MPI.DOUBLE,
        "float16": MPI.UINT16_T,  # moved as bits; reduced in float32
        "bfloat16": MPI.UINT16_T,
    }


_HALF = ("float16", "bfloat16")


class MPICommunicator(Communicator):
    """The host communicator: MPI over the processes ``mpiexec`` started.

    Example (every rank)::

        rank, size = MPICommunicator.world()
        comm = MPICommunicator(cpu_runtime, 0, rank, size, b"")
        comm.all_reduce(grad, grad, "avg", None)      # numpy arrays, in place
    """

    bootstrap = True

    @classmethod
    def world(cls) -> tuple[int, int]:
        MPI = _mpi()
        w = MPI.COMM_WORLD
        faults.install(w.Get_size())
        return w.Get_rank(), w.Get_size()

    def __init__(
        self,
        runtime: Any,
        device_index: int,
        rank: int,
        size: int,
        uid: bytes,
        *,
        _comm: Any = None,
        _world_ranks: list[int] | None = None,
    ) -> None:
        super().__init__(runtime, device_index, rank, size, uid)
        MPI = self._MPI = _mpi()
        base = _comm if _comm is not None else MPI.COMM_WORLD
        env = os.environ.get("OARLOCK_COLLECTIVE_TIMEOUT")
        if env:
            self.timeout = float(env)
        if _comm is None:
            _arrive(base, self.timeout)  # MPI_Comm_dup would wait forever for a missing rank
        self._comm = base.Dup()
        self._ctl = base.Dup()  # side channel: "I am waiting in collective k"
        if self._comm.Get_rank() != rank or self._comm.Get_size() != size:
            raise CommunicationError(
                f"[cpu] MPI says this process is rank {self._comm.Get_rank()} of {self._comm.Get_size()}, "
                f"the caller said rank {rank} of {size}; start every process with the same mpiexec"
            )
        self._types = _types(MPI)
        self._dtypes: dict[np.dtype, tuple[Any, Any, str]] = {}
        self._ops = {"sum": MPI.SUM, "avg": MPI.SUM, "max": MPI.MAX, "min": MPI.MIN, "prod": MPI.PROD}
        self._bool_ops = {"sum": MPI.MAX, "max": MPI.MAX, "min": MPI.MIN, "prod": MPI.MIN}
        self.world_ranks = list(_world_ranks) if _world_ranks is not None else list(range(size))
        self._seq = 0
        self._heard: dict[int, int] = {}
        self._pending: list[Any] = []  # announcement sends, and requests abandoned at a timeout
        self._grouped: list[tuple[Any, Any, int, Any]] | None = None  # posted p2p calls (group)
        self._inflight: deque[MPIPending] = deque()  # asynchronous collectives not finished, in order

    # -- host communicator extras -------------------------------------------------------
    def broadcast_bytes(self, data: bytes, root: int) -> bytes:
        n = np.array([len(data)], np.int64)
        self._run("broadcast_bytes", lambda: self._comm.Ibcast([n, self._MPI.INT64_T], root))
        buf = np.frombuffer(data, np.uint8).copy() if self.rank == root else np.empty(int(n[0]), np.uint8)
        self._run("broadcast_bytes", lambda: self._comm.Ibcast([buf, self._MPI.UINT8_T], root))
        return buf.tobytes()

    def all_gather_bytes(self, data: bytes) -> list[bytes]:
        mine = np.array([len(data)], np.int64)
        sizes = np.empty(self.size, np.int64)
        self._run(
            "all_gather_bytes",
            lambda: self._comm.Iallgather([mine, self._MPI.INT64_T], [sizes, self._MPI.INT64_T]),
        )
        out = np.empty(int(sizes.sum()), np.uint8)
        send = np.frombuffer(data, np.uint8).copy()
        counts = [int(s) for s in sizes]
        displs = [int(d) for d in np.concatenate([[0], np.cumsum(sizes)[:-1]])]
        self._run(
            "all_gather_bytes",
            lambda: self._comm.Iallgatherv(
                [send, self._MPI.UINT8_T], [out, (counts, displs), self._MPI.UINT8_T]
            ),
        )
        return [out[d : d + c].tobytes() for c, d in zip(counts, displs)]

    def split(self, ranks: list[int]) -> MPICommunicator | None:
        ranks = [int(r) for r in ranks]
        self.barrier()  # a missing rank times out here instead of hanging in MPI_Comm_split
        member = self.rank in ranks
        color = 0 if member else self._MPI.UNDEFINED
        sub = self._comm.Split(color, ranks.index(self.rank) if member else 0)
        if not member:
            return None
        comm = MPICommunicator(
            self.runtime,
            self.device_index,
            ranks.index(self.rank),
            len(ranks),
            b"",
            _comm=sub,
            _world_ranks=[self.world_ranks[r] for r in ranks],
        )
        comm.timeout = self.timeout
        sub.Free()
        return comm

    # -- helpers ------------------------------------------------------------------------
    def _info(self, dtype: np.dtype) -> tuple[Any, Any, str]:
        """(MPI type, dtype to view the buffer as or None, "half" | "bool" | ""), cached."""
        info = self._dtypes.get(dtype)
        if info is None:
            name = dtype.name
            t = self._types.get(name)
            if t is None:
                raise CommunicationError(
                    f"[cpu] collectives do not support {name}; cast the tensor to float32 or int64 first"
                )
            kind = "half" if name in _HALF else "bool" if name == "bool" else ""
            view = np.dtype(np.uint16) if kind == "half" else np.dtype(np.uint8) if kind == "bool" else None
            info = self._dtypes[dtype] = (t, view, kind)
        return info

    def _buf(self, a: Any) -> list[Any]:
        t, view, _ = self._info(a.dtype)
        if view is not None:
            a = a.view(view)
        return [a.reshape(-1), t]

    def _op(self, op: str, dtype: np.dtype) -> Any:
        if op not in REDUCE_OPS:
            raise CommunicationError(f"[cpu] reduce op {op!r} is unknown; use one of {', '.join(REDUCE_OPS)}")
        if self._info(dtype)[2] == "bool":
            if op == "avg":
                raise CommunicationError("[cpu] avg of bool tensors is undefined; cast to float32 first")
            return self._bool_ops[op]
        return self._ops[op]

    @staticmethod
    def _same(a: np.ndarray, b: np.ndarray) -> bool:
        if a is b:
            return True
        return a.__array_interface__["data"][0] == b.__array_interface__["data"][0] and a.nbytes == b.nbytes

    def _sync(self, stream: Any) -> None:
        if stream is not None:  # a CPU stream: the collective runs after the work queued on it
            self.runtime.synchronize_stream(stream)

    def _avg(self, a: np.ndarray) -> None:
        if a.dtype.kind == "f":
            np.divide(a, a.dtype.type(self.size), out=a)
        else:
            np.floor_divide(a, self.size, out=a)

    def _run(self, what: Any, post: Any, peers: list[int] | None = None) -> None:
        """Post a nonblocking MPI call and poll it until done or the deadline."""
        req = self._post(what, post, peers is None)
        self._wait(req, what, peers, self._seq)

    def _post(self, what: Any, post: Any, collective: bool) -> Any:
        if collective:
            self._seq += 1
        try:
            return post()
        except self._MPI.Exception as exc:
            raise self._mpi_error(what, exc) from exc

    def _wait(self, req: Any, what: Any, peers: list[int] | None, seq: int) -> None:
        """Poll ``req`` (collective number ``seq``, or a call to ``peers``) until done or the deadline."""
        MPI = self._MPI
        collective = peers is None
        try:
            if req.Test():
                return
            t0 = time.monotonic()
            deadline = t0 + self.timeout
            announced = False
            while True:
                for _ in range(32):
                    if req.Test():
                        return
                now = time.monotonic()
                waited = now - t0
                # NOTE: MPI progresses only inside Test: spin for the first milliseconds (as a
                # blocking MPI call would), then yield, and sleep only in long waits, so that
                # waiting ranks leave the cores to the others.
                if waited > _SPIN:
                    time.sleep(0 if waited < 1.0 else 0.001)
                if collective and not announced and waited > _ANNOUNCE_AFTER:
                    self._announce(seq)
                    announced = True
                failed = faults.peer_failed()
                if failed is not None:
                    deadline = min(deadline, failed + faults.GRACE)
                if now > deadline:
                    self._pending.append(req)  # MPI may still write the buffer: keep it alive
                    raise self._timeout(what, waited, peers, failed is not None, seq)
        except MPI.Exception as exc:
            raise self._mpi_error(what, exc) from exc

    def _announce(self, seq: int) -> None:
        mine = np.array([seq], np.int64)
        self._pending = [r for r in self._pending if not (isinstance(r, self._MPI.Request) and r.Test())]
        for peer in range(self.size):
            if peer != self.rank:
                self._pending.append(self._ctl.Isend([mine, self._MPI.INT64_T], peer, _TAG_WAITING))
        self._drain()

    def _drain(self) -> None:
        MPI = self._MPI
        status = MPI.Status()
        got = np.empty(1, np.int64)
        while self._ctl.Iprobe(MPI.ANY_SOURCE, _TAG_WAITING, status):
            src = status.Get_source()
            self._ctl.Recv([got, MPI.INT64_T], src, _TAG_WAITING)
            self._heard[src] = max(self._heard.get(src, 0), int(got[0]))

    def _who(self, rank: int) -> str:
        w = self.world_ranks[rank]
        return str(rank) if w == rank else f"{rank} (world rank {w})"

    def _timeout(
        self, what: Any, waited: float, peers: list[int] | None, died: bool, seq: int
    ) -> CommunicationError:
        what = what() if callable(what) else what
        faults.mark_broken()
        if peers is None:
            end = time.monotonic() + min(1.0, self.timeout)
            while True:  # late announcements of ranks that are in this collective too
                self._drain()
                missing = [r for r in range(self.size) if r != self.rank and self._heard.get(r, 0) < seq]
                if not missing or time.monotonic() > end:
                    break
                time.sleep(0.01)
        else:
            missing = peers
        names = ", ".join(self._who(r) for r in missing) or "none identified"
        cause = "a process of the job died (its launcher said so); " if died else ""
        return CommunicationError(
            f"[distributed] {what} timed out after {waited:.1f} s on rank {self._who(self.rank)} of {self.size}: "
            f"{cause}missing rank(s): {names} (dead, or stuck before this call); check those ranks' "
            f"output, or raise OARLOCK_COLLECTIVE_TIMEOUT (now {self.timeout:g} s); this process "
            f"group is now unusable"
        )

    def _mpi_error(self, what: Any, exc: Exception) -> CommunicationError:
        what = what() if callable(what) else what
        faults.mark_broken()
        return CommunicationError(
            f"[distributed] {what} failed on rank {self._who(self.rank)} of {self.size}: MPI error "
            f"{exc}; check that every rank makes the same call with the same shapes and dtypes "
            f"(OARLOCK_DISTRIBUTED_DEBUG=1 checks them before each collective)"
        )

    # -- collectives --------------------------------------------------------------------
    def all_reduce(self, send: Any, recv: Any, op: str, stream: Any) -> None:
        self.all_reduce_async(send, recv, op, stream).wait()

    def all_reduce_async(self, send: Any, recv: Any, op: str, stream: Any) -> MPIPending:
        """Post the all-reduce (MPI_Iallreduce) and return; see :class:`MPIPending`."""
        self._sync(stream)
        what = lambda: f"all_reduce({op}) of {send.size} {send.dtype.name} elements"
        mop = self._op(op, send.dtype)
        MPI = self._MPI
        if self._info(send.dtype)[2] == "half":
            tmp = send.astype(np.float32).reshape(-1)
            post = lambda: self._comm.Iallreduce(MPI.IN_PLACE, [tmp, MPI.FLOAT], mop)

            def after() -> None:
                if op == "avg":
                    self._avg(tmp)
                recv.reshape(-1)[...] = tmp.astype(recv.dtype)

            keep: tuple[Any, ...] = (recv, tmp)
        else:
            if self._same(send, recv):
                post = lambda: self._comm.Iallreduce(MPI.IN_PLACE, self._buf(recv), mop)
            else:
                post = lambda: self._comm.Iallreduce(self._buf(send), self._buf(recv), mop)
            after = (lambda: self._avg(recv)) if op == "avg" else None
            keep = (send, recv)
        return self._start(what, post, after, keep)

    def reduce(self, send: Any, recv: Any, op: str, root: int, stream: Any) -> None:
        self._sync(stream)
        what = lambda: f"reduce({op}) of {send.size} {send.dtype.name} elements to rank {root}"
        mop = self._op(op, send.dtype)
        root_ = self.rank == root
        if self._info(send.dtype)[2] == "half":
            tmp = send.astype(np.float32).reshape(-1)
            self._run(
                what,
                lambda: self._comm.Ireduce(
                    self._MPI.IN_PLACE if root_ else [tmp, self._MPI.FLOAT], [tmp, self._MPI.FLOAT], mop, root
                ),
            )
            if root_:
                if op == "avg":
                    self._avg(tmp)
                recv.reshape(-1)[...] = tmp.astype(recv.dtype)
            return
        if root_ and self._same(send, recv):
            self._run(what, lambda: self._comm.Ireduce(self._MPI.IN_PLACE, self._buf(recv), mop, root))
        else:
            self._run(
                what,
                lambda: self._comm.Ireduce(self._buf(send), self._buf(recv) if root_ else None, mop, root),
            )
        if op == "avg" and root_:
            self._avg(recv)

    def broadcast(self, buf: Any, root: int, stream: Any) -> None:
        self._sync(stream)
        what = lambda: f"broadcast of {buf.size} {buf.dtype.name} elements from rank {root}"
        self._run(what, lambda: self._comm.Ibcast(self._buf(buf), root))

    def all_gather(self, send: Any, recv: Any, stream: Any) -> None:
        self._sync(stream)
        self._check("all_gather", recv.size, send.size * self.size)
        what = lambda: f"all_gather of {send.size} {send.dtype.name} elements"
        if (
            self._same(send, recv.reshape(-1)[self.rank * send.size : (self.rank + 1) * send.size])
            and send.size
        ):
            self._run(what, lambda: self._comm.Iallgather(self._MPI.IN_PLACE, self._buf(recv)))
        else:
            self._run(what, lambda: self._comm.Iallgather(self._buf(send), self._buf(recv)))

    def reduce_scatter(self, send: Any, recv: Any, op: str, stream: Any) -> None:
        self.reduce_scatter_async(send, recv, op, stream).wait()

    def reduce_scatter_async(self, send: Any, recv: Any, op: str, stream: Any) -> MPIPending:
        """Post the reduce-scatter (MPI_Ireduce_scatter_block) and return; see :class:`MPIPending`."""
        self._sync(stream)
        self._check("reduce_scatter", send.size, recv.size * self.size)
        what = lambda: f"reduce_scatter({op}) of {send.size} {send.dtype.name} elements"
        mop = self._op(op, send.dtype)
        MPI = self._MPI
        if self._info(send.dtype)[2] == "half":
            tmp = send.astype(np.float32).reshape(-1)
            out = np.empty(recv.size, np.float32)
            post = lambda: self._comm.Ireduce_scatter_block([tmp, MPI.FLOAT], [out, MPI.FLOAT], mop)

            def after() -> None:
                if op == "avg":
                    self._avg(out)
                recv.reshape(-1)[...] = out.astype(recv.dtype)

            keep: tuple[Any, ...] = (recv, tmp, out)
        else:
            if np.shares_memory(send, recv):
                send = send.copy()
            post = lambda: self._comm.Ireduce_scatter_block(self._buf(send), self._buf(recv), mop)
            after = (lambda: self._avg(recv)) if op == "avg" else None
            keep = (send, recv)
        return self._start(what, post, after, keep)

    def _start(self, what: Any, post: Any, after: Any, keep: tuple[Any, ...]) -> MPIPending:
        """Post a nonblocking collective and queue it among those in flight."""
        req = self._post(what, post, True)
        pending = MPIPending(self, req, what, self._seq, after, keep)
        self._inflight.append(pending)
        return pending

    def all_to_all(self, send: Any, recv: Any, stream: Any) -> None:
        self._sync(stream)
        self._check("all_to_all", recv.size, send.size)
        if send.size % self.size:
            raise CommunicationError(
                f"[cpu] all_to_all needs a size divisible by {self.size} ranks, got {send.size} elements; pad the tensor"
            )
        if np.shares_memory(send, recv):
            send = send.copy()
        what = lambda: f"all_to_all of {send.size} {send.dtype.name} elements"
        self._run(what, lambda: self._comm.Ialltoall(self._buf(send), self._buf(recv)))

    def send(self, buf: Any, peer: int, stream: Any) -> None:
        self._sync(stream)
        what = lambda: f"send of {buf.size} {buf.dtype.name} elements to rank {self._who(peer)}"
        self._p2p(what, lambda b: self._comm.Isend(b, peer, 0), buf, peer)

    def recv(self, buf: Any, peer: int, stream: Any) -> None:
        self._sync(stream)
        what = lambda: f"recv of {buf.size} {buf.dtype.name} elements from rank {self._who(peer)}"
        self._p2p(what, lambda b: self._comm.Irecv(b, peer, 0), buf, peer)

    def _p2p(self, what: Any, post: Any, buf: Any, peer: int) -> None:
        b = self._buf(buf)
        if self._grouped is None:
            self._run(what, lambda: post(b), peers=[peer])
            return
        try:  # between group_start and group_end: posted now, finished in group_end
            self._grouped.append((what, post(b), peer, b))
        except self._MPI.Exception as exc:
            raise self._mpi_error(what, exc) from exc

    def group_start(self) -> None:
        """Point-to-point calls up to :meth:`group_end` are posted without waiting, so a
        batch that sends to and receives from the same peer cannot wait on itself."""
        if self._grouped is None:
            self._grouped = []

    def group_end(self) -> None:
        calls, self._grouped = self._grouped or [], None
        for what, req, peer, _buf in calls:  # every call is posted: wait for each in turn
            self._run(what, lambda req=req: req, peers=[peer])

    def barrier(self) -> None:
        self._run("barrier", self._comm.Ibarrier)

    def destroy(self) -> None:
        for c in (getattr(self, "_comm", None), getattr(self, "_ctl", None)):
            if c is not None and not faults.broken():
                try:
                    c.Free()
                except Exception:  # noqa: BLE001 — MPI may already be finalized
                    pass
        self._comm = self._ctl = None

    def _check(self, op: str, got: int, expected: int) -> None:
        if got != expected:
            raise CommunicationError(
                f"[cpu] {op} buffer sizes do not match {self.size} ranks: {got} != {expected} "
                "elements; allocate the receive buffer as the contract says"
            )


class MPIPending(PendingCollective):
    """An all-reduce or reduce-scatter posted by :meth:`MPICommunicator.all_reduce_async` or
    :meth:`MPICommunicator.reduce_scatter_async`.

    MPI moves the data only inside MPI calls (unless MPICH runs its own progress thread,
    ``MPICH_ASYNC_PROGRESS=1``), so ``test()`` is cheap enough to call between kernels: one
    ``MPI_Test`` of the oldest unfinished request. The requests of a communicator finish in
    the order they were posted: ``wait()`` and ``test()`` finish the earlier ones first
    (dividing for ``avg``, converting back from float32 for float16/bfloat16). ``wait()``
    keeps the communicator's deadline and peer-death detection: a peer that never arrives
    becomes a :class:`CommunicationError` naming the collective and the missing rank(s).

    Example (every rank)::

        pending = comm.all_reduce_async(grad, grad, "avg", None)
        ...                                    # backward goes on; pending.test() now and then
        pending.wait()                          # grad holds the average
    """

    __slots__ = ("comm", "req", "what", "seq", "after", "keep", "done")

    def __init__(self, comm: MPICommunicator, req: Any, what: Any, seq: int, after: Any, keep: Any) -> None:
        self.comm, self.req, self.what, self.seq = comm, req, what, seq
        self.after, self.keep = after, keep  # keep: the buffers MPI writes, alive until done
        self.done = False

    def _complete(self) -> None:
        self.comm._inflight.popleft()  # it is the oldest
        self.done = True
        self.keep = None
        if self.after is not None:
            self.after()

    def test(self) -> bool:
        comm = self.comm
        while not self.done:
            first = comm._inflight[0]
            try:
                if not first.req.Test():
                    return False
            except comm._MPI.Exception as exc:
                raise comm._mpi_error(first.what, exc) from exc
            first._complete()
        return True

    def wait(self) -> None:
        comm = self.comm
        while not self.done:
            first = comm._inflight[0]
            comm._wait(first.req, first.what, None, first.seq)
            first._complete()


def register_communicator(registry: Any) -> None:
    registry.add_communicator("cpu", MPICommunicator)
