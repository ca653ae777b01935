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

Where the bubble goes, per stage (medians over the steps), printed under each schedule:

``busy``      wall time inside its forwards and backwards, as a share of the step (1 - bubble)
``cpu/busy``  CPU time of the stage's thread inside them over their wall time: below 100 %,
              the stage was preempted mid-computation (cores shared)
``p2p``       wall time inside the point-to-point calls (waiting for a neighbour included)
``other``     the rest of the step (the loss broadcast, the tied-weight and dp reductions)
``F``, ``B``  the median CPU milliseconds of one forward, one backward, per stage (the last
              stage's forward includes the loss)
``sim``       the bubble the schedule itself leaves with these stages' costs: the 1F1B (or
              FThenB) order replayed with each forward's and backward's measured CPU time and
              free communication, as if every stage had a core of its own
              (``1 - sum of busy / (p x makespan)``); beside it the ideal of equal stages,
              ``(p - 1) / (m + p - 1)`` for both schedules

``--repeat N`` runs the whole measurement N times in the job and prints the median of the runs
too. The load average (``/proc/loadavg``) is printed at the start and the end.
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


#: per schedule step of this rank: CPU seconds of each forward / backward (kind, micro, cpu)
CPU_STEPS: list[tuple[str, int, float]] = []
P2P_TIME = [0.0]  # wall seconds inside the point-to-point calls


def _instrument() -> None:
    """Measure the CPU time of each forward and backward, and the wall time of the p2p calls."""
    from framework.distributed.fleet.meta_parallel import p2p

    def cpu_timed(kind: str, fn):
        def run(self, *args):
            t = time.thread_time()
            try:
                return fn(self, *args)
            finally:
                CPU_STEPS.append((kind, self.timeline[-1][1], time.thread_time() - t))

        return run

    PipelineParallel._forward_step = cpu_timed("F", PipelineParallel._forward_step)
    PipelineParallel._backward_step = cpu_timed("B", PipelineParallel._backward_step)

    def wall_timed(fn):
        def run(*args, **kwargs):
            t = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                P2P_TIME[0] += time.perf_counter() - t

        return run

    for name in (
        "recv_forward",
        "send_forward",
        "recv_backward",
        "send_backward",
        "send_forward_recv_backward",
        "send_backward_recv_forward",
    ):
        setattr(p2p.P2P, name, wall_timed(getattr(p2p.P2P, name)))


def schedule_order(mode: str, p: int, s: int, m: int) -> list[tuple[str, int]]:
    """The order stage ``s`` of ``p`` runs its forwards and backwards in (pipeline_parallel.py)."""
    warm = m if mode == "FThenB" else min(p - s - 1, m)
    order = [("F", i) for i in range(warm)]
    for j in range(m - warm):
        order += [("F", warm + j), ("B", j)]
    return order + [("B", i) for i in range(m - warm, m)]


def simulate(mode: str, cost: list[dict[tuple[str, int], float]]) -> float:
    """The bubble of ``mode`` with stage ``s``'s step ``(kind, i)`` costing ``cost[s][kind, i]``
    seconds and free communication: each stage runs its order, a forward after the previous
    stage's forward of that micro-batch, a backward after the next stage's backward of it."""
    p, m = len(cost), len(cost[0]) // 2
    done: dict[tuple[int, str, int], float] = {}
    orders = [schedule_order(mode, p, s, m) for s in range(p)]
    pos, free = [0] * p, [0.0] * p
    while any(pos[s] < len(orders[s]) for s in range(p)):
        moved = False
        for s in range(p):
            while pos[s] < len(orders[s]):
                kind, i = orders[s][pos[s]]
                if kind == "F":
                    dep = (s - 1, "F", i) if s > 0 else None
                else:  # the last stage's backward follows its own forward, run before it
                    dep = (s + 1, "B", i) if s < p - 1 else None
                if dep is not None and dep not in done:
                    break
                free[s] = max(free[s], done[dep] if dep is not None else 0.0) + cost[s][kind, i]
                done[s, kind, i] = free[s]
                pos[s] += 1
                moved = True
        if not moved:
            raise RuntimeError("the schedule deadlocks")
    span = max(free)
    return 1.0 - sum(sum(c.values()) for c in cost) / (p * span)


def _load() -> str:
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--micro", type=int, default=8)
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--width", type=int, default=512)
    ap.add_argument("--layers", type=int, default=2, help="Linear+tanh pairs per stage")
    ap.add_argument("--api", default="fleet", choices=["fleet", "placement"])
    ap.add_argument("--repeat", type=int, default=1, help="measurements in this job (medians printed)")
    args = ap.parse_args()
    _instrument()
    dist.init_parallel_env()
    rank, p = dist.get_rank(), dist.get_world_size()
    if rank == 0:
        print(f"load average at the start: {_load()}", flush=True)
    topo = fleet.CommunicateTopology(["data", "pipe", "model"], [1, p, 1])
    hcg = fleet.HybridCommunicateGroup(topo)
    w, mb = args.width, 16
    descs = []
    for _ in range(p * args.layers):
        descs += [LayerDesc(fw.nn.Linear, w, w), fw.tanh]
    rng = np.random.default_rng(0)
    x = fw.to_tensor(rng.normal(size=(mb * args.micro, w)).astype(np.float32))
    y = fw.to_tensor(rng.normal(size=(mb * args.micro, w)).astype(np.float32))
    runs = {}
    for mode in ("1F1B", "FThenB"):
        if args.api == "placement":
            runs[mode] = placed(p, args.layers, w, mb, args.micro, mode)
            continue
        s = fleet.DistributedStrategy()
        s.pipeline_configs = {"micro_batch_size": mb, "accumulate_steps": args.micro, "schedule_mode": mode}
        net = PipelineLayer(descs, topology=topo, loss_fn=fw.nn.MSELoss())
        runs[mode] = (PipelineParallel(net, hcg, s), fw.optimizer.SGD(0.001, parameters=net.parameters()))
    runs_of: dict[str, list[dict[str, list[float]]]] = {m: [] for m in runs}
    for _ in range(args.repeat):
        figures = {mode: measure(mode, model, opt, args, x, y, p) for mode, (model, opt) in runs.items()}
        for mode in runs:
            runs_of[mode].append(figures[mode])
        if rank == 0:
            report(args, p, w, mb, figures)
    if rank == 0 and args.repeat > 1:
        print(f"median of {args.repeat} measurements (each the median of its steps):")
        for mode in runs:
            per = runs_of[mode]
            keys = per[0].keys()
            med = {k: [statistics.median(r[k][i] for r in per) for i in range(len(per[0][k]))] for k in keys}
            line(mode, med)
    if rank == 0:
        print(f"load average at the end: {_load()}")


#: what each stage reports per step, in this order
FIELDS = ("bubble", "busy", "cpu/busy", "p2p", "other", "step")


def measure(mode: str, model, opt, args, x, y, p: int) -> dict[str, list[float]]:
    """``args.steps`` steps of ``mode``; per stage the medians (first step left out) of FIELDS,
    and ``sim``: the schedule's own bubble from the median CPU cost of each step."""
    rows: list[list[list[float]]] = []  # per step: per stage the fields, then 2m CPU costs
    for _ in range(args.steps):
        dist.barrier()
        del CPU_STEPS[:]
        P2P_TIME[0] = 0.0
        t = time.perf_counter()
        if args.api == "placement":
            model(x, y)
            pp = model.pipeline
        else:
            model.train_batch([x, y], opt)
            pp = model
        step = time.perf_counter() - t
        span = pp._t1 - pp._t0
        busy = sum(e - s for _, _, s, e in pp.timeline)
        cpu = {(k, i): c for k, i, c in CPU_STEPS}
        mine = [
            max(0.0, 1.0 - busy / span),
            busy / span,
            sum(cpu.values()) / busy,
            P2P_TIME[0] / span,
            max(0.0, 1.0 - (busy + P2P_TIME[0]) / span),
            step,
        ] + [cpu[k, i] for k in "FB" for i in range(args.micro)]
        every: list = []
        dist.all_gather(every, fw.to_tensor(np.array(mine, np.float64)))
        rows.append([list(map(float, e.numpy())) for e in every])
    rows = rows[1:]
    out = {f: [statistics.median(r[s][j] for r in rows) for s in range(p)] for j, f in enumerate(FIELDS)}
    m = args.micro
    cost = [
        {
            (k, i): statistics.median(r[s][len(FIELDS) + "FB".index(k) * m + i] for r in rows)
            for k in "FB"
            for i in range(m)
        }
        for s in range(p)
    ]
    out["sim"] = [simulate(mode, cost)]
    for k in "FB":  # per stage: the median CPU ms of one forward / backward
        out[k] = [statistics.median(c[k, i] for i in range(m)) * 1e3 for c in cost]
    return out


def line(mode: str, f: dict[str, list[float]]) -> None:
    pct = lambda v: " ".join(f"{b:5.1%}" for b in v)  # noqa: E731
    print(
        f"  {mode:6s} bubble per stage {pct(f['bubble'])}  mean {statistics.mean(f['bubble']):5.1%}  "
        f"median step {statistics.median(f['step']) * 1e3:7.1f} ms"
    )
    print(
        f"         cpu/busy {pct(f['cpu/busy'])}  p2p {pct(f['p2p'])}  other {pct(f['other'])}  "
        f"schedule alone (sim, free comm) {f['sim'][0]:5.1%}"
    )
    ms = lambda v: " ".join(f"{x:5.2f}" for x in v)  # noqa: E731
    print(f"         CPU ms of one forward per stage {ms(f['F'])}, of one backward {ms(f['B'])}")


def report(args, p: int, w: int, mb: int, figures: dict[str, dict[str, list[float]]]) -> None:
    ideal = (p - 1) / (args.micro + p - 1)
    print(
        f"{p} stages ({args.api}) x {args.layers} Linear({w},{w})+tanh, {args.micro} micro-batches of {mb} rows"
    )
    for mode, f in figures.items():
        line(mode, f)
    print(f"  ideal bubble of equal stages (p-1)/(m+p-1) = {ideal:.1%}; load now {_load()}", flush=True)


if __name__ == "__main__":
    main()
