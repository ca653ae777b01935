"""Dynamic to static of any Python: converted control flow, graph breaks, guards, to_static
on methods (framework.jit.ast_convert, convert_ops, graph_break)."""

from __future__ import annotations

import numpy as np
import pytest

import framework as fw
from framework.static import InputSpec
from tests.dy2static_cases import CASES


def _args(ins, device, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for make in ins:
        v = make(rng)
        out.append(fw.to_tensor(v, device=device) if isinstance(v, np.ndarray) else v)
    return out


def _np(obj):
    if isinstance(obj, fw.Tensor):
        return obj.numpy()
    if isinstance(obj, dict):
        return {k: _np(v) for k, v in obj.items()}
    if isinstance(obj, (tuple, list)):
        return type(obj)(_np(v) for v in obj)
    return obj


def _assert_same(got, want):
    got, want = _np(got), _np(want)
    if isinstance(want, dict):
        assert sorted(got) == sorted(want)
        for k in want:
            _assert_same(got[k], want[k])
    elif isinstance(want, (tuple, list)):
        assert type(got) is type(want) and len(got) == len(want)
        for g, w in zip(got, want):
            _assert_same(g, w)
    else:
        np.testing.assert_allclose(
            np.asarray(got, np.float64), np.asarray(want, np.float64), rtol=1e-5, atol=1e-5
        )


@pytest.mark.parametrize("name", sorted(CASES))
def test_case_equals_eager_with_the_counted_breaks(name, device, capsys):
    fn, ins, breaks = CASES[name]
    sf = fw.jit.to_static(fn)
    for seed in (0, 1):  # two calls: the second runs the cached program (or the eager variant)
        args = _args(ins, device, seed)
        with fw.no_grad():
            want = fn(*args)
            got = sf(*args)
        _assert_same(got, want)
        assert len(sf.last_breaks) == breaks, [str(b) for b in sf.last_breaks]
    for b in sf.last_breaks:  # each break names a line of the case's file and a reason
        assert "dy2static_cases.py:" in b.where and b.reason
    capsys.readouterr()


def test_the_suite_is_large():
    assert len(CASES) >= 40
    assert sum(1 for _, _, b in CASES.values() if b) >= 10


def test_converted_control_flow_is_a_program_op():
    sf = fw.jit.to_static(CASES["for_break"][0])
    with fw.no_grad():
        sf(fw.ones([2]), fw.to_tensor(5))
    text = str(sf.programs[0].program)
    assert "cf.while" in text and "cf.cond" in text
    with fw.no_grad():  # one program serves every trip count and both branches
        out = sf(fw.ones([2]), fw.to_tensor(3))
    np.testing.assert_allclose(out.numpy(), [3.0, 3.0])
    assert len(sf.programs) == 1


def test_graph_breaks_reports_lines_and_reasons():
    fn = CASES["two_breaks"][0]
    breaks = fw.jit.graph_breaks(fn, fw.ones([3]))
    assert [b.reason for b in breaks] == ["print/str of a tensor reads its values", "item() reads the value"]
    first = fn.__code__.co_firstlineno
    assert breaks[0].where.endswith(f"dy2static_cases.py:{first + 2} (print(y))")
    assert f":{first + 3} " in breaks[1].where
    sf = fw.jit.to_static(fn)
    sf(fw.ones([3]))
    assert [str(b) for b in fw.jit.graph_breaks(sf)] == [str(b) for b in breaks]


def test_full_graph_turns_a_break_into_an_error_naming_the_line():
    fn = CASES["item_in_the_middle"][0]
    sf = fw.jit.to_static(fn, full_graph=True)
    with pytest.raises(fw.jit.GraphBreakError) as e:
        sf(fw.ones([3]))
    line = fn.__code__.co_firstlineno + 2
    assert f"dy2static_cases.py:{line} (v = y.sum().item())" in str(e.value)
    assert "full_graph=True" in str(e.value)
    # converted control flow is no break: full_graph=True traces it
    ok = fw.jit.to_static(CASES["for_break"][0], full_graph=True)
    with fw.no_grad():
        np.testing.assert_allclose(ok(fw.ones([2]), fw.to_tensor(4)).numpy(), [4.0, 4.0])


def test_a_variable_only_one_branch_defines_names_itself_and_the_line():
    def f(x):
        if x.sum() > 0:
            y = x + 1
        return y * 2

    with fw.no_grad(), pytest.raises(fw.jit.ConversionError) as e:
        fw.jit.to_static(f)(fw.ones([2]))
    msg = str(e.value)
    line = f.__code__.co_firstlineno + 1
    assert "'y'" in msg and f"test_dy2static.py:{line} (if x.sum() > 0:)" in msg
    assert f"test_dy2static.py:{line + 2} (return y * 2)" in msg  # where it is used

    # unused after the if: no error; a Python condition keeps Python's rules
    def g(x, flag):
        if x.sum() > 0:
            t = x + 1  # noqa: F841 — assigned in one branch, never used
        if flag:
            z = x * 3  # noqa: F841
        return x * 2

    with fw.no_grad():
        np.testing.assert_allclose(fw.jit.to_static(g)(fw.ones([2]), False).numpy(), [2.0, 2.0])


def test_a_loop_local_used_after_a_traced_loop_is_an_error():
    def f(x, n):
        for i in range(n):
            t = x * i
        return t

    with fw.no_grad(), pytest.raises(fw.jit.ConversionError, match="'t' is used.*first assigned inside"):
        fw.jit.to_static(f)(fw.ones([2]), fw.to_tensor(3))
    with fw.no_grad():  # a Python bound: Python's loop, t is the last value
        np.testing.assert_allclose(fw.jit.to_static(f)(fw.ones([2]), 3).numpy(), [2.0, 2.0])


def test_guards_retrace_on_python_values_and_shapes_and_cache_eager_variants():
    fn = CASES["python_value_branch"][0]
    sf = fw.jit.to_static(fn)
    with fw.no_grad():
        a = sf(fw.ones([2]), True)
        b = sf(fw.ones([2]), False)
        c = sf(fw.ones([3]), True)
    np.testing.assert_allclose(a.numpy(), [2.0, 2.0])
    np.testing.assert_allclose(b.numpy(), [-1.0, -1.0])
    assert c.shape == (3,) and len(sf.programs) == 3
    br = fw.jit.to_static(CASES["print_break"][0])
    with fw.no_grad():
        br(fw.ones([2]))
        br(fw.ones([2]))  # the eager variant is cached: no new probe, same report
    assert len(br.last_breaks) == 1 and len(br.programs) == 0


def test_too_many_variants_warn_and_drop_the_oldest(monkeypatch):
    monkeypatch.setattr(fw.jit.api, "MAX_VARIANTS", 3)
    sf = fw.jit.to_static(lambda x, k: x * k)
    with fw.no_grad(), pytest.warns(UserWarning, match="more than 3"):
        for k in range(5):
            np.testing.assert_allclose(sf(fw.ones([2]), k).numpy(), [k, k])
    assert len(sf.programs) == 3
    with fw.no_grad():  # a dropped one is traced again
        np.testing.assert_allclose(sf(fw.ones([2]), 0).numpy(), [0.0, 0.0])


class _Gate(fw.nn.Layer):
    def __init__(self) -> None:
        super().__init__()
        self.a = fw.nn.Linear(4, 4)
        self.b = fw.nn.Linear(4, 4)

    @fw.jit.to_static
    def forward(self, x):
        h = self.a(x)
        if h.mean() > 0:
            out = self.b(h)
        else:
            out = self.b(-h) * 2
        return out.sum()


def test_to_static_on_forward_in_the_class_body_trains_through_an_if(device):
    fw.seed(3)
    net = _Gate().to(device)
    ref = _Gate().to(device)
    for p, q in zip(net.parameters(), ref.parameters()):
        q.set_value(fw.to_tensor(p.numpy().copy(), device=device))
    for seed in range(3):
        x = fw.to_tensor(
            np.random.default_rng(seed).standard_normal((3, 4)).astype(np.float32), device=device
        )
        loss = net(x)
        loss.backward()
        want = _Gate.forward.__wrapped__(ref, x)  # the plain function, eagerly
        want.backward()
        np.testing.assert_allclose(loss.numpy(), want.numpy(), rtol=1e-5, atol=1e-5)
        for (n, p), (_, q) in zip(net.named_parameters(), ref.named_parameters()):
            np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-4, atol=1e-5, err_msg=n)
        net.clear_gradients()
        ref.clear_gradients()
    assert fw.jit.graph_breaks(net) == []
    assert isinstance(net.forward, fw.jit.StaticFunction) and net.forward.programs


def test_a_training_step_under_to_static_with_an_if_on_a_tensor():
    fw.seed(5)
    lin = fw.nn.Linear(3, 1)
    ref = fw.nn.Linear(3, 1)
    for p, q in zip(lin.parameters(), ref.parameters()):
        q.set_value(p.numpy().copy())
    opts = [fw.optimizer.SGD(0.1, parameters=m.parameters()) for m in (lin, ref)]

    def step(m, opt, x):
        y = m(x).mean()
        if y > 0:
            loss = y * y
        else:
            loss = -y
        loss.backward()
        opt.step()
        opt.clear_grad()
        return loss

    sstep = fw.jit.to_static(step)
    for seed in range(4):
        x = fw.to_tensor(np.random.default_rng(seed).standard_normal((4, 3)).astype(np.float32))
        got = sstep(lin, opts[0], x)
        want = step(ref, opts[1], x)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5)
        np.testing.assert_allclose(lin.weight.numpy(), ref.weight.numpy(), rtol=1e-5, atol=1e-6)


def test_bound_method_plain_function_layer_and_input_spec_with_none_dims():
    class Scaler:
        def __init__(self, k):
            self.k = k

        def apply(self, x):
            if x.sum() > 0:
                return x * self.k
            return x

    m = fw.jit.to_static(Scaler(3.0).apply, input_spec=[InputSpec([None])])
    with fw.no_grad():
        np.testing.assert_allclose(m(fw.ones([2])).numpy(), [3.0, 3.0])
        np.testing.assert_allclose(m(fw.ones([5])).numpy(), [3.0] * 5)
    lin = fw.jit.to_static(fw.nn.Linear(4, 2), input_spec=[InputSpec([None, 4])], backend=None)
    with fw.no_grad():
        assert lin(fw.ones([7, 4])).shape == (7, 2)
    with pytest.raises(ValueError, match="backend"):
        fw.jit.to_static(lambda x: x, backend="XLA")
    assert fw.jit.to_static(lambda x: x + 1, backend="CINN", full_graph=True)(fw.ones([1])).item() == 2.0
