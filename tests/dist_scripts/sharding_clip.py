"""Under mpiexec (2 ranks): group_sharded_parallel at each level with ClipGradByGlobalNorm
(a clip norm small enough that every step clips) against one process on the whole batch;
each rank writes out/rank{r}.npz with the losses and the whole parameters."""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

import numpy as np  # noqa: E402

import framework as fw  # noqa: E402
import framework.distributed as dist  # noqa: E402
from framework.distributed.sharding import group_sharded_parallel  # noqa: E402

out = sys.argv[1]
dist.init_parallel_env()
rank, world = dist.get_rank(), dist.get_world_size()
STEPS, ROWS, CLIP = 3, 4, 0.05
res: dict = {}


def mlp():
    fw.seed(11)
    return fw.nn.Sequential(fw.nn.Linear(6, 10), fw.nn.Tanh(), fw.nn.Linear(10, 3))


def opt_of(params):
    return fw.optimizer.AdamW(
        learning_rate=0.01, parameters=params, weight_decay=0.01, grad_clip=fw.nn.ClipGradByGlobalNorm(CLIP)
    )


def data(step: int):
    rng = np.random.default_rng(40 + step)
    x = rng.normal(size=(ROWS * world, 6)).astype(np.float32)
    return x, np.sin(x[:, :3]).astype(np.float32)


def run(level: str | None) -> None:
    net = mlp()
    if level is None:  # one process, the whole batch
        model, opt = net, opt_of(net.parameters())
    else:
        model, opt, _ = group_sharded_parallel(net, opt_of(net.parameters()), level=level)
    tag = level or "ref"
    for step in range(STEPS):
        x, y = data(step)
        if level is not None:
            x, y = x[ROWS * rank : ROWS * (rank + 1)], y[ROWS * rank : ROWS * (rank + 1)]
        loss = fw.nn.functional.mse_loss(model(fw.to_tensor(x)), fw.to_tensor(y))
        loss.backward()
        if level is None:  # the global norm the clip saw (> CLIP: it clipped)
            res[f"ref/norm/{step}"] = np.float32(
                np.sqrt(sum(float((p.grad.numpy() ** 2).sum()) for p in net.parameters()))
            )
        opt.step()
        opt.clear_grad()
    if level == "p_g_os":
        model.get_all_parameters()
    for name, p in net.named_parameters():
        res[f"{tag}/param/{name}"] = p.numpy()


for level in (None, "os", "os_g", "p_g_os"):
    run(level)
np.savez(os.path.join(out, f"rank{rank}.npz"), **res)
