"""Paddle's model zoo (``paddle/vision/models/*.py`` read unchanged from the installed wheel,
tests/paddle_zoo.py) under ``to_static`` on the model: no graph break, the forward equals
eager mode's. Three families by default (on cpu); every model, on every device, with
``OARLOCK_NIGHTLY=1``. Skipped without Paddle."""

from __future__ import annotations

import importlib.util
import os

import numpy as np
import pytest

import framework as fw

from . import paddle_zoo

HAVE_PADDLE = importlib.util.find_spec("paddle") is not None
NIGHTLY = os.environ.get("OARLOCK_NIGHTLY") == "1"

#: name: (zoo module, constructor, kwargs, channels, image size)
MODELS = {
    "lenet": ("lenet", "LeNet", {"num_classes": 4}, 1, 28),
    "mobilenet_v3_small": ("mobilenetv3", "mobilenet_v3_small", {"num_classes": 4, "scale": 0.25}, 3, 32),
    "shufflenet_v2_x0_25": ("shufflenetv2", "shufflenet_v2_x0_25", {"num_classes": 4}, 3, 32),
    "squeezenet1_1": ("squeezenet", "squeezenet1_1", {"num_classes": 4}, 3, 32),
    "resnet18": ("resnet", "resnet18", {"num_classes": 4}, 3, 32),
    "alexnet_trunk": ("alexnet", "alexnet", {"num_classes": 0}, 3, 64),
    "vgg11_trunk": ("vgg", "vgg11", {"num_classes": 0}, 3, 32),
    "mobilenet_v1": ("mobilenetv1", "mobilenet_v1", {"num_classes": 4, "scale": 0.25}, 3, 32),
    "mobilenet_v2": ("mobilenetv2", "mobilenet_v2", {"num_classes": 4, "scale": 0.25}, 3, 32),
    "mobilenet_v3_large": ("mobilenetv3", "mobilenet_v3_large", {"num_classes": 4, "scale": 0.25}, 3, 32),
    "shufflenet_v2_swish": ("shufflenetv2", "shufflenet_v2_swish", {"num_classes": 4}, 3, 32),
    "squeezenet1_0": ("squeezenet", "squeezenet1_0", {"num_classes": 4}, 3, 64),
    "googlenet_trunk": ("googlenet", "googlenet", {"num_classes": 0}, 3, 96),
    "inception_v3": ("inceptionv3", "inception_v3", {"num_classes": 4}, 3, 75),
    "densenet121": ("densenet", "densenet121", {"num_classes": 4}, 3, 32),
    "resnet50": ("resnet", "resnet50", {"num_classes": 4}, 3, 32),
    "resnext50_32x4d": ("resnet", "resnext50_32x4d", {"num_classes": 4}, 3, 32),
    "wide_resnet50_2": ("resnet", "wide_resnet50_2", {"num_classes": 4}, 3, 32),
}
#: the default run (cpu): three families (on a cold kernel cache, mobilenet_v3_small took 118 s
#: and shufflenet_v2_x0_25 43 s on the 2-core machine, building their many fused groups: nightly)
QUICK = {"lenet", "squeezenet1_1", "resnet18"}


@pytest.mark.skipif(not HAVE_PADDLE, reason="real Paddle is not installed (its zoo files are read)")
@pytest.mark.parametrize("name", sorted(MODELS))
def test_paddle_zoo_model_under_to_static_has_no_break_and_equals_eager(name, device):
    if not NIGHTLY and (name not in QUICK or not device.startswith("cpu")):
        pytest.skip("in the nightly set (OARLOCK_NIGHTLY=1): the default run covers three families on cpu")
    module, ctor, kw, c, s = MODELS[name]
    fw.seed(0)
    with fw.device(device):
        model = getattr(paddle_zoo.load(module), ctor)(**kw)
    model.eval()  # dropout off, batch norm on its running statistics
    x = fw.to_tensor(np.random.default_rng(7).standard_normal((2, c, s, s)).astype("float32"), device=device)
    with fw.no_grad():
        want = model(x)
        fw.jit.to_static(model)
        got = model(x)
        again = model(x)  # the cached program
    assert isinstance(model.forward, fw.jit.StaticFunction)
    assert fw.jit.graph_breaks(model) == [], [str(b) for b in fw.jit.graph_breaks(model)]
    assert model.forward.programs, "no program was traced"
    want = want if isinstance(want, (tuple, list)) else [want]  # GoogLeNet: the logits and two aux heads
    for out in (got, again):
        out = out if isinstance(out, (tuple, list)) else [out]
        assert len(out) == len(want)
        for o, w in zip(out, want):
            np.testing.assert_allclose(o.numpy(), w.numpy(), rtol=2e-4, atol=2e-5)


# -- buffers changed inside a program: BatchNorm's running statistics in training ----------------


def _conv_bn(lib):
    return lib.nn.Sequential(lib.nn.Conv2D(3, 4, 3), lib.nn.BatchNorm2D(4, momentum=0.8), lib.nn.ReLU())


def _three_momentum_steps(lib, model, call, xs):
    """Losses and running statistics after each of three Momentum steps in training mode."""
    model.train()
    opt = lib.optimizer.Momentum(learning_rate=0.1, momentum=0.9, parameters=model.parameters())
    out = []
    for x in xs:
        y = call(lib.to_tensor(x))
        loss = (y * y).mean()
        loss.backward()
        opt.step()
        opt.clear_grad()
        out.append((float(loss), model[1]._mean.numpy().copy(), model[1]._variance.numpy().copy()))
    return out


@pytest.mark.skipif(not HAVE_PADDLE, reason="real Paddle (the oracle) is not installed")
def test_to_static_layer_with_batch_norm_in_training_writes_its_running_statistics_back():
    import paddle

    rng = np.random.default_rng(3)
    xs = [rng.standard_normal((4, 3, 6, 6)).astype("float32") for _ in range(3)]
    paddle.seed(0)
    ref = _conv_bn(paddle)
    weights = {k: v.numpy() for k, v in ref.state_dict().items()}
    eager, static = _conv_bn(fw), _conv_bn(fw)
    for m in (eager, static):
        m.set_state_dict({k: fw.to_tensor(v) for k, v in weights.items()})
    want = _three_momentum_steps(paddle, ref, ref, xs)
    got_eager = _three_momentum_steps(fw, eager, eager, xs)
    fw.jit.to_static(static)
    got = _three_momentum_steps(fw, static, static, xs)
    assert fw.jit.graph_breaks(static) == []
    assert not np.allclose(want[-1][1], 0.0)  # the statistics moved from their initial values
    for ours in (got_eager, got):
        for (wl, wm, wv), (gl, gm, gv) in zip(want, ours):
            # NOTE: 1e-5 (the fused kernels round differently); it was 2e-3 while the compiler
            # read a per-channel value at the column wherever C == W (this model: 4 and 4)
            np.testing.assert_allclose(gl, wl, rtol=1e-5)
            np.testing.assert_allclose(gm, wm, rtol=1e-5, atol=1e-5)
            np.testing.assert_allclose(gv, wv, rtol=1e-5, atol=1e-5)


def test_to_static_function_writes_back_the_tensors_it_changes_in_place():
    rng = np.random.default_rng(4)
    fw.seed(0)
    model, twin = _conv_bn(fw), _conv_bn(fw)
    twin.set_state_dict(model.state_dict())
    model.train(), twin.train()
    count = fw.zeros([1])  # read as a constant by the trace: becomes a parameter, written back

    def step(x):
        count.add_(fw.ones([1]))
        return model(x)

    f = fw.jit.to_static(step, full_graph=True)
    with fw.no_grad():
        for _ in range(3):
            x = fw.to_tensor(rng.standard_normal((2, 3, 5, 5)).astype("float32"))
            np.testing.assert_allclose(f(x).numpy(), twin(x).numpy(), rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(model[1]._mean.numpy(), twin[1]._mean.numpy(), rtol=1e-5, atol=1e-7)
            np.testing.assert_allclose(model[1]._variance.numpy(), twin[1]._variance.numpy(), rtol=1e-5)
    assert count.numpy().tolist() == [3.0]
    assert len(f.programs) == 1  # one trace, three runs


@pytest.mark.skipif(not HAVE_PADDLE, reason="real Paddle is not installed (its zoo files are read)")
@pytest.mark.parametrize("name", ["resnet18", "shufflenet_v2_x0_25"])
def test_paddle_zoo_model_trains_under_to_static_with_batch_norm_in_training_mode(name):
    """Three Momentum steps in float64 with every batch norm in training mode (dropout off):
    the losses and every running statistic under to_static equal eager mode's. Nightly.
    (MobileNetV2 is left out: with batch statistics over 2 images its steps are chaotic, see
    tests/test_vision_models.py; with OARLOCK_COMPILE=0 its to_static losses equal eager mode's
    bit for bit, with the compiled kernels they part at step 2: 1.0945 against 1.9789.)"""
    if not NIGHTLY:
        pytest.skip("in the nightly set (OARLOCK_NIGHTLY=1): the default run checks a Conv2D + BatchNorm2D")
    module, ctor, kw, c, s = MODELS[name]
    x = np.random.default_rng(7).standard_normal((2, c, s, s))
    y = fw.to_tensor(np.array([[1], [3]], dtype="int64"))
    runs = []
    for static in (False, True):
        before = fw.get_default_dtype()
        fw.set_default_dtype("float64")
        try:
            fw.seed(0)
            model = getattr(paddle_zoo.load(module), ctor)(**kw)
        finally:
            fw.set_default_dtype(before)
        model.train()
        for layer in model.sublayers():
            if isinstance(layer, fw.nn.Dropout):
                layer.eval()
        call = fw.jit.to_static(model) if static else model
        opt = fw.optimizer.Momentum(learning_rate=0.01, momentum=0.9, parameters=model.parameters())
        losses = []
        for _ in range(3):
            loss = fw.nn.functional.cross_entropy(call(fw.to_tensor(x)), y)
            loss.backward()
            opt.step()
            opt.clear_grad()
            losses.append(float(loss))
        stats = {k: v.numpy() for k, v in model.state_dict().items() if k.endswith(("_mean", "_variance"))}
        runs.append((losses, stats))
    (want, want_stats), (got, got_stats) = runs
    assert want_stats and sorted(got_stats) == sorted(want_stats)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    for k, v in want_stats.items():
        np.testing.assert_allclose(got_stats[k], v, rtol=1e-6, atol=1e-9, err_msg=k)
