"""Threads on cpu: 1 and 2 threads side by side in one run, Oarlock without and with its thread
policy (plugins/cpu/threads.py) and torch eager: median milliseconds (wall and process CPU) and
the speed-up of the larger thread count.

    python benchmarks/threads.py [--repeats 15] [--rounds 3] [--threads 1,2] [--cases block,tiny]

Cases:

- ``block``: one Llama block (dim 256, 4 heads, seq 128, batch 8) forward + backward, eager
  (benchmarks/train_step.py's);
- ``tiny``: a training step of the examples' tiny Llama as one ``to_static`` function with the
  compiler, AdamW's update program after it (benchmarks/compiler.py's "whole step"); torch
  eager runs the same model and step.

- ``products``: 2-D float32 products of the sizes training and the convolutions run, at the
  largest thread count, three ways in one interpreter (``OARLOCK_NUM_THREADS`` = N), interleaved
  block by block: one BLAS call on one thread (what numpy's OpenBLAS gets, threads.py's
  ``split_products``), the rows split over the OpenMP team as concurrent BLAS calls (gemm.c;
  only MKL gets it: OpenBLAS gave wrong results at random so), and one call on OpenBLAS's own
  N threads (``openblas_set_num_threads`` around the call).

Each configuration runs in a fresh interpreter (thread pools are sized when their library
loads), the configurations interleaved round by round so all see the same machine load:

- ``oarlock, no policy``: ``OARLOCK_THREAD_POLICY=0``; BLAS and OpenMP sized by
  ``OPENBLAS_NUM_THREADS``/``OMP_NUM_THREADS`` = N, OpenMP's default (spinning) wait policy;
- ``oarlock, policy``: ``OARLOCK_NUM_THREADS=N`` only;
- ``torch eager``: ``torch.set_num_threads(N)``.

CPU time is the whole process's (every thread): on a loaded machine it is the steadier figure,
and against the wall time it shows threads that spin instead of sleeping.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("OARLOCK_COMPILE_BACKGROUND", "0")  # time built kernels, not a cold cache's stand-ins
sys.path.insert(0, ROOT)
from benchmarks import cpu_description  # noqa: E402

_CHILD = r"""
import json, os, sys
sys.path.insert(0, {root!r})
case, which, n, repeats = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
if which == "torch":
    import torch
    torch.set_num_threads(n)
if case == "tiny":
    sys.argv = [sys.argv[0], "--threads", str(n)]  # benchmarks.compiler sizes the pools on import
    from benchmarks import compiler as bc
    fn = bc.torch_llama(False) if which == "torch" else bc.oarlock_whole_step("cpu", True)
from benchmarks import train_step as ts
if case == "block":
    fn = ts.torch_llama() if which == "torch" else ts.oarlock_llama("cpu")
wall, cpu = ts.timed(fn, repeats)
print(json.dumps({{"wall": wall, "cpu": cpu}}))
"""

_PRODUCTS = r"""
import ctypes, json, os, statistics, sys, time
sys.path.insert(0, {root!r})
import numpy as np
import framework as fw
from plugins.cpu import gemm, threads
fw.ones([1]).numpy()  # the plugin loads: its thread policy applies
n, repeats, rounds = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
pool = next((p for p in threads.blas_pools() if p.get("internal_api") == "openblas"), None)
setn = None
if pool is not None:
    lib = ctypes.CDLL(pool["filepath"])
    for name in ("scipy_openblas_set_num_threads64_", "openblas_set_num_threads64_", "openblas_set_num_threads"):
        if hasattr(lib, name):
            setn = getattr(lib, name); setn.argtypes = [ctypes.c_int]; break
rng = np.random.default_rng(0)
out = []
for m, k, nn in [(1024, 64, 192), (64, 1024, 192), (256, 256, 256), (1024, 256, 256), (512, 512, 512),
                 (128, 768, 768), (1024, 256, 1024)]:
    a = rng.standard_normal((m, k)).astype(np.float32); b = rng.standard_normal((k, nn)).astype(np.float32)
    c = np.empty((m, nn), np.float32)
    one, team = gemm.gemm_call(a, b, c, 1), gemm.gemm_call(a, b, c, n)
    def own():
        setn(n); one(); setn(1)
    kinds = [("one", one), ("team", team)] + ([("own", own)] if setn else [])
    reps = max(3, min(repeats, int(4e8 / (m * k * nn))))
    res = {{key: [] for key, _ in kinds}}
    for f in (one, team): f()
    for r in range(rounds):
        kinds = kinds[1:] + kinds[:1]
        for key, f in kinds:
            ts = []
            for _ in range(reps):
                t0 = time.perf_counter(); f(); ts.append(time.perf_counter() - t0)
            res[key].append(statistics.median(ts) * 1e6)
    out.append([f"{{m}}x{{k}} @ {{k}}x{{nn}}", {{key: statistics.median(v) for key, v in res.items()}}])
print(json.dumps({{"blas": gemm.blas_name("f"), "rows": out}}))
"""


def products(n: int, repeats: int, rounds: int) -> None:
    r = subprocess.run(
        [sys.executable, "-c", _PRODUCTS.format(root=ROOT), str(n), str(repeats), str(rounds)],
        env=env_for("policy", n),
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    if r.returncode:
        raise SystemExit(f"[benchmarks] products failed (exit status {r.returncode}):\n{r.stderr[-3000:]}")
    got = json.loads(r.stdout.strip().splitlines()[-1])
    print(f"\n2-D float32 products at {n} threads ({got['blas']}), median us of {rounds} rounds")
    print(f"{'':<22}{'1 call 1 thr':>13}{'team split':>12}{'BLAS own thr':>13}{'split/1':>9}{'own/1':>8}")
    for name, t in got["rows"]:
        own = t.get("own", float("nan"))
        print(
            f"{name:<22}{t['one']:>13.1f}{t['team']:>12.1f}{own:>13.1f}{t['team'] / t['one']:>9.2f}{own / t['one']:>8.2f}"
        )


KINDS = [("nopolicy", "oarlock, no policy"), ("policy", "oarlock, policy"), ("torch", "torch eager")]
TITLES = {
    "block": "Llama block d256 h4 s128 b8 fwd+bwd (eager)",
    "tiny": "tiny Llama training step, whole step to_static + compiler (torch: eager)",
    "products": "2-D products: one call on one thread, split over the team, BLAS's own threads",
}


def env_for(kind: str, n: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OARLOCK_NUM", "OARLOCK_THREAD", "OMP_"))}
    for k in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env.pop(k, None)
    if kind == "nopolicy":
        env.update(OARLOCK_THREAD_POLICY="0", OPENBLAS_NUM_THREADS=str(n), OMP_NUM_THREADS=str(n))
    elif kind == "policy":
        env.update(OARLOCK_NUM_THREADS=str(n))
    return env


CRASHES: list[str] = []


def run(case: str, kind: str, n: int, repeats: int) -> dict[str, float]:
    which = "torch" if kind == "torch" else "oarlock"
    r = subprocess.run(
        [sys.executable, "-c", _CHILD.format(root=ROOT), case, which, str(n), str(repeats)],
        env=env_for(kind, n),
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    lines = r.stdout.strip().splitlines()
    if r.returncode and lines and lines[-1].startswith("{"):
        # timed, then died on the way out: count it, keep the figure
        CRASHES.append(f"{case}: {kind} with {n} threads exited with status {r.returncode} after timing")
    elif r.returncode:
        raise SystemExit(
            f"[benchmarks] {case}: {kind} with {n} threads failed (exit status {r.returncode}):\n{r.stderr[-3000:]}"
        )
    return json.loads(lines[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=15, help="timed steps per round")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--cases", default="block,tiny", help="of: " + ", ".join(TITLES))
    args = ap.parse_args()
    counts = [int(t) for t in args.threads.split(",")]
    cases = [c for c in args.cases.split(",") if c]
    bad = [c for c in cases if c not in TITLES]
    if bad:
        raise SystemExit(f"[benchmarks] unknown case(s) {bad}; choose from {list(TITLES)}")
    kinds = KINDS
    try:
        import torch  # noqa: F401
    except ImportError:
        kinds = KINDS[:2]
    res: dict[tuple[str, str, int], list[dict[str, float]]] = {}
    if "products" in cases:
        cases.remove("products")
        print(f"cpu: {cpu_description()}")
        products(counts[-1], args.repeats * 10, args.rounds * 3)
    for _ in range(args.rounds):
        for case in cases:
            for kind, _label in kinds:
                for n in counts:
                    res.setdefault((case, kind, n), []).append(run(case, kind, n, args.repeats))
    try:
        load = " load average {:.1f} {:.1f} {:.1f};".format(*os.getloadavg())
    except OSError:
        load = ""
    print(f"cpu: {cpu_description()};{load} median of {args.rounds} rounds x {args.repeats} steps")
    lo, hi = counts[0], counts[-1]
    for case in cases:
        print(f"\n{TITLES[case]}")
        head = "".join(f"{f'{n} thr ms':>10}" for n in counts) + "".join(
            f"{f'cpu {n} thr':>10}" for n in counts
        )
        print(f"{'':<20}{head}{f'{lo}/{hi} wall':>10}{f'{hi}/{lo} cpu':>10}")
        walls: dict[str, list[float]] = {}
        for kind, label in kinds:
            walls[kind] = [statistics.median(r["wall"] for r in res[(case, kind, n)]) for n in counts]
            cpus = [statistics.median(r["cpu"] for r in res[(case, kind, n)]) for n in counts]
            cols = "".join(f"{w:>10.2f}" for w in walls[kind]) + "".join(f"{c:>10.2f}" for c in cpus)
            print(f"{label:<20}{cols}{walls[kind][0] / walls[kind][-1]:>10.2f}{cpus[-1] / cpus[0]:>10.2f}")
        if "torch" in walls:
            ratio = walls["policy"][-1] / walls["torch"][-1]
            print(f"oarlock policy / torch eager at {hi} threads: {ratio:.2f}")
    for c in sorted(set(CRASHES)):
        print(f"note: {c} ({CRASHES.count(c)}x)")


if __name__ == "__main__":
    main()
