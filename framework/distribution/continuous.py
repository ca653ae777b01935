"""Continuous distributions: Normal, Uniform, Beta, Dirichlet (Paddle's ``paddle.distribution``)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from adapter_api import OpArgumentError

from .._src.autograd import no_grad
from .._src.ops import math as M
from .._src.ops import random as R
from .._src.ops.composites.special import digamma, lgamma
from .._src.tensor import Tensor
from .distribution import Distribution, as_param, broadcast, sample_shape, standard_gamma


class Normal(Distribution):
    """The normal distribution N(loc, scale**2).

    Args:
        loc (float | Tensor): the mean.
        scale (float | Tensor): the standard deviation (> 0).

    Example:
        >>> import framework as fw
        >>> d = fw.distribution.Normal(fw.to_tensor([0.0, 1.0]), 2.0)
        >>> d.sample([5]).shape, [round(v, 4) for v in d.log_prob(fw.to_tensor([0.0, 0.0])).tolist()]
        ((5, 2), [-1.6121, -1.7371])
        >>> round(d.entropy().tolist()[0], 4), d.variance.tolist()
        (2.1121, [4.0, 4.0])
    """

    def __init__(self, loc: Any, scale: Any, name: str | None = None) -> None:
        self.loc, self.scale = broadcast(as_param(loc, "loc", "Normal"), as_param(scale, "scale", "Normal"))
        super().__init__(self.loc.shape)

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        return self.scale * self.scale

    @property
    def stddev(self) -> Tensor:
        """The standard deviation."""
        return self.scale

    def rsample(self, shape: Sequence[int] = ()) -> Tensor:
        """``loc + scale * eps``, eps standard normal: differentiable in loc and scale."""
        shp = sample_shape(shape, "Normal") + self.batch_shape
        return self.loc + self.scale * R.randn(shp, dtype=self.loc.dtype, device=self.loc.device)

    def sample(self, shape: Sequence[int] = (), seed: int = 0) -> Tensor:
        with no_grad():
            return self.rsample(shape)

    def log_prob(self, value: Tensor) -> Tensor:
        z = (as_param(value, "value", "Normal.log_prob") - self.loc) / self.scale
        return -0.5 * z * z - M.log(self.scale) - 0.5 * math.log(2 * math.pi)

    def entropy(self) -> Tensor:
        return 0.5 + 0.5 * math.log(2 * math.pi) + M.log(self.scale)


class Uniform(Distribution):
    """The uniform distribution on [low, high).

    Example:
        >>> import framework as fw
        >>> d = fw.distribution.Uniform(0.0, fw.to_tensor([2.0, 4.0]))
        >>> d.sample([3]).shape, d.mean.tolist(), [round(v, 4) for v in d.entropy().tolist()]
        ((3, 2), [1.0, 2.0], [0.6931, 1.3863])
        >>> d.prob(fw.to_tensor([1.0, 5.0])).tolist()
        [0.5, 0.0]
    """

    def __init__(self, low: Any, high: Any, name: str | None = None) -> None:
        self.low, self.high = broadcast(as_param(low, "low", "Uniform"), as_param(high, "high", "Uniform"))
        super().__init__(self.low.shape)

    @property
    def mean(self) -> Tensor:
        return (self.low + self.high) / 2

    @property
    def variance(self) -> Tensor:
        w = self.high - self.low
        return w * w / 12

    def rsample(self, shape: Sequence[int] = ()) -> Tensor:
        """``low + (high - low) * u``, u uniform on [0, 1): differentiable in low and high."""
        shp = sample_shape(shape, "Uniform") + self.batch_shape
        return self.low + (self.high - self.low) * R.rand(shp, dtype=self.low.dtype, device=self.low.device)

    def sample(self, shape: Sequence[int] = (), seed: int = 0) -> Tensor:
        with no_grad():
            return self.rsample(shape)

    def log_prob(self, value: Tensor) -> Tensor:
        v = as_param(value, "value", "Uniform.log_prob")
        inside = M.cast(M.logical_and(v >= self.low, v < self.high), v.dtype)
        return M.log(inside) - M.log(self.high - self.low)

    def prob(self, value: Tensor) -> Tensor:
        v = as_param(value, "value", "Uniform.prob")
        inside = M.cast(M.logical_and(v >= self.low, v < self.high), v.dtype)
        return inside / (self.high - self.low)

    def entropy(self) -> Tensor:
        return M.log(self.high - self.low)


def _lbeta(a: Tensor, b: Tensor) -> Tensor:
    return lgamma(a) + lgamma(b) - lgamma(a + b)


class Beta(Distribution):
    """The beta distribution on (0, 1) with concentrations ``alpha`` and ``beta``.

    ``sample`` draws through two gamma variables (on the host, seeded from Oarlock's generator);
    it is not reparametrised, so ``rsample`` raises.

    Example:
        >>> import framework as fw
        >>> d = fw.distribution.Beta(2.0, 3.0)
        >>> round(d.mean.item(), 4), round(d.variance.item(), 4), round(d.log_prob(fw.to_tensor(0.5)).item(), 4)
        (0.4, 0.04, 0.4055)
        >>> 0 < d.sample([4]).min().item() and d.sample([4]).max().item() < 1
        True
    """

    def __init__(self, alpha: Any, beta: Any) -> None:
        self.alpha, self.beta = broadcast(as_param(alpha, "alpha", "Beta"), as_param(beta, "beta", "Beta"))
        super().__init__(self.alpha.shape)

    @property
    def mean(self) -> Tensor:
        return self.alpha / (self.alpha + self.beta)

    @property
    def variance(self) -> Tensor:
        s = self.alpha + self.beta
        return self.alpha * self.beta / (s * s * (s + 1))

    def sample(self, shape: Sequence[int] = ()) -> Tensor:
        shp = sample_shape(shape, "Beta")
        x, y = standard_gamma(self.alpha, shp), standard_gamma(self.beta, shp)
        return x / (x + y)

    def log_prob(self, value: Tensor) -> Tensor:
        v = as_param(value, "value", "Beta.log_prob")
        return (self.alpha - 1) * M.log(v) + (self.beta - 1) * M.log1p(-v) - _lbeta(self.alpha, self.beta)

    def entropy(self) -> Tensor:
        a, b = self.alpha, self.beta
        return _lbeta(a, b) - (a - 1) * digamma(a) - (b - 1) * digamma(b) + (a + b - 2) * digamma(a + b)


class Dirichlet(Distribution):
    """The Dirichlet distribution over the simplex, with ``concentration`` (..., K) (event shape (K,)).

    ``sample`` draws normalised gamma variables (host, seeded from Oarlock's generator); it is
    not reparametrised, so ``rsample`` raises.

    Example:
        >>> import framework as fw
        >>> d = fw.distribution.Dirichlet(fw.to_tensor([1.0, 2.0, 3.0]))
        >>> [round(v, 4) for v in d.mean.tolist()], d.event_shape
        ([0.1667, 0.3333, 0.5], (3,))
        >>> round(d.log_prob(fw.to_tensor([0.2, 0.3, 0.5])).item(), 4)
        1.5041
    """

    def __init__(self, concentration: Any) -> None:
        self.concentration = as_param(concentration, "concentration", "Dirichlet")
        if self.concentration.ndim < 1:
            raise OpArgumentError(
                f"[Dirichlet] concentration must have at least one axis (the categories), got shape {self.concentration.shape}"
            )
        super().__init__(self.concentration.shape[:-1], self.concentration.shape[-1:])

    def _total(self) -> Tensor:
        return M.sum(self.concentration, axis=-1, keepdim=True)

    @property
    def mean(self) -> Tensor:
        return self.concentration / self._total()

    @property
    def variance(self) -> Tensor:
        c, c0 = self.concentration, self._total()
        return c * (c0 - c) / (c0 * c0 * (c0 + 1))

    def sample(self, shape: Sequence[int] = ()) -> Tensor:
        g = standard_gamma(self.concentration, sample_shape(shape, "Dirichlet"))
        return g / M.sum(g, axis=-1, keepdim=True)

    def log_prob(self, value: Tensor) -> Tensor:
        c = self.concentration
        v = as_param(value, "value", "Dirichlet.log_prob")
        return M.sum((c - 1) * M.log(v), axis=-1) + lgamma(M.sum(c, axis=-1)) - M.sum(lgamma(c), axis=-1)

    def entropy(self) -> Tensor:
        c = self.concentration
        k = c.shape[-1]
        c0 = M.sum(c, axis=-1)
        log_b = M.sum(lgamma(c), axis=-1) - lgamma(c0)
        return log_b + (c0 - k) * digamma(c0) - M.sum((c - 1) * digamma(c), axis=-1)
