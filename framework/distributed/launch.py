"""``oarlock launch -n N script.py args...``: start N processes under ``mpiexec``.

The mpiexec of the ``mpich`` wheel (``pip install 'oarlock[dist]'``) is found next to the
running Python, else on ``PATH``, else at ``OARLOCK_MPIEXEC``. On one machine the processes
are started with ``-launcher fork`` (no ssh needed in containers); pass ``--hosts a,b`` or
``--mpiexec-arg`` to go further. ``-disable-auto-cleanup`` lets the surviving ranks report
which rank died (with a ``[distributed] ... missing rank(s)`` error) instead of being killed
silently.

Examples::

    oarlock launch -n 2 examples/train_tiny_llama.py --device cpu --data-parallel
    oarlock launch -n 4 --timeout 60 -m framework.distributed.selfcheck --out /tmp/res
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

from adapter_api import CommunicationError


def find_mpiexec() -> str:
    """Path of mpiexec: ``OARLOCK_MPIEXEC``, the one beside this Python, else ``PATH``."""
    env = os.environ.get("OARLOCK_MPIEXEC")
    if env:
        return env
    # the mpich wheel installs its scripts into the interpreter's bin folder
    for folder in (Path(sys.executable).parent, Path(sys.prefix) / "bin"):
        for name in ("mpiexec", "mpiexec.hydra"):
            cand = folder / name
            if cand.is_file() and os.access(cand, os.X_OK):
                return str(cand)
    found = shutil.which("mpiexec")
    if found:
        return found
    raise CommunicationError(
        "[launch] mpiexec was not found next to the Python interpreter nor on PATH; "
        "pip install 'oarlock[dist]' (mpich), or set OARLOCK_MPIEXEC=/path/to/mpiexec"
    )


def command(
    target: list[str], nprocs: int, *, hosts: str | None = None, extra: list[str] | None = None
) -> list[str]:
    """The full mpiexec command line that runs ``python target...`` on ``nprocs`` ranks."""
    if nprocs < 1:
        raise CommunicationError(f"[launch] -n must be at least 1, got {nprocs}")
    cmd = [find_mpiexec(), "-disable-auto-cleanup"]
    if hosts:
        cmd += ["-hosts", hosts]
    elif "-launcher" not in (extra or []):
        cmd += ["-launcher", "fork"]
    cmd += list(extra or [])
    cmd += ["-n", str(nprocs), sys.executable, *target]
    return cmd


def environment(timeout: float | None = None) -> dict[str, str]:
    """The environment the ranks get: this one, plus the collective timeout."""
    env = dict(os.environ)
    if timeout is not None:
        env["OARLOCK_COLLECTIVE_TIMEOUT"] = str(timeout)
    # Ranks share the machine's cores: one numpy thread each, unless the user said otherwise.
    env.setdefault("OMP_NUM_THREADS", "1")
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    return env


def run(
    target: list[str],
    nprocs: int,
    *,
    timeout: float | None = None,
    collective_timeout: float | None = None,
    capture: bool = True,
) -> subprocess.CompletedProcess[str]:
    """Run ``python target...`` on ``nprocs`` ranks and wait (what tests and conformance use).

    :param target: ``["script.py", args...]`` or ``["-m", "module", args...]``.
    :param timeout: seconds for the whole job (then it is killed and the output returned).
    :param collective_timeout: ``OARLOCK_COLLECTIVE_TIMEOUT`` for the ranks.
    """
    cmd = command(target, nprocs)
    proc = subprocess.Popen(
        cmd,
        env=environment(collective_timeout),
        text=True,
        stdout=subprocess.PIPE if capture else None,
        stderr=subprocess.STDOUT if capture else None,
    )
    try:
        out, _ = proc.communicate(timeout=timeout)
        return subprocess.CompletedProcess(cmd, proc.returncode, out, None)
    except subprocess.TimeoutExpired:
        # mpiexec takes every rank down with it on SIGINT; SIGKILL would orphan them
        proc.send_signal(signal.SIGINT)
        try:
            out, _ = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
        return subprocess.CompletedProcess(
            cmd, 124, (out or "") + f"\n[launch] killed after {timeout} s", None
        )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="oarlock launch",
        description="Start N processes of a Python script under mpiexec (from the mpich wheel).",
    )
    p.add_argument(
        "-n", "--nproc", "--nproc_per_node", dest="n", type=int, default=1, help="number of processes"
    )
    p.add_argument(
        "--hosts", default=None, help="comma-separated hosts (default: this machine, fork launcher)"
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=None,
        help="seconds a collective waits for a missing rank (OARLOCK_COLLECTIVE_TIMEOUT, default 300)",
    )
    p.add_argument(
        "--mpiexec-arg", action="append", default=[], help="an extra mpiexec argument (repeatable)"
    )
    p.add_argument("--dry-run", action="store_true", help="print the mpiexec command and exit")
    p.add_argument("target", nargs="*", help="script.py args... or -m module args...")
    argv = list(sys.argv[1:] if argv is None else argv)
    # everything from the script (or -m) on belongs to the script, as with python itself
    with_value = {"-n", "--nproc", "--nproc_per_node", "--hosts", "--timeout", "--mpiexec-arg"}
    i = 0
    while (
        i < len(argv) and argv[i] != "-m" and (argv[i].startswith("-") or (i and argv[i - 1] in with_value))
    ):
        i += 1
    a = p.parse_args(argv[:i])
    target = argv[i:]
    if not target or target == ["-m"]:
        p.error("give a script (oarlock launch -n 2 train.py args...) or -m module args...")
    cmd = command(target, a.n, hosts=a.hosts, extra=a.mpiexec_arg)
    if a.dry_run:
        print(" ".join(cmd))
        return 0
    return subprocess.call(cmd, env=environment(a.timeout))


if __name__ == "__main__":
    sys.exit(main())
