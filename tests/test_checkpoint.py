"""fw.save / fw.load: safetensors round trips, nesting, optimizer state, atomic writes and
clear errors for damaged files."""

from __future__ import annotations

import os

import ml_dtypes
import numpy as np
import pytest

import framework as fw
import framework.nn as nn


def test_round_trip_of_nested_state(tmp_path):
    fw.seed(0)
    net = nn.Sequential(nn.Linear(4, 3), nn.LayerNorm(3))
    opt = fw.optim.AdamW(learning_rate=0.01, parameters=net.parameters())
    net(fw.randn([2, 4])).sum().backward()
    opt.step()
    opt.clear_grad()
    state = {"model": net.state_dict(), "optim": opt.state_dict(), "epoch": 3, "note": "hi", "lrs": [0.1, None]}
    path = tmp_path / "ckpt.safetensors"
    fw.save(state, path)
    back = fw.load(path)
    assert back["epoch"] == 3 and back["note"] == "hi" and back["lrs"] == [0.1, None]
    assert list(back["model"]) == list(net.state_dict())
    for k, v in net.state_dict().items():
        np.testing.assert_array_equal(back["model"][k].numpy(), v.numpy())
    assert back["optim"]["param_0.t"] == 1
    net2 = nn.Sequential(nn.Linear(4, 3), nn.LayerNorm(3))
    net2.set_state_dict(back["model"])
    opt2 = fw.optim.AdamW(learning_rate=0.01, parameters=net2.parameters())
    opt2.set_state_dict(back["optim"])
    for n, o in ((net, opt), (net2, opt2)):
        n(fw.ones([2, 4])).sum().backward()
        o.step()
    for a, b in zip(net.parameters(), net2.parameters()):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_file_is_plain_safetensors_readable_by_the_library(tmp_path):
    from safetensors.numpy import load_file

    path = tmp_path / "w.safetensors"
    fw.save({"a": {"b": fw.to_tensor([1.0, 2.0])}}, path)
    raw = load_file(str(path))
    np.testing.assert_array_equal(raw["a.b"], [1.0, 2.0])


def test_dtypes_including_bfloat16_survive(tmp_path):
    path = tmp_path / "d.safetensors"
    vals = {d: fw.to_tensor([1, 2, 3]).astype(d) for d in ("float32", "float64", "float16", "bfloat16", "int64", "int8", "bool")}
    fw.save(vals, path)
    back = fw.load(path)
    for d, t in vals.items():
        assert back[d].dtype == t.dtype
        np.testing.assert_array_equal(back[d].numpy().astype(np.float64), t.numpy().astype(np.float64))
    assert back["bfloat16"].dtype == np.dtype(ml_dtypes.bfloat16)


def test_truncated_file_gives_clear_error(tmp_path):
    path = tmp_path / "t.safetensors"
    fw.save({"w": fw.ones([100])}, path)
    data = path.read_bytes()
    for cut in (4, 20, len(data) - 7):
        path.write_bytes(data[:cut])
        with pytest.raises(fw.CheckpointError, match=r"\[load\].*(truncated|corrupted|too short)"):
            fw.load(path)


def test_flipped_data_byte_is_detected(tmp_path):
    path = tmp_path / "c.safetensors"
    fw.save({"w": fw.ones([100])}, path)
    data = bytearray(path.read_bytes())
    data[-10] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(fw.CheckpointError, match="corrupted"):
        fw.load(path)


def test_missing_file_and_unsupported_value(tmp_path):
    with pytest.raises(fw.CheckpointError, match="no checkpoint"):
        fw.load(tmp_path / "nope.safetensors")
    with pytest.raises(fw.OpArgumentError, match="no pickle"):
        fw.save({"f": object()}, tmp_path / "x.safetensors")
    assert not (tmp_path / "x.safetensors").exists()


def test_save_replaces_atomically_and_leaves_no_temp_files(tmp_path):
    path = tmp_path / "a.safetensors"
    fw.save({"v": fw.ones([2])}, path)
    fw.save({"v": fw.zeros([2])}, path)
    assert fw.load(path)["v"].tolist() == [0.0, 0.0]
    assert os.listdir(tmp_path) == ["a.safetensors"]


def test_load_onto_a_named_device(tmp_path):
    path = tmp_path / "dev.safetensors"
    fw.save({"v": fw.ones([2])}, path)
    t = fw.load(path, device="cpu")["v"]
    assert t.device.type == "cpu"
    arr = fw.load(path, return_numpy=True)["v"]
    assert isinstance(arr, np.ndarray)
