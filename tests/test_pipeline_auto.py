"""Pipeline parallelism from placements (``dist.to_static`` with ``dist.Strategy().pipeline``):
under ``oarlock launch -n 4`` the tiny Llama of examples/train_tiny_llama_pipeline.py on
pp 2 x mp 2 (1F1B) and pp 2 x dp 2 (FThenB, recomputation) follows the one-process loss curve;
pp 2 x dp 2 x mp 2 on 8 ranks nightly; in this process, one stage with micro-batches, the
stage cut and the argument checks."""

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
from framework.distributed.fleet.meta_parallel import mesh_pipeline
from tests.conftest import needs_mpi

ROOT = Path(__file__).parent.parent
TOL = {"rtol": 1e-5, "atol": 1e-5}  # float32: the micro-batches sum their gradients in another order


@needs_mpi
@pytest.mark.mpi
def test_pp_x_mp_and_pp_x_dp_follow_one_process_on_4_ranks() -> None:
    out = tempfile.mkdtemp(prefix="oarlock-ppauto-")
    proc = launch.run(
        [str(ROOT / "tests" / "dist_scripts" / "ap_pipeline.py"), out], 4, timeout=300, collective_timeout=60
    )
    stages, ref = {}, None
    for r in range(4):
        path = os.path.join(out, f"rank{r}.json")
        assert os.path.exists(path), (
            f"rank {r} wrote nothing (exit {proc.returncode}):\n{proc.stdout[-3000:]}"
        )
        d = json.load(open(path))
        ref = d["ref"] if r == 0 else ref  # one process, the whole batch (computed on rank 0)
        for name in ("pp2xmp2", "pp2xdp2"):
            np.testing.assert_allclose(d[name]["losses"], ref, **TOL, err_msg=f"rank {r} {name}")
        assert ref[1] < ref[0]
        stages[r] = (d["pp2xmp2"]["stage"], d["pp2xdp2"]["stage"])
        # the schedules ran as named: 1F1B over 4 micro-batches, FThenB over 2
        first = d["pp2xmp2"]["stage"] == 0
        assert d["pp2xmp2"]["order"] == ("F0F1B0F2B1F3B2B3" if first else "F0B0F1B1F2B2F3B3"), d["pp2xmp2"]
        assert d["pp2xdp2"]["order"] == "F0F1B0B1", d["pp2xdp2"]
        # the stage holds its layers only, named as in the whole model (layer 2, the head: stage 1)
        assert d["pp2xmp2"]["held"][0].startswith("0." if first else "2."), d["pp2xmp2"]["held"]
    assert stages == {0: (0, 0), 1: (0, 0), 2: (1, 1), 3: (1, 1)}  # mesh [pp, dp, mp]: pp outermost
    assert proc.returncode == 0, proc.stdout[-3000:]


@needs_mpi
@pytest.mark.mpi
@pytest.mark.skipif(
    not os.environ.get("OARLOCK_NIGHTLY"),
    reason="8 ranks: OARLOCK_NIGHTLY=1 (pp x mp and pp x dp run by default)",
)
def test_dp_x_mp_x_pp_tiny_llama_on_8_ranks_follows_one_process() -> None:
    """examples/train_tiny_llama_pipeline.py: pp 2 x dp 2 x mp 2 on one ProcessMesh."""
    example = ROOT / "examples" / "train_tiny_llama_pipeline.py"
    proc = launch.run([str(example), "--pp", "2", "--dp", "2", "--mp", "2"], 8, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:]
    pairs = [
        (float(a), float(b))
        for a, b in (
            line.split("loss ")[1].split("  one process ")
            for line in proc.stdout.splitlines()
            if line.startswith("step ")
        )
    ]
    assert len(pairs) == 3, proc.stdout[-3000:]
    np.testing.assert_allclose([g for g, _ in pairs], [w for _, w in pairs], **TOL)
    assert pairs[-1][0] < pairs[0][0]


# -- in this process: one stage --------------------------------------------------------------
def _mlp(mesh: dist.ProcessMesh) -> fw.nn.Sequential:
    fw.seed(3)
    net = fw.nn.Sequential(fw.nn.Linear(4, 8), fw.nn.Tanh(), fw.nn.Linear(8, 2))
    for layer in net:
        dist.shard_layer(layer, mesh)
    return net


@pytest.mark.parametrize("schedule, recompute", [("1F1B", False), ("FThenB", True)])
def test_one_stage_with_micro_batches_trains_like_the_whole_batch(schedule: str, recompute: bool) -> None:
    """4 micro-batches of 2 rows: the mean loss and the step of one batch of 8 (numpy's)."""
    mesh = dist.ProcessMesh([[0]], dim_names=["pp", "dp"])
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(8, 4)).astype("float32"), rng.normal(size=(8, 2)).astype("float32")
    net = _mlp(mesh)
    w = {k: v.numpy().copy() for k, v in net.state_dict().items()}
    s = dist.Strategy({"pipeline": {"enable": True, "schedule_mode": schedule, "micro_batch_size": 2}})
    s.pipeline.accumulate_steps = 4
    s.recompute.enable = recompute
    opt = fw.optimizer.SGD(0.5, parameters=net.parameters())
    dm = dist.to_static(net, loss=fw.nn.MSELoss(), optimizer=opt, strategy=s)
    # an input that needs its gradient: the stage recomputes (a plain call otherwise, as in Paddle)
    xd = dist.shard_tensor(x, mesh, [dist.Replicate()] * 2, stop_gradient=not recompute)
    loss = dm(xd, fw.to_tensor(y))
    # numpy: forward, MSE over the whole batch, backward, one SGD step
    h = np.tanh(x @ w["0.weight"] + w["0.bias"])
    o = h @ w["2.weight"] + w["2.bias"]
    np.testing.assert_allclose(float(loss.numpy()), ((o - y) ** 2).mean(), rtol=1e-6)
    go = 2 * (o - y) / o.size
    gh = (go @ w["2.weight"].T) * (1 - h**2)
    want = {"2.weight": h.T @ go, "2.bias": go.sum(0), "0.weight": x.T @ gh, "0.bias": gh.sum(0)}
    for k, g in want.items():
        np.testing.assert_allclose(
            net.state_dict()[k].numpy(), w[k] - 0.5 * g, rtol=1e-5, atol=1e-6, err_msg=k
        )
    assert "".join(k for k, *_ in dm.pipeline.timeline) == ("FBFBFBFB" if schedule == "1F1B" else "FFFFBBBB")
    dm.eval()
    np.testing.assert_allclose(
        float(dm(fw.to_tensor(x), fw.to_tensor(y)).numpy()),
        float(fw.nn.MSELoss()(net(fw.to_tensor(x)), fw.to_tensor(y)).numpy()),
        rtol=1e-6,
    )


def test_layout_words_round_trip() -> None:
    mesh = dist.ProcessMesh([[0]], dim_names=["dp", "mp"])
    for placements in ([dist.Shard(0), dist.Replicate()], [dist.Partial("avg"), dist.Shard(2)]):
        d = dist.shard_tensor(np.ones((2, 3, 4), "float32"), mesh, [dist.Replicate()] * 2)
        d = dist.DistTensor(d._local_value(), mesh, placements, (2, 3, 4), d.dtype)
        back = mesh_pipeline.from_words(d._local_value(), mesh_pipeline.layout_words(d), mesh)
        assert back.placements == placements and back.shape == (2, 3, 4)


def test_the_stage_cut_and_the_strategy_check_their_arguments() -> None:
    a = dist.ProcessMesh([[0]], dim_names=["dp", "mp"])
    b = dist.ProcessMesh([[1]], dim_names=["dp", "mp"])
    c = dist.ProcessMesh([0], dim_names=["dp"])
    net = fw.nn.Sequential(fw.nn.Linear(2, 2), fw.nn.ReLU(), fw.nn.Linear(2, 2))
    with pytest.raises(
        fw.OarlockError, match=r"layer 0 \('0', Linear\) has parameters on no mesh \(\['weight'"
    ):
        mesh_pipeline.split_by_placement(net)
    dist.shard_layer(net[0], a)
    dist.shard_layer(net[2], b)
    assert mesh_pipeline.split_by_placement(net) == ([a, b], [0, 0, 1])  # ReLU: the stage before it
    net2 = fw.nn.Sequential(fw.nn.Linear(2, 2), fw.nn.Linear(2, 2), fw.nn.Linear(2, 2))
    dist.shard_layer(net2[0], b)
    dist.shard_layer(net2[1], a)
    dist.shard_layer(net2[2], b)
    with pytest.raises(fw.OarlockError, match=r"layer 2 \('2'\) is on stage 0 after a layer on stage 1"):
        mesh_pipeline.split_by_placement(net2)
    net3 = fw.nn.Sequential(fw.nn.Linear(2, 2), fw.nn.Linear(2, 2))
    dist.shard_layer(net3[0], a)
    dist.shard_layer(net3[1], c)
    with pytest.raises(fw.OarlockError, match=r"the stage meshes must have the same shape and axes"):
        mesh_pipeline.split_by_placement(net3)
    with pytest.raises(fw.OarlockError, match=r"cuts an nn.Sequential .* got Linear"):
        mesh_pipeline.split_by_placement(fw.nn.Linear(2, 2))
    with pytest.raises(fw.OarlockError, match=r"pipeline.schedule_mode must be '1F1B' or 'FThenB', got 'ZB'"):
        dist.Strategy().pipeline.schedule_mode = "ZB"
    with pytest.raises(fw.OarlockError, match=r"pipeline has no field 'acc_steps'"):
        dist.Strategy({"pipeline": {"acc_steps": 2}})
    with pytest.raises(fw.OarlockError, match=r"the categories \['sharding'\] are not built"):
        dist.Strategy({"sharding": {"enable": True}})
    with pytest.raises(
        fw.OarlockError, match=r"strategy=\{'pipeline': \{\}\} is a dict; pass a dist.Strategy or None"
    ):
        dist.to_static(net, strategy={"pipeline": {}})
    s = dist.Strategy({"recompute": {"enable": True}})
    with pytest.raises(fw.OarlockError, match=r"enable strategy.pipeline too"):
        dist.to_static(net, strategy=s)


def test_the_batch_must_fill_the_micro_batches() -> None:
    mesh = dist.ProcessMesh([[0]], dim_names=["pp", "dp"])
    s = dist.Strategy({"pipeline": {"enable": True, "micro_batch_size": 3, "accumulate_steps": 2}})
    net = _mlp(mesh)
    dm = dist.to_static(
        net, loss=fw.nn.MSELoss(), optimizer=fw.optimizer.SGD(0.1, parameters=net.parameters()), strategy=s
    )
    x = dist.shard_tensor(np.ones((8, 4), "float32"), mesh, [dist.Shard(0), dist.Replicate()])
    with pytest.raises(
        fw.OarlockError,
        match=r"the input batch has 8 rows over 1 replicas, micro_batch_size x accumulate_steps is 3 x 2",
    ):
        dm(x, fw.ones([8, 2]))
