"""``DistTensor.numpy()``: as Paddle's, local where the tensor is replicated on this rank, a
collective gather otherwise; called on one rank only it raises at once (naming the call, the
peer and what it does instead) rather than waiting for the collective timeout."""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path

import numpy as np
import pytest

import framework.distributed as dist
from framework.distributed import launch
from tests.conftest import needs_mpi

SCRIPT = Path(__file__).parent / "dist_scripts" / "numpy_one_rank.py"


@needs_mpi
@pytest.mark.mpi
def test_numpy_on_one_rank_is_local_when_replicated_and_fails_fast_when_sharded() -> None:
    out = tempfile.mkdtemp(prefix="oarlock-numpy-")
    # the collective timeout stays long (100 s): the errors come from the peers' records (a
    # timeout would read "did not reach it in 100 s")
    proc = launch.run([str(SCRIPT), out], 2, timeout=120, collective_timeout=100)
    assert proc.returncode == 0, proc.stdout[-3000:]
    got = json.loads((Path(out) / "numpy.json").read_text())
    whole = np.arange(12, dtype="float32").reshape(4, 3)
    np.testing.assert_array_equal(got["replicated"]["value"], whole)
    np.testing.assert_array_equal(got["both"]["value"], whole * 2)
    stuck, exited = got["stuck"]["error"], got["exited"]["error"]
    head = (
        r"\[distributed\] numpy\(\) of tensor 'w' of shape \[4, 3\] \(\[S\(0\)\] over .*\) on rank 0 is a "
        r"collective of ranks \[0, 1\], but rank 1 has not called it "
    )
    assert re.match(head + r"\(it waits in all_reduce\(sum\) of 1 float32", stuck), stuck
    assert re.match(head + r"\(its script has finished \(it is exiting\)\)", exited), exited
    assert "x._local_value().numpy()" in stuck


def test_numpy_in_one_process_reads_the_whole_tensor() -> None:
    mesh = dist.ProcessMesh([0], dim_names=["dp"])
    x = np.arange(6, dtype="float32").reshape(3, 2)
    for p in (dist.Shard(0), dist.Replicate(), dist.Shard(1)):
        np.testing.assert_array_equal(dist.shard_tensor(x, mesh, [p]).numpy(), x)
