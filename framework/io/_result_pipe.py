"""One result pipe per DataLoader worker.

A worker writes each pickled answer whole to its own pipe; the main process waits on all the
pipes at once (``multiprocessing.connection.wait``) and reads whichever is ready. Nothing is
shared between workers: with one shared result queue, every worker's write takes one
cross-process lock, so a worker killed or stopped while holding it (the out-of-memory killer,
a debugger, SIGSTOP) stalls the others' batches too. A pipe that closes or breaks mid-answer
names its worker (:class:`WorkerPipeClosed`).
"""

from __future__ import annotations

import queue
import threading
from multiprocessing.connection import wait
from typing import Any


class WorkerPipeClosed(Exception):
    """The result pipe of worker ``worker_id`` closed or broke (the worker exited or was
    killed, possibly in the middle of an answer)."""

    def __init__(self, worker_id: int, cause: BaseException) -> None:
        super().__init__(f"worker {worker_id}'s result pipe closed ({type(cause).__name__}: {cause})")
        self.worker_id = worker_id


class ResultWriter:
    """The worker's end: ``put(data)`` hands one pickled answer (bytes) to a sender thread
    that writes it whole to the pipe, so the worker goes on to its next batch while the main
    process has not read this one yet (the prefetch); :meth:`flush` waits until all are written."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self._queue: queue.SimpleQueue[bytes | None] | None = None
        self._thread: threading.Thread | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {"conn": self.conn}  # the thread is the receiving process's own

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["conn"])  # type: ignore[misc]

    def put(self, data: bytes) -> None:
        if self._thread is None:
            self._queue = queue.SimpleQueue()
            self._thread = threading.Thread(target=self._send, daemon=True, name="oarlock-result-pipe")
            self._thread.start()
        assert self._queue is not None
        self._queue.put(data)

    def _send(self) -> None:
        assert self._queue is not None
        while (data := self._queue.get()) is not None:
            try:
                self.conn.send_bytes(data)
            except OSError:
                return  # the main process closed its end: nobody reads what is left

    def flush(self) -> None:
        """Write what was put, then stop the sender (a worker calls it before it exits)."""
        if self._thread is not None and self._queue is not None:
            self._queue.put(None)
            self._thread.join()
            self._thread = None


class ResultPipes:
    """The main process's ends of ``n`` workers' result pipes.

    Example:
        >>> import multiprocessing as mp
        >>> pipes = ResultPipes(mp.get_context("spawn"), 2)
        >>> w = pipes.writer(1)
        >>> w.put(b"answer")
        >>> w.flush()
        >>> pipes.get(timeout=1.0)
        (1, b'answer')
    """

    def __init__(self, ctx: Any, n: int) -> None:
        ends = [ctx.Pipe(duplex=False) for _ in range(n)]
        self.readers = [r for r, _ in ends]
        self.writers = [ResultWriter(w) for _, w in ends]
        self._wid = {r: wid for wid, r in enumerate(self.readers)}
        self._ready: list[Any] = []
        self._closed: set[int] = set()

    def writer(self, worker_id: int) -> ResultWriter:
        return self.writers[worker_id]

    def close_writers(self) -> None:
        """Close the main process's copies of the writing ends (after the workers started),
        so a worker's exit reads as end-of-file on its pipe."""
        for w in self.writers:
            w.conn.close()

    def get(self, timeout: float) -> tuple[int, bytes] | None:
        """(worker id, one answer) from any worker, or None when nothing came in ``timeout``
        seconds. Workers are served in turn, so a fast one does not starve the others.
        Raises :class:`WorkerPipeClosed` naming the worker whose pipe closed."""
        if not self._ready:
            live = [r for wid, r in enumerate(self.readers) if wid not in self._closed]
            if not live:
                return None
            self._ready = sorted(wait(live, timeout), key=lambda r: self._wid[r])
            if not self._ready:
                return None
        r = self._ready.pop(0)
        wid = self._wid[r]
        try:
            return wid, r.recv_bytes()
        except (EOFError, OSError) as exc:
            self._closed.add(wid)
            raise WorkerPipeClosed(wid, exc) from exc

    def close(self) -> None:
        for c in [*self.readers, *(w.conn for w in self.writers)]:
            try:
                c.close()
            except OSError:
                pass
