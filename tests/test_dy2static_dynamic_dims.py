"""to_static with ``None`` dims in the InputSpec: products of dynamic dims (``b*t``), constants
that follow a dynamic numel (``mean``, ``var``, ``std``), and dims shared between inputs by name.

Each case is traced once with symbolic dims, run at several sizes and compared with eager."""

import warnings

import numpy as np
import pytest

import framework as fw
from framework import ir
from framework.static import InputSpec

SIZES = [(2, 3), (5, 7), (1, 4), (6, 1)]


def _one_program(sf, eager, shapes, *, tol=1e-6, data=None, device="cpu"):
    """``sf`` equals ``eager`` at every shape list in ``shapes``, with one traced program and no
    'specialised' warning."""
    rng = np.random.default_rng(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a specialisation warns: the case must not
        for shp in shapes:
            arrs = [data(s) if data else rng.standard_normal(s).astype(np.float32) for s in shp]
            with fw.no_grad():
                want = eager(*[fw.to_tensor(a, device=device) for a in arrs])
                got = sf(*[fw.to_tensor(a, device=device) for a in arrs])
            want = want if isinstance(want, (tuple, list)) else [want]
            got = got if isinstance(got, (tuple, list)) else [got]
            for g, w in zip(got, want):
                assert g.shape == w.shape
                np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=tol, atol=tol)
    progs = sf.programs
    assert len(progs) == 1, f"{len(progs)} programs traced"
    return progs[0].program


def test_reshape_by_a_product_of_two_dynamic_dims(device):
    def f(x):
        b, t = x.shape[0], x.shape[1]
        y = x.reshape([b * t, 8]) * 2.0
        return y, y.reshape([b, t * 8]), fw.flatten(x, 0, 1) + 1.0

    sf = fw.jit.to_static(f, input_spec=[InputSpec([None, None, 8])])
    p = _one_program(sf, f, [[(b, t, 8)] for b, t in SIZES], device=device)
    text = str(p)
    assert "sym<s0_0*s0_1>" in text and "tensor<[8*s0_1, " not in text
    assert "[s0_0, 8*s0_1]" in text
    # the text form of a product dim reads back
    assert ir.print_program(ir.parse_program(text)) == text


def test_symdim_products_evaluate_and_print():
    d = ir.SymDim.make({"t*b": 8, "b": 1}, 2)
    assert str(d) == "b+8*b*t+2" and d.symbols == ("b", "t") and not d.is_symbol
    assert d.evaluate({"b": 3, "t": 5}) == 3 + 120 + 2
    assert ir.SymDim.of("b").is_symbol and ir.SymDim.make({"b*t": 1}).degree == 2
    text = (
        "module @f(%0: tensor<[b, t], float32, cpu:0>) -> () {\n"
        "  %1 = op.reshape(%0) {shape = (sym<-t*b+2*b+t-1>, 1)} : tensor<[-t*b+2*b+t-1, 1], float32, cpu:0>\n"
        "  builtin.return()\n}"
    )
    (op,) = [o for o in ir.parse_program(text).walk() if o.name == "op.reshape"]
    (d, _) = op.attrs["shape"]
    assert d == op.result.type.shape[0] and str(d) == "2*b+t-b*t-1"
    assert d.evaluate({"b": 4, "t": 3}) == 8 + 3 - 12 - 1


def test_linear_on_a_3d_input_with_dynamic_batch_and_length(device):
    fw.seed(0)
    lin = fw.nn.Linear(8, 4).to(device)
    eager = lin.forward
    sl = fw.jit.to_static(lin, input_spec=[InputSpec([None, None, 8])])
    _one_program(sl.forward, eager, [[(b, t, 8)] for b, t in SIZES], device=device)


@pytest.mark.parametrize(
    "name, fn",
    [
        ("mean", lambda x: x - x.mean()),
        ("mean_dynamic_axis", lambda x: x.mean(axis=0) + x.mean(axis=[0, 1], keepdim=True)),
        ("var", lambda x: x.var(axis=0) + x.var(unbiased=False)),
        ("std", lambda x: x.std(axis=1) * x.std()),
        ("norm_over_batch", lambda x: (x - x.mean(0)) / fw.sqrt(x.var(0, unbiased=False) + 1e-5)),
        ("divide_by_size", lambda x: x.sum() / float(x.shape[0] * x.shape[1])),
    ],
)
def test_constants_that_follow_a_dynamic_numel(name, fn, device):
    sf = fw.jit.to_static(fn, input_spec=[InputSpec([None, None])])
    p = _one_program(sf, fn, [[(b + 1, t + 1)] for b, t in SIZES], tol=2e-6, device=device)
    assert "op.full" in str(p)  # the count, made at run time


def test_negative_indices_along_a_dynamic_axis(device):
    """gather/scatter_add wrap a negative index by the axis's size (``index + n``, Paddle's
    rule): along a dynamic axis that int follows the batch and is counted at run time."""

    def f(x):
        last = fw.gather(x, fw.to_tensor([-1, 0], device=x.device), axis=0)
        acc = fw.scatter_add(x * 1.0, fw.to_tensor([-1, -1], device=x.device), x[:2] * 2.0)
        return last, acc

    sf = fw.jit.to_static(f, input_spec=[InputSpec([None, 3])])
    _one_program(sf, f, [[(b + 2, 3)] for b, _ in SIZES], device=device)


def test_branch_on_a_mean_with_a_dynamic_batch():
    def f(x):
        if x.mean() > 0:
            y = x * 2.0
        else:
            y = x - 1.0
        return y

    sf = fw.jit.to_static(f, input_spec=[InputSpec([None, 4])])
    shapes = [[(n, 4)] for n in (3, 9, 2, 17)]
    rng = np.random.default_rng(1)
    flips = iter([1.0, -1.0, -1.0, 1.0])
    _one_program(
        sf, f, shapes, data=lambda s: (np.abs(rng.standard_normal(s)) * next(flips)).astype(np.float32)
    )
    assert "cf." in str(sf.programs[0].program)


def test_tiny_transformer_encoder_layer_with_dynamic_batch_and_length(device):
    fw.seed(0)
    layer = fw.nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0).to(device)
    layer.eval()
    eager = layer.forward
    sl = fw.jit.to_static(layer, input_spec=[InputSpec([None, None, 16])])
    _one_program(sl.forward, eager, [[(b, t, 16)] for b, t in SIZES], tol=1e-5, device=device)


def test_training_step_mean_loss_with_dynamic_batch():
    fw.seed(0)
    lin = fw.nn.Linear(4, 3)

    def step(x, y):
        return ((lin(x) - y) ** 2).mean()

    sf = fw.jit.to_static(step, input_spec=[InputSpec([None, None, 4]), InputSpec([None, None, 3])])
    rng = np.random.default_rng(2)
    for b, t in SIZES[:3]:
        x = rng.standard_normal((b, t, 4)).astype(np.float32)
        y = rng.standard_normal((b, t, 3)).astype(np.float32)
        grads = []
        for fn in (step, sf):
            lin.clear_gradients()
            loss = fn(fw.to_tensor(x), fw.to_tensor(y))
            loss.backward()
            grads.append((loss.numpy(), lin.weight.grad.numpy(), lin.bias.grad.numpy()))
        for g, w in zip(grads[1], grads[0]):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    assert len(sf.programs) == 1


def test_named_dims_are_shared_between_inputs():
    def f(q, mask):
        return q * mask.unsqueeze(-1) + q.mean(axis=1, keepdim=True)

    sf = fw.jit.to_static(f, input_spec=[InputSpec(["b", "t", 8]), InputSpec(["b", "t"])])
    _one_program(sf, f, [[(b, t, 8), (b, t)] for b, t in SIZES])
    assert sf.programs[0].program.symbols() == ("b", "t")
    with fw.no_grad(), pytest.raises(fw.OpArgumentError, match="symbol t is 3"):
        sf(fw.ones([2, 3, 8]), fw.ones([2, 4]))


def test_unsupported_dims_are_specialised_naming_the_op_and_dim():
    def zeros_root(x):  # the square root of a size: no polynomial, no derived symbol
        return fw.zeros([int(x.shape[0] ** 0.5), 3]) + x.sum()

    sf = fw.jit.to_static(zeros_root, input_spec=[InputSpec([None, 3])])
    with fw.no_grad(), pytest.warns(UserWarning, match=r"'op.full' attribute 'shape'\[0\].*s0_0"):
        out = sf(fw.ones([4, 3]))
    np.testing.assert_allclose(out.numpy(), np.full((2, 3), 12.0))


def test_unnamed_dims_that_must_be_equal_are_unified():
    def f(x, y):
        return x + y * 2.0

    sf = fw.jit.to_static(f, input_spec=[InputSpec([None, 8]), InputSpec([None, 8])])
    _one_program(sf, f, [[(n, 8), (n, 8)] for n in (3, 5, 1)])
    assert sf.programs[0].program.symbols() == ("s0_0",)
    with fw.no_grad(), pytest.raises(fw.OpArgumentError, match="symbol s0_0 is 3"):
        sf(fw.ones([3, 8]), fw.ones([4, 8]))


def test_product_dims_export_to_onnx(tmp_path):
    ort = pytest.importorskip("onnxruntime")

    def f(x):
        b, t = x.shape[0], x.shape[1]
        y = x.reshape([b * t, 8]) - x.mean()
        return y.reshape([b, t * 8]) * 2.0

    sf = fw.jit.to_static(f, input_spec=[InputSpec([None, None, 8], "float32", "x")])
    fw.onnx.export(sf, str(tmp_path / "f"))
    sess = ort.InferenceSession(str(tmp_path / "f.onnx"), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(3)
    for b, t in SIZES:
        a = rng.standard_normal((b, t, 8)).astype(np.float32)
        (got,) = sess.run(None, {"x": a})
        np.testing.assert_allclose(
            got, ((a.reshape(b * t, 8) - a.mean()) * 2).reshape(b, t * 8), rtol=1e-5, atol=1e-6
        )


@pytest.mark.parametrize(
    "make",
    [lambda: fw.nn.BatchNorm2D(3), lambda: fw.nn.GroupNorm(1, 3), lambda: fw.nn.InstanceNorm2D(3)],
    ids=["batch_norm", "group_norm", "instance_norm"],
)
def test_norm_layers_in_training_mode_over_dynamic_batch_and_height(make):
    fw.seed(0)
    m, ref = make(), make()
    ref.set_state_dict(m.state_dict())
    m.train(), ref.train()
    sm = fw.jit.to_static(m, input_spec=[InputSpec([None, 3, None, 4])])
    _one_program(sm.forward, ref, [[(b, 3, h, 4)] for b, h in SIZES], tol=2e-6)
    for k, v in ref.state_dict().items():  # running statistics (BatchNorm) updated alike
        np.testing.assert_allclose(m.state_dict()[k].numpy(), v.numpy(), rtol=1e-6, atol=1e-6)
