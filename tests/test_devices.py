"""Devices by name, moving tensors, memory statistics, streams and events."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import framework as fw


def test_default_device_is_cpu_and_names_parse():
    # in this process: OARLOCK_DEVICE when the caller set it, else cpu
    assert fw.get_device() == fw.Device(*_split(os.environ.get("OARLOCK_DEVICE") or "cpu"))
    # in a clean process: cpu, whatever the caller's environment
    env = {k: v for k, v in os.environ.items() if k != "OARLOCK_DEVICE"}
    code = "import framework as fw; print(fw.get_device(), fw.ones([1]).device)"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.stdout.split() == ["cpu:0", "cpu:0"], out.stderr
    assert fw.Device("cpu", 0) == "cpu" and str(fw.Device("opencl", 1)) == "opencl:1"
    assert fw.device_count("cpu") == 1
    assert any(d.type == "cpu" for d in fw.devices())


def _split(name: str) -> tuple[str, int]:
    t, _, i = name.partition(":")
    return t, int(i or 0)


def test_set_device_and_context(device):
    prev = fw.get_device()
    try:
        fw.set_device(device)
        assert fw.ones([2]).device == device
        with fw.device("cpu"):
            assert fw.zeros([1]).device == "cpu"
            assert fw.get_device() == "cpu"
        assert fw.get_device() == device
    finally:
        fw.set_device(prev)


def test_oarlock_device_environment():
    code = "import framework as fw; print(fw.get_device(), fw.ones([1]).device)"
    env = dict(os.environ, OARLOCK_DEVICE="cpu:0")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.stdout.split() == ["cpu:0", "cpu:0"], out.stderr


def test_to_moves_between_devices_and_keeps_values(device):
    x = fw.arange(12, dtype="float32").reshape([3, 4])
    y = x.to(device)
    assert y.device == device
    np.testing.assert_array_equal(y.numpy(), np.arange(12, dtype=np.float32).reshape(3, 4))
    z = y.to("cpu", "float64")
    assert z.device == "cpu" and z.dtype == np.float64
    assert y.to(fw.float16).dtype == np.float16 and y.to("int32").dtype == np.int32


def test_gradient_flows_across_devices(device):
    x = fw.to_tensor([1.0, 2.0, 3.0], stop_gradient=False, device="cpu")  # whatever the default
    y = (x.to(device) * 3.0).sum()
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), [3, 3, 3])
    assert x.grad.device == "cpu"


def test_mixing_devices_is_an_error_that_says_how_to_move(device):
    fw.register_plugin("tests.plugins_for_tests.partial", name="partial")
    a = fw.ones([2], device=device)
    b = fw.ones([2], device="partial:0")
    with pytest.raises(
        fw.DeviceMismatchError,
        match=r"\[add\] input 0 is on .* but input 1 is on partial:0; move one with x.to",
    ):
        a + b


def test_unknown_device_lists_known_ones():
    with pytest.raises(fw.DeviceError, match=r"unknown device 'tpu'.*known device types: .*cpu"):
        fw.set_device("tpu")
    with pytest.raises(fw.DeviceError, match=r"'cpu:3' does not exist: the 'cpu' plugin reports 1 device"):
        fw.ones([1], device="cpu:3")
    with pytest.raises(fw.DeviceError, match="cannot read device name"):
        fw.set_device("cpu:x")


def test_memory_stats_and_empty_cache(device):
    fw.empty_cache(device)
    s0 = fw.memory_stats(device)
    x = fw.ones([1024, 256], device=device)  # 1 MiB
    s1 = fw.memory_stats(device)
    assert s1["allocated_bytes"] - s0["allocated_bytes"] >= 1 << 20
    assert s1["peak_allocated_bytes"] >= s1["allocated_bytes"]
    del x
    s2 = fw.memory_stats(device)
    assert s2["allocated_bytes"] == s0["allocated_bytes"]
    assert s2["reserved_bytes"] >= s2["allocated_bytes"] + (1 << 20)  # kept in the cache
    y = fw.ones([1024, 256], device=device)  # served from the cache
    s3 = fw.memory_stats(device)
    assert s3["num_cache_hits"] > s2["num_cache_hits"]
    del y
    fw.empty_cache(device)
    assert fw.memory_stats(device)["reserved_bytes"] <= s0["reserved_bytes"]


def test_streams_and_events(device):
    s = fw.Stream(device)
    e0, e1 = fw.Event(device), fw.Event(device)
    x = fw.to_tensor(np.arange(1 << 16, dtype=np.float32), device=device)
    with fw.stream(s):
        e0.record(s)
        y = (x * 2.0 + 1.0).sum()
        e1.record(s)
    e1.synchronize()
    assert e1.query()
    assert e0.elapsed_time(e1) >= 0.0
    s.synchronize()
    assert y.item() == pytest.approx(float((np.arange(1 << 16) * 2.0 + 1.0).sum()), rel=1e-5)
    s2 = fw.Stream(device)
    s2.wait_event(e1)
    s2.synchronize()
    fw.synchronize(device)


def test_device_properties(device):
    p = fw.get_device_properties(device)
    assert p.name and p.compute_units >= 1
