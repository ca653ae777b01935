"""Pipeline bubble: the share of a step each stage spends outside its forwards and backwards,
from the schedule's own timestamps (``PipelineParallel.timeline``), for 1F1B and FThenB side
by side in one run.

    oarlock launch -n 4 benchmarks/pipeline.py [--micro 8] [--steps 6] [--width 512] [--api placement]

``--stages`` (default: every rank) Linear(width, width) + tanh pairs per stage, ``--micro``
micro-batches of 16 rows. Rank 0 prints, per schedule, the median over the steps (after the
first) of each stage's bubble, their mean, the median step time, and the ideal 1F1B bubble
``(p - 1) / (m + p - 1)`` of p equal stages with free communication. On a machine with fewer
cores than ranks the stages cannot run at once, and the bubble measures the sharing of the
cores as much as the schedule.

``--api placement`` builds the same stages from placements instead (Paddle 3's auto-parallel
pipeline: an ``nn.Sequential`` whose layers sit on the slices of a mesh's ``pp`` axis, trained
through ``dist.to_static`` with ``dist.Strategy().pipeline``); the schedule is the same one.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

os.environ.setdefault("OARLOCK_COMPILE_BACKGROUND", "0")  # time built kernels, not a cold cache's stand-ins
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import framework as fw  # noqa: E402
import framework.distributed as dist  # noqa: E402
from framework.distributed import fleet  # noqa: E402
from framework.distributed.fleet.meta_parallel import LayerDesc, PipelineLayer, PipelineParallel  # noqa: E402


def placed(p: int, layers: int, w: int, mb: int, micro: int, mode: str) -> tuple[dist.DistModel, None]:
    """The stages from placements: layer pairs on ``mesh.get_mesh_with_dim("pp", stage)``."""
    mesh = dist.ProcessMesh(np.arange(p).reshape(p, 1), dim_names=["pp", "dp"])
    net = fw.nn.Sequential(
        *[fw.nn.Linear(w, w) if i % 2 == 0 else fw.nn.Tanh() for i in range(2 * p * layers)]
    )
    for i, layer in enumerate(net):
        dist.shard_layer(layer, mesh.get_mesh_with_dim("pp", i // (2 * layers)))
    s = dist.Strategy({"pipeline": {"enable": True, "schedule_mode": mode}})
    s.pipeline.micro_batch_size, s.pipeline.accumulate_steps = mb, micro
    opt = fw.optimizer.SGD(0.001, parameters=net.parameters())
    return dist.to_static(net, loss=fw.nn.MSELoss(), optimizer=opt, strategy=s), None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--micro", type=int, default=8)
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--width", type=int, default=512)
    ap.add_argument("--layers", type=int, default=2, help="Linear+tanh pairs per stage")
    ap.add_argument("--api", default="fleet", choices=["fleet", "placement"])
    args = ap.parse_args()
    dist.init_parallel_env()
    rank, p = dist.get_rank(), dist.get_world_size()
    topo = fleet.CommunicateTopology(["data", "pipe", "model"], [1, p, 1])
    hcg = fleet.HybridCommunicateGroup(topo)
    w, mb = args.width, 16
    descs = []
    for _ in range(p * args.layers):
        descs += [LayerDesc(fw.nn.Linear, w, w), fw.tanh]
    rng = np.random.default_rng(0)
    x = fw.to_tensor(rng.normal(size=(mb * args.micro, w)).astype(np.float32))
    y = fw.to_tensor(rng.normal(size=(mb * args.micro, w)).astype(np.float32))
    report = {}
    runs = {}
    for mode in ("1F1B", "FThenB"):
        if args.api == "placement":
            runs[mode] = placed(p, args.layers, w, mb, args.micro, mode)
            continue
        s = fleet.DistributedStrategy()
        s.pipeline_configs = {"micro_batch_size": mb, "accumulate_steps": args.micro, "schedule_mode": mode}
        net = PipelineLayer(descs, topology=topo, loss_fn=fw.nn.MSELoss())
        runs[mode] = (PipelineParallel(net, hcg, s), fw.optimizer.SGD(0.001, parameters=net.parameters()))
    bubbles: dict[str, list[list[float]]] = {m: [] for m in runs}
    steps: dict[str, list[float]] = {m: [] for m in runs}
    for _ in range(args.steps):  # the schedules alternate, so both see the same load
        for mode, (model, opt) in runs.items():
            dist.barrier()
            t = time.perf_counter()
            if args.api == "placement":
                model(x, y)
                model = model.pipeline
            else:
                model.train_batch([x, y], opt)
            steps[mode].append(time.perf_counter() - t)
            mine = fw.to_tensor(np.array([model.bubble()], np.float64))
            every: list = []
            dist.all_gather(every, mine)
            bubbles[mode].append([float(b.numpy()[0]) for b in every])
    if rank == 0:
        ideal = (p - 1) / (args.micro + p - 1)
        print(
            f"{p} stages ({args.api}) x {args.layers} Linear({w},{w})+tanh, {args.micro} micro-batches of {mb} rows"
        )
        for mode in runs:
            per_stage = [statistics.median(b[s] for b in bubbles[mode][1:]) for s in range(p)]
            report[mode] = per_stage
            print(
                f"  {mode:6s} bubble per stage {' '.join(f'{b:5.1%}' for b in per_stage)}  mean "
                f"{statistics.mean(per_stage):5.1%}  median step {statistics.median(steps[mode][1:]) * 1e3:7.1f} ms"
            )
        print(f"  ideal 1F1B bubble (p-1)/(m+p-1) = {ideal:.1%}")


if __name__ == "__main__":
    main()
