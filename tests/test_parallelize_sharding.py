"""``dist.parallelize`` with ``dp_config={"sharding_level": 0..3}`` (ZeRO on the auto-parallel
core; levels 2 and 3 also under ``dist.to_static``), ``ClipGradByGlobalNorm`` over pipeline
stages, sequence parallelism over 2 mp ranks and ``pp_config global_spec``: under ``oarlock launch`` on 2 and 4 ranks against one process
(3 AdamW steps), with the memory per rank measured at each level; in this process, one rank
against real Paddle's ``parallelize`` at levels 2 and 3, and the argument checks."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np
import pytest

import framework as fw
import framework.distributed as dist
from framework.distributed import launch
from tests.conftest import needs_mpi
from tests.dist_results import run_job

SCRIPT = Path(__file__).parent / "dist_scripts" / "parallelize_sharding_job.py"


def _launch(part: str, n: int) -> list:
    return run_job(
        SCRIPT,
        n,
        part,
        prefix=f"oarlock-zero-{part}-",
        name=part + "_rank{r}.npz",
        timeout=600,
        collective_timeout=200,
    )


def _equal_to_one_process(d, tag: str, r: int) -> set[str]:
    np.testing.assert_allclose(d[f"{tag}/loss"], d[f"{tag}/ref_loss"], rtol=1e-5, err_msg=f"rank {r} {tag}")
    keys = [k for k in d.files if k.startswith(f"{tag}/param/")]
    assert keys, (r, tag)
    for k in keys:  # AdamW, 3 steps, float32
        np.testing.assert_allclose(
            d[k], d[k.replace("/param/", "/ref/")], rtol=1e-4, atol=2e-5, err_msg=f"rank {r} {k}"
        )
    return {k.split("/param/")[1] for k in keys}


def _zero_levels(n: int) -> dict[str, np.ndarray]:
    """Levels 0-3 over n dp ranks train as one process; returns rank 0's figures."""
    got = _launch("zero", n)
    for r, d in enumerate(got):
        assert (d["zero/ref_norm"] > 0.05 * 2).all()  # the clip (0.05) acted at every step
        for tag in ("zero0", "zero1", "zero2", "zero3", "zero2_accum", "zero3_accum", "static2", "static3"):
            assert _equal_to_one_process(d, tag, r) == {"0.weight", "0.bias", "2.weight", "2.bias"}
        # the gradients go in buckets of 16 KiB as they become final: two per backward (levels 0
        # and 1 all-reduce them, 2 and 3 reduce-scatter them), the first sent while layer 0's
        # gradients were still to compute (3 steps x 2 buckets)
        assert [int(d[f"zero{lv}/buckets"]) for lv in range(4)] == [2, 2, 2, 2]
        assert [int(d[f"zero{lv}/early"]) for lv in range(4)] == [1, 1, 1, 1]
        assert [int(d[f"zero{lv}/reduce_scatters"]) for lv in range(4)] == [0, 0, 6, 6]
        # stage 3 gathers each layer's parameters before its forward and again for its backward
        # (3 steps x 4, twice), and holds one layer's whole parameters at a time (the first's)
        assert int(d["zero3/gathers"]) == 24 and int(d["zero3/regathers"]) == 12
        assert int(d["zero2/gathers"]) == 0
        assert int(d["zero3/gathered_peak"]) == (64 * 256 + 256) * 4
        # under dist.to_static the program gathers the level-3 parameters (4 gathers, and their
        # backward: the partial gradient reduce-scattered onto the shard, one op each, not an
        # all-reduce and a slice); at level 2 too each parameter's partial gradient is
        # reduce-scattered in the program (no all-reduce, no slice in the optimizer: 3 steps x 4
        # reduce-scatters run); the loss is all-reduced at both
        assert int(d["static3/program_gathers"]) == 2 * 4 and int(d["static2/program_gathers"]) == 0
        for lv in (2, 3):
            assert int(d[f"static{lv}/program_reduce_scatters"]) == 4, lv
            assert int(d[f"static{lv}/program_all_reduces"]) == 1, lv
        assert int(d["static2/run_reduce_scatters"]) == 3 * 4
        assert int(d["static2/eager_gradient_slices"]) == 0 and int(d["static2/whole_grads"]) == 0
        # a layer used twice: its two all-reduced partial gradients are added as one
        # all-reduce of the sum, reduce-scattered (2 parameters; the loss all-reduced)
        assert _equal_to_one_process(d, "static2_twice", r) == {"lin.weight", "lin.bias"}
        assert int(d["static2_twice/program_reduce_scatters"]) == 2
        assert int(d["static2_twice/program_all_reduces"]) == 1
    d = got[0]
    f = {
        f"{k}{lv}": int(d[f"zero{lv}/{k}"])
        for lv in range(4)
        for k in ("allocated", "states", "grads", "params", "peak")
    }
    for lv in range(4):  # after the step nothing else near a parameter copy is held (a stale
        # storage kept by the gradients' aliases was: +99,840 B)
        extra = f[f"allocated{lv}"] - f[f"states{lv}"] - f[f"grads{lv}"] - f[f"params{lv}"]
        assert 0 <= extra < f["params0"] // 4, (lv, extra)
    # the gradients the traced step hands the update, per rank: 1/n of the whole ones at
    # levels 2 and 3 (this rank's slices only), at every step
    n = len(got)
    for lv in (2, 3):
        assert d[f"static{lv}/grads"].tolist() == [f["grads0"] // n] * 3, (lv, d[f"static{lv}/grads"])
    return f


@needs_mpi
@pytest.mark.mpi
def test_sharding_levels_train_as_one_process_on_2_ranks() -> None:
    f = _zero_levels(2)
    whole = 64 * 256 + 256 + 256 * 32 + 32  # the MLP's elements
    assert f["params0"] == f["params1"] == f["params2"] == 4 * whole
    assert f["params3"] == 4 * whole // 2  # every dim 0 divides by 2
    assert f["states0"] == 2 * 4 * whole  # AdamW's two moments (its step count is a host int)
    assert f["states1"] == f["states2"] == f["states3"] == f["states0"] // 2
    assert f["grads2"] == f["grads3"] == f["grads0"] // 2
    allocated = [f[f"allocated{lv}"] for lv in range(4)]
    assert allocated == sorted(allocated, reverse=True) and len(set(allocated)) == 4, allocated
    # the peak of forward + backward: stage 3 holds a shard and one layer's whole parameters
    assert f["peak3"] < f["peak2"], (f["peak3"], f["peak2"])


@needs_mpi
@pytest.mark.mpi
def test_sharding_levels_on_4_ranks_and_the_memory_per_rank() -> None:
    f = _zero_levels(4)
    # the issue's goal: stage 2 on 4 ranks keeps <= 30 % of stage 0's optimizer states per rank
    assert f["states2"] <= 0.30 * f["states0"], (f["states2"], f["states0"])
    assert f["states1"] == f["states2"] == f["states3"]
    assert f["grads2"] == f["grads0"] // 4 and f["params3"] == f["params0"] // 4
    allocated = [f[f"allocated{lv}"] for lv in range(4)]
    assert allocated == sorted(allocated, reverse=True) and len(set(allocated)) == 4, allocated


@needs_mpi
@pytest.mark.mpi
def test_hybrid_sharding_stage_clip_sequence_parallel_and_global_spec_on_4_ranks() -> None:
    got = _launch("hybrid", 4)
    tags = ("dp2xmp2_sh2", "pp2xdp2_sh3_tied_clip", "pp2xmp2_tied_clip", "pp2xdp2_sh2_clip",
            "pp2xmp2_sh2_tied", "pp2xmp2_sh3", "sp_dp2xmp2", "pp2xdp2_global")  # fmt: skip
    for r, d in enumerate(got):
        assert float(d["llama/ref_norm"]) > 0.05 * 4  # the clip acts at (at least) the first step
        held = {t: _equal_to_one_process(d, t, r) for t in tags}
        first = r < 2  # mesh [pp, ...]: ranks 0, 1 are the first stage
        assert ("embed.weight" in held["pp2xdp2_sh3_tied_clip"]) == first
        assert ("lm_head.weight" in held["pp2xdp2_sh3_tied_clip"]) == (not first)
        assert ("pos.table" in held["pp2xdp2_global"]) == first  # the global layer on the first stage
        assert ("layers.3.lin.weight" in held["pp2xdp2_global"]) == (not first)
        assert int(d["sp_dp2xmp2/seq_shards"]) == 2 * 3  # two SequenceParallelBegin x 3 steps
        # level 2 under dist.to_static with mp trains as eagerly: over dp, 3 gradients
        # reduce-scattered in the program; 0.bias (its one dim sharded over mp) and the loss
        # all-reduced
        assert _equal_to_one_process(d, "static_dp2xmp2_sh2", r) == {
            "0.weight",
            "0.bias",
            "2.weight",
            "2.bias",
        }
        assert int(d["static_dp2xmp2_sh2/dp_reduce_scatters"]) == 3
        assert int(d["static_dp2xmp2_sh2/dp_all_reduces"]) == 2


# -- in this process: one rank, against real Paddle -------------------------------------------------
@pytest.mark.parametrize("level", [2, 3])
def test_one_rank_levels_2_and_3_equal_paddle(level: int) -> None:
    paddle = pytest.importorskip("paddle")
    pd = paddle.distributed
    paddle.seed(1)
    pnet = paddle.nn.Sequential(paddle.nn.Linear(4, 8), paddle.nn.Tanh(), paddle.nn.Linear(8, 3))
    init = [p.numpy() for p in pnet.parameters()]
    popt = paddle.optimizer.AdamW(
        learning_rate=0.05, parameters=pnet.parameters(), grad_clip=paddle.nn.ClipGradByGlobalNorm(0.1)
    )
    cfg = {"dp_config": {"sharding_level": level}}
    pnet, popt = pd.parallelize(pnet, popt, pd.ProcessMesh([0], dim_names=["dp"]), cfg)

    net = fw.nn.Sequential(fw.nn.Linear(4, 8), fw.nn.Tanh(), fw.nn.Linear(8, 3))
    for p, v in zip(net.parameters(), init):
        p.set_value(fw.to_tensor(v))
    opt = fw.optimizer.AdamW(
        learning_rate=0.05, parameters=net.parameters(), grad_clip=fw.nn.ClipGradByGlobalNorm(0.1)
    )
    net, opt = dist.parallelize(net, opt, dist.ProcessMesh([0], dim_names=["dp"]), cfg)
    for a, b in zip(net.parameters(), pnet.parameters()):  # stage 3: Shard(0) over dp, as Paddle
        assert [str(p) for p in a.placements] == [str(p).replace("dim=", "") for p in b.placements]
    rng = np.random.default_rng(0)
    for _ in range(3):
        x = rng.normal(size=(5, 4)).astype("float32")
        y = rng.normal(size=(5, 3)).astype("float32") * 10  # large gradients: the clip acts
        for m, o, lib, F in ((net, opt, fw, fw.nn.functional), (pnet, popt, paddle, paddle.nn.functional)):
            F.mse_loss(m(lib.to_tensor(x)), lib.to_tensor(y)).backward()
            o.step()
            o.clear_grad()
    for a, b in zip(net.parameters(), pnet.parameters()):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)


def test_stage_2_keeps_the_gradient_slice_and_stage_3_shards_in_place() -> None:
    """One rank: ``opt.grad_shard(p)`` is the gradient laid out as the states (p.grad is
    dropped); ShardingStage3 through shard_optimizer re-lays the same parameter object."""
    m = dist.ProcessMesh([0], dim_names=["dp"])
    fw.seed(0)
    lin = fw.nn.Linear(3, 2)
    x = fw.to_tensor(np.arange(6, dtype="float32").reshape(2, 3))
    want = {}
    (lin(x) ** 2).sum().backward()
    for n, p in lin.named_parameters():
        want[n] = p.grad.numpy()
        p.clear_grad()
    w = dist.shard_tensor(lin.weight, m, [dist.Replicate()])
    b = dist.shard_tensor(lin.bias, m, [dist.Replicate()])
    opt = dist.shard_optimizer(fw.optimizer.SGD(parameters=[w, b]), dist.ShardingStage2("dp"))
    (fw.matmul(x, w) + b).pow(2).sum().backward()
    assert w.grad is None
    g = opt.grad_shard(w)
    assert g.placements == [dist.Shard(0)]
    np.testing.assert_allclose(g.numpy(), want["weight"], rtol=1e-6)
    opt.step()
    np.testing.assert_allclose(w.numpy(), lin.weight.numpy() - 0.001 * want["weight"], rtol=1e-6)

    w3 = dist.shard_tensor(fw.nn.Parameter.from_tensor(fw.ones((4, 2))), m, [dist.Replicate()])
    before = id(w3)
    opt3 = dist.shard_optimizer(fw.optimizer.Adam(parameters=[w3]), dist.ShardingStage3("dp"))
    assert id(w3) == before and w3.placements == [dist.Shard(0)] and not w3.stop_gradient
    (w3 * w3).sum().backward()
    opt3.step()
    assert all(v.placements == [dist.Shard(0)] for v in opt3.state_dict().values() if isinstance(v, dist.DistTensor)
               and len(v.shape) == 2)  # fmt: skip


@pytest.mark.parametrize(
    ("config", "mesh_names", "clip", "match"),
    [
        ({"dp_config": {"sharding_level": 4}}, ["dp"], None, r"sharding_level must be 0, 1, 2 or 3, got 4"),
        ({"dp_config": {"sharding_level": 2}}, ["mp"], None, r"dp_config needs a 'dp' axis in the mesh"),
        ({"pp_config": {"split_spec": {"0": dist.SplitPoint.END}}}, ["pp"], fw.nn.ClipGradByNorm(1.0),
         r"grad_clip=ClipGradByNorm over 2 pipeline stages is not built \(it needs each whole gradient"),
    ],
)  # fmt: skip
def test_parallelize_sharding_checks(config, mesh_names, clip, match) -> None:
    net = fw.nn.Sequential(fw.nn.Linear(2, 2), fw.nn.Linear(2, 2))
    opt = fw.optimizer.SGD(parameters=net.parameters(), grad_clip=clip)
    ids = np.arange(2 if mesh_names == ["pp"] else 1)  # two stages: refused before they are entered
    mesh = dist.ProcessMesh(ids, dim_names=mesh_names)
    with pytest.raises(fw.OarlockError, match=r"\[parallelize\] .*" + match):
        dist.parallelize(net, opt, mesh, config)
    with pytest.raises(fw.OarlockError, match=r"\[shard_optimizer\] shard_fn must be a sharding stage"):
        dist.shard_optimizer(fw.optimizer.SGD(parameters=net.parameters()), "stage2")


@needs_mpi
@pytest.mark.mpi
def test_the_docs_sharding_example_runs_on_2_ranks_as_one_process() -> None:
    """docs/distributed.md's runnable example, taken from the page: under ``oarlock launch -n
    2`` every level prints one process's loss and weight, level 3 a Shard(0) weight, and the
    state bytes halve from level 1 on."""
    import re
    import subprocess
    import sys

    doc = (Path(__file__).parent.parent / "docs" / "distributed.md").read_text()
    at = doc.index("A runnable example (`oarlock launch -n 2 zero_demo.py`")
    code = doc[
        doc.index("```python\n", at) + len("```python\n") : doc.index(
            "```\n", doc.index("```python\n", at) + 10
        )
    ]
    folder = tempfile.mkdtemp(prefix="oarlock-zero-doc-")
    script = os.path.join(folder, "zero_demo.py")
    Path(script).write_text(code)
    root = str(Path(__file__).parent.parent)
    env = {**os.environ, "PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", "")}
    one = subprocess.run(
        [sys.executable, script], capture_output=True, text=True, timeout=300, env=env, cwd=folder
    )
    assert one.returncode == 0, one.stderr[-3000:]
    proc = launch.run([script], 2, timeout=300, collective_timeout=120, cwd=folder)
    assert proc.returncode == 0, proc.stdout[-3000:]
    pat = r"level (\d): loss (\S+)  w\[0,0\] (\S+)  weight \[(\w+)\(\d?\)\]  Adam states on this rank (\d+) B"
    ones, twos = re.findall(pat, one.stdout), re.findall(pat, proc.stdout)
    assert len(ones) == len(twos) == 4, (one.stdout, proc.stdout[-2000:])
    for (lv, loss1, w1, _, s1), (lv2, loss2, w2, placed, s2) in zip(ones, twos):
        assert lv == lv2
        np.testing.assert_allclose(float(loss2), float(loss1), rtol=1e-5)
        np.testing.assert_allclose(float(w2), float(w1), atol=2e-6)
        assert placed == ("Shard" if lv == "3" else "Replicate")
        assert int(s2) == (int(s1) if lv == "0" else int(s1) // 2)
