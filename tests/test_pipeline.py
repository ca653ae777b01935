"""Pipeline parallelism (``fleet.meta_parallel.PipelineLayer`` / ``PipelineParallel``): under
``oarlock launch -n 4``, 4 stages with the 1F1B and FThenB schedules and with recomputation,
and 2 stages x 2 data-parallel replicas, give the losses, gradients and parameters of one
process on the whole batch; in this process, the stage cut and the argument checks."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np
import pytest

import framework as fw
from framework.distributed import fleet, launch
from framework.distributed.fleet.meta_parallel import LayerDesc, PipelineLayer, segment
from tests import fleet_job
from tests.conftest import needs_mpi

SCRIPTS = Path(__file__).parent / "dist_scripts"


@needs_mpi
@pytest.mark.mpi
@pytest.mark.parametrize("device, n", [("cpu", 4), ("opencl", 2)])
def test_pipeline_equals_one_process(device: str, n: int) -> None:
    """4 stages on cpu (and 2 x 2 dp x pp); 2 stages with the activations staged through the
    host on OpenCL (nightly: 85 s on the 2-core machine)."""
    if device == "opencl" and not (
        os.environ.get("OARLOCK_NIGHTLY") and any(d.type == "opencl" for d in fw.devices())
    ):
        pytest.skip("OpenCL pipeline: OARLOCK_NIGHTLY=1 and an OpenCL device")
    if device == "cpu":  # the 4-rank job shared with tests/test_fleet.py
        proc, root = fleet_job.run()
        out = os.path.join(root, "pp")
    else:
        out = tempfile.mkdtemp(prefix="oarlock-pp-")
        proc = launch.run([str(SCRIPTS / "pp_train.py"), device, out], n, timeout=300)
    stages = {}
    for r in range(n):
        path = os.path.join(out, f"rank{r}.npz")
        assert os.path.exists(path), (
            f"rank {r} wrote nothing (exit {proc.returncode}):\n{proc.stdout[-3000:]}"
        )
        d = np.load(path)
        stages[r] = (int(d["1F1B/stage"]), int(d["dp2xpp2/stage"]) if n == 4 else None)
        checked = 0
        for key in d.files:
            kind = key.split("/")[1] if "/" in key else ""
            if kind not in ("grad", "loss", "param"):
                continue
            ref = d[key.replace(f"/{kind}/", f"/ref_{kind}/")]
            np.testing.assert_allclose(d[key], ref, rtol=1e-5, atol=1e-6, err_msg=f"rank {r} {key}")
            checked += 1
        # the schedules x (3 losses, eval + this stage's parameters and gradients: 2 or 4 each)
        cases = 6 if n == 4 else 5
        assert checked >= cases * 4 + 5 * 2, (r, checked)
        if n == 4 and r in (0, 3):  # the tied weight, on the first and the last stage
            assert "tied/param/shared_layers.tie.weight" in d.files
        # 8 MB each way between rank pairs in one batch_isend_irecv: both arrived
        np.testing.assert_array_equal(d["exchange"], [r ^ 1, r ^ 1])
        assert d["1F1B/loss/2"] < d["1F1B/loss/0"]  # it trained
    if n == 4:
        assert stages == {0: (0, 0), 1: (1, 1), 2: (2, 0), 3: (3, 1)}  # mp innermost, then pp, then dp
    assert proc.returncode == 0, proc.stdout[-3000:]


def test_uniform_cut_matches_paddle() -> None:
    """Paddle's SegmentLayers.uniform: the later stages take the extra layers."""
    assert segment(list(range(10)), 4) == [0, 2, 4, 7, 10]
    assert segment(list(range(8)), 4) == [0, 2, 4, 6, 8]
    assert segment(list(range(5)), 2) == [0, 2, 5]
    descs = [LayerDesc(fw.nn.Linear, 2, 2), fw.tanh, LayerDesc(fw.nn.Linear, 2, 2), fw.tanh]
    assert segment(descs, 2, "layer:Linear") == [0, 2, 4]
    assert segment(descs, 2, [0, 1]) == [0, 1, 4]
    with pytest.raises(fw.OarlockError, match=r"\[PipelineLayer\] 4 layers cannot fill 5 stages"):
        segment(descs, 5)
    with pytest.raises(fw.OarlockError, match=r"seg_method 'layer:Conv' matches 0 layers"):
        segment(descs, 2, "layer:Conv")


def test_uniform_cut_against_real_paddle() -> None:
    paddle_pp = pytest.importorskip("paddle.distributed.fleet.meta_parallel.parallel_layers.pp_layers")
    for n, k in [(10, 4), (7, 3), (16, 4), (5, 5), (9, 2)]:
        assert segment(list(range(n)), k) == paddle_pp.SegmentLayers(list(range(n)), k).do_segment(), (n, k)


def test_one_stage_pipeline_layer_is_the_whole_model() -> None:
    """Layer i is built after seed(1234 + i) and named str(i), as in Paddle."""
    loss = fw.nn.MSELoss()
    net = PipelineLayer(
        [LayerDesc(fw.nn.Linear, 4, 8), fw.tanh, LayerDesc(fw.nn.Linear, 8, 2)], num_stages=1, loss_fn=loss
    )
    assert sorted(net.state_dict()) == ["0.bias", "0.weight", "2.bias", "2.weight"]
    fw.seed(1234 + 2)
    np.testing.assert_array_equal(net.state_dict()["2.weight"].numpy(), fw.nn.Linear(8, 2).weight.numpy())
    x = fw.to_tensor(np.random.default_rng(0).normal(size=(3, 4)).astype(np.float32))
    want = fw.tanh(x @ net.state_dict()["0.weight"] + net.state_dict()["0.bias"])
    want = want @ net.state_dict()["2.weight"] + net.state_dict()["2.bias"]
    np.testing.assert_allclose(net(x).numpy(), want.numpy(), rtol=1e-6)


def test_pipeline_checks_its_arguments() -> None:
    with pytest.raises(fw.OarlockError, match=r"\[PipelineLayer\] give num_stages or topology"):
        PipelineLayer([LayerDesc(fw.nn.Linear, 2, 2)])
    with pytest.raises(TypeError, match=r"\[LayerDesc\] layer_func must be a subclass of nn.Layer"):
        LayerDesc(fw.tanh)
    s = fleet.DistributedStrategy()
    with pytest.raises(fw.OarlockError, match=r"schedule_mode'\] must be '1F1B' or 'FThenB', got 'ZB'"):
        s.pipeline_configs = {"schedule_mode": "ZB"}
    with pytest.raises(fw.OarlockError, match=r"pipeline_configs has no key 'acc_steps'"):
        s.pipeline_configs = {"acc_steps": 2}
