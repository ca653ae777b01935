"""DataLoader: no silent dtype promotion in the default collate, and no endless wait on a
worker that sends nothing (issue 35, "nothing silent")."""

from __future__ import annotations

import os
import signal
import time

import numpy as np
import pytest

import framework as fw
from framework import io


class Mixed(io.Dataset):
    """float32 features, except sample 2 (int64): np.stack would make the batch float64."""

    def __len__(self):
        return 4

    def __getitem__(self, i):
        x = np.full(3, i, np.int64 if i == 2 else np.float32)
        return {"x": x, "y": i}


class Uniform(io.Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        return np.full(3, i, np.float32), i, float(i) if i % 2 else i


@pytest.mark.parametrize("workers", [0, 2])
def test_a_field_of_mixed_dtypes_is_refused_naming_the_field(workers):
    dl = io.DataLoader(Mixed(), batch_size=4, num_workers=workers, timeout=120)
    with pytest.raises(
        fw.OpArgumentError,
        match=r"field \['x'\] mixes dtypes across the batch: sample 0 is float32, sample 2 is int64; "
        r"stacking them would promote to float64",
    ):
        next(iter(dl))


@pytest.mark.parametrize("workers", [0, 2])
def test_fields_of_one_dtype_keep_it(workers):
    x, label, number = next(iter(io.DataLoader(Uniform(), batch_size=4, num_workers=workers, timeout=120)))
    assert x.dtype == np.float32 and label.dtype == np.int64
    np.testing.assert_array_equal(x.numpy(), np.repeat(np.arange(4, dtype=np.float32)[:, None], 3, axis=1))
    assert number.dtype == np.float64 and number.tolist() == [
        0.0,
        1.0,
        2.0,
        3.0,
    ]  # np.array([0, 1.0, 2, 3.0])


def test_tensor_samples_of_mixed_dtypes_are_refused():
    batch = [fw.ones([2]), fw.ones([2], dtype="float64")]
    with pytest.raises(fw.OpArgumentError, match=r"sample 0 is float32, sample 1 is float64"):
        io.default_collate_fn(batch)


class Stuck(io.Dataset):
    """Sample 2 never comes: busy forever (``sleep``) or frozen (the process stops itself)."""

    def __init__(self, how: str):
        self.how = how

    def __len__(self):
        return 8

    def __getitem__(self, i):
        if i == 2:
            if self.how == "frozen":
                # Let this worker's queue feeder finish sending batch 0 first: stopped while it
                # holds the shared result queue's write lock, it would also block worker 1's
                # batch 1, which the first next() waits for (a hang in CI, seen once).
                time.sleep(1.0)
                os.kill(os.getpid(), signal.SIGSTOP)
            time.sleep(3600)
        return np.float32(i)


@pytest.mark.parametrize(
    "how, state",
    [
        ("busy", r"it is alive and its heartbeat is current .* busy in the dataset"),
        ("frozen", r"its heartbeat stopped .* stopped or stuck in native code"),
    ],
)
def test_a_silent_worker_is_reported_after_the_bound_with_timeout_0(monkeypatch, how, state):
    dl = io.DataLoader(Stuck(how), batch_size=1, num_workers=2, prefetch_factor=1)
    assert dl.timeout == 0
    it = iter(dl)
    assert next(it).item() == 0.0  # batch 1 is staged with it; batch 2 is staged with batch 1
    monkeypatch.setenv("OARLOCK_DATALOADER_STALL_TIMEOUT", "6")  # read at each check: after the start-up
    with pytest.raises(
        io.DataLoaderWorkerError,
        match=r"no batch from the workers within OARLOCK_DATALOADER_STALL_TIMEOUT=6 s \(waited \d+ s, DataLoader "
        rf"timeout=0\); worker 0 \(pid \d+\) has batch 2 and sent nothing; {state}",
    ):
        next(it)
    assert dl.worker_pids() == []  # the workers were stopped
