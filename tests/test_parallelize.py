"""``dist.parallelize`` (Paddle 3's one-call hybrid parallelism): under ``oarlock launch -n 4``
pp 2 x mp 2 with the embedding tied to the head across the stages, dp 2 x mp 2 and
pp 2 x dp 2 with sharding_level 1, and a tied nn.Sequential on the 1F1B schedule train to
the one-process parameters; in this process, the placements and three training steps against
real Paddle's ``parallelize`` (one rank), ``set_mesh``/``get_mesh``, and the argument checks."""

from __future__ import annotations

import inspect
import tempfile
from pathlib import Path

import numpy as np
import pytest

import framework as fw
import framework.distributed as dist
from framework.distributed import launch
from tests.conftest import needs_mpi
from tests.dist_results import rank_files

SCRIPT = Path(__file__).parent / "dist_scripts" / "parallelize_job.py"
TAGS = ("pp2xmp2_tied", "dp2xmp2_sh1", "pp2xdp2_sh1", "pp2xdp2_1f1b", "dp2xmp2_sh1_clip")


@needs_mpi
@pytest.mark.mpi
def test_parallelize_trains_as_one_process_on_4_ranks() -> None:
    out = tempfile.mkdtemp(prefix="oarlock-parallelize-")
    proc = launch.run([str(SCRIPT), out], 4, timeout=500, collective_timeout=120)
    held: dict[str, set[str]] = {t: set() for t in TAGS}
    for r, d in enumerate(rank_files(proc, out, 4)):
        for tag in TAGS:
            np.testing.assert_allclose(
                d[f"{tag}/loss"], d[f"{tag}/ref_loss"], rtol=1e-5, err_msg=f"rank {r} {tag}"
            )
            keys = [k for k in d.files if k.startswith(f"{tag}/param/")]
            assert keys, (r, tag)
            for k in keys:  # AdamW, 3 steps, float32
                np.testing.assert_allclose(
                    d[k], d[k.replace("/param/", "/ref/")], rtol=1e-4, atol=2e-5, err_msg=f"rank {r} {k}"
                )
                held[tag].add(k.split("/param/")[1])
        first = r < 2  # mesh [pp, ...]: ranks 0, 1 are the first stage
        if first:  # the stages hold their own layers only
            assert "embed.weight" in {
                k.split("/param/")[1] for k in d.files if k.startswith("pp2xmp2_tied/param/")
            }
            assert not any(k.startswith("pp2xmp2_tied/param/layers.1.") for k in d.files)
        else:  # the tied head's copy on the last stage: equal to the one-process embedding above
            assert "pp2xmp2_tied/param/lm_head.weight" in d.files
            assert not any(k.startswith("pp2xmp2_tied/param/embed.") for k in d.files)
        assert (d["dp2xmp2_sh1_clip/ref_norm"] > 0.1).all()  # the clip (0.05) acted at every step
        order = "".join(d["pp2xdp2_1f1b/order"].tolist())
        assert order == ("F0F1B0B1" if first else "F0B0F1B1"), (r, order)
    assert {"embed.weight", "lm_head.weight"} <= held["pp2xmp2_tied"]
    assert {"0.embed.weight", "3.tied.weight"} <= held["pp2xdp2_1f1b"]
    assert proc.returncode == 0, proc.stdout[-3000:]


# -- in this process: one rank, against real Paddle -------------------------------------------------
def _placements(ps) -> list[tuple[str, int | None]]:
    def dim(p):  # Paddle: p.get_dim()
        return p.get_dim() if hasattr(p, "get_dim") else p.dim

    return [(type(p).__name__, dim(p) if type(p).__name__ == "Shard" else None) for p in ps]


def test_one_rank_parallelize_equals_paddle() -> None:
    paddle = pytest.importorskip("paddle")
    pd = paddle.distributed
    paddle.seed(1)
    pnet = paddle.nn.Sequential(paddle.nn.Linear(4, 8), paddle.nn.Tanh(), paddle.nn.Linear(8, 3))
    init = [p.numpy() for p in pnet.parameters()]
    popt = paddle.optimizer.AdamW(learning_rate=0.05, parameters=pnet.parameters())
    cfg = lambda m: {  # noqa: E731
        "mp_config": {"parallelize_plan": {"0": m.ColWiseParallel(), "2": m.RowWiseParallel()}},
        "dp_config": {"sharding_level": 1},
    }
    pnet, popt = pd.parallelize(pnet, popt, pd.ProcessMesh([[0]], dim_names=["dp", "mp"]), cfg(pd))

    net = fw.nn.Sequential(fw.nn.Linear(4, 8), fw.nn.Tanh(), fw.nn.Linear(8, 3))
    for p, v in zip(net.parameters(), init):
        p.set_value(fw.to_tensor(v))
    opt = fw.optimizer.AdamW(learning_rate=0.05, parameters=net.parameters())
    dist.set_mesh(dist.ProcessMesh([[0]], dim_names=["dp", "mp"]))
    net, opt = dist.parallelize(net, opt, config=cfg(dist))
    for a, b in zip(net.parameters(), pnet.parameters()):
        assert _placements(a.placements) == _placements(b.placements), (a.name, a.placements, b.placements)
    rng = np.random.default_rng(0)
    for _ in range(3):
        x = rng.normal(size=(5, 4)).astype("float32")
        y = rng.normal(size=(5, 3)).astype("float32")
        for m, o, lib, F in ((net, opt, fw, fw.nn.functional), (pnet, popt, paddle, paddle.nn.functional)):
            loss = F.mse_loss(m(lib.to_tensor(x)), lib.to_tensor(y))
            loss.backward()
            o.step()
            o.clear_grad()
    for a, b in zip(net.parameters(), pnet.parameters()):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)


def test_api_names_and_mesh_follow_paddle() -> None:
    paddle = pytest.importorskip("paddle")
    pd = paddle.distributed
    assert list(inspect.signature(dist.parallelize).parameters) == list(
        inspect.signature(pd.parallelize).parameters
    )
    for n in ("ColWiseParallel", "RowWiseParallel", "SequenceParallelBegin", "SequenceParallelEnd",
              "SequenceParallelEnable", "SequenceParallelDisable"):  # fmt: skip
        ours = {k: v.default for k, v in inspect.signature(getattr(dist, n)).parameters.items()}
        theirs = {k: v.default for k, v in inspect.signature(getattr(pd, n)).parameters.items()}
        assert ours == theirs, n
    assert list(dist.SplitPoint.__members__) == list(pd.SplitPoint.__members__)
    m = dist.ProcessMesh([0], dim_names=["dp"])
    dist.set_mesh(m)
    assert dist.get_mesh() is m
    with pytest.raises(fw.OarlockError, match=r"\[set_mesh\] expected a dist.ProcessMesh, got list"):
        dist.set_mesh([0])


def _net() -> fw.nn.Layer:
    return fw.nn.Sequential(fw.nn.Linear(2, 4), fw.nn.ReLU(), fw.nn.Linear(4, 2))


@pytest.mark.parametrize(
    ("config", "mesh_names", "match"),
    [
        ({"mp_config": {"parallelize_plan": {"0": dist.ColWiseParallel()}}}, ["dp"],
         r"mp_config needs a 'mp' axis in the mesh, which has \['dp'\]"),
        ({"mp_config": {"parallelize_plan": {"9": dist.ColWiseParallel()}}}, ["mp"],
         r"pattern '9' matches no layer of the model"),
        ({"mp_config": {"parallelize_plan": {"1": dist.ColWiseParallel()}}}, ["mp"],
         r"ColWiseParallel applies to nn.Linear or nn.Embedding, the plan's pattern matched a ReLU"),
        ({"mp_config": {"parallelize_plan": {"0": "col"}}}, ["mp"], r"parallelize_plan\['0'\] must be"),
        ({"pp_config": {"split_spec": "layers"}}, ["pp"], r"split_spec names layer 'layers', which the model"),
        ({"pp_config": {"split_spec": {"0": "end"}}}, ["pp"], r"split_spec\['0'\] must be dist.SplitPoint"),
        ({"sp_config": {}}, ["dp"], r"config keys are \['dp_config', 'mp_config', 'pp_config'\], got \['sp_config'\]"),
    ],
)  # fmt: skip
def test_parallelize_checks_its_arguments(config, mesh_names, match) -> None:
    net = _net()
    opt = fw.optimizer.SGD(parameters=net.parameters())
    mesh = dist.ProcessMesh(np.zeros([1] * len(mesh_names), "int64"), dim_names=mesh_names)
    with pytest.raises(fw.OarlockError, match=r"\[parallelize\] .*" + match):
        dist.parallelize(net, opt, mesh, config)


def test_one_rank_sequence_parallel_and_tied_weights_train_as_plain() -> None:
    """The SequenceParallel plans and a tied head on one rank: the plain model's steps."""

    class Tiny(fw.nn.Layer):
        def __init__(self) -> None:
            super().__init__()
            fw.seed(4)
            self.embed = fw.nn.Embedding(11, 6)
            self.norm = fw.nn.LayerNorm(6)
            self.up = fw.nn.Linear(6, 12)
            self.down = fw.nn.Linear(12, 6)
            self.head = fw.nn.Linear(6, 11)
            self.mix, self.mix2 = fw.nn.Linear(6, 6), fw.nn.Linear(6, 6)
            self.mix2.weight = self.mix.weight  # tied on one stage: one parameter

        def forward(self, ids):
            h = self.norm(self.embed(ids))
            return self.head(self.mix2(self.mix(h + self.down(fw.tanh(self.up(h))))))

    plan = {
        "embed": [dist.ColWiseParallel(gather_output=True), dist.SequenceParallelBegin()],
        "norm": dist.SequenceParallelEnable(),
        "up": [dist.SequenceParallelEnd(), dist.ColWiseParallel()],
        "down": dist.RowWiseParallel(),
    }
    ids = np.random.default_rng(1).integers(0, 11, (3, 5))
    got = []
    for par in (False, True):
        m = Tiny()
        o = fw.optimizer.SGD(learning_rate=0.1, parameters=m.parameters())
        if par:
            m, o = dist.parallelize(
                m,
                o,
                dist.ProcessMesh([[0]], dim_names=["dp", "mp"]),
                {"mp_config": {"parallelize_plan": plan}},
            )
        for _ in range(2):
            m(fw.to_tensor(ids)).sum().backward()
            o.step()
            o.clear_grad()
        got.append({n: p.numpy() for n, p in m.named_parameters()})
        assert m.mix2.weight is m.mix.weight
    assert got[0].keys() == got[1].keys()
    for k in got[0]:
        np.testing.assert_allclose(
            got[1][k], got[0][k], rtol=1e-5, atol=1e-5, err_msg=k
        )  # sum loss: large steps
