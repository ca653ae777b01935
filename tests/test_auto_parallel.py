"""framework.distributed auto-parallel: ProcessMesh, placements, every reshard transition
(2 and 4 ranks, against numpy, forward and backward), sharding rules, shard_layer and a
tensor-parallel tiny Llama under mpiexec; annotation errors and a mesh of one in this process."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import numpy as np
import pytest

import framework as fw
import framework.distributed as dist
from framework.distributed import launch
from tests.conftest import needs_mpi

SCRIPTS = Path(__file__).parent / "dist_scripts"


def _launch(script: str, n: int, *args: str) -> tuple[object, str]:
    out = tempfile.mkdtemp(prefix="oarlock-ap-")
    proc = launch.run([str(SCRIPTS / script), *args, out], n, timeout=240, collective_timeout=60)
    return proc, out


def _records(proc: object, out: str, n: int) -> list[tuple[int, dict]]:
    records = []
    for r in range(n):
        path = os.path.join(out, f"rank{r}.json")
        assert os.path.exists(path), f"rank {r} wrote no result (exit {proc.returncode}):\n{proc.stdout[-3000:]}"
        records += [(r, rec) for rec in json.load(open(path))]
    return records


# -- reshard transitions under mpiexec -------------------------------------------------------
@needs_mpi
@pytest.mark.mpi
@pytest.mark.parametrize("nranks", [2, 4])
def test_every_reshard_transition_against_numpy(nranks: int) -> None:
    proc, out = _launch("ap_reshard.py", nranks)
    records = _records(proc, out, nranks)
    failed = [f"rank {r}: {rec['name']}: {rec.get('detail', '')}" for r, rec in records if not rec["ok"]]
    assert not failed, "\n".join(failed[:10])
    names = {rec["name"] for _, rec in records}
    for must in ("1d/8x{}/S0->R", "1d/8x{}/P->R", "1d/8x{}/P->S1", "1d/8x{}/R->S0", "1d/8x{}/R->P",
                 "1d/8x{}/S0->S1", "1d/5x3/S1->S0", "1d/5x3/Pavg->S0", "log"):
        assert must.format(4 * nranks) in names, f"check {must} did not run"
    if nranks == 4:
        assert "mesh_move/send_recv" in names and "2d/S0.S1->S1.S0" in names
    assert proc.returncode == 0, proc.stdout[-3000:]


# -- sharding rules: ops on distributed tensors under mpiexec ---------------------------------
@needs_mpi
@pytest.mark.mpi
@pytest.mark.parametrize("nranks", [2, 4])
def test_ops_follow_their_rules_against_one_process(nranks: int) -> None:
    proc, out = _launch("ap_ops.py", nranks)
    records = _records(proc, out, nranks)
    failed = [f"rank {r}: {rec['name']}: {rec.get('detail', '')}" for r, rec in records if not rec["ok"]]
    assert not failed, "\n".join(failed[:10])
    by_name = {rec["name"]: rec for r, rec in records if r == 0}
    for must in ("matmul/column", "matmul/row+bias", "elementwise/broadcast", "sum/sharded_axis", "softmax/sharded_axis",
                 "rms_norm", "layer_norm", "embedding/column", "reshape/split", "transpose", "cross_entropy/batch",
                 "error/not_divisible", "error/missing_dim", "error/mesh_mismatch"):
        assert must in by_name, f"case {must} did not run"
    # the row-parallel output is reduced before the bias is added, and the reshard says why
    assert "[P(sum)]->[R] all_reduce(sum) (add)" in by_name["matmul/row+bias"]["reshards"]
    # column parallel needs no communication in the op (only numpy() and the loss gather)
    assert [r for r in by_name["matmul/column"]["reshards"] if r.endswith("(matmul)")] == []
    if nranks == 4:
        assert "2d/dp_x_tp_mlp" in by_name
    assert proc.returncode == 0, proc.stdout[-3000:]
