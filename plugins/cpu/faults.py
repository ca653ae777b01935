"""Process faults of an MPI job, for the host communicator: a peer's death, and leaving cleanly.

The survivors get SIGUSR1 when a process of the job dies (from ``oarlock launch``'s per-rank
supervisor, on any MPI; from MPICH's Hydra under ``-disable-auto-cleanup``): :func:`install`
records when, and a waiting collective then gives up after :data:`GRACE` seconds instead of its
full timeout (:func:`peer_failed`). After a fault (:func:`mark_broken`) the process skips
``MPI_Finalize`` at exit — it would wait for the dead rank — and exits with status 1. An
uncaught exception on one rank aborts the whole job (the others would wait for it).
"""

from __future__ import annotations

import atexit
import os
import signal
import sys
import threading
import time
from typing import Any

#: seconds still waited after the launcher reports a dead process
GRACE = 2.0
_STATE: dict[str, Any] = {"peer_failed": None, "broken": False}


def peer_failed() -> float | None:
    """``time.monotonic()`` when a peer's death was reported, or None."""
    return _STATE["peer_failed"]


def broken() -> bool:
    """Whether a fault made this process group unusable."""
    return _STATE["broken"]


def mark_broken() -> None:
    """This process group is unusable: leave without ``MPI_Finalize`` at exit."""
    if not _STATE["broken"]:
        _STATE["broken"] = True
        atexit.register(_exit_after_fault)


def install(world_size: int) -> None:
    """Listen for SIGUSR1 (a peer died) and abort the job on an uncaught exception; idempotent."""
    if threading.current_thread() is threading.main_thread():
        try:
            if signal.getsignal(signal.SIGUSR1) in (signal.SIG_DFL, None):
                signal.signal(signal.SIGUSR1, _on_peer_failure)
                atexit.register(_ignore_peer_failure_at_exit)
        except (ValueError, OSError):
            pass
    if world_size > 1 and sys.excepthook is sys.__excepthook__:
        sys.excepthook = _abort_on_uncaught


def _on_peer_failure(signum: int, frame: Any) -> None:
    _STATE["peer_failed"] = time.monotonic()


def _ignore_peer_failure_at_exit() -> None:
    # NOTE: Python restores SIG_DFL for its handlers before mpi4py's MPI_Finalize runs; a
    # SIGUSR1 from MPICH while finalizing (a peer that left first) would then kill this rank.
    try:
        signal.signal(signal.SIGUSR1, signal.SIG_IGN)
    except (ValueError, OSError):
        pass


def _exit_after_fault() -> None:
    if _STATE["broken"]:
        # NOTE: MPI_Finalize would wait for the dead rank forever: leave without it.
        for f in (sys.stdout, sys.stderr):
            try:
                f.flush()
            except Exception:  # noqa: BLE001
                pass
        os._exit(1)


def _abort_on_uncaught(kind: Any, value: Any, tb: Any) -> None:
    """An uncaught exception on one rank ends the whole job (the others would wait for it)."""
    sys.__excepthook__(kind, value, tb)
    try:
        from mpi4py import MPI

        rank = MPI.COMM_WORLD.Get_rank()
        print(
            f"[distributed] rank {rank} raised {kind.__name__}; aborting every rank of the job",
            file=sys.stderr,
        )
        sys.stderr.flush()
        sys.stdout.flush()
        MPI.COMM_WORLD.Abort(1)
    except Exception:  # noqa: BLE001
        os._exit(1)
