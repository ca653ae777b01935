"""``dist.spawn(func, args, nprocs)``: run a function on N processes (Paddle's ``spawn``).

The processes are an ``oarlock launch`` job (mpiexec, each rank watched by the supervisor), so
a failing rank is named and the job always ends, as with the command line. ``func`` travels by
reference, as with :mod:`multiprocessing`'s spawn: a function of an importable module, or of
the script being run (``__main__``), which each rank then loads under ``__mp_main__`` -- put
the call to ``spawn`` under ``if __name__ == "__main__":``.
"""

from __future__ import annotations

import os
import pickle
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from adapter_api import CommunicationError, OpArgumentError

from . import launch

__all__ = ["SpawnContext", "spawn"]


class SpawnContext:
    """The job :func:`spawn` started: ``join()`` waits for it; then ``returncode`` is its exit
    status and ``return_values`` each rank's return value (rank order).

    >>> import framework.distributed as dist
    >>> ctx = dist.SpawnContext(2)
    >>> ctx.returncode is None
    True
    """

    def __init__(self, nprocs: int) -> None:
        self.nprocs = nprocs
        self.returncode: int | None = None
        self.return_values: list[Any] = []
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the job (``timeout`` seconds at most); True once it has ended. Raises
        :class:`CommunicationError` when a rank failed."""
        if self._thread is not None:
            self._thread.join(timeout)
            if self._thread.is_alive():
                return False
        if self._error is not None:
            raise self._error
        return True


def spawn(
    func: Callable[..., Any],
    args: tuple = (),
    nprocs: int = -1,
    join: bool = True,
    daemon: bool = False,
    **options: Any,
) -> SpawnContext:
    """Run ``func(*args)`` on ``nprocs`` processes that form one distributed world (each calls
    ``dist.init_parallel_env()`` as usual); returns a :class:`SpawnContext`.

    :param nprocs: how many processes; ``-1``: one per core this process may run on.
    :param join: wait for the job (else call ``join()`` on the context).
    :param options: ``timeout`` (collective timeout, s), ``time_limit`` (s for the whole job).

    >>> import framework.distributed as dist
    >>> dist.spawn(print, args=("hello",), nprocs=0)
    Traceback (most recent call last):
    ...
    adapter_api.errors.OpArgumentError: [spawn] nprocs must be -1 (one per core) or at least 1, got 0
    """
    if nprocs == -1:
        nprocs = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    if not isinstance(nprocs, int) or nprocs < 1:
        raise OpArgumentError(f"[spawn] nprocs must be -1 (one per core) or at least 1, got {nprocs!r}")
    unknown = set(options) - {"timeout", "time_limit"}
    if unknown:
        raise OpArgumentError(f"[spawn] unknown option(s) {sorted(unknown)}; known: timeout, time_limit")
    module, name = getattr(func, "__module__", None), getattr(func, "__qualname__", None)
    if not module or not name or "<" in name:
        raise OpArgumentError(
            f"[spawn] func must be a function defined at the top level of a module or script (it "
            f"travels by name to the other processes), got {func!r}"
        )
    main = None
    if module == "__main__":
        main = getattr(sys.modules["__main__"], "__file__", None)
        if main is None:
            raise OpArgumentError(
                f"[spawn] {name} is defined in an interactive session; define it in a module or a script file"
            )
    folder = tempfile.mkdtemp(prefix="oarlock-spawn-")
    job = Path(folder, "job.pkl")
    try:
        job.write_bytes(pickle.dumps({"module": module, "name": name, "main": main, "args": tuple(args)}))
    except (pickle.PicklingError, TypeError, AttributeError) as exc:
        raise OpArgumentError(f"[spawn] args cannot be sent to the other processes: {exc}") from exc
    ctx = SpawnContext(nprocs)

    def run() -> None:
        proc = launch.run(
            ["-m", "framework.distributed._spawn_rank", folder],
            nprocs,
            capture=False,
            timeout=options.get("time_limit"),
            collective_timeout=options.get("timeout"),
        )
        ctx.returncode = proc.returncode
        if proc.returncode != 0:
            ctx._error = CommunicationError(
                f"[spawn] {name} on {nprocs} processes: the job exited with status {proc.returncode} "
                "(the ranks' tracebacks and the launcher's report are above)"
            )
            return
        ctx.return_values = [pickle.loads(Path(folder, f"rank{r}.out").read_bytes()) for r in range(nprocs)]

    if join:
        run()
        ctx.join()
    else:
        ctx._thread = threading.Thread(target=run, daemon=daemon)
        ctx._thread.start()
    return ctx
