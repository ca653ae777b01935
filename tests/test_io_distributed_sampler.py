"""``fw.io.DistributedBatchSampler`` (also ``fw.distributed.DistributedBatchSampler``): the
layout and the shuffle of Paddle's ``paddle.io.DistributedBatchSampler``.

Every expected list below was recorded once from Paddle 3.3.1 (CPU wheel) with
``paddle.io.DistributedBatchSampler(list(range(n)), batch_size, num_replicas=..., rank=...,
shuffle=..., drop_last=...)``: the batches of a first pass, of a second pass (Paddle advances
the epoch after a shuffled pass) and of a pass after ``set_epoch(5)``.
"""

from __future__ import annotations

import pytest

import framework as fw
from framework import io

# (n, batch_size, num_replicas, drop_last) -> every rank's batches, shuffle=False (Paddle 3.3.1)
IN_ORDER = {
    (10, 2, 2, False): [[[0, 1], [4, 5], [8]], [[2, 3], [6, 7], [9]]],
    (10, 2, 2, True): [[[0, 1], [4, 5]], [[2, 3], [6, 7]]],
    (10, 4, 1, False): [[[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]],
    (7, 2, 3, False): [[[0, 1], [6]], [[2, 3], [0]], [[4, 5], [1]]],
    (7, 2, 3, True): [[[0, 1]], [[2, 3]], [[4, 5]]],
    (7, 2, 2, False): [[[0, 1], [4, 5]], [[2, 3], [6, 0]]],
    (13, 3, 4, False): [[[0, 1, 2], [12]], [[3, 4, 5], [0]], [[6, 7, 8], [1]], [[9, 10, 11], [2]]],
    (13, 3, 4, True): [[[0, 1, 2]], [[3, 4, 5]], [[6, 7, 8]], [[9, 10, 11]]],
    (5, 4, 2, False): [[[0, 1, 2]], [[3, 4, 0]]],
}

# (n, batch_size, num_replicas, drop_last) -> per rank: (first pass, second pass, after
# set_epoch(5)), shuffle=True (Paddle 3.3.1)
SHUFFLED = {
    (20, 5, 2, False): [
        (
            [[18, 1, 19, 8, 10], [5, 14, 9, 7, 16]],
            [[3, 16, 6, 10, 2], [13, 0, 19, 18, 9]],
            [[2, 5, 17, 19, 12], [7, 4, 8, 9, 0]],
        ),
        (
            [[17, 6, 13, 4, 2], [11, 3, 0, 15, 12]],
            [[14, 4, 17, 7, 1], [15, 8, 12, 11, 5]],
            [[1, 11, 10, 13, 18], [16, 6, 15, 14, 3]],
        ),
    ],
    (11, 3, 3, False): [
        ([[6, 0, 4], [3]], [[2, 3, 4], [9]], [[7, 5, 2], [10]]),
        ([[10, 2, 8], [0]], [[10, 1, 6], [8]], [[9, 0, 4], [6]]),
        ([[1, 7, 9], [5]], [[0, 7, 0], [5]], [[8, 1, 0], [3]]),
    ],
    (11, 3, 3, True): [
        ([[6, 0, 4]], [[2, 3, 4]], [[7, 5, 2]]),
        ([[10, 2, 8]], [[10, 1, 6]], [[9, 0, 4]]),
        ([[1, 7, 9]], [[0, 7, 0]], [[8, 1, 0]]),
    ],
}


def _sampler(n: int, b: int, ranks: int, rank: int, shuffle: bool = False, drop_last: bool = False):
    return io.DistributedBatchSampler(
        list(range(n)), b, num_replicas=ranks, rank=rank, shuffle=shuffle, drop_last=drop_last
    )


@pytest.mark.parametrize("case", list(IN_ORDER), ids=str)
def test_in_order_layout_is_paddles(case):
    n, b, ranks, drop_last = case
    for rank, want in enumerate(IN_ORDER[case]):
        s = _sampler(n, b, ranks, rank, drop_last=drop_last)
        assert list(s) == want
        assert list(s) == want  # no shuffle: every pass the same
        assert len(s) == len(want)


@pytest.mark.parametrize("case", list(SHUFFLED), ids=str)
def test_shuffle_and_epochs_are_paddles(case):
    n, b, ranks, drop_last = case
    for rank, (first, second, fifth) in enumerate(SHUFFLED[case]):
        s = _sampler(n, b, ranks, rank, shuffle=True, drop_last=drop_last)
        assert list(s) == first
        assert list(s) == second  # a shuffled pass advances the epoch
        s.set_epoch(5)
        assert list(s) == fifth
        assert s.epoch == 6 and len(s) == len(first)


@pytest.mark.parametrize(
    "n, b, ranks, shuffle",
    [(10, 2, 2, False), (12, 2, 3, True), (7, 2, 3, False), (11, 3, 3, True), (40, 4, 2, True)],
)
def test_ranks_are_disjoint_and_cover_the_dataset(n, b, ranks, shuffle):
    per_rank = [[i for batch in _sampler(n, b, ranks, r, shuffle) for i in batch] for r in range(ranks)]
    seen = [i for share in per_rank for i in share]
    assert sorted(set(seen)) == list(range(n))
    total = -(-n // ranks) * ranks  # padded by wrapping around to a multiple of the ranks
    assert len(seen) == total and all(len(share) == total // ranks for share in per_rank)
    if total == n:
        assert len(set(seen)) == n  # no padding: each index on exactly one rank
    # together the ranks see the batches of one process with batch_size * ranks
    one = list(_sampler(n, b * ranks, 1, 0, shuffle))
    if total == n and n % (b * ranks) == 0:
        joined = [
            sum((list(_sampler(n, b, ranks, r, shuffle))[k] for r in range(ranks)), [])
            for k in range(len(one))
        ]
        assert joined == one


def test_seed_and_the_public_names():
    assert fw.distributed.DistributedBatchSampler is io.DistributedBatchSampler
    a = io.DistributedBatchSampler(list(range(20)), 5, 2, 0, shuffle=True)
    b = io.DistributedBatchSampler(list(range(20)), 5, 2, 0, shuffle=True, seed=3)
    b3 = io.DistributedBatchSampler(list(range(20)), 5, 2, 0, shuffle=True)
    b3.set_epoch(3)
    assert list(a) != list(b) and list(b3) == list(
        io.DistributedBatchSampler(list(range(20)), 5, 2, 0, True, seed=3)
    )
    # rank and size default to fw.distributed's (a world of one in this process)
    s = io.DistributedBatchSampler(list(range(5)), 2)
    assert (s.nranks, s.local_rank) == (fw.distributed.get_world_size(), fw.distributed.get_rank())
    loader = io.DataLoader(io.TensorDataset([fw.arange(10)]), batch_sampler=_sampler(10, 2, 2, 1))
    assert [x.tolist() for (x,) in loader] == [[2, 3], [6, 7], [9]]
    with pytest.raises(fw.OpArgumentError, match=r"rank must be in \[0, 2\), got 2"):
        io.DistributedBatchSampler(list(range(4)), 1, 2, 2)
    with pytest.raises(fw.OpArgumentError, match="batch_size must be a positive int, got 0"):
        io.DistributedBatchSampler(list(range(4)), 0, 2, 0)
