"""Under mpiexec: pipeline parallelism through ``fleet`` equals one process.

``python pp_train.py DEVICE OUT``: the world is the pipe (one stage per rank); with 4 ranks
also a 2 x 2 data x pipe layout (2 stages, each replicated twice, the batch split over dp). A PipelineLayer of 8 entries (4 Linear layers, tanh between)
trains 3 Adam steps with ``train_batch`` under each schedule (and ``eval_batch`` after them) (1F1B, FThenB, 1F1B with
recomputation, 1F1B with a global-norm clip,
and a model whose first and last layers share a weight through SharedLayerDesc); every rank also builds the whole model the way PipelineLayer does (layer i
after ``fw.seed(1234 + i)``) and trains it alone on the same batches. The gradients of the
first batch (``forward_backward_pipeline``), the losses and the final parameters of this
rank's stage are written with the reference's to ``OUT/rank{r}.npz``.
"""

from __future__ import annotations

import sys

import numpy as np

import framework as fw
import framework.distributed as dist
from framework.distributed import fleet
from framework.distributed.fleet.meta_parallel import (
    LayerDesc,
    PipelineLayer,
    PipelineParallel,
    SharedLayerDesc,
)

device, out = sys.argv[1], sys.argv[2]
fleet.init(is_collective=True, strategy=fleet.DistributedStrategy())  # dp = the world
fw.set_device(device)
rank, world = dist.get_rank(), dist.get_world_size()
MB, ACC, STEPS = 2, 4, 3


def descs() -> list:
    return [
        LayerDesc(fw.nn.Linear, 6, 16),
        fw.tanh,
        LayerDesc(fw.nn.Linear, 16, 16),
        LayerDesc(fw.nn.Tanh),
        LayerDesc(fw.nn.Linear, 16, 16),
        fw.tanh,
        LayerDesc(fw.nn.Linear, 16, 3),
        LayerDesc(fw.nn.Identity),
    ]


def tied_head(layer, x):
    return fw.matmul(x, layer.weight, transpose_y=True)


def tied_descs() -> list:
    """The first and the last layer share one 6 x 6 weight (the second use transposed)."""
    return [
        SharedLayerDesc("tie", fw.nn.Linear, None, "weight", 6, 6, bias_attr=False),
        fw.tanh,
        LayerDesc(fw.nn.Linear, 6, 16),
        LayerDesc(fw.nn.Tanh),
        LayerDesc(fw.nn.Linear, 16, 6),
        fw.tanh,
        LayerDesc(fw.nn.Linear, 6, 6),
        SharedLayerDesc("tie", fw.nn.Linear, tied_head, "weight", 6, 6, bias_attr=False),
    ]


def whole(make=descs):
    """The one-process twin: the same layers from the same seeds (a shared layer once)."""
    layers, named, shared = [], {}, {}
    for i, d in enumerate(make()):
        fw.seed(1234 + i)
        if isinstance(d, SharedLayerDesc):
            if d.layer_name not in shared:
                shared[d.layer_name] = d.build_layer()
                for n, p in shared[d.layer_name].named_parameters():
                    named[f"shared_layers.{d.layer_name}.{n}"] = p
            layer = shared[d.layer_name]
            layers.append(layer if d.forward_func is None else (lambda x, f=d.forward_func, m=layer: f(m, x)))
            continue
        layers.append(d.build_layer() if isinstance(d, LayerDesc) else d)
        if isinstance(layers[-1], fw.nn.Layer):
            named.update({f"{i}.{n}": p for n, p in layers[-1].named_parameters()})

    def run(x):
        for f in layers:
            x = f(x)
        return x

    return run, named


def batch(step: int, dp_rank: int, dp: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(100 + step)
    x = rng.normal(size=(dp * MB * ACC, 6)).astype(np.float32)
    y = np.stack([np.sin(x[:, 0]), x[:, 1] * x[:, 2], np.cos(x[:, 3])], 1).astype(np.float32)
    rows = slice(dp_rank * MB * ACC, (dp_rank + 1) * MB * ACC)
    return x, y, rows


def case(
    name: str, dp: int, pp: int, mode: str, recompute: int, res: dict, clip: float = 0.0, tied: bool = False
) -> None:
    topo = fleet.CommunicateTopology(["data", "pipe", "model"], [dp, pp, 1])
    hcg = fleet.HybridCommunicateGroup(topo)
    strategy = fleet.DistributedStrategy()
    strategy.pipeline_configs = {"micro_batch_size": MB, "accumulate_steps": ACC, "schedule_mode": mode}
    make = tied_descs if tied else descs
    net = PipelineLayer(make(), topology=topo, loss_fn=fw.nn.MSELoss(), recompute_interval=recompute)
    model = PipelineParallel(net, hcg, strategy)

    def clipper():
        return fw.nn.ClipGradByGlobalNorm(clip) if clip else None

    opt = fw.optimizer.Adam(learning_rate=0.01, parameters=net.parameters(), grad_clip=clipper())
    ref, ref_params = whole(make)
    ref_opt = fw.optimizer.Adam(learning_rate=0.01, parameters=list(ref_params.values()), grad_clip=clipper())
    names = sorted(net.state_dict())
    dpr = hcg.get_data_parallel_rank()
    for step in range(STEPS):
        x, y, rows = batch(step, dpr, dp)
        if tied:  # the tied model outputs 6 columns
            y = np.sin(x).astype(np.float32)
        data = [fw.to_tensor(x[rows]), fw.to_tensor(y[rows])]
        if step == 0:  # the gradients of one batch, before any update
            loss = model.forward_backward_pipeline(data)
            for n in names:
                res[f"{name}/grad/{n}"] = net.state_dict()[n].grad.numpy()
            model._step(opt)
            opt.clear_grad()
        else:
            loss = model.train_batch(data, opt)
        if dp > 1:  # the loss of this rank's rows (Paddle's): the batch's is their mean
            dist.all_reduce(loss, op="avg", group=hcg.get_data_parallel_group())
        ref_loss = fw.nn.functional.mse_loss(ref(fw.to_tensor(x)), fw.to_tensor(y))
        ref_loss.backward()
        if step == 0:
            for n in names:
                res[f"{name}/ref_grad/{n}"] = ref_params[n].grad.numpy()
        ref_opt.step()
        ref_opt.clear_grad()
        res[f"{name}/loss/{step}"] = np.float32(loss.numpy())
        res[f"{name}/ref_loss/{step}"] = np.float32(ref_loss.numpy())
    ev = model.eval_batch([fw.to_tensor(x[rows]), fw.to_tensor(y[rows])], compute_loss=True)
    if dp > 1:
        dist.all_reduce(ev, op="avg", group=hcg.get_data_parallel_group())
    with fw.no_grad():
        res[f"{name}/ref_loss/eval"] = np.float32(
            fw.nn.functional.mse_loss(ref(fw.to_tensor(x)), fw.to_tensor(y)).numpy()
        )
    res[f"{name}/loss/eval"] = np.float32(ev.numpy())
    for n in names:
        res[f"{name}/param/{n}"] = net.state_dict()[n].numpy()
        res[f"{name}/ref_param/{n}"] = ref_params[n].numpy()
    res[f"{name}/stage"] = np.int64(net.stage_id)


res: dict = {}
# a send and a receive of 8 MB each way between two ranks, as one batch: MPI would wait in
# either blocking call for the peer (rendezvous); posted together in a group, both complete
peer = rank ^ 1
if peer < world:
    mine = fw.full([2 * 1024 * 1024], float(rank), dtype="float32")
    theirs = fw.zeros([2 * 1024 * 1024], dtype="float32")
    dist.batch_isend_irecv([dist.P2POp(dist.isend, mine, peer), dist.P2POp(dist.irecv, theirs, peer)])
    res["exchange"] = np.array([theirs.numpy().min(), theirs.numpy().max()], np.float32)
case("1F1B", 1, world, "1F1B", 0, res)
case("FThenB", 1, world, "FThenB", 0, res)
case("recompute", 1, world, "1F1B", 1, res)
case("clip", 1, world, "1F1B", 0, res, clip=0.05)  # the norm of every stage's gradients
case("tied", 1, world, "1F1B", 0, res, tied=True)  # SharedLayerDesc on the first and last stage
if world == 4:
    case("dp2xpp2", 2, 2, "1F1B", 0, res)
np.savez(f"{out}/rank{rank}.npz", **res)
