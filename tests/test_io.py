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
    dl = io.DataLoader(ds, batch_sampler=io.BatchSampler(sampler=io.SequenceSampler(ds), batch_size=4, drop_last=True))
    assert [b[1].tolist() for b in dl] == [[0, 1, 4, 9]]
    r0 = list(io.DistributedBatchSampler(ds, 2, num_replicas=2, rank=0))
    r1 = list(io.DistributedBatchSampler(ds, 2, num_replicas=2, rank=1))
    assert r0 == [[0, 2], [4, 6]] and r1 == [[1, 3], [5, 0]]
    d = io.DistributedBatchSampler(ds, 2, num_replicas=2, rank=0, shuffle=True)
    d.set_epoch(1)
    a = list(d)
    d.set_epoch(2)
    assert a != list(d) and len(d) == 2
