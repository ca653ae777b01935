"""The modified Bessel functions of the first kind (i0, i0e, i1, i1e): a power series for small
|x|, the asymptotic expansion above, each a decomposition into the elementwise ops."""

from __future__ import annotations

import math as _m

from ...tensor import Tensor
from .. import math as M
from ._common import float_arg

_BESSEL_SWITCH = 15.0  # power series below, the asymptotic expansion above


def _bessel_series(x: Tensor, order: int) -> Tensor:
    """I_order(x) = (x/2)^order sum_k (x^2/4)^k / (k! (k + order)!), |x| <= 15: 60 terms."""
    q = x * x * 0.25
    term = x * 0.0 + 1.0 / _m.factorial(order)
    acc = term
    for k in range(1, 60):
        term = term * q / float(k * (k + order))
        acc = acc + term
    return acc * (x * 0.5) ** order if order else acc


def _bessel_scaled_asymptotic(a: Tensor, order: int) -> Tensor:
    """e^-a I_order(a) for a >= 15: (2 pi a)^-1/2 sum_k (-1)^k prod_j (mu - (2j-1)^2) / (k! (8a)^k)."""
    mu = 4.0 * order * order
    term = a * 0.0 + 1.0
    acc = term
    for k in range(1, 12):
        term = term * (-(mu - (2 * k - 1) ** 2)) / (k * 8.0 * a)
        acc = acc + term
    return acc / M.sqrt(a * (2.0 * _m.pi))


def _bessel(name: str, x: Tensor, order: int, scaled: bool) -> Tensor:
    x = float_arg(name, x)
    a = M.abs(x)
    small = M.clip(x, -_BESSEL_SWITCH, _BESSEL_SWITCH)
    series = _bessel_series(small, order)
    if scaled:
        series = series * M.exp(-M.abs(small))
    big = M.clip(a, _BESSEL_SWITCH, None)
    asym = _bessel_scaled_asymptotic(big, order)
    if not scaled:
        asym = asym * M.exp(big)
    if order % 2:  # I_1 is odd
        asym = M.where(x < 0, -asym, asym)
    return M.where(a <= _BESSEL_SWITCH, series, asym)


def i0(x: Tensor, name: str | None = None) -> Tensor:
    """Elementwise modified Bessel function of the first kind, order 0.

    Args:
        x (Tensor): the input; integers are cast to the default float dtype.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: a float tensor of ``x``'s shape.

    Example:
        >>> import framework as fw
        >>> [round(v, 4) for v in fw.i0(fw.to_tensor([0.0, 1.0, 2.0])).tolist()]
        [1.0, 1.2661, 2.2796]
    """
    return _bessel("i0", x, 0, False)


def i0e(x: Tensor, name: str | None = None) -> Tensor:
    """Elementwise exponentially scaled :func:`i0`: ``exp(-|x|) * i0(x)`` (finite for large ``x``).

    Args:
        x (Tensor): the input; integers are cast to the default float dtype.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: a float tensor of ``x``'s shape.

    Example:
        >>> import framework as fw
        >>> [round(v, 4) for v in fw.i0e(fw.to_tensor([0.0, 1.0, 100.0])).tolist()]
        [1.0, 0.4658, 0.0399]
    """
    return _bessel("i0e", x, 0, True)


def i1(x: Tensor, name: str | None = None) -> Tensor:
    """Elementwise modified Bessel function of the first kind, order 1.

    Args:
        x (Tensor): the input; integers are cast to the default float dtype.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: a float tensor of ``x``'s shape.

    Example:
        >>> import framework as fw
        >>> [round(v, 4) for v in fw.i1(fw.to_tensor([0.0, 1.0, -2.0])).tolist()]
        [0.0, 0.5652, -1.5906]
    """
    return _bessel("i1", x, 1, False)


def i1e(x: Tensor, name: str | None = None) -> Tensor:
    """Elementwise exponentially scaled :func:`i1`: ``exp(-|x|) * i1(x)``.

    Args:
        x (Tensor): the input; integers are cast to the default float dtype.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: a float tensor of ``x``'s shape.

    Example:
        >>> import framework as fw
        >>> [round(v, 4) for v in fw.i1e(fw.to_tensor([0.0, 1.0, 100.0])).tolist()]
        [0.0, 0.2079, 0.0397]
    """
    return _bessel("i1e", x, 1, True)
