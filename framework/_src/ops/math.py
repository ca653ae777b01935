"""Elementwise math, comparisons, reductions and matmul: the user-facing functions over the
primitives (argument checks, scalars, type promotion, broadcasting)."""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any

import numpy as np

from adapter_api import OpArgumentError

from .. import dtypes as _dt
from ..tensor import Tensor, to_tensor
from . import creation as C
from . import sharding as _sh
from .base import OPS, TRACER, apply, apply1, broadcast_shapes, call, composite, fill_buffer
from .cost import matmul_flops

_CONST: dict[tuple[Any, ...], Tensor] = {}


def _const(value: Any, dtype: np.dtype, device: Any, ndim: int = 0) -> Tensor:
    """A cached constant of shape (1,)*ndim: scalars in expressions cost no allocation and
    no reshape after the first use."""
    key = (type(value), value, dtype.num, device._name, ndim)
    t = _CONST.get(key)
    if t is None:
        t = fill_buffer((1,) * ndim, value, dtype, device)
        t.native()
        if len(_CONST) > 4096:
            _CONST.clear()
        _CONST[key] = t
    return t


_SCALARS = (bool, int, float, np.number, np.bool_)


def _tensor_like(name: str, v: Any, like: Tensor) -> Tensor:
    if isinstance(v, (np.ndarray, list, tuple)):
        return to_tensor(v, device=like.device)
    raise OpArgumentError(f"[{name}] expected a Tensor or a number, got {type(v).__name__}")


def _operands(name: str, x: Any, y: Any) -> tuple[Tensor, Tensor]:
    xt = isinstance(x, Tensor)
    yt = isinstance(y, Tensor)
    if xt and yt:
        if x.dtype is y.dtype or x.dtype == y.dtype:
            return x, y
        d = _dt.promote(x.dtype, y.dtype)
    elif xt:
        if type(y) is float or isinstance(y, _SCALARS):
            d = _dt.scalar_dtype(y, x.dtype)
            y = _const(y, d, x.device, len(x.shape))
        else:
            y = _tensor_like(name, y, x)
            d = _dt.promote(x.dtype, y.dtype)
    elif yt:
        if isinstance(x, _SCALARS):
            d = _dt.scalar_dtype(x, y.dtype)
            x = _const(x, d, y.device, len(y.shape))
        else:
            x = _tensor_like(name, x, y)
            d = _dt.promote(x.dtype, y.dtype)
    else:
        raise OpArgumentError(
            f"[{name}] expected at least one Tensor, got {type(x).__name__} and {type(y).__name__}"
        )
    if x.dtype != d:
        x = cast(x, d)
    if y.dtype != d:
        y = cast(y, d)
    return x, y


def _binary(name: str):
    op = OPS[name]

    def f(x: Any, y: Any, name: str | None = None) -> Tensor:
        a, b = _operands(op.name, x, y)
        return apply(op, [a, b], {})[0]

    f.__name__ = name
    f.__doc__ = f"Elementwise ``{name}`` with broadcasting and type promotion."
    return f


add = _binary("add")
add.__doc__ = """Elementwise ``x + y``, with broadcasting and type promotion.

Args:
    x (Tensor | number): the left operand.
    y (Tensor | number): the right operand; ``x`` and ``y`` broadcast together.
    name: ignored (Paddle's signature).

Returns:
    Tensor: of the broadcast shape and the promoted dtype (also ``x + y``).

Example:
    >>> import framework as fw
    >>> fw.add(fw.to_tensor([1, 2]), fw.to_tensor([10, 20]))
    Tensor(shape=[2], dtype=int64, device=cpu:0,
           [11, 22])
    >>> fw.add(fw.to_tensor([1, 2]), 0.5).tolist()
    [1.5, 2.5]
"""
subtract = _binary("sub")
subtract.__doc__ = """Elementwise ``x - y``, with broadcasting and type promotion.

Args:
    x (Tensor | number): the left operand.
    y (Tensor | number): the right operand; ``x`` and ``y`` broadcast together.
    name: ignored (Paddle's signature).

Returns:
    Tensor: of the broadcast shape and the promoted dtype (also ``x - y``).

Example:
    >>> import framework as fw
    >>> fw.subtract(fw.to_tensor([[1.0], [2.0]]), fw.to_tensor([1.0, 2.0, 3.0]))
    Tensor(shape=[2, 3], dtype=float32, device=cpu:0,
           [[ 0., -1., -2.],
            [ 1.,  0., -1.]])
"""
multiply = _binary("mul")
multiply.__doc__ = """Elementwise ``x * y``, with broadcasting and type promotion.

Args:
    x (Tensor | number): the left operand.
    y (Tensor | number): the right operand; ``x`` and ``y`` broadcast together.
    name: ignored (Paddle's signature).

Returns:
    Tensor: of the broadcast shape and the promoted dtype (also ``x * y``).

Example:
    >>> import framework as fw
    >>> fw.multiply(fw.to_tensor([1, 2]), fw.to_tensor([3, 4]))
    Tensor(shape=[2], dtype=int64, device=cpu:0,
           [3, 8])
"""
maximum = _binary("maximum")
maximum.__doc__ = """Elementwise larger of ``x`` and ``y``; a NaN in either gives NaN.

Args:
    x (Tensor | number): the left operand.
    y (Tensor | number): the right operand; ``x`` and ``y`` broadcast together.
    name: ignored (Paddle's signature).

Returns:
    Tensor: of the broadcast shape and the promoted dtype.

Example:
    >>> import framework as fw
    >>> fw.maximum(fw.to_tensor([1.0, 5.0, float("nan")]), fw.to_tensor([3.0, 2.0, 0.0]))
    Tensor(shape=[3], dtype=float32, device=cpu:0,
           [ 3.,  5., nan])
"""
minimum = _binary("minimum")
minimum.__doc__ = """Elementwise smaller of ``x`` and ``y``; a NaN in either gives NaN.

Args:
    x (Tensor | number): the left operand.
    y (Tensor | number): the right operand; ``x`` and ``y`` broadcast together.
    name: ignored (Paddle's signature).

Returns:
    Tensor: of the broadcast shape and the promoted dtype.

Example:
    >>> import framework as fw
    >>> fw.minimum(fw.to_tensor([1, 5]), 3)
    Tensor(shape=[2], dtype=int64, device=cpu:0,
           [1, 3])
"""
equal = _binary("eq")
equal.__doc__ = """Elementwise ``x == y``.

Args:
    x (Tensor | number): the left operand.
    y (Tensor | number): the right operand; ``x`` and ``y`` broadcast together.
    name: ignored (Paddle's signature).

Returns:
    Tensor: bool, of the broadcast shape. Also ``x == y``.

Example:
    >>> import framework as fw
    >>> fw.equal(fw.to_tensor([1, 2, 3]), 2)
    Tensor(shape=[3], dtype=bool, device=cpu:0,
           [False,  True, False])
"""
not_equal = _binary("ne")
not_equal.__doc__ = """Elementwise ``x != y``.

Args:
    x (Tensor | number): the left operand.
    y (Tensor | number): the right operand; ``x`` and ``y`` broadcast together.
    name: ignored (Paddle's signature).

Returns:
    Tensor: bool, of the broadcast shape. Also ``x != y``.

Example:
    >>> import framework as fw
    >>> fw.not_equal(fw.to_tensor([1, 2, 3]), fw.to_tensor([1, 0, 3]))
    Tensor(shape=[3], dtype=bool, device=cpu:0,
           [False,  True, False])
"""
less_than = _binary("lt")
less_than.__doc__ = """Elementwise ``x < y``.

Args:
    x (Tensor | number): the left operand.
    y (Tensor | number): the right operand; ``x`` and ``y`` broadcast together.
    name: ignored (Paddle's signature).

Returns:
    Tensor: bool, of the broadcast shape. Also ``x < y``.

Example:
    >>> import framework as fw
    >>> fw.less_than(fw.to_tensor([1, 2, 3]), 2)
    Tensor(shape=[3], dtype=bool, device=cpu:0,
           [ True, False, False])
"""
less_equal = _binary("le")
less_equal.__doc__ = """Elementwise ``x <= y``.

Args:
    x (Tensor | number): the left operand.
    y (Tensor | number): the right operand; ``x`` and ``y`` broadcast together.
    name: ignored (Paddle's signature).

Returns:
    Tensor: bool, of the broadcast shape. Also ``x <= y``.

Example:
    >>> import framework as fw
    >>> fw.less_equal(fw.to_tensor([1, 2, 3]), 2)
    Tensor(shape=[3], dtype=bool, device=cpu:0,
           [ True,  True, False])
"""
greater_than = _binary("gt")
greater_than.__doc__ = """Elementwise ``x > y``.

Args:
    x (Tensor | number): the left operand.
    y (Tensor | number): the right operand; ``x`` and ``y`` broadcast together.
    name: ignored (Paddle's signature).

Returns:
    Tensor: bool, of the broadcast shape. Also ``x > y``.

Example:
    >>> import framework as fw
    >>> fw.greater_than(fw.to_tensor([1, 2, 3]), 2)
    Tensor(shape=[3], dtype=bool, device=cpu:0,
           [False, False,  True])
"""
greater_equal = _binary("ge")
greater_equal.__doc__ = """Elementwise ``x >= y``.

Args:
    x (Tensor | number): the left operand.
    y (Tensor | number): the right operand; ``x`` and ``y`` broadcast together.
    name: ignored (Paddle's signature).

Returns:
    Tensor: bool, of the broadcast shape. Also ``x >= y``.

Example:
    >>> import framework as fw
    >>> fw.greater_equal(fw.to_tensor([1, 2, 3]), 2)
    Tensor(shape=[3], dtype=bool, device=cpu:0,
           [False,  True,  True])
"""


def _nonzero_divisor(name: str, y: Tensor) -> Tensor:
    """``y``, checked to hold no 0: an integer ``//`` or ``%`` by zero raises (as Paddle's
    "Integer division by zero" does), on every device. Eagerly the core reads one flag back
    (``all(y != 0)``); while tracing, ``y`` passes through a gather whose index is out of range
    where ``y`` is 0, so the program's run raises from the gather's bounds check, which every
    plugin does."""
    if TRACER.get() is None:
        if not builtins.bool(all(y != 0)):
            raise OpArgumentError(_DIV_BY_ZERO.format(name=name, where=f"the divisor {y.shape} holds a 0"))
        return y
    flat = y.reshape((-1,))
    n = flat.shape[0]
    at = C.arange(n, dtype="int64", device=y.device) + cast(flat == 0, _dt.int64) * n
    return apply1(OPS["gather"], [flat, at], {"axis": 0}).reshape(y.shape)


_DIV_BY_ZERO = (
    "[{name}] integer division by zero: {where}; an integer // or % by 0 has no value (Paddle raises "
    "too). Mask it first (fw.where(y == 0, 1, y)) or divide floats (x / y gives inf)"
)


def _int_division(name: str):
    op = OPS[name]

    def f(x: Any, y: Any, name: str | None = None) -> Tensor:
        if type(y) is int and y == 0 and isinstance(x, Tensor) and x.dtype.kind in "iub":
            raise OpArgumentError(_DIV_BY_ZERO.format(name=op.name, where="the divisor is the scalar 0"))
        a, b = _operands(op.name, x, y)
        if b.dtype.kind in "iu" and type(y) is not int:  # a Python int divisor was checked above
            b = _nonzero_divisor(op.name, b)
        return apply(op, [a, b], {})[0]

    f.__name__ = name
    return f


floor_divide = _int_division("floor_divide")
floor_divide.__doc__ = """Elementwise ``x // y``, rounding towards minus infinity (as Python and numpy).

Args:
    x (Tensor | number): the left operand.
    y (Tensor | number): the right operand; ``x`` and ``y`` broadcast together.
    name: ignored (Paddle's signature).

Returns:
    Tensor: of the broadcast shape and the promoted dtype (also ``x // y``).

Example:
    >>> import framework as fw
    >>> fw.floor_divide(fw.to_tensor([-7, 7]), 2)
    Tensor(shape=[2], dtype=int64, device=cpu:0,
           [-4,  3])
"""
remainder = _int_division("remainder")
remainder.__doc__ = """Elementwise ``x % y``, with the sign of ``y`` (as Python).

``mod`` and ``floor_mod`` are this function.

Args:
    x (Tensor | number): the left operand.
    y (Tensor | number): the right operand; ``x`` and ``y`` broadcast together.
    name: ignored (Paddle's signature).

Returns:
    Tensor: of the broadcast shape and the promoted dtype (also ``x % y``); ``x == (x // y) * y + x % y``.

Example:
    >>> import framework as fw
    >>> fw.remainder(fw.to_tensor([-7, 7]), 3)
    Tensor(shape=[2], dtype=int64, device=cpu:0,
           [2, 1])
    >>> fw.mod(fw.to_tensor([-7.0, 7.0]), -3.0).tolist()
    [-1.0, -2.0]
"""
mod = remainder


def divide(x: Any, y: Any, name: str | None = None) -> Tensor:
    """Elementwise true division ``x / y``; integer inputs give the default float dtype.

    Args:
        x (Tensor | number): the dividend.
        y (Tensor | number): the divisor; ``x`` and ``y`` broadcast together.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: of the broadcast shape, a float dtype (also ``x / y``).

    Example:
        >>> import framework as fw
        >>> fw.divide(fw.to_tensor([1, 2]), 2)
        Tensor(shape=[2], dtype=float32, device=cpu:0,
               [0.5, 1. ])
    """
    a, b = _operands("div", x, y)
    if not _dt.is_floating(a.dtype):
        d = _dt.get_default_dtype()
        a, b = cast(a, d), cast(b, d)
    return apply1(OPS["div"], [a, b], {})


def pow(x: Any, y: Any, name: str | None = None) -> Tensor:
    """Elementwise ``x ** y``, with broadcasting and type promotion.

    An integer base with a negative integer exponent is an error (as in numpy), checked on the
    device without reading the exponent back.

    Args:
        x (Tensor | number): the base.
        y (Tensor | number): the exponent.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: of the broadcast shape and the promoted dtype (also ``x ** y``).

    Example:
        >>> import framework as fw
        >>> fw.pow(fw.to_tensor([1, 2, 3]), 2)
        Tensor(shape=[3], dtype=int64, device=cpu:0,
               [1, 4, 9])
        >>> fw.pow(fw.to_tensor([4.0, 9.0]), 0.5).tolist()
        [2.0, 3.0]
    """
    a, b = _operands("pow", x, y)
    if a.dtype.kind in "iu" and b.dtype.kind in "iu":
        try:  # a negative exponent becomes index 1 of a 1-element tensor: the gather bounds check
            apply1(
                OPS["gather"],
                [
                    C.zeros((1,), dtype=_dt.int64, device=b.device),
                    cast(less_than(b, 0), _dt.int64).reshape((-1,)),
                ],
                {"axis": 0},
            )
        except OpArgumentError:
            raise OpArgumentError(
                f"[pow] the exponent y holds a negative value but x and y are integers ({a.dtype}, {b.dtype}); "
                f"integers to negative integer powers are not defined: cast x to a float dtype first"
            ) from None
    return apply1(OPS["pow"], [a, b], {})


def _logical(name: str):
    op = OPS[name]

    def f(x: Any, y: Any, name: str | None = None) -> Tensor:
        a = x if isinstance(x, Tensor) else None
        b = y if isinstance(y, Tensor) else None
        like = a if a is not None else b
        if like is None:
            raise OpArgumentError(f"[{op.name}] expected at least one Tensor")
        if a is None:
            a = (
                _const(x, _dt.bool_, like.device, like.ndim)
                if isinstance(x, _SCALARS)
                else _tensor_like(op.name, x, like)
            )
        if b is None:
            b = (
                _const(y, _dt.bool_, like.device, like.ndim)
                if isinstance(y, _SCALARS)
                else _tensor_like(op.name, y, like)
            )
        return apply1(op, [cast(a, _dt.bool_), cast(b, _dt.bool_)], {})

    return f


logical_and = _logical("logical_and")
logical_and.__doc__ = """Elementwise logical AND; the inputs are read as bool (non-zero is True).

Args:
    x (Tensor | bool): the left operand.
    y (Tensor | bool): the right operand; ``x`` and ``y`` broadcast together.
    name: ignored (Paddle's signature).

Returns:
    Tensor: bool, of the broadcast shape.

Example:
    >>> import framework as fw
    >>> fw.logical_and(fw.to_tensor([True, True, False]), fw.to_tensor([True, False, False]))
    Tensor(shape=[3], dtype=bool, device=cpu:0,
           [ True, False, False])
"""
logical_or = _logical("logical_or")
logical_or.__doc__ = """Elementwise logical OR; the inputs are read as bool (non-zero is True).

Args:
    x (Tensor | bool): the left operand.
    y (Tensor | bool): the right operand; ``x`` and ``y`` broadcast together.
    name: ignored (Paddle's signature).

Returns:
    Tensor: bool, of the broadcast shape.

Example:
    >>> import framework as fw
    >>> fw.logical_or(fw.to_tensor([1, 0, 0]), fw.to_tensor([0, 2, 0]))
    Tensor(shape=[3], dtype=bool, device=cpu:0,
           [ True,  True, False])
"""


def logical_xor(x: Tensor, y: Tensor) -> Tensor:
    """Elementwise logical exclusive OR; the inputs are read as bool (non-zero is True).

    Args:
        x (Tensor): the left operand.
        y (Tensor): the right operand; ``x`` and ``y`` broadcast together.

    Returns:
        Tensor: bool, of the broadcast shape.

    Example:
        >>> import framework as fw
        >>> fw.logical_xor(fw.to_tensor([True, False]), fw.to_tensor([True, True]))
        Tensor(shape=[2], dtype=bool, device=cpu:0,
               [False,  True])
    """
    return not_equal(cast(x, _dt.bool_), cast(y, _dt.bool_))


def logical_not(x: Tensor) -> Tensor:
    """Elementwise logical NOT; the input is read as bool (non-zero is True).

    Args:
        x (Tensor): the input.

    Returns:
        Tensor: bool, of ``x``'s shape.

    Example:
        >>> import framework as fw
        >>> fw.logical_not(fw.to_tensor([0, 1, 2]))
        Tensor(shape=[3], dtype=bool, device=cpu:0,
               [ True, False, False])
    """
    return apply1(OPS["logical_not"], [cast(_check(x, "logical_not"), _dt.bool_)], {})


def _check(x: Any, name: str) -> Tensor:
    if not isinstance(x, Tensor):
        raise OpArgumentError(
            f"[{name}] expected a Tensor, got {type(x).__name__}; wrap data with fw.to_tensor"
        )
    return x


def _unary(name: str, float_only: bool):
    op = OPS[name]

    def f(x: Tensor, name: str | None = None) -> Tensor:
        x = _check(x, op.name)
        if float_only and not _dt.is_floating(x.dtype):
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
abs = _unary("abs", False)
abs.__doc__ = """Elementwise absolute value ``|x|``.

Args:
    x (Tensor): the input.
    name: ignored (Paddle's signature).

Returns:
    Tensor: like ``x``; bool is an error.

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


def round(x: Tensor) -> Tensor:
    """Elementwise rounding to the nearest integer, halves away from zero (as Paddle, not numpy).

    Args:
        x (Tensor): the input.

    Returns:
        Tensor: like ``x``.

    Example:
        >>> import framework as fw
        >>> fw.round(fw.to_tensor([0.5, 1.5, -0.5, 2.4]))
        Tensor(shape=[4], dtype=float32, device=cpu:0,
               [ 1.,  2., -1.,  2.])
    """
    return sign(x) * floor(abs(x) + 0.5)


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


def cast(x: Tensor, dtype: Any) -> Tensor:
    """Convert ``x`` to ``dtype`` (Paddle's ``cast``; also ``x.astype``).

    Floats to integers truncate towards zero; ``x`` itself comes back when it already has
    ``dtype``.

    Args:
        x (Tensor): the input.
        dtype (str | np.dtype): the dtype wanted, e.g. ``"int32"`` or ``fw.float16``.

    Returns:
        Tensor: of ``x``'s shape and ``dtype``.

    Example:
        >>> import framework as fw
        >>> fw.cast(fw.to_tensor([1.7, -1.7]), "int32")
        Tensor(shape=[2], dtype=int32, device=cpu:0,
               [ 1, -1])
    """
    x = _check(x, "cast")
    d = _dt.as_dtype(dtype, "cast")
    if x.dtype == d:
        return x
    return apply1(OPS["cast"], [x], {"dtype": d})


def where(condition: Any, x: Any = None, y: Any = None, name: str | None = None) -> Tensor:
    """``condition ? x : y`` elementwise with broadcasting (``fw.where(condition)`` alone, the
    indices where it holds, is ``indexing.where``)."""
    c = _check(condition, "where")
    if c.dtype != _dt.bool_:
        c = cast(c, _dt.bool_)
    a, b = _operands("where", x if x is not None else 0, y if y is not None else 0)
    return apply1(OPS["where"], [c, a, b], {})


def clip(x: Tensor, min: Any = None, max: Any = None) -> Tensor:
    """Limit the values of ``x`` to ``[min, max]``; ``clamp`` is this function.

    Args:
        x (Tensor): the input.
        min (number | Tensor, optional): the lower bound; ``None``: none.
        max (number | Tensor, optional): the upper bound; ``None``: none.

    Returns:
        Tensor: ``minimum(maximum(x, min), max)``.

    Example:
        >>> import framework as fw
        >>> fw.clip(fw.to_tensor([-2.0, 0.5, 3.0]), 0.0, 1.0)
        Tensor(shape=[3], dtype=float32, device=cpu:0,
               [0. , 0.5, 1. ])
        >>> fw.clamp(fw.to_tensor([-2, 5]), max=3).tolist()
        [-2, 3]
    """
    r = x
    if min is not None:
        r = maximum(r, min)
    if max is not None:
        r = minimum(r, max)
    return r


# -- reductions -----------------------------------------------------------------------------
def normalize_axes(name: str, axis: Any, ndim: int) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    axes = [axis] if isinstance(axis, (int, np.integer)) else list(axis)
    out: list[int] = []
    seen: list[int] = []
    for a in axes:
        if isinstance(a, Tensor):
            a = int(a.item())
        if not isinstance(a, (int, np.integer)) or isinstance(a, bool):
            raise OpArgumentError(f"[{name}] axis must be an int or a sequence of ints, got {axis!r}")
        if not -builtins.max(ndim, 1) <= a < builtins.max(ndim, 1):
            raise OpArgumentError(
                f"[{name}] axis {a} is out of range for a tensor with {ndim} dimensions; expected -{builtins.max(ndim, 1)} <= axis < {builtins.max(ndim, 1)}"
            )
        a = int(a) % builtins.max(ndim, 1)
        if a in seen:  # also for a 0-d tensor, whose only axis (0 or -1) reduces nothing
            raise OpArgumentError(f"[{name}] axis {a} appears twice in {axis!r}")
        seen.append(a)
        if ndim:
            out.append(a)
    return tuple(sorted(out))


def _reduce(opname: str, x: Tensor, axis: Any, keepdim: bool) -> Tensor:
    x = _check(x, opname)
    axes = normalize_axes(opname, axis, x.ndim)
    return apply1(OPS[opname], [x], {"axes": axes, "keepdim": bool(keepdim)})


def sum(
    x: Tensor, axis: Any = None, dtype: Any = None, keepdim: bool = False, name: str | None = None
) -> Tensor:
    """Sum of the elements of ``x`` over ``axis``.

    Args:
        x (Tensor): the input.
        axis (int | list[int] | tuple[int], optional): the axes to reduce; ``None``: all of them.
        dtype (str | np.dtype, optional): cast ``x`` to this first; by default bool and integers
            sum as int64.
        keepdim (bool): keep the reduced axes, with size 1.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: the sums.

    Example:
        >>> import framework as fw
        >>> x = fw.to_tensor([[1.0, 2.0], [3.0, 4.0]])
        >>> fw.sum(x, axis=0)
        Tensor(shape=[2], dtype=float32, device=cpu:0,
               [4., 6.])
        >>> fw.sum(x).item()
        10.0
        >>> fw.sum(fw.to_tensor([True, True, False])).item()
        2
    """
    x = _check(x, "sum")
    if dtype is not None:
        x = cast(x, dtype)
    elif x.dtype.kind in "biu":
        x = cast(x, _dt.int64)
    return _reduce("sum", x, axis, keepdim)


def prod(x: Tensor, axis: Any = None, keepdim: bool = False, dtype: Any = None) -> Tensor:
    """Product of the elements of ``x`` over ``axis``.

    Args:
        x (Tensor): the input.
        axis (int | list[int] | tuple[int], optional): the axes to reduce; ``None``: all of them.
        keepdim (bool): keep the reduced axes, with size 1.
        dtype (str | np.dtype, optional): cast ``x`` to this first; by default bool and integers
            multiply as int64.

    Returns:
        Tensor: the products.

    Example:
        >>> import framework as fw
        >>> fw.prod(fw.to_tensor([[1, 2], [3, 4]]), axis=1)
        Tensor(shape=[2], dtype=int64, device=cpu:0,
               [ 2, 12])
    """
    x = _check(x, "prod")
    if dtype is not None:
        x = cast(x, dtype)
    elif x.dtype.kind in "biu":
        x = cast(x, _dt.int64)
    return _reduce("prod", x, axis, keepdim)


def _nonempty(name: str, x: Tensor, axis: Any) -> None:
    axes = normalize_axes(name, axis, x.ndim)
    if builtins.any(x.shape[a] == 0 for a in axes) or (x.numel() == 0 and not axes):
        raise OpArgumentError(
            f"[{name}] cannot reduce over an empty dimension of shape {x.shape}; the result is undefined"
        )


def max(x: Tensor, axis: Any = None, keepdim: bool = False, name: str | None = None) -> Tensor:
    """Largest element of ``x`` over ``axis``; ``amax`` is this function.

    A NaN in the reduced elements gives NaN. Reducing an empty axis is an error.

    Args:
        x (Tensor): the input.
        axis (int | list[int] | tuple[int], optional): the axes to reduce; ``None``: all of them.
        keepdim (bool): keep the reduced axes, with size 1.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: of ``x``'s dtype.

    Example:
        >>> import framework as fw
        >>> x = fw.to_tensor([[1, 5, 2], [7, 0, 3]])
        >>> fw.max(x, axis=0, keepdim=True)
        Tensor(shape=[1, 3], dtype=int64, device=cpu:0,
               [[7, 5, 3]])
        >>> fw.amax(x).item()
        7
    """
    x = _check(x, "max")
    _nonempty("max", x, axis)
    return _reduce("max", x, axis, keepdim)


def min(x: Tensor, axis: Any = None, keepdim: bool = False, name: str | None = None) -> Tensor:
    """Smallest element of ``x`` over ``axis``; ``amin`` is this function.

    A NaN in the reduced elements gives NaN. Reducing an empty axis is an error.

    Args:
        x (Tensor): the input.
        axis (int | list[int] | tuple[int], optional): the axes to reduce; ``None``: all of them.
        keepdim (bool): keep the reduced axes, with size 1.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: of ``x``'s dtype.

    Example:
        >>> import framework as fw
        >>> x = fw.to_tensor([[1, 5, 2], [7, 0, 3]])
        >>> fw.min(x, axis=1)
        Tensor(shape=[2], dtype=int64, device=cpu:0,
               [1, 0])
        >>> fw.amin(x).item()
        0
    """
    x = _check(x, "min")
    _nonempty("min", x, axis)
    return _reduce("min", x, axis, keepdim)


amax, amin = max, min


def _arg(opname: str, x: Tensor, axis: Any, keepdim: bool) -> Tensor:
    x = _check(x, opname)
    if axis is None:
        if x.numel() == 0:
            raise OpArgumentError(f"[{opname}] cannot take {opname} of an empty tensor")
        r = apply1(OPS[opname], [x.reshape((-1,))], {"axis": 0, "keepdim": False})
        return r.reshape((1,) * x.ndim) if keepdim else r
    (ax,) = normalize_axes(opname, axis, x.ndim) or (0,)
    if x.ndim == 0:
        return apply1(OPS[opname], [x.reshape((1,))], {"axis": 0, "keepdim": False})
    if x.shape[ax] == 0:
        raise OpArgumentError(f"[{opname}] cannot take {opname} over the empty axis {ax} of shape {x.shape}")
    return apply1(OPS[opname], [x], {"axis": ax, "keepdim": bool(keepdim)})


def argmax(
    x: Tensor, axis: Any = None, keepdim: bool = False, dtype: Any = "int64", name: str | None = None
) -> Tensor:
    """Index of the largest element of ``x`` along ``axis`` (the first one on ties).

    Args:
        x (Tensor): the input.
        axis (int, optional): the axis; ``None``: the index into the flattened ``x``.
        keepdim (bool): keep the reduced axis, with size 1.
        dtype (str | np.dtype): the index dtype, ``"int64"`` or ``"int32"``.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: the indices, of ``dtype``.

    Example:
        >>> import framework as fw
        >>> x = fw.to_tensor([[1, 5, 2], [7, 0, 3]])
        >>> fw.argmax(x, axis=1, dtype="int32").dtype
        dtype('int32')
        >>> fw.argmax(x, axis=1)
        Tensor(shape=[2], dtype=int64, device=cpu:0,
               [1, 0])
        >>> fw.argmax(x).item()
        3
    """
    return _index_dtype("argmax", _arg("argmax", x, axis, keepdim), dtype)


def argmin(
    x: Tensor, axis: Any = None, keepdim: bool = False, dtype: Any = "int64", name: str | None = None
) -> Tensor:
    """Index of the smallest element of ``x`` along ``axis`` (the first one on ties).

    Args:
        x (Tensor): the input.
        axis (int, optional): the axis; ``None``: the index into the flattened ``x``.
        keepdim (bool): keep the reduced axis, with size 1.
        dtype (str | np.dtype): the index dtype, ``"int64"`` or ``"int32"``.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: the indices, of ``dtype``.

    Example:
        >>> import framework as fw
        >>> x = fw.to_tensor([[1, 5, 2], [7, 0, 3]])
        >>> fw.argmin(x, axis=0)
        Tensor(shape=[3], dtype=int64, device=cpu:0,
               [0, 1, 0])
    """
    return _index_dtype("argmin", _arg("argmin", x, axis, keepdim), dtype)


def _index_dtype(name: str, out: Tensor, dtype: Any) -> Tensor:
    d = _dt.as_dtype(dtype, name)
    if d.name not in ("int64", "int32"):
        raise OpArgumentError(f"[{name}] dtype must be int32 or int64, got {d}")
    return out if d == out.dtype else cast(out, d)


def mean(
    x: Tensor, axis: Any = None, keepdim: bool = False, name: str | None = None, *, dtype: Any = None
) -> Tensor:
    """Arithmetic mean of the elements of ``x`` over ``axis``.

    Args:
        x (Tensor): the input; integers are cast to the default float dtype.
        axis (int | list[int] | tuple[int], optional): the axes to reduce; ``None``: all of them.
        keepdim (bool): keep the reduced axes, with size 1.
        name: ignored (Paddle's signature).
        dtype (str | np.dtype, optional): cast ``x`` to this float dtype first.

    Returns:
        Tensor: a float tensor; NaN over an empty axis.

    Example:
        >>> import framework as fw
        >>> x = fw.to_tensor([[1.0, 2.0], [3.0, 4.0]])
        >>> fw.mean(x, axis=1)
        Tensor(shape=[2], dtype=float32, device=cpu:0,
               [1.5, 3.5])
        >>> fw.mean(x).item()
        2.5
    """
    x = _check(x, "mean")
    if dtype is not None:
        x = cast(x, dtype)
    if not _dt.is_floating(x.dtype):
        x = cast(x, _dt.get_default_dtype())
    axes = normalize_axes("mean", axis, x.ndim)
    n = 1
    for a in axes:
        n *= x.shape[a]
    return _reduce("sum", x, axes, keepdim) * (1.0 / n if n else float("nan"))


def all(x: Tensor, axis: Any = None, keepdim: bool = False) -> Tensor:
    """Whether every element of ``x`` over ``axis`` is true (non-zero).

    Args:
        x (Tensor): the input, read as bool.
        axis (int | list[int] | tuple[int], optional): the axes to reduce; ``None``: all of them.
        keepdim (bool): keep the reduced axes, with size 1.

    Returns:
        Tensor: bool; True for an empty ``x``.

    Example:
        >>> import framework as fw
        >>> x = fw.to_tensor([[True, False], [True, True]])
        >>> fw.all(x, axis=1)
        Tensor(shape=[2], dtype=bool, device=cpu:0,
               [False,  True])
        >>> fw.all(x).item()
        False
    """
    return cast(
        _reduce("min", cast(x, _dt.uint8), axis, keepdim)
        if x.numel()
        else _const(True, _dt.bool_, x.device).reshape(()),
        _dt.bool_,
    )


def any(x: Tensor, axis: Any = None, keepdim: bool = False) -> Tensor:
    """Whether some element of ``x`` over ``axis`` is true (non-zero).

    Args:
        x (Tensor): the input, read as bool.
        axis (int | list[int] | tuple[int], optional): the axes to reduce; ``None``: all of them.
        keepdim (bool): keep the reduced axes, with size 1.

    Returns:
        Tensor: bool; False for an empty ``x``.

    Example:
        >>> import framework as fw
        >>> x = fw.to_tensor([[0, 0], [0, 3]])
        >>> fw.any(x, axis=1)
        Tensor(shape=[2], dtype=bool, device=cpu:0,
               [False,  True])
    """
    return cast(
        _reduce("max", cast(x, _dt.uint8), axis, keepdim)
        if x.numel()
        else _const(False, _dt.bool_, x.device).reshape(()),
        _dt.bool_,
    )


def count_nonzero(x: Tensor, axis: Any = None, keepdim: bool = False) -> Tensor:
    """Number of non-zero elements of ``x`` over ``axis``.

    Args:
        x (Tensor): the input.
        axis (int | list[int] | tuple[int], optional): the axes to reduce; ``None``: all of them.
        keepdim (bool): keep the reduced axes, with size 1.

    Returns:
        Tensor: int64 counts.

    Example:
        >>> import framework as fw
        >>> fw.count_nonzero(fw.to_tensor([[0, 1, 2], [0, 0, 3]]), axis=1)
        Tensor(shape=[2], dtype=int64, device=cpu:0,
               [2, 1])
    """
    return sum(cast(x, _dt.bool_), axis=axis, keepdim=keepdim)


# -- matmul ---------------------------------------------------------------------------------
def matmul(
    x: Tensor, y: Tensor, transpose_x: bool = False, transpose_y: bool = False, name: str | None = None
) -> Tensor:
    """Matrix product of ``x`` and ``y``, with numpy's rules for 1-d operands and batch broadcasting.

    A 1-d ``x`` is a row vector and a 1-d ``y`` a column vector, their added dim removed from the
    result; dims before the last two are a batch and broadcast.

    Args:
        x (Tensor): at least 1-d.
        y (Tensor): at least 1-d; the last dim of ``x`` must equal the second-to-last of ``y``.
        transpose_x (bool): use ``x`` with its last two dims swapped.
        transpose_y (bool): use ``y`` with its last two dims swapped.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: the product (also ``x @ y``).

    Example:
        >>> import framework as fw
        >>> a = fw.to_tensor([[1.0, 2.0], [3.0, 4.0]])
        >>> fw.matmul(a, fw.to_tensor([1.0, 1.0]))
        Tensor(shape=[2], dtype=float32, device=cpu:0,
               [3., 7.])
        >>> fw.matmul(a, a, transpose_x=True).tolist()
        [[10.0, 14.0], [14.0, 20.0]]
    """
    x = _check(x, "matmul")
    y = _check(y, "matmul")
    if x.ndim == 0 or y.ndim == 0:
        raise OpArgumentError(
            f"[matmul] both operands need at least 1 dimension, got shapes {x.shape} and {y.shape}; use * for scalars"
        )
    x, y = _operands("matmul", x, y)
    if x.dtype == _dt.bool_:
        raise OpArgumentError("[matmul] bool tensors are not supported; cast to a number type first")
    tx = bool(transpose_x) and x.ndim >= 2
    ty = bool(transpose_y) and y.ndim >= 2
    squeeze_front = x.ndim == 1
    squeeze_back = y.ndim == 1
    if squeeze_front:
        x = x.reshape((1,) + x.shape)
    if squeeze_back:
        y = y.reshape(y.shape + (1,))
    kx = x.shape[-2] if tx else x.shape[-1]
    ky = y.shape[-1] if ty else y.shape[-2]
    if kx != ky:
        sx = x.shape[:-2] + (x.shape[-1], x.shape[-2]) if tx else x.shape
        sy = y.shape[:-2] + (y.shape[-1], y.shape[-2]) if ty else y.shape
        raise OpArgumentError(
            f"[matmul] shapes {sx} and {sy} do not match: {kx} != {ky}; "
            f"the last dim of x must equal the second-to-last of y"
        )
    batch = broadcast_shapes("matmul", x.shape[:-2], y.shape[:-2])
    if x.shape[:-2] != batch:
        x = x.expand(batch + x.shape[-2:])
    if y.shape[:-2] != batch:
        y = y.expand(batch + y.shape[-2:])
    out = matmul_t(x, y, tx, ty)
    if squeeze_front:
        out = out.reshape(out.shape[:-2] + out.shape[-1:])
    if squeeze_back:
        out = out.reshape(out.shape[:-1])
    return out


def _matmul_t_infer(ins: list[Tensor], attrs: dict[str, Any]) -> list:
    a, b = ins
    m = a.shape[-1] if attrs["transpose_x"] else a.shape[-2]
    n = b.shape[-2] if attrs["transpose_y"] else b.shape[-1]
    return [(a.shape[:-2] + (m, n), a.dtype)]


def _matmul_t_decomposition(a: Tensor, b: Tensor, transpose_x: bool, transpose_y: bool) -> Tensor:
    """op(a) @ op(b) with op = transpose of the last two dims where asked. Without a fused
    kernel one operand is copied transposed; pick the copy that moves fewer bytes."""
    mm_ = OPS["matmul"]
    if not transpose_x and not transpose_y:
        return apply1(mm_, [a, b], {})
    if transpose_y and not transpose_x:  # a (m, k), b (n, k)
        m, k, n = a.shape[-2], a.shape[-1], b.shape[-2]
        if m * (n + k) < k * n:
            return apply1(mm_, [b, a.swapaxes(-1, -2)], {}).swapaxes(-1, -2)
        return apply1(mm_, [a, b.swapaxes(-1, -2)], {})
    if transpose_x and not transpose_y:  # a (k, m), b (k, n)
        k, m, n = a.shape[-2], a.shape[-1], b.shape[-1]
        if n * (m + k) < m * k:
            return apply1(mm_, [b.swapaxes(-1, -2), a], {}).swapaxes(-1, -2)
        return apply1(mm_, [a.swapaxes(-1, -2), b], {})
    return apply1(mm_, [a.swapaxes(-1, -2), b.swapaxes(-1, -2)], {})


def _g_matmul_t(n: Any, g: list) -> list:
    a, b = n.inputs
    tx, ty = n.attrs["transpose_x"], n.attrs["transpose_y"]
    go = g[0]
    ga = gb = None
    if not a.stop_gradient:
        ga = matmul_t(b, go, ty, True) if tx else matmul_t(go, b, False, not ty)
    if not b.stop_gradient:
        gb = matmul_t(go, a, True, tx and ty) if ty else matmul_t(a, go, not tx, False)
    return [ga, gb]


_MATMUL_T = composite(
    "matmul_t",
    amp="allow",
    sharding=_sh.matmul_t,
    flops=matmul_flops,
    infer=_matmul_t_infer,
    grad=_g_matmul_t,
)(_matmul_t_decomposition)


def matmul_t(a: Tensor, b: Tensor, transpose_x: bool, transpose_y: bool) -> Tensor:
    """``op(a) @ op(b)`` on operands of equal batch shape and rank >= 2 (internal)."""
    if not transpose_x and not transpose_y:
        return apply1(OPS["matmul"], [a, b], {})
    return call(_MATMUL_T, [a, b], {"transpose_x": bool(transpose_x), "transpose_y": bool(transpose_y)})


def mm(x: Tensor, y: Tensor) -> Tensor:
    """Matrix product of ``x`` and ``y`` (the same as :func:`matmul`).

    Args:
        x (Tensor): at least 1-d.
        y (Tensor): at least 1-d.

    Returns:
        Tensor: the product.

    Example:
        >>> import framework as fw
        >>> fw.mm(fw.to_tensor([[1, 2]]), fw.to_tensor([[3], [4]]))
        Tensor(shape=[1, 1], dtype=int64, device=cpu:0,
               [[11]])
    """
    return matmul(x, y)


def dot(x: Tensor, y: Tensor) -> Tensor:
    """Inner product of ``x`` and ``y`` along their last axis.

    Args:
        x (Tensor): 1-d, or 2-d for a batch of rows.
        y (Tensor): of ``x``'s shape.

    Returns:
        Tensor: 0-d for 1-d inputs, else one value per row.

    Example:
        >>> import framework as fw
        >>> fw.dot(fw.to_tensor([1.0, 2.0, 3.0]), fw.to_tensor([4.0, 5.0, 6.0]))
        Tensor(shape=[], dtype=float32, device=cpu:0,
               32.)
    """
    return sum(x * y, axis=-1)


def allclose(
    x: Tensor,
    y: Tensor,
    rtol: float = 1e-5,
    atol: float = 1e-8,
    equal_nan: bool = False,
    name: str | None = None,
) -> Tensor:
    """Whether ``|x - y| <= atol + rtol * |y|`` holds for every element.

    Args:
        x (Tensor): the first tensor.
        y (Tensor): the second tensor; ``x`` and ``y`` broadcast together.
        rtol (float): the relative tolerance.
        atol (float): the absolute tolerance.
        equal_nan (bool): NaN matches NaN (else NaNs are unequal).
        name: ignored (Paddle's signature).

    Returns:
        Tensor: a 0-d bool tensor, as Paddle's (``bool()`` of it, or ``if``, reads it).

    Example:
        >>> import framework as fw
        >>> fw.allclose(fw.to_tensor([1.0, 2.0]), fw.to_tensor([1.0, 2.000001]))
        Tensor(shape=[], dtype=bool, device=cpu:0,
               True)
        >>> bool(fw.allclose(fw.to_tensor([1.0]), fw.to_tensor([1.1])))
        False
    """
    x, y = _check(x, "allclose"), _check(y, "allclose")
    a, b = x.numpy(), y.numpy()
    return to_tensor(bool(np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)), device=x.device)


def ones_like(x: Tensor) -> Tensor:
    return C.ones_like(x)


def zeros_like(x: Tensor) -> Tensor:
    return C.zeros_like(x)


def _seq(v: Any) -> Sequence[Any]:
    return v if isinstance(v, (list, tuple)) else [v]
