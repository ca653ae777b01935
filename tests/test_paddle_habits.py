"""Paddle habits that must run unchanged (issue 40), each checked against real Paddle where it computes.

ParamAttr and the regularizers through every optimizer, gradient clipping, the device namespace
and places, PyLayer, jacobian/hessian, the utils, flags, the mode switches, the hapi callbacks,
``Model.save(training=False)`` and the inference Config's switches.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import framework as fw

paddle = pytest.importorskip(
    "paddle", reason="real Paddle is the oracle for these tests (pip install paddlepaddle)"
)


# -- ParamAttr and regularizers: every optimizer, as real Paddle updates ----------------------
def _train(lib, opt_name, param_reg, opt_wd, device=None, fused=None):
    R = lib.regularizer
    make = {"l1": R.L1Decay, "l2": R.L2Decay}
    preg = make[param_reg[0]](param_reg[1]) if param_reg else None
    owd = make[opt_wd[0]](opt_wd[1]) if isinstance(opt_wd, tuple) else opt_wd
    lin = lib.nn.Linear(
        2,
        2,
        weight_attr=lib.ParamAttr(
            initializer=lib.nn.initializer.Constant(0.5), regularizer=preg, learning_rate=0.5
        ),
        bias_attr=lib.ParamAttr(initializer=lib.nn.initializer.Constant(-0.3)),
    )
    kw = {"fused": fused} if fused is not None else {}
    opt = getattr(lib.optimizer, opt_name)(
        learning_rate=0.1, parameters=lin.parameters(), weight_decay=owd, **kw
    )
    if device is not None:
        lin.to(device)
    x = lib.to_tensor([[1.0, -2.0], [0.5, 3.0]])
    if device is not None:
        x = x.to(device)
    for _ in range(3):
        (lin(x) ** 2).sum().backward()
        opt.step()
        opt.clear_grad()
    return np.concatenate([lin.weight.numpy().ravel(), lin.bias.numpy()])


CASES = [
    (None, None),
    (("l2", 0.5), None),
    (None, ("l2", 0.5)),
    (None, ("l1", 0.5)),
    (("l1", 0.5), ("l2", 0.25)),
    (None, 0.5),
]


@pytest.mark.parametrize("opt_name", ["SGD", "Momentum", "Adam", "RMSProp", "Adagrad"])
@pytest.mark.parametrize("param_reg,opt_wd", CASES)
def test_regularizers_and_param_attr_update_as_paddle(opt_name, param_reg, opt_wd):
    want = _train(paddle, opt_name, param_reg, opt_wd)
    got = _train(fw, opt_name, param_reg, opt_wd)
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("fused", [False, True])
def test_param_regularizer_on_device_eager_and_fused(device, fused):
    want = _train(paddle, "Adam", ("l1", 0.5), ("l2", 0.25))
    got = _train(fw, "Adam", ("l1", 0.5), ("l2", 0.25), device=device, fused=fused)
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-6)


def test_adamw_param_regularizer_adds_to_decoupled_decay():
    want = _train(paddle, "AdamW", ("l2", 0.5), 0.1)
    got = _train(fw, "AdamW", ("l2", 0.5), 0.1)
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-6)


def test_param_attr_name_trainable_and_errors():
    fc = fw.nn.Linear(2, 3, weight_attr="fc_w", bias_attr=fw.ParamAttr(name="fc_b", trainable=False))
    assert fc.weight.name == "fc_w" and fc.bias.name == "fc_b"
    assert fc.bias.stop_gradient and not fc.weight.stop_gradient
    assert fw.base.param_attr.ParamAttr is fw.ParamAttr is fw.nn.ParamAttr
    with pytest.raises(fw.OpArgumentError, match=r"\[ParamAttr\] regularizer must be"):
        fw.ParamAttr(regularizer=0.1)
    with pytest.raises(fw.OpArgumentError, match="weight_decay must be a float"):
        fw.optimizer.SGD(parameters=fc.parameters(), weight_decay="l2")


# -- gradient clipping ---------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["ClipGradByGlobalNorm", "ClipGradByNorm", "ClipGradByValue"])
def test_grad_clip_under_nn_names_matches_paddle(kind):
    def run(lib):
        lib.seed(0)
        lin = lib.nn.Linear(
            3,
            2,
            weight_attr=lib.ParamAttr(initializer=lib.nn.initializer.Constant(0.7)),
            bias_attr=lib.ParamAttr(initializer=lib.nn.initializer.Constant(0.2), need_clip=False),
        )
        clip = getattr(lib.nn, kind)(0.3)
        opt = lib.optimizer.SGD(learning_rate=1.0, parameters=lin.parameters(), grad_clip=clip)
        (lin(lib.to_tensor([[1.0, 2.0, 3.0]])) ** 2).sum().backward()
        opt.step()
        return np.concatenate([lin.weight.numpy().ravel(), lin.bias.numpy()])

    np.testing.assert_allclose(run(fw), run(paddle), rtol=1e-5, atol=1e-6)


# -- devices and places --------------------------------------------------------------------
def test_device_namespace_and_gpu_names():
    assert fw.device.get_device() in fw.device.get_available_device()
    with fw.device("cpu"):
        assert fw.device.get_device() == "cpu"
    gpus = [
        d
        for d in fw.devices()
        if d.type == "cuda" or "gpu" in str(fw.get_device_properties(d).extra.get("device_type", ""))
    ]
    assert fw.device.cuda.device_count() == len(gpus)
    assert fw.is_compiled_with_cuda() == any(d.type == "cuda" for d in fw.devices())
    if not gpus:
        for call in (
            lambda: fw.device.set_device("gpu"),
            lambda: fw.CUDAPlace(0),
            lambda: fw.ones([1]).cuda(),
        ):
            with pytest.raises(fw.DeviceError, match=r"'gpu:0' does not exist: 0 GPU\(s\) found"):
                call()
    else:
        assert fw.CUDAPlace(0) == gpus[0]
        assert fw.ones([2]).cuda().device == gpus[0]
    prev = fw.get_device()
    try:
        assert fw.device.set_device("cpu") == fw.CPUPlace()
    finally:
        fw.set_device(prev)
    x = fw.to_tensor([1.0, 2.0], place=fw.CPUPlace())
    assert x.device == "cpu:0" and x.cpu().tolist() == [1.0, 2.0]
    fw.device.synchronize()
    fw.device.cuda.empty_cache()
    assert fw.base.core.CPUPlace is fw.CPUPlace and fw.base.framework.Variable is fw.Tensor
    assert (
        fw.device.cuda.Stream is fw.Stream and fw.base.core.is_compiled_with_cuda is fw.is_compiled_with_cuda
    )


# -- autograd: PyLayer, jacobian, hessian --------------------------------------------------
def _pylayer_run(lib, device=None):
    class Scaled(lib.autograd.PyLayer):
        @staticmethod
        def forward(ctx, x, w, k=3.0):
            ctx.save_for_backward(x, w)
            ctx.k = k
            return lib.tanh(x) * w * k, x * 2

        @staticmethod
        def backward(ctx, dy, dz):
            x, w = ctx.saved_tensor()
            t = lib.tanh(x)
            return dy * (1 - t * t) * w * ctx.k + dz * 2, (dy * t * ctx.k).sum(0)

    x = lib.to_tensor([[0.5, -1.0], [2.0, 0.1]], stop_gradient=False)
    w = lib.to_tensor([1.5, -0.5], stop_gradient=False)
    if device is not None:
        x, w = x.to(device).detach(), w.to(device).detach()
        x.stop_gradient = w.stop_gradient = False
    y, z = Scaled.apply(x, w, k=2.0)
    ((y * y).sum() + z.sum()).backward()
    return y.numpy(), x.grad.numpy(), w.grad.numpy()


def test_pylayer_matches_paddle(device):
    for got, want in zip(_pylayer_run(fw, device), _pylayer_run(paddle)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_pylayer_second_order_and_errors():
    class Cube(fw.autograd.PyLayer):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x**3

        @staticmethod
        def backward(ctx, dy):
            (x,) = ctx.saved_tensor()
            return dy * 3 * x**2

    x = fw.to_tensor([1.0, 2.0], stop_gradient=False)
    (g,) = fw.grad(Cube.apply(x).sum(), x, create_graph=True)
    (g2,) = fw.grad(g.sum(), x)
    np.testing.assert_allclose(g2.numpy(), [6.0, 12.0])

    class Wrong(fw.autograd.PyLayer):
        @staticmethod
        def forward(ctx, x, y):
            return x * y

        @staticmethod
        def backward(ctx, dy):
            return dy

    a = fw.to_tensor([1.0], stop_gradient=False)
    with pytest.raises(
        fw.OpArgumentError, match=r"Wrong.backward returned 1 gradient\(s\) but forward took 2"
    ):
        Wrong.apply(a, a * 1).sum().backward()


def test_jacobian_and_hessian_match_paddle():
    def run(lib):
        x = lib.to_tensor([0.3, -1.2, 2.0], stop_gradient=False)
        xb = lib.to_tensor([[1.0, 2.0], [3.0, -4.0]], stop_gradient=False)
        J = lib.autograd.jacobian(lib.tanh(x) * x[0], x)
        H = lib.autograd.hessian((lib.sin(x) * x).sum() * x[1], x)
        Jb = lib.autograd.jacobian(xb**2 * xb[:, :1], xb, batch_axis=0)
        Hb = lib.autograd.hessian((xb**3).sum(-1), xb, batch_axis=0)
        Jt = lib.autograd.jacobian((x * 2, x * x), x)
        return [
            J.shape,
            Jb.shape,
            H.shape,
            J[:].numpy(),
            H[:].numpy(),
            Jb[:].numpy(),
            Hb[:].numpy(),
            Jt[1][:].numpy(),
            J[1].numpy(),
            J[:, 2].numpy(),
        ]

    got, want = run(fw), run(paddle)
    for g, w in zip(got[:3], want[:3]):
        assert list(g) == list(w)
    for g, w in zip(got[3:], want[3:]):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    with pytest.raises(fw.OpArgumentError, match=r"\[jacobian\] xs must be 0-d or 1-d"):
        fw.autograd.jacobian(fw.ones([2]), fw.ones([2, 2]))


def test_autograd_backward_many_roots():
    x = fw.to_tensor([1.0, 2.0], stop_gradient=False)
    fw.autograd.backward([x * 3, (x * x).sum()], [fw.to_tensor([1.0, 0.5]), None])
    np.testing.assert_allclose(x.grad.numpy(), [3 + 2, 1.5 + 4])


# -- utils, flags, modes ---------------------------------------------------------------------
def test_unique_name_and_dlpack():
    with fw.utils.unique_name.guard():
        assert [fw.utils.unique_name.generate("fc") for _ in range(2)] == ["fc_0", "fc_1"]
        with fw.utils.unique_name.guard("inner/"):
            assert fw.utils.unique_name.generate("fc") == "inner/fc_0"
        assert fw.utils.unique_name.generate("fc") == "fc_2"
    x = fw.to_tensor([[1.0, 2.0], [3.0, 4.0]])
    back = fw.utils.dlpack.from_dlpack(fw.utils.dlpack.to_dlpack(x))
    np.testing.assert_array_equal(back.numpy(), x.numpy())
    pt = paddle.utils.dlpack.from_dlpack(fw.utils.dlpack.to_dlpack(x))  # Paddle reads our capsule
    np.testing.assert_array_equal(pt.numpy(), x.numpy())
    ours = fw.utils.dlpack.from_dlpack(paddle.utils.dlpack.to_dlpack(paddle.to_tensor([5.0, 6.0])))
    assert ours.tolist() == [5.0, 6.0]


def test_run_check_reports_every_device():
    """In a new process, as a user runs it: this one may hold test plugins whose kernels refuse
    on purpose (tests/plugins_for_tests/raising_kernels.py), which run_check rightly reports."""
    import json
    import os
    import subprocess
    import sys

    code = (
        "import io, json, contextlib, framework as fw\n"
        "out = io.StringIO()\n"
        "with contextlib.redirect_stdout(out):\n"
        "    fw.utils.run_check()\n"
        "print(json.dumps({'text': out.getvalue(), 'devices': [str(d) for d in fw.devices()]}))\n"
    )
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    r = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=600,
        env=dict(os.environ, PYTHONPATH=root),
    )
    assert r.returncode == 0, r.stderr[-3000:]
    got = json.loads(r.stdout.strip().splitlines()[-1])
    text, devices = got["text"], got["devices"]
    assert devices
    for d in devices:
        assert f"{d}: OK" in text
    assert f"works well on {len(devices)} device(s)" in text


def test_flags_modes_and_enable_to_static():
    fw.set_flags({"FLAGS_cudnn_deterministic": True})
    try:
        assert fw.get_flags(["FLAGS_cudnn_deterministic"]) == {"FLAGS_cudnn_deterministic": True}
    finally:
        fw.set_flags({"FLAGS_cudnn_deterministic": False})
    with pytest.raises(fw.OpArgumentError, match="unknown flag 'FLAGS_nope'.*FLAGS_check_nan_inf"):
        fw.set_flags({"FLAGS_nope": 1})
    assert fw.in_dynamic_mode() and fw.base.framework.in_dygraph_mode()
    fw.disable_static()
    with pytest.raises(fw.OarlockError, match=r"no static-graph mode.*fw\.jit\.to_static"):
        fw.enable_static()
    calls = []

    @fw.jit.to_static
    def f(x):
        calls.append(1)
        return x * 2

    f(fw.ones([2]))
    f(fw.ones([2]))
    traced = len(calls)
    fw.jit.enable_to_static(False)
    try:
        assert f(fw.ones([2])).tolist() == [2.0, 2.0]
        assert len(calls) == traced + 1  # ran as Python
    finally:
        fw.jit.enable_to_static(True)
    f(fw.ones([2]))
    assert len(calls) == traced + 1  # the program again


# -- hapi ----------------------------------------------------------------------------------
def _data():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 3)).astype("float32")
    return x, (x.sum(1) > 0).astype("int64")


def test_fit_steps_the_scheduler_and_checkpoints_like_paddle(tmp_path):
    x, y = _data()

    def run(lib, folder):
        lib.seed(0)
        net = lib.nn.Linear(3, 2, weight_attr=lib.ParamAttr(initializer=lib.nn.initializer.Constant(0.1)))
        sched = lib.optimizer.lr.StepDecay(0.5, step_size=1, gamma=0.5)
        model = lib.Model(net)
        model.prepare(lib.optimizer.SGD(sched, parameters=model.parameters()), lib.nn.CrossEntropyLoss())
        data = lib.io.TensorDataset([lib.to_tensor(x), lib.to_tensor(y)])
        model.fit(data, epochs=3, batch_size=4, shuffle=False, verbose=0, save_dir=folder, save_freq=2)
        return sched.last_lr, net.weight.numpy(), sorted(os.listdir(folder))

    lr, w, files = run(fw, str(tmp_path / "ours"))
    plr, pw, pfiles = run(paddle, str(tmp_path / "theirs"))
    assert lr == pytest.approx(plr) and files == pfiles
    np.testing.assert_allclose(w, pw, rtol=1e-5, atol=1e-6)
    state = paddle.load(str(tmp_path / "ours" / "final.pdparams"))  # Paddle reads the checkpoint
    np.testing.assert_allclose(state["weight"].numpy(), w)


def test_train_batch_takes_numpy_and_save_for_inference(tmp_path):
    x, y = _data()
    fw.seed(0)
    net = fw.nn.Linear(3, 2)
    model = fw.Model(net, inputs=[fw.static.InputSpec([None, 3], "float32", "x")])
    model.prepare(fw.optimizer.SGD(0.1, parameters=model.parameters()), fw.nn.CrossEntropyLoss())
    w0 = net.weight.numpy().copy()
    loss = model.train_batch([x], [y])
    assert isinstance(loss, list) and isinstance(loss[0], np.ndarray) and loss[0].shape == ()  # as Paddle
    want = fw.nn.functional.cross_entropy(fw.to_tensor(x) @ fw.to_tensor(w0) + net.bias * 0, fw.to_tensor(y))
    assert loss[0] == pytest.approx(float(want.item()), rel=1e-5)
    assert not np.allclose(net.weight.numpy(), w0)
    path = str(tmp_path / "infer")
    model.save(path, training=False)
    config = fw.inference.Config(path + ".pdmodel", path + ".pdiparams")  # Paddle's file names
    config.set_cpu_math_library_num_threads(2)
    config.disable_glog_info()
    config.switch_ir_optim(False)
    config.enable_memory_optim()
    config.enable_mkldnn()
    assert (config.cpu_math_library_num_threads(), config.ir_optim(), config.glog_info_disabled()) == (
        2,
        False,
        True,
    )
    pred = fw.inference.create_predictor(config)
    h = pred.get_input_handle(pred.get_input_names()[0])
    h.copy_from_cpu(x)
    pred.run()
    out = pred.get_output_handle(pred.get_output_names()[0]).copy_to_cpu()
    np.testing.assert_allclose(out, net(fw.to_tensor(x)).numpy(), rtol=1e-5, atol=1e-6)
    with pytest.raises(fw.OpArgumentError, match="training=False saves an inference program"):
        fw.Model(net).save(path, training=False)


def test_device_memory_queries(device):
    before = fw.device.memory_allocated(device)
    x = fw.zeros([1 << 16], dtype="float32", device=device)
    assert fw.device.memory_allocated(device) - before >= x.size * 4
    assert fw.device.memory_allocated(device) == fw.memory_stats(device)["allocated_bytes"]
    assert fw.device.max_memory_allocated(device) >= fw.device.memory_allocated(device)
    assert fw.device.memory_reserved(device) >= fw.device.memory_allocated(device)
    assert fw.device.get_device_name(device) == fw.get_device_properties(device).name
    assert fw.device.is_available() == (fw.device.device_count() > 0)
    del x
    fw.device.empty_cache(device)
