"""Asynchronous all-reduce: the contract's default (a plugin with the synchronous form only),
the staged form (download, host all-reduce in flight, upload when it finished), and the cpu
plugin's MPI_Iallreduce under mpiexec on 2 ranks (values against numpy, several outstanding,
finished in order, a dead peer named)."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import numpy as np
import pytest

from adapter_api import Communicator, StagedCommunicator
from adapter_api.communicator import PendingCollective
from framework.distributed import launch
from tests.conftest import needs_mpi

SCRIPTS = Path(__file__).parent / "dist_scripts"


class _TwoRankSum(Communicator):
    """A synchronous-only communicator: the other rank holds ``other``; all_reduce sums."""

    def __init__(self, other: np.ndarray) -> None:
        super().__init__(None, 0, 0, 2, b"")
        self.other, self.calls = other, 0

    def all_reduce(self, send, recv, op, stream) -> None:  # noqa: ANN001
        self.calls += 1
        np.add(send, self.other, out=recv)


class _Staged(StagedCommunicator):
    def download(self, view, stream) -> np.ndarray:  # noqa: ANN001
        return np.array(view, copy=True)

    def upload(self, view, array, stream) -> None:  # noqa: ANN001
        view[...] = array


def test_synchronous_only_communicator_gets_a_finished_pending() -> None:
    x = np.arange(5, dtype=np.float32)
    comm = _TwoRankSum(np.full(5, 10, np.float32))
    p = comm.all_reduce_async(x, x, "sum", None)
    assert isinstance(p, PendingCollective) and p.test() and comm.calls == 1
    p.wait()
    np.testing.assert_array_equal(x, np.arange(5, dtype=np.float32) + 10)


def test_staged_communicator_uploads_when_the_host_reduction_finished() -> None:
    host = _TwoRankSum(np.full(4, 1.5, np.float32))
    staged = _Staged(None, 0, host)
    dev = np.array([1, 2, 3, 4], np.float32)
    p = staged.all_reduce_async(dev, dev, "sum", None)
    np.testing.assert_array_equal(dev, [1, 2, 3, 4])  # the device buffer waits for wait()/test()
    assert p.test()
    np.testing.assert_array_equal(dev, [2.5, 3.5, 4.5, 5.5])
    p.wait()  # again: nothing more happens
    np.testing.assert_array_equal(dev, [2.5, 3.5, 4.5, 5.5])


@pytest.fixture(scope="module")
def job() -> tuple[object, str]:
    """One 2-rank job for both tests: the values, then rank 1 dies."""
    out = tempfile.mkdtemp(prefix="oarlock-async-")
    proc = launch.run([str(SCRIPTS / "async_allreduce.py"), out], 2, timeout=120, collective_timeout=6)
    return proc, out


def _rows(seed: int, dtype: str, size: int) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-4, 4, size).astype(dtype)


@needs_mpi
@pytest.mark.mpi
def test_async_all_reduce_values_and_order_on_2_ranks(job) -> None:
    proc, out = job
    paths = [os.path.join(out, f"rank{r}.npz") for r in (0, 1)]
    assert all(map(os.path.exists, paths)), proc.stdout[-3000:]
    r0, r1 = (np.load(p) for p in paths)
    assert r0["unfinished_before_peer"]  # all_reduce(sync_op=False) returned without the peer
    for r in (r0, r1):
        assert r["wait"] and r["earlier_done"]
        np.testing.assert_allclose(r["first"], _rows(0, "float32", 33) + _rows(1, "float32", 33), rtol=1e-6)
        np.testing.assert_allclose(
            r["a"], (_rows(10, "float32", 1000) + _rows(11, "float32", 1000)) / 2, rtol=1e-6
        )
        b = [(_rows(s, "float32", 7) * 100).astype(np.int32) for s in (20, 21)]
        np.testing.assert_array_equal(r["b"], b[0] + b[1])
        c = (_rows(30, "float16", 9).astype(np.float32) + _rows(31, "float16", 9).astype(np.float32)) / 2
        np.testing.assert_array_equal(r["c"], c.astype(np.float16))  # reduced in float32, one rounding
        np.testing.assert_array_equal(r["d"], np.maximum(_rows(40, "float64", 5), _rows(41, "float64", 5)))
    for k in ("first", "a", "b", "c", "d"):
        np.testing.assert_array_equal(r0[k], r1[k])  # bitwise the same on both ranks


@needs_mpi
@pytest.mark.mpi
def test_wait_on_an_async_all_reduce_names_the_dead_peer(job) -> None:
    proc, out = job
    path = os.path.join(out, "rank0.json")
    assert os.path.exists(path), f"rank 0 did not report (exit {proc.returncode}):\n{proc.stdout[-3000:]}"
    res = json.load(open(path))
    assert res["first"] == [2.0] * 16 and res["returned"]  # the all-reduce before the fault worked
    assert res["type"] == "CommunicationError", res
    msg = res["error"]
    assert msg.startswith("[distributed] all_reduce(sum) of 16 float32 elements timed out"), msg
    assert "missing rank(s): 1 " in msg and "on rank 0 of 2" in msg, msg
