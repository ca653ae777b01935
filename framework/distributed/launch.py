"""``oarlock launch -n N script.py args...``: start N processes under ``mpiexec``, watched.

The mpiexec is found and spoken to by :mod:`framework.distributed.mpiexec` (MPICH's Hydra,
Intel MPI or Open MPI; the mpich wheel's whenever it is installed). Each rank runs under a
small supervisor (:mod:`framework.distributed.supervisor`) that records how it ended, and the
ranks record which collective they are in, so that when a rank dies the launcher prints which
rank, of what signal or status, and where the others were -- and the job always ends: once a
rank has failed, the others get their collective timeout (``--timeout``) plus a few seconds to
report and exit, then the launcher ends them. ``--time-limit`` bounds the whole job, and once a
rank has ended normally the others get ``--exit-wait`` seconds (default: the collective timeout)
to end too -- a rank spinning after its peers have gone would otherwise keep the job alive.

Output: every line a rank prints reaches the terminal whole (the supervisor forwards whole
lines), ``--rank-prefix`` starts each with ``[rank N]``, and ``--log_dir DIR`` also writes
each rank's output to ``DIR/workerlog.N``, as Paddle's launcher does.

Examples::

    oarlock launch -n 2 examples/train_tiny_llama.py --device cpu --data-parallel
    oarlock launch -n 4 --timeout 60 -m framework.distributed.selfcheck --out /tmp/res
    oarlock launch -n 2 --rank-prefix --log_dir logs train.py
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from adapter_api import CommunicationError

from .mpiexec import Launcher, find_mpiexec, identify
from .mpiexec import command_line as _command_line
from .supervisor import (
    DEFAULT_TIMEOUT,
    GRACE,
    JOB_ENV,
    LOG_ENV,
    PREFIX_ENV,
    describe_exit,
    is_exiting,
    rank_timeout,
    read_activity,
    read_exit,
    read_pid,
)

__all__ = ["JobWatch", "command", "environment", "find_mpiexec", "identify", "main", "read_hostfile", "run"]

SUPERVISOR = str(Path(__file__).with_name("supervisor.py"))


def command(
    target: list[str],
    nprocs: int,
    *,
    hosts: str | None = None,
    extra: list[str] | None = None,
    launcher: Launcher | None = None,
) -> list[str]:
    """The full mpiexec command line that runs ``python target...`` on ``nprocs`` ranks, each
    under the supervisor, in the dialect of the mpiexec found (or ``launcher``)."""
    lau = launcher or identify()
    program = [sys.executable, SUPERVISOR, sys.executable, *target]
    return _command_line(lau.dialect, lau.path, nprocs, program, hosts=hosts, extra=extra)


def environment(
    timeout: float | None = None,
    *,
    launcher: Launcher | None = None,
    job_dir: str | None = None,
    rank_prefix: bool = False,
    log_dir: str | None = None,
) -> dict[str, str]:
    """The environment the ranks get: this one, plus the collective timeout, the job folder,
    how to print (``[rank N]`` prefixes, a log folder) and the launcher's own MPI library for
    mpi4py (unless the user chose one)."""
    env = dict(os.environ)
    if rank_prefix:
        env[PREFIX_ENV] = "1"
    if log_dir is not None:
        env[LOG_ENV] = os.path.abspath(log_dir)
    if timeout is not None:
        env["OARLOCK_COLLECTIVE_TIMEOUT"] = str(timeout)
    # Ranks share the machine's cores: one numpy thread each, unless the user said otherwise.
    env.setdefault("OMP_NUM_THREADS", "1")
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    if launcher is not None and launcher.libmpi and "MPI4PY_LIBMPI" not in env:
        env["MPI4PY_LIBMPI"] = launcher.libmpi
    if job_dir is not None:
        env[JOB_ENV] = job_dir
    return env


class JobWatch:
    """Watches the ranks of one job through its folder: reports each rank that fails (with
    what the others were doing), and says when the job must be ended.

    :param say: where report lines go (stderr for ``oarlock launch``; the output for
        :func:`run`).
    :param timeout: the ranks' collective timeout (what a survivor may still wait).
    :param time_limit: seconds for the whole job, or ``None``.
    :param exit_wait: seconds the other ranks get to end once one has ended normally (default:
        the collective timeout plus a grace; ``inf``: no bound).
    """

    def __init__(
        self,
        folder: str,
        nprocs: int,
        say: Callable[[str], None],
        timeout: float | None = None,
        time_limit: float | None = None,
        exit_wait: float | None = None,
    ) -> None:
        self.folder, self.nprocs, self.say = folder, nprocs, say
        if timeout is None:
            timeout = float(os.environ.get("OARLOCK_COLLECTIVE_TIMEOUT", DEFAULT_TIMEOUT))
        self.timeout = timeout
        self.time_limit = time_limit
        self.exit_wait = timeout + GRACE if exit_wait is None else exit_wait
        self.first_done: tuple[int, float] | None = None  # (rank, when) of the first normal exit
        self.started = time.monotonic()
        self.ended: dict[int, dict] = {}
        self.failed: list[tuple[int, int]] = []  # (rank, code), in the order seen
        self.failed_at: float | None = None
        self.all_ended_at: float | None = None
        self.stopped_by_us: set[int] = set()
        self.reported: set[int] = set()
        self.reason: str | None = None  # why the launcher ended the job

    # -- reading the folder --------------------------------------------------------------
    def _doing(self, rank: int) -> str:
        return read_activity(self.folder, rank) or "before init_parallel_env (or on another machine)"

    def poll(self) -> bool:
        """Read the folder; report new failures. True when the launcher must end the job."""
        now = time.monotonic()
        for r in range(self.nprocs):
            if r in self.ended:
                continue
            ex = read_exit(self.folder, r)
            if ex is None:
                continue
            self.ended[r] = ex
            if ex["code"] != 0 and r not in self.stopped_by_us:
                self._report_failure(r, ex)
        if len(self.ended) == self.nprocs and self.all_ended_at is None:
            self.all_ended_at = now
        running = [r for r in range(self.nprocs) if r not in self.ended]
        if self.time_limit is not None and now - self.started > self.time_limit:
            self.reason = f"the job ran past its time limit of {self.time_limit:g} s"
            return True
        if self.failed_at is not None and running:
            waits = [
                GRACE
                if is_exiting(self.folder, r)
                else (rank_timeout(self.folder, r) or self.timeout) + GRACE
                for r in running
            ]
            if now - self.failed_at > max(waits):
                first, code = self.failed[0]
                self.reason = (
                    f"rank(s) {', '.join(map(str, running))} still running {now - self.failed_at:.1f} s "
                    f"after rank {first} {describe_exit(code)}"
                )
                return True
        if self.first_done is None:
            # a rank that has ended normally, or is ending (MPICH's MPI_Finalize waits for the others)
            done = [r for r in range(self.nprocs) if self.ended.get(r, {}).get("code", 1) == 0]
            done += [r for r in running if is_exiting(self.folder, r)]
            if done:
                self.first_done = (done[0], now)
        if self.failed_at is None and running and self.first_done is not None:
            rank, at = self.first_done
            if now - at > self.exit_wait:
                busy = [r for r in running if not is_exiting(self.folder, r)] or running
                self.reason = (
                    f"rank(s) {', '.join(map(str, busy))} still running {now - at:.1f} s after rank {rank} "
                    f"ended normally (--exit-wait {self.exit_wait:g} s)"
                )
                return True
        if self.all_ended_at is not None and now - self.all_ended_at > 2 * GRACE:
            self.reason = f"every rank has ended but mpiexec has not, {2 * GRACE:g} s later"
            return True
        return False

    def _report_failure(self, rank: int, ex: dict) -> None:
        code = int(ex["code"])
        doing = ex.get("doing") or "before init_parallel_env"
        self.reported.add(rank)
        self.failed.append((rank, code))
        if self.failed_at is None:
            self.failed_at = time.monotonic()
            others = ex.get("others") or {}
            lines = [
                f"rank {r}: {others.get(str(r)) or self._doing(r)}"
                for r in range(self.nprocs)
                if r != rank and r not in self.ended
            ]
            self.say(
                f"[launch] rank {rank} {describe_exit(code)}, {doing}"
                + ("; the other ranks were then:\n[launch]   " + "\n[launch]   ".join(lines) if lines else "")
            )
        else:
            self.say(f"[launch] rank {rank} then {describe_exit(code)}, {doing}")

    def finish(self) -> None:
        """After mpiexec ended: say what the ranks that left no exit status were last doing
        (mpiexec took them down), when the job failed."""
        self.poll()
        if not self.failed:
            return
        for r in range(self.nprocs):
            if r not in self.ended and r not in self.stopped_by_us:
                self.say(f"[launch] rank {r} was taken down by mpiexec, {self._doing(r)}")

    # -- ending the job ------------------------------------------------------------------
    def end(self, proc: subprocess.Popen) -> None:
        """Stop every rank still running (by pid on this machine), then mpiexec."""
        running = [r for r in range(self.nprocs) if r not in self.ended and read_exit(self.folder, r) is None]
        states = [f"rank {r}: {self._doing(r)}" for r in running]
        self.say(
            f"[launch] ending the job: {self.reason}"
            + (":\n[launch]   " + "\n[launch]   ".join(states) if states else "")
        )
        for sig, wait in ((signal.SIGTERM, 3.0), (signal.SIGKILL, 2.0)):
            left = [r for r in running if read_exit(self.folder, r) is None]
            if not left:
                break
            for r in left:
                pid = read_pid(self.folder, r)
                if pid:
                    self.stopped_by_us.add(r)
                    try:
                        os.kill(pid, sig)
                    except OSError:
                        pass
            end = time.monotonic() + wait
            while time.monotonic() < end and any(read_exit(self.folder, r) is None for r in left):
                time.sleep(0.05)
        _stop(proc)

    def returncode(self, mpiexec_rc: int) -> int:
        """The job's exit status: the first failed rank's (128 + signal), 124 when the launcher
        ended a job that had no failed rank, else mpiexec's."""
        if self.failed:
            code = self.failed[0][1]
            return code if code > 0 else 128 - code
        if self.reason is not None:
            return 124
        return mpiexec_rc


def read_hostfile(path: str) -> str:
    """A hostfile as the ``--hosts`` list ``h1:2,h2:2``: one host a line, as ``host``,
    ``host:N`` (MPICH's) or ``host slots=N`` (Open MPI's); ``#`` starts a comment.

    >>> import tempfile
    >>> f = tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False)
    >>> _ = f.write("node1 slots=2\n# spare\nnode2:4\nnode3\n"); f.close()
    >>> read_hostfile(f.name)
    'node1:2,node2:4,node3'
    """
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise CommunicationError(f"[launch] --hostfile {path}: cannot read it ({exc.strerror})") from exc
    hosts = []
    for num, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split()
        host, slots = parts[0], None
        if ":" in host:
            host, slots = host.rsplit(":", 1)
        for extra in parts[1:]:
            key, _, value = extra.partition("=")
            if key == "slots":
                slots = value
            elif key not in ("max_slots", "max-slots"):
                raise CommunicationError(
                    f"[launch] --hostfile {path}, line {num}: expected 'host', 'host:N' or 'host slots=N', "
                    f"got {raw.strip()!r}"
                )
        if slots is not None and not slots.isdigit():
            raise CommunicationError(
                f"[launch] --hostfile {path}, line {num}: the number of slots must be a whole number, got {slots!r}"
            )
        hosts.append(f"{host}:{slots}" if slots else host)
    if not hosts:
        raise CommunicationError(f"[launch] --hostfile {path} names no host")
    return ",".join(hosts)


def _stop(proc: subprocess.Popen, wait: float = GRACE) -> None:
    """End mpiexec: it gets ``wait`` seconds, then SIGINT (it takes the ranks down), then kill."""
    for action in (None, signal.SIGINT, signal.SIGTERM, signal.SIGKILL):
        if action is not None:
            try:
                proc.send_signal(action)
            except OSError:
                pass
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def _launch(
    target: list[str],
    nprocs: int,
    *,
    say: Callable[[str], None],
    hosts: str | None = None,
    extra: list[str] | None = None,
    timeout: float | None = None,
    time_limit: float | None = None,
    exit_wait: float | None = None,
    rank_prefix: bool = False,
    log_dir: str | None = None,
    stdout: object = None,
    cwd: str | None = None,
) -> int:
    """Start the job, watch it until it ends (or end it), return its exit status."""
    lau = identify()
    cmd = command(target, nprocs, hosts=hosts, extra=extra, launcher=lau)
    job_dir = tempfile.mkdtemp(prefix="oarlock-job-")
    try:
        proc = subprocess.Popen(
            cmd,
            env=environment(timeout, launcher=lau, job_dir=job_dir, rank_prefix=rank_prefix, log_dir=log_dir),
            text=True,
            stdout=stdout,
            stderr=subprocess.STDOUT if stdout is not None else None,
            # captured (run(): tests, conformance): nothing to type, so mpiexec forwards no stdin
            stdin=subprocess.DEVNULL if stdout is not None else None,
            cwd=cwd,
        )
        watch = JobWatch(job_dir, nprocs, say, timeout=timeout, time_limit=time_limit, exit_wait=exit_wait)
        try:
            while proc.poll() is None:
                if watch.poll():
                    watch.end(proc)
                    break
                time.sleep(0.1)
        except KeyboardInterrupt:
            watch.reason = "interrupted (Ctrl-C)"
            _stop(proc, wait=0)
        watch.finish()
        return watch.returncode(proc.wait())
    finally:
        shutil.rmtree(job_dir, ignore_errors=True)


def run(
    target: list[str],
    nprocs: int,
    *,
    timeout: float | None = None,
    collective_timeout: float | None = None,
    capture: bool = True,
    cwd: str | None = None,
    exit_wait: float | None = None,
    rank_prefix: bool = False,
    log_dir: str | None = None,
    hosts: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run ``python target...`` on ``nprocs`` ranks and wait (what tests and conformance use).

    :param target: ``["script.py", args...]`` or ``["-m", "module", args...]``.
    :param timeout: seconds for the whole job (then it is ended, the output returned and the
        status is 124).
    :param collective_timeout: ``OARLOCK_COLLECTIVE_TIMEOUT`` for the ranks.
    :param cwd: the ranks' working directory (``-m`` puts it first on their import path).
    :param exit_wait, rank_prefix, log_dir, hosts: as ``oarlock launch``'s ``--exit-wait``,
        ``--rank-prefix``, ``--log_dir`` and ``--hosts``.
    :return: the ranks' output (stdout and stderr) followed by the launcher's report lines.
    """
    notes: list[str] = []
    say = notes.append if capture else (lambda line: print(line, file=sys.stderr, flush=True))
    with tempfile.TemporaryFile("w+") as out:
        rc = _launch(
            target,
            nprocs,
            say=say,
            hosts=hosts,
            timeout=collective_timeout,
            time_limit=timeout,
            exit_wait=exit_wait,
            rank_prefix=rank_prefix,
            log_dir=log_dir,
            stdout=out if capture else None,
            cwd=cwd,
        )
        out.seek(0)
        text = out.read() if capture else ""
    if notes:
        text += ("\n" if text and not text.endswith("\n") else "") + "\n".join(notes) + "\n"
    return subprocess.CompletedProcess(command(target, nprocs, hosts=hosts), rc, text, None)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="oarlock launch",
        description="Start N processes of a Python script under mpiexec (MPICH's, Open MPI's or Intel's; "
        "the mpich wheel's whenever it is installed), and end the job when a rank fails.",
    )
    p.add_argument(
        "-n", "--nproc", "--nproc_per_node", dest="n", type=int, default=1, help="number of processes"
    )
    p.add_argument(
        "--hosts",
        default=None,
        help="comma-separated hosts, each host or host:N (N ranks there), e.g. h1:2,h2:2 "
        "(default: this machine, fork launcher)",
    )
    p.add_argument(
        "--hostfile",
        default=None,
        help="a file of hosts, one a line: host, host:N or host slots=N (MPICH's and Open MPI's forms)",
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=None,
        help="seconds a collective waits for a missing rank (OARLOCK_COLLECTIVE_TIMEOUT, default 300); "
        "after a rank fails, the others get this long (plus 5 s) before the launcher ends them",
    )
    p.add_argument(
        "--time-limit", type=float, default=None, help="seconds for the whole job (default: no limit)"
    )
    p.add_argument(
        "--exit-wait",
        type=float,
        default=None,
        help="seconds the other ranks get to end once one has ended normally, then the launcher ends "
        "them (default: the collective timeout plus 5 s; inf: no bound)",
    )
    p.add_argument("--rank-prefix", action="store_true", help="start each output line with [rank N]")
    p.add_argument(
        "--log_dir",
        "--log-dir",
        dest="log_dir",
        default=None,
        help="also write rank N's output to LOG_DIR/workerlog.N",
    )
    p.add_argument(
        "--mpiexec-arg", action="append", default=[], help="an extra mpiexec argument (repeatable)"
    )
    p.add_argument("--dry-run", action="store_true", help="print the mpiexec command and exit")
    p.add_argument("target", nargs="*", help="script.py args... or -m module args...")
    argv = list(sys.argv[1:] if argv is None else argv)
    # everything from the script (or -m) on belongs to the script, as with python itself
    with_value = {
        "-n",
        "--nproc",
        "--nproc_per_node",
        "--hosts",
        "--hostfile",
        "--timeout",
        "--time-limit",
        "--exit-wait",
        "--log_dir",
        "--log-dir",
        "--mpiexec-arg",
    }
    i = 0
    while (
        i < len(argv) and argv[i] != "-m" and (argv[i].startswith("-") or (i and argv[i - 1] in with_value))
    ):
        i += 1
    a = p.parse_args(argv[:i])
    target = argv[i:]
    if not target or target == ["-m"]:
        p.error("give a script (oarlock launch -n 2 train.py args...) or -m module args...")
    if a.hostfile:
        if a.hosts:
            p.error("give --hosts or --hostfile, not both")
        a.hosts = read_hostfile(a.hostfile)
    if a.dry_run:
        lau = identify()
        print(f"# {lau.name} at {lau.path}")
        print(" ".join(command(target, a.n, hosts=a.hosts, extra=a.mpiexec_arg, launcher=lau)))
        return 0
    return _launch(
        target,
        a.n,
        say=lambda line: print(line, file=sys.stderr, flush=True),
        hosts=a.hosts,
        extra=a.mpiexec_arg,
        timeout=a.timeout,
        time_limit=a.time_limit,
        exit_wait=a.exit_wait,
        rank_prefix=a.rank_prefix,
        log_dir=a.log_dir,
    )


if __name__ == "__main__":
    sys.exit(main())
