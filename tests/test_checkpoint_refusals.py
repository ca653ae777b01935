"""Checkpoints and state dicts refuse what they cannot vouch for (issue 35, "nothing silent"):
forged bool bytes, a removed checksum, impossible shapes, runaway nesting, and state dicts
whose keys, values or dtypes do not fit the optimizer or layer they are loaded into."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest

import framework as fw
import framework.nn as nn

_PLACEHOLDER = "0" * 64


def _split(raw: bytes) -> tuple[dict, bytes]:
    n = int.from_bytes(raw[:8], "little")
    return json.loads(raw[8 : 8 + n]), raw[8 + n :]


def _write(path, header: dict, data: bytes, checksum: bool = True) -> None:
    """A safetensors file with ``header`` and ``data``; with ``checksum`` its sha256 record is
    recomputed the way fw.save computes it (a forger can do that too)."""
    meta = header.get("__metadata__")
    if checksum and meta is not None:
        meta["sha256"] = _PLACEHOLDER
    js = json.dumps(header, separators=(",", ":")).encode()
    js += b" " * (-(8 + len(js)) % 8)
    head = len(js).to_bytes(8, "little") + js
    if checksum and meta is not None:
        digest = hashlib.sha256(head + data).hexdigest()
        head = head.replace(_PLACEHOLDER.encode(), digest.encode())
    path.write_bytes(head + data)


@pytest.mark.parametrize("byte", [2, 255])
def test_a_bool_byte_other_than_0_or_1_is_refused(tmp_path, device, byte):
    path = tmp_path / "b.safetensors"
    fw.save({"mask": fw.to_tensor([True, False, True])}, path)
    header, data = _split(path.read_bytes())
    forged = bytes([data[0], byte, data[2]])
    _write(path, header, forged)
    with pytest.raises(fw.CheckpointError, match=f"bool tensor 'mask' holds the byte {byte} at element 1"):
        fw.load(path, device=device)


def test_a_checkpoint_whose_metadata_was_deleted_is_refused_unless_verify_false(tmp_path):
    path = tmp_path / "m.safetensors"
    fw.save({"w": fw.to_tensor([1.0, 2.0])}, path)
    header, data = _split(path.read_bytes())
    del header["__metadata__"]
    _write(path, header, data)
    with pytest.raises(fw.CheckpointError, match=r"carries no Oarlock checksum .*verify=False"):
        fw.load(path)
    np.testing.assert_array_equal(fw.load(path, verify=False)["w"].numpy(), [1.0, 2.0])


def test_a_safetensors_file_of_another_tool_needs_verify_false(tmp_path):
    from safetensors.numpy import save_file

    path = tmp_path / "hf.safetensors"
    save_file({"emb": np.arange(6, dtype=np.float32).reshape(2, 3)}, str(path), metadata={"format": "pt"})
    with pytest.raises(fw.CheckpointError, match="not ours"):
        fw.load(path)
    np.testing.assert_array_equal(fw.load(path, verify=False)["emb"].numpy(), np.arange(6).reshape(2, 3))


@pytest.mark.parametrize("shape", [[2**62, 0], [0, 2**70], [2**40, 2**40, 0]])
def test_a_header_claiming_a_huge_shape_is_a_checkpoint_error(tmp_path, shape):
    path = tmp_path / "s.safetensors"
    _write(path, {"t": {"dtype": "F32", "shape": shape, "data_offsets": [0, 0]}}, b"", checksum=False)
    with pytest.raises(fw.CheckpointError, match="tensor 't' claims shape .* more than any array can hold"):
        fw.load(path, verify=False)


def test_runaway_nesting_is_named_when_saving_and_loading(tmp_path):
    deep: list = []
    node = deep
    for _ in range(5000):
        node.append([])
        node = node[0]
    with pytest.raises(fw.OpArgumentError, match=r"\[save\] .* nests dicts/lists deeper"):
        fw.save(deep, tmp_path / "deep.safetensors")
    path = tmp_path / "t.safetensors"
    fw.save({"w": fw.ones([1])}, path)
    header, data = _split(path.read_bytes())
    header["__metadata__"]["tree"] = '{"__list__":[' * 100_000 + "1" + "]}" * 100_000
    _write(path, header, data)
    with pytest.raises(fw.CheckpointError, match="nested deeper than Python can follow"):
        fw.load(path)


# -- Optimizer.set_state_dict ----------------------------------------------------------------
def _adam(scheduler: bool = False):
    net = nn.Linear(2, 2)
    lr = fw.optimizer.lr.StepDecay(0.1, step_size=2) if scheduler else 0.1
    opt = fw.optimizer.Adam(learning_rate=lr, parameters=net.parameters())
    net(fw.ones([1, 2])).sum().backward()
    opt.step()
    return net, opt


@pytest.mark.parametrize(
    "state, match",
    [
        ({"garbage": 1}, r"unexpected key 'garbage'"),
        ({}, r"is empty"),
        ({"param_0.moment_1": fw.zeros([2, 2])}, r"'param_0.moment_1' names slot 'moment_1'.*moment1"),
        ({"param_x.moment1": fw.zeros([2, 2])}, r"'param_x.moment1'.*param_<i>.<slot>"),
        ({"param_0": fw.zeros([2, 2])}, r"'param_0'.*param_<i>.<slot>"),
        ({"param_7.moment1": fw.zeros([2, 2])}, r"names parameter 7, but the optimizer has 2"),
        ({"param_9.t": 3}, r"names parameter 9, but the optimizer has 2"),
        ({"step": "x"}, r"'step' must be an int"),
        ({"param_0.moment1": "abc"}, r"'param_0.moment1' is a str"),
        ({"param_0.t": float("nan")}, r"'param_0.t' must be an int \(a step count\), got nan"),
    ],
)
def test_optimizer_set_state_dict_refuses_keys_it_does_not_know(state, match):
    _, opt = _adam()
    before = {k: (v.numpy().copy() if hasattr(v, "numpy") else v) for k, v in opt.state_dict().items()}
    with pytest.raises(fw.OpArgumentError, match=match) as info:
        opt.set_state_dict(state)
    if state and "garbage" in state:
        assert "expected" in str(info.value) and "moment1" in str(info.value)
    after = opt.state_dict()  # nothing was changed
    for k, v in before.items():
        np.testing.assert_array_equal(
            np.asarray(after[k].numpy() if hasattr(after[k], "numpy") else after[k]), v
        )


def test_optimizer_state_dicts_it_wrote_itself_still_load():
    net, opt = _adam(scheduler=True)
    opt._learning_rate.step()
    sd = opt.state_dict()
    assert "LR_Scheduler" in sd and "param_0.moment1" in sd and "param_0.t" in sd
    opt2 = fw.optimizer.Adam(
        learning_rate=fw.optimizer.lr.StepDecay(0.1, step_size=2), parameters=net.parameters()
    )
    opt2.set_state_dict(sd)
    assert opt2.state_dict()["LR_Scheduler"] == sd["LR_Scheduler"]
    assert opt2.state_dict()["param_1.t"] == 1
    np.testing.assert_array_equal(opt2.state_dict()["param_0.moment2"].numpy(), sd["param_0.moment2"].numpy())
    fresh = fw.optimizer.SGD(learning_rate=0.1, parameters=net.parameters())
    fresh.set_state_dict(fresh.state_dict())  # {"step": 0}: a state before any step


def test_optimizer_lr_scheduler_state_must_fit_the_scheduler():
    _, opt = _adam(scheduler=True)
    with pytest.raises(fw.OpArgumentError, match=r"'LR_Scheduler' .*lacks \['last_lr'\]"):
        opt.set_state_dict({"LR_Scheduler": {"last_epoch": 3}})


# -- Layer.set_state_dict --------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float64", "int64", "bool", "float16"])
def test_layer_set_state_dict_refuses_another_dtype_as_paddle_does(dtype):
    net = nn.Linear(2, 1)
    w = net.weight.numpy().copy()
    bad = {"weight": fw.ones([2, 1], dtype=dtype), "bias": net.bias}
    with pytest.raises(fw.OpArgumentError, match=rf"'weight' is {dtype} in the state dict but float32"):
        net.set_state_dict(bad)
    with pytest.raises(fw.OpArgumentError, match=rf"'weight' is {dtype}"):
        net.set_state_dict({"weight": np.ones([2, 1], dtype=dtype), "bias": net.bias.numpy()})
    np.testing.assert_array_equal(net.weight.numpy(), w)


@pytest.mark.parametrize("value", [[[1.0], [2.0]], "abc", 3, None])
def test_layer_set_state_dict_refuses_values_that_are_not_tensors(value):
    net = nn.Linear(2, 1)
    with pytest.raises(fw.OpArgumentError, match=r"'weight' is a .*; expected a Tensor or a numpy array"):
        net.set_state_dict({"weight": value, "bias": net.bias})


def test_layer_set_state_dict_takes_numpy_arrays_of_the_right_dtype():
    net = nn.Linear(2, 1)
    w = np.array([[0.5], [-1.5]], np.float32)
    net.set_state_dict({"weight": w, "bias": np.zeros([1], np.float32)})
    np.testing.assert_array_equal(net.weight.numpy(), w)
