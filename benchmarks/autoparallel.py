"""Automatic parallelism on cpu: step time and bytes moved per step of the tiny Llama of
conformance/models.py laid out as DP, TP and DP x TP by placements (``dist.shard_layer``),
against the data-parallel baseline (``dist.DataParallel``: the whole model on each rank, the
gradients all-reduced in buckets), side by side in one run.

    oarlock launch -n 4 benchmarks/autoparallel.py [--steps 12] [--batch 16] [--seq 64]

Each configuration trains ``--steps`` steps (AdamW, the first two not timed); rank 0 prints the
median step time, its ratio to the baseline, the bytes this rank moved per step (the
reshards' log: all-gathers, all-reduces, reduce-scatters, the gradient all-reduces of the
rules; for the baseline the gradient bytes it all-reduces) and the parameter bytes per rank.
Add ``--plan`` to print ``dist.auto_plan``'s table for the same model and batch, with the
hand-written placements of examples/train_tiny_llama_tp.py scored beside its own layouts.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import framework as fw  # noqa: E402
import framework.distributed as dist  # noqa: E402
import framework.nn.functional as F  # noqa: E402
from conformance.models import TinyLlama, char_corpus  # noqa: E402
from examples.train_tiny_llama_tp import tp_shard_fn  # noqa: E402


def batches(steps: int, batch: int, seq: int) -> list[tuple[np.ndarray, np.ndarray]]:
    ids, _ = char_corpus()
    rng = np.random.default_rng(0)
    out = []
    for _ in range(steps):
        s = rng.integers(0, len(ids) - seq - 1, batch)
        out.append((np.stack([ids[i : i + seq] for i in s]), np.stack([ids[i + 1 : i + seq + 1] for i in s])))
    return out


def run(kind: str, dp: int, tp: int, args: argparse.Namespace) -> dict[str, float]:
    """Train ``args.steps`` steps; the median step seconds, bytes moved per step, bytes held."""
    _, vocab = char_corpus()
    fw.seed(0)
    model = TinyLlama(len(vocab), max_seq=args.seq)
    rank, n = dist.get_rank(), dist.get_world_size()
    mesh = None
    if kind == "baseline":
        model = dist.DataParallel(model)
        moved = sum(
            p.numel() * p.dtype.itemsize for p in model.parameters()
        )  # one all-reduce of every gradient
    else:
        mesh = dist.ProcessMesh(np.arange(n).reshape(dp, tp), dim_names=["dp", "mp"])
        dist.shard_layer(model, mesh, tp_shard_fn("mp"))
    opt = fw.optim.AdamW(learning_rate=3e-3, parameters=model.parameters())
    if mesh is not None:  # the states follow the parameters' placements
        opt = dist.shard_optimizer(opt)
    times, logged = [], []
    log = dist.auto_parallel.reshard_log()
    for step, (x, y) in enumerate(batches(args.steps, args.batch, args.seq)):
        dist.barrier()
        t0, start = time.perf_counter(), len(log)
        if kind == "baseline":  # this rank's part of the batch
            part = slice(rank * args.batch // n, (rank + 1) * args.batch // n)
            xt, yt = fw.to_tensor(x[part]), fw.to_tensor(y[part])
        else:
            xt = dist.shard_tensor(fw.to_tensor(x), mesh, [dist.Shard(0), dist.Replicate()])
            yt = dist.shard_tensor(fw.to_tensor(y), mesh, [dist.Shard(0), dist.Replicate()])
        logits = model(xt)
        loss = F.cross_entropy(logits.reshape((-1, logits.shape[-1])), yt.reshape((-1,)))
        loss.backward()
        if kind == "baseline":
            model.apply_collective_grads()
        opt.step()
        opt.clear_grad()
        float(loss.numpy())
        if step >= 2:
            times.append(time.perf_counter() - t0)
            logged.append(sum(r["bytes"] for r in log[start:]))
    held, _ = dist.auto_parallel.local_bytes(model._layers if kind == "baseline" else model)
    return {
        "ms": statistics.median(times) * 1e3,
        "bytes": moved if kind == "baseline" else statistics.median(logged),
        "held": held,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--plan", action="store_true", help="also print dist.auto_plan's table")
    args = ap.parse_args()
    dist.init_parallel_env()
    n = dist.get_world_size()
    configs = [("baseline", n, 1, "DataParallel (baseline)"), ("auto", n, 1, f"DP {n}")]
    configs += [("auto", 1, n, f"TP {n}")]
    configs += [("auto", n // d, d, f"DP {n // d} x TP {d}") for d in range(2, n) if n % d == 0]
    rows = [(label, run(kind, dp, tp, args)) for kind, dp, tp, label in configs]
    if dist.get_rank() == 0:
        base = rows[0][1]["ms"]
        print(
            f"tiny Llama (conformance/models.py), batch {args.batch} x seq {args.seq}, {n} ranks on cpu, "
            f"median of {args.steps - 2} steps (rank 0)"
        )
        print(
            f"{'layout':<26}{'step ms':>9}{'vs baseline':>13}{'bytes moved/step':>18}{'param bytes/rank':>18}"
        )
        for label, r in rows:
            print(f"{label:<26}{r['ms']:>9.1f}{r['ms'] / base:>12.2f}x{r['bytes']:>18.0f}{r['held']:>18}")
    if args.plan:
        _, vocab = char_corpus()
        fw.seed(0)
        x, y = batches(1, args.batch, args.seq)[0]
        model = TinyLlama(len(vocab), max_seq=args.seq)
        kinds = {
            "qkv": "col",
            "gate": "col",
            "up": "col",
            "head": "col",
            "embed": "col",
            "proj": "row",
            "down": "row",
        }
        hand = {
            m: kinds[m.rsplit(".", 1)[-1]]
            for m, _ in model.named_sublayers()
            if m.rsplit(".", 1)[-1] in kinds
        }
        # the placements of examples/train_tiny_llama_tp.py scored beside the search's own
        dist.auto_plan(model, dist.ProcessMesh(list(range(n))), (x, y), extra={"hand-written": hand})


if __name__ == "__main__":
    main()
