"""Elementwise functions of one tensor: the unary primitives' user-facing functions (neg, abs, exp,
log, sqrt, the trigonometric and rounding functions, the NaN/inf tests) and the composites
built on them (log1p, expm1, square, reciprocal, log2)."""

from __future__ import annotations

from typing import Any

import numpy as np

from adapter_api import OpArgumentError

from .. import dispatch
from .. import dtypes as _dt
from ..opdef import OpDef
from ..tensor import Tensor
from . import sharding as _sh
from .base import OPS, apply1, call, composite
from .elementwise import (
    _check,
    cast,
    divide,
    equal,
    logical_and,
    logical_not,
    logical_or,
    multiply,
    not_equal,
    where,
)


def _unary(name: str, float_only: bool):
    op = OPS[name]

    def f(x: Tensor, name: str | None = None) -> Tensor:
        x = _check(x, op.name)
        if x.dtype.kind == "c" and op.name == "abs":  # |x| of a complex x is real: its own op (ops.complex)
            return call(OPS["abs_complex"], [x], {})
        if float_only and not _dt.is_floating(x.dtype) and x.dtype.kind != "c":
            x = cast(x, _dt.get_default_dtype())
        elif x.dtype == _dt.bool_:
            raise OpArgumentError(
                f"[{op.name}] expected a numeric tensor, got bool; cast it first with x.astype('int64')"
            )
        return apply1(op, [x], {})

    f.__name__ = name
    f.__doc__ = f"Elementwise ``{name}``."
    return f


neg = _unary("neg", False)
neg.__doc__ = """Elementwise ``-x``.

Args:
    x (Tensor): the input.
    name: ignored (Paddle's signature).

Returns:
    Tensor: like ``x`` (also ``-x``); bool is an error.

Example:
    >>> import framework as fw
    >>> fw.neg(fw.to_tensor([1, -2]))
    Tensor(shape=[2], dtype=int64, device=cpu:0,
           [-1,  2])
"""


def fast_neg_plan(op: OpDef, x: Tensor, _x: Tensor) -> tuple | None:
    """The fast path's plan for ``-x`` (``fastcall.c``, called ``(op, x, x)``): :func:`neg`
    runs the kernel on x as it comes except for bool (an error, the Python path's)."""
    return None if x.dtype == _dt.bool_ else dispatch.fast_unary_plan(op, x)


abs = _unary("abs", False)
abs.__doc__ = """Elementwise absolute value ``|x|`` (the modulus of a complex ``x``).

Args:
    x (Tensor): the input.
    name: ignored (Paddle's signature).

Returns:
    Tensor: like ``x`` (float32 for complex64, float64 for complex128); bool is an error.

Example:
    >>> import framework as fw
    >>> fw.abs(fw.to_tensor([-1.5, 0.0, 2.0]))
    Tensor(shape=[3], dtype=float32, device=cpu:0,
           [1.5, 0. , 2. ])
"""
sign = _unary("sign", False)
sign.__doc__ = """Elementwise sign: -1, 0 or 1.

Args:
    x (Tensor): the input.
    name: ignored (Paddle's signature).

Returns:
    Tensor: like ``x``; bool is an error.

Example:
    >>> import framework as fw
    >>> fw.sign(fw.to_tensor([-3, 0, 2]))
    Tensor(shape=[3], dtype=int64, device=cpu:0,
           [-1,  0,  1])
"""
exp = _unary("exp", True)
exp.__doc__ = """Elementwise ``e ** x``.

Args:
    x (Tensor): the input; integers are cast to the default float dtype.
    name: ignored (Paddle's signature).

Returns:
    Tensor: a float tensor of ``x``'s shape.

Example:
    >>> import framework as fw
    >>> fw.exp(fw.to_tensor([0.0, 1.0]))
    Tensor(shape=[2], dtype=float32, device=cpu:0,
           [1.      , 2.718282])
"""
log = _unary("log", True)
log.__doc__ = """Elementwise natural logarithm.

Args:
    x (Tensor): the input; integers are cast to the default float dtype.
    name: ignored (Paddle's signature).

Returns:
    Tensor: a float tensor of ``x``'s shape; ``log(0)`` is ``-inf``.

Example:
    >>> import framework as fw
    >>> fw.log(fw.to_tensor([1.0, 2.718281828, 0.0]))
    Tensor(shape=[3], dtype=float32, device=cpu:0,
           [  0.,   1., -inf])
"""
sqrt = _unary("sqrt", True)
sqrt.__doc__ = """Elementwise square root.

Args:
    x (Tensor): the input; integers are cast to the default float dtype.
    name: ignored (Paddle's signature).

Returns:
    Tensor: a float tensor of ``x``'s shape; NaN where ``x < 0``.

Example:
    >>> import framework as fw
    >>> fw.sqrt(fw.to_tensor([4, 9]))
    Tensor(shape=[2], dtype=float32, device=cpu:0,
           [2., 3.])
"""
rsqrt = _unary("rsqrt", True)
rsqrt.__doc__ = """Elementwise reciprocal square root ``1 / sqrt(x)``.

Args:
    x (Tensor): the input; integers are cast to the default float dtype.
    name: ignored (Paddle's signature).

Returns:
    Tensor: a float tensor of ``x``'s shape.

Example:
    >>> import framework as fw
    >>> fw.rsqrt(fw.to_tensor([4.0, 16.0]))
    Tensor(shape=[2], dtype=float32, device=cpu:0,
           [0.5 , 0.25])
"""
sin = _unary("sin", True)
sin.__doc__ = """Elementwise sine (radians).

Args:
    x (Tensor): the input; integers are cast to the default float dtype.
    name: ignored (Paddle's signature).

Returns:
    Tensor: a float tensor of ``x``'s shape.

Example:
    >>> import framework as fw
    >>> fw.sin(fw.to_tensor([0.0, 1.0, 2.0]))
    Tensor(shape=[3], dtype=float32, device=cpu:0,
           [0.       , 0.841471 , 0.9092974])
"""
cos = _unary("cos", True)
cos.__doc__ = """Elementwise cosine (radians).

Args:
    x (Tensor): the input; integers are cast to the default float dtype.
    name: ignored (Paddle's signature).

Returns:
    Tensor: a float tensor of ``x``'s shape.

Example:
    >>> import framework as fw
    >>> fw.cos(fw.to_tensor([0.0, 3.14159265]))
    Tensor(shape=[2], dtype=float32, device=cpu:0,
           [ 1., -1.])
"""
tanh = _unary("tanh", True)
tanh.__doc__ = """Elementwise hyperbolic tangent.

Args:
    x (Tensor): the input; integers are cast to the default float dtype.
    name: ignored (Paddle's signature).

Returns:
    Tensor: a float tensor of ``x``'s shape, in (-1, 1).

Example:
    >>> import framework as fw
    >>> fw.tanh(fw.to_tensor([0.0, 1.0]))
    Tensor(shape=[2], dtype=float32, device=cpu:0,
           [0.       , 0.7615942])
"""
erf = _unary("erf", True)
erf.__doc__ = """Elementwise Gauss error function.

Args:
    x (Tensor): the input; integers are cast to the default float dtype.
    name: ignored (Paddle's signature).

Returns:
    Tensor: a float tensor of ``x``'s shape, in (-1, 1).

Example:
    >>> import framework as fw
    >>> fw.erf(fw.to_tensor([0.0, 1.0]))
    Tensor(shape=[2], dtype=float32, device=cpu:0,
           [0.       , 0.8427008])
"""
floor = _unary("floor", True)
floor.__doc__ = """Elementwise floor: the largest integer not above ``x``.

Args:
    x (Tensor): the input; integers are cast to the default float dtype.
    name: ignored (Paddle's signature).

Returns:
    Tensor: a float tensor of ``x``'s shape.

Example:
    >>> import framework as fw
    >>> fw.floor(fw.to_tensor([-1.5, 1.5]))
    Tensor(shape=[2], dtype=float32, device=cpu:0,
           [-2.,  1.])
"""
ceil = _unary("ceil", True)
ceil.__doc__ = """Elementwise ceiling: the smallest integer not below ``x``.

Args:
    x (Tensor): the input; integers are cast to the default float dtype.
    name: ignored (Paddle's signature).

Returns:
    Tensor: a float tensor of ``x``'s shape.

Example:
    >>> import framework as fw
    >>> fw.ceil(fw.to_tensor([-1.5, 1.5]))
    Tensor(shape=[2], dtype=float32, device=cpu:0,
           [-1.,  2.])
"""


def floor_(x: Tensor) -> Tensor:
    return x if x.dtype.kind in "iub" else floor(x)


def square(x: Tensor) -> Tensor:
    """Elementwise ``x * x``.

    Args:
        x (Tensor): the input.

    Returns:
        Tensor: like ``x``.

    Example:
        >>> import framework as fw
        >>> fw.square(fw.to_tensor([-2, 3]))
        Tensor(shape=[2], dtype=int64, device=cpu:0,
               [4, 9])
    """
    return multiply(x, x)


def reciprocal(x: Tensor) -> Tensor:
    """Elementwise ``1 / x``; integers give the default float dtype.

    Args:
        x (Tensor): the input.

    Returns:
        Tensor: a float tensor of ``x``'s shape.

    Example:
        >>> import framework as fw
        >>> fw.reciprocal(fw.to_tensor([2, 4]))
        Tensor(shape=[2], dtype=float32, device=cpu:0,
               [0.5 , 0.25])
    """
    return divide(1.0, x)


def log2(x: Tensor) -> Tensor:
    """Elementwise base-2 logarithm.

    Args:
        x (Tensor): the input; integers are cast to the default float dtype.

    Returns:
        Tensor: a float tensor of ``x``'s shape.

    Example:
        >>> import framework as fw
        >>> fw.log2(fw.to_tensor([1.0, 2.0, 8.0]))
        Tensor(shape=[3], dtype=float32, device=cpu:0,
               [0., 1., 3.])
    """
    return log(x) * (1.0 / np.log(2.0))


def _log1p_grad(node: Any, g: list) -> list:
    return [g[0] / (node.inputs[0] + 1.0)]


@composite("log1p", sharding=_sh.elementwise(), grad=_log1p_grad)
def log1p_decomposition(x: Tensor) -> Tensor:
    """log(1 + x) without losing x near 0: ``log(u) * x / (u - 1)`` with ``u = 1 + x`` rounded
    (the rounding error of ``u`` cancels; Goldberg), ``x`` itself where ``u`` rounds to 1."""
    u = x + 1.0
    d = u - 1.0
    body = log(u) * (x / where(d == 0.0, 1.0, d))
    return where(d == 0.0, x, where(u == float("inf"), u, body))


def log1p(x: Tensor, name: str | None = None) -> Tensor:
    """Elementwise ``log(1 + x)``, accurate for ``x`` near 0.

    Args:
        x (Tensor): the input, > -1; integers are cast to the default float dtype.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: a float tensor of ``x``'s shape.

    Example:
        >>> import framework as fw
        >>> fw.log1p(fw.to_tensor([0.0, 1.0]))
        Tensor(shape=[2], dtype=float32, device=cpu:0,
               [0.       , 0.6931472])
        >>> fw.log1p(fw.to_tensor([1e-10])).item()  # log(1 + 1e-10) would be 0
        1.000000013351432e-10
    """
    return call(OPS["log1p"], [_float_input(x, "log1p")], {})


def _expm1_grad(node: Any, g: list) -> list:
    return [g[0] * exp(node.inputs[0])]


@composite("expm1", sharding=_sh.elementwise(), grad=_expm1_grad)
def expm1_decomposition(x: Tensor) -> Tensor:
    """exp(x) - 1 without losing x near 0: ``(u - 1) * x / log(u)`` with ``u = exp(x)`` rounded
    (Kahan), ``x`` itself where ``u`` rounds to 1, -1 where it rounds to 0."""
    u = exp(x)
    d = u - 1.0
    lu = log(u)
    body = d * (x / where(lu == 0.0, 1.0, lu))
    return where(d == 0.0, x, where(d == -1.0, d, where(u == float("inf"), u, body)))


def expm1(x: Tensor, name: str | None = None) -> Tensor:
    """Elementwise ``exp(x) - 1``, accurate for ``x`` near 0.

    Args:
        x (Tensor): the input; integers are cast to the default float dtype.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: a float tensor of ``x``'s shape.

    Example:
        >>> import framework as fw
        >>> fw.expm1(fw.to_tensor([0.0, 1.0]))
        Tensor(shape=[2], dtype=float32, device=cpu:0,
               [0.       , 1.7182817])
        >>> fw.expm1(fw.to_tensor([1e-10])).item()  # exp(1e-10) - 1 would be 0
        1.000000013351432e-10
    """
    return call(OPS["expm1"], [_float_input(x, "expm1")], {})


def _float_input(x: Any, name: str) -> Tensor:
    """``x`` as a float tensor (integers and bools cast to the default float dtype)."""
    x = _check(x, name)
    return x if _dt.is_floating(x.dtype) else cast(x, _dt.get_default_dtype())


def round(x: Tensor, decimals: int = 0, name: str | None = None) -> Tensor:
    """Elementwise rounding to ``decimals`` places, halves to the even neighbour.

    As Paddle 3.x and numpy: 0.5 -> 0, 1.5 -> 2, 2.5 -> 2, -0.5 -> -0.

    Args:
        x (Tensor): the input.
        decimals (int): the decimal places (negative: tens, hundreds...); the rounding is of
            ``x * 10**decimals`` in ``x``'s dtype, then divided back.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: like ``x``.

    Example:
        >>> import framework as fw
        >>> fw.round(fw.to_tensor([0.5, 1.5, 2.5, -0.5, 2.4])).tolist()
        [0.0, 2.0, 2.0, -0.0, 2.0]
        >>> fw.round(fw.to_tensor([125.0, 1.25]), decimals=-1).tolist()
        [120.0, 0.0]
    """
    x = _check(x, "round")
    if isinstance(decimals, bool) or not isinstance(decimals, (int, np.integer)):
        raise OpArgumentError(f"[round] decimals must be an int, got {type(decimals).__name__} {decimals!r}")
    if not _dt.is_floating(x.dtype):
        return x
    if decimals:
        scale = 10.0 ** int(decimals)
        return _round_half_even(x * scale) / scale
    return _round_half_even(x)


def _round_half_even(x: Tensor) -> Tensor:
    r = floor(x)
    frac = x - r  # exact: x and floor(x) are within one of each other
    odd = not_equal(r - floor(r * 0.5) * 2.0, 0.0)
    up = logical_or(frac > 0.5, logical_and(equal(frac, 0.5), odd))
    out = where(up, r + 1.0, r)
    return where(equal(out, 0.0), x * 0.0, out)  # a zero keeps x's sign (-0.3 -> -0)


def round_half_away(x: Tensor) -> Tensor:
    """Rounding with halves away from zero (0.5 -> 1, -2.5 -> -3): what Paddle's quantization
    and nearest-index kernels use (``std::round``); :func:`round` rounds halves to even."""
    r = trunc(x)
    frac = abs(x - r)  # exact
    return where(frac >= 0.5, r + sign(x), r)


def trunc(x: Tensor) -> Tensor:
    """Elementwise rounding towards zero (the integer part).

    Args:
        x (Tensor): the input.

    Returns:
        Tensor: like ``x``.

    Example:
        >>> import framework as fw
        >>> fw.trunc(fw.to_tensor([-1.7, 1.7]))
        Tensor(shape=[2], dtype=float32, device=cpu:0,
               [-1.,  1.])
    """
    return sign(x) * floor(abs(x))


def isnan(x: Tensor) -> Tensor:
    """Elementwise test for NaN.

    Args:
        x (Tensor): the input.

    Returns:
        Tensor: bool, of ``x``'s shape.

    Example:
        >>> import framework as fw
        >>> fw.isnan(fw.to_tensor([1.0, float("inf"), float("nan")]))
        Tensor(shape=[3], dtype=bool, device=cpu:0,
               [False, False,  True])
    """
    return not_equal(x, x)


def isinf(x: Tensor) -> Tensor:
    """Elementwise test for +inf or -inf (always False for integers).

    Args:
        x (Tensor): the input.

    Returns:
        Tensor: bool, of ``x``'s shape.

    Example:
        >>> import framework as fw
        >>> fw.isinf(fw.to_tensor([1.0, float("-inf"), float("nan")]))
        Tensor(shape=[3], dtype=bool, device=cpu:0,
               [False,  True, False])
    """
    return equal(abs(x), float("inf")) if _dt.is_floating(x.dtype) else equal(x, x) == False  # noqa: E712


def isfinite(x: Tensor) -> Tensor:
    """Elementwise test for a finite value: neither infinite nor NaN.

    Args:
        x (Tensor): the input.

    Returns:
        Tensor: bool, of ``x``'s shape.

    Example:
        >>> import framework as fw
        >>> fw.isfinite(fw.to_tensor([1.0, float("inf"), float("nan")]))
        Tensor(shape=[3], dtype=bool, device=cpu:0,
               [ True, False, False])
    """
    return logical_not(logical_or(isnan(x), isinf(x))) if _dt.is_floating(x.dtype) else equal(x, x)
