"""Training under fw.jit.to_static: the backward program built from the OpDefs' gradient
rules, one autograd node per call, parameters shared with the eager Layer. Values and
gradients against eager mode (an independent path: the eager tape) and numpy."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import framework as fw
import framework.nn.functional as F
from framework.static import InputSpec

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


def _mlp(device: str) -> fw.nn.Layer:
    fw.manual_seed(0)
    return fw.nn.Sequential(fw.nn.Linear(32, 64), fw.nn.ReLU(), fw.nn.Linear(64, 4)).to(device)


def _grads(net: fw.nn.Layer) -> dict[str, np.ndarray]:
    return {n: p.grad.numpy() for n, p in net.named_parameters()}


def _data(device: str, n: int = 8) -> tuple[fw.Tensor, fw.Tensor]:
    rng = np.random.default_rng(3)
    return (
        fw.to_tensor(rng.standard_normal((n, 32)).astype(np.float32), device=device),
        fw.to_tensor(rng.integers(0, 4, n), device=device),
    )


def test_mlp_loss_and_gradients_equal_eager_and_numpy(device):
    eager, static = _mlp(device), _mlp(device)
    fw.jit.to_static(static, input_spec=[InputSpec([None, 32])])
    for n in (8, 3):  # one program for both batch sizes
        x, y = _data(device, n)
        for net in (eager, static):
            net.clear_gradients()
            F.cross_entropy(net(x), y).backward()
        ge, gs = _grads(eager), _grads(static)
        for k in ge:
            np.testing.assert_allclose(gs[k], ge[k], rtol=1e-5, atol=1e-6, err_msg=k)
    assert len(static.forward.programs) == 1
    # numpy reference for the last layer's bias gradient: mean over rows of softmax - onehot
    w0, b0, w1, b1 = (p.numpy().astype(np.float64) for p in static.parameters())
    logits = np.maximum(x.numpy() @ w0 + b0, 0) @ w1 + b1
    p = np.exp(logits - logits.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    p[np.arange(3), y.numpy()] -= 1
    np.testing.assert_allclose(static[2].bias.grad.numpy(), p.mean(0), rtol=1e-4, atol=1e-6)


def test_one_autograd_node_over_the_shared_parameters():
    net = fw.jit.to_static(_mlp("cpu"), input_spec=[InputSpec([None, 32])])
    x, _ = _data("cpu")
    out = net(x)
    node = out._node
    assert node.op.name == "to_static.forward"
    assert [id(t) for t in node.inputs] == [id(p) for p in net.parameters()]  # the Layer's own tensors
    cp = net.forward.programs[0]
    fwd, bwd = str(cp.program), str(cp.backward.program)
    assert "op.matmul_t" not in fwd and "op.matmul_t" in bwd  # the rules' ops live in the backward program
    assert fw.ir.print_program(fw.ir.parse_program(bwd)) == bwd
    fw.ir.verify(cp.backward.program)


def test_gradient_reaches_inputs_and_the_eager_graph_before_the_call():
    def f(a, b):
        return (fw.tanh(a) * b).sum(axis=1), a * 2.0

    rng = np.random.default_rng(0)
    an, bn = rng.standard_normal((3, 5)).astype(np.float32), rng.standard_normal((3, 5)).astype(np.float32)
    res = []
    for fn in (f, fw.jit.to_static(f)):
        leaf = fw.to_tensor(an)
        leaf.stop_gradient = False
        b = fw.to_tensor(bn)
        b.stop_gradient = False
        s, d = fn(leaf * 1.0, b)  # the input carries an eager graph back to `leaf`
        (s.sum() + (d * d).sum()).backward()
        res.append((leaf.grad.numpy(), b.grad.numpy()))
    np.testing.assert_allclose(res[1][0], res[0][0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(res[1][1], res[0][1], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(res[0][0], (1 - np.tanh(an) ** 2) * bn + 8 * an, rtol=1e-5, atol=1e-6)


def test_parameters_outside_a_layer_and_an_unused_output():
    fw.manual_seed(1)
    w = fw.nn.Linear(5, 4).weight

    def f(x):
        h = x @ w
        return h.sum(), h * 0.0 + 1.0

    x = fw.randn([2, 5])
    for fn in (f, fw.jit.to_static(f)):
        w.clear_gradient()
        loss, _unused = fn(x)
        loss.backward()
        if fn is f:
            ref = w.grad.numpy()
    np.testing.assert_allclose(w.grad.numpy(), ref, rtol=1e-6)
    np.testing.assert_allclose(ref, np.repeat(x.numpy().sum(0)[:, None], 4, 1), rtol=1e-5)


def test_freezing_a_parameter_retraces():
    net = fw.jit.to_static(_mlp("cpu"), input_spec=[InputSpec([None, 32])])
    x, y = _data("cpu")
    F.cross_entropy(net(x), y).backward()
    net[0].weight.stop_gradient = True
    net.clear_gradients()
    F.cross_entropy(net(x), y).backward()
    assert net[0].weight.grad is None and net[2].weight.grad is not None
    assert len(net.forward.programs) == 1 and len(net.forward.programs[0].backward.wanted) == 3


def test_no_grad_calls_run_the_forward_program_only():
    net = fw.jit.to_static(_mlp("cpu"), input_spec=[InputSpec([None, 32])])
    x, _ = _data("cpu")
    with fw.no_grad():
        out = net(x)
    assert out._node is None and net.forward.programs[0].backward is None


def test_double_backward_through_a_program_is_a_clear_error():
    f = fw.jit.to_static(lambda a: (a * a * a).sum())
    a = fw.to_tensor(np.ones(3, np.float32))
    a.stop_gradient = False
    with pytest.raises(fw.OarlockError, match="create_graph"):
        fw.grad(f(a), a, create_graph=True)


def test_tiny_llama_logits_and_gradients_equal_eager():
    from conformance.models import TinyLlama

    fw.manual_seed(0)
    eager = TinyLlama(20, dim=32, heads=2, layers=1, hidden=48, max_seq=16)
    static = TinyLlama(20, dim=32, heads=2, layers=1, hidden=48, max_seq=16)
    static.set_state_dict(eager.state_dict())
    fw.jit.to_static(static)
    ids = fw.to_tensor(np.random.default_rng(0).integers(0, 20, (2, 16)))
    outs = []
    for net in (eager, static):
        logits = net(ids)
        (logits * logits).mean().backward()
        outs.append(logits.numpy())
    np.testing.assert_allclose(outs[1], outs[0], rtol=1e-5, atol=1e-5)
    ge, gs = _grads(eager), _grads(static)
    assert set(ge) == set(gs)
    for k in ge:
        np.testing.assert_allclose(gs[k], ge[k], rtol=1e-4, atol=1e-6, err_msg=k)


def test_dropout_under_to_static_draws_the_eager_masks_and_backward_reuses_them():
    net = fw.nn.Sequential(fw.nn.Linear(32, 8), fw.nn.Dropout(0.5))
    x, _ = _data("cpu")
    fw.seed(5)
    eager = [net(x) for _ in range(2)]
    ge = [p for p in fw.grad(eager[1].sum(), list(net.parameters()))]
    fw.jit.to_static(net)
    fw.seed(5)
    static = [net(x) for _ in range(2)]  # each call draws afresh, as eager does
    gs = fw.grad(static[1].sum(), list(net.parameters()))
    for e, s in zip(eager, static):
        np.testing.assert_array_equal(s.numpy() == 0, e.numpy() == 0)
        np.testing.assert_allclose(s.numpy(), e.numpy(), rtol=1e-5, atol=1e-6)
    assert not np.array_equal(static[0].numpy() == 0, static[1].numpy() == 0)
    for a, b in zip(gs, ge):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-4, atol=1e-6)
    net.eval()
    with fw.no_grad():
        np.testing.assert_allclose(net(x).numpy(), net[0](x).numpy(), rtol=1e-6)


def test_an_input_returned_as_it_is_keeps_its_gradient():
    def f(a, b):
        return a, (a * b).sum()

    an = np.arange(4, dtype=np.float32)
    got = []
    for fn in (f, fw.jit.to_static(f)):
        a = fw.to_tensor(an)
        a.stop_gradient = False
        b = fw.to_tensor(an + 1)
        same, s = fn(a, b)
        ((same * same).sum() + s).backward()
        got.append(a.grad.numpy())
        assert a._node is None  # the call did not take over its input's graph
    np.testing.assert_allclose(got[1], got[0], rtol=1e-6)
    np.testing.assert_allclose(got[0], 2 * an + an + 1, rtol=1e-6)


def test_two_calls_before_one_backward_keep_their_own_activations():
    eager, static = _mlp("cpu"), _mlp("cpu")
    fw.jit.to_static(static, input_spec=[InputSpec([None, 32])])
    x1, y1 = _data("cpu", 8)
    x2, y2 = _data("cpu", 5)
    x2 = x2 * 3.0
    for net in (eager, static):
        (F.cross_entropy(net(x1), y1) + F.cross_entropy(net(x2), y2[:5])).backward()
    ge, gs = _grads(eager), _grads(static)
    for k in ge:
        np.testing.assert_allclose(gs[k], ge[k], rtol=1e-5, atol=1e-6, err_msg=k)
