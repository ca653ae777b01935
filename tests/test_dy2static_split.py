"""Graph breaks that split (framework.jit.split): the statements that read tensor values run as
Python, the runs of statements between them as programs, guarded and re-traced like any
to_static function; what cannot be split runs as one eager call."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import framework as fw
import framework.nn.functional as F
from framework.jit import api
from tests.dy2static_cases import CASES
from tests.test_dy2static import _args, _assert_same

#: the break cases that split: how many segments each becomes, and how many of them run as
#: programs for the suite's inputs (a segment given a NumPy array runs eagerly: an array is
#: no guardable Python value; item_in_a_condition's last return is not reached)
SPLITS = {
    "print_break": (2, 2),  # print of a tensor in the middle
    "item_in_the_middle": (2, 2),  # v = t.item(), v read by the rest
    "numpy_in_the_middle": (1, 0),  # a = t.numpy(), then the rest reads a
    "two_breaks": (2, 2),  # print, then a statement reading .item()
    "numpy_library_call": (1, 0),  # a NumPy call on a tensor, its array read by the rest
    "math_library_call": (1, 1),  # a math call on float(t)
    "item_in_a_condition": (1, 0),  # if t.item() > 0: ... return
    "list_of_tensors_and_item": (2, 2),  # a list of tensors, then sum(... .item())
    "break_in_a_loop_body_then_print": (2, 2),
}
#: break cases that still run as one eager call: the one statement is the whole function
WHOLE = {"calls_unconverted_helper"}


@pytest.mark.parametrize("name", sorted(SPLITS))
def test_a_break_case_splits_into_programs_around_python(name, device, capsys):
    fn, ins, _ = CASES[name]
    sf = fw.jit.to_static(fn)
    for seed in (0, 1, 0):
        args = _args(ins, device, seed)
        with fw.no_grad():
            _assert_same(sf(*args), fn(*args))
    (sp,) = sf.splits
    assert (len(sp.segments), sum(1 for seg in sp.segments if seg.programs)) == SPLITS[name]
    first = fn.__code__.co_firstlineno
    assert all(first < ln for ln in sp.python_lines)
    capsys.readouterr()


def test_a_break_that_is_the_whole_function_runs_eagerly():
    for name in WHOLE:
        fn, ins, breaks = CASES[name]
        sf = fw.jit.to_static(fn)
        with fw.no_grad():
            _assert_same(sf(*_args(ins, "cpu")), fn(*_args(ins, "cpu")))
        assert breaks and sf.last_breaks and not sf.splits
    sf = fw.jit.to_static(lambda x: x * x.sum().item())  # no source of its own: no split
    with fw.no_grad():
        np.testing.assert_allclose(sf(fw.ones([2])).numpy(), [2.0, 2.0])
    assert sf.last_breaks and not sf.splits


def test_the_python_between_runs_every_call_and_the_pieces_once_traced(capsys):
    w = fw.to_tensor(np.arange(12, dtype=np.float32).reshape(3, 4) / 10)

    def f(x):
        h = fw.matmul(x, w)
        print("norm", round(float(h.abs().sum()), 3))
        return F.relu(h) * 2

    sf = fw.jit.to_static(f)
    xs = [fw.to_tensor(np.full((2, 3), v, np.float32)) for v in (1.0, -1.0, 2.0)]
    with fw.no_grad():
        for x in xs:
            np.testing.assert_allclose(sf(x).numpy(), np.maximum(x.numpy() @ w.numpy(), 0) * 2, rtol=1e-6)
    # once a call: the first by the probe (the trace stopped before the print), then the split
    want = [f"norm {round(float(np.abs(x.numpy() @ w.numpy()).sum()), 3)}" for x in xs]
    assert capsys.readouterr().out.split("\n")[:3] == want
    (sp,) = sf.splits
    assert [len(s.programs) for s in sp.segments] == [1, 1]  # same shapes: traced once each
    assert "op.matmul" in str(sp.segments[0].programs[0].program)


def test_a_python_value_read_after_the_break_is_guarded_and_bounded(monkeypatch):
    def f(x):
        y = x * 2
        v = y.sum().item()
        return y + v

    monkeypatch.setattr(api, "MAX_VARIANTS", 3)
    sf = fw.jit.to_static(f)
    with fw.no_grad(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for k in range(6):  # a new v each call: the second piece is re-traced for it
            x = fw.full([3], float(k))
            np.testing.assert_allclose(sf(x).numpy(), np.full(3, 2.0 * k + 6.0 * k))
    (sp,) = sf.splits
    second = sp.segments[1]
    assert len(second.programs) <= 3  # the oldest dropped
    assert sum("traced variants" in str(w.message) for w in caught) == 1


class _Logged(fw.nn.Layer):
    def __init__(self) -> None:
        super().__init__()
        self.a = fw.nn.Linear(4, 8)
        self.b = fw.nn.Linear(8, 2)
        self.calls = 0
        self.seen: list[float] = []

    def forward(self, x):
        h = F.gelu(self.a(x))
        self.calls += 1  # an attribute store: Python, every call
        self.seen.append(float(h.mean()))  # a break: Python
        return self.b(h)


def test_a_layer_split_in_forward_trains_like_eager_and_keeps_its_side_effects():
    fw.seed(3)
    net, ref = _Logged(), _Logged()
    ref.set_state_dict(net.state_dict())
    sf_net = fw.jit.to_static(net)
    x = fw.to_tensor(np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32))
    for m in (sf_net, ref):
        for _ in range(3):
            loss = (m(x) ** 2).mean()
            loss.backward()
    for p, q in zip(net.parameters(), ref.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-5, atol=1e-6)
    # the first call's trace ran the Python up to the break once more (before the probe)
    assert (net.calls, ref.calls, len(net.seen)) == (4, 3, 3)
    np.testing.assert_allclose(net.seen, ref.seen, rtol=1e-6)
    (sp,) = net.forward.splits
    assert len(sp.segments) == 2 and all(s.programs for s in sp.segments)


def test_a_break_inside_a_helper_runs_that_statement_as_python():
    def helper(t):
        return t * float(t.max())

    def f(x):
        a = fw.exp(x)
        b = helper(a)
        return b + a

    sf = fw.jit.to_static(f)
    x = fw.to_tensor(np.array([0.0, 1.0, 2.0], np.float32))
    with fw.no_grad():
        for _ in range(2):
            np.testing.assert_allclose(sf(x).numpy(), f(x).numpy(), rtol=1e-6)
    (sp,) = sf.splits
    assert sp.python_lines == [f.__code__.co_firstlineno + 2]
    assert len(sp.segments) == 2


def test_enable_to_static_off_runs_a_split_function_as_written(capsys):
    def f(x):
        y = x + 1
        print(y.sum().item())
        return y

    sf = fw.jit.to_static(f)
    with fw.no_grad():
        sf(fw.ones([2]))
        sf(fw.ones([2]))
        fw.jit.enable_to_static(False)
        try:
            assert type(sf(fw.ones([2]))) is fw.Tensor
            assert sf.splits[0].segments[0].programs  # traced before, not run now
        finally:
            fw.jit.enable_to_static(True)
    assert capsys.readouterr().out.split() == ["4.0"] * 3
    assert "__call__" in vars(api.StaticFunction)  # the switch lives in __call__ itself


def test_a_function_made_before_the_break_and_used_after_keeps_the_body_whole():
    def f(x):
        def scale(t):
            return t * 3

        print(x.sum().item())
        return scale(x) + 1

    sf = fw.jit.to_static(f)
    with fw.no_grad():
        for _ in range(3):
            np.testing.assert_allclose(sf(fw.ones([2])).numpy(), [4.0, 4.0])
    assert sf.last_breaks and not sf.splits  # one eager call: no function crosses a piece
