"""Proof that a vendor needs only the primitives: a plugin that registers nothing but the
primitive kernels trains the tiny Llama to the cpu plugin's loss curve (same seed), with no
CPU fallback, every composite running its decomposition."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import framework as fw

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))

STEPS = 8


@pytest.fixture(scope="module")
def primonly():
    from plugins_for_tests import primonly as mod

    from framework._src.plugins import host

    if "primonly" not in host().registry.runtimes:
        fw.register_plugin(mod, name="primonly")
    return "primonly"


def test_registers_only_primitives(primonly):
    from adapter_api import PRIMITIVES
    from framework._src.plugins import host

    ops = {op for (op, dt, _), _e in host().registry.kernels.items() if dt == "primonly"}
    assert ops and ops <= set(PRIMITIVES)
    assert not {"softmax", "rms_norm", "layer_norm", "attention", "conv2d", "linear"} & ops


def test_tiny_llama_follows_the_cpu_loss_curve(primonly, monkeypatch):
    from conformance.models import train_steps

    # Decompositions on both devices (no generated kernels on cpu): the curves must be equal.
    monkeypatch.setenv("OARLOCK_COMPILE", "0")
    fw.reset_fallback_stats()
    fw.set_strict_kernels(True)
    try:
        before = {k: dict(v) for k, v in fw.op_path_stats().items()}
        prim = train_steps("tiny_llama", STEPS, seed=0, device="primonly")
    finally:
        fw.set_strict_kernels(False)
    assert fw.fallback_stats() == {}
    paths = fw.op_path_stats()
    # (the loss no longer goes through log_softmax: cross_entropy clips as Paddle does, from primitives)
    for op in ("rms_norm", "attention", "linear", "silu"):
        st = paths[f"{op}@primonly"]
        old = before.get(f"{op}@primonly", {"decomposed": 0})
        assert st["fused"] == 0 and st["generated"] == 0 and st["decomposed"] > old["decomposed"]
    cpu = train_steps("tiny_llama", STEPS, seed=0, device="cpu")
    np.testing.assert_allclose(prim, cpu, rtol=1e-6)
    assert prim[-1] < prim[0]


def test_cnn_trains_on_primitives_only(primonly):
    from conformance.models import train_steps

    fw.set_strict_kernels(True)
    try:
        losses = train_steps("cnn", 6, seed=1, device="primonly")
    finally:
        fw.set_strict_kernels(False)
    np.testing.assert_allclose(losses, train_steps("cnn", 6, seed=1, device="cpu"), rtol=1e-4)
