"""The control-flow dialect (cf.cond, cf.while) and random draws inside programs: text round
trip, verifier, executor, passes, fw.static.nn.cond / while_loop eagerly and under to_static
(training through cond against eager and finite differences), save/load, and dropout masks
identical to eager for the same seed."""

from __future__ import annotations

import numpy as np
import pytest

import framework as fw
from adapter_api import OpArgumentError
from framework import ir
from framework.static import InputSpec
from framework.static.nn import cond, while_loop

T = "tensor<[3], float32, cpu>"
B = "tensor<[], bool, cpu>"
I = "tensor<[], int64, cpu>"  # noqa: E741

# a cond, and a while whose body holds a cond (nested regions, block arguments, captures)
TEXT = f"""module @f(%0: {T}, %1: {B}, %2: {I}) -> ({T}, {I}, {T}) {{
  %3 = cf.cond(%1) : {T} {{
    %4 = op.exp(%0) : {T}
    cf.yield(%4)
  }} {{
    cf.yield(%0)
  }}
  %5 = builtin.constant {{value = 5}} : {I}
  %6 = builtin.constant {{value = 1}} : {I}
  %7, %8 = cf.while(%2, %0) : {I}, {T} {{
  ^bb0(%9: {I}, %10: {T}):
    %11 = op.lt(%9, %5) : {B}
    cf.yield(%11)
  }} {{
  ^bb0(%12: {I}, %13: {T}):
    %14 = op.add(%12, %6) : {I}
    %15 = op.lt(%12, %6) : {B}
    %16 = cf.cond(%15) : {T} {{
      %17 = op.add(%13, %3) : {T}
      cf.yield(%17)
    }} {{
      %18 = op.mul(%13, %3) : {T}
      cf.yield(%18)
    }}
    cf.yield(%14, %16)
  }}
  builtin.return(%3, %7, %8)
}}
"""


def _reference(x: np.ndarray, b: bool, i0: int) -> tuple[np.ndarray, int, np.ndarray]:
    y = np.exp(x) if b else x
    acc, i = x.copy(), i0
    while i < 5:
        acc = acc + y if i < 1 else acc * y
        i += 1
    return y, i, acc


def _t(a: object, dtype: object = None) -> fw.Tensor:
    return fw.to_tensor(np.asarray(a, dtype=dtype))


def test_text_round_trips_regions_and_the_executor_runs_them():
    p = ir.parse_program(TEXT)
    assert ir.print_program(p) == TEXT
    assert ir.print_program(ir.parse_program(str(p))) == TEXT
    ir.verify(p)
    ex = ir.Executor(p, "cpu")
    x = np.array([0.5, -1.0, 2.0], np.float32)
    for b in (True, False):
        for i0 in (0, 3, 7):  # 7: the loop body never runs, the result is a copy of the input
            got = [o.numpy() for o in ex(_t(x), _t(b), _t(i0, np.int64))]
            want = _reference(x, b, i0)
            np.testing.assert_allclose(got[0], want[0], rtol=1e-6)
            assert int(got[1]) == want[1]
            np.testing.assert_allclose(got[2], want[2], rtol=1e-5)


def test_parser_scopes_region_values():
    bad = TEXT.replace("builtin.return(%3, %7, %8)", "builtin.return(%4, %7, %8)")
    with pytest.raises(ir.ParseError, match=r"%4 of builtin.return is not defined .*region that has ended"):
        ir.parse_program(bad)


def _replace(text: str, old: str, new: str) -> str:
    assert old in text
    return text.replace(old, new, 1)


@pytest.mark.parametrize(
    "old,new,message",
    [
        (
            "    cf.yield(%0)\n",
            "    cf.yield(%0, %0)\n",
            r"op #0 'cf.cond': region 1 \(else\) yields 2 values",
        ),
        (
            "    %4 = op.exp(%0) : " + T + "\n    cf.yield(%4)\n",
            "    %4 = op.exp(%0) : " + T + "\n",
            r"op #0 'cf.cond' region 0: op #0 'op.exp': the block of a region of 'cf.cond' must end in cf.yield",
        ),
        (
            "    cf.yield(%14, %16)\n",
            "    cf.yield(%14, %13)\n    %99 = op.neg(%13) : " + T + "\n",
            r"op #3 'cf.while' region 1: op #3 'cf.yield': a terminator must be the last op",
        ),
        (
            "    cf.yield(%11)\n",
            "    cf.yield(%10)\n",
            r"region 0 \(cond\) must yield one bool of one element",
        ),
    ],
)
def test_verifier_reports_region_problems_with_the_op_path(old, new, message):
    p = ir.parse_program(_replace(TEXT, old, new))
    with pytest.raises(ir.VerifyError, match=message):
        ir.verify(p)


def test_verifier_checks_types_of_yields_and_dominance_of_captures():
    p = ir.parse_program(TEXT)
    cond_op = p.block.ops[0]
    # a yield of another type than the result
    y = cond_op.regions[1].blocks[0].ops[-1]
    wrong = p.block.ops[1].result  # int64 constant
    y.set_operand(0, wrong)
    with pytest.raises(
        ir.VerifyError, match=r"region 1 \(else\) yields tensor<\[\], int64, cpu> as output 0"
    ):
        ir.verify(p)
    y.set_operand(0, p.inputs[0])
    # the else branch reads a value defined inside the then branch: not dominated
    inner = cond_op.regions[0].blocks[0].ops[0].result
    y.set_operand(0, inner)
    with pytest.raises(
        ir.VerifyError,
        match=r"op #0 'cf.cond' region 1: op #0 'cf.yield': operand 0 is defined inside another region",
    ):
        ir.verify(p)


def test_o2_over_a_program_with_cf_ops_keeps_it_valid_and_equal():
    text = f"""module @g(%0: {T}, %1: {B}) -> ({T}) {{
  %2 = op.exp(%0) : {T}
  %3 = builtin.constant {{value = 1.0}} : {T}
  %4 = cf.cond(%1) : {T} {{
    %5 = op.exp(%0) : {T}
    %6 = op.mul(%5, %3) : {T}
    %7 = op.neg(%0) : {T}
    cf.yield(%6)
  }} {{
    %8 = op.add(%2, %0) : {T}
    cf.yield(%8)
  }}
  %9 = cf.cond(%1) : {T} {{
    %10 = op.neg(%0) : {T}
    cf.yield(%10)
  }} {{
    cf.yield(%0)
  }}
  builtin.return(%4)
}}
"""
    p = ir.parse_program(text)
    x = np.array([0.5, -1.0, 2.0], np.float32)
    before = [ir.Executor(p, "cpu")(_t(x), _t(b))[0].numpy() for b in (True, False)]
    _, stats = ir.optimize(p, "O2")
    ir.verify(p)
    names = [op.name for op in p.walk()]
    assert names.count("cf.cond") == 1  # the unread cond is dead code (its regions are pure)
    assert "op.neg" not in names  # the dead op inside the kept region too
    assert names.count("op.exp") == 1  # the branch's exp is the body's (CSE into a region)
    assert "op.mul" not in names  # x * 1.0 canonicalized inside the region
    after = [ir.Executor(p, "cpu")(_t(x), _t(b))[0].numpy() for b in (True, False)]
    for a, b in zip(after, before):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    np.testing.assert_allclose(after[0], np.exp(x), rtol=1e-6)
    assert ir.print_program(ir.parse_program(str(p))) == str(p)


# -- fw.static.nn.cond / while_loop --------------------------------------------------------------------
def _branchy(x: fw.Tensor) -> fw.Tensor:
    h = fw.tanh(x)
    return cond(x.sum() > 0.0, lambda: fw.exp(h) * x, lambda: (h * h, x - 1.0)[0] * 3.0)


def test_cond_eagerly_runs_one_branch_only():
    ran = []

    def a():
        ran.append("a")
        return _t([1.0])

    def b():
        ran.append("b")
        return _t([2.0])

    assert cond(_t(True), a, b).tolist() == [1.0] and ran == ["a"]
    assert cond(_t([False]), a, b).tolist() == [2.0] and ran == ["a", "b"]
    assert cond(False, a, None) is None
    with pytest.raises(OpArgumentError, match=r"\[cond\] the predicate must be a bool tensor of one element"):
        cond(_t([1.0]), a, b)
    with pytest.raises(OpArgumentError, match=r"\[cond\] true_fn must be callable"):
        cond(True, 3, b)


@pytest.mark.parametrize("rows", [[[1.0, 2.0, -0.5]], [[-1.0, -2.0, 0.5], [0.1, -3.0, 0.2]]])
def test_cond_under_to_static_equals_eager_for_both_branches(rows):
    sf = fw.jit.to_static(_branchy, input_spec=[InputSpec([None, 3])])
    x = _t(rows, np.float32)
    with fw.no_grad():
        np.testing.assert_allclose(sf(x).numpy(), _branchy(x).numpy(), rtol=1e-6)
    assert len(sf.programs) == 1
    assert [op.name for op in sf.programs[0].program.block.ops].count("cf.cond") == 1


def test_cond_branches_must_agree_on_each_output():
    def f(x):
        return cond(x.sum() > 0.0, lambda: (x, x * 2.0), lambda: (x, x.sum()))

    with (
        fw.no_grad(),
        pytest.raises(
            fw.jit.TracingError,
            match=r"\[cond\] .*output 1 is float32\[2\] from true_fn but float32\[\] from false_fn",
        ),
    ):
        fw.jit.to_static(f)(_t([1.0, 2.0], np.float32))

    def g(x):
        return cond(x.sum() > 0.0, lambda: x, lambda: (x, x))

    with fw.no_grad(), pytest.raises(fw.jit.TracingError, match=r"\[cond\] .*different structures"):
        fw.jit.to_static(g)(_t([1.0, 2.0], np.float32))


def _loop(n: fw.Tensor, x: fw.Tensor) -> fw.Tensor:
    i = fw.zeros([], dtype="int64")
    _, y = while_loop(lambda i, y: i < n, lambda i, y: [i + 1, y * 1.5 + 1.0], [i, x])
    return y


def test_while_loop_eager_and_static_agree_and_the_loop_runs_in_the_program():
    sf = fw.jit.to_static(_loop)
    x = _t([1.0, -2.0], np.float32)
    with fw.no_grad():
        for n in (0, 1, 4):
            want = x.numpy().copy()
            for _ in range(n):
                want = want * 1.5 + 1.0
            np.testing.assert_allclose(_loop(_t(n, np.int64), x).numpy(), want, rtol=1e-6)
            np.testing.assert_allclose(sf(_t(n, np.int64), x).numpy(), want, rtol=1e-6)
    assert len(sf.programs) == 1  # one program for every trip count
    p = sf.programs[0].program
    assert ir.print_program(ir.parse_program(str(p))) == str(p)


def test_while_loop_body_must_keep_loop_value_types():
    def bad(x):
        return while_loop(lambda v: v.sum() < 10.0, lambda v: [v.astype("float64") * 2.0], [x])[0]

    x = _t([1.0], np.float32)
    with pytest.raises(
        OpArgumentError,
        match=r"\[while_loop\] body returns float64\[1\] as loop value 0, which entered as float32\[1\]",
    ):
        bad(x)
    with (
        fw.no_grad(),
        pytest.raises(OpArgumentError, match=r"\[while_loop\] body returns float64\[1\] as loop value 0"),
    ):
        fw.jit.to_static(bad)(x)


def _flip(x):
    if x.sum() > 0:  # the line the error names (a called helper is not converted)
        return x
    return -x


def test_a_python_if_on_a_traced_value_names_the_line_and_the_control_flow_api():
    with fw.no_grad(), pytest.raises(fw.jit.TracedValueError) as e:
        fw.jit.to_static(lambda x: _flip(x) + 0.0, full_graph=True)(_t([1.0], np.float32))
    msg = str(e.value)
    assert "test_ir_control.py" in msg and "if x.sum() > 0" in msg
    assert "fw.static.nn.cond" in msg and "fw.static.nn.while_loop" in msg


# -- training through cond -------------------------------------------------------------------------
class _Net(fw.nn.Layer):
    def __init__(self) -> None:
        super().__init__()
        self.a = fw.nn.Linear(3, 4)
        self.b = fw.nn.Linear(3, 4)

    def forward(self, x: fw.Tensor) -> fw.Tensor:
        h = self.a(x)
        y = cond(x.sum() > 0.0, lambda: fw.tanh(h) * self.b(x), lambda: h * h)
        return (y * y).sum()


def _grads(net: _Net, x: np.ndarray) -> tuple[float, np.ndarray, list[np.ndarray]]:
    for p in net.parameters():
        p.grad = None
    t = _t(x)
    t.stop_gradient = False
    loss = net(t)
    loss.backward()
    gp = [np.zeros(p.shape, np.float32) if p.grad is None else p.grad.numpy() for p in net.parameters()]
    return float(loss.numpy()), t.grad.numpy(), gp


def _finite_difference(f, x: np.ndarray, eps: float = 1e-3) -> np.ndarray:
    g = np.zeros_like(x, dtype=np.float64)
    for i in np.ndindex(x.shape):
        xp, xm = x.astype(np.float64), x.astype(np.float64)
        xp[i] += eps
        xm[i] -= eps
        g[i] = (f(xp) - f(xm)) / (2 * eps)
    return g


@pytest.mark.parametrize("rows", [[[1.0, 2.0, -0.5], [0.3, -0.2, 0.9]], [[-1.0, -2.0, 0.5]]])
def test_training_through_cond_equals_eager_and_finite_differences(rows):
    x = np.array(rows, np.float32)
    fw.seed(0)
    net = _Net()
    eager = _grads(net, x)
    fw.jit.to_static(net, input_spec=[InputSpec([None, 3])])
    static = _grads(net, x)
    np.testing.assert_allclose(static[0], eager[0], rtol=1e-5)
    np.testing.assert_allclose(static[1], eager[1], rtol=1e-4, atol=1e-6)
    for a, b in zip(static[2], eager[2]):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
    # the backward program holds the gradient cond
    bprog = net.forward.programs[0].backward.program
    assert [op.name for op in bprog.block.ops].count("cf.cond") == 1
    ir.verify(bprog)
    # d loss / d x by central differences in float64 numpy (the branch is fixed by x's sign)
    wa, ba, wb, bb = (
        p.numpy().astype(np.float64) for p in (net.a.weight, net.a.bias, net.b.weight, net.b.bias)
    )

    def loss(xv):
        h = xv @ wa + ba
        y = np.tanh(h) * (xv @ wb + bb) if xv.sum() > 0 else h * h
        return float((y * y).sum())

    np.testing.assert_allclose(static[1], _finite_difference(loss, x), rtol=2e-3, atol=2e-3)


def test_an_optimizer_step_through_cond_under_to_static_matches_eager():
    x = np.array([[0.5, 1.0, -0.25]], np.float32)
    nets = []
    for static in (False, True):
        fw.seed(1)
        net = _Net()
        if static:
            fw.jit.to_static(net, input_spec=[InputSpec([None, 3])])
        opt = fw.optimizer.SGD(0.1, parameters=net.parameters())
        for _ in range(3):
            loss = net(_t(x))
            loss.backward()
            opt.step()
            opt.clear_grad()
        nets.append([p.numpy() for p in net.parameters()])
    for a, b in zip(*nets):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


class _Recurrent(fw.nn.Layer):
    def __init__(self) -> None:
        super().__init__()
        self.lin = fw.nn.Linear(3, 3)

    def forward(self, x: fw.Tensor, n: fw.Tensor) -> fw.Tensor:
        i = fw.zeros([], dtype="int64")
        _, y = while_loop(lambda i, y: i < n, lambda i, y: [i + 1, fw.tanh(self.lin(y)) + x], [i, x * 0.5])
        return (y * y).sum()


def test_training_through_while_loop_equals_eager_and_finite_differences():
    x = np.array([[0.3, -0.2, 0.5], [0.1, 0.4, -0.6]], np.float32)
    fw.seed(3)
    net = _Recurrent()

    def grads(n: int) -> tuple[float, np.ndarray, list[np.ndarray]]:
        for p in net.parameters():
            p.grad = None
        t = _t(x)
        t.stop_gradient = False
        loss = net(t, _t(n, np.int64))
        loss.backward()
        gp = [np.zeros(p.shape, np.float32) if p.grad is None else p.grad.numpy() for p in net.parameters()]
        return float(loss.numpy()), t.grad.numpy(), gp

    trips = (0, 1, 3)
    eager = [grads(n) for n in trips]
    fw.jit.to_static(net, input_spec=[InputSpec([None, 3]), InputSpec([], "int64")])
    static = [grads(n) for n in trips]
    assert len(net.forward.programs) == 1  # one training program for every trip count
    for e, s in zip(eager, static):
        np.testing.assert_allclose(s[0], e[0], rtol=1e-5)
        np.testing.assert_allclose(s[1], e[1], rtol=1e-4, atol=1e-6)
        for a, b in zip(s[2], e[2]):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
    w, b = (p.numpy().astype(np.float64) for p in (net.lin.weight, net.lin.bias))

    def loss(xv: np.ndarray) -> float:
        y = xv * 0.5
        for _ in range(3):
            y = np.tanh(y @ w + b) + xv
        return float((y * y).sum())

    np.testing.assert_allclose(static[2][1], _finite_difference(loss, x), rtol=2e-3, atol=2e-3)


# -- random draws ------------------------------------------------------------------------------------
def _noisy(x: fw.Tensor) -> fw.Tensor:
    return fw.nn.functional.dropout(x, 0.5, training=True) + fw.rand([4]) + fw.rand([4])


def test_random_draws_in_a_program_equal_eager_call_after_call():
    sf = fw.jit.to_static(_noisy, input_spec=[InputSpec([None, 4])])
    x = fw.ones([3, 4])
    with fw.no_grad():
        fw.seed(11)
        eager = [_noisy(x).numpy() for _ in range(3)] + [fw.rand([5]).numpy()]
        fw.seed(11)
        static = [sf(x).numpy() for _ in range(3)] + [fw.rand([5]).numpy()]
    for e, s in zip(eager, static):
        np.testing.assert_array_equal(s, e)  # bitwise: the same Philox counters, in the same order
    assert not np.array_equal(static[0], static[1])  # each call draws afresh
    p = sf.programs[0].program
    draws = [op for op in p.walk() if op.name == "op.philox_uniform"]
    assert len(draws) == 3 and all(op.attrs["seed"] is None for op in draws)  # two equal rand([4]) kept apart


def test_cse_never_merges_two_draws_and_dce_keeps_an_unread_one():
    text = f"""module @r(%0: {T}) -> ({T}) {{
  %1 = op.philox_uniform {{dtype = float32, offset = none, seed = none, shape = (3,)}} : {T}
  %2 = op.philox_uniform {{dtype = float32, offset = none, seed = none, shape = (3,)}} : {T}
  %3 = op.philox_uniform {{dtype = float32, offset = none, seed = none, shape = (3,)}} : {T}
  %4 = op.sub(%1, %2) : {T}
  builtin.return(%4)
}}
"""
    p = ir.parse_program(text)
    ir.optimize(p, "O2")
    assert [op.name for op in p.walk()].count("op.philox_uniform") == 3
    fw.seed(4)
    got = ir.Executor(p, "cpu")(fw.zeros([3]))[0].numpy()
    after = fw.rand([3]).numpy()
    fw.seed(4)
    a, b, _ = fw.rand([3]).numpy(), fw.rand([3]).numpy(), fw.rand([3]).numpy()
    np.testing.assert_array_equal(got, a - b)
    np.testing.assert_array_equal(after, fw.rand([3]).numpy())  # the unread draw advanced the generator


def test_a_draw_inside_a_trained_cond_branch_is_refused_clearly():
    x = fw.ones([2, 4])
    x.stop_gradient = False

    def f(x):
        y = cond(x.sum() > 0.0, lambda: fw.nn.functional.dropout(x * 2.0, 0.5), lambda: x * 3.0)
        return y.sum()

    with pytest.raises(fw.jit.TracingError, match=r"whose body\) draws random numbers"):
        fw.jit.to_static(f)(x)
    with fw.no_grad():  # inference through the same cond draws as eager
        fw.seed(9)
        want = f(x).numpy()
        fw.seed(9)
        np.testing.assert_array_equal(fw.jit.to_static(f)(x).numpy(), want)


# -- save / load -------------------------------------------------------------------------------------
class _Gate(fw.nn.Layer):
    def __init__(self) -> None:
        super().__init__()
        self.lin = fw.nn.Linear(4, 4)

    def forward(self, x: fw.Tensor) -> fw.Tensor:
        h = self.lin(x)
        y = cond(h.sum() > 0.0, lambda: fw.nn.functional.relu(h), lambda: h * 0.5)
        _, z = while_loop(lambda i, z: i < 3, lambda i, z: [i + 1, z + y], [fw.zeros([], dtype="int64"), y])
        return z


def test_save_and_load_a_program_with_cf_ops(tmp_path):
    fw.seed(2)
    net = _Gate()
    path = str(tmp_path / "gate")
    fw.jit.save(net, path, input_spec=[InputSpec([None, 4], name="x")])
    text = open(path + ".oarlock").read()
    assert "cf.cond" in text and "cf.while" in text
    loaded = fw.jit.load(path)
    rng = np.random.default_rng(0)
    for rows in (1, 5):
        for sign in (1.0, -1.0):
            x = _t(sign * np.abs(rng.standard_normal((rows, 4))).astype(np.float32))
            with fw.no_grad():
                want = net(x).numpy()
                np.testing.assert_allclose(loaded(x).numpy(), want, rtol=1e-5, atol=1e-6)
    config = fw.inference.Config(path)
    predictor = fw.inference.create_predictor(config)
    x = np.abs(rng.standard_normal((2, 4))).astype(np.float32)
    (res,) = predictor.run([x])
    with fw.no_grad():
        np.testing.assert_allclose(res.numpy(), net(_t(x)).numpy(), rtol=1e-5, atol=1e-6)


def test_cond_while_and_draws_in_a_program_equal_eager_on_every_device(device):
    def f(x):
        h = fw.nn.functional.dropout(x, 0.25, training=True)
        h = cond(h.sum() > 0.0, lambda: fw.exp(h), lambda: h * 2.0)
        _, h = while_loop(
            lambda i, h: i < 3, lambda i, h: [i + 1, h * 0.5 + x], [fw.zeros([], "int64", device=device), h]
        )
        return h

    sf = fw.jit.to_static(f, input_spec=[InputSpec([None, 8])])
    rng = np.random.default_rng(5)
    for sign in (1.0, -1.0):
        x = fw.to_tensor(sign * np.abs(rng.standard_normal((4, 8))).astype(np.float32), device=device)
        with fw.no_grad():
            fw.seed(21)
            want = f(x).numpy()
            fw.seed(21)
            got = sf(x).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


class _Nested(fw.nn.Layer):
    """A cond inside a loop body, and a loop inside a cond branch."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = fw.nn.Linear(3, 3)

    def forward(self, x: fw.Tensor, n: fw.Tensor) -> fw.Tensor:
        def body(i, y):
            z = self.lin(y)
            z = cond(z.sum() > 0.0, lambda: fw.tanh(z), lambda: z * 0.5 + x)
            return [i + 1, z]

        _, y = while_loop(lambda i, y: i < n, body, [fw.zeros([], dtype="int64"), x])
        w = self.lin.weight[0]
        inner = lambda: while_loop(
            lambda j, v: j < 2, lambda j, v: [j + 1, v * w], [fw.zeros([], "int64"), y]
        )[1]  # noqa: E731
        y = cond(y.mean() > 0.0, inner, lambda: y * 3.0)
        return (y * y).sum()


def test_training_through_nested_cond_and_while_equals_eager():
    fw.seed(0)
    net = _Nested()
    rng = np.random.default_rng(1)
    xs = [rng.standard_normal((2, 3)).astype(np.float32) for _ in range(3)]

    def grads(x: np.ndarray, n: int) -> list[np.ndarray]:
        for p in net.parameters():
            p.grad = None
        t = _t(x)
        t.stop_gradient = False
        loss = net(t, _t(n, np.int64))
        loss.backward()
        return [loss.numpy(), t.grad.numpy()] + [
            np.zeros(p.shape, np.float32) if p.grad is None else p.grad.numpy() for p in net.parameters()
        ]

    runs = [(x, n) for x in xs for n in (0, 2)]
    eager = [grads(x, n) for x, n in runs]
    fw.jit.to_static(net)
    for (x, n), want in zip(runs, eager):
        for a, b in zip(grads(x, n), want):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_case_and_switch_case_pick_like_python_eagerly_and_in_a_program():
    from framework.static.nn import case, switch_case

    def f(x):
        return case([(x.sum() > 5.0, lambda: x * 10.0), (x.sum() > 2.0, lambda: x * 2.0)], lambda: x - 1.0)

    def g(i, x):
        return switch_case(i, {1: lambda: x + 1.0, 3: lambda: x * 3.0}, lambda: x * 0.0)

    sf, sg = fw.jit.to_static(f), fw.jit.to_static(g)
    base = np.array([1.0, 2.0], np.float32)
    with fw.no_grad():
        for v in (0.5, 1.0, 5.0):
            s = float((base * v).sum())
            want = base * v * 10.0 if s > 5 else base * v * 2.0 if s > 2 else base * v - 1.0
            for fn in (f, sf):
                np.testing.assert_allclose(fn(_t(base * v)).numpy(), want, rtol=1e-6)
        for i, want in ((0, base * 0.0), (1, base + 1.0), (3, base * 3.0)):
            for fn in (g, sg):
                np.testing.assert_allclose(fn(_t(i, np.int64), _t(base)).numpy(), want, rtol=1e-6)
    assert [op.name for op in sg.programs[0].program.walk()].count("cf.cond") == 2
    assert switch_case(_t(7, np.int64), [lambda: 1, lambda: 2]) == 2  # no default: the largest index's
    with pytest.raises(OpArgumentError, match=r"\[switch_case\] branch_index must be an int tensor"):
        switch_case(_t(1.0, np.float32), [lambda: 1])


def test_a_cond_on_a_constant_predicate_is_inlined_by_canonicalize():
    def f(x):
        flag = fw.ones([]) > 0.5  # folds to a constant
        h = x * 2.0
        return cond(flag, lambda: fw.exp(h) + x, lambda: h - x)

    sf = fw.jit.to_static(f, input_spec=[InputSpec([None, 2])])
    x = _t([[0.5, -1.0], [2.0, 0.0]], np.float32)
    with fw.no_grad():
        np.testing.assert_allclose(sf(x).numpy(), np.exp(2.0 * x.numpy()) + x.numpy(), rtol=1e-6)
    names = [op.name for op in sf.programs[0].program.walk()]
    assert "cf.cond" not in names and "op.exp" in names and "op.sub" not in names


def test_a_detached_capture_takes_no_gradient_as_in_eager():
    def f(x):
        h = x * 2.0
        hd = h.detach()  # before the cond: one branch reads it detached, the other not
        a = cond(x.sum() > 0, lambda: hd * x, lambda: h * x).sum()
        b = cond(x.sum() < 0, lambda: hd * x, lambda: h * x).sum()
        c = cond(x.sum() > 0, lambda: h.detach() * h, lambda: h * h).sum()  # inside a branch
        _, y = while_loop(lambda i, y: i < 2, lambda i, y: [i + 1, y * hd], [fw.zeros([], dtype="int64"), x])
        # views made inside a branch keep the gradient (same shape or not)
        d = cond(
            x.sum() > 0, lambda: (h.reshape([3]) * x).sum() + (h.reshape([1, 3]) * 3.0).sum(), lambda: x.sum()
        )
        return a + b + c + y.sum() + d

    grads = []
    for static in (False, True):
        x = _t([0.5, 1.0, 2.0], np.float32)
        x.stop_gradient = False
        (fw.jit.to_static(f) if static else f)(x).backward()
        grads.append(x.grad.numpy())
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-6)
    xv = np.array([0.5, 1.0, 2.0])
    np.testing.assert_allclose(
        grads[0], 2 * xv + 4 * xv + (2 * xv) * 2 + (2 * xv) ** 2 + 4 * xv + 6, rtol=1e-6
    )
