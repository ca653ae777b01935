"""``fw.distribution`` (Paddle's ``paddle.distribution``): six distributions and ``kl_divergence``.

Normal, Uniform, Categorical, Bernoulli, Beta and Dirichlet. Each has ``sample``, ``log_prob``, ``prob``/``probs``, ``entropy``, ``mean``, ``variance``;
Normal, Uniform and Bernoulli (relaxed) have ``rsample``, differentiable in their parameters.
Densities are written with Oarlock's ops, so they run on any device and differentiate.

>>> import framework as fw
>>> p = fw.distribution.Categorical(fw.to_tensor([1.0, 2.0]))
>>> q = fw.distribution.Categorical(fw.to_tensor([2.0, 1.0]))
>>> round(fw.distribution.kl_divergence(p, q).item(), 4)
0.4621
"""

from __future__ import annotations

from . import kl  # noqa: F401  (registers the KL rules)
from .continuous import Beta, Dirichlet, Normal, Uniform
from .discrete import Bernoulli, Categorical
from .distribution import Distribution, kl_divergence, register_kl

__all__ = [
    "Bernoulli",
    "Beta",
    "Categorical",
    "Dirichlet",
    "Distribution",
    "Normal",
    "Uniform",
    "kl_divergence",
    "register_kl",
]
