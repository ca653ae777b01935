"""Under mpiexec (2 or 4 ranks): ops on distributed tensors against the same function on
plain tensors (one process's result): values, and gradients of every input; the reshards the
rules inserted; annotation errors. Each rank writes out/rank{r}.json."""

from __future__ import annotations

import json
import os
import sys
import traceback

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

import numpy as np  # noqa: E402

import framework as fw  # noqa: E402
import framework.distributed as dist  # noqa: E402
import framework.nn.functional as F  # noqa: E402
from framework.distributed.auto_parallel import functional as D  # noqa: E402

out = sys.argv[1]
dist.init_parallel_env()
rank, n = dist.get_rank(), dist.get_world_size()
records: list[dict] = []
R, S0, S1, S2, P = dist.Replicate(), dist.Shard(0), dist.Shard(1), dist.Shard(2), dist.Partial()
mesh = dist.ProcessMesh(list(range(n)), dim_names=["x"])
rng = np.random.default_rng(3)


def arr(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def case(name, fn, inputs, placements, mesh=mesh, out_placements=None, logged=None):
    """fn(*tensors) on plain tensors and on distributed ones: same value, same gradients."""
    try:
        plain = [fw.to_tensor(a, stop_gradient=a.dtype.kind != "f") for a in inputs]
        ref = fn(*plain)
        wt = arr(*ref.shape) if ref.ndim else np.float32(1.3)
        (ref * fw.to_tensor(wt)).sum().backward()
        dts = [
            dist.shard_tensor(a, mesh, p, stop_gradient=a.dtype.kind != "f")
            for a, p in zip(inputs, placements)
        ]
        start = len(dist.auto_parallel.reshard_log())
        got = fn(*dts)
        if out_placements is not None:
            assert got.placements == out_placements, f"placements {got.placements}, expected {out_placements}"
        np.testing.assert_allclose(got.numpy(), ref.numpy(), rtol=2e-5, atol=2e-5)
        D.sum(D.multiply(got, fw.to_tensor(wt))).backward()
        for i, (a, d) in enumerate(zip(plain, dts)):
            if not a.stop_gradient:
                np.testing.assert_allclose(
                    d.grad.numpy(), a.grad.numpy(), rtol=2e-5, atol=2e-5, err_msg=f"gradient of input {i}"
                )
        log = dist.auto_parallel.reshard_log()[start:]
        if name.startswith("cross_entropy/vocab"):  # the logits are never gathered
            assert not [r for r in log if r["why"] == "cross_entropy" and r["collective"] == "all_gather"], (
                log
            )
        if logged is not None:
            hits = [r for r in log if r["collective"].startswith(logged[0]) and r["why"] == logged[1]]
            assert hits, f"no {logged} reshard logged: {log}"
        records.append(
            {
                "name": name,
                "ok": True,
                "reshards": [f"{r['from']}->{r['to']} {r['collective']} ({r['why']})" for r in log],
            }
        )
    except Exception as exc:  # noqa: BLE001 - recorded for the test
        records.append(
            {
                "name": name,
                "ok": False,
                "detail": f"{type(exc).__name__}: {exc}\n{traceback.format_exc()[-1200:]}",
            }
        )


def error(name, fn, *must):
    try:
        fn()
        records.append({"name": name, "ok": False, "detail": "no error raised"})
    except Exception as exc:  # noqa: BLE001
        msg = f"{type(exc).__name__}: {exc}"
        missing = [m for m in must if m not in msg]
        records.append(
            {
                "name": name,
                "ok": not missing and type(exc).__name__ == "OpArgumentError",
                "detail": f"{msg} (missing {missing})",
            }
        )


k = n
case("matmul/column", D.matmul, [arr(4, 8), arr(8, 4 * k)], [[R], [S1]], out_placements=[S1])
case("matmul/row", D.matmul, [arr(4, 4 * k), arr(4 * k, 6)], [[S1], [S0]], out_placements=[P])
case(
    "matmul/row+bias",
    lambda x, w, b: D.add(D.matmul(x, w), b),
    [arr(4, 4 * k), arr(4 * k, 6), arr(6)],
    [[S1], [S0], [R]],
    out_placements=[R],
    logged=("all_reduce", "add"),
)
case("matmul/batched_conflict", D.matmul, [arr(2 * k, 3, 8), arr(8, 5)], [[S0], [S1]])
case("matmul/uneven_contraction", D.matmul, [arr(3, 5), arr(5, 2)], [[S1], [S0]], out_placements=[P])
case(
    "elementwise/broadcast",
    lambda x, b: D.multiply(D.add(x, b), x),
    [arr(2 * k, 6), arr(6)],
    [[S0], [R]],
    out_placements=[S0],
)
case(
    "elementwise/broadcast_sharded_bias", D.add, [arr(5, 2 * k), arr(2 * k)], [[R], [S0]], out_placements=[S1]
)
case("sum/sharded_axis", lambda x: D.sum(x, axis=1), [arr(3, 2 * k)], [[S1]], out_placements=[P])
case("mean/all", D.mean, [arr(2 * k + 1, 3)], [[S0]], out_placements=[P])
case("max/kept_axis", lambda x: D.max(x, axis=1), [arr(2 * k, 5)], [[S0]], out_placements=[S0])
case(
    "softmax/sharded_axis",
    D.softmax,
    [arr(3, 2 * k)],
    [[S1]],
    out_placements=[R],
    logged=("all_gather", "softmax"),
)
case("softmax/batch", D.softmax, [arr(2 * k, 5)], [[S0]], out_placements=[S0])
case("rms_norm", D.rms_norm, [arr(2 * k, 3, 8), arr(8)], [[S0], [R]], out_placements=[S0])
case("layer_norm", D.layer_norm, [arr(2 * k, 8), arr(8), arr(8)], [[S0], [R], [R]], out_placements=[S0])
case(
    "embedding/column",
    D.embedding,
    [rng.integers(0, 10, (2, 3)), arr(10, 2 * k)],
    [[R], [S1]],
    out_placements=[S2],
)
case(
    "embedding/vocab_parallel",
    D.embedding,
    [rng.integers(0, 10, (2, 3)), arr(10, 4)],
    [[R], [S0]],
    out_placements=[P],
)
case(
    "embedding/uneven_vocab_parallel",
    D.embedding,
    [rng.integers(0, 7, (2, 3)), arr(7, 4)],
    [[R], [S0]],
    out_placements=[P],
)
case(
    "embedding/ids_and_vocab_on_one_axis",
    D.embedding,
    [rng.integers(0, 10, (2 * k, 3)), arr(10, 4)],
    [[S0], [S0]],
)
case("reshape/split", lambda x: D.reshape(x, [2, 3, k, 4]), [arr(2, 3, 4 * k)], [[S2]], out_placements=[S2])
case("reshape/merge", lambda x: D.reshape(x, [2, 4 * k]), [arr(2, 2 * k, 2)], [[S1]], out_placements=[S1])
case(
    "reshape/minor_gathered",
    lambda x: D.reshape(x, [2, 4 * k]),
    [arr(2, 2, 2 * k)],
    [[S2]],
    out_placements=[R],
)
case("transpose", lambda x: D.transpose(x, [2, 0, 1]), [arr(2, 3 * k, 4)], [[S1]], out_placements=[S2])
case(
    "cross_entropy/batch",
    D.cross_entropy,
    [arr(2 * k, 3, 7), rng.integers(0, 7, (2 * k, 3))],
    [[S0], [S0]],
    out_placements=[P],
)
case(
    "cross_entropy/vocab_parallel",
    D.cross_entropy,
    [arr(4, 7), rng.integers(0, 7, (4,))],
    [[S1], [R]],
    out_placements=[R],
    logged=("all_reduce(max)", "cross_entropy"),
)
case(
    "cross_entropy/vocab_parallel_sharded_batch",
    lambda a, b: D.cross_entropy(a, b, reduction="sum"),
    [arr(2 * k, 3, 9), rng.integers(0, 9, (2 * k, 3))],
    [[S2], [S0]],
)
case(
    "concat/other_axis_sharded",
    lambda a, b: D.concat([a, b], axis=1),
    [arr(2 * k, 3), arr(2 * k, 2)],
    [[S0], [S0]],
    out_placements=[S0],
)
case(
    "concat/joined_axis_gathered",
    lambda a, b: D.concat([a, b], axis=0),
    [arr(2 * k, 3), arr(3, 3)],
    [[S0], [R]],
    out_placements=[R],
    logged=("all_gather", "concat"),
)
case(
    "split/other_axis_sharded",
    lambda x: D.multiply(*D.split(x, 2, axis=1)),
    [arr(2 * k, 6)],
    [[S0]],
    out_placements=[S0],
)
case(
    "split/split_axis_gathered",
    lambda x: D.subtract(*D.split(x, [3, 3], axis=0)),
    [arr(6, 2 * k)],
    [[S0]],
    out_placements=[R],
    logged=("all_gather", "split"),
)
case(
    "attention_like",
    lambda q, kk: D.softmax(D.matmul(q, D.transpose(kk, [0, 1, 3, 2]))),
    [arr(2, 2 * k, 3, 4), arr(2, 2 * k, 3, 4)],
    [[S1], [S1]],
    out_placements=[S1],
)
if n == 4:
    m2 = dist.ProcessMesh([[0, 1], [2, 3]], dim_names=["dp", "mp"])
    case(
        "2d/dp_x_tp_mlp",
        lambda x, w1, w2: D.matmul(D.silu(D.matmul(x, w1)), w2),
        [arr(4, 3, 8), arr(8, 8), arr(8, 6)],
        [[S0, R], [R, S1], [R, S0]],
        mesh=m2,
        out_placements=[S0, P],
    )

# annotation errors: name the tensor, mesh and placement
# a split that does not fall on shard boundaries gathers the dim first, and says why
case(
    "reshape/not_divisible_gathered",
    lambda x: x.reshape([2, 3, 3, 2 * k]),
    [arr(2, 3, 6 * k)],
    [[S2]],
    out_placements=[R],
    logged=(
        "all_gather",
        f"reshape: dim 2 of size {6 * k} becomes dims [2, 3] of sizes [3, {2 * k}], not divisible "
        f"by the {k} ranks of mesh axis 'x'",
    ),
)

# the framework's own ops (functions, methods, operators), unmodified, through the interceptor
case(
    "engine/mlp_column_row_bias",
    lambda x, w1, w2, b: F.linear(F.silu(F.linear(x, w1)), w2, b),
    [arr(4, 8), arr(8, 4 * k), arr(4 * k, 6), arr(6)],
    [[R], [S1], [S0], [R]],
    out_placements=[R],
    logged=("all_reduce", "add"),
)
case(
    "engine/operators_and_methods",
    lambda x, y: ((x @ y) * 2.0 - 1.0).transpose((1, 0)).sum(axis=0) / 3.0,
    [arr(4 * k, 8), arr(8, 6)],
    [[S0], [R]],
    out_placements=[S0],
)
case(
    "engine/softmax_cross_entropy",
    lambda x, y: F.cross_entropy(F.softmax(x, axis=-1) * 3.0, y),
    [arr(2 * k, 5), np.arange(2 * k) % 5],
    [[S0], [S0]],
)
case(
    "engine/embedding_vocab_rows",
    lambda w, ids: F.embedding(ids, w),
    [arr(4 * k + 1, 6), (np.arange(12) * 7) % (4 * k + 1)],
    [[S0], [R]],
    out_placements=[P],
)
case(
    "engine/no_rule_runs_replicated",
    lambda x, i, u: fw.scatter_add(x * 1.0, i, u * 1.0, axis=0),
    [arr(3 * k, 4), np.array([0, 2, 1]), arr(3, 4)],
    [[S0], [R], [R]],
    out_placements=[R],
    logged=("all_gather", "scatter_add: no sharding rule"),
)

error(
    "error/missing_dim",
    lambda: dist.shard_tensor(fw.to_tensor(arr(4, 4)), mesh, [S2]),
    "[shard_tensor]",
    "shape [4, 4]",
    "Shard(2)",
    "ProcessMesh(",
    "2 dims",
)
other = dist.ProcessMesh(list(range(n)), dim_names=["y"])
error(
    "error/mesh_mismatch",
    lambda: D.add(dist.shard_tensor(arr(4), mesh, [R]), dist.shard_tensor(arr(4), other, [R])),
    "[add]",
    "dim_names=['x']",
    "dim_names=['y']",
    "Replicate()",
)
# each rank passing its own data to shard_tensor would be mixed silently: the digest check
# (on by default at a call site's first call) names the ranks
error(
    "error/shard_tensor_data",
    lambda: dist.shard_tensor(np.full((4, 2), rank, np.float32), mesh, [S0]),
    "[shard_tensor]",
    "passed different data",
    "rank 0: sha256",
    "rank 1: sha256",
)

with open(os.path.join(out, f"rank{rank}.json"), "w") as f:
    json.dump(records, f)
