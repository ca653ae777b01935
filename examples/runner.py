"""The command line shared by the example scripts: ``--device``, ``--steps``, ``--seed``,
``--static`` (train under ``fw.jit.to_static``), ``--data-parallel``; a tqdm progress bar; a final summary line with the loss and the CPU fallbacks."""

from __future__ import annotations

import argparse
import os
import sys
import time

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


#: name -> (steps the example runs by default, the mean loss of the last 10 steps it stays
#: under by then on the cpu plugin with seed 0)
TARGETS = {"mlp": (200, 0.1), "cnn": (150, 0.15), "tiny_llama": (200, 1.0)}


def main(name: str, description: str, argv: list[str] | None = None) -> float:
    import framework as fw
    from conformance.models import train_steps

    default_steps, target = TARGETS[name]
    p = argparse.ArgumentParser(description=description)
    p.add_argument(
        "--device",
        default=os.environ.get("OARLOCK_DEVICE", "cpu"),
        help="device by name: cpu, opencl, cuda:0, ...",
    )
    p.add_argument(
        "--steps", type=int, default=default_steps, help=f"training steps (default {default_steps})"
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument(
        "--static",
        action="store_true",
        help="train the model under fw.jit.to_static (its forward and "
        "backward run as programs through the executor); same loss curve as eager",
    )
    p.add_argument(
        "--data-parallel",
        action="store_true",
        help="split each batch over the ranks of `oarlock launch -n N` (examples/data_parallel.py)",
    )
    args = p.parse_args(argv)
    quiet = False
    if args.data_parallel:  # every rank trains its share; rank 0 reports
        import framework.distributed as dist
        from examples.data_parallel import train_steps_data_parallel as train_steps  # noqa: F811

        dist.init_parallel_env()
        quiet = dist.get_rank() != 0

    from tqdm import tqdm

    fw.reset_fallback_stats()
    bar = tqdm(
        total=args.steps, desc=f"{name} on {args.device}", disable=args.no_progress or quiet, file=sys.stderr
    )

    def on_step(step: int, loss: float) -> None:
        bar.update(1)
        bar.set_postfix(loss=f"{loss:.4f}", refresh=False)

    t0 = time.perf_counter()
    losses = train_steps(
        name, args.steps, seed=args.seed, device=args.device, on_step=on_step, static=args.static
    )
    bar.close()
    elapsed = time.perf_counter() - t0
    tail = losses[-10:]
    final = sum(tail) / len(tail)
    verdict = ""
    if args.steps >= default_steps:
        verdict = (
            f" (target < {target} at {default_steps} steps: {'reached' if final < target else 'NOT reached'})"
        )
    if quiet:
        return final
    print(f"first loss {losses[0]:.4f}")
    print(
        f"{name}: final loss {final:.4f} (mean of the last {len(tail)} steps) after {args.steps} steps in "
        f"{elapsed:.1f}s on {args.device}{' (to_static)' if args.static else ''}{verdict}; fallbacks: {fw.fallback_stats()}"
    )
    return final
