"""Under mpiexec: data-parallel training of a small MLP follows the 1-process curve.

Every rank trains with DataParallel on its shard (batch b per rank); rank 0 also trains the
same model alone with batch N*b (no communication). Rank 0 writes both loss curves and the
final weights of both runs to out/dp.json."""

from __future__ import annotations

import json
import os
import sys

import numpy as np

import framework as fw
import framework.distributed as dist


class MLP:
    """Two dense layers; parameters from a fixed numpy seed (the same on every rank)."""

    def __init__(self, seed: int) -> None:
        rng = np.random.default_rng(seed)
        self.w1 = fw.to_tensor(rng.normal(0, 0.5, (6, 16)).astype(np.float32), stop_gradient=False)
        self.b1 = fw.to_tensor(np.zeros(16, np.float32), stop_gradient=False)
        self.w2 = fw.to_tensor(rng.normal(0, 0.5, (16, 3)).astype(np.float32), stop_gradient=False)
        self.b2 = fw.to_tensor(np.zeros(3, np.float32), stop_gradient=False)

    def parameters(self) -> list:
        return [self.w1, self.b1, self.w2, self.b2]

    def __call__(self, x):
        return fw.tanh(x @ self.w1 + self.b1) @ self.w2 + self.b2


def sgd(params, lr):
    new = []
    for p in params:
        q = fw.to_tensor(p.numpy() - lr * p.grad.numpy(), stop_gradient=False)
        new.append(q)
    return new


def train(model, batches, data, dp=None, lr=0.1):
    losses = []
    for idx in batches:
        x = fw.to_tensor(data[0][idx])
        y = fw.to_tensor(data[1][idx])
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        if dp is not None:
            dp.apply_collective_grads()
            dist.all_reduce(loss, op="avg")  # the global-batch loss
        new = sgd(model.parameters(), lr)
        model.w1, model.b1, model.w2, model.b2 = new
        losses.append(float(loss.numpy()))
    return losses


device, out = sys.argv[1], sys.argv[2]
dist.init_parallel_env()
fw.set_device(device)
rank, n = dist.get_rank(), dist.get_world_size()
rng = np.random.default_rng(7)
X = rng.normal(size=(40, 6)).astype(np.float32)
Y = np.stack([np.sin(X[:, 0]), X[:, 1] * X[:, 2], np.cos(X[:, 3])], 1).astype(np.float32)
local_b = 4

# rank 1 starts from other weights: DataParallel must broadcast rank 0's
model = MLP(seed=3 + rank)
dp = dist.DataParallel(model)
sampler = dist.DistributedBatchSampler(list(range(len(X))), batch_size=local_b, shuffle=True, seed=5)
dp_losses = []
for epoch in range(3):
    sampler.set_epoch(epoch)
    dp_losses += train(model, list(sampler), (X, Y), dp=dp)

if rank == 0:
    ref = MLP(seed=3)
    one = dist.DistributedBatchSampler(
        list(range(len(X))), batch_size=local_b * n, num_replicas=1, rank=0, shuffle=True, seed=5
    )
    ref_losses = []
    for epoch in range(3):
        one.set_epoch(epoch)
        ref_losses += train(ref, list(one), (X, Y))
    with open(os.path.join(out, "dp.json"), "w") as f:
        json.dump(
            {
                "dp": dp_losses,
                "ref": ref_losses,
                "n": n,
                "dp_w": [p.numpy().ravel().tolist() for p in model.parameters()],
                "ref_w": [p.numpy().ravel().tolist() for p in ref.parameters()],
            },
            f,
        )
