"""Autograd's version counters: a value saved for backward and then modified in place is refused
with an error naming the op, the tensor and both versions (as PyTorch and Paddle 3.3.1 do);
gradients that do not read the modified value stay right. Also the leaf checks of ``zero_`` and
``fill_`` and the post-accumulate-grad hooks and backward callbacks DataParallel builds on.

References are computed by hand (closed-form derivatives) and were checked against Paddle 3.3.1:
it raises for the same five modifications of ``b = a * a`` and gives 2.0 and 6.0 for the two
ops whose backward does not read ``a``."""

from __future__ import annotations

import math

import numpy as np
import pytest

import framework as fw
import framework.distributed as dist
from framework._src import autograd

MODIFY = {
    "add_": lambda a: a.add_(fw.to_tensor([100.0, 100.0], device=a.device)),
    "sqrt_": lambda a: a.sqrt_(),
    "__setitem__": lambda a: a.__setitem__(0, 5.0),
    "zero_": lambda a: a.zero_(),
    "fill_": lambda a: a.fill_(1.0),
    "set_value": lambda a: a.set_value(fw.to_tensor([1.0, 1.0], device=a.device)),
    "__iadd__": lambda a: a.__iadd__(1.0),
    "clip_": lambda a: a.clip_(0.0, 1.0),
}


def test_unmodified_square_has_the_closed_form_gradient(device):
    w = fw.to_tensor([2.0, 3.0], stop_gradient=False, device=device)
    a = w * 2
    (a * a).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), 8 * np.array([2.0, 3.0]))  # d(4w^2)/dw


@pytest.mark.parametrize("how", sorted(MODIFY))
def test_modified_saved_input_is_refused_naming_op_tensor_and_versions(how, device):
    w = fw.to_tensor([2.0, 3.0], stop_gradient=False, device=device)
    a = w * 2
    a.name = "act"
    b = a * a
    MODIFY[how](a)
    assert a._inplace_version() == 1
    with pytest.raises(fw.OarlockError) as err:
        b.sum().backward()
    msg = str(err.value)
    assert "modified by an inplace operation" in msg
    assert "of 'mul'" in msg and "'act', shape [2], float32" in msg
    assert f"is at version 1 (last by {how})" in msg and "saved it at version 0" in msg
    assert w.grad is None  # nothing was accumulated from a wrong value


def test_the_issue_example_raises_instead_of_408():
    w = fw.to_tensor(2.0, stop_gradient=False)
    a = w * 2
    b = a * a
    a.add_(fw.to_tensor(100.0))
    with pytest.raises(RuntimeError, match=r"input \d of 'mul' \(shape \[\], float32\) is at version 1"):
        b.sum().backward()


def test_modified_constant_input_is_refused_when_its_value_is_needed():
    w = fw.to_tensor(2.0, stop_gradient=False)
    c = fw.to_tensor(3.0)
    b = w * c  # d b / d w reads c
    c.add_(fw.to_tensor(100.0))
    with pytest.raises(fw.OarlockError, match=r"input 1 of 'mul' .* at version 1 \(last by add_\)"):
        b.backward()


@pytest.mark.parametrize(
    "use, want",
    [
        (lambda a: a + 1.0, 2.0),  # d(2w + 1)/dw; add's backward reads no value (Paddle: 2.0)
        (lambda a: a * 3.0, 6.0),  # d(6w)/dw (Paddle: 6.0)
        (lambda a: a.reshape([1]) * 3.0, 6.0),
    ],
)
def test_gradient_through_a_use_that_does_not_read_the_old_value_is_right(use, want):
    w = fw.to_tensor(2.0, stop_gradient=False)
    a = w * 2
    b = use(a)
    a.add_(fw.to_tensor(100.0))
    b.sum().backward()
    assert w.grad.item() == want


def test_constant_input_modified_after_use_without_its_value_read():
    w = fw.to_tensor(2.0, stop_gradient=False)
    c = fw.to_tensor(1.0)
    b = w + c
    c.add_(fw.to_tensor(100.0))
    b.backward()
    assert w.grad.item() == 1.0


def test_modified_output_keeps_its_value_for_the_rule():
    # exp's backward reads its output; the in-place update leaves the old value in the graph
    w = fw.to_tensor(2.0, stop_gradient=False)
    y = (w * 2).exp()
    y.add_(fw.to_tensor(1.0))
    y.backward()
    assert w.grad.item() == pytest.approx(2 * math.exp(4.0), rel=1e-6)


def test_set_value_of_a_used_output_is_refused_where_the_rule_reads_it():
    w = fw.to_tensor(2.0, stop_gradient=False)
    y = (w * 2).exp()
    y.set_value(fw.to_tensor(1.0))
    with pytest.raises(fw.OarlockError, match=r"output 0 of 'exp' .* version 1 \(last by set_value\)"):
        y.backward()


def test_modification_after_backward_is_fine():
    w = fw.to_tensor(2.0, stop_gradient=False)
    a = w * 2
    (a * a).backward()
    a.add_(fw.to_tensor(100.0))
    assert w.grad.item() == 16.0 and a.item() == 104.0


@pytest.mark.parametrize("how", ["zero_", "fill_", "add_", "__setitem__"])
def test_in_place_on_a_leaf_that_requires_grad_raises(how):
    w = fw.to_tensor([2.0, 3.0], stop_gradient=False)
    call = {
        "zero_": lambda: w.zero_(),
        "fill_": lambda: w.fill_(1.0),
        "add_": lambda: w.add_(fw.ones([2])),
        "__setitem__": lambda: w.__setitem__(0, 1.0),
    }[how]
    name = "setitem" if how == "__setitem__" else how
    with pytest.raises(
        fw.OpArgumentError, match=rf"\[{name}\] a leaf tensor that requires grad cannot be modified in place"
    ):
        call()
    assert w.tolist() == [2.0, 3.0] and w._inplace_version() == 0
    with fw.no_grad():
        call()
    assert w._inplace_version() == 1


@pytest.mark.parametrize("how", ["zero_", "fill_"])
def test_fill_of_a_non_leaf_stops_its_gradient(how):
    # Paddle 3.3.1: w.grad == [0, 0] for y = w * 2; y.zero_() (or fill_(5)); (y*y + y).sum()
    w = fw.to_tensor([2.0, 3.0], stop_gradient=False)
    y = w * 2
    y.zero_() if how == "zero_" else y.fill_(5.0)
    assert y.tolist() == ([0.0, 0.0] if how == "zero_" else [5.0, 5.0])
    (y * y + y).sum().backward()
    assert w.grad.tolist() == [0.0, 0.0]


def test_optimizer_step_bumps_versions_and_ordinary_training_still_works():
    fw.seed(0)
    lin = fw.nn.Sequential(fw.nn.Linear(3, 4), fw.nn.Tanh(), fw.nn.Linear(4, 1))
    opt = fw.optimizer.SGD(0.1, parameters=lin.parameters())
    x, y = fw.ones([4, 3]), fw.zeros([4, 1])
    losses = []
    for _ in range(3):
        loss = ((lin(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        opt.clear_grad()
        losses.append(loss.item())
    assert losses[2] < losses[1] < losses[0]
    assert [p._inplace_version() for p in lin.parameters()] == [3] * 4
    # a graph built before a step cannot be differentiated after it where the backward reads a
    # parameter (the second layer's weight, for the gradient of the hidden layer; PyTorch raises too)
    loss = ((lin(x) - y) ** 2).mean()
    loss.backward(retain_graph=True)
    opt.step()
    with pytest.raises(fw.OarlockError, match=r"of 'matmul' .* \(last by the optimizer's step\)"):
        loss.backward()


def test_post_accumulate_grad_hook_runs_once_with_the_summed_gradient():
    w = fw.to_tensor([1.0, 2.0], stop_gradient=False)
    u = fw.to_tensor([3.0], stop_gradient=False)
    seen = []
    hw = w.register_post_accumulate_grad_hook(lambda p: seen.append(("w", p.grad.tolist())))
    u.register_post_accumulate_grad_hook(lambda p: seen.append(("u", p.grad.tolist())))
    loss = (w * w).sum() * u + (w * 3).sum()  # w used three times
    loss.sum().backward(retain_graph=True)
    # d/dw = 2*w*u + 3, d/du = sum(w^2)
    assert sorted(seen) == [("u", [5.0]), ("w", [9.0, 15.0])]
    seen.clear()
    fw.grad(loss.sum(), [w])  # accumulates nothing: no hook
    assert seen == []
    hw.remove()
    (w * u).sum().backward()
    assert seen == [("u", [8.0])]  # 5 + (1 + 2), accumulated on top of the first backward


def test_post_accumulate_grad_hook_runs_before_backward_callbacks_and_rejects_non_leaves():
    w = fw.to_tensor([1.0], stop_gradient=False)
    order = []

    def hook(p):
        order.append("hook")
        autograd.queue_callback(lambda: order.append("end"))

    w.register_post_accumulate_grad_hook(hook)
    (w * 2).sum().backward()
    assert order == ["hook", "end"]
    with pytest.raises(
        fw.OpArgumentError, match=r"\[register_post_accumulate_grad_hook\] the tensor must be a leaf"
    ):
        (w * 2).register_post_accumulate_grad_hook(hook)
    with pytest.raises(fw.OpArgumentError, match=r"\[queue_callback\] no backward pass is running"):
        autograd.queue_callback(lambda: None)


def test_constant_that_joins_the_graph_in_place_gets_no_gradient_for_its_old_use():
    w = fw.to_tensor(2.0, stop_gradient=False)
    c = fw.to_tensor(3.0)
    b = w + c  # c was a constant here
    c.add_(w)  # now c is in the graph
    (b + c).backward()  # d(w + 3 + (3 + w))/dw = 2
    assert w.grad.item() == 2.0


def test_versions_count_every_modification_and_other_tensors_edits_do_not_matter():
    w = fw.to_tensor([2.0, 3.0], stop_gradient=False)
    a = w * 2
    a.add_(fw.ones([2]))  # version 1, before its use: fine
    other = fw.zeros([2])
    b = a * a
    other.add_(fw.ones([2]))  # the clock moves on, a does not change
    (a * 1.0).sum().backward(retain_graph=True)
    np.testing.assert_allclose(w.grad.numpy(), [2.0, 2.0])
    a.multiply_(fw.ones([2]))
    a.sqrt_()
    with pytest.raises(
        fw.OarlockError, match=r"is at version 3 \(last by sqrt_\), but 'mul' saved it at version 1"
    ):
        b.sum().backward()


@pytest.mark.parametrize("fused", [True, False])
def test_view_of_a_parameter_saved_before_an_optimizer_step(fused):
    lin = fw.nn.Linear(2, 2)
    opt = fw.optimizer.SGD(0.5, parameters=lin.parameters(), fused=fused)
    v = lin.weight.reshape([4])  # shares the weight's storage
    loss = (v * v).sum()
    loss.backward(retain_graph=True)
    first = lin.weight.grad.numpy()
    np.testing.assert_allclose(first.ravel(), 2 * v.numpy())
    before = v.numpy()
    opt.step()
    opt.clear_grad()
    # the step writes the weight (in place, or fused): the view sees the new values, so the
    # graph that saved the view's old values refuses to differentiate through them
    np.testing.assert_allclose(v.numpy(), lin.weight.numpy().ravel())
    np.testing.assert_allclose(v.numpy(), before - 0.5 * first.ravel())  # SGD, lr 0.5
    assert v._inplace_version() == lin.weight._inplace_version() == 1
    with pytest.raises(fw.OarlockError, match=r"input \d of 'mul' \(shape \[4\], float32\)"):
        loss.backward()


def test_input_reshaped_in_place_after_use_keeps_its_old_shape_for_the_rule():
    w = fw.to_tensor([[1.0], [2.0], [3.0]], stop_gradient=False)
    a = w * 2  # shape [3, 1]
    b = a + fw.ones([3, 2])  # broadcast: add's rule sums the gradient back to a's shape [3, 1]
    a.reshape_([1, 3])
    b.sum().backward()
    assert w.grad.tolist() == [[4.0], [4.0], [4.0]]  # d(sum over 2 columns of 2w)/dw


def test_a_collective_that_writes_a_saved_tensor_in_place_is_caught():
    """``dist.all_reduce`` writes its tensor in place: a backward that saved it before raises
    (here in a world of one, where the value happens not to change)."""
    w = fw.to_tensor(2.0, stop_gradient=False)
    a = w * 2
    b = a * a
    dist.all_reduce(a)
    assert a._inplace_version() == 1
    with pytest.raises(RuntimeError, match=r"modified by an inplace operation.*distributed\.all_reduce"):
        b.backward()


def test_set_state_dict_copies_so_a_step_on_one_model_leaves_the_other_alone():
    """``m2.set_state_dict(m1.state_dict())`` copies the values (Paddle does): an optimizer's
    in-place step on ``m1`` must not change ``m2``."""
    m1, m2 = fw.nn.Linear(2, 2), fw.nn.Linear(2, 2)
    m2.set_state_dict(m1.state_dict())
    before = m2.weight.numpy().copy()
    opt = fw.optimizer.SGD(learning_rate=0.1, parameters=m1.parameters())
    m1(fw.ones([1, 2])).sum().backward()
    opt.step()
    np.testing.assert_array_equal(m2.weight.numpy(), before)
    assert not np.array_equal(m1.weight.numpy(), before)
