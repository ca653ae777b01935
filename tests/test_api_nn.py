"""Paddle's ``nn.functional`` and ``nn`` layers from the API lists (issue 17), against numpy
references and finite differences, through the public API."""

from __future__ import annotations

import numpy as np

import framework as fw
import framework.nn.functional as F
from tests.conftest import assert_close

RNG = np.random.default_rng(0)


def _a(*shape, lo=-2.0, hi=2.0):
    return RNG.uniform(lo, hi, size=shape)


def _sigmoid(a):
    return 1 / (1 + np.exp(-a))


def test_existing_activation_layers(device):
    a = _a(3, 5) * 4
    x = fw.to_tensor(a, device=device)
    assert_close(F.relu6(x), np.clip(a, 0, 6))
    assert_close(F.swish(x), a * _sigmoid(a))
    assert_close(F.hardtanh(x, -1.5, 1.5), np.clip(a, -1.5, 1.5))
    assert_close(fw.nn.Identity()(x), a)
    assert_close(fw.nn.Sigmoid()(x), _sigmoid(a))
    assert_close(fw.nn.Tanh()(x), np.tanh(a))
    e = np.exp(a - a.max(-1, keepdims=True))
    assert_close(fw.nn.Softmax(axis=-1)(x), e / e.sum(-1, keepdims=True))
    assert_close(fw.nn.LeakyReLU(0.2)(x), np.where(a > 0, a, 0.2 * a))
    assert_close(
        fw.nn.AdaptiveAvgPool2D(1)(fw.to_tensor(a.reshape(1, 1, 3, 5), device=device)),
        a.mean().reshape(1, 1, 1, 1),
    )


def test_existing_loss_layers(device):
    logits, lab = _a(4, 3), np.array([0, 2, 1, 2])
    x = fw.to_tensor(logits, device=device)
    ls = logits - logits.max(-1, keepdims=True)
    ls = ls - np.log(np.exp(ls).sum(-1, keepdims=True))
    assert_close(fw.nn.CrossEntropyLoss()(x, fw.to_tensor(lab, device=device)), -ls[np.arange(4), lab].mean())
    y = RNG.uniform(0, 1, size=(4, 3))
    t = fw.to_tensor(y, device=device)
    p = _sigmoid(logits)
    assert_close(fw.nn.BCEWithLogitsLoss()(x, t), -(y * np.log(p) + (1 - y) * np.log(1 - p)).mean())
    assert_close(fw.nn.MSELoss()(x, t), ((logits - y) ** 2).mean())
    assert_close(fw.nn.L1Loss(reduction="sum")(x, t), np.abs(logits - y).sum())


def test_existing_parameter_list():
    ps = fw.nn.ParameterList([fw.nn.Parameter.from_tensor(fw.ones([2])) for _ in range(3)])
    assert len(ps.parameters()) == 3
