"""``gather`` with Paddle's negative-index rule inside the kernel (the op's ``wrap`` attr: one
op, no element-wise ops before it) and the cpu plugin's C kernels for ``gather`` and
``where`` (plugins/cpu/index.c), against numpy and real Paddle: values, gradients, the range
check with its message, static programs whose bound calls read the index of each run."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import framework as fw
from framework.static import InputSpec
from plugins.cpu import index as cpu_index

try:
    import paddle
except ImportError:  # pragma: no cover
    paddle = None


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int8", "bool", "float16"])
@pytest.mark.parametrize("axis", [0, 1, 2])
def test_gather_with_negative_indices_matches_numpy(device, dtype, axis):
    rng = np.random.default_rng(axis)
    x = (rng.standard_normal((7, 5, 6)) * 10).astype(dtype)
    n = x.shape[axis]
    for idx in (rng.integers(-n, n, 13), rng.integers(-n, n, (3, 4)), np.array(-n), np.arange(-n, n)):
        got = fw.gather(fw.to_tensor(x, device=device), fw.to_tensor(idx, device=device), axis=axis)
        np.testing.assert_array_equal(got.numpy(), np.take(x, idx, axis=axis))


def test_gather_of_a_table_with_256_indices_as_paddle():
    """The brief's case, [1000, 64] with 256 indices in [-1000, 1000), against real Paddle."""
    if paddle is None:
        pytest.skip("no paddle")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1000, 64)).astype(np.float32)
    idx = rng.integers(-1000, 1000, 256)
    want = paddle.gather(paddle.to_tensor(x), paddle.to_tensor(idx)).numpy()
    np.testing.assert_array_equal(fw.gather(fw.to_tensor(x), fw.to_tensor(idx)).numpy(), want)
    np.testing.assert_array_equal(want, np.take(x, idx, 0))


@pytest.mark.parametrize("bad", [1000, -1001, 1 << 40, -(1 << 40)])
def test_an_index_out_of_range_names_it_and_paddles_range(device, bad):
    x = fw.to_tensor(np.zeros((1000, 4), np.float32), device=device)
    idx = fw.to_tensor(np.array([0, -1000, 999, bad, 3]), device=device)
    with pytest.raises(IndexError) as err:
        fw.gather(x, idx).numpy()
    msg = str(err.value)
    assert msg.startswith("[gather] index ") and f"{bad}" in msg, msg
    assert "axis 0 of size 1000" in msg and "[-1000, 1000)" in msg, msg


def test_a_negative_index_is_one_gather_op_in_a_program():
    """The wrap is the kernel's: the traced program holds one gather (attr wrap) and no
    compare / add / where on the index."""

    @fw.jit.to_static(input_spec=[InputSpec([6, 3], "float32"), InputSpec([4], "int64")])
    def f(x, i):
        return fw.gather(x, i)

    x = np.arange(18, dtype=np.float32).reshape(6, 3)
    i = np.array([-1, 0, -6, 5])
    np.testing.assert_array_equal(f(fw.to_tensor(x), fw.to_tensor(i)).numpy(), x[i])
    (cp,) = f.programs
    ops = [op for op in cp.program.walk() if op.name != "builtin.return"]
    names = [op.name.split(".")[-1] for op in ops]
    assert names == ["gather"], names
    assert ops[0].attrs.get("wrap") is True


def test_gradient_of_a_wrapped_gather_adds_into_the_rows_counted_from_the_end():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((5, 3)).astype(np.float32)
    idx = np.array([-1, 4, 0, -5, -1])
    w = rng.standard_normal((5, 3)).astype(np.float32)
    t = fw.to_tensor(x, stop_gradient=False)
    (fw.gather(t, fw.to_tensor(idx)) * fw.to_tensor(w)).sum().backward()
    want = np.zeros_like(x)
    np.add.at(want, idx % 5, w)
    np.testing.assert_allclose(t.grad.numpy(), want, rtol=1e-6)


def test_a_saved_program_reads_the_index_of_each_run(tmp_path):
    """The Predictor binds the C gather once: each run checks and wraps that run's index."""

    class Pick(fw.nn.Layer):
        def __init__(self):
            super().__init__()
            self.table = self.create_parameter([10, 4], "float32")

        def forward(self, i):
            return fw.gather(self.table, i) * 2.0

    fw.seed(3)
    m = Pick()
    path = str(tmp_path / "pick")
    fw.jit.save(m, path, input_spec=[InputSpec([3], "int64")])
    pred = fw.inference.create_predictor(fw.inference.Config(path))
    table = m.table.numpy()
    for idx in ([0, -1, 9], [-10, 5, -3], [2, 2, -2]):
        i = np.array(idx, np.int64)
        np.testing.assert_array_equal(pred.run([i])[0].numpy(), table[i] * 2.0)
    with pytest.raises(Exception, match=r"index 10 is out of range .*\[-10, 10\)"):
        pred.run([np.array([1, 10, 2], np.int64)])
    np.testing.assert_array_equal(pred.run([np.array([1, -1, 2])])[0].numpy(), table[[1, -1, 2]] * 2.0)


def test_take_rows_keeps_the_strict_range_for_ids_and_labels():
    """Internal lookups (embedding ids) keep [0, n): a negative id is an error, not a row."""
    with pytest.raises(fw.OpArgumentError, match=r"index -1 is out of range .*\[0, 5\)"):
        fw.nn.functional.embedding(fw.to_tensor([1, -1]), fw.to_tensor(np.ones((5, 2), np.float32)))


# -- the cpu plugin's C kernels --------------------------------------------------------------
def test_the_cpu_gather_runs_the_c_kernel_on_contiguous_operands():
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    y = np.empty((4, 3), np.float32)
    idx = np.array([-1, 0, 5])
    call = cpu_index.gather_call(y, x, idx, 1, True)
    if call is None:
        pytest.skip("no C compiler")
    assert call() == -1
    np.testing.assert_array_equal(y, np.take(x, idx, 1))
    assert cpu_index.gather_call(y, x, idx, 1, False)() == 0  # -1 is out of [0, 6): position 0
    assert cpu_index.gather_call(y, x[:, ::2], idx[:3] % 3, 1, False) is None  # strided: numpy's


WHERE_CASES = [  # condition, x, y shapes (numpy broadcasting)
    ((1, 1, 64, 1), (2, 4, 1, 16), (2, 4, 64, 16)),  # a KV cache's update: whole rows
    ((1, 1, 1, 64), (2, 4, 1, 64), ()),  # attention's mask with -inf
    ((3, 1, 5, 7), (3, 4, 1, 7), (1, 4, 5, 1)),
    ((6, 7), (6, 7), (6, 7)),
    ((), (3, 2), (3, 2)),
    ((40, 40), (40, 1), (1, 40)),
]


@pytest.mark.parametrize("dtype", ["float32", "float64", "int8", "int64", "bool", "bfloat16"])
@pytest.mark.parametrize("shapes", WHERE_CASES, ids=[str(c) for c in WHERE_CASES])
def test_where_matches_numpy_bit_for_bit(device, dtype, shapes):
    rng = np.random.default_rng(len(shapes[0]))
    dt = ml_dtypes.bfloat16 if dtype == "bfloat16" else dtype
    c = rng.random(shapes[0]) < 0.5
    x = (rng.standard_normal(shapes[1]) * 5).astype(dt)
    y = (rng.standard_normal(shapes[2]) * 5).astype(dt)
    if dtype.startswith("float"):  # signed zeros and NaN payloads move as bits
        x.reshape(-1)[:2] = [-0.0, np.nan]
    got = fw.where(
        fw.to_tensor(c, device=device), fw.to_tensor(x, device=device), fw.to_tensor(y, device=device)
    )
    want = np.where(c, x, y)
    assert got.numpy().tobytes() == want.tobytes()


def test_where_copies_whole_rows_in_c_through_strided_views():
    """A condition constant along rows (a cache update) takes the C row copy, reading a
    transposed x and a sliced y through their strides; a condition per element selects."""
    rng = np.random.default_rng(5)
    c = rng.random((8, 1)) < 0.5
    xb = rng.standard_normal((32, 8)).astype(np.float32)
    yb = rng.standard_normal((8, 64)).astype(np.float32)
    z = np.empty((8, 32), np.float32)
    call = cpu_index.where_call(z, c, xb.T, yb[:, ::2])
    if call is None:
        pytest.skip("no C compiler")
    call()
    np.testing.assert_array_equal(z, np.where(c, xb.T, yb[:, ::2]))
    cache = (
        np.zeros((1, 4, 64, 1), bool),
        np.ones((1, 4, 1, 16), np.float32),
        np.zeros((1, 4, 64, 16), np.float32),
    )
    assert cpu_index.where_call(np.empty((1, 4, 64, 16), np.float32), *cache) is not None
    per_element = rng.random((8, 32)) < 0.5  # the branchless select, through the same strides
    cpu_index.where_call(z, per_element, xb.T, yb[:, ::2])()
    assert z.tobytes() == np.where(per_element, xb.T, yb[:, ::2]).tobytes()
