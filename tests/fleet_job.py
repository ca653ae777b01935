"""The 4-rank job of tests/test_pipeline.py and tests/test_fleet.py, started once per test
session (tests/dist_scripts/fleet_job.py: the pipeline checks, then tensor parallel and ZeRO)."""

from __future__ import annotations

import functools
import tempfile
from pathlib import Path
from typing import Any

from framework.distributed import launch

SCRIPTS = Path(__file__).parent / "dist_scripts"


@functools.cache
def run(device: str = "cpu", n: int = 4) -> tuple[Any, str]:
    """``(completed process, output folder)`` of the job on ``n`` ranks."""
    out = tempfile.mkdtemp(prefix="oarlock-fleet-")
    proc = launch.run([str(SCRIPTS / "fleet_job.py"), device, out], n, timeout=400)
    return proc, out
