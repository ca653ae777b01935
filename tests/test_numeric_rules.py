"""The numeric rules of docs/user-guide.md "Integer and cast rules", on every device: NaN order of
sort/argsort/topk/median, integer division by zero, INT_MIN // -1, float -> int casts out of
range, and ``~``/``&``/``|``/``^`` on integers. References: numpy, and real Paddle 3.3.1 where
it defines the answer."""

from __future__ import annotations

import numpy as np
import pytest

import framework as fw
from adapter_api import OpArgumentError

NAN = float("nan")


@pytest.fixture(scope="module")
def paddle():
    return pytest.importorskip("paddle")


def _same(got: np.ndarray, want: np.ndarray) -> None:
    """Equal values, NaN where NaN (and the same dtype kind)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_array_equal(got, want)


# -- sorting: NaN is the greatest value, the sort is stable -------------------------------------
_ROW = [3.0, NAN, 1.0, -0.0, NAN, 2.0, 0.0, 1.0, -np.inf, np.inf]


@pytest.mark.parametrize("descending", [False, True])
def test_sort_and_argsort_put_nan_where_paddle_does(device, paddle, descending):
    x = np.array([_ROW, _ROW[::-1]], np.float32)
    t = fw.to_tensor(x, device=device)
    p = paddle.to_tensor(x)
    want_idx = paddle.argsort(p, axis=1, descending=descending, stable=True).numpy()
    got_idx = fw.argsort(t, axis=1, descending=descending).numpy()
    _same(got_idx, want_idx)
    _same(
        fw.sort(t, axis=1, descending=descending).numpy(),
        paddle.sort(p, axis=1, descending=descending).numpy(),
    )
    # along axis 0 as well (the core moves the axis last for the primitive)
    _same(fw.argsort(t.T, axis=0, descending=descending).numpy(), want_idx.T)


def test_argsort_ascending_is_numpys_stable_argsort_on_a_long_axis(device):
    rng = np.random.default_rng(0)
    x = rng.integers(0, 50, (3, 70_000)).astype(np.float32)  # many ties: stability shows
    x[rng.random(x.shape) < 0.01] = np.nan
    got = fw.argsort(fw.to_tensor(x, device=device), axis=1).numpy()
    _same(got, np.argsort(x, axis=1, kind="stable"))
    assert (np.sort(got, axis=1) == np.arange(x.shape[1])).all()  # a permutation of every row


@pytest.mark.parametrize("dtype", ["int32", "int64", "uint8", "bool", "float16"])
def test_argsort_of_other_dtypes_matches_numpy(device, dtype):
    rng = np.random.default_rng(1)
    x = (rng.random((4, 300)) < 0.5) if dtype == "bool" else rng.integers(0, 9, (4, 300)).astype(dtype)
    if dtype == "int64":
        x[0, :3] = [2**62 + 1, 2**62, -(2**63)]  # exact, not through float64
    t = fw.to_tensor(x, device=device)
    _same(fw.argsort(t, axis=1).numpy(), np.argsort(x, axis=1, kind="stable"))
    # descending and stable: the reversed row's stable ascending order, reversed
    want = x.shape[1] - 1 - np.argsort(x[:, ::-1], axis=1, kind="stable")[:, ::-1]
    _same(fw.argsort(t, axis=1, descending=True).numpy(), want)


@pytest.mark.parametrize("largest", [True, False])
def test_topk_with_nan_matches_paddle_and_ties_go_to_the_lower_index(device, paddle, largest):
    x = np.array([3.0, NAN, 1.0, NAN, 2.0, 4.0, 0.0], np.float32)
    v, i = fw.topk(fw.to_tensor(x, device=device), 3, largest=largest)
    pv, pi = paddle.topk(paddle.to_tensor(x), 3, largest=largest)
    _same(v.numpy(), pv.numpy())
    _same(i.numpy(), pi.numpy())
    # ties: Paddle's order among equal values is its heap's (unspecified); ours is the stable sort's
    y = np.array([1.0, 2.0, 1.0, 2.0, 1.0], np.float32)
    v, i = fw.topk(fw.to_tensor(y, device=device), 3, largest=largest)
    order = np.argsort(-y if largest else y, kind="stable")[:3]
    _same(i.numpy(), order)
    _same(v.numpy(), y[order])


def test_kthvalue_median_and_quantile_with_nan_match_paddle(device, paddle):
    x = np.array([[3.0, NAN, 1.0, NAN, 2.0], [4.0, 1.0, 2.0, 3.0, 5.0]], np.float32)
    t, p = fw.to_tensor(x, device=device), paddle.to_tensor(x)
    for k in (2, 5):
        v, i = fw.kthvalue(t, k, axis=1)
        pv, pi = paddle.kthvalue(p, k, axis=1)
        _same(v.numpy(), pv.numpy())
        _same(i.numpy(), pi.numpy())
    _same(fw.median(t, axis=1).numpy(), paddle.median(p, axis=1).numpy())  # [nan, 3]
    assert np.isnan(fw.median(t).item()) and np.isnan(paddle.median(p).item())
    _same(fw.quantile(t, 0.5, axis=1).numpy(), np.quantile(x, 0.5, axis=1).astype(np.float32))


def test_unique_keeps_nans_apart_as_paddle(device, paddle):
    x = np.array([NAN, 1.0, NAN, 1.0], np.float32)
    _same(fw.unique(fw.to_tensor(x, device=device)).numpy(), paddle.unique(paddle.to_tensor(x)).numpy())


def test_sorting_zero_d_and_empty_tensors(device, paddle):
    v, i = fw.topk(fw.to_tensor(5.0, device=device), 1)
    pv, pi = paddle.topk(paddle.to_tensor(5.0), 1)
    assert (v.shape, i.shape, v.item(), i.item()) == (tuple(pv.shape), tuple(pi.shape), pv.item(), pi.item())
    assert fw.sort(fw.to_tensor(3.0, device=device)).item() == 3.0
    assert fw.argsort(fw.zeros([2, 0], device=device), axis=1).shape == (2, 0)
    assert fw.argsort(fw.zeros([0, 3], device=device), axis=0).shape == (0, 3)


def test_sort_gradient_goes_back_to_each_element(device):
    x = np.array([0.5, -2.0, 3.0, 1.0], np.float32)
    t = fw.to_tensor(x, device=device, stop_gradient=False)
    w = np.array([1.0, 10.0, 100.0, 1000.0], np.float32)
    (fw.sort(t, descending=True) * fw.to_tensor(w, device=device)).sum().backward()
    want = np.empty_like(w)
    want[np.argsort(-x, kind="stable")] = w
    _same(t.grad.numpy(), want)


# -- bitwise operators ---------------------------------------------------------------------------
def test_operators_on_integers_are_bitwise_as_paddle(device, paddle):
    a, b = np.array([1, 5, -3, 12], np.int64), np.array([3, 3, 5, 10], np.int64)
    ta, tb = fw.to_tensor(a, device=device), fw.to_tensor(b, device=device)
    pa, pb = paddle.to_tensor(a), paddle.to_tensor(b)
    _same((~ta).numpy(), (~pa).numpy())  # [-2, -6, 2, -13]
    _same((ta & tb).numpy(), (pa & pb).numpy())
    _same((~ta).numpy(), ~a)
    _same((ta & tb).numpy(), a & b)
    _same((ta | tb).numpy(), a | b)
    _same((ta ^ tb).numpy(), a ^ b)
    _same((6 & ta).numpy(), 6 & a)
    u = np.array([0, 7, 255], np.uint8)
    _same((~fw.to_tensor(u, device=device)).numpy(), ~u)
    m = np.array([True, False])
    _same((~fw.to_tensor(m, device=device)).numpy(), ~m)  # logical not on bool
    _same((fw.to_tensor(m, device=device) & True).numpy(), m & True)


def test_invert_of_a_float_raises_like_bitwise_not(device):
    x = fw.to_tensor([1.5, 0.0], device=device)
    with pytest.raises(OpArgumentError, match=r"\[bitwise_not\].*float32"):
        _ = ~x
    with pytest.raises(OpArgumentError, match=r"\[bitwise_and\].*float32"):
        _ = x & x


# -- integer division ----------------------------------------------------------------------------
@pytest.mark.parametrize("op", ["floor_divide", "remainder"])
def test_integer_division_by_zero_raises_as_paddle(device, paddle, op):
    x, y = np.array([7, -7, 3], np.int64), np.array([2, 0, 1], np.int64)
    with pytest.raises(Exception, match="Integer division by zero"):
        getattr(paddle, op)(paddle.to_tensor(x), paddle.to_tensor(y))
    tx, ty = fw.to_tensor(x, device=device), fw.to_tensor(y, device=device)
    with pytest.raises(OpArgumentError, match=rf"\[{op}\] integer division by zero"):
        getattr(fw, op)(tx, ty)
    with pytest.raises(OpArgumentError, match=rf"\[{op}\] integer division by zero.*scalar 0"):
        getattr(fw, op)(tx, 0)
    with pytest.raises(OpArgumentError, match="integer division by zero"):
        _ = (tx // ty) if op == "floor_divide" else (tx % ty)
    with pytest.raises(OpArgumentError, match="integer division by zero"):
        getattr(fw, op)(
            fw.to_tensor(np.array([1, 2], np.int32), device=device),
            fw.to_tensor([0], dtype="int32", device=device),
        )
    # nonzero divisors: numpy's values; float division by zero stays IEEE, as in Paddle
    ok = np.array([2, -3, 1], np.int64)
    _same(getattr(fw, op)(tx, fw.to_tensor(ok, device=device)).numpy(), getattr(np, op)(x, ok))
    f = np.array([7.0, -7.0, 0.0], np.float32)
    got = getattr(fw, op)(fw.to_tensor(f, device=device), 0.0).numpy()
    want = getattr(paddle, op)(paddle.to_tensor(f), paddle.to_tensor(np.zeros(3, np.float32))).numpy()
    _same(got, want)


@pytest.mark.parametrize("op", ["floor_divide", "remainder"])
def test_integer_division_by_zero_raises_under_to_static(device, op):
    @fw.jit.to_static
    def f(x, y):
        return getattr(fw, op)(x, y) + 1

    x = fw.to_tensor([7, -7, 3], device=device)
    ok = np.array([2, -3, 1], np.int64)
    _same(f(x, fw.to_tensor(ok, device=device)).numpy(), getattr(np, op)(np.array([7, -7, 3]), ok) + 1)
    with pytest.raises(OpArgumentError, match="out of range"):  # the divisor's bounds check
        f(x, fw.to_tensor([2, 0, 1], device=device)).numpy()
    _same(f(x, fw.to_tensor(ok, device=device)).numpy(), getattr(np, op)(np.array([7, -7, 3]), ok) + 1)


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_int_min_floor_divide_minus_one_wraps_as_numpy(device, dtype):
    # Paddle 3.3.1 dies of SIGFPE here; the contract takes numpy's wrap (MIN // -1 == MIN, MIN % -1 == 0)
    m = np.iinfo(dtype).min
    x, y = np.array([m, m, m + 1], dtype), np.array([-1, 1, -1], dtype)
    tx, ty = fw.to_tensor(x, device=device), fw.to_tensor(y, device=device)
    with np.errstate(over="ignore"):
        _same((tx // ty).numpy(), np.floor_divide(x, y))
        _same((tx % ty).numpy(), np.remainder(x, y))
    assert (tx // ty).numpy()[0] == m and (tx % ty).numpy()[0] == 0


# -- float -> int casts: truncate, saturate, NaN -> 0 ---------------------------------------------
_PAST = [
    NAN,
    np.inf,
    -np.inf,
    3.0e9,
    -3.0e9,
    1.0e20,
    -1.0e20,
    -1.5,
    -0.5,
    300.7,
    2.9,
    -2.9,
    127.9,
    -128.9,
    0.0,
]


def _saturated(values: list[float], target: str) -> np.ndarray:
    info = np.iinfo(target)
    out = [
        0 if v != v else info.max if v > info.max else info.min if v < info.min else int(v) for v in values
    ]
    return np.array(out, dtype=target)


@pytest.mark.parametrize("src", ["float32", "float64", "float16"])
@pytest.mark.parametrize("target", ["int32", "int64", "uint8", "int8", "int16"])
def test_float_to_int_cast_saturates_and_nan_is_zero(device, src, target):
    x = np.array(_PAST, np.float64).astype(src)
    want = _saturated(x.astype(np.float64).tolist(), target)
    t = fw.to_tensor(x, device=device)
    _same(t.astype(target).numpy(), want)
    _same(fw.cast(t, target).numpy(), want)


def test_float_to_int_cast_saturates_in_static_programs_and_fused_kernels(device):
    @fw.jit.to_static
    def f(x):  # the cast fused with its neighbours where the device generates kernels
        return (x * 2.0).astype("int32") + 1, (x - 1.0).astype("uint8")

    x = np.array(_PAST, np.float32)
    a, b = f(fw.to_tensor(x, device=device))
    _same(
        a.numpy(),
        (_saturated((x * 2.0).astype(np.float64).tolist(), "int32").astype(np.int64) + 1).astype(np.int32),
    )
    _same(b.numpy(), _saturated((x - 1.0).astype(np.float64).tolist(), "uint8"))


def test_in_range_float_to_int_casts_match_paddle(device, paddle):
    x = np.array([2.9, -2.9, 0.5, -0.5, 100.99, -100.99, 1.0e9], np.float32)
    _same(fw.to_tensor(x, device=device).astype("int32").numpy(), paddle.to_tensor(x).cast("int32").numpy())
    _same(fw.to_tensor(x, device=device).astype("int64").numpy(), paddle.to_tensor(x).cast("int64").numpy())
