"""Under mpiexec (4 ranks): ``fleet`` tensor parallelism and ZeRO sharding equal one process.

``python fleet_train.py DEVICE OUT`` writes ``OUT/rank{r}.npz`` with, for each part, the
losses, the final (whole) parameters and the one-process reference's:

``tp``        fleet.init with dp 2 x mp 2: VocabParallelEmbedding -> ColumnParallelLinear
              (gather_output=False) -> tanh -> RowParallelLinear(input_is_parallel=True) ->
              ColumnParallelLinear (gather_output=True), 3 Adam steps through
              fleet.distributed_model / distributed_optimizer, each dp rank on its half.
``dp``, ``os``, ``os_g``, ``p_g_os``  plain DataParallel and group_sharded_parallel at each
              level on 4 ranks, 3 Adam steps; also the bytes of optimizer state on this rank
              and fw.device.memory_allocated after backward and at rest (after the step).
``fleet_sharding``  fleet.init with sharding_degree 4 (stage 1 through fleet).
"""

from __future__ import annotations

import gc
import sys

import numpy as np

import framework as fw
import framework.distributed as dist
from framework.distributed import fleet
from framework.distributed.fleet import meta_parallel as mpu
from framework.distributed.sharding import group_sharded_parallel

device, out = sys.argv[1], sys.argv[2]
dist.init_parallel_env()
fw.set_device(device)
rank, world = dist.get_rank(), dist.get_world_size()
STEPS = 3
res: dict = {}


def adam(params):
    return fw.optimizer.Adam(learning_rate=0.01, parameters=params)


# -- tensor parallel (dp 2 x mp 2) -------------------------------------------------------------
class TP(fw.nn.Layer):
    def __init__(self, parallel: bool) -> None:
        super().__init__()
        fw.seed(5)
        if parallel:
            self.emb = mpu.VocabParallelEmbedding(16, 8)
            self.up = mpu.ColumnParallelLinear(8, 32, gather_output=False)
            self.down = mpu.RowParallelLinear(32, 8, input_is_parallel=True)
            self.head = mpu.ColumnParallelLinear(8, 6, gather_output=True)
        else:
            self.emb = fw.nn.Embedding(16, 8)
            self.up = fw.nn.Linear(8, 32)
            self.down = fw.nn.Linear(32, 8)
            self.head = fw.nn.Linear(8, 6)

    def forward(self, ids):
        h = self.emb(ids)
        return self.head(h + self.down(fw.tanh(self.up(h)))).mean(axis=1)


def tp_data(step: int):
    rng = np.random.default_rng(50 + step)
    ids = rng.integers(0, 16, size=(8, 5)).astype(np.int64)
    y = rng.normal(size=(8, 6)).astype(np.float32)
    return ids, y


strategy = fleet.DistributedStrategy()
strategy.hybrid_configs = {"dp_degree": 2, "mp_degree": 2, "pp_degree": 1}
fleet.init(is_collective=True, strategy=strategy)
hcg = fleet.get_hybrid_communicate_group()
model = fleet.distributed_model(TP(True))
opt = fleet.distributed_optimizer(adam(model.parameters()))
ref = TP(False)
ref_opt = adam(ref.parameters())
dpr = hcg.get_data_parallel_rank()
for step in range(STEPS):
    ids, y = tp_data(step)
    rows = slice(4 * dpr, 4 * dpr + 4)
    loss = fw.nn.functional.mse_loss(model(fw.to_tensor(ids[rows])), fw.to_tensor(y[rows]))
    loss.backward()
    opt.step()
    opt.clear_grad()
    dist.all_reduce(loss, op="avg", group=hcg.get_data_parallel_group())
    ref_loss = fw.nn.functional.mse_loss(ref(fw.to_tensor(ids)), fw.to_tensor(y))
    ref_loss.backward()
    ref_opt.step()
    ref_opt.clear_grad()
    res[f"tp/loss/{step}"], res[f"tp/ref_loss/{step}"] = (
        np.float32(loss.numpy()),
        np.float32(ref_loss.numpy()),
    )
for (name, p), (_, q) in zip(model.named_parameters(), ref.named_parameters()):
    whole = dist.unshard_dtensor(p) if isinstance(p, dist.DistTensor) else p
    res[f"tp/param/{name}"], res[f"tp/ref_param/{name}"] = whole.numpy(), q.numpy()
res["tp/local_up_weight_shape"] = np.array(model.up.weight._local_value().shape)

# the vocabulary-parallel loss: logits split over mp, never gathered (one ignored label)
fw.seed(6)
head = mpu.ColumnParallelLinear(8, 16, has_bias=False, gather_output=False)
fw.seed(6)
plain = fw.nn.Linear(8, 16, bias_attr=False)
h = np.random.default_rng(3).normal(size=(6, 8)).astype(np.float32)
labels = np.array([[3], [15], [0], [-100], [8], [7]], np.int64)
ce = mpu.ParallelCrossEntropy()(head(fw.to_tensor(h)), fw.to_tensor(labels))
ce.mean().backward()
keep = fw.to_tensor((labels[:, 0] != -100).astype(np.float32))
ref_ce = fw.nn.functional.cross_entropy(
    plain(fw.to_tensor(h)), fw.to_tensor(np.where(labels[:, 0] < 0, 0, labels[:, 0])), reduction="none"
)
(ref_ce * keep).mean().backward()
res["tp/ce/loss"], res["tp/ref_ce/loss"] = ce.numpy()[:, 0], (ref_ce * keep).numpy()
res["tp/ce/grad"] = dist.unshard_dtensor(head.weight.grad).numpy()
res["tp/ref_ce/grad"] = plain.weight.grad.numpy()


# -- ZeRO stages (4 ranks) --------------------------------------------------------------------
def mlp():
    fw.seed(9)
    return fw.nn.Sequential(
        fw.nn.Linear(64, 256), fw.nn.Tanh(), fw.nn.Linear(256, 256), fw.nn.Tanh(), fw.nn.Linear(256, 8)
    )


def z_data(step: int):
    rng = np.random.default_rng(70 + step)
    x = rng.normal(size=(4 * world, 64)).astype(np.float32)
    return x, np.tanh(x[:, :8]).astype(np.float32)


def run(level: str | None) -> None:
    gc.collect()
    base = fw.device.memory_allocated()  # what the earlier parts left
    net = mlp()
    if level is None:
        model, opt = dist.DataParallel(net), adam(net.parameters())
    else:
        model, opt, _ = group_sharded_parallel(net, adam(net.parameters()), level=level)
    tag = level or "dp"
    for step in range(STEPS):
        x, y = z_data(step)
        rows = slice(4 * rank, 4 * rank + 4)
        loss = fw.nn.functional.mse_loss(model(fw.to_tensor(x[rows])), fw.to_tensor(y[rows]))
        loss.backward()
        res[f"{tag}/mem_backward/{step}"] = np.int64(fw.device.memory_allocated() - base)
        opt.step()
        opt.clear_grad()
        res[f"{tag}/mem_rest/{step}"] = np.int64(fw.device.memory_allocated() - base)
        dist.all_reduce(loss, op="avg")
        res[f"{tag}/loss/{step}"] = np.float32(loss.numpy())
    inner = opt if level is None else opt._inner  # its states: of the whole, or of the slices
    res[f"{tag}/state_bytes"] = np.int64(
        sum(
            int(v.numel()) * v.dtype.itemsize for v in inner.state_dict().values() if isinstance(v, fw.Tensor)
        )
    )
    if level == "p_g_os":
        model.get_all_parameters()
    for name, p in net.named_parameters():
        res[f"{tag}/param/{name}"] = p.numpy()
    del model, opt, net


ref = mlp()
ref_opt = adam(ref.parameters())
for step in range(STEPS):
    x, y = z_data(step)
    loss = fw.nn.functional.mse_loss(ref(fw.to_tensor(x)), fw.to_tensor(y))
    loss.backward()
    ref_opt.step()
    ref_opt.clear_grad()
    res[f"zero_ref/loss/{step}"] = np.float32(loss.numpy())
for name, p in ref.named_parameters():
    res[f"zero_ref/param/{name}"] = p.numpy()
del ref, ref_opt
for level in (None, "os", "os_g", "p_g_os"):
    run(level)

# -- sharding through fleet ---------------------------------------------------------------------
strategy = fleet.DistributedStrategy()
strategy.hybrid_configs = {"dp_degree": 1, "sharding_degree": world}
fleet.init(is_collective=True, strategy=strategy)
net = mlp()
model = fleet.distributed_model(net)
opt = fleet.distributed_optimizer(adam(net.parameters()))
for step in range(STEPS):
    x, y = z_data(step)
    rows = slice(4 * rank, 4 * rank + 4)
    loss = fw.nn.functional.mse_loss(model(fw.to_tensor(x[rows])), fw.to_tensor(y[rows]))
    loss.backward()
    opt.step()
    opt.clear_grad()
    dist.all_reduce(loss, op="avg")
    res[f"fleet_sharding/loss/{step}"] = np.float32(loss.numpy())
for name, p in net.named_parameters():
    res[f"fleet_sharding/param/{name}"] = p.numpy()
np.savez(f"{out}/rank{rank}.npz", **res)
