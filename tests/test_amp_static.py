"""AMP under ``fw.jit.to_static`` (issue 38): a program's fusion groups read and write
bfloat16, so an AMP program keeps the low dtype only between its products and its
fused kernels (the casts inside the groups); a cast in a group rounds exactly as eager's
(ml_dtypes, numpy), arithmetic on the low dtype is computed wider and rounded once when
stored; a whole AMP training step traced (O1, and O2 with ``decorate``'s master weights)
follows the eager AMP step and the float32 gradients within bfloat16's tolerance."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import framework as fw
import framework.nn.functional as F
from framework.ir import print_program

BF16 = np.dtype(ml_dtypes.bfloat16)


def _lowered(sf) -> str:
    """The programs ``sf`` runs, after the passes (fused groups named ``kernel.fused...``)."""
    return "\n".join(print_program(cp.executor.lowered) for cp in sf.programs)


def _awkward_floats(rng: np.random.Generator, n: int) -> np.ndarray:
    """float32 values every rounding path meets: each high half-word with random low bits,
    exact ties (low half 0x8000) of even and odd halves, low-dtype subnormals, huge, inf,
    NaN, signed zeros."""
    hi = rng.integers(0, 1 << 16, n, dtype=np.uint32) << 16
    lo = rng.integers(0, 1 << 16, n, dtype=np.uint32)
    lo[::4] = 0x8000  # ties
    lo[1::8] = 0x7FFF
    lo[2::8] = 0x8001
    bits = hi | lo
    x = bits.view(np.float32).copy()
    x[:8] = [0.0, -0.0, np.inf, -np.inf, np.nan, 3.3895314e38, -1e-40, 65520.0]
    return x


@pytest.mark.parametrize("low", ["bfloat16", "float16"])
def test_a_cast_inside_a_fused_group_rounds_like_eager(low, dev):
    x = _awkward_floats(np.random.default_rng(0), 256 * 1024).reshape(256, 1024)
    y = np.zeros_like(x)

    @fw.jit.to_static
    def f(a, b):
        return (a + b).astype(low), a - b

    got, _ = f(fw.to_tensor(x, device=dev), fw.to_tensor(y, device=dev))
    text = _lowered(f)
    # bfloat16 joins the group; float16 stays out (computed wide, a group would not overflow
    # where eager's float16 ops do: loop_ir.HALVES)
    if low == "bfloat16":
        assert "kernel.fused" in text and "kernel.cast" not in text, text
    else:
        assert "kernel.cast" in text, text
    want = (x + y).astype(BF16 if low == "bfloat16" else np.float16)
    g, w = got.numpy(), want
    nan = np.isnan(w.astype(np.float32))
    np.testing.assert_array_equal(np.isnan(g.astype(np.float32)), nan)
    np.testing.assert_array_equal(g.view(np.uint16)[~nan], w.view(np.uint16)[~nan])
    assert str(got.dtype) == low


def test_a_cast_from_float64_inside_a_group_rounds_once():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((128, 256)) * np.exp2(rng.integers(-140, 130, (128, 256)))
    # just above and below bf16 ties: rounding through float32 first would make them ties
    x[:, :8] = 1.0 + 2.0**-8 + np.array([2.0**-30, -(2.0**-30), 2.0**-40, 0, 2.0**-9, 0, 0, 0])
    x[:, 5:8] = [2.0**-133 * 1.5 + 2.0**-160, 3.3961e38, -0.0]

    @fw.jit.to_static
    def f(a, b):
        return (a * b).astype("bfloat16"), a - b

    got, _ = f(fw.to_tensor(x), fw.to_tensor(np.ones_like(x)))
    assert "kernel.cast" not in _lowered(f)
    np.testing.assert_array_equal(got.numpy().view(np.uint16), x.astype(BF16).view(np.uint16))


def test_bf16_arithmetic_in_a_group_is_computed_wide_and_rounded_once():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((64, 128)).astype(BF16)
    b = rng.standard_normal((64, 128)).astype(BF16)

    @fw.jit.to_static
    def f(p, q):
        return (p * q + p).astype("float32") * 2.0, p * q - q

    wide, low = f(fw.to_tensor(a), fw.to_tensor(b))
    text = _lowered(f)
    assert "kernel.fused" in text and "kernel.mul" not in text, text
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    # the bf16 products are exact in double: the float32 output is one rounding of the exact value
    np.testing.assert_array_equal(wide.numpy(), (a64 * b64 + a64).astype(np.float32) * np.float32(2.0))
    # a bf16 output: one rounding of the exact value (ml_dtypes rounds float64 through float32,
    # which is exact here: a product of two bf16 values minus one fits float32's 24 bits)
    np.testing.assert_array_equal(
        low.numpy().view(np.uint16), (a64 * b64 - b64).astype(np.float32).astype(BF16).view(np.uint16)
    )
    # eager rounds after each op (the product, then the sum): within those two roundings
    eager = ((fw.to_tensor(a) * fw.to_tensor(b) + fw.to_tensor(a)).astype("float32") * 2.0).numpy()
    bound = 2.0 * 2.0**-8 * (2 * np.abs(a64 * b64) + np.abs(a64))
    assert np.all(np.abs(eager - wide.numpy()) <= bound)
    assert np.any(eager != wide.numpy())  # and it is not the group's one rounding


class _Net(fw.nn.Layer):
    def __init__(self) -> None:
        super().__init__()
        self.up = fw.nn.Linear(32, 96)
        self.norm = fw.nn.RMSNorm(96)
        self.down = fw.nn.Linear(96, 10)

    def forward(self, x: fw.Tensor) -> fw.Tensor:
        return self.down(self.norm(F.silu(self.up(x)) * 1.5 + 0.25))


def _setup(level: str):
    fw.seed(3)
    net = _Net()
    # SGD: the parameters' change is the gradients' (Adam's normalised step flips with the
    # sign of a tiny gradient, which bf16 rounding may flip)
    opt = fw.optimizer.SGD(0.5, parameters=net.parameters())
    if level == "O2":
        net, opt = fw.amp.decorate(net, opt, level="O2", dtype="bfloat16")
    return net, opt


def _step_fn(net, opt, level: str):
    def step(x, y):
        with fw.amp.auto_cast(
            enable=level != "fp32", level="O2" if level == "O2" else "O1", dtype="bfloat16"
        ):
            loss = F.cross_entropy(net(x), y)
        loss.backward()
        opt.step()
        opt.clear_grad()
        return loss

    return step


def _batch(k: int):
    rng = np.random.default_rng(10 + k)
    x = rng.standard_normal((256, 32)).astype(np.float32)
    return fw.to_tensor(x), fw.to_tensor(rng.integers(0, 10, 256))


def _params(net) -> list[np.ndarray]:
    return [p.numpy().astype(np.float32) for p in net.parameters()]


@pytest.mark.parametrize("level", ["O1", "O2"])
def test_a_traced_amp_training_step_follows_the_eager_amp_step(level):
    runs = {}
    for mode in ("eager", "static"):
        net, opt = _setup(level)
        start = [
            m.numpy().astype(np.float32)
            for m in (opt.master_weights() if level == "O2" else net.parameters())
        ]
        step = _step_fn(net, opt, level)
        if mode == "static":
            step = fw.jit.to_static(step)
        losses = [float(step(*_batch(k)).numpy()) for k in range(4)]
        masters = opt.master_weights() if level == "O2" else net.parameters()
        runs[mode] = (losses, _params(net), [m.numpy() for m in masters])
        if mode == "static":
            # bf16 values run through fused groups
            fused = [ln for ln in _lowered(step).splitlines() if "kernel.fused" in ln]
            assert any("bfloat16" in ln for ln in fused), fused
    (le, _, me), (ls, _, ms) = runs["eager"], runs["static"]
    np.testing.assert_allclose(ls, le, rtol=2e-2)
    assert le[-1] < le[0] and ls[-1] < ls[0]  # both train
    for a, b, p0 in zip(ms, me, start):  # the float32 master weights after 4 steps: the change
        d = np.abs(b - p0).max()
        assert d > 1e-3
        np.testing.assert_allclose(a - p0, b - p0, rtol=0, atol=0.05 * d)
    if level == "O2":  # the parameters stay bf16, the optimizer's state float32
        net, opt = _setup("O2")
        assert {str(p.dtype) for p in net.up.parameters()} == {"bfloat16"}
        assert {str(m.dtype) for m in opt.master_weights()} == {"float32"}


def _fwd_bwd(net, amp, x, y):
    with fw.amp.auto_cast(enable=amp, dtype="bfloat16"):
        loss = F.cross_entropy(net(x), y)
    loss.backward()
    return loss


def test_traced_amp_gradients_match_float32_within_bf16_tolerance():
    grads = {}
    for level in ("fp32", "O1"):
        net, _ = _setup("O1")
        x, y = _batch(0)
        fw.jit.to_static(_fwd_bwd)(net, level == "O1", x, y)
        grads[level] = [p.grad.numpy() for p in net.parameters()]
        assert all(str(p.grad.dtype) == "float32" for p in net.parameters())
    assert any(not np.array_equal(a, b) for a, b in zip(grads["fp32"], grads["O1"]))  # AMP ran
    for g32, g16 in zip(grads["fp32"], grads["O1"]):
        scale = np.abs(g32).max()
        np.testing.assert_allclose(g16, g32, rtol=0, atol=4e-2 * scale)


@pytest.mark.parametrize("first_inside", [True, False])
def test_a_program_is_per_auto_cast_policy(first_inside):
    """The same to_static function called inside and outside ``auto_cast`` runs the casts each
    call asks for, in either order, equal to eager (a program traced inside auto_cast once
    kept returning bfloat16 outside it, and the reverse)."""
    rng = np.random.default_rng(3)
    w = fw.to_tensor(rng.standard_normal((8, 8)).astype(np.float32))
    x = fw.to_tensor(rng.standard_normal((4, 8)).astype(np.float32))

    def f(x):
        return F.relu(fw.matmul(x, w))

    sf = fw.jit.to_static(f)
    order = [True, False] if first_inside else [False, True]
    for inside in order + order:
        with fw.amp.auto_cast(enable=inside, dtype="bfloat16"):
            want, got = f(x), sf(x)
        assert got.dtype == want.dtype == (fw.bfloat16 if inside else fw.float32)
        np.testing.assert_array_equal(got.astype("float32").numpy(), want.astype("float32").numpy())
    assert len(sf.programs) == 2
