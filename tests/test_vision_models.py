"""Paddle's model zoo trains on Oarlock as it does on Paddle (issue 40).

Each architecture is built twice on Oarlock — from Paddle's own ``paddle/vision/models/*.py``
(read unchanged from the installed wheel, ``paddle`` meaning ``framework``: tests/paddle_zoo.py)
and from ``fw.vision.models`` (our implementation) — given real Paddle's initial state_dict,
and trained 3 Momentum steps on cpu and opencl; the three losses must equal real Paddle's. A
checkpoint real Paddle wrote (``paddle.save``) of each model loads with ``fw.load`` and gives
Paddle's outputs.
Dropout layers run in eval mode (Paddle's ``downscale_in_infer`` scaling included). Skipped
without Paddle.

Batch norm runs on its running statistics (eval mode) in these comparisons: in training mode,
statistics over a batch of 2 make the first steps chaotic (a channel that ReLU nearly zeroes
has a variance near 0, and 1/sqrt(var + eps) multiplies its rounding), so that real Paddle's
own float32 and float64 runs part at step 2 (MobileNetV2, 32x32, lr 0.01: 1.4452 against
0.4346) and no implementation could match another there. Batch norm's training mode is
compared in float64 for the ResNets at 64x64 (their residual sums grow without batch
statistics until Paddle's own loss is NaN; in float32, ResNet-50's step-3 loss is 1.2248 in
Paddle's float32 and 0.8677 in its float64); float64 agrees to 1e-5 there (ResNet-50: 4e-7).
"""

from __future__ import annotations

import functools
import importlib.util
import os

import numpy as np
import pytest

import framework as fw

from . import paddle_zoo

HAVE_PADDLE = importlib.util.find_spec("paddle") is not None
needs_paddle = pytest.mark.skipif(not HAVE_PADDLE, reason="real Paddle is not installed (the oracle)")

#: name: (zoo module, constructor, kwargs, channels, image size[, batch norm in training mode])
CASES = {
    "alexnet_trunk": ("alexnet", "alexnet", {"num_classes": 0}, 3, 64),
    "densenet121": ("densenet", "densenet121", {"num_classes": 4}, 3, 32),
    "googlenet_trunk": ("googlenet", "googlenet", {"num_classes": 0}, 3, 96),
    "inception_v3": ("inceptionv3", "inception_v3", {"num_classes": 4}, 3, 75),
    "lenet": ("lenet", "LeNet", {"num_classes": 4}, 1, 28),
    "mobilenet_v1": ("mobilenetv1", "mobilenet_v1", {"num_classes": 4, "scale": 0.25}, 3, 32),
    "mobilenet_v2": ("mobilenetv2", "mobilenet_v2", {"num_classes": 4, "scale": 0.25}, 3, 32),
    "mobilenet_v3_small": ("mobilenetv3", "mobilenet_v3_small", {"num_classes": 4, "scale": 0.25}, 3, 32),
    "mobilenet_v3_large": ("mobilenetv3", "mobilenet_v3_large", {"num_classes": 4, "scale": 0.25}, 3, 32),
    "resnet18": ("resnet", "resnet18", {"num_classes": 4}, 3, 64, True),
    "resnet50": ("resnet", "resnet50", {"num_classes": 4}, 3, 64, True),
    "resnext50_32x4d": ("resnet", "resnext50_32x4d", {"num_classes": 4}, 3, 64, True),
    "wide_resnet50_2": ("resnet", "wide_resnet50_2", {"num_classes": 4}, 3, 64, True),
    "shufflenet_v2_x0_25": ("shufflenetv2", "shufflenet_v2_x0_25", {"num_classes": 4}, 3, 32),
    "shufflenet_v2_swish": ("shufflenetv2", "shufflenet_v2_swish", {"num_classes": 4}, 3, 32),
    "squeezenet1_0": ("squeezenet", "squeezenet1_0", {"num_classes": 4}, 3, 64),
    "squeezenet1_1": ("squeezenet", "squeezenet1_1", {"num_classes": 4}, 3, 32),
    "vgg11_trunk": ("vgg", "vgg11", {"num_classes": 0}, 3, 32),
}
SLOW = {
    "alexnet": ("alexnet", "alexnet", {"num_classes": 4}, 3, 224),
    "googlenet": ("googlenet", "googlenet", {"num_classes": 4}, 3, 224),
    "vgg11": ("vgg", "vgg11", {"num_classes": 4}, 3, 32),
    "vgg16_bn": ("vgg", "vgg16", {"num_classes": 4, "batch_norm": True}, 3, 32),
    "densenet161": ("densenet", "densenet161", {"num_classes": 4}, 3, 64),
    "resnet152": ("resnet", "resnet152", {"num_classes": 4}, 3, 64, True),
}
STEPS, LR, MOMENTUM = 3, 0.01, 0.9
DTYPE = "float32"
#: GoogLeNet's trunk gives raw 1024-wide features as logits (losses over 100): a smaller step
#: keeps its training out of the chaotic range (at 0.01 Paddle's float32 and float64 part)
LRS = {"googlenet_trunk": 1e-4}


def _dtype(name: str) -> str:
    """float64 where batch norm trains (float32 there is chaotic, see above), else float32."""
    return "float64" if _case(name)[5] else DTYPE


#: what the default run trains (on cpu): every family of the zoo once from Paddle's files, and
#: the cheaper half again from ours -- the whole matrix (every case, both builds, cpu and
#: opencl, the 224-pixel and deep models) takes over 20 minutes on two cores and runs with
#: OARLOCK_NIGHTLY=1, opencl included. (On opencl, cases that failed in long runs but passed
#: alone -- squeezenet1_1's third loss 32.0 for 5.76 -- were launch tuning repeating the fused
#: optimizer step, which writes in place, on a shape bucket not tuned yet: fixed, see
#: test_a_tuned_first_step_updates_parameters_once.)
DEFAULT = {
    "zoo": {
        "lenet",
        "alexnet_trunk",
        "vgg11_trunk",
        "squeezenet1_1",
        "mobilenet_v1",
        "mobilenet_v2",
        "mobilenet_v3_small",
        "shufflenet_v2_x0_25",
        "googlenet_trunk",
        "inception_v3",
        "densenet121",
        "resnet18",
    },
    "ours": {
        "lenet",
        "squeezenet1_1",
        "mobilenet_v2",
        "mobilenet_v3_small",
        "shufflenet_v2_x0_25",
        "resnet18",
    },
}
#: what the default run trains on the other devices (opencl): two small models of ours
DEFAULT_DEVICES = {"zoo": set(), "ours": {"lenet", "squeezenet1_1"}, "checkpoint": {"squeezenet1_1"}}
NIGHTLY = os.environ.get("OARLOCK_NIGHTLY") == "1"


def _gate(which: str, name: str, device: str) -> None:
    default = DEFAULT[which] if device.startswith("cpu") else DEFAULT_DEVICES[which]
    if not NIGHTLY and name not in default:
        pytest.skip(
            "in the nightly set (OARLOCK_NIGHTLY=1): the default run trains each family once on cpu, "
            "two small models on the other devices"
        )


PARAMS = [pytest.param(n, id=n) for n in CASES] + [
    pytest.param(n, id=n, marks=pytest.mark.slow) for n in SLOW
]


def _case(name: str) -> tuple:
    case = CASES.get(name) or SLOW[name]
    return case if len(case) == 6 else (*case, False)


def _data(name: str) -> tuple[np.ndarray, np.ndarray]:
    _, _, _, c, s, _ = _case(name)
    rng = np.random.default_rng(7)
    return rng.standard_normal((2, c, s, s)).astype("float32"), np.array([[1], [3]], dtype="int64")


def _eval_layers(lib, model, bn_train: bool = False) -> None:  # type: ignore[no-untyped-def]
    """Training mode but for dropout and (unless ``bn_train``) batch norm."""
    model.train()
    kinds = (lib.nn.Dropout,) if bn_train else (lib.nn.Dropout, lib.nn.BatchNorm2D, lib.nn.BatchNorm)
    for layer in model.sublayers():
        if isinstance(layer, kinds):
            layer.eval()


def _train(lib, model, x, y, lr: float = LR) -> list[float]:  # type: ignore[no-untyped-def]
    """Three Momentum steps; the loss sums cross-entropy over every output the model returns
    (GoogLeNet's two auxiliary heads), the flattened output being the logits."""
    opt = lib.optimizer.Momentum(learning_rate=lr, momentum=MOMENTUM, parameters=model.parameters())
    losses = []
    for _ in range(STEPS):
        outs = model(x)
        outs = outs if isinstance(outs, (tuple, list)) else [outs]
        loss = sum(lib.nn.functional.cross_entropy(lib.flatten(o, 1), y) for o in outs)
        loss.backward()
        opt.step()
        opt.clear_grad()
        losses.append(float(loss.numpy()))
    return losses


@functools.cache
def _paddle_run(
    name: str, dtype: str = DTYPE, bn_train: bool = False
) -> tuple[dict[str, np.ndarray], list[float]]:
    """Real Paddle: the initial state_dict and the three losses."""
    import paddle

    module, ctor, kw, _, _, _ = _case(name)
    before = paddle.get_default_dtype()
    paddle.set_default_dtype(dtype)
    try:
        paddle.seed(0)
        model = getattr(paddle.vision.models, ctor)(**kw)
    finally:
        paddle.set_default_dtype(before)
    state = {k: v.numpy().copy() for k, v in model.state_dict().items()}
    _eval_layers(paddle, model, bn_train or _case(name)[5])
    x, y = _data(name)
    return state, _train(
        paddle, model, paddle.to_tensor(x.astype(dtype)), paddle.to_tensor(y), LRS.get(name, LR)
    )


def _build(make, dtype: str):  # type: ignore[no-untyped-def]
    before = fw.get_default_dtype()
    fw.set_default_dtype(dtype)
    try:
        fw.seed(0)
        return make()
    finally:
        fw.set_default_dtype(before)


def _oarlock_losses(model, name: str, device: str, dtype: str = DTYPE, bn_train: bool = False) -> list[float]:  # type: ignore[no-untyped-def]
    state, _ = _paddle_run(name, dtype, bn_train)
    ours = model.state_dict()
    assert sorted(ours) == sorted(state), (
        f"state_dict keys differ: only ours {sorted(set(ours) - set(state))[:5]}, "
        f"only Paddle's {sorted(set(state) - set(ours))[:5]}"
    )
    for k, v in state.items():
        assert tuple(ours[k].shape) == v.shape, f"{k}: ours {tuple(ours[k].shape)}, Paddle's {v.shape}"
    model.set_state_dict({k: fw.to_tensor(v) for k, v in state.items()})
    model.to(device)
    _eval_layers(fw, model, bn_train or _case(name)[5])
    x, y = _data(name)
    x_, y_ = fw.to_tensor(x.astype(dtype), device=device), fw.to_tensor(y, device=device)
    return _train(fw, model, x_, y_, LRS.get(name, LR))


def _check(got: list[float], want: list[float], rtol: float = 1e-4) -> None:
    np.testing.assert_allclose(
        got, want, rtol=rtol, atol=rtol / 10, err_msg=f"losses: ours {got}, Paddle's {want}"
    )


@needs_paddle
@pytest.mark.parametrize("name", PARAMS)
def test_paddle_zoo_file_trains_like_paddle(name: str, device: str) -> None:
    _gate("zoo", name, device)
    module, ctor, kw, _, _, _ = _case(name)
    dt = _dtype(name)
    model = _build(lambda: getattr(paddle_zoo.load(module), ctor)(**kw), dt)
    _check(
        _oarlock_losses(model, name, device, dt), _paddle_run(name, dt)[1], 1e-5 if dt == "float64" else 1e-4
    )
    assert not fw.fallback_stats(), fw.fallback_stats()


@needs_paddle
@pytest.mark.parametrize("name", PARAMS)
def test_vision_model_trains_like_paddle(name: str, device: str) -> None:
    _gate("ours", name, device)
    module, ctor, kw, _, _, _ = _case(name)
    dt = _dtype(name)
    model = _build(lambda: getattr(fw.vision.models, ctor)(**kw), dt)
    _check(
        _oarlock_losses(model, name, device, dt), _paddle_run(name, dt)[1], 1e-5 if dt == "float64" else 1e-4
    )
    assert not fw.fallback_stats(), fw.fallback_stats()


# -- launch tuning must not repeat an update in place ----------------------------------------
def test_a_tuned_first_step_updates_parameters_once(device: str, tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The first Momentum step on a new parameter shape, with nothing tuned yet: the fused
    update writes each parameter and velocity into its own storage, and tuning that kernel's
    launch (tune.py: every candidate launched several times) applied the update once per
    launch -- squeezenet1_1's third loss on opencl was 32.0 for Paddle's 5.76 in any run whose
    tuning file did not hold that kernel's bucket yet."""
    from framework.compiler import tune

    monkeypatch.setattr(tune, "path", lambda: tmp_path / "tuning.json")
    tune.reset()
    rng = np.random.default_rng(0)
    shape = (263, 251)  # rows x row length past tune.MIN_ELEMENTS: a launch that is tuned
    p0, g = rng.standard_normal(shape).astype("float32"), rng.standard_normal(shape).astype("float32")
    layer = fw.nn.Layer()
    layer.w = layer.create_parameter(shape)
    layer.w.set_value(fw.to_tensor(p0))
    layer.to(device)
    w = layer.w
    opt = fw.optimizer.Momentum(learning_rate=0.1, momentum=0.9, parameters=layer.parameters())
    try:
        for step in range(2):
            (w * fw.to_tensor(g, device=device)).sum().backward()
            opt.step()
            opt.clear_grad()
            # velocity after step k: g * (1 + 0.9 + ... ), the parameter moves by 0.1 * it
            want = p0 - 0.1 * g * (1.0 if step == 0 else 1.0 + 1.9)
            np.testing.assert_allclose(w.numpy(), want, rtol=1e-5, atol=1e-5, err_msg=f"step {step + 1}")
    finally:
        tune.reset()


# -- checkpoints written by real Paddle ---------------------------------------------------------
#: loaded in the default run on cpu (four families; every model of CASES and SLOW nightly)
DEFAULT["checkpoint"] = {"lenet", "squeezenet1_1", "resnet18", "mobilenet_v3_small"}


@needs_paddle
@pytest.mark.parametrize("name", PARAMS)
def test_vision_model_loads_a_checkpoint_real_paddle_wrote(name: str, device: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """``paddle.save`` of a model's state_dict (its batch norms' running statistics moved by a
    training-mode forward) loads with ``fw.load`` into ``fw.vision.models``' build of it, and
    the eval-mode outputs are Paddle's."""
    _gate("checkpoint", name, device)
    import paddle

    module, ctor, kw, _, _, _ = _case(name)
    x, _ = _data(name)
    paddle.seed(0)
    ref = getattr(paddle.vision.models, ctor)(**kw)
    ref.train()
    with paddle.no_grad():
        ref(paddle.to_tensor(x * 2.0 + 0.5))  # running statistics away from 0 and 1
    ref.eval()
    path = str(tmp_path / f"{name}.pdparams")
    paddle.save(ref.state_dict(), path)
    with paddle.no_grad():
        want = ref(paddle.to_tensor(x))
    want = [w.numpy() for w in (want if isinstance(want, (tuple, list)) else [want])]

    ours = _build(lambda: getattr(fw.vision.models, ctor)(**kw), DTYPE)
    missing, unexpected = ours.set_state_dict(fw.load(path))
    assert (missing, unexpected) == ([], []), (missing[:5], unexpected[:5])
    ours.to(device)
    ours.eval()
    with fw.no_grad():
        got = ours(fw.to_tensor(x, device=device))
    got = got if isinstance(got, (tuple, list)) else [got]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.numpy(), w, rtol=2e-4, atol=2e-5)
