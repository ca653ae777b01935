"""Bad input gets an error naming the op, the argument, what was expected and what came."""

from __future__ import annotations

import types

import numpy as np
import pytest

import framework as fw

CASES = [
    # (callable, error type, message regex)
    (
        lambda d: fw.matmul(fw.ones([3, 4], device=d), fw.ones([5, 6], device=d)),
        fw.OpArgumentError,
        r"\[matmul\] shapes \(3, 4\) and \(5, 6\) do not match: 4 != 5",
    ),
    (
        lambda d: fw.matmul(fw.ones([], device=d), fw.ones([3], device=d)),
        fw.OpArgumentError,
        r"\[matmul\] both operands need at least 1 dimension",
    ),
    (
        lambda d: fw.ones([2, 3], device=d) + fw.ones([4], device=d),
        fw.OpArgumentError,
        r"\[add\] shapes \(2, 3\) and \(4,\) cannot be broadcast: dimension -1 is 3 vs 4",
    ),
    (
        lambda d: fw.ones([2, 3], device=d).reshape([4, 2]),
        fw.OpArgumentError,
        r"\[reshape\] cannot reshape \(2, 3\) \(6 elements\) into \(4, 2\)",
    ),
    (
        lambda d: fw.ones([2, 3], device=d).reshape([-1, -1]),
        fw.OpArgumentError,
        r"\[reshape\] only one dimension can be -1",
    ),
    (
        lambda d: fw.ones([2, 3], device=d).sum(axis=2),
        fw.OpArgumentError,
        r"\[sum\] axis 2 is out of range for a tensor with 2 dimensions",
    ),
    (
        lambda d: fw.ones([2, 3], device=d).mean(axis=(0, 0)),
        fw.OpArgumentError,
        r"\[mean\] axis 0 appears twice",
    ),
    (
        lambda d: fw.ones([2, 3], device=d).transpose([0, 0]),
        fw.OpArgumentError,
        r"\[transpose\] perm \(0, 0\) is not a permutation",
    ),
    (
        lambda d: fw.ones([3], device=d)[3],
        IndexError,
        r"\[getitem\] index 3 is out of bounds for axis 0 with size 3",
    ),
    (
        lambda d: fw.ones([3], device=d)[0, 1],
        IndexError,
        r"\[getitem\] too many indices for a tensor of shape \(3,\)",
    ),
    (
        lambda d: fw.ones([3], device=d)[fw.to_tensor([0, 5], device=d)],
        IndexError,
        r"\[getitem\] index 5 is out of bounds",
    ),
    (
        lambda d: fw.gather(fw.ones([3, 2], device=d), fw.to_tensor([0, 7], device=d)),
        fw.OpArgumentError,
        r"\[gather\] index 7 (is )?out of range for axis 0 of size 3",
    ),
    (
        lambda d: fw.gather(fw.ones([3, 2], device=d), fw.to_tensor([0.5], device=d)),
        fw.OpArgumentError,
        r"\[gather\] index must hold integers, got dtype float32",
    ),
    (
        lambda d: fw.gather(fw.ones([3, 2], device=d), fw.to_tensor([0]), axis=4),
        fw.OpArgumentError,
        r"\[gather\] axis 4 is out of range",
    ),
    (
        lambda d: fw.concat([fw.ones([2, 3], device=d), fw.ones([2, 4], device=d)], axis=0),
        fw.OpArgumentError,
        r"\[concat\] tensor 1 has shape \(2, 4\), but tensor 0 has \(2, 3\); all sizes but axis 0 must match",
    ),
    (lambda d: fw.stack([], axis=0), fw.OpArgumentError, r"\[stack\] expected a non-empty list"),
    (
        lambda d: fw.ones([2], dtype="complex256", device=d),
        fw.OpArgumentError,
        r"\[ones\] unsupported dtype 'complex256'; expected one of",
    ),
    (
        lambda d: fw.to_tensor([[1, 2], [3]], device=d),
        fw.OpArgumentError,
        r"\[to_tensor\] data is not a regular \(rectangular\) nested list",
    ),
    (
        lambda d: fw.to_tensor(["a", "b"], device=d),
        fw.OpArgumentError,
        r"\[to_tensor\] cannot make a tensor from list holding <U1 values",
    ),
    (
        lambda d: fw.zeros([2, -1], device=d),
        fw.OpArgumentError,
        r"\[zeros\] shape must hold non-negative ints, got \(2, -1\)",
    ),
    (lambda d: fw.zeros([2.5], device=d), fw.OpArgumentError, r"\[zeros\] shape must hold non-negative ints"),
    (lambda d: fw.arange(0, 5, 0, device=d), fw.OpArgumentError, r"\[arange\] step must not be 0"),
    (lambda d: fw.ones([2], device=d).item(), fw.OpArgumentError, r"\[item\] only a tensor with one element"),
    (
        lambda d: bool(fw.ones([2], device=d)),
        fw.OpArgumentError,
        r"\[bool\] the truth value of a tensor with 2 elements is ambiguous",
    ),
    (
        lambda d: fw.ones([2, 0], device=d).max(axis=1),
        fw.OpArgumentError,
        r"\[max\] cannot reduce over an empty dimension",
    ),
    (
        lambda d: fw.argmax(fw.ones([0], device=d)),
        fw.OpArgumentError,
        r"\[argmax\] cannot take argmax of an empty tensor",
    ),
    (
        lambda d: fw.ones([2], dtype="bool", device=d) - fw.ones([2], dtype="bool", device=d),
        fw.KernelNotFoundError,
        r"\[sub\] no kernel for dtype bool",
    ),
    (lambda d: fw.exp("x"), fw.OpArgumentError, r"\[exp\] expected a Tensor, got str"),
    (
        lambda d: fw.ones([2], device=d) + "x",
        fw.OpArgumentError,
        r"\[add\] expected a Tensor or a number, got str",
    ),
    (
        lambda d: fw.full([2], 300, dtype="uint8", device=d),
        fw.OpArgumentError,
        r"\[full\] value 300 does not fit in uint8 \(0..255\)",
    ),
    (
        lambda d: fw.ones([2], device=d).expand([3, 3]),
        fw.OpArgumentError,
        r"\[expand\] cannot expand \(2,\) to \(3, 3\): dimension 1 is 2",
    ),
    (
        lambda d: fw.split(fw.ones([5], device=d), 2),
        fw.OpArgumentError,
        r"\[split\] cannot split size 5 of axis 0 into 2 equal parts",
    ),
    (lambda d: fw.pad(fw.ones([2], device=d), [1]), fw.OpArgumentError, r"\[pad\] pad must hold pairs"),
    (
        lambda d: fw.set_device("gpu:5"),
        fw.DeviceError,
        r"\[device\] 'gpu:5' does not exist: \d+ GPU\(s\) found",
    ),
    (
        lambda d: fw.set_device(3),
        fw.DeviceError,
        r"\[device\] expected a device name such as 'cpu' or 'opencl:0', got int 3",
    ),
    (lambda d: fw.seed("abc"), fw.OpArgumentError, r"\[seed\] expected an int, got str"),
    (
        lambda d: fw.randint(5, 2),
        fw.OpArgumentError,
        r"\[randint\] high \(2\) must be greater than low \(5\)",
    ),
    (
        lambda d: __import__("framework.nn.functional", fromlist=["x"]).cross_entropy(
            fw.ones([2, 3], device=d), fw.to_tensor([0, 5], device=d)
        ),
        fw.OpArgumentError,
        r"\[cross_entropy\] a label is out of range for 3 classes .*labels must be in \[0, 3\) or equal ignore_index \(-100\)",
    ),
    # index == size: the first value past the end, for every bounds check
    (
        lambda d: fw.gather(fw.ones([3, 2], device=d), fw.to_tensor([0, 3], device=d)),
        fw.OpArgumentError,
        r"\[gather\] index 3 (is )?out of range for axis 0 of size 3",
    ),
    (
        lambda d: fw.scatter(fw.zeros([3], device=d), fw.to_tensor([3], device=d), fw.ones([1], device=d)),
        fw.OpArgumentError,
        r"\[scatter\] index 3 (is )?out of range for axis 0 of size 3",
    ),
    (
        lambda d: fw.scatter_add(
            fw.zeros([3], device=d), fw.to_tensor([3], device=d), fw.ones([1], device=d)
        ),
        fw.OpArgumentError,
        r"\[scatter_add\] index 3 (is )?out of range for axis 0 of size 3",
    ),
    (
        lambda d: _F().embedding(fw.to_tensor([0, 4], device=d), fw.ones([4, 2], device=d)),
        fw.OpArgumentError,
        r"index 4 (is )?out of range for axis 0 of size 4",
    ),
    (
        lambda d: fw.ones([3, 2], device=d)[fw.to_tensor([3], device=d)],
        IndexError,
        r"\[getitem\] index 3 is out of bounds",
    ),
    (
        lambda d: _F().cross_entropy(fw.ones([2, 3], device=d), fw.to_tensor([0, 3], device=d)),
        fw.OpArgumentError,
        r"\[cross_entropy\] a label is out of range for 3 classes",
    ),
    (
        lambda d: _F().nll_loss(fw.ones([2, 3], device=d), fw.to_tensor([3, 0], device=d)),
        fw.OpArgumentError,
        r"\[nll_loss\] a label is out of range for 3 classes",
    ),
    # issue 18: silent wrong answers and leaking foreign errors
    (
        lambda d: fw.take_along_axis(
            fw.arange(6, device=d).reshape([2, 3]), fw.to_tensor([[0, 5], [0, 1]], device=d), axis=1
        ),
        IndexError,
        r"\[take_along_axis\] indices along axis 1 \(size 3\) must be in \[-3, 3\)",
    ),
    (
        lambda d: fw.take_along_axis(
            fw.arange(6, device=d).reshape([2, 3]), fw.to_tensor([[0, 3], [0, 1]], device=d), axis=1
        ),
        IndexError,
        r"\[take_along_axis\] indices along axis 1 \(size 3\) must be in \[-3, 3\)",
    ),  # index == size
    (
        lambda d: fw.take_along_axis(
            fw.arange(6, device=d).reshape([2, 3]), fw.to_tensor([[0], [1], [2]], device=d), axis=1
        ),
        fw.OpArgumentError,
        r"\[take_along_axis\] indices have shape \(3, 1\) but x has \(2, 3\)",
    ),
    (
        lambda d: fw.put_along_axis(
            fw.zeros([2, 3], device=d), fw.to_tensor([[3], [0]], device=d), 1.0, axis=1
        ),
        IndexError,
        r"\[put_along_axis\] indices along axis 1 \(size 3\) must be in \[-3, 3\)",
    ),
    (
        lambda d: fw.put_along_axis(
            fw.zeros([2, 3], device=d), fw.to_tensor([[0], [0]], device=d), 1.0, axis=1, reduce="median"
        ),
        fw.OpArgumentError,
        r"\[put_along_axis\] reduce must be one of assign, add, mul, mean, amin, amax, got 'median'",
    ),
    (
        lambda d: _F().one_hot(fw.to_tensor([0, 3], device=d), 3),
        IndexError,
        r"\[one_hot\] class ids \(num_classes=3\) must be in \[0, 3\)",
    ),
    (
        lambda d: _F().one_hot(fw.to_tensor([0, -1], device=d), 3),
        IndexError,
        r"\[one_hot\] class ids \(num_classes=3\) must be in \[0, 3\)",
    ),
    (
        lambda d: fw.eye(-1, device=d),
        fw.OpArgumentError,
        r"\[eye\] num_rows must be a non-negative int, got -1",
    ),
    (
        lambda d: fw.eye(2, -3, device=d),
        fw.OpArgumentError,
        r"\[eye\] num_columns must be a non-negative int, got -3",
    ),
    (lambda d: fw.optim.Adam(parameters=[]), fw.OpArgumentError, r"\[Adam\] parameters= is empty"),
    (
        lambda d: _F().max_pool2d(fw.ones([1, 1, 4, 4], device=d), 2, stride=0),
        fw.OpArgumentError,
        r"\[max_pool2d\] stride must be at least 1, got 0",
    ),
    (
        lambda d: _F().avg_pool2d(fw.ones([1, 1, 4, 4], device=d), 0),
        fw.OpArgumentError,
        r"\[avg_pool2d\] kernel_size must be at least 1, got 0",
    ),
    (
        lambda d: _F().max_pool2d(fw.ones([1, 1, 4, 4], device=d), 2, padding=-1),
        fw.OpArgumentError,
        r"\[max_pool2d\] padding must not be negative",
    ),
    (
        lambda d: _F().adaptive_avg_pool2d(fw.ones([1, 1, 4, 4], device=d), 0),
        fw.OpArgumentError,
        r"\[adaptive_avg_pool2d\] output_size must be at least 1, got 0",
    ),
    (
        lambda d: _F().conv2d(fw.ones([1, 1, 4, 4], device=d), fw.ones([1, 1, 2, 2], device=d), stride=0),
        fw.OpArgumentError,
        r"\[conv2d\] stride must be at least 1, got 0",
    ),
    (
        lambda d: fw.chunk(fw.ones([4], device=d), 0),
        fw.OpArgumentError,
        r"\[chunk\] chunks must be a positive int, got 0",
    ),
    (
        lambda d: _F().layer_norm(fw.ones([2, 0], device=d), [0]),
        fw.OpArgumentError,
        r"\[layer_norm\] cannot normalize over zero elements",
    ),
    (
        lambda d: _F().rms_norm(fw.ones([2, 0], device=d)),
        fw.OpArgumentError,
        r"\[rms_norm\] cannot normalize over zero elements",
    ),
    (  # the weight passed where the shape goes: named, not read as a shape of its values
        lambda d: _F().rms_norm(fw.ones([2, 70], device=d), fw.ones([70], device=d), 1e-6),
        fw.OpArgumentError,
        r"\[rms_norm\] normalized_shape must be an int or a sequence of ints .*got a Tensor of shape \[70\]",
    ),
    (
        lambda d: _F().layer_norm(fw.ones([2, 3], device=d), "abc"),
        fw.OpArgumentError,
        r"\[layer_norm\] normalized_shape must be an int or a sequence of ints .*got 'abc'",
    ),
    (
        lambda d: fw.nn.Linear(0, 0),
        fw.OpArgumentError,
        r"\[Linear\] in_features must be a positive int, got 0",
    ),
    (
        lambda d: fw.nn.Linear(3, -1),
        fw.OpArgumentError,
        r"\[Linear\] out_features must be a positive int, got -1",
    ),
    (
        lambda d: fw.ones([2**62, 2**62], device=d),
        fw.OpArgumentError,
        r"\[ones\] shape \(4611686018427387904, 4611686018427387904\) has \d+ elements, more than any device",
    ),
    (
        lambda d: fw.to_tensor([2], device=d) ** -1,
        fw.OpArgumentError,
        r"\[pow\] the exponent y holds a negative value but x and y are integers \(int64, int64\).*cast x to a float dtype",
    ),
    (
        lambda d: fw.pow(fw.to_tensor([2, 3], device=d), fw.to_tensor([1, -1], device=d)),
        fw.OpArgumentError,
        r"\[pow\] the exponent y holds a negative value",
    ),
]


def _F():  # noqa: N802 — the usual name of framework.nn.functional
    return __import__("framework.nn.functional", fromlist=["x"])


@pytest.mark.parametrize("case", range(len(CASES)))
def test_bad_input_is_reported_clearly(device, case):
    fn, exc, pattern = CASES[case]
    with pytest.raises(exc, match=pattern):
        fn(device)


def test_setitem_errors(device):
    x = fw.ones([3, 2], device=device)
    with pytest.raises(
        fw.OpArgumentError,
        match=r"\[setitem\] value of shape \(3,\) cannot be broadcast to the indexed shape \(2,\)",
    ):
        x[0] = fw.ones([3], device=device)
    with pytest.raises(IndexError, match=r"\[setitem\] index 9 is out of bounds"):
        x[9] = 1.0
    w = fw.ones([2], device=device)
    w.stop_gradient = False
    with pytest.raises(
        fw.OpArgumentError, match=r"\[setitem\] a leaf tensor that requires grad cannot be modified in place"
    ):
        w[0] = 2.0
    np.testing.assert_array_equal(x.numpy(), np.ones((3, 2)))  # nothing was written by failed calls


def test_backward_errors(device):
    x = fw.ones([2], device=device)
    with pytest.raises(fw.OpArgumentError, match=r"\[backward\] the tensor does not require a gradient"):
        x.sum().backward()
    x.stop_gradient = False
    y = x * 2.0
    y.backward()  # a non-scalar root: its gradient is ones, as in Paddle
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0])
    x.clear_gradient()
    z = (x * x).sum()
    z.backward()
    with pytest.raises(fw.OpArgumentError, match=r"already freed .* retain_graph=True"):
        z.backward()


def _failing_kernel_plugin() -> types.ModuleType:
    """A plugin module (built here, registered by hand) whose int64 ``add`` raises a foreign error."""
    mod = types.ModuleType("kfail_plugin")
    mod.CONTRACT = (1, 0)

    def _raising_add(ctx, outs, ins):  # type: ignore[no-untyped-def]
        raise ValueError("the vendor library says no")

    def oarlock_register(registry):  # type: ignore[no-untyped-def]
        from plugins.cpu.runtime import CPURuntime

        registry.add_runtime("kfail", CPURuntime)
        for (op, typ, dtype), entry in list(registry.kernels.items()):
            if typ == "cpu":
                registry.add_kernel(op, "kfail", [dtype], entry.fn, broadcast=entry.broadcast)
        registry.add_kernel("add", "kfail", ["int64"], _raising_add, broadcast=True)

    mod.oarlock_register = oarlock_register
    return mod


def test_kernel_failure_is_wrapped_with_op_and_plugin():
    fw.register_plugin(_failing_kernel_plugin(), name="kfail")
    with pytest.raises(
        fw.KernelError,
        match=r"\[add\] kernel of plugin 'kfail' failed on kfail:0 .*ValueError: the vendor library says no",
    ):
        fw.add(fw.to_tensor([2, 3], device="kfail"), fw.to_tensor([1, 1], device="kfail"))


def test_out_of_memory_is_clear():
    fw.register_plugin("tests.plugins_for_tests.partial", name="partial")
    with pytest.raises(
        fw.OutOfMemoryError,
        match=r"\[memory\] out of memory on partial:0: asked for \d+ bytes, \d+ bytes in use",
    ):
        fw.empty([1 << 29], dtype="float32", device="partial:0")  # 2 GiB > the 1 GiB device
    assert fw.memory_stats("partial:0")["num_ooms"] >= 1
