"""Control flow in fw.jit.save(..., format="paddle"): ``cf.cond`` and ``cf.while`` (what
``to_static`` makes of a Python ``if``/``while`` on tensors) written as Paddle's ``pd_op.if``
(two regions, each ending in ``cf.yield``) and ``pd_op.while`` (the condition as the first
operand; a body block whose arguments are the loop values and which yields the next
condition and the next values) — the form real Paddle 3.3.1's own jit.save writes for the
same Python code. Real Paddle's jit.load and Predictor (child process) and Oarlock's own
import run the files: outputs equal to Oarlock's eager ones (rtol 1e-5) for both branches
and several trip counts."""

from __future__ import annotations

import os

import numpy as np
import pytest

import framework as fw
from framework.jit.paddle_format.export import PaddleExportError
from framework.static import InputSpec
from tests.test_paddle_format_export import needs_paddle, rand, roundtrip_many
from tests.test_paddle_format_export_ops import op_counts


class Branch(fw.nn.Layer):
    def __init__(self) -> None:
        super().__init__()
        self.fc = fw.nn.Linear(3, 3)

    def forward(self, x):
        h = self.fc(x)
        if h.sum() > 0:
            out = h * 2.0 + x
        else:
            out = fw.tanh(h) - 1.0
        return out


@needs_paddle
def test_if_both_branches(tmp_path):
    fw.seed(8)
    net = Branch()
    w = net.fc.weight.numpy()
    b = net.fc.bias.numpy()
    cases = []
    for n, sign in ((2, 1.0), (3, -1.0), (1, 1.0), (4, -1.0)):
        x = np.full((n, 3), 50.0 * sign, np.float32) + rand(n, 3, seed=n)
        cases.append([x])
    taken = {bool((x @ w + b).sum() > 0) for (x,) in cases}
    assert taken == {True, False}  # both branches are exercised
    prefix = roundtrip_many(net, [InputSpec([None, 3], "float32", "x")], cases, tmp_path)
    ops = op_counts(prefix)
    assert ops["1.if"] == 1 and ops["2.yield"] == 2


class Loop(fw.nn.Layer):
    """A loop with a tensor trip count, a weight read in the body and two carried values."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = fw.nn.Linear(3, 3)

    def forward(self, x, n):
        i = fw.zeros([1], "int64")
        acc = fw.zeros_like(x)
        while i < n:
            x = fw.tanh(self.fc(x)) * 2 + 1
            acc = acc + x
            i = i + 1
        return x, acc


@needs_paddle
def test_while_several_trip_counts(tmp_path):
    fw.seed(9)
    cases = [[rand(b, 3, seed=k), np.array([k], np.int64)] for b, k in ((2, 0), (3, 1), (2, 3), (1, 6))]
    specs = [InputSpec([None, 3], "float32", "x"), InputSpec([1], "int64", "n")]
    prefix = roundtrip_many(Loop(), specs, cases, tmp_path)
    ops = op_counts(prefix)
    assert ops["1.while"] == 1 and ops["2.yield"] == 1 and ops["1.less_than"] == 2


class Doubling(fw.nn.Layer):
    """A data-dependent trip count, and an ``if`` inside the loop body."""

    def forward(self, x):
        while x.abs().sum() < 100.0:
            if x.sum() > 0:
                x = x * 2.0
            else:
                x = x * 3.0 - 1.0
        return x


@needs_paddle
def test_while_with_an_if_inside(tmp_path):
    cases = [[rand(2, 3, seed=1) * s] for s in (0.01, 1.0, 40.0)] + [[np.full((3, 3), -0.2, np.float32)]]
    prefix = roundtrip_many(Doubling(), [InputSpec([None, 3], "float32", "x")], cases, tmp_path)
    ops = op_counts(prefix)
    assert ops["1.while"] == 1 and ops["1.if"] == 1


def test_op_without_lowering_inside_a_branch_is_named(tmp_path):
    class UnfoldInBranch(fw.nn.Layer):
        def forward(self, x):
            if x.sum() > 0:
                out = fw.nn.functional.unfold(x, 2).reshape([1, 4, 3, 3])
            else:
                out = fw.zeros([1, 4, 3, 3])
            return out

    with pytest.raises(
        PaddleExportError,
        match=r"op 'op\.unfold' \(#\d+ of cf\.cond #\d+ of the program region 0\) of layer UnfoldInBranch",
    ):
        fw.jit.save(
            UnfoldInBranch(),
            os.path.join(str(tmp_path), "m"),
            [InputSpec([1, 1, 4, 4], "float32", "x")],
            format="paddle",
        )
