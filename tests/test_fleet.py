"""``fw.distributed.fleet`` and ``fw.distributed.sharding``: under ``oarlock launch -n 4``,
tensor parallelism (dp 2 x mp 2 with the Vocab/Column/Row layers) and ZeRO stages 1-3
(``group_sharded_parallel``, and sharding through fleet) train as one process does, and the
memory per rank falls as the stage rises; in this process, the topology, the strategy and
the signatures against real Paddle."""

from __future__ import annotations

import inspect
import os
from pathlib import Path

import numpy as np
import pytest

import framework as fw
from framework.distributed import fleet, launch, sharding
from framework.distributed.fleet import meta_parallel as mpu
from tests import fleet_job
from tests.conftest import needs_mpi
from tests.dist_results import rank_files

SCRIPTS = Path(__file__).parent / "dist_scripts"
LEVELS = ("dp", "os", "os_g", "p_g_os")


@needs_mpi
@pytest.mark.mpi
def test_tensor_parallel_and_sharding_equal_one_process_on_4_ranks() -> None:
    proc, root = fleet_job.run()  # the 4-rank job shared with tests/test_pipeline.py
    out = os.path.join(root, "fleet")
    for r, d in enumerate(rank_files(proc, out, 4)):
        # tensor parallel: the losses and the whole parameters of one process
        tp = [k for k in d.files if k.startswith("tp/") and ("/loss/" in k or "/param/" in k)]
        assert len(tp) == 3 + 7, tp  # 3 losses; emb, up (w, b), down (w, b), head (w, b)
        for k in tp:
            want = d[k.replace("/loss/", "/ref_loss/").replace("/param/", "/ref_param/")]
            np.testing.assert_allclose(d[k], want, rtol=1e-5, atol=1e-6, err_msg=f"rank {r} {k}")
        assert d["tp/local_up_weight_shape"].tolist() == [8, 16]  # Paddle's local shard
        # ParallelCrossEntropy on class shards: the per-row losses and the weight's gradient
        for k in ("loss", "grad"):
            np.testing.assert_allclose(d[f"tp/ce/{k}"], d[f"tp/ref_ce/{k}"], rtol=1e-5, atol=1e-6, err_msg=k)
        assert d["tp/ce/loss"][3] == 0.0  # the ignored label
        # ZeRO: every level trains as one process on the global batch (Adam: atol 2e-5)
        for tag in (*LEVELS, "fleet_sharding"):
            keys = [k for k in d.files if k.startswith(tag + "/") and ("/loss/" in k or "/param/" in k)]
            assert len(keys) == 3 + 6, (tag, keys)
            for k in keys:
                want = d["zero_ref/" + k.split("/", 1)[1]]
                np.testing.assert_allclose(d[k], want, rtol=1e-4, atol=2e-5, err_msg=f"rank {r} {k}")
        # the optimizer states: a quarter of the elements (+ padding) on each of 4 ranks
        states = [int(d[f"{t}/state_bytes"]) for t in LEVELS]
        assert states[1] == states[2] == states[3] <= 0.3 * states[0], states
        # memory after backward and at rest falls as the stage rises
        back = [int(d[f"{t}/mem_backward/2"]) for t in LEVELS]
        rest = [int(d[f"{t}/mem_rest/2"]) for t in LEVELS]
        assert back[0] > back[1] > back[2] >= back[3], back
        assert rest[0] > rest[1] >= rest[2] > rest[3], rest
    assert proc.returncode == 0, proc.stdout[-3000:]


def test_topology_against_real_paddle() -> None:
    ptp = pytest.importorskip("paddle.distributed.fleet.base.topology")
    for names, dims in [
        (["data", "pipe", "model"], [2, 2, 1]),
        (["data", "pipe", "sharding", "sep", "model"], [2, 1, 2, 1, 2]),
    ]:
        ours, theirs = fleet.CommunicateTopology(names, dims), ptp.CommunicateTopology(names, dims)
        for axis in names:
            assert ours.get_comm_list(axis) == theirs.get_comm_list(axis), axis
            assert ours.get_axis_list(axis, 0) == theirs.get_axis_list(axis, 0), axis
        for r in range(ours.world_size()):
            assert tuple(ours.get_coord(r)) == tuple(theirs.get_coord(r))


def test_strategy_defaults_against_real_paddle() -> None:
    pfleet = pytest.importorskip("paddle.distributed.fleet")
    theirs, ours = pfleet.DistributedStrategy(), fleet.DistributedStrategy()
    for key in ("dp_degree", "mp_degree", "pp_degree", "sharding_degree", "sep_degree"):
        assert ours.hybrid_configs[key] == theirs.hybrid_configs[key], key
    for key, value in theirs.pipeline_configs.items():
        assert ours.pipeline_configs[key] == value, key
    with pytest.raises(
        fw.OarlockError, match=r"\[DistributedStrategy\] hybrid_configs has no key 'tp_degree'"
    ):
        ours.hybrid_configs = {"tp_degree": 2}


@pytest.mark.parametrize(
    "ours, path",
    [
        (mpu.ColumnParallelLinear, "paddle.distributed.fleet.meta_parallel.ColumnParallelLinear"),
        (mpu.RowParallelLinear, "paddle.distributed.fleet.meta_parallel.RowParallelLinear"),
        (mpu.VocabParallelEmbedding, "paddle.distributed.fleet.meta_parallel.VocabParallelEmbedding"),
        (mpu.ParallelCrossEntropy, "paddle.distributed.fleet.meta_parallel.ParallelCrossEntropy"),
        (mpu.LayerDesc, "paddle.distributed.fleet.meta_parallel.LayerDesc"),
        (fleet.init, "paddle.distributed.fleet.init"),
        (fleet.distributed_model, "paddle.distributed.fleet.distributed_model"),
        (sharding.group_sharded_parallel, "paddle.distributed.sharding.group_sharded_parallel"),
    ],
)
def test_signatures_follow_paddle(ours, path) -> None:
    """Our parameters are Paddle's first parameters, in Paddle's order, with its defaults."""
    import importlib

    pytest.importorskip("paddle")
    mod, name = path.rsplit(".", 1)
    theirs = getattr(importlib.import_module(mod), name)
    pa = [p for p in inspect.signature(theirs).parameters.values() if p.name != "self"]
    oa = [p for p in inspect.signature(ours).parameters.values() if p.name != "self"]
    assert [p.name for p in oa] == [p.name for p in pa[: len(oa)]], (path, [p.name for p in pa])
    for o, p in zip(oa, pa):
        if p.default is not inspect.Parameter.empty and not isinstance(p.default, (list, dict)):
            assert o.default == p.default, (path, o.name, o.default, p.default)


def test_pipeline_layer_signature_follows_paddle() -> None:
    pp = pytest.importorskip("paddle.distributed.fleet.meta_parallel")
    names = list(inspect.signature(pp.PipelineLayer.__init__).parameters)[1:]
    ours = list(inspect.signature(mpu.PipelineLayer.__init__).parameters)[1:]
    assert ours == names[: len(ours)], names


def test_fleet_on_one_rank() -> None:
    strategy = fleet.DistributedStrategy()
    strategy.hybrid_configs = {"dp_degree": 1, "mp_degree": 1, "pp_degree": 1}
    fleet.init(is_collective=True, strategy=strategy)
    hcg = fleet.get_hybrid_communicate_group()
    assert (hcg.get_parallel_mode(), hcg.get_stage_id(), hcg.get_model_parallel_world_size()) == (0, 0, 1)
    lin = fw.nn.Linear(2, 2)
    assert fleet.distributed_model(lin) is lin
    with pytest.raises(fw.OarlockError, match=r"\[fleet\] only collective training is built"):
        fleet.init(is_collective=False)
    bad = fleet.DistributedStrategy()
    bad.hybrid_configs = {"dp_degree": 1, "mp_degree": 2}
    with pytest.raises(fw.OarlockError, match=r"make 2 ranks, the job has 1"):
        fleet.init(is_collective=True, strategy=bad)


def test_group_sharded_checks_its_arguments() -> None:
    lin = fw.nn.Linear(2, 2)
    opt = fw.optimizer.Adam(parameters=lin.parameters())
    with pytest.raises(fw.OarlockError, match=r"level must be 'os', 'os_g' or 'p_g_os', got 'g'"):
        sharding.group_sharded_parallel(lin, opt, level="g")
    clipped = fw.optimizer.Adam(parameters=lin.parameters(), grad_clip=fw.nn.ClipGradByNorm(1.0))
    with pytest.raises(fw.OarlockError, match=r"\[sharding\] grad_clip=ClipGradByNorm cannot be computed"):
        sharding.group_sharded_parallel(lin, clipped, level="os")


@needs_mpi
@pytest.mark.mpi
@pytest.mark.skipif(
    not os.environ.get("OARLOCK_NIGHTLY"),
    reason="8 ranks: OARLOCK_NIGHTLY=1 (dp x pp and dp x mp run by default)",
)
def test_hybrid_tiny_llama_on_8_ranks_follows_one_process() -> None:
    """examples/train_tiny_llama_hybrid.py: dp 2 x mp 2 x pp 2 against the one-process curve."""
    example = Path(__file__).parent.parent / "examples" / "train_tiny_llama_hybrid.py"
    proc = launch.run([str(example), "--dp", "2", "--mp", "2", "--pp", "2"], 8, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:]
    pairs = [
        (float(a), float(b))
        for a, b in (
            line.split("loss ")[1].split("  one process ")
            for line in proc.stdout.splitlines()
            if line.startswith("step ")
        )
    ]
    assert len(pairs) == 4, proc.stdout[-3000:]
    for got, want in pairs:
        assert abs(got - want) <= 1e-5 * abs(want) + 1e-6, pairs
    assert pairs[-1][0] < pairs[0][0]
