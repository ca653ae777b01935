"""Launch tuning (framework/compiler/tune.py) on PoCL: the first launch of a generated kernel
in a shape bucket measures the vector widths and work-group sizes and keeps the fastest in
tuning.json (keyed by device identity, kernel and bucket or row length), a fresh process reads it back, OARLOCK_TUNE=0 keeps the
fixed default, and a damaged file is ignored; results match numpy whichever size runs."""

from __future__ import annotations

import json

import numpy as np
import pytest

import framework as fw
import framework.nn.functional as F
from framework import compiler
from framework._src import device as _dev
from framework.compiler import tune

pytest.importorskip("pyopencl", reason="pyopencl is not installed")
DEVICE = "opencl:0"


@pytest.fixture
def fresh(fresh_tuning):
    try:
        if not compiler.has_compile_access(DEVICE):
            pytest.skip(f"{DEVICE}: no compile access")
    except fw.OarlockError as exc:
        pytest.skip(f"{DEVICE}: {exc}")
    return fresh_tuning


def rms(x: np.ndarray) -> np.ndarray:
    return x / np.sqrt((x.astype(np.float64) ** 2).mean(-1, keepdims=True) + 1e-6)


def run(a: np.ndarray) -> np.ndarray:
    return F.rms_norm(fw.to_tensor(a, device=DEVICE), epsilon=1e-6).numpy()


def test_tuned_once_kept_on_disk_and_read_back(fresh):
    a = np.random.default_rng(0).standard_normal((256, 512)).astype(np.float32)
    np.testing.assert_allclose(run(a), rms(a), rtol=1e-5, atol=1e-6)
    assert tune.STATS["measured"] == 2  # the work-group size, then the vector width
    entries = json.loads((fresh / "tuning.json").read_text())["entries"]
    mine = {k: v for k, v in entries.items() if k.split("|")[1].startswith("rms_norm")}
    (k, v), (kw, vw) = sorted(mine.items())
    comp = compiler.compiler_for(_dev.parse(DEVICE))
    assert k == tune.key(comp.identity(), k.split("|")[1], 256, 512) and k.endswith("|256x512")
    assert v["local"] in tune.CANDIDATES and set(v["ms"]) <= {str(c) for c in tune.CANDIDATES}
    assert kw == tune.width_key(comp.identity(), k.split("|")[1], 512)
    assert vw["width"] in tune.WIDTHS and set(vw["ms"]) <= {str(w) for w in tune.WIDTHS}
    np.testing.assert_allclose(run(a[:200]), rms(a[:200]), rtol=1e-5, atol=1e-6)  # same bucket
    assert tune.STATS["measured"] == 2
    tune.reset()  # as a new process: the choices come from the file
    np.testing.assert_allclose(run(a), rms(a), rtol=1e-5, atol=1e-6)
    assert tune.STATS == {"measured": 0, "from_disk": 2}


def test_tuning_off_is_the_fixed_default(fresh, monkeypatch):
    monkeypatch.setenv("OARLOCK_TUNE", "0")
    a = np.random.default_rng(1).standard_normal((256, 512)).astype(np.float32)
    np.testing.assert_allclose(run(a), rms(a), rtol=1e-5, atol=1e-6)
    assert tune.STATS["measured"] == 0 and not (fresh / "tuning.json").exists()
    assert tune.choose(object(), "k", 1 << 12, 1 << 12, 64, lambda g: None, lambda: None) == 64


def test_a_damaged_tuning_file_is_ignored_and_rewritten(fresh):
    (fresh / "tuning.json").write_text("{not json")
    a = np.random.default_rng(2).standard_normal((256, 512)).astype(np.float32)
    np.testing.assert_allclose(run(a), rms(a), rtol=1e-5, atol=1e-6)
    assert tune.STATS["measured"] == 2
    assert json.loads((fresh / "tuning.json").read_text())["version"] == tune.VERSION
