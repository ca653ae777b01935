"""A batch sampler that gives each rank its share of every global batch."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import numpy as np

from adapter_api import OpArgumentError


class DistributedBatchSampler:
    """Batches of dataset indices for one rank (after Paddle's ``DistributedBatchSampler``).

    Global batch ``k`` is the ``batch_size * num_replicas`` indices starting at
    ``k * batch_size * num_replicas`` (after an optional shuffle that is the same on every
    rank); rank ``r`` gets its ``r``-th slice of ``batch_size``. So N ranks with
    ``batch_size=b`` see, together, exactly the batches one process with ``batch_size=N*b``
    sees. Indices are padded by wrapping around so every rank gets the same number of samples
    (unless ``drop_last``).

    >>> s = DistributedBatchSampler(list(range(10)), batch_size=2, num_replicas=2, rank=1)
    >>> list(s)
    [[2, 3], [6, 7], [9]]
    """

    def __init__(
        self,
        dataset: Any,
        batch_size: int,
        num_replicas: int | None = None,
        rank: int | None = None,
        shuffle: bool = False,
        drop_last: bool = False,
        seed: int = 0,
    ) -> None:
        from . import collective

        if batch_size < 1:
            raise OpArgumentError(f"[DistributedBatchSampler] batch_size must be positive, got {batch_size}")
        self.dataset = dataset
        self.batch_size = int(batch_size)
        self.nranks = int(num_replicas if num_replicas is not None else collective.get_world_size())
        self.local_rank = int(rank if rank is not None else collective.get_rank())
        if not 0 <= self.local_rank < self.nranks:
            raise OpArgumentError(
                f"[DistributedBatchSampler] rank must be in [0, {self.nranks}), got {self.local_rank}"
            )
        self.shuffle = shuffle
        self.drop_last = drop_last
        self.seed = seed
        self.epoch = 0
        n = len(dataset)
        per_rank = n // self.nranks if drop_last else math.ceil(n / self.nranks)
        self.num_samples = per_rank
        self.total_size = per_rank * self.nranks

    def set_epoch(self, epoch: int) -> None:
        """Shuffle differently each epoch (the same on every rank)."""
        self.epoch = int(epoch)

    def _indices(self) -> np.ndarray:
        n = len(self.dataset)
        idx = np.arange(n)
        if self.shuffle:
            np.random.RandomState(self.seed + self.epoch).shuffle(idx)
        if self.total_size > n:
            idx = np.concatenate([idx, idx[: self.total_size - n]]) if n else idx
        return idx[: self.total_size]

    def __iter__(self) -> Iterator[list[int]]:
        idx = self._indices()
        b, r, n = self.batch_size, self.local_rank, self.nranks
        full = len(idx) // (b * n)
        for k in range(full):
            start = (k * n + r) * b
            yield idx[start : start + b].tolist()
        rest = idx[full * b * n :]
        if len(rest):
            # the last, short global batch: split evenly across the ranks
            share = len(rest) // n
            mine = rest[r * share : (r + 1) * share]
            if len(mine) and (len(mine) == b or not self.drop_last):
                yield mine.tolist()

    def __len__(self) -> int:
        b, n = self.batch_size, self.nranks
        full = self.total_size // (b * n)
        share = (self.total_size - full * b * n) // n
        return full + (1 if share and (share == b or not self.drop_last) else 0)
