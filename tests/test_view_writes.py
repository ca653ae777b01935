"""Writes through views reach the tensor they view, and the other views of it (issue 40).

Values are compared with real Paddle 3.3.1 (the same snippet under ``paddle`` and under
Oarlock), gradients with PyTorch (torch's ``copy_slices`` semantics) or, where torch refuses a
case Oarlock differentiates, with finite differences. Every case runs on every device.
"""

from __future__ import annotations

import numpy as np
import pytest

import framework as fw

RNG = np.random.default_rng(40)
A = RNG.standard_normal((2, 3)).astype(np.float32)
ROWS = RNG.standard_normal((4, 3)).astype(np.float32)
CPLX = np.array([1 + 2j, 3 - 4j], np.complex64)


def _in_place_call(P, name, *args):
    """``P.<name>(*args)``: Paddle's in-place function forms (``paddle.tanh_``)."""
    return getattr(P, name)(*args)


# Each case: fn(P, T) -> tensors to compare after the writes; T makes a tensor from an array.
VALUE_CASES = {
    "reshape_setitem": lambda P, T: (lambda x: (x.reshape([6]).__setitem__(0, 5.0), x)[1])(T(A)),
    "reshape_setitem_seen_by_the_view": lambda P, T: _setitem_both(T(A)),
    "flatten_add_": lambda P, T: (lambda x: (x.flatten().add_(T(np.ones(6, np.float32))), x)[1])(T(A)),
    "unsqueeze_zero_": lambda P, T: (lambda x: (x.unsqueeze(0).zero_(), x)[1])(T(A)),
    "squeeze_fill_": lambda P, T: (lambda x: (x.squeeze(1).fill_(3.0), x)[1])(T(A.reshape(2, 1, 3))),
    "view_scale_": lambda P, T: (lambda x: (x.view([3, 2]).scale_(3.0), x)[1])(T(A)),
    "detach_clip_": lambda P, T: (lambda x: (x.detach().clip_(-0.5, 0.5), x)[1])(T(A)),
    "reshape_copy_": lambda P, T: (
        lambda x: (x.reshape([6]).copy_(T(np.arange(6, dtype=np.float32)), True), x)[1]
    )(T(A)),
    "reshape_mask_setitem": lambda P, T: _mask_write(T(np.arange(6, dtype=np.float32))),
    "base_add_seen_by_views": lambda P, T: _base_write(P, T),
    "base_setitem_seen_by_unsqueeze": lambda P, T: _base_setitem(T(A)),
    "base_set_value_seen_by_view": lambda P, T: _base_set_value(T(A)),
    "sibling_views": lambda P, T: _siblings(T(A)),
    "view_of_a_view": lambda P, T: _chained(T(A)),
    "two_writes": lambda P, T: _two_writes(P, T),
    "unbind_row_add_": lambda P, T: (lambda x: (x.unbind(0)[1].add_(T(np.ones(3, np.float32))), x)[1])(
        T(ROWS)
    ),
    "split_parts_do_not_write": lambda P, T: (
        lambda x: (P.split(x, 2)[0].add_(T(np.ones((2, 3), np.float32))), x)[1]
    )(T(ROWS)),
    "in_place_function_form": lambda P, T: (lambda x: (_in_place_call(P, "tanh_", x.reshape([6])), x)[1])(
        T(A)
    ),
    "as_real_add_": lambda P, T: (lambda z: (P.as_real(z).add_(T(np.ones((2, 2), np.float32))), z)[1])(
        T(CPLX)
    ),
    "versions": lambda P, T: _versions(T(A)),
    "reshape__of_a_view_keeps_viewing": lambda P, T: _reshape_in_place(T),
    "squeeze__of_a_view_keeps_viewing": lambda P, T: _squeeze_in_place(T),
    "assign_output_view": lambda P, T: (
        lambda x: (P.assign(T(np.zeros(6, np.float32)), output=x.reshape([6])), x)[1]
    )(T(A)),
}


def _reshape_in_place(T):
    x = T(A)
    y = x.reshape([6])
    y.reshape_([3, 2])
    y.add_(T(np.ones((3, 2), np.float32)))
    return [x, y]


def _squeeze_in_place(T):
    x = T(A)
    y = x.unsqueeze(0)
    y.squeeze_(0)
    y.add_(T(np.ones((2, 3), np.float32)))
    return [x, y]


def _setitem_both(x):
    y = x.reshape([6])
    y[4] = -2.0
    return [x, y]


def _mask_write(x):
    y = x.reshape([2, 3])
    y[y > 2] = 0.0
    return [x, y]


def _base_write(P, T):
    x = T(A)
    y, u = x.reshape([6]), x.unsqueeze(0)
    x.add_(T(np.ones((2, 3), np.float32)))
    return [x, y, u]


def _base_setitem(x):
    u = x.unsqueeze(0)
    x[0, 1] = 4.0
    return [u]


def _base_set_value(x):
    y = x.reshape([6])
    x.set_value(np.zeros((2, 3), np.float32))
    return [y]


def _siblings(x):
    y, z = x.reshape([6]), x.reshape([3, 2])
    y[1] = 9.0
    return [x, z]


def _chained(x):
    z = x.reshape([6]).reshape([3, 2]).unsqueeze(0)
    z[0, 0, 0] = 4.0
    return [x]


def _two_writes(P, T):
    x = T(A)
    y = x.flatten()
    y.scale_(2.0)
    x.unsqueeze(0).add_(T(np.ones((1, 2, 3), np.float32)))
    return [x, y]


def _versions(x):
    y, z = x.reshape([6]), x.reshape([3, 2])
    y[1] = 9.0
    z.add_(z)
    return [np.array([x._inplace_version(), y._inplace_version(), z._inplace_version()])]


def _host(values):
    out = []
    for v in values if isinstance(values, list) else [values]:
        out.append(np.asarray(v if isinstance(v, np.ndarray) else v.numpy()))
    return out


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("case", sorted(VALUE_CASES))
def test_values_after_writes_through_views_match_paddle(device, case):
    paddle = pytest.importorskip(
        "paddle", reason="real Paddle (the oracle) is not installed: pip install paddlepaddle"
    )
    want = _host(VALUE_CASES[case](paddle, paddle.to_tensor))
    got = _host(VALUE_CASES[case](fw, lambda a: fw.to_tensor(a, device=device)))
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        assert g.shape == w.shape, f"{case}[{i}]: shape {g.shape}, Paddle {w.shape}"
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6, err_msg=f"{case}[{i}]")


def test_in_place_add_operator_writes_through_as_in_pytorch(device):
    """``y += 2`` is in place here (as PyTorch's; Paddle's makes a new tensor): it reaches x."""
    x = fw.to_tensor(A, device=device)
    y = x.reshape([6])
    same = y
    y += 2.0
    assert y is same
    np.testing.assert_allclose(x.numpy(), A + 2.0)


@pytest.mark.parametrize(
    "name, args, want",
    [("add_", (1.0,), A + 1), ("clip_", (0.0, 0.5), np.clip(A, 0, 0.5)), ("scale_", (3.0,), A * 3)],
)
def test_in_place_function_forms_write_through(device, name, args, want):
    """``fw.add_(y, ...)`` (Paddle has no ``paddle.add_``; its Tensor method is the same)."""
    x = fw.to_tensor(A, device=device)
    y = x.reshape([6])
    extra = [fw.full([6], a, device=device) for a in args] if name == "add_" else list(args)
    getattr(fw, name)(y, *extra)
    np.testing.assert_allclose(x.numpy(), want, rtol=1e-6)


def test_a_tensor_with_no_view_is_rebound_alone(device):
    x = fw.to_tensor(A, device=device)
    c = fw.to_tensor(A, device=device)
    x.add_(fw.ones([2, 3], device=device))
    np.testing.assert_allclose(x.numpy(), A + 1)
    np.testing.assert_allclose(c.numpy(), A)
    assert x._base is None and x._views is None


def test_a_view_whose_base_moved_away_keeps_its_storage(device):
    """``Layer.to`` replaces a parameter's storage outright: a view taken before keeps the old
    storage, and writing through it leaves the parameter alone."""
    lin = fw.nn.Linear(2, 3)
    lin.to(device)
    v = lin.weight.reshape([-1])
    lin.to(dtype="float64")
    w = lin.weight.numpy().copy()
    with fw.no_grad():
        v.zero_()
    np.testing.assert_array_equal(lin.weight.numpy(), w)
    assert not v.numpy().any()


# -- autograd ---------------------------------------------------------------------------------
# Each case: fn(M, a) -> a scalar; M is framework or torch (their in-place names differ).
def _mul_(M, t, v):
    return t.multiply_(v) if M is fw else t.mul_(v)


GRAD_CASES = {
    "a_view_multiplied_by_itself_is_refused": lambda M, a: _self_product(M, a),
    "view_mul_then_base": lambda M, a: (lambda b: (_mul_(M, b.reshape([6]), 3.0), b.sum())[1])(a * 2),
    "view_mul_self_then_both": lambda M, a: _view_square(M, a),
    "view_add_of_a_base_use": lambda M, a: _view_add_dep(M, a),
    "view_zero_": lambda M, a: (lambda b: (b.reshape([6]).zero_(), (b * a).sum())[1])(a * 2),
    "view_setitem": lambda M, a: (lambda b: (b.reshape([6]).__setitem__(2, 7.0), (b * b).sum())[1])(a * 2),
    "sibling_view": lambda M, a: _sibling_grad(M, a),
    "two_writes": lambda M, a: _two_writes_grad(M, a),
    "view_used_before_base_write": lambda M, a: _used_before(M, a),
    "no_grad_write_through_view": lambda M, a: _no_grad_write(M, a),
    "detach_write_is_invisible": lambda M, a: (lambda b: (_mul_(M, b.detach(), 3.0), (b * a).sum())[1])(
        a * 2
    ),
    "copy_from_a_graph": lambda M, a: (
        lambda b: (b.reshape([6]).copy_((a * a).reshape([6])), (b * 3).sum())[1]
    )(a * 2),
    "uniform_cuts_the_old_value": lambda M, a: (lambda b: (b.uniform_(), (b * 0 + b).sum())[1])(a * 2),
    "base_write_reaches_view_use": lambda M, a: _base_write_grad(M, a),
}


def _view_square(M, a):
    b = a * 2
    v = b.reshape([6])
    _mul_(M, v, a.reshape([6]))
    return (v * v).sum() + (b * b).sum()


def _self_product(M, a):
    """``v *= v`` saves ``v`` as mul's other input: both libraries refuse (checked below)."""
    b = a * 2
    v = b.reshape([6])
    _mul_(M, v, v)
    return b.sum()


def _view_add_dep(M, a):
    b = a * 2
    c = b * 5
    b.reshape([6]).add_(c.reshape([6]))
    return (b * b).sum()


def _sibling_grad(M, a):
    b = a * 2
    v, w = b.flatten(), b.reshape([3, 2])
    _mul_(M, v, a.flatten())
    return (w * w * a.reshape([3, 2])).sum()


def _two_writes_grad(M, a):
    b = a * 2
    v = b.reshape([6])
    _mul_(M, v, a.reshape([6]))
    v.add_(a.reshape([6]) * 3)
    return b.exp().sum()


def _used_before(M, a):
    b = a * 2
    c = b.reshape([6]) * 3  # mul's rule does not read the view
    b.add_(a)
    return c.sum() + (b * b).sum()


def _no_grad_write(M, a):
    b = a * 2
    with M.no_grad():
        b.reshape([6]).zero_()
    return (b * a).sum()


def _base_write_grad(M, a):
    b = a * 1
    v = b.unsqueeze(0)
    _mul_(M, b, a)
    return (v * v).sum()


def _grad_torch(case):
    torch = pytest.importorskip("torch", reason="PyTorch (the autograd oracle) is not installed")
    ta = torch.tensor(A, requires_grad=True)
    torch.manual_seed(0)
    GRAD_CASES[case](torch, ta).backward()
    return ta.grad.numpy()


@pytest.mark.parametrize("case", sorted(GRAD_CASES))
def test_gradients_through_writes_to_views_match_pytorch(device, case):
    a = fw.to_tensor(A, device=device, stop_gradient=False)
    if case.endswith("_is_refused"):
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            _grad_torch(case)
        with pytest.raises(fw.OarlockError, match=r"modified by an inplace operation: input 1 of 'mul'"):
            GRAD_CASES[case](fw, a).backward()
        return
    want = _grad_torch(case)
    GRAD_CASES[case](fw, a).backward()
    np.testing.assert_allclose(a.grad.numpy(), want, rtol=1e-5, atol=1e-5)


def _finite_differences(fn, x, eps=1e-6):
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[i] = eps
        g[i] = (fn(x + d) - fn(x - d)) / (2 * eps)
    return g


FD_CASES = {
    # torch refuses: exp saved its output, which the write changes (Oarlock keeps the old value)
    "write_into_a_saved_output": lambda a: (
        lambda b: (b.unsqueeze(0).multiply_(a.unsqueeze(0)), (b * 3).sum())[1]
    )(a.exp()),
    # torch refuses in-place writes to the outputs of unbind (several views of one call)
    "unbind_row_write": lambda a: (lambda b: (b.unbind(0)[1].multiply_(a[0]), (b * b).sum())[1])(a * 1),
    "as_real_write": lambda a: _as_real_write(a),
}


def _as_real_write(a):
    z = fw.as_complex(a.reshape([3, 2]) * 1)
    fw.as_real(z).multiply_(a.reshape([3, 2]))
    return (fw.abs(z) ** 2).sum()


@pytest.mark.parametrize("case", sorted(FD_CASES))
def test_gradients_through_writes_to_views_match_finite_differences(case):
    x = A.astype(np.float64)

    def value(arr):
        return FD_CASES[case](fw.to_tensor(arr)).item()

    a = fw.to_tensor(x, stop_gradient=False)
    FD_CASES[case](a).backward()
    np.testing.assert_allclose(a.grad.numpy(), _finite_differences(value, x), rtol=1e-5, atol=1e-6)


def test_a_saved_view_or_base_changed_through_another_raises_the_version_error(device):
    a = fw.to_tensor(A, device=device, stop_gradient=False)
    b = a * 2
    c = b.reshape([6]).sin()  # sin saves the view
    b.add_(fw.ones([2, 3], device=device))
    with pytest.raises(fw.OarlockError, match=r"modified by an inplace operation: input 0 of 'sin'.*add_"):
        c.sum().backward()
    b = a * 2
    c = b.sin()  # sin saves the base
    b.unsqueeze(0).zero_()
    with pytest.raises(fw.OarlockError, match=r"input 0 of 'sin'.*version 1 \(last by zero_\)"):
        c.sum().backward()
    b = a * 1
    rows = b.unbind(0)
    rows[1].multiply_(rows[0])  # mul saves row 0, a view of b that the write changed
    with pytest.raises(fw.OarlockError, match=r"input 1 of 'mul' \(shape \[3\], float32\) is at version 1"):
        b.sum().backward()


def test_a_recorded_write_through_a_view_of_a_parameter_raises(device):
    w = fw.to_tensor(A, device=device, stop_gradient=False)
    with pytest.raises(fw.OarlockError, match=r"\[add_\] a view of a leaf tensor that requires grad"):
        w.reshape([6]).add_(fw.ones([6], device=device))
    np.testing.assert_array_equal(w.numpy(), A)
    with fw.no_grad():  # as an optimizer does
        w.reshape([6]).add_(fw.ones([6], device=device))
    np.testing.assert_allclose(w.numpy(), A + 1)


def test_a_write_bumps_the_versions_of_the_base_and_every_view(device):
    x = fw.to_tensor(A, device=device)
    y, z, d = x.reshape([6]), x.unsqueeze(0), x.detach()
    y[0] = 1.0
    assert [t._inplace_version() for t in (x, y, z, d)] == [1, 1, 1, 1]
    d.zero_()
    assert [t._inplace_version() for t in (x, y, z, d)] == [2, 2, 2, 2]
    assert not z.numpy().any()


@pytest.mark.parametrize("fused", [True, False])
def test_a_view_of_a_parameter_sees_the_optimizer_step(device, fused):
    lin = fw.nn.Linear(3, 2)
    lin.to(device)
    opt = fw.optimizer.SGD(0.1, parameters=lin.parameters(), fused=fused)
    v = lin.weight.reshape([6])
    lin(fw.to_tensor(A, device=device)).sum().backward()
    want = lin.weight.numpy() - 0.1 * lin.weight.grad.numpy()
    opt.step()
    np.testing.assert_allclose(v.numpy(), want.ravel(), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(lin.weight.numpy(), want, rtol=1e-6, atol=1e-6)


def test_copy_refuses_another_dtype_naming_both():
    x = fw.zeros([3])
    with pytest.raises(fw.OarlockError, match=r"\[copy_\] src has dtype int64, the tensor float32"):
        x.copy_(fw.to_tensor([1, 2, 3]))


def test_a_detached_view_does_not_keep_the_graph_of_its_base_alive():
    """``outs.append(y.detach())`` must not hold y's graph (as before detach() shared storage):
    a detach() view of a tensor in a graph holds its base weakly; writes reach it while it lives."""
    import gc
    import weakref

    a = fw.to_tensor(A, stop_gradient=False)
    b = a * 2
    node = weakref.ref(b._node)
    d = b.detach()
    d[0, 0] = 7.0
    assert b.numpy()[0, 0] == 7.0 and not b.stop_gradient
    del b
    gc.collect()
    assert node() is None
    d[0, 1] = 8.0  # its base is gone: it is a tensor of its own
    np.testing.assert_allclose(d.numpy()[0, :2], [7.0, 8.0])


def test_a_detached_view_follows_a_recorded_write_without_joining_the_graph(device):
    torch = pytest.importorskip("torch", reason="PyTorch (the autograd oracle) is not installed")
    ta = torch.tensor(A, requires_grad=True)
    tb = ta * 2
    td = tb.detach()
    tb.view(6).mul_(ta.view(6))
    (tb * ta).sum().backward()
    a = fw.to_tensor(A, device=device, stop_gradient=False)
    b = a * 2
    d = b.detach()
    b.reshape([6]).multiply_(a.reshape([6]))
    (b * a).sum().backward()
    np.testing.assert_allclose(d.numpy(), td.numpy(), rtol=1e-6)
    assert d.stop_gradient and d._node is None
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-5)


def test_a_view_of_a_buffer_follows_the_writes_of_a_static_program():
    """A BatchNorm's running mean changed by a to_static program (written back after each run):
    a view of it taken before sees each new value, as it does eagerly; the views the traces
    made of it add no outputs to the program (one program serves every batch size)."""
    fw.seed(0)
    m, ref = fw.nn.BatchNorm2D(3), fw.nn.BatchNorm2D(3)
    m.train(), ref.train()
    v = m._mean.reshape([1, 3])
    sm = fw.jit.to_static(m, input_spec=[fw.static.InputSpec([None, 3, 4, 4])])
    rng = np.random.default_rng(0)
    for b in (2, 3, 5):
        x = rng.standard_normal((b, 3, 4, 4)).astype(np.float32)
        np.testing.assert_allclose(
            sm(fw.to_tensor(x)).numpy(), ref(fw.to_tensor(x)).numpy(), rtol=1e-5, atol=1e-6
        )
        np.testing.assert_allclose(v.numpy(), ref._mean.numpy().reshape(1, 3), rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(v.numpy(), m._mean.numpy().reshape(1, 3))


def test_a_detached_tensor_keeps_only_the_storage_it_views():
    """PyTorch's rule: ``detach()`` shares the storage, and holds neither the tensor it came
    from nor any graph. A detached leaf kept its base alive (a parameter and its gradient: the
    ZeRO 3 peak grew by the whole parameters), and with it the graph the base joined later by
    an in-place update. Writes still reach the base while it lives."""
    import gc
    import weakref

    torch = pytest.importorskip("torch", reason="PyTorch (the oracle) is not installed")
    p = fw.create_parameter([256, 64], "float32")
    (p * 2.0).sum().backward()
    gone, grad = weakref.ref(p), weakref.ref(p.grad)
    d = p.detach()
    with fw.no_grad():
        d[0, 0] = 5.0
    assert p.numpy()[0, 0] == 5.0  # a write through it reaches the base while the base lives
    del p
    gc.collect()
    assert gone() is None and grad() is None  # the parameter and its gradient are freed
    np.testing.assert_array_equal(d.numpy()[0, 0], 5.0)  # its storage is its own now
    d[0, 1] = 6.0
    assert d.numpy()[0, 1] == 6.0

    # a plain tensor that joins a graph after it was detached: the graph is not held by d
    w = fw.to_tensor(A, stop_gradient=False)
    x = fw.to_tensor(A)
    d = x.detach()
    x.multiply_(w)  # x now has a node whose graph reads w
    node, base = weakref.ref(x._node), weakref.ref(x)
    tx, tw = torch.tensor(A), torch.tensor(A, requires_grad=True)
    td = tx.detach()
    tx.mul_(tw)
    np.testing.assert_allclose(d.numpy(), td.numpy())  # the write reached it, as in PyTorch
    del x
    gc.collect()
    assert node() is None and base() is None
    assert d._node is None and d.stop_gradient
