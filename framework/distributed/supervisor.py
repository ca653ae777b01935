"""One rank of an ``oarlock launch`` job, watched: how it ended, and what the others were doing.

``mpiexec`` starts ``python supervisor.py python script.py args...`` on every rank. The
supervisor starts the rank as its child (same environment and inherited descriptors, so
``MPI_Init`` finds the process manager as usual), forwards signals to it, and records in the
job folder (``OARLOCK_JOB_DIR``, made by the launcher) the rank's pid and, when it ends, its
exit status or the signal that killed it. Ranks record what they are doing in the same folder
(:class:`Activity`: the collective they are in, written by :mod:`framework.distributed`), so
the launcher can say, when a rank dies, which rank, of what signal, and where the others were.

When its rank failed, the supervisor tells the other ranks on this machine at once (SIGUSR1,
as MPICH's process manager does: their collective gives up after a short grace instead of the
full timeout), and holds its own exit back until they have ended or their timeout has passed,
so that the process manager does not take them down before they have reported.

Output: the rank's stdout and stderr come to the supervisor through pipes and leave it a whole
line at a time (one ``write`` each), so that the process manager, which forwards what each
rank writes as it comes, never splices two ranks' lines into one. ``OARLOCK_RANK_PREFIX=1``
starts each line with ``[rank N] ``; ``OARLOCK_LOG_DIR`` also writes every line to
``workerlog.N`` there (Paddle's launcher's name), stdout and stderr together.

This file runs by path and imports nothing but the standard library.
"""

from __future__ import annotations

import json
import mmap
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

JOB_ENV = "OARLOCK_JOB_DIR"
PREFIX_ENV = "OARLOCK_RANK_PREFIX"
LOG_ENV = "OARLOCK_LOG_DIR"
GRACE = 5.0  # seconds a rank gets to finish reporting or exiting after a fault
DEFAULT_TIMEOUT = 300.0  # OARLOCK_COLLECTIVE_TIMEOUT's default
_RANK_VARS = ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "MPI_RANK")
_FORWARDED = ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2")
_STOPPING = ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT")


def rank_from_env(env: dict[str, str] | None = None) -> int | None:
    """This process's rank as the process manager announced it (Hydra, Open MPI, PMIx)."""
    env = os.environ if env is None else env
    for var in _RANK_VARS:
        if env.get(var, "").isdigit():
            return int(env[var])
    return None


def signal_name(num: int) -> str:
    try:
        return signal.Signals(num).name
    except ValueError:
        return f"signal {num}"


def describe_exit(code: int) -> str:
    """``"was killed by signal 9 (SIGKILL)"`` or ``"exited with status 1"``, from a
    :class:`subprocess.Popen` return code (negative for a signal)."""
    if code < 0:
        return f"was killed by signal {-code} ({signal_name(-code)})"
    return f"exited with status {code}"


# -- what each rank is doing ---------------------------------------------------------------
class Activity:
    """The rank's own record of what it is doing, in ``rank<r>.now`` (a few hundred bytes,
    memory-mapped: one write per collective, read by the supervisors and the launcher).

    >>> import tempfile
    >>> d = tempfile.mkdtemp()
    >>> a = Activity(d, 0, timeout=60)
    >>> a.enter("all_reduce(sum) of 16 float32 on cpu")
    >>> read_activity(d, 0).startswith("in all_reduce(sum) of 16 float32 on cpu (collective #1")
    True
    """

    SIZE = 1024

    def __init__(self, folder: str, rank: int, timeout: float) -> None:
        path = Path(folder) / f"rank{rank}.now"
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "wb") as f:
            f.write(b"\0" * self.SIZE)
        self._file = open(path, "r+b")  # noqa: SIM115 — lives as long as the process
        self._mm = mmap.mmap(self._file.fileno(), self.SIZE)
        self.timeout = float(timeout)
        self.seq = 0
        self.state("running", "after init_parallel_env")

    def _write(self, kind: str, what: str) -> None:
        rec = f"{kind} {self.seq} {time.time():.3f} {self.timeout:g} {what}".encode()[: self.SIZE - 1]
        self._mm[: len(rec) + 1] = rec + b"\0"

    def enter(self, what: str) -> None:
        """The rank now waits in collective ``what``."""
        self.seq += 1
        self._write("I", what)

    def leave(self) -> None:
        """The collective entered last has finished."""
        self._mm[0:1] = b"A"

    def fail(self, error: str) -> None:
        """The collective entered last raised ``error``."""
        rec = _read_record_bytes(bytes(self._mm))
        what = rec[4] if rec else "a collective"
        self._write("F", f"{what} raised {error}")

    def state(self, kind: str, what: str) -> None:
        """Anything else: ``("exiting", "in MPI_Finalize")``."""
        self._write("S", f"{kind} {what}")


def read_activity(folder: str, rank: int, now: float | None = None) -> str | None:
    """What rank ``rank`` last said it was doing, in words; ``None`` when it said nothing
    (it has not called ``init_parallel_env``)."""
    rec = _read_record(folder, rank)
    if rec is None:
        return None
    kind, seq, t, _timeout, what = rec
    since = (time.time() if now is None else now) - t
    if kind == "I":
        return f"in {what} (collective #{seq}, for {since:.1f} s)"
    if kind == "A":
        return f"between collectives (the last, #{seq}, was {what})"
    if kind == "F":
        return f"after collective #{seq}, {what}"
    return what


def rank_timeout(folder: str, rank: int) -> float | None:
    """The collective timeout rank ``rank`` runs with, as it recorded it."""
    rec = _read_record(folder, rank)
    return rec[3] if rec else None


def is_exiting(folder: str, rank: int) -> bool:
    rec = _read_record(folder, rank)
    return rec is not None and rec[0] == "S" and rec[4].startswith("exiting")


def _read_record(folder: str, rank: int) -> tuple[str, int, float, float, str] | None:
    try:
        raw = (Path(folder) / f"rank{rank}.now").read_bytes()
    except OSError:
        return None
    return _read_record_bytes(raw)


def _read_record_bytes(raw: bytes) -> tuple[str, int, float, float, str] | None:
    text = raw.split(b"\0", 1)[0].decode(errors="replace")
    parts = text.split(" ", 4)
    if len(parts) < 5 or parts[0] not in ("I", "A", "F", "S"):
        return None
    try:
        return parts[0], int(parts[1]), float(parts[2]), float(parts[3]), parts[4]
    except ValueError:
        return None


# -- how each rank ended -------------------------------------------------------------------
def read_pid(folder: str, rank: int) -> int | None:
    try:
        return int((Path(folder) / f"rank{rank}.pid").read_text())
    except (OSError, ValueError):
        return None


def read_exit(folder: str, rank: int) -> dict | None:
    """``{"code": ..., "at": ..., "doing": ..., "others": {rank: doing}}`` once rank ``rank``
    has ended (``code`` negative for a signal), else ``None``."""
    try:
        return json.loads((Path(folder) / f"rank{rank}.exit").read_text())
    except (OSError, ValueError):
        return None


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def _local_ranks(folder: str) -> list[int]:
    ranks = []
    for p in Path(folder).glob("rank*.pid"):
        num = p.name[4:-4]
        if num.isdigit():
            ranks.append(int(num))
    return sorted(ranks)


def _die_with_parent() -> None:
    """In the child: SIGKILL when the supervisor dies, so that no rank is orphaned."""
    try:
        import ctypes

        ctypes.CDLL(None).prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG
    except Exception:  # noqa: BLE001 — not Linux: the launcher still kills by pid
        pass


class _Lines:
    """Forwards a child's output a whole line at a time (see the module's docstring)."""

    def __init__(self, rank: int | None) -> None:
        self.prefix = (
            f"[rank {rank}] ".encode() if os.environ.get(PREFIX_ENV) == "1" and rank is not None else b""
        )
        self.log = None
        folder = os.environ.get(LOG_ENV)
        if folder and rank is not None:
            Path(folder).mkdir(parents=True, exist_ok=True)
            self.log = open(Path(folder) / f"workerlog.{rank}", "ab", buffering=0)  # noqa: SIM115
        self.lock = threading.Lock()
        self.threads: list[threading.Thread] = []

    def start(self, pipe: object, fd: int) -> None:
        t = threading.Thread(target=self._pump, args=(pipe, fd), daemon=True)
        t.start()
        self.threads.append(t)

    def _pump(self, pipe: object, fd: int) -> None:
        for line in iter(pipe.readline, b""):  # type: ignore[attr-defined]
            if not line.endswith(b"\n"):
                line += b"\n"  # the rank's last words had no newline
            out = self.prefix + line
            _write_all(fd, out)
            if self.log is not None:
                with self.lock:
                    self.log.write(line)
        pipe.close()  # type: ignore[attr-defined]

    def join(self) -> None:
        for t in self.threads:
            t.join(timeout=10)
        if self.log is not None:
            self.log.close()


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        try:
            view = view[os.write(fd, view) :]
        except BlockingIOError:
            time.sleep(0.01)
        except OSError:
            return  # the process manager has gone: nobody to tell


def supervise(argv: list[str]) -> int:
    """Run ``argv`` as this rank; return the exit status to give the process manager."""
    folder = os.environ.get(JOB_ENV)
    rank = rank_from_env()
    stop = {"asked": False}
    lines = _Lines(rank) if folder else None
    pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE} if lines else {}
    # NOTE: a rank's Python would buffer a pipe in blocks; unbuffered, every print reaches the
    # supervisor as it happens and leaves it as whole lines
    env = {**os.environ, "PYTHONUNBUFFERED": "1"} if lines else None
    child = subprocess.Popen(argv, close_fds=False, preexec_fn=_die_with_parent, env=env, **pipes)
    if lines:
        lines.start(child.stdout, 1)
        lines.start(child.stderr, 2)

    def forward(signum: int, frame: object) -> None:
        if signal_name(signum) in _STOPPING:
            stop["asked"] = True
        elif folder and rank is not None and _read_record(folder, rank) is None:
            return  # SIGUSR1/2 would kill a rank that has not installed its handler yet
        try:
            child.send_signal(signum)
        except OSError:
            pass

    for name in _FORWARDED:
        signal.signal(getattr(signal, name), forward)
    if folder and rank is not None:
        Path(folder).mkdir(parents=True, exist_ok=True)
        _write_atomic(Path(folder) / f"rank{rank}.pid", str(child.pid))
    code = child.wait()
    if lines:
        lines.join()
    # NOTE: Hydra sends SIGUSR1 to the rest of the job when a process of it ends; with no rank
    # left to forward it to, it must not kill the supervisor (nor Python's shutdown, which
    # resets handlers to the default).
    for name in ("SIGUSR1", "SIGUSR2"):
        signal.signal(getattr(signal, name), signal.SIG_IGN)
    if not (folder and rank is not None):
        return code if code >= 0 else 128 - code
    others = [r for r in _local_ranks(folder) if r != rank and read_exit(folder, r) is None]
    record = {
        "code": code,
        "at": time.time(),
        "doing": read_activity(folder, rank),
        "others": {str(r): read_activity(folder, r) for r in others},
    }
    _write_atomic(Path(folder) / f"rank{rank}.exit", json.dumps(record))
    if code != 0:
        # NOTE: only ranks that have recorded an activity have the communicator's SIGUSR1
        # handler installed; SIGUSR1 would kill one that has not.
        for r in others:
            pid = read_pid(folder, r)
            if pid and _read_record(folder, r) is not None:
                try:
                    os.kill(pid, signal.SIGUSR1)
                except OSError:
                    pass
        hold = max([rank_timeout(folder, r) or _env_timeout() for r in others] or [0.0]) + 2 * GRACE
        end = time.monotonic() + hold
        while not stop["asked"] and time.monotonic() < end:
            if all(read_exit(folder, r) is not None for r in others):
                break
            time.sleep(0.05)
    return code if code >= 0 else 128 - code


def _env_timeout() -> float:
    try:
        return float(os.environ.get("OARLOCK_COLLECTIVE_TIMEOUT", DEFAULT_TIMEOUT))
    except ValueError:
        return DEFAULT_TIMEOUT


if __name__ == "__main__":
    status = supervise(sys.argv[1:])
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)
