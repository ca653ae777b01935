"""KL(p || q) for pairs of one family, registered with :func:`register_kl`."""

from __future__ import annotations

import math

from .._src.ops import math as M
from .._src.ops.composites.norm import log_softmax, softmax
from .._src.ops.composites.special import digamma, lgamma
from .._src.tensor import Tensor
from .continuous import Beta, Dirichlet, Normal, Uniform, _lbeta
from .discrete import Bernoulli, Categorical
from .distribution import register_kl


@register_kl(Normal, Normal)
def _kl_normal(p: Normal, q: Normal) -> Tensor:
    r = p.scale / q.scale
    d = (p.loc - q.loc) / q.scale
    return 0.5 * (r * r + d * d) - 0.5 - M.log(r)


@register_kl(Uniform, Uniform)
def _kl_uniform(p: Uniform, q: Uniform) -> Tensor:
    inside = M.logical_and(q.low <= p.low, p.high <= q.high)
    value = M.log((q.high - q.low) / (p.high - p.low))
    return M.where(inside, value, M.zeros_like(value) + math.inf)


@register_kl(Categorical, Categorical)
def _kl_categorical(p: Categorical, q: Categorical) -> Tensor:
    logp, logq = log_softmax(p.logits, axis=-1), log_softmax(q.logits, axis=-1)
    return M.sum(softmax(p.logits, axis=-1) * (logp - logq), axis=-1, keepdim=True)  # Paddle keeps the axis


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli(p: Bernoulli, q: Bernoulli) -> Tensor:
    a, b = M.clip(p.probs_, 1e-7, 1 - 1e-7), M.clip(q.probs_, 1e-7, 1 - 1e-7)
    return a * (M.log(a) - M.log(b)) + (1 - a) * (M.log1p(-a) - M.log1p(-b))


@register_kl(Beta, Beta)
def _kl_beta(p: Beta, q: Beta) -> Tensor:
    a1, b1, a2, b2 = p.alpha, p.beta, q.alpha, q.beta
    return (
        _lbeta(a2, b2)
        - _lbeta(a1, b1)
        + (a1 - a2) * digamma(a1)
        + (b1 - b2) * digamma(b1)
        + (a2 - a1 + b2 - b1) * digamma(a1 + b1)
    )


@register_kl(Dirichlet, Dirichlet)
def _kl_dirichlet(p: Dirichlet, q: Dirichlet) -> Tensor:
    c1, c2 = p.concentration, q.concentration
    s1, s2 = M.sum(c1, axis=-1), M.sum(c2, axis=-1)
    return (
        lgamma(s1)
        - M.sum(lgamma(c1), axis=-1)
        - lgamma(s2)
        + M.sum(lgamma(c2), axis=-1)
        + M.sum((c1 - c2) * (digamma(c1) - digamma(M.sum(c1, axis=-1, keepdim=True))), axis=-1)
    )
