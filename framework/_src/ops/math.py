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
from .base import OPS, apply1, broadcast_shapes, call, composite, fill_buffer
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
        return apply1(op, [a, b], {})

    f.__name__ = name
    f.__doc__ = f"Elementwise ``{name}`` with broadcasting and type promotion."
    return f


add = _binary("add")
subtract = _binary("sub")
multiply = _binary("mul")
maximum = _binary("maximum")
minimum = _binary("minimum")
equal = _binary("eq")
not_equal = _binary("ne")
less_than = _binary("lt")
less_equal = _binary("le")
greater_than = _binary("gt")
greater_equal = _binary("ge")
floor_divide = _binary("floor_divide")
remainder = _binary("remainder")
mod = remainder


def divide(x: Any, y: Any, name: str | None = None) -> Tensor:
    """True division; integer inputs give the default float dtype."""
    a, b = _operands("div", x, y)
    if not _dt.is_floating(a.dtype):
        d = _dt.get_default_dtype()
        a, b = cast(a, d), cast(b, d)
    return apply1(OPS["div"], [a, b], {})


def pow(x: Any, y: Any, name: str | None = None) -> Tensor:
    """``x ** y`` elementwise; an integer base with a negative integer exponent is an error
    (as in numpy), checked on the device without reading the exponent back."""
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
logical_or = _logical("logical_or")


def logical_xor(x: Tensor, y: Tensor) -> Tensor:
    return not_equal(cast(x, _dt.bool_), cast(y, _dt.bool_))


def logical_not(x: Tensor) -> Tensor:
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
abs = _unary("abs", False)
sign = _unary("sign", False)
exp = _unary("exp", True)
log = _unary("log", True)
sqrt = _unary("sqrt", True)
rsqrt = _unary("rsqrt", True)
sin = _unary("sin", True)
cos = _unary("cos", True)
tanh = _unary("tanh", True)
erf = _unary("erf", True)
floor = _unary("floor", True)
ceil = _unary("ceil", True)


def floor_(x: Tensor) -> Tensor:
    return x if x.dtype.kind in "iub" else floor(x)


def square(x: Tensor) -> Tensor:
    return multiply(x, x)


def reciprocal(x: Tensor) -> Tensor:
    return divide(1.0, x)


def log2(x: Tensor) -> Tensor:
    return log(x) * (1.0 / np.log(2.0))


def log1p(x: Tensor) -> Tensor:
    return log(x + 1.0)


def expm1(x: Tensor) -> Tensor:
    return exp(x) - 1.0


def round(x: Tensor) -> Tensor:
    """Round half away from zero."""
    return sign(x) * floor(abs(x) + 0.5)


def trunc(x: Tensor) -> Tensor:
    return sign(x) * floor(abs(x))


def isnan(x: Tensor) -> Tensor:
    return not_equal(x, x)


def isinf(x: Tensor) -> Tensor:
    return equal(abs(x), float("inf")) if _dt.is_floating(x.dtype) else equal(x, x) == False  # noqa: E712


def isfinite(x: Tensor) -> Tensor:
    return logical_not(logical_or(isnan(x), isinf(x))) if _dt.is_floating(x.dtype) else equal(x, x)


def cast(x: Tensor, dtype: Any) -> Tensor:
    """Convert to ``dtype`` (Paddle's ``cast``; also ``x.astype``)."""
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
    x = _check(x, "sum")
    if dtype is not None:
        x = cast(x, dtype)
    elif x.dtype.kind in "biu":
        x = cast(x, _dt.int64)
    return _reduce("sum", x, axis, keepdim)


def prod(x: Tensor, axis: Any = None, keepdim: bool = False, dtype: Any = None) -> Tensor:
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
    x = _check(x, "max")
    _nonempty("max", x, axis)
    return _reduce("max", x, axis, keepdim)


def min(x: Tensor, axis: Any = None, keepdim: bool = False, name: str | None = None) -> Tensor:
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
    return _arg("argmax", x, axis, keepdim)


def argmin(
    x: Tensor, axis: Any = None, keepdim: bool = False, dtype: Any = "int64", name: str | None = None
) -> Tensor:
    return _arg("argmin", x, axis, keepdim)


def mean(x: Tensor, axis: Any = None, keepdim: bool = False, name: str | None = None) -> Tensor:
    x = _check(x, "mean")
    if not _dt.is_floating(x.dtype):
        x = cast(x, _dt.get_default_dtype())
    axes = normalize_axes("mean", axis, x.ndim)
    n = 1
    for a in axes:
        n *= x.shape[a]
    return _reduce("sum", x, axes, keepdim) * (1.0 / n if n else float("nan"))


def all(x: Tensor, axis: Any = None, keepdim: bool = False) -> Tensor:
    return cast(
        _reduce("min", cast(x, _dt.uint8), axis, keepdim)
        if x.numel()
        else _const(True, _dt.bool_, x.device).reshape(()),
        _dt.bool_,
    )


def any(x: Tensor, axis: Any = None, keepdim: bool = False) -> Tensor:
    return cast(
        _reduce("max", cast(x, _dt.uint8), axis, keepdim)
        if x.numel()
        else _const(False, _dt.bool_, x.device).reshape(()),
        _dt.bool_,
    )


def count_nonzero(x: Tensor, axis: Any = None, keepdim: bool = False) -> Tensor:
    return sum(cast(x, _dt.bool_), axis=axis, keepdim=keepdim)


# -- matmul ---------------------------------------------------------------------------------
def matmul(
    x: Tensor, y: Tensor, transpose_x: bool = False, transpose_y: bool = False, name: str | None = None
) -> Tensor:
    """Matrix product with numpy's rules for 1-d operands and batch broadcasting."""
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
    return matmul(x, y)


def dot(x: Tensor, y: Tensor) -> Tensor:
    return sum(x * y, axis=-1)


def allclose(x: Tensor, y: Tensor, rtol: float = 1e-5, atol: float = 1e-8) -> bool:
    return bool(np.allclose(x.numpy(), y.numpy(), rtol=rtol, atol=atol))


def ones_like(x: Tensor) -> Tensor:
    return C.ones_like(x)


def zeros_like(x: Tensor) -> Tensor:
    return C.zeros_like(x)


def _seq(v: Any) -> Sequence[Any]:
    return v if isinstance(v, (list, tuple)) else [v]
