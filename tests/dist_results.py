"""The results of a job started with ``oarlock launch`` in the distributed tests: each rank
writes an ``.npz`` into an output folder; a rank that wrote nothing fails the test with the
job's exit code and the end of its output."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from framework.distributed import launch


def rank_files(proc: Any, out: str, n: int, name: str = "rank{r}.npz") -> list[Any]:
    """The ``n`` ranks' ``.npz`` files in ``out`` (``name`` formatted with the rank), loaded;
    a missing one fails with ``proc``'s exit code and output."""
    got = []
    for r in range(n):
        path = os.path.join(out, name.format(r=r))
        assert os.path.exists(path), (
            f"rank {r} wrote nothing (exit {proc.returncode}):\n{proc.stdout[-3000:]}"
        )
        got.append(np.load(path))
    return got


def run_job(script: Path, n: int, *args: str, prefix: str, name: str = "rank{r}.npz", **kw: Any) -> list[Any]:
    """Launch ``script out *args`` on ``n`` ranks (``kw``: ``launch.run``'s timeouts), then
    every rank's results; the job must have exited 0."""
    out = tempfile.mkdtemp(prefix=prefix)
    proc = launch.run([str(script), out, *args], n, **kw)
    got = rank_files(proc, out, n, name)
    assert proc.returncode == 0, proc.stdout[-3000:]
    return got
