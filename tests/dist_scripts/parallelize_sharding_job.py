"""Under mpiexec (2 or 4 ranks): ``dist.parallelize`` sharding levels, the global-norm clip
over pipeline stages, sequence parallelism and ``global_spec``, each against one process
(3 AdamW steps). ``python parallelize_sharding_job.py OUT PART``; PART is

``zero``  an MLP over ``dp`` = all ranks at sharding_level 0, 1, 2, 3 with
          ClipGradByGlobalNorm (acting at every step), and levels 2 and 3 with two backwards
          (half batches) before each step; per level the parameters, the
          per-rank optimizer-state bytes (this rank's shards of the states), the gradient and
          parameter bytes, and ``fw.device.memory_allocated`` after the step (the training's
          tensors: parameters, gradients, states) over the baseline before the model; the
          peak of the last forward and backward, the gradient buckets (16 KiB) and how many
          went before layer 0's gradients; levels 2 and 3 under ``dist.to_static``
``hybrid`` (4 ranks) the tiny Llama: dp 2 x mp 2 at level 2, pp 2 x dp 2 tied at level 3 with
          the clip, pp 2 x mp 2 tied at level 0 with the clip, pp 2 x dp 2 at level 2 with the
          clip, pp 2 x mp 2 (a dp axis of one rank) at levels 2 (tied) and 3; sequence parallelism on dp 2 x mp 2; a ``global_spec`` table used by both stages
          of pp 2 x dp 2

Each rank writes OUT/PART_rank{r}.npz: ``<config>/param/<name>`` (the whole parameters this
rank's stage holds), ``<config>/ref/<name>`` (one process), ``<config>/loss``,
``<config>/ref_loss`` and the figures named above."""

from __future__ import annotations

import gc
import importlib
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

import numpy as np  # noqa: E402

import framework as fw  # noqa: E402
import framework.distributed as dist  # noqa: E402
from conformance.models import char_corpus  # noqa: E402
from examples.train_tiny_llama_hybrid import batches, loss_fn  # noqa: E402
from examples.train_tiny_llama_parallelize import TinyLlama, parallel_train, reference  # noqa: E402
from framework.ir import print_program  # noqa: E402
from tests.dist_scripts import _records  # noqa: E402

RESHARDS = importlib.import_module("framework.distributed.auto_parallel.reshard").LOG  # every reshard run
BUCKETS = importlib.import_module("framework.distributed.auto_parallel.grad_buckets")
ZERO3 = importlib.import_module("framework.distributed.auto_parallel.zero3")
out, part = sys.argv[1], sys.argv[2]
dist.init_parallel_env()
rank, world = dist.get_rank(), dist.get_world_size()
res: dict = {}
CLIP = 0.05


def record(tag: str, losses: list, model, ref_losses: list, ref_model) -> None:
    _records.record(res, tag, losses, model, ref_losses, ref_model)


def nbytes(t) -> int:
    t = t._local_value() if isinstance(t, dist.DistTensor) else t
    return 0 if t is None else t.numel() * t.dtype.itemsize


def scalar(v) -> float:
    return float(np.asarray(v).reshape(-1)[0])


def count_collectives(prefix: str, program, on: str = "") -> None:
    """``res[prefix_reduce_scatters]`` and ``res[prefix_all_reduces]``: the program's reshards of
    partial values to a shard (P -> S) and to whole (P -> R); ``on``: only lines holding it
    (``"axis = 0,"``: over the first mesh axis)."""
    lines = [line for line in print_program(program).splitlines() if 'src = "P' in line and on in line]
    for kind, dst in (("reduce_scatters", 'dst = "S'), ("all_reduces", 'dst = "R"')):
        res[f"{prefix}_{kind}"] = np.array(sum(dst in line for line in lines), "int64")


# -- ZeRO levels on an MLP: the values and the memory per rank ------------------------------------
def mlp_data(step: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(step)
    x = rng.normal(size=(8, 64)).astype("float32")
    return x, np.sin(x[:, :32]).astype("float32")


def mlp_train(level: int | None, micro: int = 1) -> tuple[list[float], fw.nn.Layer, dict]:
    """``level`` None: one process. Else dp over every rank at that sharding level. ``micro``:
    the batch in that many parts, a backward each before the step (the losses scaled)."""
    gc.collect()
    base = fw.device.memory_allocated()
    fw.seed(3)
    net = fw.nn.Sequential(fw.nn.Linear(64, 256), fw.nn.Tanh(), fw.nn.Linear(256, 32))
    opt = fw.optimizer.AdamW(
        learning_rate=0.01, parameters=net.parameters(), grad_clip=fw.nn.ClipGradByGlobalNorm(CLIP)
    )
    mesh = dist.ProcessMesh(list(range(world)), dim_names=["dp"])
    if level is not None:
        net, opt = dist.parallelize(net, opt, mesh, {"dp_config": {"sharding_level": level}})
    log = RESHARDS
    del log[:]
    losses, figures = [], {"norm": []}

    def bucket_sends() -> int:  # the gradient buckets sent so far (one record each)
        return sum(str(r["tensor"]).startswith("bucket of") for r in log)

    early = []  # per backward: buckets already sent when layer 0's output gradient arrives
    if level is not None:

        def watch(_layer, _args, out) -> None:
            out._local_value().register_hook(lambda g: early.append(bucket_sends()))

        net[0].register_forward_post_hook(watch)
    for step in range(3):
        x, y = mlp_data(step)
        loss = 0.0
        sent0 = bucket_sends()
        if step == 2:  # the peaks of the last forward and backward
            gc.collect()
            fw.reset_peak_memory_stats()
            ZERO3.gathered_bytes(reset=True)
        for xs, ys in zip(np.split(x, micro), np.split(y, micro)):
            label = fw.to_tensor(ys) if level is None else dist.shard_tensor(ys, mesh, [dist.Shard(0)])
            part_loss = fw.nn.functional.mse_loss(net(fw.to_tensor(xs)), label) * (1.0 / micro)
            part_loss.backward()
            loss = loss + scalar(part_loss.numpy())
        if step == 2 and level is not None:
            figures["peak"] = fw.device.max_memory_allocated() - base
            figures["gathered_peak"] = ZERO3.gathered_bytes()[1]
        if level is None:
            figures["norm"].append(np.sqrt(sum(float((p.grad.numpy() ** 2).sum()) for p in net.parameters())))
        opt.step()
        if step == 2 and level is not None:
            gc.collect()
            figures["allocated"] = fw.device.memory_allocated() - base
            figures["states"] = sum(nbytes(v) for v in opt.state_dict().values() if isinstance(v, fw.Tensor))
            figures["params"] = sum(nbytes(p) for p in net.parameters())
            grads = [opt.grad_shard(p) if hasattr(opt, "grad_shard") else p.grad for p in net.parameters()]
            figures["grads"] = sum(nbytes(g) for g in grads if g is not None)
            # how the gradients and parameters moved: stages 2 and 3 reduce-scatter (the cpu
            # plugin's asynchronous reduce-scatter, not the all-reduce fallback), 3 gathers
            figures["reduce_scatters"] = sum(
                r["collective"] == "reduce_scatter(sum)"
                and r["why"].startswith(f"ShardingStage{level} gradient")
                for r in log
            )
            figures["gathers"] = sum(
                r["collective"] == "all_gather" and r["why"].startswith("ShardingStage3 gather") for r in log
            )
            figures["regathers"] = sum(
                r["collective"] == "all_gather" and r["why"].endswith("for backward") for r in log
            )
            # how many buckets the backward sent, and how many before layer 0's gradients
            figures["buckets"] = bucket_sends() - sent0
            figures["early"] = early[-1] - sent0
        opt.clear_grad()
        losses.append(loss)
    return losses, net, figures


ref_losses, ref_net, ref_fig = mlp_train(None) if part == "zero" else (None, None, None)
if part == "zero":
    # buckets of 16 KiB: the MLP's gradients (2.bias + 2.weight 32 KiB, 0.bias + 0.weight 65 KiB)
    # go in two per backward, the first while layer 0's gradients are still to compute
    BUCKETS.BUCKET_BYTES = 16 * 1024
    res["zero/ref_norm"] = np.array(ref_fig["norm"], "float32")
    for level in range(4):
        losses, net, fig = mlp_train(level)
        record(f"zero{level}", losses, net, ref_losses, ref_net)
        keys = ("allocated", "states", "params", "grads", "reduce_scatters", "gathers", "buckets", "early")
        for k in (*keys, "regathers", "peak", "gathered_peak"):
            res[f"zero{level}/{k}"] = np.array(fig[k], "int64")
        del net
        if rank == 0:
            print(
                f"sharding_level {level} on {world} ranks: memory_allocated {fig['allocated']} B, "
                f"states {fig['states']} B, grads {fig['grads']} B, params {fig['params']} B; "
                f"peak in forward+backward {fig['peak']} B, whole gathered parameters at most "
                f"{fig['gathered_peak']} B",
                flush=True,
            )
    # levels 2 and 3 under dist.to_static: forward, loss and backward one traced program
    for level in (2, 3):
        fw.seed(3)
        net = fw.nn.Sequential(fw.nn.Linear(64, 256), fw.nn.Tanh(), fw.nn.Linear(256, 32))
        opt = fw.optimizer.AdamW(
            learning_rate=0.01, parameters=net.parameters(), grad_clip=fw.nn.ClipGradByGlobalNorm(CLIP)
        )
        mesh = dist.ProcessMesh(list(range(world)), dim_names=["dp"])
        net, opt = dist.parallelize(net, opt, mesh, {"dp_config": {"sharding_level": level}})
        dm = dist.to_static(net, None, fw.nn.functional.mse_loss, opt)
        step_grads = []  # per step, before the update: (bytes of this rank's gradients, any whole .grad)
        inner_step = opt.step

        def step_and_measure(
            inner_step=inner_step, opt=opt, net=net, level=level, step_grads=step_grads
        ) -> None:
            if level == 2:
                held = [opt.local_grad(p) for p in net.parameters()]
            else:
                held = [p.grad for p in net.parameters()]
            whole = level == 2 and any(p.grad is not None for p in net.parameters())
            step_grads.append((sum(nbytes(g) for g in held if g is not None), whole))
            inner_step()

        opt.step = step_and_measure
        del RESHARDS[:]
        losses = []
        for step in range(3):
            x, y = mlp_data(step)
            xs, ys = (dist.shard_tensor(a, mesh, [dist.Shard(0)]) for a in (x, y))
            losses.append(scalar(dm(xs, ys).numpy()))
        record(f"static{level}", losses, net, ref_losses, ref_net)
        text = print_program(dm.dist_main_program())
        res[f"static{level}/program_reshards"] = np.array(text.count("op.dist_reshard"), "int64")
        res[f"static{level}/program_gathers"] = np.array(text.count("ShardingStage3 gather"), "int64")
        # the program's collectives on partial values: reduce-scatters (P -> S) and all-reduces (P -> R)
        count_collectives(f"static{level}/program", dm.dist_main_program())
        # the gradient slices made in the optimizer's eager step (stage 2: none, the program's
        # reduce-scatters made them), and those the program's run made
        res[f"static{level}/eager_gradient_slices"] = np.array(
            sum(
                r["why"].startswith("ShardingStage2 gradient of") and r["collective"] == "slice"
                for r in RESHARDS
            ),
            "int64",
        )
        res[f"static{level}/run_reduce_scatters"] = np.array(
            sum(r["collective"] == "reduce_scatter(sum)" and "in the program" in r["why"] for r in RESHARDS),
            "int64",
        )
        res[f"static{level}/grads"] = np.array([b for b, _ in step_grads], "int64")
        res[f"static{level}/whole_grads"] = np.array(sum(w for _, w in step_grads), "int64")

    # level 2 under dist.to_static with a layer used twice: its gradient is two all-reduced
    # partial sums, added; the program all-reduces the sum once and reduce-scatters it
    class Twice(fw.nn.Layer):
        def __init__(self) -> None:
            super().__init__()
            fw.seed(5)
            self.lin = fw.nn.Linear(32, 32)

        def forward(self, x):
            return self.lin(fw.tanh(self.lin(x)))

    def twice_train(static: bool):
        m = Twice()
        o = fw.optimizer.AdamW(learning_rate=0.01, parameters=m.parameters())
        mesh = dist.ProcessMesh(list(range(world)), dim_names=["dp"])
        if static:
            m, o = dist.parallelize(m, o, mesh, {"dp_config": {"sharding_level": 2}})
            dm = dist.to_static(m, None, fw.nn.functional.mse_loss, o)
        losses = []
        for step in range(3):
            x, y = mlp_data(step)
            if static:
                xs, ys = (dist.shard_tensor(a[:, :32], mesh, [dist.Shard(0)]) for a in (x, y))
                losses.append(scalar(dm(xs, ys).numpy()))
            else:
                loss = fw.nn.functional.mse_loss(m(fw.to_tensor(x[:, :32])), fw.to_tensor(y[:, :32]))
                loss.backward()
                o.step()
                o.clear_grad()
                losses.append(scalar(loss.numpy()))
        return losses, m, (dm.dist_main_program() if static else None)

    ref_t, ref_tm, _ = twice_train(False)
    got_t, tm, prog = twice_train(True)
    record("static2_twice", got_t, tm, ref_t, ref_tm)
    count_collectives("static2_twice/program", prog)

    # two backwards before each step: the gradients add up in the slices as level 0 adds them
    # up whole (against level 0 on these ranks: Adam on one row per rank per backward moves a
    # few near-zero-gradient elements by 1e-4 from one process, at level 0 as well)
    acc_losses, acc_net, _ = mlp_train(0, micro=2)
    for level in (2, 3):
        losses, net, _ = mlp_train(level, micro=2)
        record(f"zero{level}_accum", losses, net, acc_losses, acc_net)

# -- the tiny Llama: levels 2 and 3 under mp / pp, the clip over pipeline stages -------------------
if part == "hybrid":
    vocab = len(char_corpus()[1])
    data = batches(3, 8)
    ref_first = TinyLlama(vocab, 2, True)  # the clip acts: the first step's norm
    loss_fn(ref_first(fw.to_tensor(data[0][0])), fw.to_tensor(data[0][1])).backward()
    res["llama/ref_norm"] = np.array(
        np.sqrt(sum(float((p.grad.numpy() ** 2).sum()) for p in ref_first.parameters())), "float32"
    )
    for tag, (pp, dp, mp, sh, tied, clip) in {
        "dp2xmp2_sh2": (1, 2, 2, 2, False, None),
        "pp2xdp2_sh3_tied_clip": (2, 2, 1, 3, True, CLIP),
        "pp2xmp2_tied_clip": (2, 1, 2, 0, True, CLIP),
        "pp2xdp2_sh2_clip": (2, 2, 1, 2, False, CLIP),
        "pp2xmp2_sh2_tied": (2, 1, 2, 2, True, None),  # a dp axis of one rank
        "pp2xmp2_sh3": (2, 1, 2, 3, False, None),
    }.items():
        got, model = parallel_train(vocab, 2, data, pp, dp, mp, sh, tied, clip)
        ref, ref_model = reference(vocab, 2, data, tied, clip=clip)
        record(tag, got, model, ref, ref_model)

    # dp 2 x mp 2 at level 2 under dist.to_static, against the same eagerly (one process differs
    # by Adam's amplified rounding on near-zero gradients: 5e-5 on one element of 16,384): the
    # program reduce-scatters the gradients over dp where the states shard them (dim 0, or dim
    # 1 where mp shards dim 0; 0.bias, whose only dim mp shards, stays whole over dp)
    def dp_mp_train(static: bool):
        fw.seed(3)
        net = fw.nn.Sequential(fw.nn.Linear(64, 256), fw.nn.Tanh(), fw.nn.Linear(256, 32))
        opt = fw.optimizer.AdamW(
            learning_rate=0.01, parameters=net.parameters(), grad_clip=fw.nn.ClipGradByGlobalNorm(CLIP)
        )
        mesh = dist.ProcessMesh([[0, 1], [2, 3]], dim_names=["dp", "mp"])
        cfg = {
            "dp_config": {"sharding_level": 2},
            "mp_config": {"parallelize_plan": {"0": dist.ColWiseParallel(), "2": dist.RowWiseParallel()}},
        }
        net, opt = dist.parallelize(net, opt, mesh, cfg)
        dm = dist.to_static(net, None, fw.nn.functional.mse_loss, opt) if static else None
        losses = []
        for step in range(3):
            x, y = mlp_data(step)
            xs, ys = (dist.shard_tensor(a, mesh, [dist.Shard(0), dist.Replicate()]) for a in (x, y))
            if static:
                losses.append(scalar(dm(xs, ys).numpy()))
                continue
            loss = fw.nn.functional.mse_loss(net(xs), ys)
            loss.backward()
            opt.step()
            opt.clear_grad()
            losses.append(scalar(loss.numpy()))
        return losses, net, dm

    eager_losses, eager_net, _ = dp_mp_train(False)
    losses, net, dm = dp_mp_train(True)
    record("static_dp2xmp2_sh2", losses, net, eager_losses, eager_net)
    count_collectives("static_dp2xmp2_sh2/dp", dm.dist_main_program(), "axis = 0,")

    # sequence parallelism over mp 2 (dp 2 x mp 2)
    class SeqNet(fw.nn.Layer):
        def __init__(self) -> None:
            super().__init__()
            fw.seed(4)
            self.embed = fw.nn.Embedding(11, 8)
            self.norm = fw.nn.LayerNorm(8)
            self.up = fw.nn.Linear(8, 16)
            self.down = fw.nn.Linear(16, 8)
            self.post = fw.nn.LayerNorm(8)
            self.head = fw.nn.Linear(8, 11)

        def forward(self, ids):
            h = self.norm(self.embed(ids))
            return self.head(self.post(h + self.down(fw.tanh(self.up(h)))))

    sp_plan = {
        "embed": [dist.ColWiseParallel(gather_output=True), dist.SequenceParallelBegin()],
        "norm": dist.SequenceParallelEnable(),
        "up": [dist.SequenceParallelEnd(), dist.ColWiseParallel()],
        "down": [dist.RowWiseParallel(), dist.SequenceParallelBegin()],
        "post": dist.SequenceParallelEnable(),
        "head": dist.SequenceParallelEnd(),
    }

    def sp_train(par: bool):
        m = SeqNet()
        o = fw.optimizer.AdamW(learning_rate=0.01, parameters=m.parameters())
        mesh = dist.ProcessMesh([[0, 1], [2, 3]], dim_names=["dp", "mp"])
        if par:
            m, o = dist.parallelize(m, o, mesh, {"mp_config": {"parallelize_plan": sp_plan}})
        losses = []
        for step in range(3):
            rng = np.random.default_rng(10 + step)
            ids = rng.integers(0, 11, (4, 6))
            y = rng.integers(0, 11, (4, 6))
            logits = m(fw.to_tensor(ids))
            y = dist.shard_tensor(y, mesh, [dist.Shard(0), dist.Replicate()]) if par else fw.to_tensor(y)
            loss = loss_fn(logits, y)
            loss.backward()
            o.step()
            o.clear_grad()
            losses.append(scalar(loss.numpy()))
        return losses, m

    ref, ref_model = sp_train(False)
    del RESHARDS[:]
    got, model = sp_train(True)
    record("sp_dp2xmp2", got, model, ref, ref_model)
    # the activations were sharded along the sequence over mp (R -> S(1) on the mp axis)
    res["sp_dp2xmp2/seq_shards"] = np.array(
        sum(
            r["why"] == "SequenceParallelBegin" and r["mesh_axis"] == "mp" and r["to"] == "[S(1)]"
            for r in RESHARDS
        ),
        "int64",
    )

    # pp 2 x dp 2 with a global_spec table (a learnt position table every stage adds)
    class Table(fw.nn.Layer):
        def __init__(self) -> None:
            super().__init__()
            self.table = self.create_parameter([6, 8])

        def forward(self):
            return fw.tanh(self.table)

    class Mix(fw.nn.Layer):
        def __init__(self) -> None:
            super().__init__()
            self.lin = fw.nn.Linear(8, 8)

        def forward(self, h, t):
            return fw.tanh(self.lin(h) + t)

    class GNet(fw.nn.Layer):
        def __init__(self) -> None:
            super().__init__()
            fw.seed(6)
            self.pos = Table()
            self.layers = fw.nn.LayerList([Mix() for _ in range(4)])

        def forward(self, x):
            t = self.pos()
            for layer in self.layers:
                x = layer(x, t)
            return x

    def g_train(par: bool):
        m = GNet()
        o = fw.optimizer.AdamW(learning_rate=0.01, parameters=m.parameters())
        mesh = dist.ProcessMesh([[0, 1], [2, 3]], dim_names=["pp", "dp"])
        if par:
            cfg = {"pp_config": {"split_spec": "layers", "global_spec": "pos"}}
            m, o = dist.parallelize(m, o, mesh, cfg)
        losses = []
        for step in range(3):
            rng = np.random.default_rng(20 + step)
            x = rng.normal(size=(4, 6, 8)).astype("float32")
            y = rng.normal(size=(4, 6, 8)).astype("float32")
            label = dist.shard_tensor(y, m.pipeline_stages[-1], [dist.Shard(0)]) if par else fw.to_tensor(y)
            loss = fw.nn.functional.mse_loss(m(fw.to_tensor(x)), label)
            loss.backward()
            o.step()
            o.clear_grad()
            v = loss.numpy()
            t = fw.to_tensor(np.array([0.0 if v is None else scalar(v)], "float32"))
            if par:
                dist.broadcast(t, src=m.pipeline_stages[-1].process_ids[0])
            losses.append(scalar(t.numpy()))
        return losses, m

    ref, ref_model = g_train(False)
    got, model = g_train(True)
    record("pp2xdp2_global", got, model, ref, ref_model)

np.savez(os.path.join(out, f"{part}_rank{rank}.npz"), **res)
