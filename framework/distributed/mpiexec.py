"""Which ``mpiexec`` is there, which MPI it belongs to, and the command line in its dialect.

The one place that builds an mpiexec command line (``oarlock launch``, the tests, the
collectives tier and the benchmarks all come here). Process managers differ in their flags:

============  =====================================  ==========================================
dialect       recognised by ``mpiexec --version``      command line
============  =====================================  ==========================================
``hydra``     ``HYDRA build details`` (MPICH,          ``-disable-auto-cleanup -launcher fork``
              MVAPICH)                                 (or ``-hosts a,b``) ``-n N``
``intel``     ``Intel(R) MPI Library`` (its own        ``-n N`` (or ``-hosts a,b``)
              Hydra)
``openmpi``   ``mpiexec (Open MPI) 5.x`` /             ``--oversubscribe --bind-to none``
              ``mpirun (Open MPI) 4.x``                (``--allow-run-as-root`` as root;
                                                       ``--host a,b``) ``-n N``
============  =====================================  ==========================================

The mpiexec of the ``mpich`` wheel (``pip install 'oarlock[dist]'``) beside the running Python
wins over one on ``PATH`` (a cluster's Open MPI, say); ``OARLOCK_MPIEXEC`` wins over both. The
ranks are told to load the launcher's own MPI library (``MPI4PY_LIBMPI``) when it sits in the
launcher's prefix, so that mpi4py never pairs one MPI's process manager with another's library.

>>> from framework.distributed.mpiexec import parse_version, command_line
>>> parse_version("mpiexec (Open MPI) 5.0.3\\n\\nReport bugs to https://www.open-mpi.org/")
('openmpi', '5.0.3')
>>> command_line("openmpi", "/usr/bin/mpiexec", 2, ["python", "t.py"], as_root=False)
['/usr/bin/mpiexec', '--oversubscribe', '--bind-to', 'none', '-n', '2', 'python', 't.py']
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from adapter_api import CommunicationError

DIALECTS = ("hydra", "intel", "openmpi")
_NAMES = {"hydra": "MPICH (Hydra)", "intel": "Intel MPI", "openmpi": "Open MPI"}


@dataclass(frozen=True)
class Launcher:
    """An ``mpiexec`` and what it is: ``dialect`` in :data:`DIALECTS`, ``version`` as it says,
    ``libmpi`` the MPI library in its own prefix (``None`` when it is elsewhere)."""

    path: str
    dialect: str
    version: str
    libmpi: str | None

    @property
    def name(self) -> str:
        return f"{_NAMES[self.dialect]} {self.version}"


def find_mpiexec() -> str:
    """Path of mpiexec: ``OARLOCK_MPIEXEC``, the one beside this Python (the mpich wheel's),
    else the first on ``PATH``."""
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


def parse_version(text: str) -> tuple[str, str] | None:
    """``(dialect, version)`` from the output of ``mpiexec --version``; ``None`` when the text
    is none of the known process managers."""
    if "HYDRA build details" in text:
        m = re.search(r"Version:\s*(\S+)", text)
        return "hydra", m.group(1) if m else "?"
    m = re.search(r"Intel\(R\) MPI Library.*?Version\s+(\S+)", text)
    if m:
        return "intel", m.group(1).rstrip(",")
    m = re.search(r"\((?:Open MPI|OpenRTE)\)\s+(\S+)", text)
    if m:
        return "openmpi", m.group(1)
    return None


def command_line(
    dialect: str,
    path: str,
    nprocs: int,
    program: list[str],
    *,
    hosts: str | None = None,
    extra: list[str] | None = None,
    as_root: bool | None = None,
) -> list[str]:
    """The command line that starts ``program`` on ``nprocs`` ranks with the mpiexec at ``path``
    speaking ``dialect``. ``hosts``: comma-separated hosts (default: this machine only);
    ``extra``: the user's own mpiexec arguments, passed on as they are."""
    if nprocs < 1:
        raise CommunicationError(f"[launch] -n must be at least 1, got {nprocs}")
    extra = list(extra or [])
    if as_root is None:
        as_root = hasattr(os, "geteuid") and os.geteuid() == 0
    if dialect == "hydra":
        # NOTE: without -disable-auto-cleanup Hydra kills every rank the moment one fails,
        # before the survivors can say which collective they were in.
        cmd = [path, "-disable-auto-cleanup"]
        if hosts:
            cmd += ["-hosts", hosts]
        elif "-launcher" not in extra:
            cmd += ["-launcher", "fork"]  # no ssh needed in containers
    elif dialect == "intel":
        cmd = [path]
        if hosts:
            cmd += ["-hosts", hosts]
    elif dialect == "openmpi":
        # more ranks than cores is fine for tests and small jobs; binding would pin the
        # oversubscribed ranks to the same cores
        cmd = [path, "--oversubscribe", "--bind-to", "none"]
        if as_root and "--allow-run-as-root" not in extra:
            cmd.append("--allow-run-as-root")  # refused otherwise (containers run as root)
        if hosts:
            cmd += ["--host", hosts]
    else:
        raise CommunicationError(
            f"[launch] unknown mpiexec dialect {dialect!r}; known: {', '.join(DIALECTS)}"
        )
    return [*cmd, *extra, "-n", str(nprocs), *program]


def _own_libmpi(path: str, dialect: str) -> str | None:
    """The MPI library in the launcher's own prefix (``<prefix>/lib``), if it is there."""
    prefix = Path(os.path.realpath(path)).parent.parent
    names = ("libmpi.so.40", "libmpi.so") if dialect == "openmpi" else ("libmpi.so.12", "libmpi.so")
    for name in names:
        cand = prefix / "lib" / name
        if cand.exists():
            return str(cand)
    return None


@functools.lru_cache(maxsize=8)
def _identify(path: str, mtime: float) -> Launcher:
    try:
        res = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30)
        text = (res.stdout or "") + (res.stderr or "")
    except (OSError, subprocess.SubprocessError) as exc:
        raise CommunicationError(
            f"[launch] the mpiexec at {path} does not run ({exc}); pip install 'oarlock[dist]' "
            "(mpich), or set OARLOCK_MPIEXEC to a working mpiexec"
        ) from exc
    found = parse_version(text)
    if found is None:
        said = " | ".join(line.strip() for line in text.strip().splitlines()[:2]) or "nothing"
        raise CommunicationError(
            f"[launch] the mpiexec at {path} is none of {', '.join(_NAMES.values())}: "
            f"'{path} --version' said: {said[:200]}; pip install 'oarlock[dist]' (whose mpich "
            "mpiexec is used whenever it is installed), or set OARLOCK_MPIEXEC to an MPICH or "
            "Open MPI mpiexec"
        )
    dialect, version = found
    return Launcher(path, dialect, version, _own_libmpi(path, dialect))


def identify(path: str | None = None) -> Launcher:
    """The :class:`Launcher` at ``path`` (default :func:`find_mpiexec`), from its ``--version``
    (run once per path and modification time)."""
    path = path or find_mpiexec()
    try:
        mtime = os.stat(path).st_mtime
    except OSError as exc:
        raise CommunicationError(
            f"[launch] mpiexec {path} does not exist ({exc.strerror}); fix OARLOCK_MPIEXEC, or "
            "pip install 'oarlock[dist]' (mpich)"
        ) from exc
    return _identify(path, mtime)
