"""Worker processes of a DataLoader: the pool, the ordered iterator, and a clean shutdown.

The main process sends index batches to the workers round-robin (at most
``prefetch_factor * num_workers`` outstanding), reorders the answers by send order, and turns
their numpy arrays into tensors through :class:`HostToDeviceStager`. The workers are stopped
(asked, then terminated) when the epoch ends (unless ``persistent_workers``), when a worker
fails, when the loop is left with ``break``, when the iterator is garbage-collected, on Ctrl-C
(the main process's KeyboardInterrupt unwinds through the iterator) and at interpreter exit.
"""

from __future__ import annotations

import itertools
import multiprocessing as mp
import pickle
import time
import weakref
from typing import TYPE_CHECKING, Any

import numpy as np

from adapter_api import OarlockError, OpArgumentError

from .._src import device as _dev
from .._src import env
from .._src.ops.random import default_generator
from ._result_pipe import ResultPipes, WorkerPipeClosed
from ._staging import HostToDeviceStager
from ._worker import HEARTBEAT_S as _HEARTBEAT_S
from ._worker import WorkerFailure, worker_loop

if TYPE_CHECKING:
    from .dataloader import DataLoader

#: how long the main process waits for a batch before it checks that the workers live (s)
_POLL_S = 0.2
#: how long a worker is given to exit after it is asked to, before it is terminated (s)
_JOIN_S = 5.0
#: the bound on a wait for a batch with ``timeout=0`` (``OARLOCK_DATALOADER_STALL_TIMEOUT``)
DEFAULT_STALL_S = 600.0


class DataLoaderWorkerError(OarlockError):
    """A worker died, or raised an exception of a type the main process cannot rebuild."""


def mp_context(name: str | None) -> Any:
    """The multiprocessing context for workers: ``forkserver`` where the platform has it,
    else ``spawn``; ``fork`` is refused (the parent holds device contexts and threads)."""
    methods = mp.get_all_start_methods()
    if name is None:
        name = "forkserver" if "forkserver" in methods else "spawn"
    if name == "fork":
        raise OpArgumentError(
            "[DataLoader] multiprocessing_context='fork' is not allowed: a forked child inherits the "
            "parent's device contexts and threads; use 'spawn' or 'forkserver'"
        )
    if name not in methods:
        raise OpArgumentError(
            f"[DataLoader] multiprocessing_context must be one of {[m for m in methods if m != 'fork']}, got {name!r}"
        )
    ctx = mp.get_context(name)
    if name == "forkserver":
        # NOTE: the fork server imports the framework and the plugin registry once (no device
        # is opened: runtimes are created on first use); each worker is then forked from it in
        # milliseconds instead of importing them anew. A server started earlier keeps its preload.
        ctx.set_forkserver_preload(["framework.io._worker", "framework.io._forkserver_preload"])
    return ctx


def _check_picklable(what: str, obj: Any, num_workers: int) -> None:
    try:
        pickle.dumps(obj)
    except Exception as exc:
        raise OpArgumentError(
            f"[DataLoader] num_workers={num_workers} sends the {what} to worker processes by pickling, and it "
            f"could not be pickled ({type(exc).__name__}: {exc}); define it at module level, or use num_workers=0"
        ) from exc


class WorkerPool:
    """``num_workers`` processes, each with its own request queue and its own result pipe
    (:mod:`._result_pipe`: no lock is shared between workers, so one killed or stopped
    worker cannot stall the others' answers)."""

    def __init__(self, loader: DataLoader) -> None:
        n = loader.num_workers
        _check_picklable("dataset", loader.dataset, n)
        user_collate = None if loader._default_collate else loader.collate_fn
        _check_picklable("collate_fn", user_collate, n)
        _check_picklable("worker_init_fn", loader.worker_init_fn, n)
        ctx = mp_context(loader.multiprocessing_context)
        self.results = ResultPipes(ctx, n)
        #: each worker's last heartbeat (time.time()), stamped by a thread in the worker
        self.beats = ctx.Array("d", n, lock=False)
        self.index_queues: list[Any] = []
        self.workers: list[Any] = []
        self.epoch = -1
        self.persistent = loader.persistent_workers
        for wid in range(n):
            iq = ctx.Queue()
            args = (
                loader.dataset,
                user_collate,
                loader._auto_collate,
                loader.iterable,
                loader.batch_size,
                loader.drop_last,
                wid,
                n,
                iq,
                self.results.writer(wid),
                loader.worker_init_fn,
                self.beats,
            )
            w = ctx.Process(target=worker_loop, args=args, daemon=True, name=f"oarlock-dataloader-{wid}")
            w.start()
            self.index_queues.append(iq)
            self.workers.append(w)
        self.results.close_writers()  # each worker holds its own: its exit reads as end-of-file
        self._finalizer = weakref.finalize(self, _shutdown, self.workers, self.index_queues, self.results)

    @property
    def alive(self) -> bool:
        return self._finalizer.alive

    def pids(self) -> list[int]:
        return [w.pid for w in self.workers]

    def shutdown(self) -> None:
        self._finalizer()


def _shutdown(workers: list[Any], index_queues: list[Any], results: ResultPipes) -> None:
    for q in index_queues:
        try:
            q.put(None)
        except Exception:  # noqa: BLE001  (a closed queue: the worker is gone already)
            pass
    deadline = time.monotonic() + _JOIN_S
    for w in workers:
        w.join(max(0.0, deadline - time.monotonic()))
    for w in workers:
        if w.is_alive():
            w.terminate()
            w.join(1.0)
        if w.is_alive():
            w.kill()
            w.join(1.0)
    for q in index_queues:
        q.cancel_join_thread()
        q.close()
    results.close()


def _worker_base_seed(loader: DataLoader) -> int:
    """The workers' base seed for a new epoch, from the state of ``loader.generator`` (else the
    global generator) after the sampler drew the epoch's order, and the loader's epoch count;
    nothing is drawn, so the orders of later epochs (and any later draw) are those
    ``num_workers=0`` gives, and ``fw.seed(n)`` still makes the workers' streams reproducible."""
    state = (loader.generator or default_generator).get_state()
    loader._worker_epochs += 1
    words = np.random.SeedSequence([*state, loader._worker_epochs]).generate_state(1)
    return int(words[0] % 2**24) * 1_000_003


class MultiProcessIterator:
    """One epoch over a :class:`WorkerPool`: batches in the order of the batch sampler (map
    style) or round-robin over the workers' streams (iterable style), as tensors on
    ``device``."""

    def __init__(self, loader: DataLoader, pool: WorkerPool, device: _dev.Device) -> None:
        self.loader, self.pool = loader, pool
        self.n = len(pool.workers)
        self.stager = HostToDeviceStager(device) if loader.use_buffer_reader else None
        pool.epoch += 1
        self.epoch = pool.epoch
        self._indices = iter(loader.batch_sampler) if loader.batch_sampler is not None else None
        if self._indices is None and not loader.iterable:
            self._indices = iter(range(len(loader.dataset)))
        first = next(self._indices, None) if self._indices is not None else None
        seed = _worker_base_seed(loader)
        for q in pool.index_queues:
            q.put(("epoch", self.epoch, seed))
        self._pending = [first] if first is not None else []
        self._send_idx = 0
        self._rcvd_idx = 0
        self._owner: dict[int, int] = {}  # send_idx -> worker id, for requests not yet answered
        self._buffer: dict[int, tuple[str, Any, int]] = {}
        self._active = list(range(self.n))  # iterable style: workers whose stream has not ended
        self._rr = itertools.cycle(range(self.n))
        self._staged: tuple[Any, Any] | None = None  # the next batch, its copies in flight
        self._done = False
        self._last_progress = time.monotonic()
        for _ in range(loader.prefetch_factor * self.n):
            if not self._request():
                break

    # -- requests --------------------------------------------------------------------------
    def _request(self) -> bool:
        if self._indices is not None:
            idx = self._pending.pop() if self._pending else next(self._indices, None)
            if idx is None:
                return False
            wid = next(self._rr)
            self.pool.index_queues[wid].put(("batch", self.epoch, self._send_idx, idx))
        else:
            if not self._active:
                return False
            wid = self._active[self._send_idx % len(self._active)]
            self.pool.index_queues[wid].put(("next", self.epoch, self._send_idx))
        self._owner[self._send_idx] = wid
        self._send_idx += 1
        return True

    # -- receiving -------------------------------------------------------------------------
    def _receive(self) -> tuple[str, Any, int]:
        """The answer to request ``_rcvd_idx``, waiting for it (and watching the workers)."""
        timeout = self.loader.timeout
        if self.pool.epoch != self.epoch:
            raise OpArgumentError(
                "[DataLoader] this iterator was superseded: a newer iter() over the same loader with "
                "persistent_workers=True took its workers; finish one epoch before starting the next"
            )
        while self._rcvd_idx not in self._buffer:
            try:
                got = self.pool.results.get(timeout=_POLL_S)
            except WorkerPipeClosed as exc:
                self._worker_gone(exc.worker_id)
                continue
            if got is None:
                self._check_workers(timeout)
                continue
            epoch, send_idx, wid, kind, payload = pickle.loads(got[1])
            if kind == "error" and epoch == -1:
                raise _rebuild(payload)  # worker_init_fn failed
            if epoch != self.epoch:
                continue  # an answer to an epoch left early (persistent workers)
            self._last_progress = time.monotonic()
            self._owner.pop(send_idx, None)
            self._buffer[send_idx] = (kind, payload, wid)
        return self._buffer.pop(self._rcvd_idx)

    def _worker_gone(self, wid: int) -> None:
        """Worker ``wid``'s result pipe closed: an error naming it when it still owed answers
        (or died), else nothing (it exited after its last answer)."""
        w = self.pool.workers[wid]
        w.join(_POLL_S)
        if any(o == wid for o in self._owner.values()) or w.exitcode not in (0, None):
            raise self._died(wid)

    def _died(self, wid: int) -> DataLoaderWorkerError:
        w = self.pool.workers[wid]
        return DataLoaderWorkerError(
            f"[DataLoader] worker {wid} (pid {w.pid}) exited unexpectedly with exit code {w.exitcode} "
            f"while {sum(1 for o in self._owner.values() if o == wid)} batch(es) were assigned to it; "
            "a crash in native code or the system's out-of-memory killer are the usual causes; "
            "try num_workers=0 to see the error"
        )

    def _check_workers(self, timeout: float) -> None:
        """Raise when a worker died, or nothing came within ``timeout`` (0: within
        ``OARLOCK_DATALOADER_STALL_TIMEOUT``, naming the worker that holds the batch awaited)."""
        for wid, w in enumerate(self.pool.workers):
            if not w.is_alive():
                raise self._died(wid)
        bound = timeout or env.number("OARLOCK_DATALOADER_STALL_TIMEOUT", DEFAULT_STALL_S)
        waited = time.monotonic() - self._last_progress
        if bound and waited > bound:
            setting = f"timeout={timeout:g}" if timeout else f"OARLOCK_DATALOADER_STALL_TIMEOUT={bound:g}"
            raise DataLoaderWorkerError(
                f"[DataLoader] no batch from the workers within {setting} s (waited {waited:.0f} s"
                f"{'' if timeout else ', DataLoader timeout=0'}); {self._stalled()}. Look for a slow or stuck "
                "dataset (num_workers=0 runs it here, for a debugger), or raise the bound"
            )

    def _stalled(self) -> str:
        """Which worker holds the batch awaited, and whether it still beats."""
        wid = self._owner.get(self._rcvd_idx)
        if wid is None:
            return "no request is outstanding"
        w = self.pool.workers[wid]
        last = self.pool.beats[wid]
        ago = time.time() - last if last else None
        if ago is not None and ago < 5 * _HEARTBEAT_S + 1:
            state = f"it is alive and its heartbeat is current ({ago:.1f} s ago): it is busy in the dataset or collate_fn"
        else:
            since = "never" if ago is None else f"{ago:.0f} s ago"
            state = f"its heartbeat stopped (last {since}): the process is stopped or stuck in native code"
        return f"worker {wid} (pid {w.pid}) has batch {self._rcvd_idx} and sent nothing; {state}"

    def _next_host_batch(self) -> tuple[bool, Any]:
        """(True, batch of HostTensor leaves) or (False, None) at the end of the epoch."""
        while self._rcvd_idx < self._send_idx:
            kind, payload, wid = self._receive()
            self._rcvd_idx += 1
            if kind == "error":
                raise _rebuild(payload)
            if kind == "end":
                if wid in self._active:
                    self._active.remove(wid)
                self._request()
                continue
            self._request()
            return True, payload
        return False, None

    # -- the iterator protocol ---------------------------------------------------------------
    def __iter__(self) -> MultiProcessIterator:
        return self

    def __next__(self) -> Any:
        if self._done:
            raise StopIteration
        try:
            if self._staged is None:
                self._staged = self._stage_next()
            current = self._staged
            if current is None:
                self._finish()
                raise StopIteration
            self._staged = self._stage_next()  # its copies overlap the user's work on `current`
        except StopIteration:
            raise
        except BaseException:
            self.close()
            raise
        batch, event = current
        if self.stager is not None:
            self.stager.ready(event)
        return batch

    def _stage_next(self) -> tuple[Any, Any] | None:
        ok, host = self._next_host_batch()
        if not ok:
            return None
        if self.stager is None:
            from .._src.tensor import from_numpy_copy
            from ._worker import HostTensor

            def plain(o: Any) -> Any:
                if isinstance(o, HostTensor):
                    return from_numpy_copy(o.array, _dev.get_device())
                if isinstance(o, dict):
                    return {k: plain(v) for k, v in o.items()}
                if isinstance(o, (list, tuple)):
                    out = [plain(v) for v in o]
                    return out if isinstance(o, list) else tuple(out)
                return o

            return plain(host), None
        return self.stager.submit(host)

    def _finish(self) -> None:
        self._done = True
        if self.stager is not None:
            self.stager.close()
        if not self.loader.persistent_workers:
            self.pool.shutdown()
            if self.loader._pool is self.pool:
                self.loader._pool = None

    def close(self) -> None:
        """Leave the epoch early: stop the workers, unless they are persistent (their answers
        to this epoch's requests are then recognised by the epoch number and dropped)."""
        if self._done:
            return
        self._done = True
        self._staged = None
        if self.stager is not None:
            self.stager.close()
        if not self.loader.persistent_workers:
            self.pool.shutdown()
            if self.loader._pool is self.pool:
                self.loader._pool = None

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001  (interpreter shutdown: the pool's finalizer runs at exit)
            pass


def _rebuild(f: WorkerFailure) -> BaseException:
    where = f"sample index {f.index}" if isinstance(f.index, int) else str(f.index)
    msg = (
        f"[DataLoader] worker {f.worker_id} failed on {where}: {f.type_name}: {f.message}\n"
        f"--- traceback in the worker ---\n{f.traceback.rstrip()}\n--- end of the worker's traceback; "
        "fix the dataset (num_workers=0 runs it in this process, for a debugger)"
    )
    if f.exc_type is not None and issubclass(f.exc_type, Exception):
        try:
            return f.exc_type(msg)
        except Exception:  # noqa: BLE001  (an exception class whose constructor takes other arguments)
            pass
    return DataLoaderWorkerError(msg)
