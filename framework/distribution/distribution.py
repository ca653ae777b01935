"""``Distribution``: the base of the distributions, and the helpers they share."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from adapter_api import OpArgumentError

from .._src.dtypes import get_default_dtype
from .._src.ops import math as M
from .._src.ops import random as R
from .._src.ops import shape as S
from .._src.tensor import Tensor, to_tensor


def as_param(x: Any, what: str, owner: str) -> Tensor:
    """A distribution parameter as a float tensor (numbers and arrays in the default float dtype)."""
    if isinstance(x, Tensor):
        return x if x.dtype.kind == "f" or x.dtype.name == "bfloat16" else M.cast(x, get_default_dtype())
    try:
        return to_tensor(np.asarray(x, dtype=get_default_dtype()))
    except (TypeError, ValueError):
        raise OpArgumentError(
            f"[{owner}] {what} must be a number or a float tensor, got {type(x).__name__}"
        ) from None


def sample_shape(shape: Any, owner: str) -> tuple[int, ...]:
    if isinstance(shape, int):
        shape = [shape]
    if not isinstance(shape, Sequence) or any(not isinstance(s, int) or s < 0 for s in shape):
        raise OpArgumentError(f"[{owner}.sample] shape must be a list of non-negative ints, got {shape!r}")
    return tuple(shape)


def standard_gamma(concentration: Tensor, shape: tuple[int, ...]) -> Tensor:
    """Gamma(concentration, 1) draws of shape ``shape + concentration.shape`` (no gradient).

    Drawn on the host by numpy from a seed taken from Oarlock's generator, so ``fw.seed``
    makes them reproducible; copied to the concentration's device.
    """
    seed = int(R.randint(0, 2**24, [1], device="cpu").item())
    c = np.broadcast_to(concentration.numpy().astype("float64"), shape + tuple(concentration.shape))
    draws = np.random.default_rng(seed).standard_gamma(c)
    return to_tensor(np.maximum(draws, np.finfo(concentration.dtype).tiny).astype(concentration.dtype)).to(
        concentration.device
    )


class Distribution:
    """Base of the distributions (Paddle's ``paddle.distribution.Distribution``).

    A distribution has a ``batch_shape`` (independent distributions held together) and an
    ``event_shape`` (the shape of one draw); ``sample(shape)`` gives ``shape + batch_shape +
    event_shape``.

    Example:
        >>> import framework as fw
        >>> d = fw.distribution.Normal(fw.zeros([3]), 1.0)
        >>> isinstance(d, fw.distribution.Distribution), d.batch_shape, d.event_shape
        (True, (3,), ())
    """

    def __init__(self, batch_shape: Sequence[int] = (), event_shape: Sequence[int] = ()) -> None:
        self._batch_shape, self._event_shape = tuple(batch_shape), tuple(event_shape)

    @property
    def batch_shape(self) -> tuple[int, ...]:
        """The shape of the independent distributions held."""
        return self._batch_shape

    @property
    def event_shape(self) -> tuple[int, ...]:
        """The shape of one draw."""
        return self._event_shape

    @property
    def mean(self) -> Tensor:
        """The mean."""
        raise NotImplementedError(f"[{type(self).__name__}] has no mean")

    @property
    def variance(self) -> Tensor:
        """The variance."""
        raise NotImplementedError(f"[{type(self).__name__}] has no variance")

    def sample(self, shape: Sequence[int] = ()) -> Tensor:
        """Draws of shape ``shape + batch_shape + event_shape``, without gradient."""
        raise NotImplementedError(f"[{type(self).__name__}] needs sample")

    def rsample(self, shape: Sequence[int] = ()) -> Tensor:
        """Reparametrised draws: differentiable with respect to the parameters."""
        raise OpArgumentError(
            f"[{type(self).__name__}.rsample] has no reparametrised sampler here; use sample()"
        )

    def log_prob(self, value: Tensor) -> Tensor:
        """The log density (or mass) of ``value``."""
        raise NotImplementedError(f"[{type(self).__name__}] needs log_prob")

    def prob(self, value: Tensor) -> Tensor:
        """The density (or mass) of ``value``: ``exp(log_prob(value))``."""
        return M.exp(self.log_prob(value))

    def probs(self, value: Tensor) -> Tensor:
        """Paddle's other name for :meth:`prob`."""
        return self.prob(value)

    def entropy(self) -> Tensor:
        """The entropy."""
        raise NotImplementedError(f"[{type(self).__name__}] needs entropy")

    def kl_divergence(self, other: Distribution) -> Tensor:
        """KL(self || other) (:func:`framework.distribution.kl_divergence`)."""
        return kl_divergence(self, other)


#: (type of p, type of q) -> KL(p || q), filled by ``register_kl`` (framework/distribution/kl.py)
KL_RULES: dict[tuple[type, type], Callable[[Any, Any], Tensor]] = {}


def register_kl(
    cls_p: type, cls_q: type
) -> Callable[[Callable[[Any, Any], Tensor]], Callable[[Any, Any], Tensor]]:
    """Decorator: register ``fn(p, q)`` as KL(p || q) for a pair of distribution types.

    Example:
        >>> import framework as fw
        >>> class Point(fw.distribution.Distribution):
        ...     pass
        >>> @fw.distribution.register_kl(Point, Point)
        ... def _kl(p, q):
        ...     return fw.zeros([])
        >>> fw.distribution.kl_divergence(Point(), Point()).item()
        0.0
    """

    def wrap(fn: Callable[[Any, Any], Tensor]) -> Callable[[Any, Any], Tensor]:
        KL_RULES[(cls_p, cls_q)] = fn
        return fn

    return wrap


def kl_divergence(p: Distribution, q: Distribution) -> Tensor:
    """KL(p || q), the Kullback-Leibler divergence of two distributions of the same family.

    Pairs: Normal, Uniform, Categorical, Bernoulli, Beta, Dirichlet (each with its own kind), and
    any registered with :func:`register_kl`.

    Example:
        >>> import framework as fw
        >>> p, q = fw.distribution.Normal(0.0, 1.0), fw.distribution.Normal(1.0, 2.0)
        >>> round(fw.distribution.kl_divergence(p, q).item(), 6)
        0.443147
    """
    for (a, b), fn in KL_RULES.items():
        if isinstance(p, a) and isinstance(q, b):
            return fn(p, q)
    raise OpArgumentError(
        f"[kl_divergence] no rule for KL({type(p).__name__} || {type(q).__name__}); the pairs known are "
        + ", ".join(f"({a.__name__}, {b.__name__})" for a, b in KL_RULES)
        + "; add one with fw.distribution.register_kl"
    )


def broadcast(*ts: Tensor) -> list[Tensor]:
    """The tensors broadcast to one shape (a distribution's batch shape)."""
    shape = np.broadcast_shapes(*(t.shape for t in ts))
    return [t if t.shape == shape else S.broadcast_to(t, shape) for t in ts]
