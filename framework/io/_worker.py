"""The loop a DataLoader worker process runs, and what it sends back.

A worker is a separate process (started with ``spawn`` or ``forkserver``, never ``fork``:
the parent holds device contexts and threads). It loads samples on the host only — it never
touches a device — collates them into numpy arrays and sends each batch back pickled; the
main process turns the arrays into tensors. Tensors a dataset or ``collate_fn`` makes in the
worker travel as :class:`HostTensor` (their numpy data) and become tensors in the main process.
"""

from __future__ import annotations

import os
import pickle
import queue
import random
import signal
import threading
import time
import traceback
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from adapter_api import OpArgumentError

#: how often an idle worker checks that its parent is still alive (seconds)
_POLL_S = 0.5
#: how often a worker's heartbeat thread stamps the time (seconds)
HEARTBEAT_S = 0.5


def _beat(beats: Any, worker_id: int) -> None:
    """Stamp ``beats[worker_id]`` with the time, forever (a daemon thread of the worker): the
    main process tells a busy worker (it beats) from a frozen one (stopped, or stuck in native
    code that holds the GIL)."""
    while True:
        beats[worker_id] = time.time()
        time.sleep(HEARTBEAT_S)


@dataclass
class WorkerInfo:
    """What :func:`get_worker_info` returns inside a worker: its ``id`` (0..num_workers-1),
    ``num_workers``, the ``seed`` it was seeded with this epoch and its copy of ``dataset``.
    An IterableDataset uses it to read a distinct shard in each worker."""

    id: int
    num_workers: int
    seed: int
    dataset: Any


_INFO: list[WorkerInfo | None] = [None]


def get_worker_info() -> WorkerInfo | None:
    """Inside a DataLoader worker, its :class:`WorkerInfo`; in the main process, ``None``.

    >>> import framework as fw
    >>> fw.io.get_worker_info() is None
    True
    """
    return _INFO[0]


@dataclass
class HostTensor:
    """A tensor's host data on its way from a worker to the main process."""

    array: np.ndarray


@dataclass
class WorkerFailure:
    """An exception raised in a worker: which worker, which sample index, and the error."""

    worker_id: int
    index: Any
    exc_type: type | None
    type_name: str
    message: str
    traceback: str


def same_dtypes(batch: Sequence[Any], where: str) -> None:
    """Refuse a field whose samples have different dtypes (numpy arrays or scalars, tensors):
    stacking them would promote silently (float32 and int64 give float64). Python numbers
    alone follow ``np.array`` (ints and floats give float64, as Paddle's collate does)."""
    if all(isinstance(b, (int, float, bool)) for b in batch):
        return
    dts = [np.dtype(b.dtype) if hasattr(b, "dtype") else np.asarray(b).dtype for b in batch]
    for i, d in enumerate(dts):
        if d != dts[0]:
            raise OpArgumentError(
                f"[DataLoader] field {where or '(the sample)'} mixes dtypes across the batch: sample 0 is "
                f"{dts[0]}, sample {i} is {d}; stacking them would promote to {np.result_type(*dts)} without a word. "
                f"Give every sample one dtype (e.g. .astype('{dts[0]}') in the dataset) or pass collate_fn="
            )


def numpy_collate(batch: Sequence[Any], where: str = "") -> Any:
    """``default_collate_fn``'s rule on the host: fields stacked into numpy arrays (wrapped as
    :class:`HostTensor`, so they become tensors in the main process), dicts key by key,
    tuples/lists position by position, strings kept as lists."""
    from .._src.tensor import Tensor

    first = batch[0]
    if isinstance(first, Tensor):
        same_dtypes(batch, where)
        return HostTensor(np.stack([b.numpy() for b in batch]))
    if isinstance(first, (np.ndarray, np.number, int, float, bool)):
        same_dtypes(batch, where)
        return HostTensor(np.stack([np.asarray(b) for b in batch]))
    if isinstance(first, Mapping):
        return {k: numpy_collate([b[k] for b in batch], f"{where}[{k!r}]") for k in first}
    if isinstance(first, (tuple, list)):
        if any(len(b) != len(first) for b in batch):
            raise ValueError(
                f"[DataLoader] samples have different numbers of fields: {sorted({len(b) for b in batch})}"
            )
        return [numpy_collate([b[i] for b in batch], f"{where}[{i}]") for i in range(len(first))]
    if isinstance(first, (str, bytes)):
        return list(batch)
    raise TypeError(f"[DataLoader] cannot collate samples of type {type(first).__name__}; pass collate_fn=")


def to_wire(obj: Any) -> Any:
    """Replace every tensor in ``obj`` (nested in dicts, lists, tuples) by its host data."""
    from .._src.tensor import Tensor

    if isinstance(obj, Tensor):
        return HostTensor(obj.numpy())
    if isinstance(obj, Mapping):
        return {k: to_wire(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        out = [to_wire(v) for v in obj]
        return out if isinstance(obj, list) else tuple(out)
    return obj


def seed_worker(seed: int) -> None:
    """Seed every generator a dataset may use: Python's, numpy's global one and Oarlock's."""
    from .._src.ops.random import seed as fw_seed

    random.seed(seed)
    np.random.seed(seed % 2**32)
    fw_seed(seed)


def _failure(worker_id: int, index: Any, exc: BaseException) -> WorkerFailure:
    tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    exc_type: type | None = type(exc)
    try:
        pickle.loads(pickle.dumps(exc_type))
    except Exception:
        exc_type = None  # a class defined in a function: the main process gets a generic error
    return WorkerFailure(worker_id, index, exc_type, type(exc).__name__, str(exc), tb)


def _send(
    result_queue: Any, epoch: int, send_idx: int, worker_id: int, kind: str, payload: Any, index: Any
) -> None:
    # NOTE: pickled here, not in the queue's feeder thread: a batch that cannot be pickled
    # must become an error the main process sees, not a message lost in a background thread.
    try:
        data = pickle.dumps((epoch, send_idx, worker_id, kind, payload), protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as exc:
        wrapped = TypeError(
            f"[DataLoader] the batch could not be pickled to send it to the main process: {exc}"
        )
        data = pickle.dumps((epoch, send_idx, worker_id, "error", _failure(worker_id, index, wrapped)))
    result_queue.put(data)


def worker_loop(*args: Any) -> None:
    """A worker process's body (:func:`_serve`); what it sent is written to its result pipe
    before it exits."""
    try:
        _serve(*args)
    finally:
        args[9].flush()  # the result writer (framework.io._result_pipe.ResultWriter)


def _serve(
    dataset: Any,
    collate_fn: Any,
    auto_collate: bool,
    iterable: bool,
    batch_size: int | None,
    drop_last: bool,
    worker_id: int,
    num_workers: int,
    index_queue: Any,
    result_queue: Any,
    init_fn: Any,
    beats: Any = None,
) -> None:
    """Serve requests from ``index_queue`` until ``None`` arrives or the parent dies.

    Requests: ``("epoch", epoch, seed)`` reseeds (and restarts an iterable dataset; the
    first one then calls ``init_fn(worker_id)``, so what it seeds overrides the seeding);
    ``("batch", epoch, send_idx, indices)`` loads a map-style batch; ``("next", epoch,
    send_idx)`` takes the next batch of an iterable dataset. Each answer is one pickled
    ``(epoch, send_idx, worker_id, kind, payload)`` with kind ``"data"``, ``"end"`` or
    ``"error"``.
    """
    import multiprocessing as mp

    # NOTE: Ctrl-C in a terminal reaches the whole process group; the main process handles it
    # and shuts the workers down, so a worker must not die half-way through a message.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    from .._src import device as _dev

    # a worker loads on the host: OARLOCK_DEVICE names the main process's device
    os.environ["OARLOCK_DEVICE"] = "cpu"
    if _dev._global_default[0] is not None and _dev._global_default[0].type != "cpu":
        _dev.set_device("cpu")
    if beats is not None:
        threading.Thread(target=_beat, args=(beats, worker_id), daemon=True, name="oarlock-heartbeat").start()
    parent = mp.parent_process()
    _INFO[0] = WorkerInfo(worker_id, num_workers, 0, dataset)
    stream = None
    exhausted = False
    while True:
        try:
            msg = index_queue.get(timeout=_POLL_S)
        except queue.Empty:
            if parent is not None and not parent.is_alive():
                return  # the main process is gone: nobody will read what we make
            continue
        if msg is None:
            return
        kind, epoch = msg[0], msg[1]
        if kind == "epoch":
            seed = int(msg[2]) + worker_id
            _INFO[0] = WorkerInfo(worker_id, num_workers, seed, dataset)
            seed_worker(seed)
            stream, exhausted = None, False
            if init_fn is not None:  # once, after the first seeding: what it seeds holds
                fn, init_fn = init_fn, None
                try:
                    fn(worker_id)
                except Exception as exc:
                    _send(
                        result_queue,
                        -1,
                        -1,
                        worker_id,
                        "error",
                        _failure(worker_id, "worker_init_fn", exc),
                        None,
                    )
                    return
            continue
        send_idx = msg[2]
        if kind == "batch":
            _load_batch(dataset, collate_fn, auto_collate, msg[3], epoch, send_idx, worker_id, result_queue)
            continue
        # kind == "next": the next batch of this worker's copy of the stream
        if exhausted:
            _send(result_queue, epoch, send_idx, worker_id, "end", None, None)
            continue
        if stream is None:
            stream = iter(dataset)
        samples: list[Any] = []
        pos = 0
        try:
            for _ in range(batch_size or 1):
                samples.append(next(stream))
                pos += 1
        except StopIteration:
            exhausted = True
        except Exception as exc:
            _send(
                result_queue,
                epoch,
                send_idx,
                worker_id,
                "error",
                _failure(worker_id, f"stream item {pos}", exc),
                None,
            )
            exhausted = True
            continue
        if not samples or (exhausted and drop_last and batch_size is not None and len(samples) < batch_size):
            _send(result_queue, epoch, send_idx, worker_id, "end", None, None)
            continue
        try:
            out = _collate(samples, collate_fn, auto_collate and batch_size is not None)
        except Exception as exc:
            _send(
                result_queue,
                epoch,
                send_idx,
                worker_id,
                "error",
                _failure(worker_id, "collate_fn", exc),
                None,
            )
            continue
        _send(result_queue, epoch, send_idx, worker_id, "data", out, None)


def _collate(samples: list[Any], collate_fn: Any, auto_collate: bool) -> Any:
    if not auto_collate:
        return to_wire(samples[0])
    if collate_fn is None:
        return numpy_collate(samples)
    return to_wire(collate_fn(samples))


def _load_batch(
    dataset: Any,
    collate_fn: Any,
    auto_collate: bool,
    indices: Any,
    epoch: int,
    send_idx: int,
    worker_id: int,
    result_queue: Any,
) -> None:
    idx_list = indices if auto_collate else [indices]
    samples = []
    for i in idx_list:
        try:
            samples.append(dataset[i])
        except Exception as exc:
            _send(result_queue, epoch, send_idx, worker_id, "error", _failure(worker_id, i, exc), i)
            return
    try:
        out = _collate(samples, collate_fn, auto_collate)
    except Exception as exc:
        _send(
            result_queue,
            epoch,
            send_idx,
            worker_id,
            "error",
            _failure(worker_id, f"collate_fn of {list(idx_list)}", exc),
            None,
        )
        return
    _send(result_queue, epoch, send_idx, worker_id, "data", out, None)
