"""Profile training steps of the tiny Llama with ``fw.profiler``: a Chrome trace to open in
Perfetto (https://ui.perfetto.dev, "Open trace file") and the summary tables.

    python examples/profile_tiny_llama.py [--device cpu] [--static] [--out profiler_log] [--record 2]

Steps 0 and 1 warm up, the next ``--record`` steps (2 and 3 by default: ``scheduler=(2, 4)``)
are recorded; each step's forward,
backward and optimizer update are named with ``RecordEvent``. With ``--static`` the model runs
as a ``to_static`` program (its instructions and the compiler's fused groups in the trace).
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import framework as fw  # noqa: E402
from conformance.models import build  # noqa: E402
from framework import profiler  # noqa: E402


def main(argv: list[str] | None = None) -> str:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default=os.environ.get("OARLOCK_DEVICE", "cpu"))
    p.add_argument("--static", action="store_true", help="the model as a to_static program")
    p.add_argument("--out", default="profiler_log", help="directory of the trace")
    p.add_argument("--record", type=int, default=2, help="steps recorded after the two warm-ups")
    p.add_argument("--steps", type=int, default=5)
    args = p.parse_args(argv)
    if args.record < 1:
        p.error(f"--record takes a number of steps >= 1, got {args.record}")
    args.steps = max(args.steps, 3 + args.record)
    task = build("tiny_llama", 0, args.device, args.static)
    with fw.device(args.device):
        with profiler.Profiler(
            scheduler=(2, 2 + args.record),
            on_trace_ready=profiler.export_chrome_tracing(args.out, "tiny_llama"),
        ) as prof:
            for step in range(args.steps):
                x, y = task.batch(step)
                with profiler.RecordEvent("forward"):
                    loss = task.loss(task.model(x), y)
                with profiler.RecordEvent("backward"):
                    loss.backward()
                with profiler.RecordEvent("optimizer"):
                    task.update()
                float(loss.item())
                prof.step()
    prof.summary(time_unit="ms")
    newest = max((os.path.join(args.out, f) for f in os.listdir(args.out)), key=os.path.getmtime)
    print(f"trace: {newest} (open it at https://ui.perfetto.dev)")
    return newest


if __name__ == "__main__":
    main()
