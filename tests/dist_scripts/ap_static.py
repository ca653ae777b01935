"""Under mpiexec (2 ranks): a tensor-parallel MLP (two column/row-parallel blocks) trained
eagerly and under dist.to_static from the same initial weights on the same batches; each rank
writes out/rank{r}.json with both loss curves, its final shards from both runs, the traced
programs' text, its shard shapes and the eval/predict results beside the eager ones."""

from __future__ import annotations

import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

import framework as fw  # noqa: E402
import framework.distributed as dist  # noqa: E402
from framework.ir import print_program  # noqa: E402

dist.init_parallel_env()
n = dist.get_world_size()
if sys.argv[1] == "--llama":  # by hand: `oarlock launch -n 2|4 tests/dist_scripts/ap_static.py --llama DP`
    import examples.train_tiny_llama_tp as tp

    dp, steps = int(sys.argv[2]), 4
    eager_curve = tp.train(steps, dp=dp, tp=n // dp)[0]
    fw.seed(0)
    ids_all, vocab = tp.char_corpus()
    llama = tp.TinyLlama(len(vocab), max_seq=32)
    grid = dist.ProcessMesh(np.arange(n).reshape(dp, n // dp).tolist(), dim_names=["dp", "mp"])
    dist.shard_layer(llama, grid, tp.tp_shard_fn("mp"))
    adamw = fw.optim.AdamW(
        learning_rate=3e-3,
        parameters=llama.parameters(),
        weight_decay=0.01,
        grad_clip=fw.optim.ClipGradByGlobalNorm(1.0),
    )

    def lm_loss(logits, y):
        return fw.nn.functional.cross_entropy(logits.reshape((-1, logits.shape[-1])), y.reshape((-1,)))

    dm = dist.to_static(llama, None, lm_loss, dist.shard_optimizer(adamw))
    rng, curve = np.random.default_rng(0), []
    for _ in range(steps):  # the batches of examples/train_tiny_llama_tp.py
        starts = rng.integers(0, len(ids_all) - 33, 8)
        x = fw.to_tensor(np.stack([ids_all[s : s + 32] for s in starts]))
        y = fw.to_tensor(np.stack([ids_all[s + 1 : s + 33] for s in starts]))
        if dp > 1:
            x = dist.shard_tensor(x, grid, [dist.Shard(0), dist.Replicate()])
            y = dist.shard_tensor(y, grid, [dist.Shard(0), dist.Replicate()])
        curve.append(float(dm(x, y).numpy()))
    ops = print_program(dm.dist_main_program()).count("op.dist_reshard")
    print(f"rank {dist.get_rank()}: eager {eager_curve}\n        to_static {curve} ({ops} reshard ops)")
    np.testing.assert_allclose(curve, eager_curve, rtol=1e-5)
    sys.exit(0)
out = sys.argv[1]
mesh = dist.ProcessMesh(list(range(n)), dim_names=["mp"])
steps, din, hid = 4, 8, 16


class MLP(fw.nn.Layer):
    def __init__(self) -> None:
        super().__init__()
        self.up1, self.down1 = fw.nn.Linear(din, hid), fw.nn.Linear(hid, din)
        self.up2, self.down2 = fw.nn.Linear(din, hid), fw.nn.Linear(hid, din)

    def forward(self, x):
        h = self.down1(fw.nn.functional.gelu(self.up1(x)))
        return self.down2(fw.nn.functional.gelu(self.up2(h))) + h


def shard_fn(name, layer, m):
    if name.startswith("up"):  # column parallel: the weight's columns and the bias
        layer.weight = dist.shard_tensor(layer.weight, m, [dist.Shard(1)])
        layer.bias = dist.shard_tensor(layer.bias, m, [dist.Shard(0)])
    elif name.startswith("down"):  # row parallel
        layer.weight = dist.shard_tensor(layer.weight, m, [dist.Shard(0)])


def make(sharded: bool = True):
    fw.seed(0)
    model = MLP()
    if not sharded:  # one process, the whole model: the reference curve
        return model, fw.optim.SGD(learning_rate=0.1, parameters=model.parameters())
    dist.shard_layer(model, mesh, shard_fn)
    opt = dist.shard_optimizer(fw.optim.SGD(learning_rate=0.1, parameters=model.parameters()))
    return model, opt


rng = np.random.default_rng(0)
batches = [
    (rng.standard_normal((4, din)).astype("float32"), rng.standard_normal((4, din)).astype("float32"))
    for _ in range(steps)
]
loss_fn = fw.nn.functional.mse_loss


def train_eager(model, opt):
    losses = []
    for x, y in batches:
        loss = loss_fn(model(fw.to_tensor(x)), fw.to_tensor(y))
        loss.backward()
        opt.step()
        opt.clear_grad()
        losses.append(float(loss.numpy()))
    return losses


ref = train_eager(*make(sharded=False))
# eager distributed
model, opt = make()
eager = train_eager(model, opt)
eager_shards = {k: p._local_value().numpy().tolist() for k, p in model.named_parameters()}
x_eval = fw.to_tensor(batches[0][0])
with fw.no_grad():
    eager_pred = model(x_eval).numpy().tolist()
    eager_eval = float(loss_fn(model(x_eval), fw.to_tensor(batches[0][1])).numpy())

# dist.to_static
model, opt = make()
dm = dist.to_static(model, None, loss_fn, opt)
static = []
for x, y in batches:
    static.append(float(dm(fw.to_tensor(x), fw.to_tensor(y)).numpy()))
train_text = print_program(dm.dist_main_program("train"))
static_shards = {k: p._local_value().numpy().tolist() for k, p in model.named_parameters()}
dm.eval()
static_eval = float(dm(x_eval, fw.to_tensor(batches[0][1])).numpy())
dm.predict()
static_pred = dm(x_eval).numpy().tolist()
predict_text = print_program(dm.dist_main_program("predict"))


class Chain(fw.nn.Layer):
    """Every kind of transition on a parameter, each on the tape (so each has a backward)."""

    def __init__(self) -> None:
        super().__init__()
        self.w = self.create_parameter(shape=[4, 6])

    def forward(self, x):
        R, S0, S1 = [dist.Replicate()], [dist.Shard(0)], [dist.Shard(1)]
        a = dist.reshard(self.w, mesh, R)  # S0 -> R: all_gather
        b = dist.reshard(a * x, mesh, S1)  # R -> S1: slice
        c = dist.reshard(fw.exp(b * 0.5), mesh, S0)  # S1 -> S0: all_to_all
        p = dist.reshard(dist.reshard(c, mesh, R), mesh, [dist.Partial()])  # S0 -> R -> P(sum)
        return dist.reshard(p * 3.0, mesh, S1)  # P -> S1: reduce_scatter


def chain(static: bool):
    fw.seed(1)
    layer = Chain()
    layer.w = dist.shard_tensor(layer.w, mesh, [dist.Shard(0)])
    opt = fw.optim.SGD(learning_rate=0.5, parameters=layer.parameters())
    run = dist.to_static(layer, None, loss_fn, opt) if static else None
    losses = []
    for x, y in batches[:2]:
        xs, ys = fw.to_tensor(x[:, :6].copy()), fw.to_tensor(y[:, :6].copy())
        if static:
            losses.append(float(run(xs, ys).numpy()))
            continue
        loss = loss_fn(layer(xs), ys)
        loss.backward()
        opt.step()
        opt.clear_grad()
        losses.append(float(loss.numpy()))
    text = print_program(run.dist_main_program()) if static else ""
    return losses, layer.w._local_value().numpy().tolist(), text


chain_eager, chain_w_eager, _ = chain(False)
chain_static, chain_w_static, chain_text = chain(True)

with open(os.path.join(out, f"rank{dist.get_rank()}.json"), "w") as f:
    json.dump(
        {
            "ref": ref,
            "eager": eager,
            "static": static,
            "eager_shards": eager_shards,
            "static_shards": static_shards,
            "shapes": {k: list(p._local_value().shape) for k, p in model.named_parameters()},
            "eager_eval": eager_eval,
            "static_eval": static_eval,
            "eager_pred": eager_pred,
            "static_pred": static_pred,
            "train_program": train_text,
            "predict_program": predict_text,
            "chain_eager": chain_eager,
            "chain_static": chain_static,
            "chain_w_eager": chain_w_eager,
            "chain_w_static": chain_w_static,
            "chain_program": chain_text,
        },
        f,
    )
