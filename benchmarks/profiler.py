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

``--interleaved``: one interpreter, one tiny Llama, one ``Profiler`` whose scheduler records
every other step (``make_scheduler(closed=1, ready=0, record=1)``), so steps with the profiler
on and off alternate on the same model, memory and machine load: ``--steps`` pairs (the order
inside a pair alternates), each step timed alone on the wall clock and on the process's CPU
clock (other processes' load not counted); the recording is handed over (``on_trace_ready``)
between steps, outside the timed step. Prints the medians of the on and off steps and the
median of the pairs' ratios, for ``targets=[CPU]`` and for the default targets (device spans
too), each in its own interpreter, taking turns ``--rounds`` times.

``--cycle``: one interpreter runs the three states in turn, step by step (off, host spans only,
host and device spans; each cycle starts with the next state), a ``Profiler`` started before
and stopped after each profiled step (its result built outside the timed step); ``--steps``
cycles, process CPU time; medians of the per-cycle ratios to ``off`` over ``--rounds``
interpreters. With ``--baseline DIR`` (another tree, e.g. ``git worktree add --detach DIR main``)
that tree's interpreters take turns with this one's, round by round: an A/B of the profiler's
cost in one run.
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


_INTERLEAVED = r"""
import json, sys, time, statistics
sys.path.insert(0, {root!r})
import framework as fw
from framework import profiler
from conformance.models import build
variant, pairs = sys.argv[1], int(sys.argv[2])
targets = [profiler.ProfilerTarget.CPU] if variant == "CPU" else None
task = build("tiny_llama", 0)
for s in range(3):
    float(task.train_step(s).item())
kept = []
def ready(p):  # the period's result is built in step(), outside the timed step; keep its size
    kept.append(len(p.profiler_result.events))
sched = profiler.make_scheduler(closed=1, ready=0, record=1)
prof = profiler.Profiler(targets=targets, scheduler=sched, on_trace_ready=ready)
prof.start()  # step 0 is CLOSED: off; step 1 RECORD_AND_RETURN: on; ...
times = {{True: [], False: []}}
n = 0
for i in range(2 * pairs + 1):
    on = prof.current_state != profiler.ProfilerState.CLOSED
    w0, c0 = time.perf_counter(), time.process_time()
    float(task.train_step(3 + i).item())
    w1, c1 = time.perf_counter(), time.process_time()
    prof.step()
    if i:  # the first off step has no partner
        times[on].append(((w1 - w0) * 1e3, (c1 - c0) * 1e3))
prof.stop()
on, off = times[True], times[False]
print(json.dumps({{
    "on_wall": statistics.median(t[0] for t in on), "off_wall": statistics.median(t[0] for t in off),
    "on_cpu": statistics.median(t[1] for t in on), "off_cpu": statistics.median(t[1] for t in off),
    "ratio_wall": statistics.median(a[0] / b[0] for a, b in zip(on, off)),
    "ratio_cpu": statistics.median(a[1] / b[1] for a, b in zip(on, off)),
    "events": statistics.median(kept),
}}))
"""


_CYCLE = r"""
import json, sys, time, statistics
sys.path.insert(0, {root!r})
import framework as fw
from framework import profiler
from conformance.models import build
cycles = int(sys.argv[1])
task = build("tiny_llama", 0)
for s in range(3):
    float(task.train_step(s).item())
T = profiler.ProfilerTarget
states = {{"off": None, "CPU": [T.CPU], "all": [T.CPU, T.GPU, T.CUSTOM_DEVICE]}}
names = list(states)
cpu = {{k: [] for k in names}}
i = 3
for c in range(cycles):
    k0 = c % len(names)  # each cycle starts with the next state
    for name in names[k0:] + names[:k0]:
        prof = None
        if states[name] is not None:
            prof = profiler.Profiler(targets=states[name], on_trace_ready=lambda p: None)
            prof.start()
        c0 = time.process_time()
        float(task.train_step(i).item())
        c1 = time.process_time()
        if prof is not None:
            prof.stop()  # the result is built here, outside the timed step
        cpu[name].append((c1 - c0) * 1e3)
        i += 1
out = {{k: statistics.median(v) for k, v in cpu.items()}}
for k in ("CPU", "all"):
    out[k + "/off"] = statistics.median(a / b for a, b in zip(cpu[k], cpu["off"]))
print(json.dumps(out))
"""


def cycle(args: argparse.Namespace, env: dict[str, str]) -> None:
    """``--cycle``: off, host spans, host and device spans in turn, step by step, one interpreter
    (per tree: with ``--baseline DIR`` that tree's interpreters take turns with this one's)."""
    from benchmarks import cpu_description

    trees = ([("baseline", args.baseline)] if args.baseline else []) + [("tree", args.tree)]
    got: dict[str, list[dict[str, float]]] = {t: [] for t, _ in trees}
    load0 = os.getloadavg()
    for r in range(args.rounds):
        k = r % len(trees)  # each round starts with the next tree
        for label, tree in trees[k:] + trees[:k]:
            out = subprocess.run(
                [sys.executable, "-c", _CYCLE.format(root=tree), str(args.steps)],
                capture_output=True,
                text=True,
                env=env,
                cwd=tree,
            )
            if out.returncode:
                sys.exit(f"[benchmarks] the --cycle run of {tree} failed:\n{out.stderr[-3000:]}")
            got[label].append(json.loads(out.stdout.strip().splitlines()[-1]))
    load1 = os.getloadavg()
    print(
        f"{cpu_description()}; 1 thread; tiny Llama training step, process CPU time; off / targets=[CPU] / "
        f"default targets in turn, step by step, {args.steps} cycles in one interpreter; medians of "
        f"{args.rounds} interpreters per tree; load average {load0[0]:.1f} -> {load1[0]:.1f}"
    )
    print(f"{'':28s} {'off':>8s} {'on, CPU':>8s} {'on, all':>8s}")
    for label, tree in trees:
        med = {k: statistics.median(g[k] for g in got[label]) for k in got[label][0]}
        name = f"{label} ({os.path.basename(os.path.normpath(tree))})"[:28]
        print(f"{name:28s} {med['off']:8.2f} {med['CPU']:8.2f} {med['all']:8.2f}  cpu ms")
        print(f"{'':28s} {1:7.3f}x {med['CPU/off']:7.3f}x {med['all/off']:7.3f}x  ratio to off")


def interleaved(args: argparse.Namespace, env: dict[str, str]) -> None:
    """``--interleaved``: the profiler on and off in alternate steps of one interpreter."""
    from benchmarks import cpu_description

    variants = ["CPU", "all"]
    got: dict[str, list[dict[str, float]]] = {v: [] for v in variants}
    code = _INTERLEAVED.format(root=args.tree)
    load0 = os.getloadavg()
    for r in range(args.rounds):
        k = r % len(variants)
        for v in variants[k:] + variants[:k]:
            out = subprocess.run(
                [sys.executable, "-c", code, v, str(args.steps)],
                capture_output=True,
                text=True,
                env=env,
                cwd=args.tree,
            )
            if out.returncode:
                sys.exit(f"[benchmarks] the interleaved {v!r} run failed:\n{out.stderr[-3000:]}")
            got[v].append(json.loads(out.stdout.strip().splitlines()[-1]))
    load1 = os.getloadavg()
    print(
        f"{cpu_description()}; 1 thread; tiny Llama training step, profiler on and off in alternate "
        f"steps of one interpreter, {args.steps} pairs; medians of {args.rounds} rounds; "
        f"load average {load0[0]:.1f} -> {load1[0]:.1f}"
    )
    print(
        f"{'targets':8s} {'off ms':>9s} {'on ms':>9s} {'on/off':>7s} {'off cpu ms':>11s} "
        f"{'on cpu ms':>10s} {'on/off cpu':>10s} {'events/step':>11s}"
    )
    for v in variants:
        med = {key: statistics.median(x[key] for x in got[v]) for key in got[v][0]}
        print(
            f"{v:8s} {med['off_wall']:9.2f} {med['on_wall']:9.2f} {med['ratio_wall']:6.3f}x "
            f"{med['off_cpu']:11.2f} {med['on_cpu']:10.2f} {med['ratio_cpu']:9.3f}x {med['events']:11.0f}"
        )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--baseline", help="a tree without the profiler (its root directory)")
    ap.add_argument("--tree", default=ROOT, help="the tree measured (default: this one)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--number", type=int, default=20000)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument(
        "--interleaved", action="store_true", help="on and off in alternate steps of one interpreter"
    )
    ap.add_argument(
        "--cycle",
        action="store_true",
        help="off, host spans and host+device spans in turn, step by step, in one interpreter",
    )
    args = ap.parse_args()
    sys.path.insert(0, ROOT)
    from benchmarks import cpu_description

    if args.interleaved or args.cycle:
        env = dict(os.environ, OARLOCK_NUM_THREADS="1", OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
        env.pop("PYTHONPATH", None)
        (cycle if args.cycle else interleaved)(args, env)
        return

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
