"""``paddle.tensor``'s remaining names (issue 40), each reached through its submodule path
(``fw.tensor.logic.equal_``) and checked against real Paddle 3.3 on the same snippet: values,
dtypes, shapes, what the in-place forms do to ``x`` (dtype, shape, identity) and gradients.

The last test counts, for every public function of every ``paddle.tensor`` submodule of the
installed wheel, whether ``framework.tensor.<sub>.<name>`` exists, and asserts that the names
still missing are exactly :data:`OMITTED`, each with its reason (so the count cannot regress).
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import numpy as np
import pytest

import framework
from conformance.parity import capture, compare
from tests import test_paddle_parity as _parity

sides = _parity.sides  # the fixture: real Paddle and both parity sides
RNG = np.random.default_rng(41)
A = RNG.standard_normal((3, 4)).astype(np.float32)
B = RNG.standard_normal((3, 4)).astype(np.float32)
I1 = np.array([[5, 0, 3, -7], [1, 2, 9, 4], [0, 0, -1, 6]], np.int32)
I2 = np.array([[3, 0, 1, 7], [1, 6, 9, 5], [2, 0, 1, 6]], np.int32)
COND = A > B


def _check(sides, case, fw_device=None):
    paddle, paddle_side, oarlock_side = sides
    want = capture(paddle_side, case(paddle))
    if fw_device is None:
        got = capture(oarlock_side, case(framework))
    else:
        with framework.device(fw_device):
            got = capture(oarlock_side, case(framework))
    diff = compare(want, got, random=set())
    assert not diff, diff


RELATIONAL = [
    "equal_",
    "not_equal_",
    "less_than_",
    "less_",
    "less_equal_",
    "greater_than_",
    "greater_equal_",
    "logical_and_",
    "logical_or_",
    "logical_xor_",
]


def _relational(P, name, a, b):
    x = P.to_tensor(a)
    r = getattr(P.tensor.logic, name)(x, P.to_tensor(b))
    return [r, x, r is x]


@pytest.mark.parametrize("name", RELATIONAL)
@pytest.mark.parametrize("dtype", ["float32", "int32", "bool"])
def test_relational_inplace_makes_x_bool(sides, name, dtype):
    """Paddle turns ``x`` itself into a bool tensor (float32 and int32 alike)."""
    a, b = (A, np.where(COND, A, B)) if dtype == "float32" else (I1, I2)
    _check(sides, lambda P: _relational(P, name, a.astype(dtype), b.astype(dtype)))


def test_relational_inplace_broadcasts_y_and_methods(sides):
    def case(P):
        x = P.to_tensor(A)
        r = x.greater_than_(P.to_tensor(B[0]))  # y broadcasts to x's shape
        z = P.to_tensor(I1)
        P.tensor.logic.logical_not_(z)
        return [r, x, z]

    _check(sides, case)


def test_relational_inplace_refuses_a_result_larger_than_x():
    with pytest.raises(framework.OpArgumentError, match=r"\[equal_\] result shape \(2, 3\) differs"):
        framework.tensor.logic.equal_(framework.ones([3]), framework.ones([2, 3]))


@pytest.mark.parametrize("name", ["bitwise_and_", "bitwise_or_", "bitwise_xor_", "bitwise_not_"])
@pytest.mark.parametrize("dtype", ["int32", "bool"])
def test_bitwise_inplace_keeps_the_dtype(sides, name, dtype):
    def case(P):
        x = P.to_tensor(I1.astype(dtype))
        fn = getattr(P.tensor.logic, name)
        r = fn(x) if name == "bitwise_not_" else fn(x, P.to_tensor(I2.astype(dtype)))
        return [r, x, r is x]

    _check(sides, case)


def test_bitwise_inplace_refuses_floats():
    with pytest.raises(framework.OpArgumentError, match="bitwise_and"):
        framework.ones([2]).bitwise_and_(framework.ones([2]))


@pytest.mark.parametrize(
    "name,lo,hi",
    [
        ("asin_", -0.9, 0.9),
        ("acos_", -0.9, 0.9),
        ("sinh_", -2.0, 2.0),
        ("cosh_", -2.0, 2.0),
        ("asinh_", -3.0, 3.0),
        ("acosh_", 1.1, 4.0),
        ("atanh_", -0.9, 0.9),
        ("erf_", -2.0, 2.0),
    ],
)
def test_ops_inplace_unary(sides, name, lo, hi):
    """``paddle.tensor.ops``'s in-place functions: values, and gradients through a non-leaf."""
    v = np.linspace(lo, hi, 12, dtype=np.float32).reshape(3, 4)

    def case(P):
        x = P.to_tensor(v)
        r = getattr(P.tensor.ops, name)(x)
        a = P.to_tensor(v, stop_gradient=False)
        y = a * 1.0
        getattr(P.tensor.ops, name)(y)
        (y * P.to_tensor(A)).sum().backward()
        return [r, x, r is x, y, a.grad]

    _check(sides, case)


def test_cast_inplace_values_dtype_and_gradient(sides):
    def case(P):
        x = P.to_tensor(A * 3)
        r = P.tensor.manipulation.cast_(x, "int32")
        a = P.to_tensor(A, stop_gradient=False)
        y = a * 2.0
        y.cast_("float64")
        (y * y).sum().backward()
        return [r, x, r is x, y, a.grad]

    _check(sides, case)


def test_t_and_transpose_inplace_with_gradients(sides):
    c = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    w = RNG.standard_normal((4, 2, 3)).astype(np.float32)

    def case(P):
        a = P.to_tensor(A, stop_gradient=False)
        y = a * 2.0
        r = P.tensor.linalg.t_(y)
        (y * P.to_tensor(A.T.copy())).sum().backward()
        b = P.to_tensor(c, stop_gradient=False)
        z = b * 1.5
        s = P.tensor.linalg.transpose_(z, [2, 0, 1])
        (z * z * P.to_tensor(w)).sum().backward()
        v = P.to_tensor([1.0, 2.0])
        return [r, y, r is y, a.grad, s, z, s is z, b.grad, P.tensor.linalg.t_(v) is v]

    _check(sides, case)


def test_t_inplace_refuses_three_dims():
    with pytest.raises(framework.OpArgumentError, match=r"\[t_\] expects at most 2 dimensions"):
        framework.ones([2, 2, 2]).t_()


def test_where_inplace_writes_into_x_with_gradients(sides):
    def case(P):
        a = P.to_tensor(A, stop_gradient=False)
        b = P.to_tensor(B, stop_gradient=False)
        x = a * 1.0
        r = P.tensor.search.where_(P.to_tensor(COND), x, b * 2.0)
        (r * P.to_tensor(A)).sum().backward()
        # x broadcasts: Paddle returns a new tensor and leaves x alone
        x2 = P.to_tensor(A[0])
        r2 = P.tensor.search.where_(P.to_tensor(COND), x2, P.to_tensor(B))
        return [r, x, r is x, a.grad, b.grad, r2, x2, r2 is x2]

    _check(sides, case)


def test_where_inplace_refuses_a_non_bool_condition():
    x = framework.ones([2])
    with pytest.raises(
        framework.OpArgumentError, match=r"\[where_\] condition must be a bool tensor, got float32"
    ):
        framework.tensor.search.where_(x, x, x)


def test_scatter_add_inplace_with_gradients(sides):
    idx = np.array([[1, 0, 2, 1], [0, 0, 0, 2]], np.int64)

    def case(P):
        a = P.to_tensor(A, stop_gradient=False)
        s = P.to_tensor(B[:2], stop_gradient=False)
        x = a * 1.0
        r = P.tensor.manipulation.scatter_add_(x, 0, P.to_tensor(idx), s * 3.0)
        (r * P.to_tensor(B)).sum().backward()
        y = P.to_tensor(I1)
        y.scatter_add_(1, P.to_tensor([[3], [0], [1]]), P.to_tensor(I2))  # index smaller than src
        return [r, x, r is x, a.grad, s.grad, y]

    _check(sides, case)


DEVICE_CASES = {
    "relational": lambda P: _relational(P, "less_equal_", A, B),
    "logical": lambda P: _relational(P, "logical_xor_", A, np.where(COND, 0.0, B).astype(np.float32)),
    "cast_transpose": lambda P: [P.tensor.manipulation.cast_(P.to_tensor(A), "float64").transpose_([1, 0])],
    "where": lambda P: [P.tensor.search.where_(P.to_tensor(COND), P.to_tensor(A), P.to_tensor(B))],
    "scatter_add": lambda P: [
        P.to_tensor(A).scatter_add_(1, P.to_tensor([[3, 3], [0, 1], [2, 2]]), P.to_tensor(B[:, :2]))
    ],
    "asinh": lambda P: [P.to_tensor(A).asinh_()],
}


@pytest.mark.parametrize("case", sorted(DEVICE_CASES))
def test_inplace_forms_on_each_device(sides, device, case):
    _check(sides, DEVICE_CASES[case], fw_device=device)


def test_random_names_shapes_dtypes_and_identity_match_paddle(sides):
    """Values are random on both sides: shapes, dtypes, ``stop_gradient`` and identity compared."""

    def case(P):
        R = P.tensor.random
        x = P.zeros([2, 3], "float64")
        y = R.gaussian_(x, mean=3.0, std=0.5)
        return [
            R.gaussian([2, 3]),
            R.gaussian([4], mean=1.0, std=2.0, seed=5, dtype="float64"),
            R.gaussian([3], mean=1 + 1j, dtype="complex64"),
            R.gaussian([2], requires_grad=True).stop_gradient,
            [y, y is x],
            R.log_normal(shape=[2, 3]),
            R.log_normal(mean=P.to_tensor([1.0, 2.0], "float64"), std=0.5, shape=[7]),
            R.log_normal(mean=0.0, std=P.to_tensor([1.0, 2.0, 3.0])),
            R.uniform_random_batch_size_like(P.zeros([3, 7]), [2, 5]),
            R.uniform_random_batch_size_like(P.zeros([3, 7]), [2, 5], "float64", 1, 1, 2.0, 5.0, seed=3),
        ]

    paddle, paddle_side, oarlock_side = sides
    diff = compare(capture(paddle_side, case(paddle)), capture(oarlock_side, case(framework)), random=None)
    assert not diff, diff


def test_random_names_follow_their_distributions():
    R = framework.tensor.random
    n = 200_000
    z = R.gaussian([n], mean=1.5, std=2.0).numpy()
    assert abs(z.mean() - 1.5) < 0.03 and abs(z.std() - 2.0) < 0.03
    c = R.gaussian([n], mean=1 + 1j, std=2.0, dtype="complex128").numpy()
    assert c.dtype == np.complex128
    np.testing.assert_allclose([c.real.mean(), c.imag.mean()], [1.0, 1.0], atol=0.02)
    np.testing.assert_allclose([c.real.std(), c.imag.std()], [2.0 / np.sqrt(2.0)] * 2, atol=0.02)
    x = framework.zeros([n])
    R.gaussian_(x, mean=-1.0, std=0.5)
    assert abs(x.numpy().mean() + 1.0) < 0.01 and abs(x.numpy().std() - 0.5) < 0.01
    ln = np.log(R.log_normal(mean=framework.full([n], 0.5), std=0.3).numpy())
    assert abs(ln.mean() - 0.5) < 0.01 and abs(ln.std() - 0.3) < 0.01
    u = R.uniform_random_batch_size_like(framework.zeros([n, 1]), [1, 2], min=2.0, max=5.0).numpy()
    assert u.shape == (n, 2) and u.min() >= 2.0 and u.max() < 5.0 and abs(u.mean() - 3.5) < 0.02
    # a non-zero seed gives the same numbers each call, another seed others
    a, b = R.gaussian([5], seed=5).numpy(), R.gaussian([5], seed=5).numpy()
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, R.gaussian([5], seed=6).numpy())


@pytest.mark.parametrize(
    "call,match",
    [
        (
            lambda R: R.gaussian([2], dtype="int32"),
            r"\[gaussian\] dtype must be a float or complex dtype, got int32",
        ),
        (
            lambda R: R.gaussian([2], mean=1 + 1j),
            r"\[gaussian\] a complex mean \(1\+1j\) needs a complex dtype",
        ),
        (lambda R: R.gaussian([2], mean=1 + 2j, dtype="complex64"), "equal real and imaginary parts"),
        (lambda R: R.log_normal(), r"\[log_normal\] give shape"),
        (
            lambda R: R.uniform_random_batch_size_like(framework.zeros([2]), [3], input_dim_idx=1),
            r"input_dim_idx 1 is out of range for 1 dims",
        ),
    ],
)
def test_random_names_refuse_bad_arguments(call, match):
    with pytest.raises(framework.OpArgumentError, match=match):
        call(framework.tensor.random)


def test_creation_names_match_paddle(sides):
    def case(P):
        C = P.tensor.creation
        out = P.zeros([2], "int64")
        f = C.fill_constant([2], "int64", 7, out=out)
        g = C.create_global_var([2, 3], 1.5, "float32", persistable=True, name="gv")
        b = C.create_parameter([3], "float32", is_bias=True)
        w = C.create_parameter([4, 5], "float64")
        t = C.tensor([[0.1, 0.2], [0.3, 0.4]], requires_grad=True)
        IntTensor = C.dtype_tensor_factory("int32")
        return [
            C.fill_constant([2, 3], "float32", 2.5),
            C.fill_constant(3, "bool", True, force_cpu=True),
            [f, f is out, f.stop_gradient],
            [g, g.persistable, g.name, g.stop_gradient],
            [b, b.stop_gradient, w.shape, w.dtype, w.stop_gradient],
            [t, t.stop_gradient, C.tensor(1), C.tensor(1.5), C.tensor([1 + 1j, 2], dtype="complex64")],
            [IntTensor([1, 2]), IntTensor(2, 3).shape, IntTensor(2, 3).dtype, IntTensor().shape],
        ]

    _check(sides, case)


def test_create_parameter_draws_xavier_uniform():
    w = framework.tensor.creation.create_parameter([200, 300], "float32").numpy()
    bound = np.sqrt(6.0 / (200 + 300))
    assert w.min() >= -bound and w.max() <= bound and abs(w.std() - bound / np.sqrt(3.0)) < 0.002


def test_fill_constant_refuses_an_out_of_another_dtype():
    with pytest.raises(
        framework.OpArgumentError, match=r"\[fill_constant\] out's dtype is float32, expected dtype int64"
    ):
        framework.tensor.creation.fill_constant([2], "int64", 1, out=framework.zeros([2]))


def test_compat_softmax_matches_paddle_with_gradients(sides):
    """``paddle.softmax`` (``paddle.tensor.compat_softmax``): torch's default dim by rank."""
    c = RNG.standard_normal((2, 3, 4)).astype(np.float32)

    def case(P):
        sm = P.tensor.compat_softmax.softmax
        a = P.to_tensor(A, stop_gradient=False)
        y = sm(a)  # 2-d: dim 1
        (y * P.to_tensor(B)).sum().backward()
        return [
            y,
            a.grad,
            sm(P.to_tensor(c)),
            sm(P.to_tensor(c), dim=-1, dtype="float64"),
            sm(P.to_tensor(A[0])),
        ]

    _check(sides, case)


def _fp8(v, dtype):
    import ml_dtypes

    return np.asarray(v, np.float32).astype(getattr(ml_dtypes, dtype))


@pytest.mark.parametrize(
    "tx,ty,act,out_dtype,fp8",
    [
        (False, False, "identity", "float16", "float8_e4m3fn"),
        (True, False, "relu", "bfloat16", "float8_e4m3fn"),
        (False, True, "gelu", "float16", "float8_e5m2"),
    ],
)
def test_fp8_gemm_against_numpy(device, tx, ty, act, out_dtype, fp8):
    """Paddle has no CPU kernel for it (CUDA only): the reference is numpy on the float8 values
    widened to float32, one rounding to the output dtype."""
    import ml_dtypes
    from scipy.special import erf

    xs = RNG.standard_normal((2, 5, 8) if not tx else (2, 8, 5))
    ys = RNG.standard_normal((8, 3) if not ty else (3, 8))
    x8, y8 = _fp8(xs, fp8), _fp8(ys, fp8)
    bias = RNG.standard_normal(3).astype(np.float16)
    a = x8.astype(np.float32).swapaxes(-1, -2) if tx else x8.astype(np.float32)
    b = y8.astype(np.float32).T if ty else y8.astype(np.float32)
    want = (a @ b) * 0.75 + bias.astype(np.float32)
    want = {"identity": want, "relu": np.maximum(want, 0), "gelu": want * 0.5 * (1 + erf(want / np.sqrt(2)))}[
        act
    ]
    want = want.astype(getattr(ml_dtypes, out_dtype) if out_dtype == "bfloat16" else np.float16)
    with framework.device(device):
        got = framework.tensor.linalg.fp8_fp8_half_gemm_fused(
            framework.to_tensor(x8),
            framework.to_tensor(y8),
            tx,
            ty,
            framework.to_tensor(bias),
            0.75,
            out_dtype,
            act,
        )
    assert str(got.dtype) == out_dtype and got.shape == (2, 5, 3)
    np.testing.assert_allclose(
        got.numpy().astype(np.float32),
        want.astype(np.float32),
        rtol=1e-2 if out_dtype == "bfloat16" else 2e-3,
        atol=1e-3,
    )


def test_fp8_gemm_refuses_non_float8_operands():
    with pytest.raises(
        framework.OpArgumentError, match=r"\[fp8_fp8_half_gemm_fused\] x must be a float8 tensor"
    ):
        framework.tensor.linalg.fp8_fp8_half_gemm_fused(framework.ones([2, 2]), framework.ones([2, 2]))


P4 = np.array([0.5, 0.3, 0.15, 0.05], np.float32)


def test_top_p_sampling_takes_the_most_probable_token_at_p_zero(device):
    """Paddle has no CPU kernel for it (CUDA only): its documented example (``ps`` <= 0 gives
    each row's largest entry) and numpy are the references."""
    x = RNG.random((6, 50)).astype(np.float32)
    with framework.device(device):
        value, ids = framework.tensor.search.top_p_sampling(framework.to_tensor(x), framework.zeros([6]))
    np.testing.assert_array_equal(ids.numpy()[:, 0], x.argmax(1))
    np.testing.assert_array_equal(value.numpy()[:, 0], x.max(1))
    assert ids.dtype == np.int64 and value.shape == (6, 1)


@pytest.mark.parametrize(
    "ps,threshold,want",
    [
        (0.8, None, [0.625, 0.375, 0.0, 0.0]),  # the top-p set {0, 1}, drawn in proportion
        (1.0, None, list(P4)),
        (1.0, 0.2, [0.625, 0.375, 0.0, 0.0]),  # tokens below the threshold never drawn
        (0.5, None, [1.0, 0.0, 0.0, 0.0]),
    ],
)
def test_top_p_sampling_draws_from_the_top_p_set(ps, threshold, want):
    n = 40_000
    thr = None if threshold is None else framework.full([n], threshold)
    _, ids = framework.tensor.search.top_p_sampling(
        framework.to_tensor(np.tile(P4, (n, 1))), framework.full([n], ps), threshold=thr
    )
    freq = np.bincount(ids.numpy().ravel(), minlength=4) / n
    np.testing.assert_allclose(freq, want, atol=0.012)


def test_top_p_sampling_seeds_and_top_k():
    x = framework.to_tensor(np.tile(P4, (8, 1)))
    ps = framework.full([8], 1.0)
    S = framework.tensor.search.top_p_sampling
    a, b = S(x, ps, seed=3)[1].tolist(), S(x, ps, seed=3)[1].tolist()
    assert a == b
    seeds = framework.to_tensor(list(range(1, 9)), dtype="int64")
    assert S(x, ps, topp_seed=seeds)[1].tolist() == S(x, ps, topp_seed=seeds)[1].tolist()
    value, ids, scores, top_ids = S(x, ps, k=2, return_top=True)
    np.testing.assert_allclose(scores.numpy(), np.tile(P4[:2], (8, 1)))
    assert top_ids.tolist() == [[0, 1]] * 8 and value.shape == (8, 1)
    with pytest.raises(framework.OpArgumentError, match=r"mode 'non-truncated' is not supported here"):
        S(x, ps, mode="non-truncated")
    with pytest.raises(framework.OpArgumentError, match=r"ps must hold 8 values"):
        S(x, framework.ones([3]))


def _doc_examples():
    from framework._src.ops.composites import inplace_forms
    from framework.tensor import _HERE

    return {**inplace_forms.INPLACE_FORMS, **_HERE}


@pytest.mark.parametrize("name", sorted(_doc_examples()))
def test_docstring_example_runs(name):
    """These names are reached through ``fw.tensor.<sub>`` and Tensor methods, outside
    ``framework.__all__`` (whose examples test_docstrings.py runs): their examples run here."""
    import doctest

    fn = _doc_examples()[name]
    assert ">>>" in (fn.__doc__ or ""), name
    finder, runner = doctest.DocTestFinder(), doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    for test in finder.find(fn, name, globs={}):
        runner.run(test)
    assert runner.failures == 0 and runner.tries > 0, name


#: the public functions of the wheel's ``paddle.tensor`` submodules that ``fw.tensor`` does not
#: give, each with the reason; the test below fails when one appears or another goes missing
OMITTED: dict[str, str] = {
    # Paddle's module-level leftovers and private helpers: not API (absent from Paddle's docs)
    "manipulation.func": "a loop variable Paddle's module leaves behind (`for name, func in __METHODS`)",
    "ops.func": "a closure Paddle's generate_inplace_fn leaves at module level",
    "manipulation.non_negative_axis": "a private helper of Paddle's take/put_along_axis",
    "manipulation.infer_broadcast_shape": "a private helper of Paddle's take/put_along_axis",
    "manipulation.infer_dynamic_broadcast_shape": "a private helper of Paddle's static-graph put_along_axis",
    **{
        f"einsum.{n}": "a step of Paddle's own einsum planner (fw.einsum plans its own way)"
        for n in (
            "build_global_shape",
            "build_global_view",
            "build_view",
            "diagonalize",
            "einsum_v2",
            "gen_einsum_op",
            "gen_equation_for_opteinsum",
            "has_duplicated_labels",
            "parse_fake_shape",
            "parse_labels",
            "parse_op_labels",
            "plan_broadcast",
            "plan_einsum",
            "plan_matmul",
            "plan_reduce",
            "plan_scalar_prod",
            "plan_summation",
            "preprocess",
            "rearrange",
            "replace_ellipsis",
            "rhs_inference",
            "validate_rhs",
        )
    },
    **{
        f"to_string.{n}": "Paddle's printing internals (set_printoptions, which is here, and print(x) are the API)"
        for n in (
            "dist_tensor_to_string",
            "mask_xpu_bf16_tensor",
            "selected_rows_tensor_to_string",
            "sparse_tensor_to_string",
            "tensor_to_string",
            "to_string",
        )
    },
    **{
        f"layer_function_generator.{n}": "Paddle's generator of its own op wrappers from op protos"
        for n in ("generate_activation_fn", "generate_inplace_fn", "generate_layer_fn")
    },
}


def paddle_tensor_names(paddle) -> dict[str, list[str]]:
    """``{submodule: [public function names]}`` of the installed wheel's ``paddle.tensor``:
    each module's callables (not classes) defined in that module, not starting with ``_``."""
    out = {}
    for info in pkgutil.iter_modules(paddle.tensor.__path__):
        mod = importlib.import_module(f"paddle.tensor.{info.name}")
        out[info.name] = sorted(
            n
            for n, v in vars(mod).items()
            if not n.startswith("_")
            and callable(v)
            and not inspect.isclass(v)
            and getattr(v, "__module__", None) == mod.__name__
        )
    return out


def missing_names(paddle) -> tuple[int, list[str]]:
    """(how many names the wheel has, the ``sub.name`` that ``framework.tensor`` lacks)."""
    total, missing = 0, []
    for sub, names in paddle_tensor_names(paddle).items():
        ours = getattr(framework.tensor, sub, None)
        for n in names:
            total += 1
            try:
                ok = callable(getattr(ours, n))
            except AttributeError:
                ok = False
            if not ok:
                missing.append(f"{sub}.{n}")
    return total, sorted(missing)


def test_the_missing_names_are_exactly_the_documented_omissions(sides):
    """Run ``python -m pytest -q -s tests/test_paddle_names_missing.py -k documented`` for the count."""
    paddle = sides[0]
    total, missing = missing_names(paddle)
    print(f"\nfw.tensor has {total - len(missing)} of the {total} functions of paddle.tensor's submodules")
    assert set(missing) - set(OMITTED) == set(), "missing and not documented as omitted"
    assert set(OMITTED) - set(missing) == set(), (
        "documented as omitted but present now: drop them from OMITTED"
    )


def test_differences_kept_on_purpose():
    """docs/user-guide.md lists these: an in-place form on a leaf that requires grad raises
    (Paddle's logical_and_ turns it into bool), a transpose_ perm of the wrong length raises
    (Paddle's is a no-op)."""
    leaf = framework.ones([3])
    leaf.stop_gradient = False
    with pytest.raises(framework.OpArgumentError, match=r"\[logical_and_\] a leaf tensor that requires grad"):
        leaf.logical_and_(framework.ones([3]))
    with pytest.raises(
        framework.OpArgumentError, match=r"\[transpose_\] perm must list each of the 2 dims once"
    ):
        framework.ones([3, 2]).transpose_([0])
