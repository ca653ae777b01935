"""fw.nn: Layer registration, state dicts, modes, hooks, devices, initialisers and layers
against numpy references."""

from __future__ import annotations

import math

import numpy as np
import pytest

import framework as fw
import framework.nn as nn
import framework.nn.functional as F


class Block(nn.Layer):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 3)
        self.norm = nn.LayerNorm(3)
        self.drop = nn.Dropout(0.5)
        self.register_buffer("count", fw.zeros([1]))
        self.register_buffer("scratch", fw.zeros([2]), persistable=False)

    def forward(self, x):
        return self.drop(self.norm(self.fc(x)))


def test_layer_registers_parameters_sublayers_and_buffers():
    b = Block()
    assert [n for n, _ in b.named_parameters()] == ["fc.weight", "fc.bias", "norm.weight", "norm.bias"]
    assert all(isinstance(p, nn.Parameter) and not p.stop_gradient for p in b.parameters())
    assert [n for n, _ in b.named_sublayers()] == ["fc", "norm", "drop"]
    assert sorted(n for n, _ in b.named_buffers()) == ["count", "scratch"]
    assert list(b.state_dict()) == ["fc.weight", "fc.bias", "norm.weight", "norm.bias", "count"]
    assert b.fc.weight.shape == (4, 3)


def test_set_state_dict_copies_values_and_reports_keys():
    a, b = Block(), Block()
    sd = a.state_dict()
    with pytest.warns(
        UserWarning,
        match=r"\[set_state_dict\] loaded 5 of 5 entries; .*unexpected keys \(ignored\): \['extra'\]",
    ):
        missing, unexpected = b.set_state_dict({**sd, "extra": fw.ones([1])})
    assert missing == [] and unexpected == ["extra"]
    for k, v in b.state_dict().items():
        np.testing.assert_array_equal(v.numpy(), sd[k].numpy())
    with pytest.raises(fw.OpArgumentError, match="fc.weight"):
        b.set_state_dict({"fc.weight": fw.ones([2, 2])})


def test_set_state_dict_key_mismatches_are_never_silent():
    a, b = Block(), Block()
    with fw.no_grad():
        a.norm.bias.set_value(fw.full(a.norm.bias.shape, 5.0))
    sd = a.state_dict()
    before = {k: v.numpy().copy() for k, v in b.state_dict().items()}
    # a PyTorch-style wrapper: nothing matches -> an error that says where the weights are
    with pytest.raises(
        fw.OpArgumentError, match=r"\[set_state_dict\] none of the state dict's 2 keys .*sd\['model'\]"
    ):
        b.set_state_dict({"model": sd, "step": 3})
    # some keys missing: warn naming them, load the rest, return them
    part = {k: v for k, v in sd.items() if k != "norm.bias"}
    with pytest.warns(
        UserWarning, match=r"loaded 4 of 5 entries; missing keys \(left as they were\): \['norm.bias'\]"
    ):
        missing, unexpected = b.set_state_dict(part)
    assert (missing, unexpected) == (["norm.bias"], [])
    np.testing.assert_array_equal(b.fc.weight.numpy(), a.fc.weight.numpy())
    np.testing.assert_array_equal(b.norm.bias.numpy(), before["norm.bias"])
    assert not np.array_equal(before["norm.bias"], sd["norm.bias"].numpy())
    # strict: any mismatch raises and copies nothing
    c = Block()
    c_before = {k: v.numpy().copy() for k, v in c.state_dict().items()}
    with pytest.raises(
        fw.OpArgumentError, match=r"strict=True and the keys differ: missing \['norm.bias'\], unexpected \[\]"
    ):
        c.set_state_dict(part, strict=True)
    with pytest.raises(fw.OpArgumentError, match=r"unexpected \['extra'\]"):
        c.set_state_dict({**sd, "extra": fw.ones([1])}, strict=True)
    for k, v in c.state_dict().items():
        np.testing.assert_array_equal(v.numpy(), c_before[k])
    assert c.set_state_dict(sd, strict=True) == ([], [])
    # a shape mismatch anywhere copies nothing, even the keys before it
    d = Block()
    d_before = {k: v.numpy().copy() for k, v in d.state_dict().items()}
    with pytest.raises(fw.OpArgumentError, match=r"'norm.weight' has shape \(1,\)"):
        d.set_state_dict({**sd, "norm.weight": fw.ones([1])})
    for k, v in d.state_dict().items():
        np.testing.assert_array_equal(v.numpy(), d_before[k])


def _block_reference(b: Block, x: np.ndarray) -> np.ndarray:
    """norm(fc(x)) in numpy from the block's own parameters (dropout left out)."""
    h = x @ b.fc.weight.numpy() + b.fc.bias.numpy()
    mu, var = h.mean(-1, keepdims=True), h.var(-1, keepdims=True)
    return (h - mu) / np.sqrt(var + 1e-5) * b.norm.weight.numpy() + b.norm.bias.numpy()


def test_train_eval_switch_dropout():
    fw.seed(0)
    b = Block()
    x = np.random.default_rng(0).standard_normal((256, 4)).astype(np.float32)
    ref = _block_reference(b, x)
    b.eval()
    assert not b.drop.training
    np.testing.assert_allclose(
        b(fw.to_tensor(x)).numpy(), ref, rtol=1e-5, atol=1e-5
    )  # dropout is the identity
    b.train()
    assert b.drop.training
    y = b(fw.to_tensor(x)).numpy()
    dropped = y == 0
    assert 0.4 < dropped.mean() < 0.6, dropped.mean()  # p = 0.5 of 768 elements, Philox seed 0
    np.testing.assert_allclose(
        y[~dropped], 2.0 * ref[~dropped], rtol=1e-5, atol=1e-5
    )  # kept ones scaled by 1/(1-p)


def test_forward_hooks_replace_inputs_and_outputs():
    lin = nn.Linear(2, 2)
    h1 = lin.register_forward_pre_hook(lambda layer, inputs: (inputs[0] * 0.0,))
    h2 = lin.register_forward_post_hook(lambda layer, inputs, out: out + 1.0)
    out = lin(fw.ones([1, 2]))
    np.testing.assert_allclose(out.numpy(), lin.bias.numpy()[None] + 1.0)
    h1.remove()
    h2.remove()
    np.testing.assert_allclose(
        lin(fw.ones([1, 2])).numpy(), (np.ones((1, 2)) @ lin.weight.numpy()) + lin.bias.numpy(), rtol=1e-6
    )


def test_to_moves_parameters_in_place_and_casts():
    fw.register_plugin("tests.plugins_for_tests.primonly", name="primonly")
    lin = nn.Linear(3, 2)
    lin.register_buffer("steps", fw.to_tensor([4.0]))
    w, bias = lin.weight, lin.bias
    w_val, b_val = w.numpy().copy(), bias.numpy().copy()
    x = np.array([[1.0, -2.0, 0.5]])
    lin.to(dtype="float64")
    assert lin.weight is w and w.dtype == np.float64 and bias.dtype == np.float64
    np.testing.assert_array_equal(w.numpy(), w_val.astype(np.float64))
    lin.to("primonly:0")  # another device: the same Parameter objects now live there
    assert lin.weight is w and lin.bias is bias
    assert all(str(t.device) == "primonly:0" for t in lin.parameters() + lin.buffers())
    np.testing.assert_array_equal(w.numpy(), w_val.astype(np.float64))
    np.testing.assert_array_equal(lin.steps.numpy(), [4.0])
    y = lin(fw.to_tensor(x, dtype="float64", device="primonly:0"))
    assert str(y.device) == "primonly:0" and y.dtype == np.float64
    np.testing.assert_allclose(y.numpy(), x @ w_val.astype(np.float64) + b_val, rtol=1e-12)
    y.sum().backward()  # gradients arrive on the new device, in the new dtype
    assert str(w.grad.device) == "primonly:0" and w.grad.dtype == np.float64
    np.testing.assert_allclose(w.grad.numpy(), np.repeat(x.T, 2, axis=1), rtol=1e-12)
    lin.to("cpu", dtype="float32")
    assert lin.weight is w and str(w.device) == "cpu:0" and w.dtype == np.float32
    np.testing.assert_array_equal(w.numpy(), w_val)


def test_initializers_follow_their_formulas_and_philox():
    fw.seed(11)
    a = nn.initializer.XavierUniform()((200, 100)).numpy()
    bound = math.sqrt(6 / 300)
    assert np.abs(a).max() <= bound and np.abs(a).max() > 0.95 * bound
    fw.seed(11)
    u = fw.rand([200, 100]).numpy()
    np.testing.assert_allclose(a, u * 2 * bound - bound, rtol=1e-5, atol=1e-7)
    k = nn.initializer.KaimingNormal()((64, 32, 3, 3)).numpy()
    assert abs(k.std() - math.sqrt(2 / (32 * 9))) < 0.02 * math.sqrt(2 / (32 * 9)) * 5
    n = nn.initializer.Normal(1.0, 0.5)((20000,)).numpy()
    assert abs(n.mean() - 1.0) < 0.02 and abs(n.std() - 0.5) < 0.02
    c = nn.initializer.Constant(3.0)((2, 2)).numpy()
    assert (c == 3.0).all()
    un = nn.initializer.Uniform(-2, -1)((1000,)).numpy()
    assert un.min() >= -2 and un.max() < -1
    assert nn.initializer.compute_fans((8, 4, 3, 3)) == (36, 72)


def test_same_seed_same_weights():
    fw.seed(5)
    a = nn.Linear(8, 8).weight.numpy()
    fw.seed(5)
    b = nn.Linear(8, 8).weight.numpy()
    np.testing.assert_array_equal(a, b)


def test_layers_match_functional_references():
    fw.seed(0)
    x = fw.randn([2, 3, 8, 8])
    conv = nn.Conv2D(3, 4, 3, stride=2, padding=1)
    ref = F.conv2d(x, conv.weight, conv.bias, 2, 1)
    np.testing.assert_allclose(conv(x).numpy(), ref.numpy())
    assert conv(x).shape == (2, 4, 4, 4)
    np.testing.assert_allclose(nn.MaxPool2D(2)(x).numpy(), x.numpy().reshape(2, 3, 4, 2, 4, 2).max((3, 5)))
    np.testing.assert_allclose(
        nn.AvgPool2D(2)(x).numpy(), x.numpy().reshape(2, 3, 4, 2, 4, 2).mean((3, 5)), rtol=1e-5, atol=1e-6
    )
    emb = nn.Embedding(10, 4)
    ids = fw.to_tensor([[1, 9]])
    np.testing.assert_array_equal(emb(ids).numpy(), emb.weight.numpy()[[[1, 9]]])
    rms = nn.RMSNorm(8)
    h = x.numpy()
    np.testing.assert_allclose(
        rms(x).numpy(), h / np.sqrt((h * h).mean(-1, keepdims=True) + 1e-6), rtol=1e-5, atol=1e-6
    )
    seq = nn.Sequential(nn.Flatten(), nn.Linear(192, 5), nn.GELU(), nn.Linear(5, 2), nn.SiLU(), nn.ReLU())
    assert seq(x).shape == (2, 2) and len(seq) == 6 and isinstance(seq[1], nn.Linear)
    ll = nn.LayerList([nn.Linear(2, 2) for _ in range(3)])
    assert len(ll.parameters()) == 6 and len(list(ll)) == 3


def test_multi_head_attention_matches_numpy():
    fw.seed(1)
    mha = nn.MultiHeadAttention(8, 2)
    x = fw.randn([2, 5, 8])
    xn = x.numpy()

    def proj(layer, a):
        return a @ layer.weight.numpy() + layer.bias.numpy()

    def heads(a):
        return a.reshape(2, 5, 2, 4).transpose(0, 2, 1, 3)

    q, k, v = heads(proj(mha.q_proj, xn)), heads(proj(mha.k_proj, xn)), heads(proj(mha.v_proj, xn))
    s = q @ k.transpose(0, 1, 3, 2) / 2.0
    s = np.where(np.tril(np.ones((5, 5), bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    o = (p @ v).transpose(0, 2, 1, 3).reshape(2, 5, 8)
    np.testing.assert_allclose(mha(x, is_causal=True).numpy(), proj(mha.out_proj, o), rtol=1e-4, atol=1e-5)


def test_layer_gradients_flow_to_parameters():
    fw.seed(2)
    net = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))
    x = fw.randn([5, 3])
    loss = F.mse_loss(net(x), fw.zeros([5, 1]))
    loss.backward()
    assert all(p.grad is not None and p.grad.shape == p.shape for p in net.parameters())
    net.clear_gradients()
    assert all(p.grad is None for p in net.parameters())


def test_layer_errors_are_clear():
    class Bad(nn.Layer):
        def __init__(self):
            self.fc = nn.Linear(1, 1)

    with pytest.raises(fw.OpArgumentError, match="super"):
        Bad()
    with pytest.raises(fw.OpArgumentError, match="in_features"):
        nn.Linear(3, 2)(fw.ones([1, 4]))


def test_deepcopy_gives_an_independent_layer_with_its_own_storage():
    import copy

    fw.seed(3)
    lin = nn.Linear(3, 2)
    x = fw.randn([4, 3])
    lin(x).sum().backward()  # the original has a graph and gradients
    twin = copy.deepcopy(lin)
    assert type(twin.weight) is type(lin.weight) and not twin.weight.stop_gradient
    np.testing.assert_array_equal(twin.weight.numpy(), lin.weight.numpy())
    assert twin.weight.grad is None
    with fw.no_grad():
        twin.weight.set_value(np.zeros((3, 2), np.float32))
    assert np.abs(lin.weight.numpy()).sum() > 0  # the original keeps its values
    np.testing.assert_array_equal(twin(x).numpy(), np.broadcast_to(twin.bias.numpy(), (4, 2)))
