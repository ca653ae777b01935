"""Elementwise math of two tensors, comparisons, logic, cast, where and clip: the user-facing
functions over the primitives (argument checks, scalars, type promotion, broadcasting).

The unary functions, the reductions and the matrix products live in ``unary``, ``reductions``
and ``matmuls``; they are re-exported here (``M.sum``, ``M.exp``, ``M.matmul``), the one
namespace the other ops read."""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any

import numpy as np

from adapter_api import OpArgumentError

from .. import dispatch
from .. import dtypes as _dt
from ..opdef import OpDef
from ..tensor import Tensor, to_tensor
from . import creation as C
from .base import OPS, TRACER, apply, apply1, fill_buffer

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


_SCALARS = (bool, int, float, complex, np.number, np.bool_)


def fast_scalar_plan(op: OpDef, x: Tensor, value: float, reflected: bool = False) -> tuple | None:
    """The fast path's plan for ``x op value`` (a Python float; ``value op x`` when
    ``reflected``): what :func:`_operands` and ``apply`` do when the scalar takes x's dtype (a
    floating x) — its cached constant as the other operand; None (the Python path) otherwise."""
    if _dt.scalar_dtype(value, x.dtype) != x.dtype:
        return None
    c = _const(value, x.dtype, x.device, len(x.shape))
    return dispatch.fast_binary_plan(op, c, x, out_of=1) if reflected else dispatch.fast_binary_plan(op, x, c)


def fast_divide_plan(op: OpDef, x: Tensor, y: Tensor) -> tuple | None:
    """The fast path's plan for ``x / y`` (two tensors of one dtype): :func:`divide` casts
    integer and bool inputs to the default float dtype first, so only floating and complex
    dtypes run the kernel as they come; None (the Python path) for the others."""
    if not _dt.is_floating(x.dtype) and x.dtype.kind != "c":
        return None
    return dispatch.fast_binary_plan(op, x, y)


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
        d = _dt.promote(x.dtype, y.dtype, name)
    elif xt:
        if type(y) is float or isinstance(y, _SCALARS):
            d = _dt.scalar_dtype(y, x.dtype)
            y = _const(y, d, x.device, len(x.shape))
        else:
            y = _tensor_like(name, y, x)
            d = _dt.promote(x.dtype, y.dtype, name)
    elif yt:
        if isinstance(x, _SCALARS):
            d = _dt.scalar_dtype(x, y.dtype)
            x = _const(x, d, y.device, len(y.shape))
        else:
            x = _tensor_like(name, x, y)
            d = _dt.promote(x.dtype, y.dtype, name)
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
        if isinstance(x, Tensor) and isinstance(y, Tensor) and x.dtype is y.dtype:  # the common case
            return apply(op, [x, y], {})[0]
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
    (the smallest of ``y != 0``); while tracing, ``y`` passes through a gather whose index is out of range
    where ``y`` is 0, so the program's run raises from the gather's bounds check, which every
    plugin does."""
    if TRACER.get() is None:
        nonzero = cast(y != 0, _dt.uint8).reshape((-1,))
        smallest = apply1(OPS["min"], [nonzero], {"axes": (0,), "keepdim": False}) if y.numel() else None
        if smallest is not None and not builtins.bool(smallest):
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
    if not _dt.is_floating(a.dtype) and a.dtype.kind != "c":
        d = _dt.get_default_dtype()
        a, b = cast(a, d), cast(b, d)
    return apply1(OPS["div"], [a, b], {})


def pow(x: Any, y: Any, name: str | None = None) -> Tensor:
    """Elementwise ``x ** y``, with broadcasting and type promotion.

    An integer base with a negative integer exponent is an error (as in numpy), checked on the
    device without reading the exponent back. An integer tensor to a Python float power that is
    a whole number ``>= 0`` keeps the integer dtype (Paddle's ``pow(x, 2.0)``); to any other
    float power it gives the default float dtype, as Paddle's ``x ** 0.5`` does (Paddle's
    ``pow(x, 0.5)`` truncates the exponent to an integer and gives 1 for every element). The
    ``**`` operator always promotes to float for a float exponent (Paddle's ``x ** 2.0``).

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
        >>> fw.pow(fw.to_tensor([2, 3]), 2.0).tolist(), fw.pow(fw.to_tensor([2, 3]), 0.5).dtype == fw.float32
        ([4, 9], True)
    """
    if (
        isinstance(x, Tensor)
        and x.dtype.kind in "iu"
        and isinstance(y, float)
        and y >= 0
        and y.is_integer()
        and y < 2**63
    ):
        y = int(y)  # a whole-number power of an integer tensor stays integer (Paddle)
    return pow_operator(x, y)


def pow_operator(x: Any, y: Any) -> Tensor:
    """``x ** y`` (the ``**`` operator): :func:`pow` without its whole-float-exponent rule, so
    an integer tensor to any float power gives floats (Paddle's operator does).

    Example:
        >>> import framework as fw
        >>> (fw.to_tensor([2, 3]) ** 2.0).tolist(), (fw.to_tensor([2, 3]) ** 2).tolist()
        ([4.0, 9.0], [4, 9])
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


def clip(x: Tensor, min: Any = None, max: Any = None) -> Tensor:  # noqa: F811  (Paddle's names)
    """Limit the values of ``x`` to ``[min, max]``; ``clamp`` is this function.

    Args:
        x (Tensor): the input.
        min (number | Tensor, optional): the lower bound; ``None``: none.
        max (number | Tensor, optional): the upper bound; ``None``: none.

    Returns:
        Tensor: ``minimum(maximum(x, min), max)``. Number bounds with ``min > max`` raise.

    Example:
        >>> import framework as fw
        >>> fw.clip(fw.to_tensor([-2.0, 0.5, 3.0]), 0.0, 1.0)
        Tensor(shape=[3], dtype=float32, device=cpu:0,
               [0. , 0.5, 1. ])
        >>> fw.clamp(fw.to_tensor([-2, 5]), max=3).tolist()
        [-2, 3]
    """
    if (
        isinstance(min, (int, float, np.integer, np.floating))
        and isinstance(max, (int, float, np.integer, np.floating))
        and min > max
    ):
        raise OpArgumentError(
            f"[clip] min must not be greater than max, got min={min!r} and max={max!r}; "
            "swap them (Paddle raises here too)"
        )
    r = x
    if min is not None:
        r = maximum(r, min)
    if max is not None:
        r = minimum(r, max)
    return r


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
