"""Under mpiexec (2 or 4 ranks): the gradient buckets of ZeRO stages 2 and 3 on the cpu plugin
(contract 1.3: ``reduce_scatter_async``, MPI_Ireduce_scatter_block) and on ``oldcomm``, a test
plugin declaring contract 1.2 (the core must fall back to an asynchronous all-reduce of which
each rank keeps its part), each against one process; and ``reduce_scatter(sync_op=False)``
on its own.

``python zero_reduce_scatter.py OUT``; each rank writes ``OUT/rank{r}.npz``:

``<dev>/<level>/param/<name>``, ``.../ref/<name>``, ``.../loss``, ``.../ref_loss``  3 AdamW steps
``<dev>/<level>/how``       the bucket records' collectives, one string per bucket sent
``<dev>/<level>/bytes``     their gradient bytes
``<dev>/calls``             oldcomm: how often each of its collectives was called
``rs/<k>``                  reduce_scatter(sync_op=False) results (see ``collectives()``)
"""

from __future__ import annotations

import importlib
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

import numpy as np  # noqa: E402

import framework as fw  # noqa: E402
import framework.distributed as dist  # noqa: E402
from tests.dist_scripts import _records  # noqa: E402
from tests.plugins_for_tests import oldcomm  # noqa: E402

LOG = importlib.import_module("framework.distributed.auto_parallel.reshard").LOG
BUCKETS = importlib.import_module("framework.distributed.auto_parallel.grad_buckets")
out = sys.argv[1]
dist.init_parallel_env()
rank, world = dist.get_rank(), dist.get_world_size()
fw.register_plugin("tests.plugins_for_tests.oldcomm", name="oldcomm")
BUCKETS.BUCKET_BYTES = 1024  # two buckets per backward: layer 2's gradients, then layer 0's
res: dict = {}


def data(step: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(step)
    x = rng.normal(size=(8, 12)).astype("float32")
    return x, np.tanh(x[:, :10]).astype("float32")


def train(level: int | None) -> tuple[list[float], fw.nn.Layer]:
    """3 AdamW steps of a 12-40-10 MLP (10 and 40 rows: uneven chunks on 4 ranks)."""
    fw.seed(5)
    net = fw.nn.Sequential(fw.nn.Linear(12, 40), fw.nn.Tanh(), fw.nn.Linear(40, 10))
    opt = fw.optimizer.AdamW(learning_rate=0.02, parameters=net.parameters())
    mesh = dist.ProcessMesh(list(range(world)), dim_names=["dp"])
    if level is not None:
        net, opt = dist.parallelize(net, opt, mesh, {"dp_config": {"sharding_level": level}})
    losses = []
    for step in range(3):
        x, y = data(step)
        if level is None:
            xs, ys = fw.to_tensor(x), fw.to_tensor(y)
        else:
            xs, ys = (dist.shard_tensor(a, mesh, [dist.Shard(0)]) for a in (x, y))
        loss = fw.nn.functional.mse_loss(net(xs), ys)
        loss.backward()
        opt.step()
        opt.clear_grad()
        losses.append(float(np.asarray(loss.numpy()).reshape(-1)[0]))
    return losses, net


for dev in ("cpu", "oldcomm"):
    fw.set_device(dev)
    oldcomm.CALLS.clear()
    ref_losses, ref_net = train(None)
    for level in (2, 3):
        del LOG[:]
        losses, net = train(level)
        tag = f"{dev}/{level}"
        _records.record(res, tag, losses, net, ref_losses, ref_net)
        buckets = [r for r in LOG if str(r["tensor"]).startswith("bucket of")]
        res[f"{tag}/how"] = np.array([r["collective"] for r in buckets])
        res[f"{tag}/bytes"] = np.array([r["bytes"] for r in buckets], "int64")
    res[f"{dev}/calls"] = np.array(
        [oldcomm.CALLS[k] for k in ("all_reduce_async", "reduce_scatter", "reduce_scatter_async")]
    )
    res[f"{dev}/async_rs"] = np.array(dist.collective.has_async_reduce_scatter(None, fw.zeros([1]).device))
fw.set_device("cpu")


def collectives() -> None:
    """reduce_scatter(sync_op=False): a list of tensors (stacked into a temporary the task keeps
    alive), float16 avg (reduced in float32), int32 sum, and an all-reduce in flight between."""
    k = world
    a = [
        fw.to_tensor(np.random.default_rng(100 + rank * k + j).uniform(-4, 4, 5).astype("float32"))
        for j in range(k)
    ]
    out_a = fw.zeros([5])
    ta = dist.reduce_scatter(out_a, a, sync_op=False)
    del a  # the stacked input must outlive this name: the task keeps it
    noise = [fw.ones([1000 * (j + 1)]) for j in range(4)]  # reuse freed memory, if it was freed
    h = fw.to_tensor(np.random.default_rng(200 + rank).uniform(-4, 4, 3 * k).astype("float16"))
    out_h = fw.zeros([3], dtype="float16")
    th = dist.reduce_scatter(out_h, h, op="avg", sync_op=False)
    m = fw.to_tensor(np.random.default_rng(300 + rank).uniform(-4, 4, 7).astype("float32"))
    tm = dist.all_reduce(m, op="max", sync_op=False)
    i = fw.to_tensor((np.arange(4 * k) * (rank + 1)).astype("int32"))
    out_i = fw.zeros([4], dtype="int32")
    ti = dist.reduce_scatter(out_i, i, sync_op=False)
    ti.wait()
    res["rs/in_order"] = np.array(ta.is_completed() and th.is_completed() and tm.is_completed())
    for t in (ta, th, tm):
        t.wait()
    del noise
    res["rs/a"], res["rs/h"], res["rs/m"], res["rs/i"] = (
        out_a.numpy(),
        out_h.numpy(),
        m.numpy(),
        out_i.numpy(),
    )


collectives()
np.savez(os.path.join(out, f"rank{rank}.npz"), **res)
