"""Contract 1.3's asynchronous reduce-scatter (``Communicator.reduce_scatter_async``): the
contract's default and who calls it (``adapter_api.calls_method``, ``defines_own``), the
host-staged form in this process; under ``oarlock launch`` on 2 and 4 ranks the gradient buckets
of ZeRO stages 2 and 3 reduce-scattered on the cpu plugin (MPI_Ireduce_scatter_block) and, on a
plugin declaring contract 1.2 (tests/plugins_for_tests/oldcomm.py), all-reduced asynchronously
with each rank keeping its part; both train as one process. ``reduce_scatter(sync_op=False)``
against numpy (a list input the task keeps alive, float16 avg, int32, finished in order)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from adapter_api import CONTRACT_VERSION, Communicator, StagedCommunicator, calls_method, defines_own
from adapter_api.communicator import PendingCollective
from tests.conftest import needs_mpi
from tests.dist_results import run_job

SCRIPT = Path(__file__).parent / "dist_scripts" / "zero_reduce_scatter.py"


class _Peer(Communicator):
    """Rank 0 of 2, synchronous only: the other rank's buffer is ``other``."""

    def __init__(self, other: np.ndarray) -> None:
        super().__init__(None, 0, 0, 2, b"")
        self.other, self.calls = other, []

    def all_reduce(self, send, recv, op, stream) -> None:  # noqa: ANN001
        self.calls.append("all_reduce")
        np.add(send, self.other.reshape(send.shape), out=recv)

    def reduce_scatter(self, send, recv, op, stream) -> None:  # noqa: ANN001
        self.calls.append("reduce_scatter")
        n = recv.size
        recv.reshape(-1)[...] = (send.reshape(-1) + self.other.reshape(-1))[
            self.rank * n : (self.rank + 1) * n
        ]


class _AsyncPeer(_Peer):
    """The same with its own reduce_scatter_async, finished at the first test()."""

    def reduce_scatter_async(self, send, recv, op, stream) -> PendingCollective:  # noqa: ANN001
        me = self

        class Later(PendingCollective):
            done = False

            def test(self) -> bool:
                if not self.done:
                    me.reduce_scatter(send, recv, op, stream)
                    self.done = True
                return True

            def wait(self) -> None:
                self.test()

        self.calls.append("reduce_scatter_async")
        return Later()


class _Staged(StagedCommunicator):
    def download(self, view, stream) -> np.ndarray:  # noqa: ANN001
        return np.array(view, copy=True)

    def upload(self, view, array, stream) -> None:  # noqa: ANN001
        view[...] = array.reshape(view.shape)


def test_the_contract_says_who_calls_reduce_scatter_async() -> None:
    assert CONTRACT_VERSION >= (1, 3)
    assert not calls_method((1, 2), "Communicator", "reduce_scatter_async")
    assert calls_method((1, 3), "Communicator", "reduce_scatter_async") and calls_method(
        None, "Communicator", "x"
    )
    other = np.arange(6, dtype=np.float32)
    plain, own = _Peer(other), _AsyncPeer(other)
    assert not defines_own(plain, "reduce_scatter_async") and defines_own(own, "reduce_scatter_async")
    assert defines_own(_Staged(None, 0, plain), "reduce_scatter_async")
    # the default: the synchronous reduce-scatter, a finished pending collective
    send, recv = np.ones(6, np.float32), np.zeros(3, np.float32)
    p = plain.reduce_scatter_async(send, recv, "sum", None)
    assert p.test() and plain.calls == ["reduce_scatter"]
    np.testing.assert_array_equal(recv, [1, 2, 3])


@pytest.mark.parametrize("host_cls", [_Peer, _AsyncPeer])
def test_staged_reduce_scatter_async_uploads_this_ranks_chunk_when_finished(host_cls) -> None:
    other = np.array([10, 20, 30, 40, 50, 60], np.float32)
    host = host_cls(other)
    staged = _Staged(None, 0, host)
    dev_in = np.arange(6, dtype=np.float32).reshape(2, 3)
    dev_out = np.zeros(3, np.float32)
    p = staged.reduce_scatter_async(dev_in, dev_out, "sum", None)
    if host_cls is _AsyncPeer:  # the host's own: the device buffer waits for test()/wait()
        np.testing.assert_array_equal(dev_out, [0, 0, 0])
        assert host.calls == ["reduce_scatter_async"]
    else:  # no asynchronous reduce-scatter on the host: its all-reduce, this rank's chunk kept
        assert host.calls == ["all_reduce"]
    p.wait()
    np.testing.assert_array_equal(dev_out, [10, 21, 32])
    np.testing.assert_array_equal(dev_in, np.arange(6).reshape(2, 3))  # the device input unchanged


def _job(n: int) -> list:
    return run_job(SCRIPT, n, prefix=f"oarlock-zero-rs{n}-", timeout=400, collective_timeout=120)


def _rows(seed: int, dtype: str, size: int) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-4, 4, size).astype(dtype)


@needs_mpi
@pytest.mark.mpi
@pytest.mark.parametrize("n", [2, 4])
def test_zero_buckets_reduce_scatter_on_cpu_and_fall_back_on_a_1_2_plugin(n: int) -> None:
    got = _job(n)
    for r, d in enumerate(got):
        for dev in ("cpu", "oldcomm"):
            for level in (2, 3):
                tag = f"{dev}/{level}"
                np.testing.assert_allclose(d[f"{tag}/loss"], d[f"{tag}/ref_loss"], rtol=1e-5, err_msg=tag)
                keys = [k for k in d.files if k.startswith(f"{tag}/param/")]
                assert len(keys) == 4, keys
                for k in keys:  # AdamW, 3 steps, float32
                    np.testing.assert_allclose(
                        d[k], d[k.replace("/param/", "/ref/")], rtol=1e-4, atol=1e-6, err_msg=f"rank {r} {k}"
                    )
                how = list(d[f"{tag}/how"])
                assert len(how) == 2 * 3, how  # 2 buckets of about 1 KiB per backward, 3 steps
                # cpu declares 1.3: one reduce-scatter per bucket; the 1.2 plugin: the fallback
                want = (
                    "reduce_scatter(sum)" if dev == "cpu" else "reduce_scatter(sum), as an async all_reduce"
                )
                assert set(how) == {want}, (tag, how)
        assert bool(d["cpu/async_rs"]) and not bool(d["oldcomm/async_rs"])
        # the 1.2 plugin was asked for asynchronous all-reduces only (its inherited
        # reduce_scatter_async, which 1.3 added, was never called): 2 levels x 6 buckets
        assert list(d["oldcomm/calls"]) == [12, 0, 0]
        # reduce_scatter(sync_op=False) against numpy
        a = sum(_rows(100 + q * n + r, "float32", 5) for q in range(n))
        np.testing.assert_allclose(d["rs/a"], a, rtol=1e-5)
        h = sum(_rows(200 + q, "float16", 3 * n).astype(np.float32) for q in range(n)) / n
        np.testing.assert_array_equal(d["rs/h"], h[3 * r : 3 * r + 3].astype(np.float16))
        m = np.max([_rows(300 + q, "float32", 7) for q in range(n)], axis=0)
        np.testing.assert_array_equal(d["rs/m"], m)
        i = sum((np.arange(4 * n) * (q + 1)).astype(np.int32) for q in range(n))
        np.testing.assert_array_equal(d["rs/i"], i[4 * r : 4 * r + 4])
        assert bool(d["rs/in_order"])
