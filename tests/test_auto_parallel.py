"""framework.distributed auto-parallel: ProcessMesh, placements, every reshard transition
(2 and 4 ranks, against numpy, forward and backward), sharding rules, shard_layer and a
tensor-parallel tiny Llama under mpiexec; annotation errors and a mesh of one in this process."""

from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path

import numpy as np
import pytest

import framework as fw
import framework.distributed as dist
from framework.distributed import launch
from tests.conftest import needs_mpi

SCRIPTS = Path(__file__).parent / "dist_scripts"


def _launch(script: str, n: int, *args: str) -> tuple[object, str]:
    out = tempfile.mkdtemp(prefix="oarlock-ap-")
    proc = launch.run([str(SCRIPTS / script), *args, out], n, timeout=240, collective_timeout=60)
    return proc, out


def _records(proc: object, out: str, n: int) -> list[tuple[int, dict]]:
    records = []
    for r in range(n):
        path = os.path.join(out, f"rank{r}.json")
        assert os.path.exists(path), (
            f"rank {r} wrote no result (exit {proc.returncode}):\n{proc.stdout[-3000:]}"
        )
        records += [(r, rec) for rec in json.load(open(path))]
    return records


# -- reshard transitions under mpiexec -------------------------------------------------------
@needs_mpi
@pytest.mark.mpi
@pytest.mark.parametrize("nranks", [2, 4])
def test_every_reshard_transition_against_numpy(nranks: int) -> None:
    proc, out = _launch("ap_reshard.py", nranks)
    records = _records(proc, out, nranks)
    failed = [f"rank {r}: {rec['name']}: {rec.get('detail', '')}" for r, rec in records if not rec["ok"]]
    assert not failed, "\n".join(failed[:10])
    names = {rec["name"] for _, rec in records}
    for must in (
        "1d/8x{}/S0->R",
        "1d/8x{}/P->R",
        "1d/8x{}/P->S1",
        "1d/8x{}/R->S0",
        "1d/8x{}/R->P",
        "1d/8x{}/S0->S1",
        "1d/5x3/S1->S0",
        "1d/5x3/Pavg->S0",
        "log",
    ):
        assert must.format(4 * nranks) in names, f"check {must} did not run"
    if nranks == 4:
        assert "mesh_move/send_recv" in names and "2d/S0.S1->S1.S0" in names
        assert "mesh_move/backward" in names
        assert "2d_nested/S0.S0->S1.S0" in names and "2d_nested/matmul" in names
    assert proc.returncode == 0, proc.stdout[-3000:]


@needs_mpi
@pytest.mark.mpi
def test_reshard_transitions_on_opencl() -> None:
    """The same transitions with the shards on an OpenCL device (its plugin's communicator)."""
    if not any(d.type == "opencl" for d in fw.devices()):
        pytest.skip("no OpenCL device")
    proc, out = _launch("ap_reshard.py", 2, "opencl")
    records = _records(proc, out, 2)
    failed = [f"rank {r}: {rec['name']}: {rec.get('detail', '')}" for r, rec in records if not rec["ok"]]
    assert not failed, "\n".join(failed[:10])
    assert len(records) == 2 * 51 and proc.returncode == 0, proc.stdout[-3000:]


# -- sharding rules: ops on distributed tensors under mpiexec ---------------------------------
@needs_mpi
@pytest.mark.mpi
@pytest.mark.parametrize("nranks", [2, 4])
def test_ops_follow_their_rules_against_one_process(nranks: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OARLOCK_PRINT_IR", "1")  # each reshard is printed too
    proc, out = _launch("ap_ops.py", nranks)
    records = _records(proc, out, nranks)
    failed = [f"rank {r}: {rec['name']}: {rec.get('detail', '')}" for r, rec in records if not rec["ok"]]
    assert not failed, "\n".join(failed[:10])
    by_name = {rec["name"]: rec for r, rec in records if r == 0}
    for must in (
        "matmul/column",
        "matmul/row+bias",
        "elementwise/broadcast",
        "sum/sharded_axis",
        "softmax/sharded_axis",
        "rms_norm",
        "layer_norm",
        "embedding/column",
        "reshape/split",
        "transpose",
        "cross_entropy/batch",
        "concat/joined_axis_gathered",
        "split/split_axis_gathered",
        "reshape/not_divisible_gathered",
        "engine/mlp_column_row_bias",
        "engine/operators_and_methods",
        "engine/softmax_cross_entropy",
        "engine/embedding_vocab_rows",
        "engine/no_rule_runs_replicated",
        "error/missing_dim",
        "error/mesh_mismatch",
        "error/shard_tensor_data",
    ):
        assert must in by_name, f"case {must} did not run"
    printed = (
        f"[reshard] the tensor of shape [3, {2 * nranks}]: [S(1)] -> [R] on mesh axis 'x' "
        f"(all_gather, {3 * 2 * 4 * nranks} bytes) for softmax"
    )
    assert printed in proc.stdout, proc.stdout[-2000:]
    # the row-parallel output is reduced before the bias is added, and the reshard says why
    assert "[P(sum)]->[R] all_reduce(sum) (add)" in by_name["matmul/row+bias"]["reshards"]
    # column parallel needs no communication forward; backward all-reduces the gradient of x
    # (replicated, used against a column shard: its local gradient is partial)
    assert [r for r in by_name["matmul/column"]["reshards"] if r.endswith("(matmul)")] == [
        "[R]->[R] all_reduce(sum) of the gradient, in backward (matmul)"
    ]
    if nranks == 4:
        assert "2d/dp_x_tp_mlp" in by_name
    assert proc.returncode == 0, proc.stdout[-3000:]


# -- tensor-parallel and DP x TP tiny Llama: the single-device model, unmodified ------------------
@needs_mpi
@pytest.mark.mpi
@pytest.mark.parametrize(("nranks", "dp"), [(2, 1), (4, 2)])
def test_tiny_llama_tp_follows_the_single_process_curve(nranks: int, dp: int) -> None:
    proc, out = _launch("ap_llama.py", nranks, str(dp))
    for r in range(nranks):
        path = os.path.join(out, f"rank{r}.json")
        assert os.path.exists(path), (
            f"rank {r} wrote no result (exit {proc.returncode}):\n{proc.stdout[-3000:]}"
        )
        d = json.load(open(path))
        assert len(d["losses"]) == len(d["ref"]) == 6
        np.testing.assert_allclose(d["losses"], d["ref"], rtol=1e-5, atol=1e-5)
        assert min(d["losses"]) < d["losses"][0]  # it trained
        # each rank holds only its shard of the sharded weights (norm weights are replicated)
        assert d["whole"] == d["ref_held"] and d["held"] < 0.55 * d["whole"], (d["held"], d["whole"])
        # the optimizer's states follow the parameters' placements: shards too
        assert d["states"] == 2 * d["held"] and d["ref_states"] == 2 * d["whole"], (d["states"], d["held"])
        assert "all_gather" in d["collectives"], d["collectives"]
        # the fused [q k v] columns are gathered before the heads are split; the logits before the
        # loss (cross_entropy's first op: the logits less their row max, clipped as Paddle does)
        assert "reshape" in d["why"] and "sub" in d["why"], d["why"]
        if dp == 1:  # the hand-written TP (collectives by hand) follows the same curve, same shards
            np.testing.assert_allclose(d["manual_losses"], d["ref"], rtol=1e-5, atol=1e-5)
            assert d["manual_held"] == d["held"], (d["manual_held"], d["held"])
        if dp > 1:  # ZeRO stage 1 trains the same, with the states split over dp too
            np.testing.assert_allclose(d["zero_losses"], d["ref"], rtol=1e-5, atol=1e-5)
            assert d["zero_states"] < 0.55 * d["states"], (d["zero_states"], d["states"])
        if dp > 1:  # data parallel from the rules: the replicated weights' gradients are all-reduced
            assert "all_reduce(sum) of the gradient, in backward" in d["collectives"], d["collectives"]
    assert proc.returncode == 0, proc.stdout[-3000:]


# -- in this process: a world of one ---------------------------------------------------------
def test_process_mesh_sub_meshes_and_names() -> None:
    m = dist.ProcessMesh([[0, 1, 2], [3, 4, 5]], dim_names=["dp", "mp"])
    assert m.shape == [2, 3] and m.ndim == 2 and m.process_ids == [0, 1, 2, 3, 4, 5]
    assert m.get_dim_size("mp") == 3 and m.coordinate(4) == [1, 1] and m.coordinate(9) is None
    assert m[1].process_ids == [3, 4, 5] and m[1].dim_names == ["mp"]
    assert m["mp"].shape == [3, 2] and m["mp"].dim_names == ["mp", "dp"]
    assert m.get_mesh_with_dim("mp", 2).process_ids == [2, 5]
    with pytest.raises(fw.OpArgumentError, match=r"no axis named 'pp'.*\['dp', 'mp'\]"):
        m.get_dim_size("pp")
    with pytest.raises(fw.OpArgumentError, match="distinct"):
        dist.ProcessMesh([0, 0])


def test_annotation_errors_name_the_tensor_mesh_and_placement() -> None:
    m = dist.ProcessMesh([0], dim_names=["x"])
    x = fw.to_tensor(np.ones((4, 6), np.float32))
    x.name = "w_q"
    with pytest.raises(
        fw.OpArgumentError,
        match=r"\[shard_tensor\] tensor 'w_q' of shape \[4, 6\]: placement Shard\(2\) on mesh axis 'x' of ProcessMesh\(.*\) names tensor dim 2, but the tensor has 2 dims",
    ):
        dist.shard_tensor(x, m, [dist.Shard(2)])
    with pytest.raises(fw.OpArgumentError, match=r"2 placements .* has 1 axes \['x'\]"):
        dist.shard_tensor(x, m, [dist.Shard(0), dist.Replicate()])
    m2 = dist.ProcessMesh([[0]], dim_names=["a", "b"])
    both = dist.shard_tensor(x, m2, [dist.Shard(0), dist.Shard(0)])  # one dim over two axes: nested
    assert both.placements == [dist.Shard(0), dist.Shard(0)]
    with pytest.raises(
        fw.OpArgumentError, match=r"Shard\(0\) on mesh axes \['a', 'b'\] .* divisible by their 4 ranks"
    ):
        dist.shard_tensor(
            np.ones((6, 2), np.float32),
            dist.ProcessMesh([[0, 1], [2, 3]], dim_names=["a", "b"]),
            [dist.Shard(0), dist.Shard(0)],
        )
    with pytest.raises(fw.OpArgumentError, match="unknown reduce_type 'prod'"):
        dist.Partial("prod")


def test_functional_ops_on_plain_tensors_are_the_framework_ops() -> None:
    from framework.distributed.auto_parallel import functional as D

    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((3, 4)).astype(np.float32), rng.standard_normal((4, 5)).astype(np.float32)
    got = D.softmax(D.matmul(fw.to_tensor(a), fw.to_tensor(b)))
    assert isinstance(got, fw.Tensor)
    e = np.exp(a @ b - (a @ b).max(-1, keepdims=True))
    np.testing.assert_allclose(got.numpy(), e / e.sum(-1, keepdims=True), rtol=1e-5)


def test_shard_layer_on_a_mesh_of_one_keeps_values_and_tags_parameters() -> None:
    from framework.distributed.auto_parallel import functional as D

    fw.seed(0)
    lin = fw.nn.Linear(4, 6)
    w = lin.weight.numpy().copy()
    m = dist.ProcessMesh([0], dim_names=["mp"])

    def shard_fn(name, layer, mesh):
        if isinstance(layer, fw.nn.Linear):
            layer.weight = dist.shard_tensor(layer.weight, mesh, [dist.Shard(1)])

    dist.shard_layer(lin, m, shard_fn)
    assert {n for n, _ in lin.named_parameters()} == {"weight", "bias"}
    assert lin.weight.dist_attr[1] == [dist.Shard(1)] and lin.bias.dist_attr[1] == [dist.Replicate()]
    np.testing.assert_allclose(lin.weight.numpy(), w)
    x = np.ones((2, 4), np.float32)
    y = D.linear(fw.to_tensor(x), lin.weight, lin.bias)
    assert y.placements == [dist.Shard(1)]
    np.testing.assert_allclose(D.numpy(y), x @ w + lin.bias.numpy(), rtol=1e-5)
    with pytest.raises(fw.OpArgumentError, match=r"\[shard_layer\] expected an nn.Layer"):
        dist.shard_layer(object(), m)


def test_a_mesh_of_one_moves_nothing_and_logs_nothing() -> None:
    from framework.distributed.auto_parallel import functional as D

    m = dist.ProcessMesh([0], dim_names=["mp"])
    x = dist.shard_tensor(np.ones((3, 4), np.float32), m, [dist.Shard(1)])
    start = len(dist.auto_parallel.reshard_log())
    y = D.softmax(x)  # the softmax axis must be whole: S(1) -> R, which on one rank is no move
    assert y.placements == [dist.Replicate()]
    assert dist.auto_parallel.reshard_log()[start:] == []
    np.testing.assert_allclose(y.numpy(), np.full((3, 4), 0.25, np.float32), rtol=1e-6)


def test_shard_optimizer_states_follow_the_parameters_and_zero_splits_them() -> None:
    """On a mesh of one: the states are distributed tensors laid out as the parameter (or as
    ShardingStage1 says), and the updates equal the plain optimizer's."""
    rng = np.random.default_rng(0)
    w0 = rng.standard_normal((4, 6)).astype(np.float32)
    m = dist.ProcessMesh([[0]], dim_names=["dp", "mp"])

    def run(stage):
        w = fw.nn.Parameter.from_tensor(fw.to_tensor(w0))
        if stage is not False:
            w = dist.shard_tensor(w, m, [dist.Replicate(), dist.Shard(1)])
        opt = fw.optim.AdamW(learning_rate=0.1, parameters=[w])
        if stage is not False:
            opt = dist.shard_optimizer(opt, stage)
        for _ in range(3):
            ((w * w).sum() + w.sum()).backward()
            opt.step()
            opt.clear_grad()
        return w, opt

    ref, _ = run(False)
    for stage in (None, dist.ShardingStage1("dp", m)):
        w, opt = run(stage)
        np.testing.assert_allclose(w.numpy(), ref.numpy(), rtol=1e-6)
        states = [v for k, v in opt.state_dict().items() if k.endswith("moment1")]
        want = [dist.Replicate(), dist.Shard(1)] if stage is None else [dist.Shard(0), dist.Shard(1)]
        assert states and all(isinstance(v, dist.DistTensor) and v.placements == want for v in states)
    with pytest.raises(fw.OpArgumentError, match=r"\[shard_optimizer\] parameter .* is not distributed"):
        dist.shard_optimizer(fw.optim.SGD(parameters=[fw.nn.Parameter.from_tensor(fw.ones((2,)))]))


# -- strategy search -------------------------------------------------------------------------
@needs_mpi
@pytest.mark.mpi
def test_auto_plan_scores_every_layout_and_its_plan_trains_like_one_process() -> None:
    proc, out = _launch("ap_plan.py", 4)
    picks = set()
    for r in range(4):
        path = os.path.join(out, f"rank{r}.json")
        assert os.path.exists(path), (
            f"rank {r} wrote no result (exit {proc.returncode}):\n{proc.stdout[-3000:]}"
        )
        d = json.load(open(path))
        table = d["table"]
        # dp x tp in {4x1, 2x2, 1x4}; for tp > 1: replicated, pairs, pairs+column, column, hand-written
        assert sorted({(row["dp"], row["tp"]) for row in table}) == [(1, 4), (2, 2), (4, 1)]
        assert len(table) == 1 + 5 + 5 and sum(row["picked"] for row in table) == 1
        for row in table:
            assert row["score_ms"] == pytest.approx(row["compute_ms"] + row["comm_ms"])
        by = {(row["dp"], row["tp"], row["layout"]): row for row in table}
        assert by[(1, 4, "replicated")]["bytes_moved"] == 0  # nothing to move: every rank has it all
        assert by[(1, 4, "column")]["memory_bytes"] < 0.3 * by[(4, 1, "replicated")]["memory_bytes"]
        assert d["unchanged"]  # the search leaves the model as it was
        np.testing.assert_allclose(d["losses"], d["ref"], rtol=1e-5, atol=1e-5)
        picks.add(tuple(d["pick"]))
    assert len(picks) == 1, picks  # every rank applies the same plan
    assert proc.returncode == 0, proc.stdout[-3000:]


def test_unmodified_ops_on_a_mesh_of_one_and_the_traced_program_error() -> None:
    """The framework's own ops on distributed tensors (a plain tensor beside one is taken as
    replicated) give the plain values; fw.jit.to_static refuses distributed tensors, dist.to_static
    traces them (a training step and a prediction equal eager's; its argument errors)."""
    rng = np.random.default_rng(1)
    a, w = rng.standard_normal((3, 4)).astype(np.float32), rng.standard_normal((4, 5)).astype(np.float32)
    m = dist.ProcessMesh([0], dim_names=["mp"])
    wd = dist.shard_tensor(w, m, [dist.Shard(1)])
    y = fw.nn.functional.gelu(fw.to_tensor(a) @ wd).sum(axis=0) * 2.0
    assert isinstance(y, dist.DistTensor) and y.shape == (5,) and y.placements == [dist.Shard(0)]
    ref = fw.nn.functional.gelu(fw.to_tensor(a) @ fw.to_tensor(w)).sum(axis=0) * 2.0
    np.testing.assert_allclose(y.numpy(), ref.numpy(), rtol=1e-6)
    with pytest.raises(fw.OpArgumentError, match=r"\[distributed\] .*a kernel sees its shard only"):
        wd.native()

    @fw.jit.to_static
    def f(x):
        return x @ wd  # a distributed parameter met while tracing (a sharded layer under to_static)

    with pytest.raises(fw.OpArgumentError, match=r"\[matmul\] .*distributed tensors run eagerly only"):
        f(fw.to_tensor(a))

    # dist.to_static traces them (a DistModel): one SGD step and a prediction equal eager's
    def make() -> tuple[fw.nn.Linear, fw.optim.SGD]:
        fw.seed(3)
        lin = fw.nn.Linear(4, 5)
        lin.weight = dist.shard_tensor(lin.weight, m, [dist.Shard(1)])
        return lin, fw.optim.SGD(learning_rate=0.1, parameters=lin.parameters())

    x, y = fw.to_tensor(a[:2]), fw.to_tensor(w[:2, :5])
    lin, opt = make()
    loss = fw.nn.functional.mse_loss(lin(x), y)
    loss.backward()
    opt.step()
    lin2, opt2 = make()
    dm = dist.to_static(lin2, None, fw.nn.functional.mse_loss, opt2)
    np.testing.assert_allclose(dm(x, y).numpy(), loss.numpy(), rtol=1e-6)
    np.testing.assert_allclose(lin2.weight.numpy(), lin.weight.numpy(), rtol=1e-6)
    assert dm.dist_main_program("train") is not None
    np.testing.assert_allclose(dm.predict()(x).numpy(), lin(x).numpy(), rtol=1e-6)
    with pytest.raises(fw.OpArgumentError, match=r"\[dist.to_static\] strategy="):
        dist.to_static(lin2, strategy=object())
    with pytest.raises(
        fw.OpArgumentError, match=r"\[DistModel.train\] training needs a loss and an optimizer"
    ):
        dist.to_static(lin2).train()


@needs_mpi
@pytest.mark.mpi
def test_dist_to_static_traces_each_ranks_program_and_trains_like_eager() -> None:
    """dist.to_static on a TP MLP (2 ranks): each rank's program holds its shards and the
    reshards as ops (forward P->R all_reduces, Megatron's identity and its backward
    all_reduce); 4 training steps follow the eager distributed curve and leave the same
    shards; eval and predict give the eager values; a chain of every transition kind trains
    like eager, its program holding each transition and, in the backward, its reverse."""
    proc, out = _launch("ap_static.py", 2)
    for r in range(2):
        path = os.path.join(out, f"rank{r}.json")
        assert os.path.exists(path), (
            f"rank {r} wrote no result (exit {proc.returncode}):\n{proc.stdout[-3000:]}"
        )
        d = json.load(open(path))
        np.testing.assert_allclose(d["eager"], d["ref"], rtol=1e-5)  # eager TP = one process
        np.testing.assert_allclose(d["static"], d["eager"], rtol=1e-6)
        assert d["static"][-1] != d["static"][0]  # it trained
        for k, v in d["eager_shards"].items():
            np.testing.assert_allclose(d["static_shards"][k], v, rtol=1e-6, atol=1e-7, err_msg=k)
        for name in ("up1", "up2"):  # column parallel: half the columns, half the bias
            assert d["shapes"][f"{name}.weight"] == [8, 8] and d["shapes"][f"{name}.bias"] == [8]
        for name in ("down1", "down2"):  # row parallel: half the rows, the whole bias
            assert d["shapes"][f"{name}.weight"] == [8, 8] and d["shapes"][f"{name}.bias"] == [8]
        np.testing.assert_allclose(d["static_eval"], d["eager_eval"], rtol=1e-6)
        np.testing.assert_allclose(d["static_pred"], d["eager_pred"], rtol=1e-6, atol=1e-7)
        train = [ln for ln in d["train_program"].splitlines() if "op.dist_reshard" in ln]
        forward_ar = [ln for ln in train if 'src = "Psum"' in ln and 'why = "add"' in ln]
        identity = [ln for ln in train if 'grad_reduce = "sum"' in ln]
        backward_ar = [ln for ln in train if 'src = "Psum"' in ln and 'why = "matmul"' in ln]
        assert len(forward_ar) == 2 and len(identity) == 1 and len(backward_ar) == 1, train
        assert all("mesh = (0, 1)" in ln and 'dst = "R"' in ln for ln in train)
        assert "tensor<[8, 8], float32" in d["train_program"]  # the shards, not the [8, 16] weights
        assert "tensor<[8, 16]" not in d["train_program"] and "tensor<[16, 8]" not in d["train_program"]
        # every transition kind on a parameter (S0->R, R->S1, S1->S0, R->P, P->S1), through
        # the program's forward and backward, against the eager run: losses and the updated shard
        np.testing.assert_allclose(d["chain_static"], d["chain_eager"], rtol=1e-6)
        np.testing.assert_allclose(d["chain_w_static"], d["chain_w_eager"], rtol=1e-5, atol=1e-6)
        steps = [
            (m.group(1), m.group(2))
            for m in (
                re.search(r'dst = "(\w+)".*src = "(\w+)"', ln)
                for ln in d["chain_program"].splitlines()
                if "op.dist_reshard" in ln
            )
        ]
        steps = [f"{a}->{b}" for b, a in steps]
        forward = ["S0->R", "R->S1", "S1->S0", "S0->R", "R->Psum", "Psum->S1"]
        backward = ["S1->R", "R->S0", "S0->S1", "S1->R", "R->S0"]  # the reverses, last first
        assert steps[:6] == forward and steps[-5:] == backward, steps
        pred = [ln for ln in d["predict_program"].splitlines() if "op.dist_reshard" in ln]
        assert len(pred) == 2 and not any('grad_reduce = "sum"' in ln for ln in pred), pred
    assert proc.returncode == 0, proc.stdout[-3000:]
    # the unmodified tiny Llama, tensor parallel, under dist.to_static: the eager TP curve
    # (the rank script asserts it, rtol 1e-5, and prints both)
    llama = launch.run([str(SCRIPTS / "ap_static.py"), "--llama", "1"], 2, timeout=240, collective_timeout=60)
    assert llama.returncode == 0, llama.stdout[-3000:]
    assert llama.stdout.count("reshard ops") == 2, llama.stdout[-3000:]
