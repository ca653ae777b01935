"""Paddle's namespaces (issue 40): nn.utils, nn.layer, tensor.*, checked against real Paddle."""

from __future__ import annotations

import numpy as np
import pytest

import framework as fw

paddle = pytest.importorskip(
    "paddle", reason="real Paddle is the oracle for these tests (pip install paddlepaddle)"
)


def _same_start(build, x, hook):
    """(ours, paddle's) outputs and input gradients of one layer with a hook applied, from the same weights."""
    paddle.seed(0)
    ref = hook(paddle, build(paddle.nn))
    ours = hook(fw, build(fw.nn))
    assert list(ours.state_dict()) == list(ref.state_dict())
    ours.set_state_dict({k: fw.to_tensor(v.numpy()) for k, v in ref.state_dict().items()})
    outs = []
    for lib, net in ((fw, ours), (paddle, ref)):
        t = lib.to_tensor(x, stop_gradient=False)
        y = net(t)
        (y * y).sum().backward()
        outs.append((y.numpy(), t.grad.numpy(), {n: p.grad.numpy() for n, p in net.named_parameters()}))
    return outs


@pytest.mark.parametrize("dim", [0, 1, None])
def test_weight_norm_matches_paddle(dim):
    x = np.random.default_rng(0).standard_normal((2, 3)).astype("float32")
    (y, gx, gp), (py, pgx, pgp) = _same_start(
        lambda nn: nn.Linear(3, 4), x, lambda lib, m: lib.nn.utils.weight_norm(m, dim=dim)
    )
    np.testing.assert_allclose(y, py, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(gx, pgx, rtol=1e-5, atol=1e-6)
    for n in pgp:
        np.testing.assert_allclose(gp[n], pgp[n], rtol=1e-4, atol=1e-5)


def test_weight_norm_conv_and_remove():
    x = np.random.default_rng(1).standard_normal((1, 2, 5, 5)).astype("float32")
    (y, gx, _), (py, pgx, _) = _same_start(
        lambda nn: nn.Conv2D(2, 3, 3), x, lambda lib, m: lib.nn.utils.weight_norm(m)
    )
    np.testing.assert_allclose(y, py, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(gx, pgx, rtol=1e-4, atol=1e-5)
    lin = fw.nn.utils.weight_norm(fw.nn.Linear(3, 2))
    before = lin(fw.ones([1, 3])).numpy()
    fw.nn.utils.remove_weight_norm(lin)
    assert sorted(lin.state_dict()) == ["bias", "weight"]
    np.testing.assert_allclose(lin(fw.ones([1, 3])).numpy(), before, rtol=1e-6)
    with pytest.raises(fw.OpArgumentError, match="weight_norm was not applied"):
        fw.nn.utils.remove_weight_norm(lin)


@pytest.mark.parametrize(
    "build", [lambda nn: nn.Linear(3, 4), lambda nn: nn.Conv2D(2, 3, 3)], ids=["linear", "conv"]
)
def test_spectral_norm_matches_paddle_from_the_same_vectors(build):
    shape = (2, 3) if build(fw.nn).weight.ndim == 2 else (1, 2, 5, 5)
    x = np.random.default_rng(2).standard_normal(shape).astype("float32")
    (y, gx, _), (py, pgx, _) = _same_start(
        build, x, lambda lib, m: lib.nn.utils.spectral_norm(m, n_power_iterations=2)
    )
    np.testing.assert_allclose(y, py, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(gx, pgx, rtol=1e-4, atol=1e-5)


def test_clip_grad_and_vectors_match_paddle():
    def run(lib, norm_type):
        a = lib.to_tensor([3.0, -4.0, 1.0], stop_gradient=False)
        b = lib.to_tensor([[0.5, 2.0]], stop_gradient=False)
        ((a * a).sum() + (b**3).sum()).backward()
        total = lib.nn.utils.clip_grad_norm_([a, b], max_norm=2.0, norm_type=norm_type)
        return float(total), a.grad.numpy(), b.grad.numpy()

    for nt in (2.0, 1.0, float("inf")):
        got, want = run(fw, nt), run(paddle, nt)
        assert got[0] == pytest.approx(want[0], rel=1e-6)
        np.testing.assert_allclose(got[1], want[1], rtol=1e-6)
        np.testing.assert_allclose(got[2], want[2], rtol=1e-6)
    w = fw.to_tensor([3.0, -0.5], stop_gradient=False)
    (w * w).sum().backward()
    fw.nn.utils.clip_grad_value_([w], 2.0)
    assert w.grad.tolist() == [2.0, -1.0]
    lin = fw.nn.Linear(2, 3)
    vec = fw.nn.utils.parameters_to_vector(lin.parameters())
    want = np.concatenate([lin.weight.numpy().ravel(), lin.bias.numpy()])
    np.testing.assert_array_equal(vec.numpy(), want)
    fw.nn.utils.vector_to_parameters(vec * 2, lin.parameters())
    np.testing.assert_array_equal(lin.bias.numpy(), want[6:] * 2)
    with pytest.raises(fw.OpArgumentError, match="vec must be 1-D with 9 elements"):
        fw.nn.utils.vector_to_parameters(vec[:4], lin.parameters())


def test_tensor_module_paths_give_the_same_functions():
    import framework.tensor.math as tm  # noqa: PLC0415  (the import statement is what is tested)

    assert fw.tensor([1.0, 2.0]).tolist() == [1.0, 2.0]  # still to_tensor when called
    assert tm.add is fw.add and fw.tensor.manipulation.reshape is fw.reshape
    assert fw.tensor.linalg.svd is fw.linalg.svd and fw.tensor.creation.zeros is fw.zeros
    for sub in (
        "math",
        "manipulation",
        "creation",
        "linalg",
        "logic",
        "search",
        "stat",
        "random",
        "attribute",
    ):
        ours = getattr(fw.tensor, sub)
        theirs = getattr(paddle.tensor, sub)
        names = dir(ours)
        assert names, sub
        for n in names:
            assert hasattr(theirs, n), f"paddle.tensor.{sub}.{n}"
    x = np.array([[1.0, -2.0], [3.0, 4.0]], "float32")
    np.testing.assert_allclose(
        fw.tensor.math.cumsum(fw.to_tensor(x), axis=1).numpy(),
        paddle.tensor.math.cumsum(paddle.to_tensor(x), axis=1).numpy(),
        rtol=1e-6,
    )
    with pytest.raises(AttributeError, match=r"paddle.tensor.math.no_such is not in Oarlock \(nor a name"):
        _ = fw.tensor.math.no_such


def test_nn_layer_and_loss_paths():
    assert fw.nn.layer.Linear is fw.nn.Linear and fw.nn.layer.common.Linear is fw.nn.Linear
    assert fw.nn.layer.layers.Layer is fw.nn.Layer and fw.nn.layer.loss.MSELoss is fw.nn.MSELoss
    assert fw.nn.loss.CrossEntropyLoss is fw.nn.CrossEntropyLoss
    with pytest.raises(AttributeError, match="has no attribute 'Nope'"):
        _ = fw.nn.layer.Nope


@pytest.mark.parametrize("n,d", [(1, 1.0), (4, 0.5), (7, 2.0), (10, 0.1)])
def test_fft_frequencies_match_paddle(n, d):
    np.testing.assert_allclose(fw.fft.fftfreq(n, d).numpy(), paddle.fft.fftfreq(n, d).numpy(), rtol=1e-6)
    np.testing.assert_allclose(fw.fft.rfftfreq(n, d).numpy(), paddle.fft.rfftfreq(n, d).numpy(), rtol=1e-6)


def test_fft_shifts_match_paddle(device):
    x = np.arange(35, dtype="float32").reshape(5, 7)
    for axes in (None,):
        t = fw.to_tensor(x, device=device)
        np.testing.assert_array_equal(
            fw.fft.fftshift(t, axes).numpy(), paddle.fft.fftshift(paddle.to_tensor(x), axes).numpy()
        )
        np.testing.assert_array_equal(
            fw.fft.ifftshift(t, axes).numpy(), paddle.fft.ifftshift(paddle.to_tensor(x), axes).numpy()
        )
    for axis in (0, 1, [1, 0]):  # Paddle 3.3 fails when axes are given: numpy is the reference
        t = fw.to_tensor(x, device=device)
        np.testing.assert_array_equal(fw.fft.fftshift(t, axis).numpy(), np.fft.fftshift(x, axis))
        np.testing.assert_array_equal(fw.fft.ifftshift(t, axis).numpy(), np.fft.ifftshift(x, axis))
    np.testing.assert_allclose(  # the transforms exist (complex results; tests/test_complex.py checks them)
        fw.fft.rfft(fw.to_tensor(x, device=device)).numpy(), np.fft.rfft(x), rtol=1e-5, atol=1e-5
    )
    with pytest.raises(fw.OpArgumentError, match=r"\[fftfreq\] n must be a positive int"):
        fw.fft.fftfreq(0)
