"""``fw.io``: datasets, samplers and DataLoader batching, shuffling, drop_last and collate."""

from __future__ import annotations

import numpy as np
import pytest

import framework as fw
from framework import io


class Squares(io.Dataset):
    def __init__(self, n):
        self.n = n

    def __getitem__(self, i):
        return np.array([i], dtype=np.float32), i * i

    def __len__(self):
        return self.n


class Stream(io.IterableDataset):
    def __iter__(self):
        for i in range(7):
            yield {"x": np.float64(i), "y": np.array([i, -i])}


def test_tensor_dataset_and_batching():
    x = fw.to_tensor(np.arange(14.0).reshape(7, 2))
    y = fw.arange(7)
    ds = io.TensorDataset([x, y])
    assert len(ds) == 7 and ds[3][1].item() == 3 and ds[3][0].tolist() == [6.0, 7.0]
    batches = list(io.DataLoader(ds, batch_size=3))
    assert [b[1].tolist() for b in batches] == [[0, 1, 2], [3, 4, 5], [6]]
    assert batches[0][0].shape == (3, 2)
    dl = io.DataLoader(ds, batch_size=3, drop_last=True)
    assert len(dl) == 2 and [b[1].tolist() for b in dl] == [[0, 1, 2], [3, 4, 5]]
    with pytest.raises(fw.OpArgumentError, match=r"\[TensorDataset\]"):
        io.TensorDataset([x, fw.arange(3)])


def test_shuffle_is_a_seeded_permutation():
    ds = Squares(10)
    fw.seed(11)
    a = [b[1].tolist() for b in io.DataLoader(ds, batch_size=4, shuffle=True)]
    fw.seed(11)
    b = [b[1].tolist() for b in io.DataLoader(ds, batch_size=4, shuffle=True)]
    assert a == b
    flat = [v for batch in a for v in batch]
    assert sorted(flat) == [i * i for i in range(10)] and flat != [i * i for i in range(10)]
    g1, g2 = fw.Generator(3), fw.Generator(3)
    o1 = [b[1].tolist() for b in io.DataLoader(ds, batch_size=10, shuffle=True, generator=g1)]
    o2 = [b[1].tolist() for b in io.DataLoader(ds, batch_size=10, shuffle=True, generator=g2)]
    assert o1 == o2
    loader = io.DataLoader(ds, batch_size=10, shuffle=True, generator=fw.Generator(4))
    e1, e2 = (list(loader)[0][1].tolist() for _ in range(2))
    assert e1 != e2


def test_collate_and_custom_collate():
    dl = io.DataLoader(Stream(), batch_size=3)
    out = list(dl)
    assert [b["x"].tolist() for b in out] == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0], [6.0]]
    assert out[0]["y"].tolist() == [[0, 0], [1, -1], [2, -2]]
    assert len(list(io.DataLoader(Stream(), batch_size=3, drop_last=True))) == 2
    dl = io.DataLoader(Squares(5), batch_size=2, collate_fn=lambda b: sum(s[1] for s in b))
    assert list(dl) == [1, 13, 16]
    assert [s[1] for s in io.DataLoader(Squares(3), batch_size=None)] == [0, 1, 4]
    with pytest.raises(fw.OpArgumentError, match=r"\[DataLoader\] cannot collate"):
        list(io.DataLoader([object(), object()], batch_size=2))


def test_subset_split_compose():
    ds = Squares(10)
    sub = io.Subset(ds, [2, 5])
    assert len(sub) == 2 and sub[1][1] == 25
    fw.seed(0)
    parts = io.random_split(ds, [7, 3])
    idx = sorted(parts[0].indices + parts[1].indices)
    assert idx == list(range(10)) and len(parts[0]) == 7
    fr = io.random_split(ds, [0.5, 0.5], generator=fw.Generator(1))
    assert [len(p) for p in fr] == [5, 5]
    with pytest.raises(fw.OpArgumentError, match=r"\[random_split\]"):
        io.random_split(ds, [3, 3])
    comp = io.ComposeDataset([ds, io.TensorDataset([fw.arange(10)])])
    assert len(comp) == 10 and comp[3][1] == 9 and comp[3][2].item() == 3


def test_samplers():
    ds = Squares(7)
    assert list(io.SequenceSampler(ds)) == list(range(7))
    fw.seed(2)
    assert sorted(io.RandomSampler(ds)) == list(range(7))
    rs = list(io.RandomSampler(ds, replacement=True, num_samples=20, generator=fw.Generator(0)))
    assert len(rs) == 20 and all(0 <= i < 7 for i in rs)
    bs = io.BatchSampler(ds, batch_size=3)
    assert list(bs) == [[0, 1, 2], [3, 4, 5], [6]] and len(bs) == 3
    dl = io.DataLoader(
        ds, batch_sampler=io.BatchSampler(sampler=io.SequenceSampler(ds), batch_size=4, drop_last=True)
    )
    assert [b[1].tolist() for b in dl] == [[0, 1, 4, 9]]


# -- worker processes ----------------------------------------------------------------------
# Datasets live at module level: workers receive them pickled. Every loader below has a
# `timeout` and every subprocess a deadline, so a hang fails the test instead of stalling it.
def _gone(pid: int) -> bool:
    """True when process `pid` no longer runs (absent, or a zombie awaiting its reaper)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            return any(line.startswith("State:") and "Z" in line.split()[1] for line in f)
    except FileNotFoundError:
        return True


def _wait_gone(pids, seconds=20.0):
    import time

    end = time.monotonic() + seconds
    while time.monotonic() < end and not all(_gone(p) for p in pids):
        time.sleep(0.05)
    return [p for p in pids if not _gone(p)]


class Noisy(io.Dataset):
    """Each sample: its index, the worker's id and draws from numpy's, Python's and fw's generators."""

    def __getitem__(self, i):
        import random

        info = io.get_worker_info()
        return {
            "i": i,
            "wid": -1 if info is None else info.id,
            "np": np.random.rand(),
            "py": random.random(),
            "fw": fw.rand([1]).item(),
        }

    def __len__(self):
        return 8


class Broken(io.Dataset):
    def __getitem__(self, i):
        if i == 13:
            raise ValueError(f"sample {i} is corrupt")
        return np.float32(i)

    def __len__(self):
        return 20


class Dies(io.Dataset):
    def __getitem__(self, i):
        import os

        if i == 5:
            os._exit(3)
        return np.float32(i)

    def __len__(self):
        return 12


class Sharded(io.IterableDataset):
    """0..9, split between the workers by get_worker_info (each worker its own slice)."""

    def __iter__(self):
        info = io.get_worker_info()
        wid, n = (0, 1) if info is None else (info.id, info.num_workers)
        for i in range(wid, 10, n):
            yield np.array([i, 10 * i], dtype=np.int64)


class RowsAsTensors(io.Dataset):
    """Returns Tensors from __getitem__ (made on the worker's host) and a float16 field."""

    def __getitem__(self, i):
        return fw.to_tensor(np.full([2], i, np.float32)), np.float16(i / 2)

    def __len__(self):
        return 5


def test_workers_give_the_batches_of_num_workers_0():
    ds = Squares(10)
    fw.seed(5)
    want = [(a.tolist(), b.tolist()) for a, b in io.DataLoader(ds, batch_size=3, shuffle=True)]
    fw.seed(5)
    dl = io.DataLoader(
        ds, batch_size=3, shuffle=True, num_workers=2, prefetch_factor=1, persistent_workers=True, timeout=120
    )
    got = [(a.tolist(), b.tolist()) for a, b in dl]
    assert got == want
    pids = dl.worker_pids()
    assert len(pids) == 2 and not any(_gone(p) for p in pids)  # persistent: still there
    again = [(a.tolist(), b.tolist()) for a, b in dl]
    assert dl.worker_pids() == pids and sorted(v for _, b in again for v in b) == [i * i for i in range(10)]
    assert again != got  # a new permutation in the second epoch
    # tensors and float16 from the worker, a TensorDataset pickled to the workers
    x = fw.to_tensor(np.arange(12.0, dtype=np.float32).reshape(6, 2))
    dl2 = io.DataLoader(io.TensorDataset([x, fw.arange(6)]), batch_size=4, num_workers=2, timeout=120)
    b = list(dl2)
    assert [t[1].tolist() for t in b] == [[0, 1, 2, 3], [4, 5]] and b[0][0].tolist() == x.numpy()[:4].tolist()
    assert b[0][0].dtype == x.dtype and b[0][1].dtype == fw.arange(1).dtype
    t, h = list(io.DataLoader(RowsAsTensors(), batch_size=5, num_workers=1, timeout=120))[0]
    assert t.numpy().tolist() == [[float(i)] * 2 for i in range(5)]
    assert h.dtype == np.float16 and h.numpy().tolist() == [i / 2 for i in range(5)]
    dl.persistent_workers = False  # the next epoch's end stops them
    list(dl)
    assert _wait_gone(pids) == [] and dl.worker_pids() == []


def test_iterable_dataset_sharded_by_worker_info():
    dl = io.DataLoader(Sharded(), batch_size=2, num_workers=2, timeout=120)
    got = [b.numpy()[:, 0].tolist() for b in dl]
    # round-robin over the workers: worker 0 has 0,2,4,6,8 and worker 1 has 1,3,5,7,9
    assert got == [[0, 2], [1, 3], [4, 6], [5, 7], [8], [9]]
    dl = io.DataLoader(Sharded(), batch_size=2, drop_last=True, num_workers=2, timeout=120)
    assert [b.numpy()[:, 0].tolist() for b in dl] == [[0, 2], [1, 3], [4, 6], [5, 7]]


def test_worker_seeds_are_distinct_and_reproducible():
    def run(seed):
        fw.seed(seed)
        dl = io.DataLoader(Noisy(), batch_size=2, num_workers=2, persistent_workers=True, timeout=120)
        epochs = [[{k: v.tolist() for k, v in b.items()} for b in dl] for _ in range(2)]
        dl.persistent_workers = False
        list(dl)
        return epochs

    a, b = run(3), run(3)
    assert a == b  # fw.seed(n) fixes every worker's streams
    e0 = a[0]
    assert [w for batch in e0 for w in batch["wid"]] == [0, 0, 1, 1, 0, 0, 1, 1]  # round-robin batches
    for key in ("np", "py", "fw"):
        w0 = [v for batch in e0[0::2] for v in batch[key]]
        w1 = [v for batch in e0[1::2] for v in batch[key]]
        assert len(set(w0 + w1)) == 8, key  # no two workers draw the same numbers
        assert [v for batch in a[1] for v in batch[key]] != [v for batch in e0 for v in batch[key]], (
            key
        )  # new epoch, new draws
    assert run(4)[0][0]["np"] != e0[0]["np"]


def test_worker_error_names_worker_and_index_and_stops_workers():
    dl = io.DataLoader(Broken(), batch_size=4, num_workers=2, timeout=120)
    it = iter(dl)
    pids = dl.worker_pids()
    with pytest.raises(
        ValueError,
        match=r"\[DataLoader\] worker 1 failed on sample index 13: ValueError: sample 13 is corrupt",
    ) as e:
        list(it)
    assert "in __getitem__" in str(e.value)  # the worker's traceback travels with it
    assert _wait_gone(pids) == [] and dl.worker_pids() == []
    # the loader is usable again: a fresh pool next time
    with pytest.raises(ValueError, match="sample index 13"):
        list(dl)


def test_worker_death_is_reported():
    dl = io.DataLoader(Dies(), batch_size=2, num_workers=2, timeout=120)
    with pytest.raises(
        io.DataLoaderWorkerError, match=r"worker 0 \(pid \d+\) exited unexpectedly with exit code 3"
    ):
        list(dl)
    assert dl.worker_pids() == []


def test_break_and_garbage_collection_stop_workers():
    import gc

    dl = io.DataLoader(Squares(40), batch_size=2, num_workers=2, timeout=120)
    for _ in dl:
        pids = dl.worker_pids()
        break
    gc.collect()
    assert len(pids) == 2 and _wait_gone(pids) == []
    it = iter(dl)
    next(it)
    pids = dl.worker_pids()
    assert not any(_gone(p) for p in pids)
    del it
    gc.collect()
    assert _wait_gone(pids) == []


class Sleepy(io.Dataset):
    def __getitem__(self, i):
        import time

        time.sleep(30)
        return np.float32(i)

    def __len__(self):
        return 4


def _init_offsets_numpy(worker_id):
    np.random.seed(1000 + worker_id)


def _init_fails(worker_id):
    raise RuntimeError(f"no config for worker {worker_id}")


class NumpyDraw(io.Dataset):
    def __getitem__(self, i):
        return np.float64(np.random.rand())

    def __len__(self):
        return 4


def test_timeout_and_worker_init_fn():
    dl = io.DataLoader(Sleepy(), batch_size=2, num_workers=1, timeout=1)
    with pytest.raises(io.DataLoaderWorkerError, match=r"no batch from the workers within timeout=1 s"):
        list(dl)
    assert dl.worker_pids() == []
    # worker_init_fn runs in each worker after the loader's seeding: what it seeds holds
    got = [
        b.tolist()
        for b in io.DataLoader(
            NumpyDraw(), batch_size=2, num_workers=2, worker_init_fn=_init_offsets_numpy, timeout=120
        )
    ]
    want = [np.random.RandomState(1000 + w).rand(2).tolist() for w in (0, 1)]
    assert got == want
    with pytest.raises(
        RuntimeError, match=r"worker 0 failed on worker_init_fn: RuntimeError: no config for worker 0"
    ):
        list(io.DataLoader(NumpyDraw(), batch_size=2, num_workers=1, worker_init_fn=_init_fails, timeout=120))


def test_epochs_stop_their_workers_and_leave_no_threads():
    """Each epoch starts and stops its workers: after the first epoch, more epochs leave no
    extra thread (queue feeders, copy streams) and no worker process behind."""
    import multiprocessing
    import threading
    import time

    dl = io.DataLoader(Squares(6), batch_size=2, num_workers=2, timeout=120)
    list(dl)

    def settled(limit):
        end = time.monotonic() + 20
        while time.monotonic() < end and threading.active_count() > limit:
            time.sleep(0.05)
        return threading.active_count()

    base = settled(threading.active_count())
    time.sleep(0.2)
    base = threading.active_count()
    for _ in range(3):
        assert [b[1].tolist() for b in dl] == [[0, 1], [4, 9], [16, 25]]
    assert settled(base) <= base
    assert [p for p in multiprocessing.active_children() if p.name.startswith("oarlock-dataloader")] == []


def test_two_iterators_over_one_loader():
    dl = io.DataLoader(Squares(6), batch_size=2, num_workers=1, timeout=120)
    a, b = iter(dl), iter(dl)  # each its own workers
    assert [v[1].tolist() for v in zip(*[a, b]) for v in v] == [
        [0, 1],
        [0, 1],
        [4, 9],
        [4, 9],
        [16, 25],
        [16, 25],
    ]
    dl = io.DataLoader(Squares(6), batch_size=2, num_workers=1, persistent_workers=True, timeout=120)
    a = iter(dl)
    next(a)
    b = iter(dl)
    with pytest.raises(fw.OpArgumentError, match=r"this iterator was superseded"):
        next(a)
    assert [v[1].tolist() for v in b] == [[0, 1], [4, 9], [16, 25]]
    dl.persistent_workers = False
    pids = dl.worker_pids()
    list(dl)
    assert _wait_gone(pids) == []


def test_worker_arguments_are_checked():
    with pytest.raises(
        fw.OpArgumentError, match=r"\[DataLoader\] multiprocessing_context='fork' is not allowed"
    ):
        io.DataLoader(Squares(3), num_workers=1, multiprocessing_context="fork")
    with pytest.raises(fw.OpArgumentError, match=r"num_workers must be an int >= 0"):
        io.DataLoader(Squares(3), num_workers=-1)
    with pytest.raises(fw.OpArgumentError, match=r"prefetch_factor must be an int >= 1"):
        io.DataLoader(Squares(3), num_workers=1, prefetch_factor=0)
    dl = io.DataLoader(Squares(4), batch_size=2, collate_fn=lambda b: b, num_workers=1)
    with pytest.raises(
        fw.OpArgumentError, match=r"collate_fn to worker processes by pickling.*could not be pickled"
    ):
        iter(dl)


def test_staged_copies_reach_the_device(device):
    """Batches land on the loader's device through the copy stream and equal the host data,
    also while the compute stream is busy with the previous batch."""
    x = np.random.default_rng(0).standard_normal((64, 33)).astype(np.float32)
    ds = io.TensorDataset([fw.to_tensor(x)])
    dl = io.DataLoader(ds, batch_size=16, num_workers=1, places=device, timeout=120)
    acc = None
    want_device = fw.to_tensor([0.0], place=device).device
    for (b,) in dl:
        assert b.device == want_device
        y = (b * 2.0).sum(axis=0)  # queued compute reading the batch
        acc = y if acc is None else acc + y
    np.testing.assert_allclose(acc.numpy(), 2.0 * x.sum(axis=0), rtol=1e-5, atol=1e-4)


_SIGINT_SCRIPT = r"""
import faulthandler, signal, sys, time
import numpy as np
faulthandler.register(signal.SIGUSR1, all_threads=True)  # the test asks for the stacks if it hangs
sys.path.insert(0, {root!r})
from framework import io

class Slow(io.Dataset):
    def __getitem__(self, i):
        time.sleep(0.2)
        return np.float32(i)
    def __len__(self):
        return 10_000

if __name__ == "__main__":
    dl = io.DataLoader(Slow(), batch_size=2, num_workers=2, timeout=120)
    for k, b in enumerate(dl):
        if k == 1:
            print("PIDS", *dl.worker_pids(), flush=True)
"""


def test_ctrl_c_stops_workers(tmp_path):
    """A real interpreter gets SIGINT on its whole process group (what a terminal's Ctrl-C
    does): it exits with KeyboardInterrupt and leaves no worker behind."""
    import os
    import pathlib
    import signal
    import subprocess
    import sys
    import time

    root = str(pathlib.Path(__file__).resolve().parents[1])
    script = tmp_path / "ctrl_c.py"
    script.write_text(_SIGINT_SCRIPT.format(root=root))
    p = subprocess.Popen(
        [sys.executable, str(script)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        line = p.stdout.readline()
        assert line.startswith("PIDS"), (line, p.stderr.read() if p.poll() is not None else "")
        pids = [int(v) for v in line.split()[1:]]
        assert len(pids) == 2 and not any(_gone(q) for q in pids)
        os.killpg(p.pid, signal.SIGINT)
        try:
            _, err = p.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            # NOTE: seen once in a full-suite run (not reproduced alone or 8 at a time): say
            # where the interpreter waits, then fail
            os.kill(p.pid, signal.SIGUSR1)
            time.sleep(2)
            os.killpg(p.pid, signal.SIGKILL)
            _, err = p.communicate(timeout=30)
            raise AssertionError(
                f"no exit 60 s after Ctrl-C; the interpreter's threads:\n{err[-6000:]}"
            ) from None
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
    assert p.returncode != 0 and "KeyboardInterrupt" in err, err[-2000:]
    assert _wait_gone(pids) == [], "workers left running after Ctrl-C"
