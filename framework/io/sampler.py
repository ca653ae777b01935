"""Samplers: the order of sample indices, and batches of them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from adapter_api import OpArgumentError

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
    """The batches of rank ``rank`` of ``num_replicas``: the (shuffled, per ``set_epoch``)
    indices are padded to a multiple of num_replicas and each rank takes every
    num_replicas-th one. Rank and size default to ``fw.distributed``'s."""

    def __init__(
        self,
        dataset: Any,
        batch_size: int,
        num_replicas: int | None = None,
        rank: int | None = None,
        shuffle: bool = False,
        drop_last: bool = False,
    ) -> None:
        if num_replicas is None or rank is None:
            from .. import distributed as dist

            num_replicas = dist.get_world_size() if num_replicas is None else num_replicas
            rank = dist.get_rank() if rank is None else rank
        if not 0 <= rank < num_replicas:
            raise OpArgumentError(
                f"[DistributedBatchSampler] rank must be in [0, {num_replicas}), got {rank}"
            )
        self.dataset, self.nranks, self.local_rank = dataset, int(num_replicas), int(rank)
        self.shuffle, self.epoch = shuffle, 0
        self.batch_size, self.drop_last = batch_size, bool(drop_last)
        n = len(dataset)
        self.num_samples = -(-n // self.nranks)
        self.total_size = self.num_samples * self.nranks
        self.sampler = self  # type: ignore[assignment]

    def set_epoch(self, epoch: int) -> None:
        self.epoch = int(epoch)

    def _indices(self) -> list[int]:
        n = len(self.dataset)
        if self.shuffle:
            idx = randperm(n, generator=Generator(self.epoch)).tolist()
        else:
            idx = list(range(n))
        idx += idx[: self.total_size - n]
        return idx[self.local_rank : self.total_size : self.nranks]

    def __iter__(self) -> Iterator[list[int]]:  # type: ignore[override]
        idx = self._indices()
        for s in range(0, len(idx), self.batch_size):
            b = idx[s : s + self.batch_size]
            if len(b) == self.batch_size or not self.drop_last:
                yield b

    def __len__(self) -> int:
        return (
            self.num_samples // self.batch_size if self.drop_last else -(-self.num_samples // self.batch_size)
        )
