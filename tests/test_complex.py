"""Complex tensors (issue 40): complex64/complex128 through the public API, against numpy
(values) and real Paddle (dtypes, values and gradients: Paddle's conjugate Wirtinger
convention), on the cpu plugin; and on the OpenCL plugin, which holds no complex dtype, the
declared CPU fallback (a FallbackWarning, or in strict mode an error naming op and dtype)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import framework as fw

RNG = np.random.default_rng(40)
A = (RNG.standard_normal((2, 3)) + 1j * RNG.standard_normal((2, 3))).astype(np.complex64)
B = (RNG.standard_normal((2, 3)) + 1j * RNG.standard_normal((2, 3))).astype(np.complex64)
M = (RNG.standard_normal((3, 2)) + 1j * RNG.standard_normal((3, 2))).astype(np.complex64)
R = RNG.standard_normal((2, 3)).astype(np.float32)
RR = np.stack([R, 2 * R], -1)
SIG = (RNG.standard_normal((3, 6)) + 1j * RNG.standard_normal((3, 6))).astype(np.complex64)
SIGR = RNG.standard_normal((3, 6)).astype(np.float32)
W6 = (RNG.standard_normal((3, 6)) + 1j * RNG.standard_normal((3, 6))).astype(np.complex64)


@pytest.fixture(scope="module")
def paddle():
    p = pytest.importorskip(
        "paddle", reason="real Paddle (the oracle) is not installed: pip install paddlepaddle"
    )
    warnings.simplefilter("ignore")
    return p


def _close(got: np.ndarray, want: np.ndarray, what: str, rtol: float = 1e-4, atol: float = 1e-5) -> None:
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype}, expected {want.dtype}"
    assert got.shape == want.shape, f"{what}: shape {got.shape}, expected {want.shape}"
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=what)


# -- dtypes, creation, printing, promotion ---------------------------------------------------------
def test_dtypes_and_to_tensor():
    assert fw.complex64 == np.complex64 and fw.complex128 == np.complex128
    assert fw.dtype("complex64") is fw.complex64 and isinstance(fw.complex128, fw.dtype)
    assert fw.to_tensor(1 + 2j).dtype == fw.complex64
    assert fw.to_tensor([[1.5 + 2j], [3j]]).dtype == fw.complex64
    assert fw.to_tensor(np.array([1j])).dtype == fw.complex128  # numpy arrays keep their dtype
    assert fw.to_tensor([1, 2], dtype="complex128").tolist() == [1 + 0j, 2 + 0j]
    fw.set_default_dtype("float64")
    try:
        assert fw.to_tensor([1j]).dtype == fw.complex128
    finally:
        fw.set_default_dtype("float32")
    assert fw.is_complex(fw.to_tensor([1j])) and not fw.is_complex(fw.to_tensor([1.0]))


def test_printing_matches_paddle(paddle):
    v = [[1 + 2j, 3 - 4.5j], [0.25j, -1.0]]
    body = lambda s: s.split("\n", 1)[1].strip()  # noqa: E731
    assert body(repr(fw.to_tensor(v))) == body(repr(paddle.to_tensor(v)))


@pytest.mark.parametrize(
    "a, b",
    [
        ("float32", "complex64"),
        ("float64", "complex64"),
        ("int64", "complex64"),
        ("complex64", "complex128"),
        ("float16", "complex64"),
        ("bool", "complex128"),
    ],
)
def test_promotion_matches_paddle(paddle, a, b):
    x, y = np.ones(2, a), np.ones(2, b)
    want = str(paddle.add(paddle.to_tensor(x), paddle.to_tensor(y)).dtype).replace("paddle.", "")
    assert str((fw.to_tensor(x) + fw.to_tensor(y)).dtype) == want


def test_scalar_promotion_matches_paddle(paddle):
    for dt in ("float32", "float64", "int64", "complex64", "complex128"):
        for s in (2, 2.5, 1j):
            if dt == "int64" and isinstance(s, complex):
                continue  # Paddle refuses complex scalars with integer tensors
            want = str((paddle.to_tensor(np.ones(2, dt)) * s).dtype).replace("paddle.", "")
            assert str((fw.to_tensor(np.ones(2, dt)) * s).dtype) == want, (dt, s)


# -- forward values against numpy ------------------------------------------------------------------
FORWARD = {
    "add": (lambda a, b: a + b, lambda a, b: a + b),
    "sub": (lambda a, b: a - b, lambda a, b: a - b),
    "mul": (lambda a, b: a * b, lambda a, b: a * b),
    "div": (lambda a, b: a / b, lambda a, b: a / b),
    "neg": (lambda a, b: -a, lambda a, b: -a),
    "scalar": (
        lambda a, b: a * 2.0 + 1j - 3,
        lambda a, b: a * np.float32(2) + np.complex64(1j) - np.float32(3),
    ),
    "matmul": (lambda a, b: fw.matmul(a, b.T), lambda a, b: a @ b.T),
    "sum": (lambda a, b: a.sum(axis=1), lambda a, b: a.sum(axis=1)),
    "mean": (lambda a, b: a.mean(), lambda a, b: np.complex64(a.mean())),
    "abs": (lambda a, b: fw.abs(a), lambda a, b: np.abs(a)),
    "conj": (lambda a, b: fw.conj(a), lambda a, b: np.conj(a)),
    "real": (lambda a, b: fw.real(a), lambda a, b: a.real),
    "imag": (lambda a, b: fw.imag(a), lambda a, b: a.imag),
    "angle": (lambda a, b: fw.angle(a), lambda a, b: np.angle(a)),
    "exp": (lambda a, b: fw.exp(a), lambda a, b: np.exp(a)),
    "log": (lambda a, b: fw.log(a), lambda a, b: np.log(a)),
    "sqrt": (lambda a, b: fw.sqrt(a), lambda a, b: np.sqrt(a)),
    "reshape_transpose": (lambda a, b: a.reshape([3, 2]).transpose([1, 0]), lambda a, b: a.reshape(3, 2).T),
    "concat": (lambda a, b: fw.concat([a, b], axis=0), lambda a, b: np.concatenate([a, b], 0)),
    "index": (lambda a, b: a[1, ::2], lambda a, b: a[1, ::2]),
    "cast_real": (lambda a, b: a.astype("float32"), lambda a, b: a.real.astype(np.float32)),
    "cast_c128": (lambda a, b: a.astype("complex128"), lambda a, b: a.astype(np.complex128)),
    "eq": (lambda a, b: a == b, lambda a, b: a == b),
    "where": (lambda a, b: fw.where(fw.abs(a) > 1.0, a, b), lambda a, b: np.where(np.abs(a) > 1, a, b)),
    "sgn": (lambda a, b: fw.sgn(a), lambda a, b: a / np.abs(a)),
    "isreal": (lambda a, b: fw.isreal(a * 0 + 1), lambda a, b: np.ones(a.shape, bool)),
}


@pytest.mark.parametrize("case", sorted(FORWARD))
def test_forward_against_numpy(case):
    f, ref = FORWARD[case]
    got = f(fw.to_tensor(A), fw.to_tensor(B)).numpy()
    _close(got, ref(A, B), case)


def test_views_share_storage_and_parts():
    z = fw.to_tensor(A)
    r = fw.as_real(z)
    _close(r.numpy(), np.stack([A.real, A.imag], -1), "as_real")
    _close(fw.as_complex(r).numpy(), A, "as_complex")
    _close(
        fw.complex(fw.to_tensor(R), fw.to_tensor(2 * R)).numpy(), (R + 2j * R).astype(np.complex64), "complex"
    )
    _close(
        fw.polar(fw.to_tensor(np.abs(R)), fw.to_tensor(R)).numpy(),
        (np.abs(R) * np.exp(1j * R)).astype(np.complex64),
        "polar",
    )
    assert fw.complex(fw.to_tensor(R), fw.to_tensor(R).astype("float64")).dtype == fw.complex128


def test_errors_name_the_api():
    with pytest.raises(fw.OarlockError, match=r"\[as_complex\].*last dim"):
        fw.as_complex(fw.ones([2, 3]))
    with pytest.raises(fw.OarlockError, match=r"\[as_real\].*complex"):
        fw.as_real(fw.ones([2]))
    with pytest.raises(fw.OarlockError, match=r"\[complex\] real must be float32 or float64, got int64"):
        fw.complex(fw.to_tensor([1]), fw.to_tensor([1.0]))
    with pytest.raises(fw.OarlockError, match=r"\[rfft\] expected a real tensor, got complex64"):
        fw.fft.rfft(fw.to_tensor(A))
    with pytest.raises(fw.OarlockError, match=r"\[fft\] norm must be one of"):
        fw.fft.fft(fw.to_tensor(A), norm="half")
    with pytest.raises(fw.OarlockError, match=r"\[floor\].*complex64"):
        fw.floor(fw.to_tensor(A))  # a float-only op: no kernel for complex, never the real part silently


# -- gradients against real Paddle --------------------------------------------------------------
GRADS = {
    "mul": (lambda P, a, b: a * b, [A, B]),
    "div": (lambda P, a, b: a / b, [A, B]),
    "add_sub_neg": (lambda P, a, b: -(a + b - a * 2), [A, B]),
    "matmul": (lambda P, a, m: P.matmul(a, m), [A, M]),
    "sum_mean": (lambda P, a, b: (a * b).mean() + a.sum(), [A, B]),
    "real": (lambda P, a: P.real(a) * P.to_tensor(R), [A]),
    "imag": (lambda P, a: P.imag(a) * P.to_tensor(R), [A]),
    "abs": (lambda P, a: P.abs(a) * P.to_tensor(R), [A]),
    "angle": (lambda P, a: P.angle(a) * P.to_tensor(R), [A]),
    "conj": (lambda P, a: P.conj(a) * P.to_tensor(B), [A]),
    "as_real": (lambda P, a: P.as_real(a) * P.to_tensor(RR), [A]),
    "as_complex": (lambda P, r: P.as_complex(r) * P.to_tensor(A), [RR]),
    "complex": (lambda P, r, i: P.complex(r, i) * P.to_tensor(A), [R, 2 * R]),
    "exp_log_sqrt": (lambda P, a: P.exp(a) + P.log(a) * P.sqrt(a), [A]),
    "real_times_complex": (lambda P, r, b: r * b, [R, B]),
    "sin_cos_tanh": (lambda P, a: P.sin(a) * P.cos(a) + P.tanh(a), [A]),
    "pow": (lambda P, a, b: P.pow(a, b) + a**2, [A, B]),
    "cast": (lambda P, r: r.astype("complex64") * P.to_tensor(B), [R]),
    "fft": (lambda P, x: P.fft.fft(x, n=4, norm="ortho") * P.to_tensor(W6[:, :4]), [SIG]),
    "ifft2": (lambda P, x: P.fft.ifft2(x) * P.to_tensor(W6), [SIG]),
    "fft_of_real": (lambda P, x: P.fft.fftn(x, s=[2, 5]), [SIGR]),
    "rfft": (lambda P, x: P.fft.rfft(x, n=5) * P.to_tensor(W6[:, :3]), [SIGR]),
    "irfft": (lambda P, x: P.fft.irfft(x, n=7, norm="forward") * P.to_tensor(np.tile(SIGR, 2)[:, :7]), [SIG]),
    "hfft": (lambda P, x: P.fft.hfft(x) * P.to_tensor(np.tile(SIGR, 2)[:, :10]), [SIG]),
    "ihfft": (lambda P, x: P.fft.ihfft(x) * P.to_tensor(W6[:, :4]), [SIGR]),
}


def _run_grads(P, fn, arrays):
    ts = [P.to_tensor(a, stop_gradient=False) for a in arrays]
    out = fn(P, *ts)
    out.sum().backward()
    return [np.asarray(out.numpy()), *[np.asarray(t.grad.numpy()) for t in ts]]


@pytest.mark.parametrize("case", sorted(GRADS))
def test_values_and_gradients_match_paddle(paddle, case):
    fn, arrays = GRADS[case]
    want = _run_grads(paddle, fn, arrays)
    got = _run_grads(fw, fn, arrays)
    for i, (g, w) in enumerate(zip(got, want)):
        _close(g, w, f"{case}: {'output' if i == 0 else f'gradient of input {i - 1}'}", atol=1e-4)


def test_prod_gradient_is_conjugated():
    # Paddle 3.3.1 does not conjugate prod's complex gradient (unlike its mul's): this one
    # keeps the convention every other op follows, d/dx_i of prod is conj(prod / x_i)
    t = fw.to_tensor(A, stop_gradient=False)
    fw.prod(t, axis=1).sum().backward()
    _close(t.grad.numpy(), np.conj(np.prod(A, axis=1, keepdims=True) / A), "prod gradient")


def test_eig_is_complex_as_paddle(paddle):
    x = np.array([[2.0, -1.0, 0.5], [1.0, 2.0, 0.0], [0.3, 0.0, 1.0]], np.float32)  # a complex pair
    w, v = fw.linalg.eig(fw.to_tensor(x))
    pw, pv = paddle.linalg.eig(paddle.to_tensor(x))
    _close(w.numpy(), pw.numpy(), "eig values")
    _close(v.numpy(), pv.numpy(), "eig vectors")
    _close(
        fw.linalg.eigvals(fw.to_tensor(x.astype(np.float64))).numpy(),
        np.linalg.eigvals(x.astype(np.complex128)),
        "eigvals",
    )
    h = np.array([[1, -2j], [2j, 5]], np.complex64)
    hw, hv = fw.linalg.eigh(fw.to_tensor(h))
    _close(hw.numpy(), paddle.linalg.eigh(paddle.to_tensor(h))[0].numpy(), "eigh of a Hermitian matrix")


def test_randn_complex_parts_have_variance_one_half():
    fw.seed(3)
    z = fw.randn([4000], dtype="complex64")
    assert z.dtype == fw.complex64
    assert (
        abs(float(fw.real(z).numpy().var()) - 0.5) < 0.05
        and abs(float(fw.imag(z).numpy().var()) - 0.5) < 0.05
    )


# -- a plugin without complex kernels --------------------------------------------------------------
def test_opencl_falls_back_or_raises_never_silently():
    try:
        fw.device_count("opencl")
    except fw.OarlockError:
        pytest.skip("no OpenCL plugin or device here")
    z = fw.to_tensor(A, device="opencl")
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        got = fw.matmul(z * z, fw.to_tensor(M, device="opencl"))
    assert got.device.type == "opencl"
    _close(got.numpy(), (A * A) @ M, "matmul on opencl", rtol=1e-4)
    assert any(issubclass(w.category, fw.FallbackWarning) and "complex64" in str(w.message) for w in seen)
    fw.set_strict_kernels(True)
    try:
        with pytest.raises(fw.KernelNotFoundError, match=r"\[mul\].*complex64"):
            z * z
    finally:
        fw.set_strict_kernels(False)


def test_traced_programs_take_complex_arithmetic_and_refuse_the_views():
    z, w = fw.to_tensor(A), fw.to_tensor(B)
    prog = fw.jit.to_static(lambda a, b: (a * b).sum())
    _close(prog(z, w).numpy(), np.complex64((A * B).sum()), "traced complex product")
    with pytest.raises(fw.OarlockError, match=r"\[as_real\] complex tensors cannot be traced yet"):
        fw.jit.to_static(lambda a: fw.real(a))(z)
