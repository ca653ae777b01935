"""Under mpiexec (4 ranks): ``dist.parallelize`` against one process, 3 AdamW steps each.

``pp2xmp2_tied``  pp 2 x mp 2, the embedding tied to the head across the stages (eager)
``dp2xmp2_sh1``   dp 2 x mp 2, dp_config sharding_level 1
``pp2xdp2_sh1``   pp 2 x dp 2, sharding_level 1 (stage 1 under pp x dp)
``dp2xmp2_sh1_clip``  an MLP, dp 2 x mp 2, sharding_level 1 with ClipGradByGlobalNorm
``pp2xdp2_1f1b``  an nn.Sequential with a tied head, pp 2 x dp 2 on the 1F1B schedule
                  (dist.to_static, 2 micro-batches)

Each rank writes out/rank{r}.npz: per config the losses, the whole parameters this rank's
stage holds (``<config>/param/<name>``) and the one-process values (``<config>/ref/...``)."""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

import numpy as np  # noqa: E402

import framework as fw  # noqa: E402
import framework.distributed as dist  # noqa: E402
from conformance.models import char_corpus  # noqa: E402
from examples.train_tiny_llama_hybrid import DIM, Block, batches, loss_fn  # noqa: E402
from examples.train_tiny_llama_parallelize import TiedHead, optimizer, parallel_train, reference  # noqa: E402
from tests.dist_scripts import _records  # noqa: E402

out = sys.argv[1]
dist.init_parallel_env()
rank = dist.get_rank()
vocab = len(char_corpus()[1])
data = batches(3, 8)
res: dict = {}


def record(tag: str, losses: list, model, ref_losses: list, ref_model) -> None:
    _records.record(res, tag, losses, model, ref_losses, ref_model)


for tag, (pp, dp, mp, sh, tied) in {
    "pp2xmp2_tied": (2, 1, 2, 0, True),
    "dp2xmp2_sh1": (1, 2, 2, 1, False),
    "pp2xdp2_sh1": (2, 2, 1, 1, False),
}.items():
    got, model = parallel_train(vocab, 2, data, pp, dp, mp, sh, tied)
    ref, ref_model = reference(vocab, 2, data, tied)
    record(tag, got, model, ref, ref_model)


# -- the 1F1B schedule: an nn.Sequential laid out by parallelize, run by dist.to_static ------------
class Embed(fw.nn.Layer):
    def __init__(self) -> None:
        super().__init__()
        self.embed = fw.nn.Embedding(vocab, DIM, weight_attr=fw.nn.initializer.Normal(0.0, 0.02))

    def forward(self, ids):
        return self.embed(ids)


class Head(fw.nn.Layer):
    def __init__(self, weight) -> None:
        super().__init__()
        self.norm = fw.nn.RMSNorm(DIM)
        self.tied = TiedHead(weight)

    def forward(self, h):
        return self.tied(self.norm(h))


def seq_model():
    fw.seed(77)
    e = Embed()
    return fw.nn.Sequential(e, Block(False), Block(False), Head(e.embed.weight))


ref_losses, ref_model = reference(vocab, 2, data, model=seq_model())

mesh = dist.ProcessMesh(np.arange(4).reshape(2, 2), dim_names=["pp", "dp"])
model = seq_model()
model, opt = dist.parallelize(
    model, optimizer(model.parameters()), mesh, {"pp_config": {"split_spec": {"1": dist.SplitPoint.END}}}
)
s = dist.Strategy()
s.pipeline.enable, s.pipeline.schedule_mode, s.pipeline.accumulate_steps = True, "1F1B", 2
s.pipeline.micro_batch_size = 2  # 8 rows over dp 2 = 4 per replica = 2 micro-batches of 2
dm = dist.to_static(model, loss=loss_fn, optimizer=opt, strategy=s)
first, last = model.pipeline_stages[0], model.pipeline_stages[-1]
losses = []
for x, y in data:
    loss = dm(dist.shard_tensor(x, first, [dist.Shard(0)]), dist.shard_tensor(y, last, [dist.Shard(0)]))
    losses.append(float(loss.numpy()))
res["pp2xdp2_1f1b/order"] = np.array([f"{k}{i}" for k, i, _, _ in dm.pipeline.timeline])
record("pp2xdp2_1f1b", losses, model, ref_losses, ref_model)


# -- dp 2 x mp 2, sharding level 1 and ClipGradByGlobalNorm (a clip that acts at every step) ------
def clipped(par: bool):
    fw.seed(3)
    net = fw.nn.Sequential(fw.nn.Linear(6, 8), fw.nn.Tanh(), fw.nn.Linear(8, 3))
    opt = fw.optimizer.AdamW(
        learning_rate=0.01, parameters=net.parameters(), grad_clip=fw.nn.ClipGradByGlobalNorm(0.05)
    )
    if par:
        plan = {"0": dist.ColWiseParallel(), "2": dist.RowWiseParallel()}
        cfg = {"dp_config": {"sharding_level": 1}, "mp_config": {"parallelize_plan": plan}}
        net, opt = dist.parallelize(net, opt, dist.ProcessMesh([[0, 1], [2, 3]], dim_names=["dp", "mp"]), cfg)
    losses, norms = [], []
    for step in range(3):
        rng = np.random.default_rng(step)
        x = rng.normal(size=(8, 6)).astype("float32")
        y = np.sin(x[:, :3]).astype("float32")
        label = (
            dist.shard_tensor(y, net.process_mesh, [dist.Shard(0), dist.Replicate()])
            if par
            else fw.to_tensor(y)
        )
        loss = fw.nn.functional.mse_loss(net(fw.to_tensor(x)), label)
        loss.backward()
        if not par:
            norms.append(np.sqrt(sum(float((p.grad.numpy() ** 2).sum()) for p in net.parameters())))
        opt.step()
        opt.clear_grad()
        losses.append(float(loss.numpy()))
    return losses, net, norms


ref_losses, ref_net, norms = clipped(False)
losses, net, _ = clipped(True)
res["dp2xmp2_sh1_clip/ref_norm"] = np.array(norms, "float32")
record("dp2xmp2_sh1_clip", losses, net, ref_losses, ref_net)

np.savez(os.path.join(out, f"rank{rank}.npz"), **res)
