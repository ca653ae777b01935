"""Elementwise special functions by decomposition into primitives: the inverse trigonometric
and hyperbolic functions, tan/sinh/cosh, lgamma, digamma, erfinv, logit, stanh, log10, and
angle conversions. The Bessel functions live in ``bessel``, polygamma and the incomplete gamma
functions in ``gamma_functions`` (both re-exported here).

``atan`` is Cephes' rational approximation with range reduction (double-precision accurate);
``asin``/``acos``/``atan2`` are built on it. ``lgamma`` is Lanczos (g=7, 9 terms) with the
reflection formula for x < 0.5; ``digamma`` (and its derivative, trigamma) shift x up by 6 with
the recurrence and then use the asymptotic series; ``erfinv`` starts from Giles' approximation
and refines with two Newton steps on ``erf``. Ops whose decomposition branches (``where``)
carry an explicit gradient rule beside them.
"""

from __future__ import annotations

import math as _m
from typing import Any

from adapter_api import OpArgumentError

from ...tensor import Tensor
from .. import math as M
from .. import sharding as _sh
from ..base import OPS, call, composite
from ._common import float_arg
from .manipulation import broadcast_tensors

_PIO2 = _m.pi / 2
_T3P8 = 2.41421356237309504880  # tan(3 pi / 8)
_ATAN_P = (
    -8.750608600031904122785e-1,
    -1.615753718733365076637e1,
    -7.500855792314704667340e1,
    -1.228866684490136173410e2,
    -6.485021904942025371773e1,
)
_ATAN_Q = (
    2.485846490142306297962e1,
    1.650270098316988542046e2,
    4.328810604912902668951e2,
    4.853903996359136964868e2,
    1.945506571482613964425e2,
)


def _poly(z: Tensor, coefs: tuple[float, ...], monic: bool = False) -> Tensor:
    """Horner: c0 z^n + ... + cn (``monic``: a leading 1 before c0)."""
    r = z + coefs[0] if monic else z * 0.0 + coefs[0]
    for c in coefs[1:]:
        r = r * z + c
    return r


# -- atan family ------------------------------------------------------------------------------
def _atan_grad(node: Any, g: list) -> list:
    x = node.inputs[0]
    return [g[0] / (x * x + 1.0)]


@composite("atan", sharding=_sh.elementwise(), grad=_atan_grad)
def atan_decomposition(x: Tensor) -> Tensor:
    """Cephes atan: reduce |x| to [0, 0.66] (x > tan(3pi/8): pi/2 - atan(1/x); x > 0.66:
    pi/4 + atan((x-1)/(x+1))), then x + x z P(z)/Q(z) with z = x^2."""
    a = M.abs(x)
    big = a > _T3P8
    mid = (a > 0.66) & (~big)
    safe = M.where(big, a, 1.0)
    r = M.where(big, -1.0 / safe, M.where(mid, (a - 1.0) / (a + 1.0), a))
    zero = r * 0.0  # not a * 0.0: that is NaN at |x| = inf
    base = M.where(big, zero + _PIO2, M.where(mid, zero + _m.pi / 4, zero))
    z = r * r
    y = base + (r + r * (z * _poly(z, _ATAN_P) / _poly(z, _ATAN_Q, monic=True)))
    return M.where(x < 0, -y, y)


def _atan2_grad(node: Any, g: list) -> list:
    y, x = node.inputs
    r2 = x * x + y * y
    return [g[0] * x / r2, -(g[0] * y) / r2]


@composite("atan2", sharding=_sh.elementwise(), grad=_atan2_grad)
def atan2_decomposition(y: Tensor, x: Tensor) -> Tensor:
    """atan(y / x) moved to the right quadrant; x == 0 gives +-pi/2 (0 when y == 0 too)."""
    q = OPS["atan"].decomposition(y / M.where(x == 0, 1.0, x))
    left = M.where(y >= 0, q + _m.pi, q - _m.pi)
    zero = q * 0.0
    axis = M.where(y > 0, zero + _PIO2, M.where(y < 0, zero - _PIO2, zero))
    return M.where(x > 0, q, M.where(x < 0, left, axis))


def atan(x: Tensor, name: str | None = None) -> Tensor:
    """Elementwise arctangent.

    Args:
        x (Tensor): the input; integers are cast to the default float dtype.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: a float tensor of ``x``'s shape, in (-pi/2, pi/2).

    Example:
        >>> import framework as fw
        >>> fw.atan(fw.to_tensor([0.0, 1.0, -1.0]))
        Tensor(shape=[3], dtype=float32, device=cpu:0,
               [ 0.       ,  0.7853982, -0.7853982])
    """
    return call(OPS["atan"], [float_arg("atan", x)], {})


def atan2(x: Tensor, y: Tensor, name: str | None = None) -> Tensor:
    """Elementwise arctangent of ``x / y`` in (-pi, pi], the quadrant from both signs.

    Paddle's argument order: ``x`` is the ordinate, ``y`` the abscissa.

    Args:
        x (Tensor): the ordinate; integers are cast to the default float dtype.
        y (Tensor): the abscissa; ``x`` and ``y`` broadcast together.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: a float tensor of the broadcast shape.

    Example:
        >>> import framework as fw
        >>> fw.atan2(fw.to_tensor([1.0, 1.0, -1.0]), fw.to_tensor([1.0, -1.0, 0.0]))
        Tensor(shape=[3], dtype=float32, device=cpu:0,
               [ 0.7853982,  2.3561945, -1.5707964])
    """
    a, b = M._operands("atan2", float_arg("atan2", x), float_arg("atan2", y))
    if a.shape != b.shape:
        a, b = broadcast_tensors([a, b])
    return call(OPS["atan2"], [a, b], {})


def asin(x: Tensor, name: str | None = None) -> Tensor:
    """Elementwise arcsine.

    Computed as ``atan(x / sqrt((1 - x) * (1 + x)))``.

    Args:
        x (Tensor): the input; integers are cast to the default float dtype.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: a float tensor of ``x``'s shape, in [-pi/2, pi/2]; NaN outside [-1, 1].

    Example:
        >>> import framework as fw
        >>> fw.asin(fw.to_tensor([0.0, 0.5, 1.0]))
        Tensor(shape=[3], dtype=float32, device=cpu:0,
               [0.       , 0.5235988, 1.5707964])
    """
    x = float_arg("asin", x)
    return atan(x / M.sqrt((1.0 - x) * (1.0 + x)))


def acos(x: Tensor, name: str | None = None) -> Tensor:
    """Elementwise arccosine.

    Computed as ``2 * atan(sqrt((1 - x) / (1 + x)))``, accurate near ``x = 1``.

    Args:
        x (Tensor): the input; integers are cast to the default float dtype.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: a float tensor of ``x``'s shape, in [0, pi]; NaN outside [-1, 1].

    Example:
        >>> import framework as fw
        >>> fw.acos(fw.to_tensor([1.0, 0.0, -1.0]))
        Tensor(shape=[3], dtype=float32, device=cpu:0,
               [0.       , 1.5707964, 3.1415927])
    """
    x = float_arg("acos", x)
    return atan(M.sqrt((1.0 - x) / (1.0 + x))) * 2.0


def tan(x: Tensor, name: str | None = None) -> Tensor:
    """Elementwise tangent (radians).

    Args:
        x (Tensor): the input; integers are cast to the default float dtype.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: a float tensor of ``x``'s shape.

    Example:
        >>> import framework as fw
        >>> fw.tan(fw.to_tensor([0.0, 0.7853982]))
        Tensor(shape=[2], dtype=float32, device=cpu:0,
               [0., 1.])
    """
    x = float_arg("tan", x)
    return M.sin(x) / M.cos(x)


def sinh(x: Tensor, name: str | None = None) -> Tensor:
    """Elementwise hyperbolic sine ``(exp(x) - exp(-x)) / 2``.

    Args:
        x (Tensor): the input; integers are cast to the default float dtype.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: a float tensor of ``x``'s shape.

    Example:
        >>> import framework as fw
        >>> fw.sinh(fw.to_tensor([0.0, 1.0]))
        Tensor(shape=[2], dtype=float32, device=cpu:0,
               [0.       , 1.1752012])
    """
    x = float_arg("sinh", x)
    u = M.expm1(M.clip(x, -1.0, 1.0))  # |x| <= 1: from expm1, no cancellation near 0
    return M.where(M.abs(x) <= 1.0, (u + u / (u + 1.0)) * 0.5, (M.exp(x) - M.exp(-x)) * 0.5)


def cosh(x: Tensor, name: str | None = None) -> Tensor:
    """Elementwise hyperbolic cosine ``(exp(x) + exp(-x)) / 2``.

    Args:
        x (Tensor): the input; integers are cast to the default float dtype.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: a float tensor of ``x``'s shape, >= 1.

    Example:
        >>> import framework as fw
        >>> fw.cosh(fw.to_tensor([0.0, 1.0]))
        Tensor(shape=[2], dtype=float32, device=cpu:0,
               [1.       , 1.5430807])
    """
    x = float_arg("cosh", x)
    return (M.exp(x) + M.exp(-x)) * 0.5


def asinh(x: Tensor, name: str | None = None) -> Tensor:
    """Elementwise inverse hyperbolic sine.

    Computed as ``log1p(a + a^2 / (1 + sqrt(1 + a^2)))`` of ``a = |x|`` with ``x``'s sign (odd,
    exact near 0, no cancellation for ``x < 0``).

    Args:
        x (Tensor): the input; integers are cast to the default float dtype.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: a float tensor of ``x``'s shape.

    Example:
        >>> import framework as fw
        >>> fw.asinh(fw.to_tensor([0.0, 1.0, -1.0]))
        Tensor(shape=[3], dtype=float32, device=cpu:0,
               [ 0.       ,  0.8813736, -0.8813736])
    """
    x = float_arg("asinh", x)

    def g(a: Tensor) -> Tensor:  # asinh(a) for a >= 0: log1p(a + a^2 / (1 + sqrt(1 + a^2)))
        big = a > 1e18  # a^2 would overflow: asinh(a) = log(2a) there
        c = M.clip(a, -1e18, 1e18)
        return M.where(
            big, M.log(M.clip(a, 1e18, None)) + _m.log(2.0), M.log1p(c + c * c / (M.sqrt(c * c + 1.0) + 1.0))
        )

    return M.where(x < 0, -g(-x), g(x))  # odd, each sign its own branch (derivative 1 at 0)


def acosh(x: Tensor, name: str | None = None) -> Tensor:
    """Elementwise inverse hyperbolic cosine.

    Args:
        x (Tensor): the input, >= 1; integers are cast to the default float dtype.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: a float tensor of ``x``'s shape; NaN below 1.

    Example:
        >>> import framework as fw
        >>> fw.acosh(fw.to_tensor([1.0, 2.0]))
        Tensor(shape=[2], dtype=float32, device=cpu:0,
               [0.      , 1.316958])
    """
    x = float_arg("acosh", x)
    return M.log(x + M.sqrt((x - 1.0) * (x + 1.0)))


def atanh(x: Tensor, name: str | None = None) -> Tensor:
    """Elementwise inverse hyperbolic tangent ``log((1 + x) / (1 - x)) / 2``.

    Args:
        x (Tensor): the input, in [-1, 1]; integers are cast to the default float dtype.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: a float tensor of ``x``'s shape; +-inf at +-1.

    Example:
        >>> import framework as fw
        >>> fw.atanh(fw.to_tensor([0.0, 0.5]))
        Tensor(shape=[2], dtype=float32, device=cpu:0,
               [0.        , 0.54930615])
    """
    x = float_arg("atanh", x)
    # odd: h(|x|) with h(a) = log1p(2a / (1 - a)) / 2, whose 1 + 2a / (1 - a) never cancels
    # (each sign its own branch, not abs(x), so the derivative at 0 stays 1)
    h = lambda a: M.log1p(a * 2.0 / (1.0 - a)) * 0.5  # noqa: E731
    return M.where(x < 0, -h(-x), h(x))


# -- gamma family -----------------------------------------------------------------------------
_LANCZOS = (
    0.99999999999980993,
    676.5203681218851,
    -1259.1392167224028,
    771.32342877765313,
    -176.61502916214059,
    12.507343278686905,
    -0.13857109526572012,
    9.9843695780195716e-6,
    1.5056327351493116e-7,
)
_HALF_LOG_2PI = 0.5 * _m.log(2 * _m.pi)


def _lgamma_pos(z: Tensor) -> Tensor:
    """Lanczos for z >= 0.5."""
    z = z - 1.0
    a = z * 0.0 + _LANCZOS[0]
    for i, c in enumerate(_LANCZOS[1:], start=1):
        a = a + c / (z + float(i))
    t = z + 7.5
    return (z + 0.5) * M.log(t) - t + M.log(a) + _HALF_LOG_2PI


def _zeta(k: int) -> float:
    """Riemann zeta(k), k >= 2 (Euler-Maclaurin after 200 terms: float64-exact)."""
    n = 200
    tail = (
        n ** (1 - k) / (k - 1)
        + 0.5 * n**-k
        + k * n ** (-k - 1) / 12
        - k * (k + 1) * (k + 2) * n ** (-k - 3) / 720
    )
    return sum(i**-k for i in range(1, n)) + tail


#: lgamma(1 + e) = -gamma e + sum_k (-1)^k zeta(k) / k e^k, |e| <= 0.25: terms to e^26 (< 1e-17)
_LGAMMA_SERIES = (-0.5772156649015329,) + tuple((-1) ** k * _zeta(k) / k for k in range(2, 27))


def _lgamma_series(e: Tensor) -> Tensor:
    acc = e * 0.0 + _LGAMMA_SERIES[-1]
    for c in reversed(_LGAMMA_SERIES[:-1]):
        acc = acc * e + c
    return acc * e


def _digamma(x: Tensor) -> Tensor:
    neg = x < 0.5
    z = M.where(neg, 1.0 - x, x)
    acc = z * 0.0
    for k in range(6):
        acc = acc + 1.0 / (z + float(k))
    w = z + 6.0
    iw2 = 1.0 / (w * w)
    tail = 1.0 / 132 - iw2 * (691.0 / 32760 - iw2 * (1.0 / 12))  # to w^-14: float64-accurate for w >= 6.5
    series = (
        M.log(w)
        - 0.5 / w
        - iw2 * (1.0 / 12 - iw2 * (1.0 / 120 - iw2 * (1.0 / 252 - iw2 * (1.0 / 240 - iw2 * tail))))
    )
    psi = series - acc
    return M.where(neg, psi - _m.pi / tan(x * _m.pi), psi)


def _trigamma(x: Tensor) -> Tensor:
    neg = x < 0.5
    z = M.where(neg, 1.0 - x, x)
    acc = z * 0.0
    for k in range(6):
        acc = acc + 1.0 / ((z + float(k)) * (z + float(k)))
    w = z + 6.0
    iw = 1.0 / w
    iw2 = iw * iw
    series = iw + iw2 * 0.5 + iw * iw2 * (1.0 / 6 - iw2 * (1.0 / 30 - iw2 * (1.0 / 42 - iw2 * (1.0 / 30))))
    t = series + acc
    s = M.sin(x * _m.pi)
    return M.where(neg, (_m.pi * _m.pi) / (s * s) - t, t)


def _lgamma_grad(node: Any, g: list) -> list:
    return [g[0] * _digamma(node.inputs[0])]


@composite("lgamma", sharding=_sh.elementwise(), grad=_lgamma_grad)
def lgamma_decomposition(x: Tensor) -> Tensor:
    """log|Gamma(x)|: Lanczos for x >= 0.5, log(pi / |sin(pi x)|) - lgamma(1 - x) below; within
    0.25 of 1 the Taylor series at 1 (within 0.25 of 2 with lgamma(x) = lgamma(x - 1) +
    log(x - 1)), so the zeros at 1 and 2 are exact and the values near them keep their
    relative accuracy."""
    neg = x < 0.5
    pos = _lgamma_pos(M.where(neg, 1.0 - x, x))
    second = x >= 1.5
    e = M.where(second, x - 2.0, x - 1.0)
    near = M.abs(e) < 0.25
    e = M.clip(e, -0.25, 0.25)
    series = _lgamma_series(e) + M.where(second, M.log(M.clip(x - 1.0, 0.75, 1.25)), 0.0)
    pos = M.where(near, series, pos)
    refl = M.log(_m.pi / M.abs(M.sin(x * _m.pi))) - pos
    return M.where(neg, refl, pos)


def _digamma_grad(node: Any, g: list) -> list:
    return [g[0] * _trigamma(node.inputs[0])]


@composite("digamma", sharding=_sh.elementwise(), grad=_digamma_grad)
def digamma_decomposition(x: Tensor) -> Tensor:
    """psi(x) = psi(x + 6) - sum 1/(x + k), asymptotic series at x + 6; reflection below 0.5."""
    return _digamma(x)


def lgamma(x: Tensor, name: str | None = None) -> Tensor:
    """Elementwise log of the absolute value of the gamma function.

    Lanczos' approximation for ``x >= 0.5``, the reflection formula below.

    Args:
        x (Tensor): the input; integers are cast to the default float dtype.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: a float tensor of ``x``'s shape.

    Example:
        >>> import framework as fw
        >>> fw.lgamma(fw.to_tensor([5.0, 0.5]))
        Tensor(shape=[2], dtype=float32, device=cpu:0,
               [3.1780548 , 0.57236516])
    """
    return call(OPS["lgamma"], [float_arg("lgamma", x)], {})


def digamma(x: Tensor, name: str | None = None) -> Tensor:
    """Elementwise digamma function, the derivative of :func:`lgamma`.

    Args:
        x (Tensor): the input; integers are cast to the default float dtype.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: a float tensor of ``x``'s shape.

    Example:
        >>> import framework as fw
        >>> fw.digamma(fw.to_tensor([1.0, 2.0]))
        Tensor(shape=[2], dtype=float32, device=cpu:0,
               [-0.5772159,  0.4227842])
    """
    return call(OPS["digamma"], [float_arg("digamma", x)], {})


# -- erfinv -----------------------------------------------------------------------------------
_GILES_LO = (
    2.81022636e-08,
    3.43273939e-07,
    -3.5233877e-06,
    -4.39150654e-06,
    0.00021858087,
    -0.00125372503,
    -0.00417768164,
    0.246640727,
    1.50140941,
)
_GILES_HI = (
    -0.000200214257,
    0.000100950558,
    0.00134934322,
    -0.00367342844,
    0.00573950773,
    -0.0076224613,
    0.00943887047,
    1.00167406,
    2.83297682,
)
_SQRT_PI_2 = _m.sqrt(_m.pi) / 2


def _erfinv_grad(node: Any, g: list) -> list:
    y = node.out()
    return [g[0] * (M.exp(y * y) * _SQRT_PI_2)]


@composite("erfinv", sharding=_sh.elementwise(), grad=_erfinv_grad)
def erfinv_decomposition(x: Tensor) -> Tensor:
    """Giles' approximation, then two Newton steps on erf(y) = x; +-inf at +-1."""
    w = -M.log((1.0 - x) * (1.0 + x))
    lo = _poly(w - 2.5, _GILES_LO)
    hi = _poly(M.sqrt(M.where(w < 5.0, 5.0, w)) - 3.0, _GILES_HI)
    y = M.where(w < 5.0, lo, hi) * x
    edge = M.abs(x) == 1.0
    y = M.where(edge, 0.0, y)
    for _ in range(2):
        y = y - (M.erf(y) - x) / (M.exp(-(y * y)) * (1.0 / _SQRT_PI_2))
    return M.where(edge, x * float("inf"), y)


def erfinv(x: Tensor, name: str | None = None) -> Tensor:
    """Elementwise inverse of the error function :func:`erf`.

    Giles' approximation, then two Newton steps.

    Args:
        x (Tensor): the input, in [-1, 1]; integers are cast to the default float dtype.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: a float tensor of ``x``'s shape; +-inf at +-1.

    Example:
        >>> import framework as fw
        >>> fw.erfinv(fw.to_tensor([0.0, 0.5, 1.0]))
        Tensor(shape=[3], dtype=float32, device=cpu:0,
               [0.        , 0.47693628,        inf])
    """
    return call(OPS["erfinv"], [float_arg("erfinv", x)], {})


# -- small ones -------------------------------------------------------------------------------
def logit(x: Tensor, eps: float | None = None, name: str | None = None) -> Tensor:
    """Elementwise log-odds ``log(x / (1 - x))``, the inverse of the sigmoid.

    Args:
        x (Tensor): probabilities; integers are cast to the default float dtype.
        eps (float, optional): clip ``x`` to ``[eps, 1 - eps]`` first.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: a float tensor of ``x``'s shape.

    Example:
        >>> import framework as fw
        >>> fw.logit(fw.to_tensor([0.5, 0.75]))
        Tensor(shape=[2], dtype=float32, device=cpu:0,
               [0.       , 1.0986123])
    """
    x = float_arg("logit", x)
    if eps is not None:
        x = M.clip(x, eps, 1.0 - eps)
    return M.log(x / (1.0 - x))


def stanh(x: Tensor, scale_a: float = 0.67, scale_b: float = 1.7159, name: str | None = None) -> Tensor:
    """Elementwise scaled tanh ``scale_b * tanh(scale_a * x)``.

    Args:
        x (Tensor): the input; integers are cast to the default float dtype.
        scale_a (float): the scale inside the tanh.
        scale_b (float): the scale outside.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: a float tensor of ``x``'s shape.

    Example:
        >>> import framework as fw
        >>> fw.stanh(fw.to_tensor([0.0, 1.0]))
        Tensor(shape=[2], dtype=float32, device=cpu:0,
               [0.      , 1.003767])
    """
    return M.tanh(float_arg("stanh", x) * scale_a) * scale_b


def log10(x: Tensor, name: str | None = None) -> Tensor:
    """Elementwise base-10 logarithm.

    Args:
        x (Tensor): the input; integers are cast to the default float dtype.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: a float tensor of ``x``'s shape.

    Example:
        >>> import framework as fw
        >>> fw.log10(fw.to_tensor([1.0, 100.0]))
        Tensor(shape=[2], dtype=float32, device=cpu:0,
               [0., 2.])
    """
    return M.log(float_arg("log10", x)) * (1.0 / _m.log(10.0))


def rad2deg(x: Tensor, name: str | None = None) -> Tensor:
    """Elementwise conversion of radians to degrees.

    Args:
        x (Tensor): the input; integers are cast to the default float dtype.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: a float tensor of ``x``'s shape.

    Example:
        >>> import framework as fw
        >>> fw.rad2deg(fw.to_tensor([3.14159265, 1.0]))
        Tensor(shape=[2], dtype=float32, device=cpu:0,
               [180.     ,  57.29578])
    """
    return float_arg("rad2deg", x) * (180.0 / _m.pi)


def deg2rad(x: Tensor, name: str | None = None) -> Tensor:
    """Elementwise conversion of degrees to radians.

    Args:
        x (Tensor): the input; integers are cast to the default float dtype.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: a float tensor of ``x``'s shape.

    Example:
        >>> import framework as fw
        >>> fw.deg2rad(fw.to_tensor([180.0, 90.0]))
        Tensor(shape=[2], dtype=float32, device=cpu:0,
               [3.1415927, 1.5707964])
    """
    return float_arg("deg2rad", x) * (_m.pi / 180.0)


def gammaln(x: Tensor, name: str | None = None) -> Tensor:
    """Elementwise ``log|Gamma(x)|``: :func:`lgamma` under SciPy's name.

    Args:
        x (Tensor): the input; integers are cast to the default float dtype.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: a float tensor of ``x``'s shape.

    Example:
        >>> import framework as fw
        >>> fw.gammaln(fw.to_tensor([1.0, 2.0])).tolist()
        [0.0, 0.0]
    """
    return lgamma(x)


def multigammaln(x: Tensor, p: int, name: str | None = None) -> Tensor:
    """Elementwise log of the multivariate gamma function of dimension ``p``.

    ``p (p - 1) / 4 log(pi) + sum_{j < p} lgamma(x - j / 2)``.

    Args:
        x (Tensor): the input, > (p - 1) / 2.
        p (int): the dimension, >= 1.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: a float tensor of ``x``'s shape.

    Example:
        >>> import framework as fw
        >>> round(fw.multigammaln(fw.to_tensor([3.0]), 2).item(), 5)
        1.5502
    """
    x = float_arg("multigammaln", x)
    if int(p) < 1:
        raise OpArgumentError(f"[multigammaln] p must be >= 1, got {p}")
    out = lgamma(x)
    for j in range(1, int(p)):
        out = out + lgamma(x - j / 2.0)
    return out + int(p) * (int(p) - 1) / 4.0 * _m.log(_m.pi)
