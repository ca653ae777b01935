"""``DataLoader``: batches from a dataset through a batch sampler, stacked by ``collate_fn``."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from adapter_api import OpArgumentError

from .._src.ops.random import Generator
from .._src.ops.shape import stack
from .._src.tensor import Tensor, to_tensor
from .dataset import IterableDataset
from .sampler import BatchSampler, RandomSampler, SequenceSampler


def default_collate_fn(batch: Sequence[Any]) -> Any:
    """Stack a list of samples field by field: tensors with ``fw.stack``, numpy arrays and
    numbers into a tensor, dicts key by key, tuples/lists position by position."""
    first = batch[0]
    if isinstance(first, Tensor):
        return stack(list(batch), axis=0)
    if isinstance(first, (np.ndarray, np.number, int, float, bool)):
        return to_tensor(np.stack([np.asarray(b) for b in batch]))
    if isinstance(first, Mapping):
        return {k: default_collate_fn([b[k] for b in batch]) for k in first}
    if isinstance(first, (tuple, list)):
        if any(len(b) != len(first) for b in batch):
            raise OpArgumentError(f"[DataLoader] samples have different numbers of fields: {sorted({len(b) for b in batch})}")
        return [default_collate_fn([b[i] for b in batch]) for i in range(len(first))]
    if isinstance(first, (str, bytes)):
        return list(batch)
    raise OpArgumentError(f"[DataLoader] cannot collate samples of type {type(first).__name__}; pass collate_fn=")


class DataLoader:
    """Iterate over ``dataset`` in batches.

    ``batch_size``/``shuffle``/``drop_last`` build a :class:`BatchSampler` (or pass
    ``batch_sampler``); shuffling uses ``generator`` (a ``fw.Generator``), else the global
    Philox generator, so ``fw.seed(n)`` makes the order reproducible. ``batch_size=None``
    yields single samples. Samples are loaded in this process: ``num_workers`` is accepted for
    Paddle compatibility and does not start worker processes.
    """

    def __init__(
        self, dataset: Any, feed_list: Any = None, places: Any = None, return_list: bool = True, batch_sampler: Any = None,
        batch_size: int | None = 1, shuffle: bool = False, drop_last: bool = False, collate_fn: Callable[[list[Any]], Any] | None = None,
        num_workers: int = 0, use_buffer_reader: bool = True, prefetch_factor: int = 2, use_shared_memory: bool = True,
        timeout: int = 0, worker_init_fn: Any = None, persistent_workers: bool = False, generator: Generator | None = None,
    ) -> None:
        if num_workers < 0:
            raise OpArgumentError(f"[DataLoader] num_workers must be >= 0, got {num_workers}")
        self.dataset = dataset
        self.collate_fn = collate_fn or default_collate_fn
        self.iterable = isinstance(dataset, IterableDataset)
        self.batch_size, self.drop_last = batch_size, drop_last
        if self.iterable:
            if shuffle or batch_sampler is not None:
                raise OpArgumentError("[DataLoader] an IterableDataset cannot be shuffled or given a batch_sampler")
            self.batch_sampler = None
        elif batch_sampler is not None:
            if batch_size not in (None, 1) or shuffle or drop_last:
                raise OpArgumentError("[DataLoader] batch_sampler excludes batch_size, shuffle and drop_last")
            self.batch_sampler = batch_sampler
        elif batch_size is None:
            self.batch_sampler = None
        else:
            sampler = RandomSampler(dataset, generator=generator) if shuffle else SequenceSampler(dataset)
            self.batch_sampler = BatchSampler(sampler=sampler, batch_size=batch_size, drop_last=drop_last)

    def __len__(self) -> int:
        if self.iterable:
            raise TypeError("[DataLoader] an IterableDataset has no length; iterate over the loader instead")
        if self.batch_sampler is None:
            return len(self.dataset)
        return len(self.batch_sampler)

    def __iter__(self) -> Iterator[Any]:
        if self.iterable:
            yield from self._iter_stream()
        elif self.batch_sampler is None:
            for i in range(len(self.dataset)):
                yield self.dataset[i]
        else:
            for idx in self.batch_sampler:
                yield self.collate_fn([self.dataset[i] for i in idx])

    def _iter_stream(self) -> Iterator[Any]:
        if self.batch_size is None:
            yield from self.dataset
            return
        batch: list[Any] = []
        for s in self.dataset:
            batch.append(s)
            if len(batch) == self.batch_size:
                yield self.collate_fn(batch)
                batch = []
        if batch and not self.drop_last:
            yield self.collate_fn(batch)
