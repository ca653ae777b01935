"""Threads on cpu: the Llama block fwd+bwd (benchmarks/train_step.py's) with 1 and 2 threads,
Oarlock without and with its thread policy (plugins/cpu/threads.py) and torch eager, side by
side in one run: median milliseconds and the 2-thread speed-up.

    python benchmarks/threads.py [--repeats 15] [--threads 1,2]

Each configuration runs in a fresh interpreter (thread pools are sized when their library
loads), the configurations interleaved round by round so all see the same machine load:

- ``oarlock, no policy``: ``OARLOCK_THREAD_POLICY=0``; BLAS and OpenMP sized by
  ``OPENBLAS_NUM_THREADS``/``OMP_NUM_THREADS`` = N, OpenMP's default (spinning) wait policy;
- ``oarlock, policy``: ``OARLOCK_NUM_THREADS=N`` only;
- ``torch eager``: ``torch.set_num_threads(N)``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_CHILD = r"""
import json, os, sys, time, statistics
sys.path.insert(0, {root!r})
which, n, repeats = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
from benchmarks import train_step as ts
if which == "torch":
    import torch
    torch.set_num_threads(n)
    fn = ts.torch_llama()
else:
    fn = ts.oarlock_llama("cpu")
wall, cpu = ts.timed(fn, repeats)
print(json.dumps({{"wall": wall, "cpu": cpu}}))
"""


def env_for(kind: str, n: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OARLOCK_NUM", "OARLOCK_THREAD", "OMP_"))}
    for k in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env.pop(k, None)
    if kind == "nopolicy":
        env.update(OARLOCK_THREAD_POLICY="0", OPENBLAS_NUM_THREADS=str(n), OMP_NUM_THREADS=str(n))
    elif kind == "policy":
        env.update(OARLOCK_NUM_THREADS=str(n))
    return env


def run(kind: str, n: int, repeats: int) -> dict[str, float]:
    which = "torch" if kind == "torch" else "oarlock"
    r = subprocess.run(
        [sys.executable, "-c", _CHILD.format(root=ROOT), which, str(n), str(repeats)],
        env=env_for(kind, n),
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    if r.returncode:
        raise SystemExit(f"[benchmarks] {kind} with {n} threads failed:\n{r.stderr[-3000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=15, help="timed steps per round")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", default="1,2")
    args = ap.parse_args()
    counts = [int(t) for t in args.threads.split(",")]
    kinds = [("nopolicy", "oarlock, no policy"), ("policy", "oarlock, policy"), ("torch", "torch eager")]
    try:
        import torch  # noqa: F401
    except ImportError:
        kinds = kinds[:2]
    res: dict[tuple[str, int], list[dict[str, float]]] = {}
    for _ in range(args.rounds):
        for kind, _label in kinds:
            for n in counts:
                res.setdefault((kind, n), []).append(run(kind, n, args.repeats))
    print(
        f"Llama block d256 h4 s128 b8 fwd+bwd on cpu; median of {args.rounds} rounds x {args.repeats} steps; "
        f"{os.cpu_count()} cores"
    )
    head = "".join(f"{f'{n} thr ms':>11}" for n in counts)
    print(
        f"{'':<22}{head}{f'{counts[0]}/{counts[-1]} speed-up':>16}{'cpu ms (' + str(counts[-1]) + ' thr)':>16}"
    )
    for kind, label in kinds:
        walls = [statistics.median(r["wall"] for r in res[(kind, n)]) for n in counts]
        cpu = statistics.median(r["cpu"] for r in res[(kind, counts[-1])])
        cols = "".join(f"{w:>11.2f}" for w in walls)
        print(f"{label:<22}{cols}{walls[0] / walls[-1]:>16.2f}{cpu:>16.2f}")


if __name__ == "__main__":
    main()
