"""Datasets: map-style (``__getitem__``/``__len__``) and iterable, with Paddle's names."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from adapter_api import OpArgumentError

from .._src.ops.random import Generator, randperm
from .._src.tensor import Tensor


class Dataset:
    """A map-style dataset: subclass it and define ``__getitem__(i)`` and ``__len__()``."""

    def __getitem__(self, idx: int) -> Any:
        raise NotImplementedError(f"need __getitem__ in {type(self).__name__}")

    def __len__(self) -> int:
        raise NotImplementedError(f"need __len__ in {type(self).__name__}")


class IterableDataset(Dataset):
    """A stream of samples: subclass it and define ``__iter__()``."""

    def __iter__(self) -> Iterator[Any]:
        raise NotImplementedError(f"need __iter__ in {type(self).__name__}")

    def __getitem__(self, idx: int) -> Any:
        raise OpArgumentError(
            f"[IterableDataset] {type(self).__name__} is iterable, not indexable; iterate over it or use a DataLoader"
        )


class TensorDataset(Dataset):
    """Samples are the i-th rows of each tensor (all with the same first dimension).

    Pickled (to reach DataLoader worker processes) it carries the tensors' host data: in a
    worker, samples are rows of numpy arrays, which the DataLoader makes into tensors again.
    """

    def __init__(self, tensors: Sequence[Tensor]) -> None:
        self.tensors = list(tensors)
        if not self.tensors:
            raise OpArgumentError("[TensorDataset] needs at least one tensor")
        n = self.tensors[0].shape[0] if self.tensors[0].ndim else None
        for i, t in enumerate(self.tensors):
            if not isinstance(t, Tensor) or t.ndim == 0 or t.shape[0] != n:
                raise OpArgumentError(
                    f"[TensorDataset] tensor {i} must be a Tensor with first dimension {n}, got {getattr(t, 'shape', type(t).__name__)}"
                )
        self._n = int(n or 0)

    def __getitem__(self, idx: int) -> tuple[Tensor, ...]:
        if not -self._n <= idx < self._n:
            raise IndexError(f"[TensorDataset] index {idx} out of range for {self._n} samples")
        return tuple(t[idx] for t in self.tensors)

    def __len__(self) -> int:
        return self._n

    def __getstate__(self) -> dict[str, Any]:
        return {"tensors": [t.numpy() if isinstance(t, Tensor) else t for t in self.tensors], "_n": self._n}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.tensors, self._n = state["tensors"], state["_n"]


class Subset(Dataset):
    """The samples of ``dataset`` at ``indices``."""

    def __init__(self, dataset: Dataset, indices: Sequence[int]) -> None:
        self.dataset, self.indices = dataset, [int(i) for i in indices]

    def __getitem__(self, idx: int) -> Any:
        return self.dataset[self.indices[idx]]

    def __len__(self) -> int:
        return len(self.indices)


class ComposeDataset(Dataset):
    """Sample i is the fields of sample i of every dataset, concatenated (equal lengths)."""

    def __init__(self, datasets: Sequence[Dataset]) -> None:
        self.datasets = list(datasets)
        if not self.datasets:
            raise OpArgumentError("[ComposeDataset] needs at least one dataset")
        lens = {len(d) for d in self.datasets}  # type: ignore[arg-type]
        if len(lens) != 1:
            raise OpArgumentError(
                f"[ComposeDataset] datasets must have equal lengths, got {[len(d) for d in self.datasets]}"
            )  # type: ignore[arg-type]

    def __getitem__(self, idx: int) -> tuple[Any, ...]:
        out: list[Any] = []
        for d in self.datasets:
            s = d[idx]
            out.extend(s if isinstance(s, (tuple, list)) else [s])
        return tuple(out)

    def __len__(self) -> int:
        return len(self.datasets[0])  # type: ignore[arg-type]


def random_split(
    dataset: Dataset, lengths: Sequence[Any], generator: Generator | None = None
) -> list[Subset]:
    """Split into non-overlapping random subsets of the given lengths (ints summing to
    len(dataset), or fractions summing to 1); the permutation comes from the Philox generator."""
    n = len(dataset)  # type: ignore[arg-type]
    lens = list(lengths)
    if lens and all(isinstance(v, float) for v in lens) and abs(sum(lens) - 1.0) < 1e-6:
        counts = [int(np.floor(n * f)) for f in lens]
        for i in range(n - sum(counts)):
            counts[i % len(counts)] += 1
        lens = counts
    if sum(lens) != n or any(v < 0 for v in lens):
        raise OpArgumentError(
            f"[random_split] lengths {list(lengths)} must be non-negative and sum to the dataset size {n} (or be fractions summing to 1)"
        )
    perm = randperm(n, generator=generator).tolist()
    out, start = [], 0
    for v in lens:
        out.append(Subset(dataset, perm[start : start + v]))
        start += v
    return out
