"""Recomputation (Paddle's ``fleet.utils.recompute``): run a block without keeping its
activations and run it again in backward to get them.

>>> import numpy as np, framework as fw
>>> from framework.distributed.fleet.utils import recompute
>>> lin = fw.nn.Linear(3, 2)
>>> x = fw.to_tensor(np.ones((4, 3), "float32"), stop_gradient=False)
>>> recompute(lambda t: fw.tanh(lin(t)), x).sum().backward()
>>> lin.weight.grad.shape
(3, 2)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ... import autograd as _public
from ..._src import autograd
from ..._src.ops import random as _random
from ..._src.tensor import Tensor


def _tensors(xs: Any) -> list[Tensor]:
    return [x for x in (xs if isinstance(xs, (tuple, list)) else [xs]) if isinstance(x, Tensor)]


class _Recompute(_public.PyLayer):
    @staticmethod
    def forward(ctx: Any, function: Callable[..., Any], keep_rng: bool, *args: Any) -> Any:
        ctx.function, ctx.args = function, args
        ctx.rng = _random.get_rng_state() if keep_rng else None
        ctx.save_for_backward(*[a for a in args if isinstance(a, Tensor)])
        with autograd.no_grad():
            return function(*args)

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> Any:
        saved = iter(ctx.saved_tensor())
        args, leaves = [], []
        for a in ctx.args:
            if isinstance(a, Tensor):
                t = next(saved).detach()
                t.stop_gradient = a.stop_gradient
                args.append(t)
                leaves.append(t)
            else:
                args.append(a)
        now = None
        if ctx.rng is not None:  # the same dropout masks as the forward
            now = _random.get_rng_state()
            _random.set_rng_state(ctx.rng)
        try:
            with autograd.enable_grad():
                out = ctx.function(*args)
        finally:
            if now is not None:
                _random.set_rng_state(now)
        outs = [o for o, g in zip(_tensors(out), grads) if g is not None and not o.stop_gradient]
        gs = [g for o, g in zip(_tensors(out), grads) if g is not None and not o.stop_gradient]
        if outs:
            _public.backward(outs, gs)
        return tuple(None if t.stop_gradient else t.grad for t in leaves)


def recompute(function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``function(*args)`` whose activations are computed again in backward instead of kept.
    ``preserve_rng_state=True`` (the default) replays the random state, so dropout draws the
    same masks. With no input that needs a gradient it is a plain call (as in Paddle, the
    block's parameters would otherwise get no gradient).

    >>> import framework as fw
    >>> recompute(fw.tanh, fw.ones([2])).shape
    (2,)
    """
    keep_rng = bool(kwargs.pop("preserve_rng_state", True))
    kwargs.pop("use_reentrant", None)
    if kwargs:
        raise TypeError(f"[recompute] unexpected keyword arguments {sorted(kwargs)}")
    if not any(not t.stop_gradient for t in _tensors(args)) or not autograd.is_grad_enabled():
        return function(*args)
    return _Recompute.apply(function, keep_rng, *args)
