"""What ``fw.profiler`` costs: off (against a tree without it) and on, side by side.

    python benchmarks/profiler.py [--baseline DIR] [--tree DIR] [--rounds 5] [--number 20000] [--steps 5]

Cases, each variant in its own interpreter, the variants taking turns round by round (so all
see the same machine load; each round starts with the next variant); medians over rounds,
ratios to the first column:

- ``add 16``: ``x + y`` of two float32[16] tensors, microseconds per op (median of 5 repeats
  of ``--number`` calls in each interpreter);
- ``tiny llama step``: a training step of the examples' tiny Llama (eager: forward, loss,
  backward, AdamW), milliseconds (median of ``--steps`` steps after 2 warm-ups).

Variants: ``baseline`` (``--baseline DIR``: a tree from before the profiler, e.g.
``git archive <commit> | tar -x -C DIR``; skipped without it), ``off`` (the tree measured:
``--tree DIR``, this one by default; no profiler),
``on, CPU`` (``targets=[ProfilerTarget.CPU]``: host spans) and ``on, all`` (the default
targets: host spans and the device's kernel spans from its events).
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
import json, os, statistics, sys, time
sys.path.insert(0, sys.argv[1])
sys.path.insert(1, {root!r})  # conformance (the tiny Llama) from this tree
import numpy as np
import framework as fw
variant, number, steps = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
prof = None
if variant.startswith("on"):
    from framework import profiler
    targets = [profiler.ProfilerTarget.CPU] if variant == "on, CPU" else None
    prof = profiler.Profiler(targets=targets, on_trace_ready=lambda p: None)
a = fw.to_tensor(np.ones(16, np.float32)); b = fw.to_tensor(np.ones(16, np.float32))
from conformance.models import build
task = build("tiny_llama", 0)
for s in range(2):
    task.train_step(s)
if prof is not None:
    prof.start()
runs = []
for _ in range(5):
    t0 = time.perf_counter()
    for _ in range(number):
        a + b
    runs.append((time.perf_counter() - t0) / number * 1e6)
if prof is not None:  # the spans of the add loop are dropped: a step's worth is what is kept
    prof.stop(); prof.start()
ms = []
for s in range(steps):
    t0 = time.perf_counter()
    float(task.train_step(2 + s).item())
    ms.append((time.perf_counter() - t0) * 1e3)
if prof is not None:
    prof.stop()
print(json.dumps({{"add": statistics.median(runs), "step": statistics.median(ms)}}))
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--baseline", help="a tree without the profiler (its root directory)")
    ap.add_argument("--tree", default=ROOT, help="the tree measured (default: this one)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--number", type=int, default=20000)
    ap.add_argument("--steps", type=int, default=5)
    args = ap.parse_args()
    sys.path.insert(0, ROOT)
    from benchmarks import cpu_description

    variants = [("baseline", args.baseline)] if args.baseline else []
    variants += [("off", args.tree), ("on, CPU", args.tree), ("on, all", args.tree)]
    env = dict(os.environ, OARLOCK_NUM_THREADS="1", OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    env.pop("PYTHONPATH", None)
    got: dict[str, list[dict[str, float]]] = {v: [] for v, _ in variants}
    child = _CHILD.format(root=ROOT)
    for r in range(args.rounds):
        k = r % len(variants)  # each round starts with the next variant: no one always goes first
        for name, tree in variants[k:] + variants[:k]:
            out = subprocess.run(
                [
                    sys.executable,
                    "-c",
                    child,
                    tree,
                    name.replace("baseline", "off"),
                    str(args.number),
                    str(args.steps),
                ],
                capture_output=True,
                text=True,
                env=env,
                cwd=tree,
            )
            if out.returncode:
                sys.exit(f"[benchmarks] the {name!r} run failed:\n{out.stderr[-3000:]}")
            got[name].append(json.loads(out.stdout.strip().splitlines()[-1]))
    print(f"{cpu_description()}; 1 thread; medians of {args.rounds} rounds, variants taking turns")
    first = variants[0][0]
    print(f"{'case':18s}" + "".join(f" {v:>18s}" for v, _ in variants))
    for case, unit in (("add", "us/op"), ("step", "ms")):
        med = {v: statistics.median(r[case] for r in got[v]) for v, _ in variants}
        cells = "".join(f" {med[v]:9.3f} ({med[v] / med[first]:4.2f}x)" for v, _ in variants)
        label = "add 16" if case == "add" else "tiny llama step"
        print(f"{label + ' ' + unit:18s}{cells}")


if __name__ == "__main__":
    main()
