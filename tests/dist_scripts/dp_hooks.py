"""Under mpiexec: DataParallel averages gradients during ``loss.backward()`` (no explicit call).

``python dp_hooks.py train DEVICE OUT``: every rank trains the same model (same seed) on its own
data for 20 steps with ``loss.backward(); opt.step(); opt.clear_grad()``, then checks
``no_sync`` accumulation, ``find_unused_parameters`` and ``apply_collective_grads`` after
backward. Rank 0 also trains the model alone on the global batch (the reference) and on its
own rows only (what training without averaging gives). Each rank writes ``OUT/rank{r}.npz``.

``python dp_hooks.py drift DEVICE OUT`` (run with ``OARLOCK_DISTRIBUTED_DEBUG=1``): weights are
compared every 2 forwards; after the 5th step rank 1 changes one parameter; each rank writes
the error it got to ``OUT/drift{r}.txt``.
"""

from __future__ import annotations

import os
import sys
import warnings

import numpy as np

import framework as fw
import framework.distributed as dist

STEPS = 20
B = 4  # rows per rank


def data(rank: int, step: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(1000 * rank + step)
    x = rng.normal(size=(B, 6)).astype(np.float32)
    return x, np.sin(x[:, :2] * 1.5).astype(np.float32)


def make_model() -> fw.nn.Layer:
    fw.seed(11)
    return fw.nn.Sequential(fw.nn.Linear(6, 16), fw.nn.Tanh(), fw.nn.Linear(16, 2))


def train(model, rows, steps: int = STEPS) -> list[np.ndarray]:
    """``rows(step) -> (x, y)``; Adam with the loss a mean over the rows."""
    opt = fw.optimizer.Adam(0.01, parameters=model.parameters())
    for step in range(steps):
        x, y = rows(step)
        loss = ((model(fw.to_tensor(x)) - fw.to_tensor(y)) ** 2).mean()
        loss.backward()
        opt.step()
        opt.clear_grad()
    return [p.numpy() for p in model.parameters()]


class Heads(fw.nn.Layer):
    """A trunk, a head every rank uses, one only rank 0 uses and one no rank uses."""

    def __init__(self) -> None:
        super().__init__()
        fw.seed(5)
        self.trunk = fw.nn.Linear(6, 4)
        self.used = fw.nn.Linear(4, 1)
        self.rank0 = fw.nn.Linear(4, 1)
        self.never = fw.nn.Linear(4, 1)

    def forward(self, x, with_rank0: bool):
        h = fw.tanh(self.trunk(x))
        out = self.used(h)
        return out + self.rank0(h) if with_rank0 else out


def main() -> None:
    mode, device, out = sys.argv[1], sys.argv[2], sys.argv[3]
    dist.init_parallel_env()
    fw.set_device(device)
    rank, n = dist.get_rank(), dist.get_world_size()
    if mode == "drift":
        drift(rank, out)
        return
    res: dict[str, np.ndarray] = {}

    # 1. 20 steps, averaged by backward alone
    dp = fw.DataParallel(make_model())
    for i, p in enumerate(train(dp, lambda s: data(rank, s))):
        res[f"dp{i}"] = p
    if rank == 0:
        glob = lambda s: tuple(np.concatenate(parts) for parts in zip(*(data(r, s) for r in range(n))))  # noqa: E731
        for i, p in enumerate(train(make_model(), glob)):
            res[f"ref{i}"] = p
        for i, p in enumerate(train(make_model(), lambda s: data(0, s))):
            res[f"alone{i}"] = p

    # 2. no_sync: two micro-batches accumulated, averaged by the second backward
    dp = fw.DataParallel(make_model())
    (xa, ya), (xb, yb) = data(rank, 100), data(rank, 101)
    with dp.no_sync():
        ((dp(fw.to_tensor(xa)) - fw.to_tensor(ya)) ** 2).mean().backward()
    res["nosync_local"] = dp.parameters()[0].grad.numpy()  # this rank's first micro-batch only
    ((dp(fw.to_tensor(xb)) - fw.to_tensor(yb)) ** 2).mean().backward()
    grads = [p.grad for p in dp.parameters()]
    dp.apply_collective_grads()  # backward did it: a no-op
    res["apply_kept"] = np.array([p.grad is g for p, g in zip(dp.parameters(), grads)])
    for i, g in enumerate(grads):
        res[f"nosync{i}"] = g.numpy()
    if rank == 0:  # the reference: each rank's two micro-batches, summed, averaged over ranks
        one = make_model()
        for r in range(n):
            for x, y in (data(r, 100), data(r, 101)):
                ((one(fw.to_tensor(x)) - fw.to_tensor(y)) ** 2).mean().backward()
        for i, p in enumerate(one.parameters()):
            res[f"nosync_ref{i}"] = p.grad.numpy() / n

    # 3. unused parameters
    x, y = data(rank, 200)
    for find in (True, False):
        dp = fw.DataParallel(Heads(), find_unused_parameters=find)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            ((dp(fw.to_tensor(x), rank == 0) - fw.to_tensor(y)) ** 2).mean().backward()
        tag = "find" if find else "nofind"
        res[f"{tag}_rank0_w"] = dp.rank0.weight.grad.numpy()
        res[f"{tag}_never_none"] = np.array(dp.never.weight.grad is None)
        if not find:
            res["nofind_never_w"] = dp.never.weight.grad.numpy()
            res["nofind_warned"] = np.array(
                any("find_unused_parameters=True" in str(w.message) for w in caught)
            )
    if rank == 0:  # rank 0's own gradient of the head only it uses
        local = Heads()
        ((local(fw.to_tensor(x), True) - fw.to_tensor(y)) ** 2).mean().backward()
        res["rank0_local_w"] = local.rank0.weight.grad.numpy()
    np.savez(os.path.join(out, f"rank{rank}.npz"), **res)


def drift(rank: int, out: str) -> None:
    dp = fw.DataParallel(make_model(), check_every=2)
    opt = fw.optimizer.SGD(0.05, parameters=dp.parameters())
    msg = "no error"
    try:
        for step in range(10):
            x, y = data(rank, step)
            ((dp(fw.to_tensor(x)) - fw.to_tensor(y)) ** 2).mean().backward()
            opt.step()
            opt.clear_grad()
            if step == 4 and rank == 1:
                with fw.no_grad():
                    dp.parameters()[2].add_(fw.full([16, 2], 1e-6))
    except fw.OarlockError as exc:
        msg = f"step {step}: {exc}"
    with open(os.path.join(out, f"drift{rank}.txt"), "w") as f:
        f.write(msg)


main()
