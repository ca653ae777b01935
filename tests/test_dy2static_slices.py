"""to_static with a ``None`` dim that a slice or an index clamps: ``x[:5]``, ``x[-3:]``,
``x[::2]``, ``x[3]``, a slice of a view along ``b % 3``.

Traced at probe sizes (11, 13, 22...), ``x[:5]`` keeps 5 rows; at a batch of 3 it must keep 3
(it raised a KernelError there, and returned 5 rows of garbage at a batch of 1). Each clamp is
a guard of the program: the sizes it clamps at get a program of their own. Every case is
compared with NumPy at sizes on both sides of the clamp (and 0), and a few with Paddle's own
``to_static`` over the same ``InputSpec``."""

import warnings

import numpy as np
import pytest

import framework as fw
from framework.static import InputSpec

SIZES = (7, 8, 3, 5, 1, 2, 12, 0, 9, 13)

#: the same code runs on a NumPy array (the reference) and on a tensor
CASES = {
    "x[:5]": lambda x: x[:5],
    "x[2:]": lambda x: x[2:],
    "x[-3:]": lambda x: x[-3:],
    "x[:-2]": lambda x: x[:-2],
    "x[2:5]": lambda x: x[2:5],
    "x[-5:-1]": lambda x: x[-5:-1],
    "x[::2]": lambda x: x[::2],
    "x[1::2]": lambda x: x[1::2],
    "x[::3]": lambda x: x[::3],
    "x[1:-1:3]": lambda x: x[1:-1:3],
    "x[::-1]": lambda x: x[::-1],
    "x[5::-1]": lambda x: x[5::-1],
    "x[:-3:-1]": lambda x: x[:-3:-1],
    "x[::-2]": lambda x: x[::-2],
    "x[-1]": lambda x: x[-1],
    "x[n - 1]": lambda x: x[x.shape[0] - 1],
    "x[None, :4]": lambda x: x[None, :4],
    "x.T[:, :4]": lambda x: x.T[:, :4],
    "x[..., :2][:4]": lambda x: x[..., :2][:4],
    "x[1:][:2]": lambda x: x[1:][:2],
    "x[::2][:3]": lambda x: x[::2][:3],
    "flat[:7]": lambda x: x.flatten()[:7],
    "x[b // 2:]": lambda x: x[x.shape[0] // 2 :],
    "x[:b // 2 + 5]": lambda x: x[: x.shape[0] // 2 + 5],
    # slices of a view along b % 3 (one gave 5 rows at a batch of 1)
    "view[:b % 3]": lambda x: x[None][:, : x.shape[0] % 3],
    "view[:(b % 3) * 5]": lambda x: x.reshape([-1, 3])[: (x.shape[0] % 3) * 5],
    "view[:b % 3 + 10]": lambda x: x[None][:, : x.shape[0] % 3 + 10],
    "flat[b % 3 - 3:]": lambda x: x.flatten()[x.shape[0] % 3 - 3 :],
    "x[b % 3:]": lambda x: x[x.shape[0] % 3 :],
    "view[:, b % 3:b]": lambda x: x[None][:, x.shape[0] % 3 : x.shape[0]],
}


def _check(sf, f, sizes):
    """``sf`` (to_static of ``f``) equals ``f`` on NumPy at every size: the same values, or an
    IndexError where NumPy raises one, naming the size of the call."""
    for n in sizes:
        a = np.arange(n * 3, dtype=np.float32).reshape(n, 3)
        try:
            want = f(a) * 2.0
        except IndexError:
            with pytest.raises(IndexError, match=f"with size {n}"):
                sf(fw.to_tensor(a))
            continue
        with fw.no_grad():
            got = sf(fw.to_tensor(a))
        assert list(got.shape) == list(want.shape), (n, got.shape, want.shape)
        np.testing.assert_array_equal(got.numpy(), want)


@pytest.mark.parametrize("name", list(CASES))
def test_a_clamped_slice_of_a_dynamic_dim_equals_numpy_at_every_size(name):
    f = CASES[name]

    def g(x):
        return f(x) * 2.0

    sf = fw.jit.to_static(g, input_spec=[InputSpec([None, 3])])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # x[::3]: one program per size, with a warning
        _check(sf, f, SIZES)


@pytest.mark.parametrize(
    "name, programs",
    [("x[:5]", 2), ("x[::2]", 1), ("x[1::2]", 1), ("x[b // 2:]", 1), ("x[b % 3:]", 1), ("x[-1]", 1)],
)
def test_one_program_per_side_of_the_clamp_not_per_size(name, programs):
    f = CASES[name]

    def g(x):
        return f(x) * 2.0

    sf = fw.jit.to_static(g, input_spec=[InputSpec([None, 3])])
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=r"\[to_static\]")  # no specialisation
        _check(sf, f, (7, 8, 12, 13, 22, 31))
        if programs == 2:
            _check(sf, f, (3, 4))
    assert len(sf.programs) == programs


def test_x_of_5_at_a_batch_of_3_and_1():
    """The case that raised a KernelError (batch 3) and returned 5 rows (batch 1)."""

    def g(x):
        return x[:5] * 2.0

    sf = fw.jit.to_static(g, input_spec=[InputSpec([None, 3])])
    for n in (7, 3, 1):
        a = np.arange(n * 3, dtype=np.float32).reshape(n, 3)
        np.testing.assert_array_equal(sf(fw.to_tensor(a)).numpy(), a[:5] * 2.0)
    guards = [str(g) for cp in sf.programs for g in cp.size_guards]
    assert any("test_dy2static_slices.py" in g and "5" in g for g in guards), guards  # the user's line


def test_an_index_past_a_dynamic_dim_is_the_eager_error():
    def g(x):
        return x[3] * 2.0

    sf = fw.jit.to_static(g, input_spec=[InputSpec([None, 3])])
    np.testing.assert_array_equal(sf(fw.ones([7, 3])).numpy(), np.full(3, 2.0))
    for n in (3, 2):
        with pytest.raises(
            IndexError, match=rf"\[getitem\] index 3 is out of bounds for axis 0 with size {n}"
        ):
            sf(fw.ones([n, 3]))


def test_an_index_past_the_probe_sizes_gets_one_program_for_the_sizes_that_have_it():
    """``x[12]`` fails at the probe size 11 after its bound check (a guard): the sizes past 12
    share one program traced at probes past 12 (it was traced per size, with a warning); a
    smaller size gets eager's error, naming it."""

    def g(x):
        return x[12] * 2.0

    sf = fw.jit.to_static(g, input_spec=[InputSpec([None, 3])])
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=r"\[to_static\]")
        for n in (20, 25, 14, 13):
            a = np.arange(3 * n, dtype=np.float32).reshape(n, 3)
            np.testing.assert_array_equal(sf(fw.to_tensor(a)).numpy(), a[12] * 2.0)
    assert len(sf.programs) == 1
    with pytest.raises(IndexError, match="index 12 is out of bounds for axis 0 with size 5"):
        sf(fw.ones([5, 3]))


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: x.squeeze(),
        lambda x: x.squeeze(0),
        lambda x: fw.narrow(x, 0, 2, 3),
        lambda x: fw.narrow(x, 0, -3, 2),
        lambda x: fw.crop(x, shape=[2, 3], offsets=[1, 0]),
        lambda x: fw.slice(x, [0], [1], [100]),
        lambda x: fw.slice(x, [0], [-4], [-1]),
        lambda x: fw.strided_slice(x, [0], [-1], [-100], [-1]),
    ],
    ids=["squeeze", "squeeze(0)", "narrow", "narrow-neg", "crop", "slice", "slice-neg", "strided_slice"],
)
def test_other_ops_that_clamp_or_check_a_dynamic_dim(fn):
    """squeeze drops a dim of size 1; narrow and crop refuse a range past the dim: at the
    sizes where that happens the program must do the same as eager (it kept the dim, or
    raised a KernelError, or read past the rows)."""

    def g(x):
        return fn(x) * 2.0

    sf = fw.jit.to_static(g, input_spec=[InputSpec([None, 3])])
    for n in (7, 8, 1, 2, 3, 0):
        x = fw.to_tensor(np.arange(n * 3, dtype=np.float32).reshape(n, 3))
        try:
            want = g(x)
        except fw.OarlockError as exc:
            with pytest.raises(type(exc), match=str(n)):
                sf(x)
            continue
        with fw.no_grad():
            got = sf(x)
        assert list(got.shape) == list(want.shape), n
        np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_a_split_that_fails_at_the_probe_sizes_runs_at_the_call_size():
    """``fw.split(x, 2)`` cannot split the odd probe sizes: an even call gets a program of its
    own (with a warning), an odd call the eager error naming its size."""

    def g(x):
        a, b = fw.split(x, 2)
        return a - b

    sf = fw.jit.to_static(g, input_spec=[InputSpec([None, 3])])
    a = np.arange(24, dtype=np.float32).reshape(8, 3)
    with pytest.warns(UserWarning, match="specialised"):
        got = sf(fw.to_tensor(a))
    np.testing.assert_array_equal(got.numpy(), a[:4] - a[4:])
    with pytest.raises(fw.OarlockError, match="cannot split size 7"):
        sf(fw.ones([7, 3]))


def _clamped(x):
    return x[:5] * 2.0, x[-3:], x[::-1], x[-1], x[2:5], x[:-2]


def _strided(x):
    return x[::2], x[1::2], x[-2::-2]


@pytest.mark.parametrize("fn", [_clamped, _strided])
def test_against_paddles_to_static_with_a_dynamic_batch(fn):
    paddle = pytest.importorskip("paddle")
    theirs = paddle.jit.to_static(
        fn, input_spec=[paddle.static.InputSpec([None, 3], "float32")], full_graph=True
    )
    ours = fw.jit.to_static(fn, input_spec=[InputSpec([None, 3])])
    for n in (7, 4, 3, 1):
        a = np.arange(n * 3, dtype=np.float32).reshape(n, 3)
        want = theirs(paddle.to_tensor(a))
        with fw.no_grad():
            got = ours(fw.to_tensor(a))
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert list(g.shape) == list(w.shape), n
            np.testing.assert_array_equal(g.numpy(), w.numpy())


def test_a_zero_step_is_refused_naming_the_slice():
    def g(x):
        return x[::0]

    sf = fw.jit.to_static(g, input_spec=[InputSpec([None, 3])])
    for fn in (g, sf):
        with pytest.raises(
            ValueError, match=r"\[getitem\] slice step cannot be zero \(got slice\(None, None, 0\)\)"
        ):
            fn(fw.ones([4, 3]))
