"""ZeRO sharding (``group_sharded_parallel``, levels os / os_g / p_g_os) with
``ClipGradByGlobalNorm``: the global norm is summed over the ranks' slices, so 2 ranks train
as one process with the clip (under ``oarlock launch -n 2``); a clip that needs each whole
gradient (``ClipGradByNorm``) is refused."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pytest

import framework as fw
from framework.distributed import launch, sharding
from tests.conftest import needs_mpi
from tests.dist_results import rank_files

SCRIPT = Path(__file__).parent / "dist_scripts" / "sharding_clip.py"


@needs_mpi
@pytest.mark.mpi
def test_global_norm_clip_sharded_equals_one_process_on_2_ranks() -> None:
    out = tempfile.mkdtemp(prefix="oarlock-shclip-")
    proc = launch.run([str(SCRIPT), out], 2, timeout=300, collective_timeout=60)
    for r, d in enumerate(rank_files(proc, out, 2)):
        assert all(d[f"ref/norm/{s}"] > 0.05 * 2 for s in range(3))  # the clip acted at every step
        refs = [k for k in d.files if k.startswith("ref/param/")]
        assert len(refs) == 4, refs
        for level in ("os", "os_g", "p_g_os"):
            for k in refs:
                got = d[k.replace("ref/", f"{level}/")]
                np.testing.assert_allclose(got, d[k], rtol=1e-5, atol=1e-6, err_msg=f"rank {r} {level} {k}")
    assert proc.returncode == 0, proc.stdout[-3000:]


def test_clip_by_norm_is_refused_and_global_norm_on_one_rank_equals_unsharded() -> None:
    lin = fw.nn.Linear(3, 2)
    opt = fw.optimizer.Adam(parameters=lin.parameters(), grad_clip=fw.nn.ClipGradByNorm(1.0))
    with pytest.raises(fw.OarlockError, match=r"\[sharding\] grad_clip=ClipGradByNorm cannot be computed"):
        sharding.group_sharded_parallel(lin, opt, level="os")
    # one rank: the sharded clip (its own norm, all-reduced over one rank) is the optimizer's clip
    x = fw.to_tensor(np.random.default_rng(0).normal(size=(5, 3)).astype("float32"))
    params = []
    for shard in (False, True):
        fw.seed(3)
        net = fw.nn.Linear(3, 2)
        o = fw.optimizer.SGD(
            learning_rate=0.5, parameters=net.parameters(), grad_clip=fw.nn.ClipGradByGlobalNorm(0.01)
        )
        if shard:
            net, o, _ = sharding.group_sharded_parallel(net, o, level="os_g")
        (net(x) ** 2).sum().backward()
        o.step()
        params.append([p.numpy() for p in net.parameters()])
    fw.seed(3)
    w0 = fw.nn.Linear(3, 2)
    (w0(x) ** 2).sum().backward()
    g = [p.grad.numpy() for p in w0.parameters()]
    scale = 0.01 / max(np.sqrt(sum((a**2).sum() for a in g)), 0.01)
    for got_plain, got_sharded, p, gi in zip(*params, w0.parameters(), g):
        want = p.numpy() - 0.5 * scale * gi  # numpy: SGD on the clipped gradient
        np.testing.assert_allclose(got_plain, want, rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(got_sharded, want, rtol=1e-5, atol=1e-7)
