"""Paddle's remaining elementwise functions, each a decomposition into existing ops (so each
runs and differentiates wherever they do): copysign, signbit, hypot, ldexp, logaddexp,
heaviside, frac, sgn, positive, negative, isposinf, isneginf, isreal, nan_to_num, sinc, isin.
"""

from __future__ import annotations

import math as _m
from typing import Any

import numpy as np

from adapter_api import OpArgumentError

from ... import dtypes as _dt
from ...tensor import Tensor, to_tensor
from .. import complex as CX
from .. import creation as C
from .. import indexing as I
from .. import math as M
from .. import shape as S
from ._common import float_arg, tensor_arg
from .sorting import argsort


def _pair(name: str, x: Any, y: Any) -> tuple[Tensor, Tensor]:
    x = tensor_arg(name, x)
    y = y if isinstance(y, Tensor) else to_tensor(y, dtype=x.dtype, device=x.device)
    return x, y


def signbit(x: Tensor, name: str | None = None) -> Tensor:
    """Elementwise: whether the sign bit of ``x`` is set (True for -0.0 and negative values).

    Args:
        x (Tensor): the input.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: bool, of ``x``'s shape.

    Example:
        >>> import framework as fw
        >>> fw.signbit(fw.to_tensor([-1.0, -0.0, 0.0, 2.0])).tolist()
        [True, True, False, False]
    """
    x = tensor_arg("signbit", x)
    if x.dtype.kind in "ub":
        return M.zeros_like(x).astype("bool")
    if x.dtype.kind == "i":
        return x < 0
    # -0.0 is the zero whose reciprocal is -inf
    return (x < 0) | ((x == 0) & (1.0 / M.where(x == 0, x, 1.0) < 0))


def copysign(x: Tensor, y: Any, name: str | None = None) -> Tensor:
    """Elementwise ``|x|`` with the sign of ``y`` (-0.0 counts as negative).

    Args:
        x (Tensor): the magnitudes.
        y (Tensor | number): the signs; broadcast with ``x``.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: of ``x``'s dtype (a float for a float ``y``).

    Example:
        >>> import framework as fw
        >>> fw.copysign(fw.to_tensor([1.0, -2.0, 3.0]), fw.to_tensor([-1.0, 0.0, -0.0])).tolist()
        [-1.0, 2.0, -3.0]
    """
    x, y = _pair("copysign", x, y)
    a = M.abs(x)
    return M.where(signbit(y), -a, a)


def hypot(x: Tensor, y: Any, name: str | None = None) -> Tensor:
    """Elementwise ``sqrt(x^2 + y^2)``, without overflow for large inputs.

    Args:
        x (Tensor): one leg.
        y (Tensor | number): the other; broadcast with ``x``.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: a float tensor.

    Example:
        >>> import framework as fw
        >>> fw.hypot(fw.to_tensor([3.0, 1e30]), fw.to_tensor([4.0, 1e30])).tolist()
        [5.0, 1.4142135130433894e+30]
    """
    x = float_arg("hypot", x)
    _, y = _pair("hypot", x, y)
    ax, ay = M.abs(x), M.abs(M.cast(y, x.dtype) if y.dtype != x.dtype else y)
    big, small = M.maximum(ax, ay), M.minimum(ax, ay)
    safe = M.where(big == 0, 1.0, big)
    r = small / safe
    return M.where(big == 0, big, big * M.sqrt(r * r + 1.0))


def ldexp(x: Tensor, y: Any, name: str | None = None) -> Tensor:
    """Elementwise ``x * 2 ** y``.

    Args:
        x (Tensor): the mantissas; integers are cast to the default float dtype.
        y (Tensor | int): integer exponents; broadcast with ``x``.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: a float tensor.

    Example:
        >>> import framework as fw
        >>> fw.ldexp(fw.to_tensor([1, 2]), fw.to_tensor([2, 3])).tolist()
        [4.0, 16.0]
    """
    x = float_arg("ldexp", x)
    _, y = _pair("ldexp", x, y)
    if y.dtype.kind not in "iu":
        raise OpArgumentError(f"[ldexp] y must hold integers, got dtype {y.dtype}")
    return x * M.pow(2.0, M.cast(y, x.dtype))


def logaddexp(x: Tensor, y: Any, name: str | None = None) -> Tensor:
    """Elementwise ``log(exp(x) + exp(y))``, without overflow.

    Args:
        x (Tensor): the input; integers are cast to the default float dtype.
        y (Tensor | number): broadcast with ``x``.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: a float tensor.

    Example:
        >>> import framework as fw
        >>> fw.logaddexp(fw.to_tensor([0.0, 1000.0]), fw.to_tensor([0.0, 1000.0])).tolist()
        [0.6931471824645996, 1000.6931762695312]
    """
    x = float_arg("logaddexp", x)
    _, y = _pair("logaddexp", x, y)
    y = M.cast(y, x.dtype) if y.dtype != x.dtype else y
    m = M.maximum(x, y)
    d = M.abs(x - y)
    # equal infinities: log(2 e^inf) is inf (and -inf for -inf), not inf - inf
    return M.where(x == y, x + _m.log(2.0), m + M.log1p(M.exp(-M.where(x == y, 0.0, d))))


def heaviside(x: Tensor, y: Any, name: str | None = None) -> Tensor:
    """Elementwise step function: 0 where ``x < 0``, ``y`` where ``x == 0``, 1 where ``x > 0``.

    Args:
        x (Tensor): the input.
        y (Tensor | number): the value at 0; broadcast with ``x``.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: of the promoted dtype of ``x`` and ``y``.

    Example:
        >>> import framework as fw
        >>> fw.heaviside(fw.to_tensor([-1, 0, 2]), fw.to_tensor([5, 5, 5])).tolist()
        [0, 5, 1]
    """
    x, y = _pair("heaviside", x, y)
    d = _dt.promote(x.dtype, y.dtype)
    return M.where(x == 0, M.cast(y, d), M.cast(x > 0, d))


def frac(x: Tensor, name: str | None = None) -> Tensor:
    """Elementwise fractional part ``x - trunc(x)`` (with ``x``'s sign).

    Args:
        x (Tensor): the input.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: like ``x`` (0 for integers).

    Example:
        >>> import framework as fw
        >>> fw.frac(fw.to_tensor([-1.5, 2.25])).tolist()
        [-0.5, 0.25]
    """
    x = tensor_arg("frac", x)
    return x - M.trunc(x) if x.dtype.kind == "f" else x - x


def sgn(x: Tensor, name: str | None = None) -> Tensor:
    """Elementwise sign (-1, 0 or 1) of a real ``x`` (Paddle's name for complex inputs too).

    Args:
        x (Tensor): the input.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: like ``x``.

    Example:
        >>> import framework as fw
        >>> fw.sgn(fw.to_tensor([-1.5, 0.0, 3.0])).tolist()
        [-1.0, 0.0, 1.0]
    """
    x = tensor_arg("sgn", x)
    if x.dtype.kind == "c":  # x / |x|, 0 at 0
        return CX.sgn(x)
    return M.sign(x)


def positive(x: Tensor, name: str | None = None) -> Tensor:
    """``+x``: ``x`` itself (bool inputs are refused, as in Paddle).

    Args:
        x (Tensor): the input.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: ``x``.

    Example:
        >>> import framework as fw
        >>> fw.positive(fw.to_tensor([-1, 2])).tolist()
        [-1, 2]
    """
    x = tensor_arg("positive", x)
    if x.dtype == np.bool_:
        raise OpArgumentError("[positive] x must be numeric, got dtype bool")
    return x


def negative(x: Tensor, name: str | None = None) -> Tensor:
    """Elementwise ``-x``.

    Args:
        x (Tensor): the input.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: like ``x``.

    Example:
        >>> import framework as fw
        >>> fw.negative(fw.to_tensor([-1, 2])).tolist()
        [1, -2]
    """
    x = tensor_arg("negative", x)
    if x.dtype == np.bool_:
        raise OpArgumentError("[negative] x must be numeric, got dtype bool")
    return -x


def isposinf(x: Tensor, name: str | None = None) -> Tensor:
    """Elementwise ``x == +inf``.

    Args:
        x (Tensor): the input.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: bool, of ``x``'s shape.

    Example:
        >>> import framework as fw
        >>> fw.isposinf(fw.to_tensor([-float("inf"), 1.0, float("inf")])).tolist()
        [False, False, True]
    """
    x = tensor_arg("isposinf", x)
    return x == float("inf") if x.dtype.kind == "f" else M.zeros_like(x).astype("bool")


def isneginf(x: Tensor, name: str | None = None) -> Tensor:
    """Elementwise ``x == -inf``.

    Args:
        x (Tensor): the input.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: bool, of ``x``'s shape.

    Example:
        >>> import framework as fw
        >>> fw.isneginf(fw.to_tensor([-float("inf"), 1.0, float("inf")])).tolist()
        [True, False, False]
    """
    x = tensor_arg("isneginf", x)
    return x == float("-inf") if x.dtype.kind == "f" else M.zeros_like(x).astype("bool")


def isreal(x: Tensor, name: str | None = None) -> Tensor:
    """Elementwise: whether ``x`` is real (always True: Oarlock's dtypes are real).

    Args:
        x (Tensor): the input.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: bool, of ``x``'s shape.

    Example:
        >>> import framework as fw
        >>> fw.isreal(fw.to_tensor([1.0, 2.0])).tolist()
        [True, True]
    """
    x = tensor_arg("isreal", x)
    if x.dtype.kind == "c":  # a complex element is real when its imaginary part is 0
        return M.equal(CX.imag(x), 0.0)
    return M.ones_like(x).astype("bool")


def nan_to_num(
    x: Tensor,
    nan: float = 0.0,
    posinf: float | None = None,
    neginf: float | None = None,
    name: str | None = None,
) -> Tensor:
    """``x`` with NaN, +inf and -inf replaced by finite numbers.

    Args:
        x (Tensor): the input.
        nan (float): what NaN becomes.
        posinf (float, optional): what +inf becomes; default the dtype's largest value.
        neginf (float, optional): what -inf becomes; default the dtype's lowest value.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: like ``x``.

    Example:
        >>> import framework as fw
        >>> fw.nan_to_num(fw.to_tensor([float("nan"), 1.0, float("inf")]), posinf=9.0).tolist()
        [0.0, 1.0, 9.0]
    """
    x = tensor_arg("nan_to_num", x)
    if x.dtype.kind != "f":
        return x
    info = _dt.finfo(x.dtype) if hasattr(_dt, "finfo") else np.finfo(x.dtype)
    hi = float(info.max) if posinf is None else posinf
    lo = float(info.min) if neginf is None else neginf
    x = M.where(M.isnan(x), nan, x)
    return M.where(x == float("inf"), hi, M.where(x == float("-inf"), lo, x))


def sinc(x: Tensor, name: str | None = None) -> Tensor:
    """Elementwise normalized sinc ``sin(pi x) / (pi x)``, 1 at 0.

    Args:
        x (Tensor): the input; integers are cast to the default float dtype.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: a float tensor.

    Example:
        >>> import framework as fw
        >>> fw.sinc(fw.to_tensor([0.0, 0.5])).tolist()
        [1.0, 0.6366197466850281]
    """
    x = float_arg("sinc", x)
    px = M.where(x == 0, 1.0, x) * _m.pi
    return M.where(x == 0, 1.0, M.sin(px) / px)


def isin(
    x: Tensor, test_x: Tensor, assume_unique: bool = False, invert: bool = False, name: str | None = None
) -> Tensor:
    """Elementwise: whether each entry of ``x`` occurs in ``test_x``.

    Args:
        x (Tensor): the input.
        test_x (Tensor): the values to look for.
        assume_unique (bool): both ``x`` and ``test_x`` hold distinct values. Then, as Paddle
            and numpy do, the answer comes from one stable sort of both, an entry counting as
            found when its sorted neighbour is equal: on inputs that are not unique it may
            differ from the default (Paddle's docstring shows such a case).
        invert (bool): give "does not occur" instead.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: bool, of ``x``'s shape.

    Example:
        >>> import framework as fw
        >>> fw.isin(fw.to_tensor([1, 2, 3]), fw.to_tensor([2, 5])).tolist()
        [False, True, False]
    """
    x = tensor_arg("isin", x)
    t = tensor_arg("isin", test_x, "test_x").reshape((-1,))
    if assume_unique and t.shape[0] and x.numel():
        return _isin_sorted(x, t, invert)
    if t.shape[0] == 0:
        found = M.zeros_like(x).astype("bool")
    else:
        found = M.any(x.unsqueeze(-1) == t, axis=-1)
    return ~found if invert else found


def _isin_sorted(x: Tensor, t: Tensor, invert: bool) -> Tensor:
    """``isin`` for distinct values: stable-sort ``x`` and ``t`` together and compare each sorted
    entry with the next one (numpy's ``assume_unique`` algorithm, which Paddle follows)."""
    n = x.numel()
    both = S.concat([x.reshape((-1,)), M.cast(t, x.dtype)], axis=0)
    order = argsort(both, axis=0, stable=True)
    s = I.take_rows(both, order, 0)
    same = (s[1:] != s[:-1]) if invert else (s[1:] == s[:-1])
    last = C.full([1], bool(invert), dtype="bool", device=x.device)
    flag = S.concat([same, last], axis=0)
    out = I.scatter(C.zeros([both.shape[0]], dtype="bool", device=x.device), order, flag, axis=0)
    return out[:n].reshape(x.shape)
