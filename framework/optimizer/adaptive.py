"""Adaptive-rate optimizers with Paddle's names, keywords and update rules: Adagrad, RMSProp,
Adadelta, Adamax and Lamb. Each keeps its slots in the optimizer state (saved by
``state_dict``) and updates parameters with tensor ops on the parameter's device."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

from adapter_api import OpArgumentError

from .._src.ops import creation as C
from .._src.ops import math as M
from .lr import LRScheduler
from .optimizer import Optimizer, _assign


class _StepCounted(Optimizer):
    """Keeps a per-parameter step count ``t`` in the state (saved as an int by ``state_dict``)."""

    def _next_t(self, state: dict[str, Any]) -> int:
        t = int(state["t"]) + 1 if "t" in state else 1
        state["t"] = t  # type: ignore[assignment]
        return t

    def _scalar_slots(self) -> tuple[str, ...]:
        return ("t",)

    def state_dict(self) -> dict[str, Any]:
        out = super().state_dict()
        for k in [k for k in out if k.endswith(".t")]:
            out[k] = int(out[k])
        return out


def _positive(cls: str, name: str, v: float, upper: float | None = None) -> float:
    v = float(v)
    if v < 0 or (upper is not None and v >= upper):
        rng = f"[0, {upper})" if upper is not None else ">= 0"
        raise OpArgumentError(f"[{cls}] {name} must be {rng}, got {v}")
    return v


class Adagrad(Optimizer):
    """moment += g^2; p -= lr * g / (sqrt(moment) + epsilon)."""

    _slots = ("moment",)

    def __init__(
        self,
        learning_rate: float | LRScheduler,
        epsilon: float = 1e-6,
        parameters: Iterable[Any] | None = None,
        weight_decay: float | None = None,
        grad_clip: Any = None,
        name: str | None = None,
        initial_accumulator_value: float = 0.0,
    ) -> None:
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name)
        self.epsilon = _positive("Adagrad", "epsilon", epsilon)
        self.initial_accumulator_value = _positive(
            "Adagrad", "initial_accumulator_value", initial_accumulator_value
        )

    def _update(self, p, g, lr, wd, state):  # type: ignore[no-untyped-def]
        if wd:
            g = g + p * wd
        acc = state.get("moment")
        if acc is None:
            acc = C.full_like(p, self.initial_accumulator_value)
        acc = acc + g * g
        state["moment"] = acc
        _assign(p, p - g * lr / (M.sqrt(acc) + self.epsilon))


class RMSProp(Optimizer):
    """r = rho r + (1 - rho) g^2 (centered: minus the square of the running mean of g);
    v = momentum v + lr g / sqrt(r + epsilon); p -= v."""

    _slots = ("mean_square", "mean_grad", "momentum")

    def __init__(
        self,
        learning_rate: float | LRScheduler,
        rho: float = 0.95,
        epsilon: float = 1e-6,
        momentum: float = 0.0,
        centered: bool = False,
        parameters: Iterable[Any] | None = None,
        weight_decay: float | None = None,
        grad_clip: Any = None,
        name: str | None = None,
    ) -> None:
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name)
        self.rho = _positive("RMSProp", "rho", rho, 1.0 + 1e-12)
        self.epsilon = _positive("RMSProp", "epsilon", epsilon)
        self.momentum = _positive("RMSProp", "momentum", momentum)
        self.centered = bool(centered)

    def _update(self, p, g, lr, wd, state):  # type: ignore[no-untyped-def]
        if wd:
            g = g + p * wd
        r = state.get("mean_square")
        r = g * g * (1 - self.rho) if r is None else r * self.rho + g * g * (1 - self.rho)
        state["mean_square"] = r
        if self.centered:
            mg = state.get("mean_grad")
            mg = g * (1 - self.rho) if mg is None else mg * self.rho + g * (1 - self.rho)
            state["mean_grad"] = mg
            denom = M.sqrt(r - mg * mg + self.epsilon)
        else:
            denom = M.sqrt(r + self.epsilon)
        v = state.get("momentum")
        step = g * lr / denom
        v = step if v is None else v * self.momentum + step
        state["momentum"] = v
        _assign(p, p - v)


class Adadelta(Optimizer):
    """E[g^2] = rho E[g^2] + (1 - rho) g^2; dx = sqrt((E[dx^2] + eps) / (E[g^2] + eps)) g;
    E[dx^2] = rho E[dx^2] + (1 - rho) dx^2; p -= lr * dx."""

    _slots = ("avg_squared_grad", "avg_squared_update")

    def __init__(
        self,
        learning_rate: float | LRScheduler = 0.001,
        epsilon: float = 1e-6,
        rho: float = 0.95,
        parameters: Iterable[Any] | None = None,
        weight_decay: float | None = None,
        grad_clip: Any = None,
        name: str | None = None,
    ) -> None:
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name)
        self.epsilon = _positive("Adadelta", "epsilon", epsilon)
        self.rho = _positive("Adadelta", "rho", rho, 1.0 + 1e-12)

    def _update(self, p, g, lr, wd, state):  # type: ignore[no-untyped-def]
        if wd:
            g = g + p * wd
        eg = state.get("avg_squared_grad")
        eg = g * g * (1 - self.rho) if eg is None else eg * self.rho + g * g * (1 - self.rho)
        ex = state.get("avg_squared_update")
        ex0 = C.zeros_like(p) if ex is None else ex
        dx = M.sqrt((ex0 + self.epsilon) / (eg + self.epsilon)) * g
        state["avg_squared_grad"] = eg
        state["avg_squared_update"] = ex0 * self.rho + dx * dx * (1 - self.rho)
        _assign(p, p - dx * lr)


class Adamax(_StepCounted):
    """m = b1 m + (1 - b1) g; u = max(b2 u + epsilon, |g|); p -= lr / (1 - b1^t) * m / u."""

    _slots = ("moment", "inf_norm", "t")

    def __init__(
        self,
        learning_rate: float | LRScheduler = 0.001,
        beta1: float = 0.9,
        beta2: float = 0.999,
        epsilon: float = 1e-8,
        parameters: Iterable[Any] | None = None,
        weight_decay: float | None = None,
        grad_clip: Any = None,
        name: str | None = None,
    ) -> None:
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name)
        self.beta1 = _positive("Adamax", "beta1", beta1, 1.0)
        self.beta2 = _positive("Adamax", "beta2", beta2, 1.0)
        self.epsilon = _positive("Adamax", "epsilon", epsilon)

    def _update(self, p, g, lr, wd, state):  # type: ignore[no-untyped-def]
        if wd:
            g = g + p * wd
        t = self._next_t(state)
        m = state.get("moment")
        m = g * (1 - self.beta1) if m is None else m * self.beta1 + g * (1 - self.beta1)
        u = state.get("inf_norm")
        u = M.maximum(
            C.zeros_like(p) + self.epsilon if u is None else u * self.beta2 + self.epsilon, M.abs(g)
        )
        state["moment"], state["inf_norm"] = m, u
        _assign(p, p - m / u * (lr / (1 - self.beta1**t)))


class Lamb(_StepCounted):
    """Adam's moments with bias correction, r = m_hat / (sqrt(v_hat) + epsilon) + wd * p, and a
    layer-wise trust ratio: p -= lr * (||p|| / ||r||) * r (ratio 1 when either norm is 0)."""

    _slots = ("moment1", "moment2", "t")

    def __init__(
        self,
        learning_rate: float | LRScheduler = 0.001,
        lamb_weight_decay: float = 0.01,
        beta1: float = 0.9,
        beta2: float = 0.999,
        epsilon: float = 1e-6,
        parameters: Iterable[Any] | None = None,
        grad_clip: Any = None,
        exclude_from_weight_decay_fn: Callable[[Any], bool] | None = None,
        multi_precision: bool = False,
        name: str | None = None,
    ) -> None:
        super().__init__(learning_rate, parameters, None, grad_clip, name)
        self.lamb_weight_decay = _positive("Lamb", "lamb_weight_decay", lamb_weight_decay)
        self.beta1 = _positive("Lamb", "beta1", beta1, 1.0)
        self.beta2 = _positive("Lamb", "beta2", beta2, 1.0)
        self.epsilon = _positive("Lamb", "epsilon", epsilon)
        self.exclude = exclude_from_weight_decay_fn

    def _update(self, p, g, lr, wd, state):  # type: ignore[no-untyped-def]
        t = self._next_t(state)
        m = state.get("moment1")
        v = state.get("moment2")
        m = g * (1 - self.beta1) if m is None else m * self.beta1 + g * (1 - self.beta1)
        v = g * g * (1 - self.beta2) if v is None else v * self.beta2 + g * g * (1 - self.beta2)
        state["moment1"], state["moment2"] = m, v
        r = (m * (1.0 / (1 - self.beta1**t))) / (M.sqrt(v * (1.0 / (1 - self.beta2**t))) + self.epsilon)
        decay = 0.0 if self.exclude is not None and self.exclude(p) else self.lamb_weight_decay
        if decay:
            r = r + p * decay
        pn = math.sqrt(float(M.sum(p * p).item()))
        rn = math.sqrt(float(M.sum(r * r).item()))
        trust = pn / rn if pn > 0 and rn > 0 else 1.0
        _assign(p, p - r * (lr * trust))
