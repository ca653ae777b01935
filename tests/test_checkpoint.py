"""fw.save / fw.load: safetensors round trips, nesting, optimizer state, atomic writes and
clear errors for damaged files."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest

import framework as fw
import framework.nn as nn

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_round_trip_of_nested_state(tmp_path):
    fw.seed(0)
    net = nn.Sequential(nn.Linear(4, 3), nn.LayerNorm(3))
    opt = fw.optim.AdamW(learning_rate=0.01, parameters=net.parameters())
    net(fw.randn([2, 4])).sum().backward()
    opt.step()
    opt.clear_grad()
    state = {
        "model": net.state_dict(),
        "optim": opt.state_dict(),
        "epoch": 3,
        "note": "hi",
        "lrs": [0.1, None],
    }
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
    vals = {
        d: fw.to_tensor([1, 2, 3]).astype(d)
        for d in ("float32", "float64", "float16", "bfloat16", "int64", "int8", "bool")
    }
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


def test_load_onto_a_named_device(tmp_path, device):
    """Onto a device that is not the current one: values, dtype and device all arrive."""
    fw.register_plugin("tests.plugins_for_tests.primonly", name="primonly")
    path = tmp_path / "dev.safetensors"
    ref = np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5
    fw.save({"v": fw.to_tensor(ref, device=device), "i": fw.to_tensor([7, 8], device=device)}, path)
    for target in (device, "primonly:0"):
        assert str(fw.get_device()) != "primonly:0"
        back = fw.load(path, device=target)
        assert back["v"].device.type == target.split(":")[0] and back["i"].device.type == target.split(":")[0]
        np.testing.assert_array_equal(back["v"].numpy(), ref)
        assert back["v"].dtype == np.float32 and back["i"].dtype == np.int64
        np.testing.assert_array_equal(back["i"].numpy(), [7, 8])
    arr = fw.load(path, return_numpy=True)["v"]
    assert isinstance(arr, np.ndarray)
    np.testing.assert_array_equal(arr, ref)


# -- issue 18: nothing corrupted loads silently, nothing foreign is misreported ---------------
def test_every_single_byte_corruption_is_refused(tmp_path):
    """The checksum covers the whole file (header, structure, tensor data) except its own 64
    digits, so no damaged byte, not even in the format marker, lets bad weights through."""
    path = tmp_path / "c.safetensors"
    fw.save(
        {"model": {"w": fw.to_tensor([[1.0, 2.0], [3.0, 4.0]]), "b": fw.to_tensor([5, 6])}, "step": 3}, path
    )
    good = path.read_bytes()
    assert b"oarlock-checkpoint" in good
    for i in range(len(good)):
        bad = bytearray(good)
        bad[i] ^= 0x01 if good[i] != 0x20 else 0x10  # space -> 0x30 keeps JSON well-formed in padding
        path.write_bytes(bytes(bad))
        with pytest.raises(fw.CheckpointError, match=r"^\[load\] '.*'"):
            fw.load(path)
    marker = good.index(b"oarlock-checkpoint")
    bad = bytearray(good)
    bad[marker] = ord("x")  # "xarlock-checkpoint-2": the file must not be read as a foreign safetensors file
    path.write_bytes(bytes(bad))
    with pytest.raises(
        fw.CheckpointError, match=r"damaged Oarlock checkpoint: its format record is 'xarlock-checkpoint-2'"
    ):
        fw.load(path)


def test_directories_and_other_files_are_not_checkpoints(tmp_path):
    with pytest.raises(fw.CheckpointError, match=r"\[load\] '.*' is a directory, not a checkpoint"):
        fw.load(tmp_path)
    png = tmp_path / "cat.png"
    png.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(64))
    with pytest.raises(
        fw.CheckpointError,
        match=r"\[load\] '.*cat.png' is not an Oarlock checkpoint .*first bytes are b'\\x89PNG",
    ):
        fw.load(png)
    z = tmp_path / "model.pt"
    z.write_bytes(b"PK\x03\x04" + bytes(100))
    with pytest.raises(
        fw.CheckpointError, match=r"not an Oarlock checkpoint .*zip archive, as torch.save writes"
    ):
        fw.load(z)
    txt = tmp_path / "notes.txt"
    txt.write_text("hello world, this is text")
    with pytest.raises(fw.CheckpointError, match="not an Oarlock checkpoint"):
        fw.load(txt)


def test_a_killed_save_leaves_a_temporary_that_the_next_save_removes(tmp_path):
    """The process dies between writing and renaming (SIGKILL): the old checkpoint is intact,
    a temporary is left, and the next save of the same path removes it."""
    path = tmp_path / "k.safetensors"
    fw.save({"v": fw.zeros([4])}, path)
    script = (
        "import os, signal, framework as fw\n"
        "os.replace = lambda *a: os.kill(os.getpid(), signal.SIGKILL)\n"
        f"fw.save({{'v': fw.ones([1000])}}, {str(path)!r})\n"
    )
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    r = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, timeout=120)
    assert r.returncode == -signal.SIGKILL, r.stderr.decode()[-2000:]
    left = [n for n in os.listdir(tmp_path) if n != "k.safetensors"]
    assert len(left) == 1 and left[0].startswith(".k.safetensors.tmp-"), left
    assert fw.load(path)["v"].tolist() == [0.0] * 4
    other = tmp_path / "other.safetensors"
    fw.save({"v": fw.ones([1])}, other)  # another path leaves it alone
    assert left[0] in os.listdir(tmp_path)
    fw.save({"v": fw.ones([2])}, path)
    assert sorted(os.listdir(tmp_path)) == ["k.safetensors", "other.safetensors"]


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_files_honour_the_umask(tmp_path, umask):
    old = os.umask(umask)
    try:
        path = tmp_path / "m.safetensors"
        fw.save({"v": fw.ones([2])}, path)
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o666 & ~umask


def test_save_and_load_stream_one_tensor_at_a_time(tmp_path):
    """Host memory beyond the result stays near the largest tensor (tracemalloc sees numpy's
    allocations, so this is exact, not a timing or RSS guess). 8 tensors of 2 MB each: the
    old whole-file implementation needed more than 2x the total."""
    import tracemalloc

    n, each = 8, 1 << 19  # float32 elements: 2 MiB
    state = {f"w{i}": fw.full([each], float(i)) for i in range(n)}
    path = tmp_path / "big.safetensors"
    total = n * each * 4
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        fw.save(state, path)
        save_peak = tracemalloc.get_traced_memory()[1] - base
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        back = fw.load(path)
        load_peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert save_peak < 3 * each * 4, f"save used {save_peak} bytes for {total} bytes of tensors"
    assert load_peak < total + 3 * each * 4, f"load used {load_peak} bytes for {total} bytes of tensors"
    for i in range(n):
        assert back[f"w{i}"].shape == (each,) and float(back[f"w{i}"][each - 1].item()) == float(i)


def test_checkpoints_of_format_1_still_load_and_are_checked(tmp_path):
    """Files written before the whole-file checksum (format 1: data-only SHA-256, written by
    the safetensors library) load, and their damaged data is still refused."""
    import hashlib
    import json

    from safetensors.numpy import save_file

    w = np.arange(6, dtype=np.float32).reshape(2, 3)
    h = hashlib.sha256(b"model.w" + w.tobytes()).hexdigest()
    tree = {"__dict__": {"model": {"__dict__": {"w": {"__tensor__": "model.w"}}}, "step": 4}}
    path = tmp_path / "v1.safetensors"
    save_file(
        {"model.w": w},
        str(path),
        metadata={"format": "oarlock-checkpoint-1", "tree": json.dumps(tree), "sha256": h},
    )
    back = fw.load(path)
    assert back["step"] == 4
    np.testing.assert_array_equal(back["model"]["w"].numpy(), w)
    data = bytearray(path.read_bytes())
    data[-3] ^= 0x40
    path.write_bytes(bytes(data))
    with pytest.raises(fw.CheckpointError, match="corrupted"):
        fw.load(path)
