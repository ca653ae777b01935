"""Differential tests against real Paddle for the tensor ops added for Paddle's docstring
examples (issue 40): each snippet runs under ``paddle`` (cpu) and under Oarlock on every
device, and the results are compared leaf by leaf (dtype, shape, values) by the parity
harness. Gradient cases return the inputs' ``.grad``. Random ops are checked by their
distribution (against numpy) and by shape and dtype against Paddle.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import framework as fw
from conformance.parity import OarlockSide, PaddleSide, capture, compare

RNG = np.random.default_rng(41)
A = RNG.standard_normal((3, 4)).astype(np.float32)
SQ = (RNG.standard_normal((3, 3)) * 0.6).astype(np.float32)
NAN = np.float32(np.nan)
WITH_NAN = np.array([[NAN, 2.0, 3.0, 1.0], [0.0, 1.0, 2.0, 5.0], [NAN, NAN, NAN, NAN]], np.float32)
INTS = np.array([[-10, -20, 40, 80], [16, -17, 32, 65]], np.int64)
SHIFTS = np.array([[1, 2, 3, 4], [2, 3, 0, 1]], np.int64)


@pytest.fixture(scope="module")
def sides():
    paddle = pytest.importorskip(
        "paddle", reason="real Paddle (the oracle) is not installed: pip install paddlepaddle"
    )
    warnings.simplefilter("ignore")
    return paddle, PaddleSide(), OarlockSide()


def _grads(P, fn, *arrays):
    ts = [P.to_tensor(a, stop_gradient=False) for a in arrays]
    out = fn(P, *ts)
    out.sum().backward()
    return [out, *[t.grad for t in ts]]


def _put(P, reduce, include_self):
    x = P.to_tensor([[10, 30, 20], [60, 40, 50]])
    idx = P.to_tensor([[0, 1], [0, 0]])
    return P.put_along_axis(x, idx, P.to_tensor([[1, 2], [3, 4]]), 0, reduce, include_self, False)


def _lu_solve(P):
    a = P.to_tensor([[3.0, 1.0, 0.5], [1.0, 2.0, -1.0], [0.0, 4.0, 1.0]], dtype="float64")
    lu, piv = P.linalg.lu(a)
    b = P.to_tensor([[9.0, 8.0], [9.0, 8.0], [1.0, -2.0]], dtype="float64")
    return [P.linalg.lu_solve(b, lu, piv), P.linalg.lu_solve(b, lu, piv, trans="T")]


def _tensor_array(P):
    arr = P.tensor.array.create_array("float32")
    P.tensor.array.array_write(P.to_tensor(A[:2, :2]), P.full([1], 0, "int64"), arr)
    P.tensor.array.array_write(P.to_tensor(A[:2, 1:]), P.full([1], 1, "int64"), arr)
    out, sizes = P.tensor.manipulation.tensor_array_to_tensor(input=arr)
    return [out, sizes, P.tensor.array.array_read(arr, P.full([1], 1, "int64"))]


def _set_resize(P):
    src, src2 = P.to_tensor([[11.0, 22.0, 33.0]]), P.to_tensor([11.0, 22.0, 33.0, 44.0, 55.0, 66.0])
    out = []
    for kw in (
        {},
        {"source": src},
        {"source": src, "shape": [2, 1]},
        {"source": src2, "shape": [3], "stride": [2]},
    ):
        x = P.to_tensor([1.0, 2.0, 3.0, 4.0, 5.0])
        x.set_(**kw)
        out.append(x)
    x = P.to_tensor([1.0, 2.0, 3.0, 4.0, 5.0])
    x.set_(src2, shape=[5], offset=4)
    shared = P.to_tensor([0.0])
    shared.set_(src)
    y, z = P.to_tensor([1.0, 2.0, 3.0]), P.to_tensor([1.0, 2.0, 3.0])
    y.resize_([2, 1])
    z.resize_([2, 3], fill_zero=True)
    return [*out, x, shared._is_shared_buffer_with(src), y, z]


CASES = {
    "frexp": lambda P: list(P.frexp(P.to_tensor([[1.0, -3.0, 0.0, 1e-40, 7.5e5, -0.25]]))),
    "nextafter": lambda P: [
        P.nextafter(
            P.to_tensor([0.0, 1.0, 1.0, -1.0, 2.0, 3.0]), P.to_tensor([1.0, 0.0, 1.0, -2.0, 5.0, -1.0])
        ),
        P.nextafter(P.to_tensor([1.0, 0.5], dtype="float64"), P.to_tensor([0.0, 1.0], dtype="float64")),
    ],
    "shift_left": lambda P: [
        P.bitwise_left_shift(P.to_tensor(INTS), P.to_tensor(SHIFTS)),
        P.bitwise_left_shift(P.to_tensor(INTS).astype("int8"), P.to_tensor(SHIFTS).astype("int8")),
    ],
    "shift_right": lambda P: [
        P.bitwise_right_shift(P.to_tensor(INTS), P.to_tensor(SHIFTS)),
        P.bitwise_right_shift(P.to_tensor(INTS), P.to_tensor(SHIFTS), is_arithmetic=False),
        P.bitwise_right_shift(
            P.to_tensor(INTS).astype("int8"), P.to_tensor(SHIFTS).astype("int8"), is_arithmetic=False
        ),
        P.bitwise_right_shift(P.to_tensor([200, 7], dtype="uint8"), P.to_tensor([1, 2], dtype="uint8")),
    ],
    "bitwise_invert": lambda P: P.to_tensor([-5, -1, 1]).bitwise_invert(),
    "range": lambda P: [
        P.range(5),
        P.range(3, 9, 2.0),
        P.range(4.999, dtype="float32"),
        P.range(P.to_tensor(3), 7),
    ],
    "median_min": lambda P: [
        *P.median(P.to_tensor(WITH_NAN), axis=1, mode="min"),
        P.median(P.arange(12).reshape([3, 4]), mode="min"),
        *P.median(P.arange(12).reshape([3, 4]), axis=0, keepdim=True, mode="min"),
    ],
    "nanmedian": lambda P: [
        P.nanmedian(P.to_tensor(WITH_NAN)),
        P.nanmedian(P.to_tensor(WITH_NAN), 1),
        P.nanmedian(P.to_tensor(WITH_NAN), (0, 1)),
        *P.nanmedian(P.to_tensor(WITH_NAN), 1, mode="min"),
        P.nanmedian(P.to_tensor(WITH_NAN), 0, keepdim=True),
    ],
    "quantile_axes": lambda P: [
        P.quantile(P.to_tensor(A), q=0.5, axis=[0, 1]),
        P.quantile(P.to_tensor(A), q=[0.3, 0.5], axis=[1, 0], keepdim=True),
    ],
    "nanquantile": lambda P: [
        P.nanquantile(P.to_tensor(WITH_NAN), q=0.5, axis=1),
        P.nanquantile(P.to_tensor(WITH_NAN), q=[0.3, 0.8], axis=0),
        P.nanquantile(P.to_tensor(WITH_NAN), q=0.8, axis=[0, 1], keepdim=True),
    ],
    "msort_argwhere": lambda P: [P.msort(P.to_tensor(A)), P.tensor.search.argwhere(P.to_tensor(A) > 0)],
    "put_along_axis_reduce": lambda P: [
        _put(P, r, s) for r in ("add", "mul", "mean", "amin", "amax") for s in (True, False)
    ],
    "put_along_axis_float_mean": lambda P: P.put_along_axis(
        P.to_tensor(A), P.to_tensor([[0, 2], [0, 0]]), P.to_tensor(A[:2, :2]), 1, "mean", True, False
    ),
    "scatter_reduce_and_add": lambda P: (
        [
            P.scatter_reduce(P.to_tensor(A), 0, P.zeros([2, 4], "int64"), P.to_tensor(A[:2]), r)
            for r in ("sum", "prod", "amin", "amax")
        ]
        + [P.scatter_add(P.to_tensor(A), 1, P.to_tensor([[3, 3], [0, 1]]), P.to_tensor(A[:2, :2]))]
    ),
    "matrix_exp": lambda P: [
        P.linalg.matrix_exp(P.to_tensor(SQ)),
        P.linalg.matrix_exp(P.to_tensor([[0, math.pi / 3], [-math.pi / 3, 0]])),
        P.linalg.matrix_exp(P.to_tensor(SQ * 6.0).astype("float64")),
    ],
    "householder_ormqr": lambda P: [
        P.linalg.householder_product(P.to_tensor(A.T), P.to_tensor([1.2, 0.7, 1.5])),
        P.linalg.ormqr(P.to_tensor(SQ), P.to_tensor([1.5, 1.9, 0.0]), P.to_tensor(A[:, :3])),
        P.linalg.ormqr(
            P.to_tensor(SQ), P.to_tensor([1.5, 1.9, 0.0]), P.to_tensor(A[:, :3]), left=False, transpose=True
        ),
    ],
    "lu_solve": _lu_solve,
    "histogramdd": lambda P: [
        *P.histogramdd(P.to_tensor(A[:, :2]), bins=[3, 2]),
        *P.histogramdd(
            P.to_tensor([[0.0, 0.0], [1.0, 1.0], [2.0, 2.0], [0.2, 0.9]]),
            bins=[2, 2],
            ranges=[0.0, 1.0, 0.0, 1.0],
            density=True,
            weights=P.to_tensor([1.0, 2.0, 3.0, 4.0]),
        ),
    ],
    "strided": lambda P: [
        P.as_strided(P.to_tensor(A), [2, 3], [4, 1], 4),
        P.unfold(P.arange(9, dtype="float64"), 0, 2, 4),
        P.unfold(P.arange(24).reshape([2, 3, 4]), 1, 2, 1),
        P.view(P.to_tensor(A), [6, -1]),
        P.view(P.to_tensor(A), "int32"),
        P.view_as(P.to_tensor(A), P.zeros([2, 6])),
    ],
    "tensor_array": _tensor_array,
    "set_resize": _set_resize,
    "isin_assume_unique": lambda P: [
        P.isin(
            P.to_tensor([0.0, 1.0, 2.0] * 20).reshape([20, 3]),
            P.to_tensor([0.0, 1.0] * 20),
            assume_unique=True,
        ),
        P.isin(P.to_tensor([3, 1, 2, 1, 5]), P.to_tensor([1, 1, 5, 2]), assume_unique=True, invert=True),
        P.isin(P.to_tensor([-0.0, -2.1, 2.5, 1.0]), P.to_tensor([-2.1, 2.5]), assume_unique=True),
    ],
    "bernoulli_p": lambda P: P.bernoulli(P.to_tensor(A * 0 + 0.5), p=0.0),
    # gradients
    "grad_frexp_mantissa": lambda P: _grads(P, lambda P, a: P.frexp(a)[0] * P.to_tensor(A), A),
    "grad_matrix_exp": lambda P: _grads(P, lambda P, a: P.linalg.matrix_exp(a) * P.to_tensor(SQ), SQ),
    "grad_nanquantile": lambda P: _grads(P, lambda P, a: P.nanquantile(a, 0.4, axis=1), WITH_NAN[:2]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_oarlock_matches_paddle(sides, case, device):
    paddle, paddle_side, oarlock_side = sides
    want = capture(paddle_side, CASES[case](paddle))
    with fw.device(device):
        got = capture(oarlock_side, CASES[case](fw))
    diff = compare(want, got, random=set())
    assert not diff, f"{case} on {device}: {diff}"


@pytest.mark.parametrize("device_only", ["composites"])
def test_the_new_composites_run_on_the_device_without_fallback(device, device_only):
    fw.reset_fallback_stats()
    with fw.device(device):
        x = fw.to_tensor(WITH_NAN)
        fw.nanmedian(x, 1)
        fw.nanquantile(x, [0.2, 0.7], axis=0)
        fw.frexp(fw.to_tensor(A))
        fw.nextafter(fw.to_tensor(A), fw.zeros([3, 4]))
        fw.bitwise_right_shift(fw.to_tensor(INTS), fw.to_tensor(SHIFTS), is_arithmetic=False)
        fw.put_along_axis(
            fw.to_tensor(A), fw.zeros([2, 4], "int64"), fw.ones([2, 4]), 0, "amax", False, False
        )
        fw.linalg.matrix_exp(fw.to_tensor(SQ))
        fw.unfold(fw.arange(9.0), 0, 2, 3)
    assert fw.fallback_stats() == {}, f"fell back on {device}: {fw.fallback_stats()}"


def test_random_fills_follow_their_distributions(device):
    with fw.device(device):
        fw.seed(7)
        n = 20000
        u = fw.zeros([n]).random_(0, 4).numpy()
        assert set(np.unique(u)) == {0.0, 1.0, 2.0, 3.0} and abs(u.mean() - 1.5) < 0.05
        c = fw.zeros([n]).cauchy_(1.0, 2.0).numpy()
        assert abs(np.median(c) - 1.0) < 0.1 and abs(np.quantile(c, 0.75) - 3.0) < 0.2
        g = fw.zeros([n]).geometric_(0.3).numpy()  # Paddle's: log(u) / log(1 - p), not rounded
        assert g.min() >= 0 and abs(g.mean() - (-1.0 / math.log(0.7))) < 0.1
        ln = fw.zeros([n], dtype="float64").log_normal_(0.5, 0.25).numpy()
        assert abs(np.log(ln).mean() - 0.5) < 0.01 and abs(np.log(ln).std() - 0.25) < 0.01
        b = fw.binomial(fw.full([n], 20.0), fw.full([n], 0.3)).numpy()
        assert b.dtype == np.int64 and abs(b.mean() - 6.0) < 0.1 and abs(b.var() - 4.2) < 0.3
        for shape in (0.4, 3.0):
            s = fw.standard_gamma(fw.full([n], shape)).numpy()
            assert abs(s.mean() - shape) < 0.05 * max(shape, 1) and abs(s.var() - shape) < 0.1 * max(shape, 1)


def test_random_ops_match_paddle_in_shape_and_dtype(sides):
    paddle, paddle_side, oarlock_side = sides

    def run(P):
        x = P.zeros([2, 3])
        return [
            x.clone().cauchy_(),
            x.clone().geometric_(0.5),
            x.clone().log_normal_(),
            P.binomial(P.to_tensor([10.0, 50.0]), P.to_tensor([0.2, 0.6])),
            P.standard_gamma(P.full([2, 3], 2.0)),
            P.bernoulli(P.full([2, 3], 0.5)),
        ]

    want, got = capture(paddle_side, run(paddle)), capture(oarlock_side, run(fw))
    diff = compare(want, got, random=None)  # random: dtype and shape only
    assert not diff, diff


def test_bad_arguments_name_the_op():
    with pytest.raises(fw.OpArgumentError, match=r"\[bitwise_left_shift\].*integer"):
        fw.bitwise_left_shift(fw.ones([2]), fw.ones([2]))
    with pytest.raises(fw.OpArgumentError, match=r"\[put_along_axis\] reduce must be"):
        fw.put_along_axis(fw.ones([2]), fw.zeros([1], "int64"), 1.0, 0, "median")
    with pytest.raises(fw.OpArgumentError, match=r"\[nextafter\]"):
        fw.nextafter(fw.ones([2]), fw.ones([2], dtype="float64"))
    with pytest.raises(fw.OpArgumentError, match=r"\[as_strided\].*reach flat element"):
        fw.as_strided(fw.ones([4]), [2, 2], [2, 2])
    with pytest.raises(fw.OpArgumentError, match=r"\[histogramdd\] ranges"):
        fw.histogramdd(fw.ones([3, 2]), bins=2, ranges=[0.0, 1.0])
    with pytest.raises(fw.OpArgumentError, match=r"\[unfold\] size"):
        fw.unfold(fw.ones([3]), 0, 4, 1)


def test_svd_lowrank_recovers_the_singular_values(device):
    a = RNG.standard_normal((2, 7, 4))
    with fw.device(device):
        fw.seed(3)
        u, s, v = fw.linalg.svd_lowrank(fw.to_tensor(a))
        assert (u.shape, s.shape, v.shape) == ((2, 7, 4), (2, 4), (2, 4, 4))
        np.testing.assert_allclose(s.numpy(), np.linalg.svd(a, compute_uv=False), rtol=1e-8)
        back = np.einsum("bik,bk,bjk->bij", u.numpy(), s.numpy(), v.numpy())
        np.testing.assert_allclose(back, a, atol=1e-10)
        rank2 = RNG.standard_normal((7, 2)) @ RNG.standard_normal((2, 4)) + 5.0  # rank 2 once centred
        _, s1, _ = fw.linalg.pca_lowrank(fw.to_tensor(rank2), q=2)
        centred = rank2 - rank2.mean(0)
        np.testing.assert_allclose(s1.numpy(), np.linalg.svd(centred, compute_uv=False)[:2], rtol=1e-8)


def test_mmap_storage_reads_a_file_as_paddle_does(sides, tmp_path):
    paddle, paddle_side, oarlock_side = sides
    path = str(tmp_path / "t.bin")
    np.arange(20, dtype=np.float32).tofile(path)

    def run(P):
        t = P.MmapStorage(path, 80)
        return [
            t.get_slice(dtype=P.float32, start=0, stop=20).reshape([4, 5]),
            t.get_slice("float32", 3, 11, 2),
        ]

    diff = compare(capture(paddle_side, run(paddle)), capture(oarlock_side, run(fw)), random=set())
    assert not diff, diff
