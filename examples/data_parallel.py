"""Data-parallel training of the examples (``--data-parallel`` of the example scripts).

Every rank builds the same task (same seed: same weights, same data stream), draws the same
global batch each step and trains on its own ``1/N`` of the rows; ``fw.DataParallel`` averages
the gradients during backward (``apply_collective_grads()`` is then a no-op; it averages where
the step ran without the eager tape, ``static=True``), so the run follows the single-process
curve of the same global batch. The loss reported is the global one (the average over ranks).

    oarlock launch -n 2 examples/train_tiny_llama.py --device cpu --data-parallel
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import framework as fw
import framework.distributed as dist


def shard(t: fw.Tensor, rank: int, nranks: int) -> fw.Tensor:
    """Rank ``rank``'s rows of a global batch (the batch size must divide evenly)."""
    n = t.shape[0]
    if n % nranks:
        raise ValueError(
            f"[examples] the global batch of {n} rows does not split over {nranks} ranks; use a divisor of {n}"
        )
    k = n // nranks
    return t[rank * k : (rank + 1) * k]


def train_steps_data_parallel(
    name: str,
    steps: int,
    seed: int = 0,
    device: Any = None,
    on_step: Callable[[int, float], None] | None = None,
    static: bool = False,
) -> list[float]:
    """Like ``conformance.models.train_steps``, on every rank of the launch; returns the global losses."""
    from conformance.models import build

    dist.init_parallel_env()
    rank, nranks = dist.get_rank(), dist.get_world_size()
    task = build(name, seed, device, static)
    dev = fw.get_device() if device is None else device
    model = fw.DataParallel(task.model)
    losses = []
    with fw.device(dev):
        for step in range(steps):
            x, y = task.batch(step)  # the same global batch on every rank
            loss = task.loss(model(shard(x, rank, nranks)), shard(y, rank, nranks))
            loss.backward()
            model.apply_collective_grads()
            task.update()
            global_loss = loss.detach()
            dist.all_reduce(global_loss, op=dist.ReduceOp.AVG)
            value = float(global_loss.item())
            if not math.isfinite(value):
                raise FloatingPointError(f"[examples] {name}: the loss became {value} at step {step}")
            losses.append(value)
            if on_step is not None:
                on_step(step, value)
    return losses
