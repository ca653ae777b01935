"""Samplers: the order of sample indices, and batches of them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from adapter_api import OpArgumentError

from .. import _world
from .._src.ops.random import Generator, randperm


class Sampler:
    """Base class: iterates over sample indices of ``data_source``."""

    def __init__(self, data_source: Any = None) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        raise NotImplementedError("need __iter__")

    def __len__(self) -> int:
        return len(self.data_source)


class SequenceSampler(Sampler):
    """0, 1, ..., len - 1."""

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))


class RandomSampler(Sampler):
    """A fresh random permutation each epoch (from ``generator``, else the global Philox
    generator, so ``fw.seed`` makes it reproducible); ``replacement`` draws ``num_samples``
    indices independently."""

    def __init__(
        self,
        data_source: Any,
        replacement: bool = False,
        num_samples: int | None = None,
        generator: Generator | None = None,
    ) -> None:
        super().__init__(data_source)
        self.replacement, self.generator = replacement, generator
        self._num = num_samples
        if num_samples is not None and not replacement:
            raise OpArgumentError("[RandomSampler] num_samples is only allowed with replacement=True")

    def __len__(self) -> int:
        return self._num if self._num is not None else len(self.data_source)

    def __iter__(self) -> Iterator[int]:
        n = len(self.data_source)
        if self.replacement:
            from .._src.ops.random import randint

            return iter(randint(0, n, [len(self)], generator=self.generator).tolist())
        return iter(randperm(n, generator=self.generator).tolist())


class BatchSampler(Sampler):
    """Lists of ``batch_size`` indices from ``sampler`` (or from a Sequence/RandomSampler of
    ``dataset`` chosen by ``shuffle``); ``drop_last`` drops a short final batch."""

    def __init__(
        self,
        dataset: Any = None,
        sampler: Sampler | None = None,
        shuffle: bool = False,
        batch_size: int = 1,
        drop_last: bool = False,
    ) -> None:
        if (dataset is None) == (sampler is None):
            raise OpArgumentError("[BatchSampler] give exactly one of dataset= and sampler=")
        if not isinstance(batch_size, int) or batch_size <= 0:
            raise OpArgumentError(f"[BatchSampler] batch_size must be a positive int, got {batch_size!r}")
        self.sampler = (
            sampler
            if sampler is not None
            else (RandomSampler(dataset) if shuffle else SequenceSampler(dataset))
        )
        self.batch_size, self.drop_last = batch_size, bool(drop_last)

    def __iter__(self) -> Iterator[list[int]]:
        batch: list[int] = []
        for i in self.sampler:
            batch.append(int(i))
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self) -> int:
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)


class DistributedBatchSampler(BatchSampler):
    """The batches of rank ``rank`` of ``num_replicas``, laid out and shuffled as Paddle's
    ``paddle.io.DistributedBatchSampler``.

    The indices are padded by wrapping around to a multiple of ``num_replicas`` (every rank
    gets ``ceil(len(dataset) / num_replicas)`` samples), then shuffled when ``shuffle`` (numpy's
    ``RandomState(seed + epoch)``, the same on every rank; the epoch advances after each pass,
    or is set by :meth:`set_epoch`). Global batch ``k`` is the ``batch_size * num_replicas``
    indices from ``k * batch_size * num_replicas``, and rank ``r`` takes its ``r``-th slice of
    ``batch_size``; the short last global batch is split evenly across the ranks. So N ranks
    with ``batch_size=b`` together see the batches one process sees with ``batch_size=N*b``.
    Rank and size default to ``fw.distributed``'s; ``seed`` (not in Paddle, default 0 as there)
    changes every epoch's shuffle.

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
        if not isinstance(batch_size, int) or batch_size <= 0:
            raise OpArgumentError(
                f"[DistributedBatchSampler] batch_size must be a positive int, got {batch_size!r}"
            )
        self.dataset, self.batch_size = dataset, batch_size
        self.nranks = int(_world.get_world_size() if num_replicas is None else num_replicas)
        self.local_rank = int(_world.get_rank() if rank is None else rank)
        if not 0 <= self.local_rank < self.nranks:
            raise OpArgumentError(
                f"[DistributedBatchSampler] rank must be in [0, {self.nranks}), got {self.local_rank}"
            )
        self.shuffle, self.drop_last = shuffle, bool(drop_last)
        self.seed, self.epoch = int(seed), 0
        self.num_samples = -(-len(dataset) // self.nranks)
        self.total_size = self.num_samples * self.nranks

    def set_epoch(self, epoch: int) -> None:
        """The epoch whose shuffle the next pass uses (the same on every rank)."""
        self.epoch = int(epoch)

    def _indices(self) -> list[int]:
        """This rank's ``num_samples`` indices, in order."""
        n = len(self.dataset)
        idx = list(range(n))
        idx += idx[: self.total_size - n]
        if self.shuffle:
            np.random.RandomState(self.seed + self.epoch).shuffle(idx)
            self.epoch += 1
        if self.nranks == 1:
            return idx
        b, r, ranks = self.batch_size, self.local_rank, self.nranks
        last = self.total_size % (b * ranks)  # the short last global batch, split evenly
        mine: list[int] = []
        for start in range(r * b, self.total_size - last, b * ranks):
            mine += idx[start : start + b]
        share = last // ranks
        tail = idx[self.total_size - last :]
        return mine + tail[r * share : (r + 1) * share]

    def __iter__(self) -> Iterator[list[int]]:  # type: ignore[override]
        idx = self._indices()
        for s in range(0, len(idx), self.batch_size):
            b = idx[s : s + self.batch_size]
            if len(b) == self.batch_size or not self.drop_last:
                yield b

    def __len__(self) -> int:
        if self.drop_last:
            return self.num_samples // self.batch_size
        return -(-self.num_samples // self.batch_size)
