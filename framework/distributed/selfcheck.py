"""The ``collectives`` tier: every collective x dtype x reduce op against numpy, then every
reshard transition of ``dist.reshard`` (``reshard/...`` records, made of those collectives),
under mpiexec.

Run on every rank (``oarlock launch -n 4 -m framework.distributed.selfcheck --device opencl
--out DIR``); each rank writes ``DIR/rank<r>.json`` with one record per check. From Python,
:func:`run_tier` launches it with 2 and 4 ranks and returns the records::

    from framework.distributed.selfcheck import run_tier
    records = run_tier("opencl")          # [{"nranks": 2, "rank": 0, "name": ..., "ok": True}, ...]

Every rank makes its inputs from its rank alone (:func:`rank_data`), so each rank computes the
reference of every collective locally with numpy.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import traceback
from collections.abc import Callable
from typing import Any

import numpy as np

DTYPES = ("float32", "float64", "float16", "bfloat16", "int8", "int16", "int32", "int64", "uint8", "bool")
OPS = ("sum", "avg", "max", "min", "prod")
SIZES = (0, 1, 7, 300)  # empty, one, odd, several cache lines
TOL = {"float16": 2e-3, "bfloat16": 1.6e-2, "float32": 1e-6, "float64": 1e-12}


def _np_dtype(name: str) -> np.dtype:
    if name == "bfloat16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


def rank_data(rank: int, n: int, dtype: str, op: str = "sum") -> np.ndarray:
    """Rank ``rank``'s input: small values whose sums and products are exact in every dtype."""
    rng = np.random.default_rng(1000 * rank + n)
    if dtype == "bool":
        return rng.integers(0, 2, n).astype(bool)
    if op == "prod":
        v = rng.choice([1, 2] if dtype in ("uint8",) else [-1, 1, 2], n)
    elif dtype == "uint8":
        v = rng.integers(0, 50, n)
    else:
        v = rng.integers(-20, 21, n)
    if dtype in ("float32", "float64", "float16", "bfloat16") and op != "prod":
        v = v / 2.0
    return v.astype(_np_dtype(dtype))


def reference(op: str, parts: list[np.ndarray], dtype: str) -> np.ndarray:
    """numpy reference of a reduction of ``parts`` (one per rank)."""
    dt = _np_dtype(dtype)
    if dtype == "bool":
        stack = np.stack(parts)
        return (stack.all(0) if op in ("min", "prod") else stack.any(0)).astype(bool)
    wide = np.stack(
        [p.astype(np.float64 if dt.kind == "f" or dtype == "bfloat16" else np.int64) for p in parts]
    )
    if op in ("sum", "avg"):
        r = wide.sum(0)
        if op == "avg":
            r = r / len(parts) if wide.dtype.kind == "f" else np.floor_divide(r, len(parts))
    elif op == "max":
        r = wide.max(0)
    elif op == "min":
        r = wide.min(0)
    else:
        r = wide.prod(0)
    return r.astype(dt)


class Checker:
    """Collects one record per check; a raising check is a failed record, not the end."""

    def __init__(self, rank: int, nranks: int, device: str) -> None:
        self.rank, self.nranks, self.device = rank, nranks, device
        self.records: list[dict[str, Any]] = []

    def check(self, name: str, fn: Callable[[], None]) -> None:
        try:
            fn()
            self.records.append({"name": name, "ok": True})
        except Exception as exc:  # noqa: BLE001 — a failing check is reported, not raised
            detail = f"{type(exc).__name__}: {exc}"
            self.records.append({"name": name, "ok": False, "detail": detail[:2000]})


def _close(name: str, got: np.ndarray, want: np.ndarray, dtype: str) -> None:
    got = np.asarray(got)
    if got.shape != want.shape:
        raise AssertionError(f"{name}: shape {got.shape}, expected {want.shape}")
    tol = TOL.get(dtype)
    if tol is None:
        ok = np.array_equal(got, want)
    else:
        ok = np.allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol)
    if not ok:
        raise AssertionError(f"{name}: got {got.ravel()[:8]}..., expected {want.ravel()[:8]}...")


def run_checks(device: str, dtypes: tuple[str, ...] | None = None) -> Checker:
    """Every check, on this rank; the caller is one of ``nranks`` processes doing the same."""
    import framework as fw
    import framework.distributed as dist

    dist.init_parallel_env()
    rank, n = dist.get_rank(), dist.get_world_size()
    fw.set_device(device)
    c = Checker(rank, n, device)
    if dtypes is None:
        props = fw.get_device_properties(device)
        dtypes = tuple(d for d in DTYPES if not props.dtypes or d in props.dtypes)
    T = lambda a: fw.to_tensor(a, device=device)  # noqa: E731

    for dt in dtypes:
        for op in OPS:
            if dt == "bool" and op == "avg":
                continue
            for size in SIZES:

                def all_reduce(op: str = op, size: int = size, dt: str = dt) -> None:
                    x = T(rank_data(rank, size, dt, op))
                    assert dist.all_reduce(x, op=op) is None
                    _close(
                        "all_reduce",
                        x.numpy(),
                        reference(op, [rank_data(r, size, dt, op) for r in range(n)], dt),
                        dt,
                    )

                c.check(f"all_reduce/{op}/{dt}/{size}", all_reduce)

            def reduce_scatter(op: str = op, dt: str = dt) -> None:
                chunk = 3
                x = T(rank_data(rank, chunk * n, dt, op))
                out = T(np.zeros(chunk, _np_dtype(dt)))
                dist.reduce_scatter(out, x, op=op)
                want = reference(op, [rank_data(r, chunk * n, dt, op) for r in range(n)], dt)
                _close("reduce_scatter", out.numpy(), want[rank * chunk : (rank + 1) * chunk], dt)

            c.check(f"reduce_scatter/{op}/{dt}", reduce_scatter)

            def reduce(op: str = op, dt: str = dt) -> None:
                root = n - 1
                x = T(rank_data(rank, 7, dt, op))
                dist.reduce(x, dst=root, op=op)
                if rank == root:
                    _close(
                        "reduce",
                        x.numpy(),
                        reference(op, [rank_data(r, 7, dt, op) for r in range(n)], dt),
                        dt,
                    )

            c.check(f"reduce/{op}/{dt}", reduce)

        for size in (0, 5):

            def all_gather(size: int = size, dt: str = dt) -> None:
                x = T(rank_data(rank, size, dt).reshape(size, 1))
                got: list[Any] = []
                dist.all_gather(got, x)
                assert len(got) == n, f"all_gather gave {len(got)} tensors"
                for r in range(n):
                    _close(f"all_gather[{r}]", got[r].numpy(), rank_data(r, size, dt).reshape(size, 1), dt)
                whole = T(np.zeros((n, size, 1), _np_dtype(dt)))
                dist.all_gather(whole, x)
                _close(
                    "all_gather(tensor)",
                    whole.numpy(),
                    np.stack([rank_data(r, size, dt).reshape(size, 1) for r in range(n)]),
                    dt,
                )

            c.check(f"all_gather/{dt}/{size}", all_gather)

        def broadcast(dt: str = dt) -> None:
            for root in range(n):
                x = T(rank_data(rank, 9, dt))
                dist.broadcast(x, src=root)
                _close(f"broadcast from {root}", x.numpy(), rank_data(root, 9, dt), dt)

        c.check(f"broadcast/{dt}", broadcast)

        def alltoall(dt: str = dt) -> None:
            ins = [T(rank_data(rank * n + j, 4, dt)) for j in range(n)]
            outs: list[Any] = []
            dist.alltoall(ins, outs)
            for i in range(n):
                _close(f"alltoall[{i}]", outs[i].numpy(), rank_data(i * n + rank, 4, dt), dt)
            single_in = T(np.concatenate([rank_data(rank * n + j, 2, dt) for j in range(n)]))
            single_out = T(np.zeros(2 * n, _np_dtype(dt)))
            dist.alltoall_single(single_in, single_out)
            want = np.concatenate([rank_data(i * n + rank, 2, dt) for i in range(n)])
            _close("alltoall_single", single_out.numpy(), want, dt)

        c.check(f"alltoall/{dt}", alltoall)

        def send_recv(dt: str = dt) -> None:
            # a ring: even ranks send first, odd ranks receive first (no deadlock on 2+ ranks)
            nxt, prv = (rank + 1) % n, (rank - 1) % n
            x = T(rank_data(rank, 6, dt))
            y = T(np.zeros(6, _np_dtype(dt)))
            if rank % 2 == 0:
                dist.send(x, dst=nxt)
                dist.recv(y, src=prv)
            else:
                dist.recv(y, src=prv)
                dist.send(x, dst=nxt)
            _close("send/recv", y.numpy(), rank_data(prv, 6, dt), dt)

        if n % 2 == 0:
            c.check(f"send_recv/{dt}", send_recv)

    def async_task() -> None:
        x = T(np.full(4, rank + 1.0, np.float32))
        task = dist.all_reduce(x, sync_op=False)
        assert task is not None and task.wait() is True and task.is_completed()
        _close("async all_reduce", x.numpy(), np.full(4, n * (n + 1) / 2, np.float32), "float32")

    c.check("all_reduce/sync_op=False", async_task)

    def async_reduce_scatter() -> None:
        # contract 1.3: started by the communicator's reduce_scatter_async (cpu: MPI, opencl:
        # staged over it; a plugin of an older contract runs them synchronously), several in
        # flight with an all-reduce among them, waited for in any order
        # float16 avg where the device holds float16 (a native C plugin may not): float64 then
        half = "float16" if "float16" in dtypes else "float64"
        cases = [(op, dt) for op, dt in (("sum", "float32"), ("avg", half), ("max", "int64")) if dt in dtypes]
        tasks = []
        for op, dt in cases:
            x = T(rank_data(rank, 3 * n, dt, op))
            out = T(np.zeros(3, _np_dtype(dt)))
            tasks.append((op, dt, out, dist.reduce_scatter(out, x, op=op, sync_op=False)))
            if len(tasks) == 1:  # an all-reduce in flight among them
                y = T(np.full(4, rank + 1.0, np.float32))
                ty = dist.all_reduce(y, sync_op=False)
        for op, dt, out, task in reversed(tasks):
            assert task is not None and task.wait() is True and task.is_completed()
            want = reference(op, [rank_data(r, 3 * n, dt, op) for r in range(n)], dt)
            _close(f"async reduce_scatter({op})", out.numpy(), want[rank * 3 : (rank + 1) * 3], dt)
        ty.wait()
        _close("async all_reduce among them", y.numpy(), np.full(4, n * (n + 1) / 2, np.float32), "float32")

    c.check("reduce_scatter/sync_op=False", async_reduce_scatter)

    def in_place_views() -> None:
        # a reshape shares storage: the collective writes through it into the base tensor
        base = T(np.arange(12, dtype=np.float32) + rank)
        view = base.reshape([3, 4])
        dist.all_reduce(view, op="max")
        _close("in-place view", base.numpy(), np.arange(12, dtype=np.float32) + (n - 1), "float32")

    c.check("all_reduce/in_place_view", in_place_views)

    def groups() -> None:
        ranks = [n - 1, 0] if n > 2 else [1, 0]
        g = dist.new_group(ranks)
        x = T(np.full(3, float(rank), np.float32))
        res = dist.all_reduce(x, op="max" if rank in ranks else "sum", group=g)
        if rank in ranks:
            assert g.rank == ranks.index(rank) and g.nranks == 2, f"group rank {g.rank}, size {g.nranks}"
            _close("group all_reduce", x.numpy(), np.full(3, float(max(ranks)), np.float32), "float32")
            y = T(np.full(2, float(rank), np.float32))
            dist.broadcast(y, src=ranks[0], group=g)
            _close("group broadcast", y.numpy(), np.full(2, float(ranks[0]), np.float32), "float32")
            got: list[Any] = []
            dist.all_gather(got, T(np.array([rank], np.int64)), group=g)
            _close(
                "group all_gather",
                np.concatenate([t.numpy() for t in got]),
                np.array(ranks, np.int64),
                "int64",
            )
        else:
            assert res is None and g.rank == -1
            _close("non-member keeps its tensor", x.numpy(), np.full(3, float(rank), np.float32), "float32")
        dist.barrier()
        if n >= 4:
            evens = dist.new_group([0, 2])
            odds = dist.new_group([1, 3])
            mine = evens if rank % 2 == 0 else odds
            z = T(np.array([rank + 1], np.int32))
            dist.all_reduce(z, group=mine)
            _close("disjoint groups", z.numpy(), np.array([4 if rank % 2 == 0 else 6], np.int32), "int32")

    c.check("new_group", groups)

    def mismatch() -> None:
        from adapter_api import CommunicationError

        from .collective import _STATE

        old = _STATE["debug"]
        _STATE["debug"] = True
        try:
            x = T(np.zeros(3 if rank == 0 else 4, np.float32))
            try:
                dist.all_reduce(x)
            except CommunicationError as exc:
                assert "disagree" in str(exc) and "shape" in str(exc), str(exc)
            else:
                raise AssertionError("a shape mismatch across ranks was not reported")
        finally:
            _STATE["debug"] = old

    c.check("debug/shape_mismatch", mismatch)

    def default_mismatch() -> None:
        """With no setting, the first call from a call site is checked: another dtype on one rank
        is reported, not reduced into wrong values."""
        from adapter_api import CommunicationError

        from .collective import _STATE

        old = _STATE["debug"]
        _STATE["debug"] = None
        try:
            x = T(np.zeros(4, np.float32 if rank == 0 else np.int32))
            try:
                dist.all_reduce(x)
            except CommunicationError as exc:
                assert "disagree" in str(exc) and "dtype" in str(exc), str(exc)
            else:
                raise AssertionError("a dtype mismatch across ranks was not reported by default")
        finally:
            _STATE["debug"] = old

    c.check("default/dtype_mismatch", default_mismatch)
    dist.barrier()
    # the layer users call: every reshard transition, made of the collectives above
    from .auto_parallel.selfcheck import run_reshard_checks

    run_reshard_checks(lambda name, fn: c.check(f"reshard/{name}", fn), device)
    dist.barrier()
    return c


def run_tier(
    device: str = "cpu",
    nranks: tuple[int, ...] = (2, 4),
    timeout: float = 600.0,
    collective_timeout: float = 60.0,
) -> list[dict[str, Any]]:
    """Launch this module with each rank count under mpiexec; every rank's records, with
    ``nranks`` and ``rank`` added. A launch that fails gives one failed record with its output.
    ``timeout`` bounds each launch; ``collective_timeout`` each collective's wait for a missing
    rank (the ranks then report which one)."""
    from .launch import run

    out: list[dict[str, Any]] = []
    for n in nranks:
        with tempfile.TemporaryDirectory(prefix="oarlock-collectives-") as d:
            proc = run(
                ["-m", "framework.distributed.selfcheck", "--device", device, "--out", d],
                n,
                timeout=timeout,
                collective_timeout=collective_timeout,
                cwd=d,  # NOTE: a neutral folder: a vendor's project folder named like its package would shadow it
            )
            for r in range(n):
                path = os.path.join(d, f"rank{r}.json")
                if not os.path.exists(path):
                    out.append(
                        {
                            "nranks": n,
                            "rank": r,
                            "name": "launch",
                            "ok": False,
                            "detail": f"rank {r} wrote no result (exit {proc.returncode}):\n{proc.stdout[-4000:]}",
                        }
                    )
                    continue
                with open(path) as f:
                    for rec in json.load(f):
                        out.append({"nranks": n, "rank": r, **rec})
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="framework.distributed.selfcheck", description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cpu")
    p.add_argument("--out", required=True, help="folder for rank<r>.json")
    p.add_argument(
        "--dtypes", default="", help="comma-separated dtypes (default: every dtype the device holds)"
    )
    a = p.parse_args(argv)
    try:
        c = run_checks(a.device, tuple(a.dtypes.split(",")) if a.dtypes else None)
        records = c.records
        rank = c.rank
    except Exception:  # noqa: BLE001 — set-up failed: report it as one record
        import framework.distributed as dist

        rank = dist.get_rank()
        records = [{"name": "setup", "ok": False, "detail": traceback.format_exc()[-3000:]}]
    with open(os.path.join(a.out, f"rank{rank}.json"), "w") as f:
        json.dump(records, f)
    bad = [r for r in records if not r["ok"]]
    for r in bad[:20]:
        print(f"[rank {rank}] FAIL {r['name']}: {r.get('detail', '')}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
