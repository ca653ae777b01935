"""Polygamma and the regularized incomplete gamma functions (gammainc, gammaincc), by
decomposition into the elementwise ops and lgamma/digamma."""

from __future__ import annotations

import math as _m

from adapter_api import OpArgumentError

from ...tensor import Tensor
from .. import math as M
from ._common import float_arg
from .special import digamma, lgamma


def polygamma(x: Tensor, n: int, name: str | None = None) -> Tensor:
    """Elementwise ``n``-th derivative of :func:`digamma` (``n = 0``: digamma itself), for ``x > 0``.

    ``(-1)^(n+1) n! zeta(n + 1, x)``: ten terms of the Hurwitz series, then its
    Euler-Maclaurin tail.

    Args:
        x (Tensor): the input; integers are cast to the default float dtype.
        n (int): the order, >= 0.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: a float tensor of ``x``'s shape.

    Example:
        >>> import framework as fw
        >>> round(fw.polygamma(fw.to_tensor([1.0]), 1).item(), 5)  # pi^2 / 6
        1.64493
    """
    x = float_arg("polygamma", x)
    n = int(n)
    if n < 0:
        raise OpArgumentError(f"[polygamma] n must be >= 0, got {n}")
    if n == 0:
        return digamma(x)
    s = n + 1
    acc = x * 0.0
    for k in range(10):
        acc = acc + M.pow(x + float(k), -float(s))
    a = x + 10.0
    tail = M.pow(a, 1.0 - s) / (s - 1) + M.pow(a, -float(s)) * 0.5
    # Bernoulli terms B_2j / (2j)! * s (s+1) ... (s + 2j - 2) * a^(-s - 2j + 1)
    rising = float(s)
    for j, b in enumerate((1.0 / 6, -1.0 / 30, 1.0 / 42, -1.0 / 30, 5.0 / 66), start=1):
        if j > 1:
            rising *= (s + 2 * j - 3) * (s + 2 * j - 2)
        tail = tail + M.pow(a, -float(s + 2 * j - 1)) * (b / _m.factorial(2 * j) * rising)
    return (acc + tail) * ((-1.0) ** (n + 1) * _m.factorial(n))


def _gamma_prefix(a: Tensor, x: Tensor) -> Tensor:
    """x^a e^-x / Gamma(a)."""
    return M.exp(a * M.log(x) - x - lgamma(a))


def _gammainc_pq(name: str, x: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
    """(P, Q) regularized incomplete gamma of parameter ``x`` at ``y``: the series where
    y < x + 1, Lentz's continued fraction elsewhere (each with a fixed number of terms)."""
    a = float_arg(name, x)
    z = float_arg(name, y, "y").astype(a.dtype)
    if any(
        v < 0
        for v in (float(M.min(a).item()) if a.numel() else 1.0, float(M.min(z).item()) if z.numel() else 0.0)
    ):
        raise OpArgumentError(f"[{name}] x must be > 0 and y >= 0")
    use_series = z < a + 1.0
    zs = M.where(use_series, M.maximum(z, 1e-30), a + 1.0)  # each branch on inputs it converges for
    term = 1.0 / a
    acc = term
    for k in range(1, 200):
        term = term * zs / (a + float(k))
        acc = acc + term
    p_series = acc * _gamma_prefix(a, zs)
    zc = M.where(use_series, a + 1.0, z)
    tiny = 1e-30
    b = zc + 1.0 - a
    c = b * 0.0 + 1.0 / tiny
    d = 1.0 / b
    h = d
    for i in range(1, 200):
        an = -float(i) * (float(i) - a)
        b = b + 2.0
        d = an * d + b
        d = M.where(M.abs(d) < tiny, tiny, d)
        c = b + an / c
        c = M.where(M.abs(c) < tiny, tiny, c)
        d = 1.0 / d
        h = h * d * c
    q_cf = h * _gamma_prefix(a, zc)
    zero = z == 0
    p = M.where(zero, 0.0, M.where(use_series, p_series, 1.0 - q_cf))
    q = M.where(zero, 1.0, M.where(use_series, 1.0 - p_series, q_cf))
    return p, q


def gammainc(x: Tensor, y: Tensor, name: str | None = None) -> Tensor:
    """Elementwise regularized lower incomplete gamma function ``P(x, y)``.

    Args:
        x (Tensor): the parameter, > 0.
        y (Tensor): the point, >= 0.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: a float tensor, in [0, 1].

    Example:
        >>> import framework as fw
        >>> [round(v, 4) for v in fw.gammainc(fw.to_tensor([0.5, 0.5]), fw.to_tensor([0.0, 1.0])).tolist()]
        [0.0, 0.8427]
    """
    return _gammainc_pq("gammainc", x, y)[0]


def gammaincc(x: Tensor, y: Tensor, name: str | None = None) -> Tensor:
    """Elementwise regularized upper incomplete gamma function ``Q(x, y) = 1 - P(x, y)``.

    Args:
        x (Tensor): the parameter, > 0.
        y (Tensor): the point, >= 0.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: a float tensor, in [0, 1].

    Example:
        >>> import framework as fw
        >>> [round(v, 4) for v in fw.gammaincc(fw.to_tensor([0.5, 0.5]), fw.to_tensor([0.0, 1.0])).tolist()]
        [1.0, 0.1573]
    """
    return _gammainc_pq("gammaincc", x, y)[1]
