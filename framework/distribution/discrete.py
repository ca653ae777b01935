"""Discrete distributions: Categorical and Bernoulli (Paddle's ``paddle.distribution``)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from adapter_api import OpArgumentError

from .._src.autograd import no_grad
from .._src.ops import math as M
from .._src.ops import random as R
from .._src.ops import shape as S
from .._src.ops.composites.activation import sigmoid
from .._src.ops.composites.norm import log_softmax, softmax
from .._src.ops.composites.sampling import multinomial
from .._src.ops.indexing import index_select, take_along_axis
from .._src.tensor import Tensor
from .distribution import Distribution, as_param, sample_shape


class Categorical(Distribution):
    """A categorical distribution over the last axis of ``logits``, as Paddle defines it.

    Paddle's rules, kept: ``probs``/``log_prob``/``sample`` normalise ``logits`` by their sum
    (they are non-negative weights), while ``entropy`` and ``kl_divergence`` use their softmax.
    ``value`` is category indices: a 1-D ``value`` is looked up in every distribution of the
    batch (result ``batch_shape + value.shape``), one with the batch's leading shape per
    distribution.

    Example:
        >>> import framework as fw
        >>> d = fw.distribution.Categorical(fw.to_tensor([0.2, 0.3, 0.5]))
        >>> [round(v, 4) for v in d.probs(fw.to_tensor([0, 2])).tolist()]
        [0.2, 0.5]
        >>> round(d.entropy().item(), 4), d.sample([4]).shape
        (1.0906, (4,))
    """

    def __init__(self, logits: Any, name: str | None = None) -> None:
        self.logits = as_param(logits, "logits", "Categorical")
        if self.logits.ndim < 1:
            raise OpArgumentError(
                f"[Categorical] logits must have a category axis, got shape {self.logits.shape}"
            )
        super().__init__(self.logits.shape[:-1])

    def _weights(self) -> Tensor:
        return self.logits / M.sum(self.logits, axis=-1, keepdim=True)

    def sample(self, shape: Sequence[int] = ()) -> Tensor:
        shp = sample_shape(shape, "Categorical")
        n = math.prod(shp)
        with no_grad():
            p = S.reshape(self._weights(), [-1, self.logits.shape[-1]])
            draws = multinomial(p, num_samples=max(n, 1), replacement=True)  # (batch, n)
            draws = S.transpose(draws, [1, 0])[:n]
            return S.reshape(draws, list(shp) + list(self.batch_shape))

    def probs(self, value: Tensor) -> Tensor:
        w = self._weights()
        v = value if isinstance(value, Tensor) else as_param(value, "value", "Categorical.probs")
        v = M.cast(v, "int64")
        if w.ndim == 1 or v.ndim == 1:
            return index_select(w, v, axis=-1)
        if tuple(v.shape[:-1]) == tuple(w.shape[:-1]):
            return take_along_axis(w, v, -1)
        raise OpArgumentError(
            f"[Categorical] value must be 1-D or have the batch shape {self.batch_shape} first, got shape {v.shape}"
        )

    def prob(self, value: Tensor) -> Tensor:
        return self.probs(value)

    def log_prob(self, value: Tensor) -> Tensor:
        return M.log(self.probs(value))

    def entropy(self) -> Tensor:
        return -M.sum(softmax(self.logits, axis=-1) * log_softmax(self.logits, axis=-1), axis=-1)


class Bernoulli(Distribution):
    """The Bernoulli distribution with success probability ``probs``.

    ``rsample(shape, temperature)`` is the relaxed (Concrete) draw:
    ``sigmoid((logit(p) + logit(u)) / temperature)``, u uniform.

    Example:
        >>> import framework as fw
        >>> d = fw.distribution.Bernoulli(fw.to_tensor([0.3, 0.9]))
        >>> [round(v, 4) for v in d.log_prob(fw.to_tensor([1.0, 0.0])).tolist()]
        [-1.204, -2.3026]
        >>> [round(v, 4) for v in d.variance.tolist()], d.sample([2]).shape
        ([0.21, 0.09], (2, 2))
    """

    def __init__(self, probs: Any, name: str | None = None) -> None:
        self.probs_ = as_param(probs, "probs", "Bernoulli")
        super().__init__(self.probs_.shape)

    @property
    def mean(self) -> Tensor:
        return self.probs_

    @property
    def variance(self) -> Tensor:
        return self.probs_ * (1 - self.probs_)

    def sample(self, shape: Sequence[int] = ()) -> Tensor:
        shp = sample_shape(shape, "Bernoulli") + self.batch_shape
        with no_grad():
            return R.bernoulli(S.broadcast_to(self.probs_, shp))

    def rsample(self, shape: Sequence[int] = (), temperature: float = 1.0) -> Tensor:
        shp = sample_shape(shape, "Bernoulli") + self.batch_shape
        p = self.probs_
        u = M.clip(R.rand(shp, dtype=p.dtype, device=p.device), 1e-6, 1 - 1e-6)
        logit = M.log(p) - M.log1p(-p) + M.log(u) - M.log1p(-u)
        return sigmoid(logit / float(temperature))

    def log_prob(self, value: Tensor) -> Tensor:
        v = as_param(value, "value", "Bernoulli.log_prob")
        p = M.clip(self.probs_, 1e-7, 1 - 1e-7)
        return v * M.log(p) + (1 - v) * M.log1p(-p)

    def prob(self, value: Tensor) -> Tensor:
        return M.exp(self.log_prob(value))

    def probs(self, value: Tensor) -> Tensor:
        return self.prob(value)

    def cdf(self, value: Tensor) -> Tensor:
        """P(X <= value): 0 below 0, 1 - p on [0, 1), 1 from 1."""
        v = as_param(value, "value", "Bernoulli.cdf")
        zero, one = M.zeros_like(v), M.ones_like(v)
        return M.where(v < 0, zero, M.where(v < 1, one - self.probs_, one))

    def entropy(self) -> Tensor:
        p = M.clip(self.probs_, 1e-7, 1 - 1e-7)
        return -(p * M.log(p) + (1 - p) * M.log1p(-p))
