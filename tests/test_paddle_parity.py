"""Differential tests against real Paddle: one snippet run under ``paddle`` and under Oarlock.

Each case is a function of the library module ``P`` (``paddle`` or ``framework``) returning
tensors (and numbers, lists of them); both results are compared leaf by leaf by the parity
harness (``conformance.parity.capture`` and ``compare``): dtype, shape and values within
``RTOL``/``ATOL``. Gradient cases return the ``.grad`` of their inputs. Skipped where paddle is
not installed (it is the oracle, in the ``dev`` extra).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import framework
from conformance.parity import OarlockSide, PaddleSide, capture, compare

RNG = np.random.default_rng(40)
A = RNG.standard_normal((3, 4)).astype(np.float32)
B = RNG.standard_normal((4, 5)).astype(np.float32)
IMG = RNG.standard_normal((2, 3, 6, 6)).astype(np.float32)
W = RNG.standard_normal((4, 3, 3, 3)).astype(np.float32) * 0.3
LABELS = np.array([1, 0, 3], np.int64)


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
    out.sum().backward() if out.ndim else out.backward()
    return [out, *[t.grad for t in ts]]


def _set_grad_enabled_exits(P):
    with P.set_grad_enabled(False):
        inside = P.is_grad_enabled()
    return [inside, P.is_grad_enabled()]


CASES = {
    # values, dtypes, shapes
    "add_broadcast": lambda P: P.to_tensor(A) + P.to_tensor(A[0]),
    "matmul": lambda P: P.matmul(P.to_tensor(A), P.to_tensor(B)),
    "sum_axis_keepdim": lambda P: P.sum(P.to_tensor(A), axis=1, keepdim=True),
    "mean_int_dtype": lambda P: P.mean(P.to_tensor([1, 2, 4]).astype("float64")),
    "argmax_dtype": lambda P: [P.argmax(P.to_tensor(A), axis=1, dtype="int32"), P.argmin(P.to_tensor(A))],
    "softmax": lambda P: P.nn.functional.softmax(P.to_tensor(A), axis=-1),
    "cross_entropy": lambda P: P.nn.functional.cross_entropy(P.to_tensor(A), P.to_tensor(LABELS)),
    "layer_norm": lambda P: P.nn.functional.layer_norm(P.to_tensor(A), [4]),
    "conv2d": lambda P: P.nn.functional.conv2d(P.to_tensor(IMG), P.to_tensor(W), padding=1),
    "reshape_0_dim": lambda P: [
        P.reshape(P.to_tensor(3.0), [1, 1]),
        P.reshape(P.zeros([2, 4, 6]), [-1, 0, 3, 2]),
    ],
    "pad_every_dim": lambda P: P.nn.functional.pad(P.to_tensor(A), [1, 0, 0, 2]),
    "pad_reflect_nhwc": lambda P: P.nn.functional.pad(
        P.to_tensor(IMG), [1, 2, 2, 1], mode="reflect", data_format="NHWC"
    ),
    "take_along_axis_broadcast": lambda P: P.take_along_axis(P.to_tensor(A), P.to_tensor([[0, 2]]), axis=1),
    "put_along_axis_broadcast": lambda P: P.put_along_axis(P.to_tensor(A), P.to_tensor([[1]]), 9.0, axis=0),
    "scatter_accumulate": lambda P: P.scatter(
        P.ones([3, 2]), P.to_tensor([1, 1]), P.to_tensor([[1.0, 2.0], [3.0, 4.0]]), overwrite=False
    ),
    "solve_right": lambda P: P.linalg.solve(
        P.to_tensor([[2.0, 1.0], [1.0, 3.0]]), P.to_tensor(A[:2, :2]), left=False
    ),
    "scale_act": lambda P: P.scale(P.to_tensor(A), 2.0, bias=0.5, act="relu"),
    "allclose_tensor": lambda P: [
        P.allclose(P.to_tensor([1.0, np.nan]), P.to_tensor([1.0, np.nan]), equal_nan=True),
        P.allclose(P.to_tensor([1.0]), P.to_tensor([1.1])),
    ],
    "accuracy_tensor": lambda P: P.metric.accuracy(P.to_tensor(A), P.to_tensor(LABELS.reshape(-1, 1))),
    "concat_keyword": lambda P: P.concat(x=[P.to_tensor(A), P.to_tensor(A)], axis=1),
    "lgamma_exact_zeros": lambda P: P.lgamma(P.to_tensor([1.0, 2.0, 0.5, 1.1, 1.9, 7.0])),
    "tiny_arguments": lambda P: [
        f(P.to_tensor([1e-10, -1e-12, 1e-30])) for f in (P.log1p, P.expm1, P.sinh, P.asinh, P.atanh)
    ],
    "dtype_instance": lambda P: [isinstance(P.int64, P.dtype), isinstance(P.float32, P.dtype)],
    "set_grad_enabled_context": _set_grad_enabled_exits,
    "stacking": lambda P: [
        P.hstack([P.to_tensor(A), P.to_tensor(A)]),
        P.vstack([P.to_tensor(A[0]), P.to_tensor(A[1])]),
        P.tensor_split(P.arange(7), 3),
    ],
    "cummax_ties": lambda P: list(P.cummax(P.to_tensor([1, 3, 3, 2, 5, 5]))),
    "logcumsumexp": lambda P: P.logcumsumexp(P.to_tensor([0.0, 1.0, 1000.0, -5.0])),
    "copysign_signbit": lambda P: [
        P.copysign(P.to_tensor([1.0, 2.0, 3.0]), P.to_tensor([-1.0, 0.0, -0.0])),
        P.signbit(P.to_tensor([-0.0, 0.0, -2.0])),
    ],
    "shape_compares_as_a_list": lambda P: [
        P.ones([2, 3]).shape == [2, 3],
        P.ones([2, 3]).shape == (2, 3),
        P.ones([2, 3]).shape != [2, 4],
        list(P.ones([2, 3]).shape + [1]),
        list([4] + P.ones([2, 3]).shape),
        [2, 3] == P.ones([2, 3]).shape,
        len({tuple(P.ones([2, 3]).shape), tuple(P.zeros([2, 3]).shape)}),
        P.reshape(P.ones([2, 3]), P.ones([3, 2]).shape).shape == [3, 2],
    ],
    "inplace_functions": lambda P: [
        P.log2_(P.to_tensor([1.0, 4.0])),
        P.tanh_(P.to_tensor([0.5, -1.0])),
        P.to_tensor([[1.0, 2.0], [3.0, 4.0]]).cumprod_(dim=0),
        P.gcd_(P.to_tensor([4, 6]), P.to_tensor([6, 9])),
        P.to_tensor([[1.0, 2.0], [3.0, 4.0]]).addmm_(
            P.to_tensor([[1.0, 0.0], [2.0, 1.0]]), P.to_tensor(A[:2, :2])
        ),
        P.tensor.math.log10_(P.to_tensor([10.0, 1000.0])),
        P.floor_mod_(P.to_tensor([7, -7]), P.to_tensor([3, 3])),
    ],
    "index_add": lambda P: [
        P.index_add(P.to_tensor(A), P.to_tensor([0, 2, 0]), 1, P.ones([3, 3])),
        P.index_add(P.to_tensor(A), P.to_tensor([-1, 0]), 0, P.to_tensor(A[:2])),
        P.to_tensor(A).index_add_(P.to_tensor([3]), 1, P.ones([3, 1])),
    ],
    "index_put": lambda P: [
        P.index_put(
            P.to_tensor(A), (P.to_tensor([0, 2, 0]), P.to_tensor([1, -1, 1])), P.to_tensor([1.0, 2.0, 3.0])
        ),
        P.index_put(
            P.to_tensor(A),
            (P.to_tensor([0, 2, 0]), P.to_tensor([1, 3, 1])),
            P.to_tensor([1.0, 2.0, 3.0]),
            True,
        ),
        P.index_put(P.to_tensor(A), (P.to_tensor([[1], [2]]),), P.to_tensor(5.0)),
        P.to_tensor(A).index_put_((P.to_tensor([1]), P.to_tensor([0])), P.to_tensor([9.0])),
    ],
    "paddle_aliases": lambda P: [
        P.true_divide(P.to_tensor(A), P.to_tensor(A[0] + 3.0)),
        P.view_as_real(P.view_as_complex(P.to_tensor(A[:, :2].copy()))),
    ],
    "grad_index_add": lambda P: _grads(
        P, lambda P, a, v: P.index_add(a, P.to_tensor([1, 1, 0]), 0, v) * P.to_tensor(A), A, A[:3]
    ),
    # gradients
    "grad_matmul": lambda P: _grads(P, lambda P, a, b: P.matmul(a, b), A, B),
    "grad_softmax_ce": lambda P: _grads(
        P, lambda P, a: P.nn.functional.cross_entropy(a, P.to_tensor(LABELS)), A
    ),
    "grad_conv2d": lambda P: _grads(P, lambda P, x, w: P.nn.functional.conv2d(x, w, padding=1), IMG, W),
    "grad_layer_norm": lambda P: _grads(
        P, lambda P, a: P.nn.functional.layer_norm(a, [4]) * P.to_tensor(A), A
    ),
    "grad_take_along_axis": lambda P: _grads(
        P, lambda P, a: P.take_along_axis(a, P.to_tensor([[0, 2]]), axis=1), A
    ),
    "grad_special_near_zero": lambda P: _grads(
        P,
        lambda P, a: P.log1p(a) + P.expm1(a) + P.asinh(a) + P.atanh(a) + P.sinh(a),
        np.float32([0.0, 1e-6, -0.3]),
    ),
    "grad_pad_replicate": lambda P: _grads(
        P, lambda P, x: P.nn.functional.pad(x, [2, 1], mode="replicate") * 3.0, IMG[0]
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_oarlock_matches_paddle(sides, case):
    paddle, paddle_side, oarlock_side = sides
    want = capture(paddle_side, CASES[case](paddle))
    got = capture(oarlock_side, CASES[case](framework))
    diff = compare(want, got, random=set())
    assert not diff, f"{case}: {diff}"


def test_the_comparison_can_fail(sides):
    """The harness's comparison notices a wrong value, dtype or shape (so the cases above bite)."""
    paddle, paddle_side, oarlock_side = sides
    want = capture(paddle_side, paddle.to_tensor([1.0, 2.0]))
    assert compare(want, capture(oarlock_side, framework.to_tensor([1.0, 2.1])), set())
    assert compare(want, capture(oarlock_side, framework.to_tensor([1.0, 2.0], dtype="float64")), set())
    assert compare(want, capture(oarlock_side, framework.to_tensor([[1.0, 2.0]])), set())
    assert not compare(want, capture(oarlock_side, framework.to_tensor([1.0, 2.0])), set())


def test_an_exported_class_shows_under_the_imported_name(sides):
    """``print(type(x))`` in an example: ``paddle.Tensor`` is ``framework.Tensor`` under the
    alias, so both sides show ``<class 'paddle.Tensor'>``; a class the package does not export
    keeps its own name (and the comparison notices it)."""
    paddle, paddle_side, oarlock_side = sides
    want = capture(paddle_side, type(paddle.to_tensor([1.0])))
    assert not compare(want, capture(oarlock_side, type(framework.to_tensor([1.0]))), set())

    class Tensor:  # same name, not the exported class
        pass

    assert compare(want, capture(oarlock_side, Tensor), set())


def test_docstring_blocks_split_like_xdoctest():
    """Statements, their output, +SKIP regions and +REQUIRES (no paddle needed)."""
    from conformance.parity.examples import _parts  # noqa: PLC0415  (a private helper under test)

    block = """
        >>> x = 1
        >>> print(x)
        1
        >>> # doctest: +SKIP("random")
        >>> print(2)
        9
        >>> # doctest: -SKIP
        >>> for i in range(2):
        ...     print(i)
        0
        1

        prose after a blank line is not output
        >>> y = 3  # doctest: +SKIP
        >>> # doctest: +REQUIRES(env:GPU)
        >>> z = 4
    """.splitlines()
    parts = _parts(block)
    assert [(p.source, p.want, p.skipped) for p in parts] == [
        ("x = 1", "", False),
        ("print(x)", "1", False),
        ("print(2)", "9", True),  # inside the +SKIP region: neither run nor checked
        ("for i in range(2):\n    print(i)", "0\n1", False),
        ("y = 3  # doctest: +SKIP", "", True),
        ("z = 4", "", True),  # after +REQUIRES(env:GPU)
    ]


def test_text_comparison_tolerates_rounding_and_places_only():
    from conformance.parity.run import text_matches  # noqa: PLC0415

    want = "Tensor(shape=[2], dtype=float32, place=Place(gpu:0), stop_gradient=True,\n[0.50000000, 1.])"
    assert text_matches(
        "Tensor(shape=[2], dtype=float32, place=Place(cpu), stop_gradient=True,\n  [0.5000001, 1.])", want
    )
    assert not text_matches(
        "Tensor(shape=[2], dtype=float32, place=Place(cpu), stop_gradient=True,\n[0.51, 1.])", want
    )
    assert not text_matches(
        "Tensor(shape=[2], dtype=float64, place=Place(cpu), stop_gradient=True,\n[0.5, 1.])", want
    )


def test_a_shape_changed_in_place_raises_naming_the_copy():
    """Paddle's shape is a mutable list; Oarlock's Size is not: the change raises, never passes."""
    x = framework.ones([2, 3])
    with pytest.raises(TypeError, match=r"\[Tensor.shape\].*list\(x.shape\)"):
        x.shape[0] = -1
    s = list(x.shape)
    s[0] = -1
    assert x.reshape(s).shape == [2, 3]
