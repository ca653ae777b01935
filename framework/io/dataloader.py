"""``DataLoader``: batches from a dataset through a batch sampler, stacked by ``collate_fn``,
in this process or in worker processes (``num_workers``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from adapter_api import OpArgumentError

from .._src import device as _dev
from .._src.ops.random import Generator
from .._src.ops.shape import stack
from .._src.tensor import Tensor, to_tensor
from ._multiprocess import MultiProcessIterator, WorkerPool, mp_context
from ._worker import same_dtypes
from .dataset import IterableDataset
from .sampler import BatchSampler, RandomSampler, SequenceSampler


def default_collate_fn(batch: Sequence[Any], _where: str = "") -> Any:
    """Stack a list of samples field by field: tensors with ``fw.stack``, numpy arrays and
    numbers into a tensor, dicts key by key, tuples/lists position by position.

    A field whose samples differ in dtype (a float32 array in one sample, an int64 one in
    another) raises ``OpArgumentError`` naming the field, where ``np.stack`` (Paddle's collate)
    would promote to float64 without a word; Python ints and floats together give float64
    as ``np.array`` does.

    >>> import framework as fw, numpy as np
    >>> b = fw.io.default_collate_fn([(np.ones(2, np.float32), 0), (np.zeros(2, np.float32), 1)])
    >>> b[0].dtype, b[1].tolist()
    (dtype('float32'), [0, 1])
    """
    first = batch[0]
    if isinstance(first, Tensor):
        same_dtypes(batch, _where)
        return stack(list(batch), axis=0)
    if isinstance(first, (np.ndarray, np.number, int, float, bool)):
        same_dtypes(batch, _where)
        return to_tensor(np.stack([np.asarray(b) for b in batch]))
    if isinstance(first, Mapping):
        return {k: default_collate_fn([b[k] for b in batch], f"{_where}[{k!r}]") for k in first}
    if isinstance(first, (tuple, list)):
        if any(len(b) != len(first) for b in batch):
            raise OpArgumentError(
                f"[DataLoader] samples have different numbers of fields: {sorted({len(b) for b in batch})}"
            )
        return [default_collate_fn([b[i] for b in batch], f"{_where}[{i}]") for i in range(len(first))]
    if isinstance(first, (str, bytes)):
        return list(batch)
    raise OpArgumentError(
        f"[DataLoader] cannot collate samples of type {type(first).__name__}; pass collate_fn="
    )


class DataLoader:
    """Iterate over ``dataset`` in batches.

    ``batch_size``/``shuffle``/``drop_last`` build a :class:`BatchSampler` (or pass
    ``batch_sampler``); shuffling uses ``generator`` (a ``fw.Generator``), else the global
    Philox generator, so ``fw.seed(n)`` makes the order reproducible. ``batch_size=None``
    yields single samples.

    ``num_workers=0`` loads in this process. ``num_workers=N`` starts N worker processes
    (``multiprocessing_context``: ``"forkserver"`` where the platform has it, else
    ``"spawn"``; ``"fork"`` is refused) that load and collate on the host and send numpy
    batches back; the dataset, ``collate_fn`` and ``worker_init_fn`` must be picklable. Each
    worker keeps ``prefetch_factor`` batches in flight; batches come in the sampler's order,
    equal to what ``num_workers=0`` gives. Each epoch every worker is seeded with
    ``base + worker_id`` (Python's ``random``, numpy's global generator and ``fw.seed``),
    ``base`` derived from the state of ``generator`` (else the global generator) and the epoch
    count, nothing drawn (later epochs' orders stay num_workers=0's), so ``fw.seed(n)`` makes
    the workers' random streams distinct and reproducible; ``worker_init_fn(worker_id)`` runs
    once in each worker after its first seeding (what it seeds holds); :func:`get_worker_info` tells a
    worker its id (an IterableDataset uses it to shard: each worker iterates its own copy,
    and batches come round-robin over the workers). With ``use_buffer_reader`` (the default)
    the arrays are copied to the current device on a copy stream (one per device), the next
    batch's copies running while the model computes on this one (synchronous copies on a
    device without streams). A worker's exception is raised here, naming the worker and the
    sample index; the workers are stopped at the end of each epoch (kept with
    ``persistent_workers=True``), on an error, on ``break``, when the iterator is
    garbage-collected, and on Ctrl-C. ``timeout`` (seconds) bounds the wait for a batch; with
    ``timeout=0`` the bound is ``OARLOCK_DATALOADER_STALL_TIMEOUT`` (seconds, default 600; 0:
    none). A worker that dies is reported at once with its exit code; one that sends nothing
    within the bound is reported by id and pid, saying whether it still beats (a heartbeat
    thread: busy in the dataset) or not (stopped, or stuck in native code).

    >>> import framework as fw
    >>> ds = fw.io.TensorDataset([fw.arange(6)])
    >>> [b[0].tolist() for b in fw.io.DataLoader(ds, batch_size=4, num_workers=2)]
    [[0, 1, 2, 3], [4, 5]]
    """

    def __init__(
        self,
        dataset: Any,
        feed_list: Any = None,
        places: Any = None,
        return_list: bool = True,
        batch_sampler: Any = None,
        batch_size: int | None = 1,
        shuffle: bool = False,
        drop_last: bool = False,
        collate_fn: Callable[[list[Any]], Any] | None = None,
        num_workers: int = 0,
        use_buffer_reader: bool = True,
        prefetch_factor: int = 2,
        use_shared_memory: bool = True,
        timeout: int = 0,
        worker_init_fn: Any = None,
        persistent_workers: bool = False,
        generator: Generator | None = None,
        multiprocessing_context: str | None = None,
    ) -> None:
        if not isinstance(num_workers, int) or num_workers < 0:
            raise OpArgumentError(f"[DataLoader] num_workers must be an int >= 0, got {num_workers!r}")
        if num_workers and (not isinstance(prefetch_factor, int) or prefetch_factor < 1):
            raise OpArgumentError(
                f"[DataLoader] prefetch_factor must be an int >= 1 with num_workers > 0, got {prefetch_factor!r}"
            )
        if timeout < 0:
            raise OpArgumentError(f"[DataLoader] timeout must be >= 0 seconds, got {timeout}")
        if num_workers:
            mp_context(multiprocessing_context)  # refuse 'fork' here, not at the first batch
        self.dataset = dataset
        self._default_collate = collate_fn is None
        self.collate_fn = collate_fn or default_collate_fn
        self.num_workers, self.prefetch_factor, self.timeout = num_workers, prefetch_factor, timeout
        self.persistent_workers, self.worker_init_fn = bool(persistent_workers), worker_init_fn
        self.use_buffer_reader, self.multiprocessing_context = (
            bool(use_buffer_reader),
            multiprocessing_context,
        )
        self.generator, self.places = generator, places
        self._pool: WorkerPool | None = None
        self._worker_epochs = 0  # epochs served by workers: part of their seed
        self.iterable = isinstance(dataset, IterableDataset)
        self.batch_size, self.drop_last = batch_size, drop_last
        if self.iterable:
            if shuffle or batch_sampler is not None:
                raise OpArgumentError(
                    "[DataLoader] an IterableDataset cannot be shuffled or given a batch_sampler"
                )
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
        self._auto_collate = self.batch_sampler is not None or (self.iterable and batch_size is not None)

    def __len__(self) -> int:
        if self.iterable:
            raise TypeError("[DataLoader] an IterableDataset has no length; iterate over the loader instead")
        if self.batch_sampler is None:
            return len(self.dataset)
        return len(self.batch_sampler)

    def __iter__(self) -> Iterator[Any]:
        if self.num_workers:
            # persistent workers serve one epoch after another; otherwise each iterator has
            # its own (two iterators over one loader then run side by side)
            if self._pool is not None and self._pool.persistent and not self.persistent_workers:
                self._pool.shutdown()  # persistent_workers was switched off
            if not self.persistent_workers or self._pool is None or not self._pool.alive:
                self._pool = WorkerPool(self)
            device = (
                _dev.get_device()
                if self.places is None
                else _dev.parse(self.places[0] if isinstance(self.places, (list, tuple)) else self.places)
            )
            return MultiProcessIterator(self, self._pool, device)
        return self._iter_here()

    def worker_pids(self) -> list[int]:
        """The process ids of the running workers (empty when none run)."""
        return self._pool.pids() if self._pool is not None and self._pool.alive else []

    def _iter_here(self) -> Iterator[Any]:
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
