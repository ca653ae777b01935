"""``fw.io`` (Paddle's ``paddle.io``): datasets, samplers and the DataLoader.

>>> import framework as fw
>>> ds = fw.io.TensorDataset([fw.arange(10).reshape([5, 2]), fw.arange(5)])
>>> loader = fw.io.DataLoader(ds, batch_size=2, shuffle=False, drop_last=True)
>>> [y.tolist() for _, y in loader]
[[0, 1], [2, 3]]
"""

# ruff: noqa: F401  (re-exports)
from __future__ import annotations

from ._multiprocess import DataLoaderWorkerError
from ._worker import WorkerInfo, get_worker_info
from .dataloader import DataLoader, default_collate_fn
from .dataset import ComposeDataset, Dataset, IterableDataset, Subset, TensorDataset, random_split
from .sampler import BatchSampler, DistributedBatchSampler, RandomSampler, Sampler, SequenceSampler

__all__ = [
    "Dataset",
    "IterableDataset",
    "TensorDataset",
    "Subset",
    "ComposeDataset",
    "random_split",
    "Sampler",
    "SequenceSampler",
    "RandomSampler",
    "BatchSampler",
    "DistributedBatchSampler",
    "DataLoader",
    "default_collate_fn",
    "get_worker_info",
    "WorkerInfo",
    "DataLoaderWorkerError",
]
