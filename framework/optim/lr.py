"""Learning-rate schedulers (Paddle's ``paddle.optimizer.lr``): pass one as
``learning_rate=`` and call ``scheduler.step()`` once per epoch or step.

>>> from framework.optim.lr import StepDecay
>>> s = StepDecay(0.1, step_size=2, gamma=0.5)
>>> rates = []
>>> for _ in range(4):
...     rates.append(s())
...     s.step()
>>> rates
[0.1, 0.1, 0.05, 0.05]
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from adapter_api import OpArgumentError


class LRScheduler:
    """Base class: ``get_lr()`` computes the rate for ``last_epoch``; ``step()`` advances."""

    def __init__(self, learning_rate: float = 0.1, last_epoch: int = -1, verbose: bool = False) -> None:
        if not isinstance(learning_rate, (int, float)):
            raise OpArgumentError(
                f"[{type(self).__name__}] learning_rate must be a number, got {type(learning_rate).__name__}"
            )
        self.base_lr = float(learning_rate)
        self.last_epoch = last_epoch
        self.last_lr = self.base_lr
        self.verbose = verbose
        self.step()

    def __call__(self) -> float:
        return self.last_lr

    def get_lr(self) -> float:
        raise NotImplementedError("need get_lr")

    def step(self, epoch: int | None = None) -> None:
        self.last_epoch = self.last_epoch + 1 if epoch is None else int(epoch)
        self.last_lr = float(self.get_lr())

    def state_dict(self) -> dict[str, Any]:
        return {"last_epoch": self.last_epoch, "last_lr": self.last_lr}

    def set_state_dict(self, state: dict[str, Any]) -> None:
        self.last_epoch = int(state["last_epoch"])
        self.last_lr = float(state["last_lr"])

    set_dict = set_state_dict


class StepDecay(LRScheduler):
    """lr * gamma ** (epoch // step_size)."""

    def __init__(
        self,
        learning_rate: float,
        step_size: int,
        gamma: float = 0.1,
        last_epoch: int = -1,
        verbose: bool = False,
    ) -> None:
        if step_size <= 0:
            raise OpArgumentError(f"[StepDecay] step_size must be a positive int, got {step_size}")
        self.step_size, self.gamma = int(step_size), float(gamma)
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self) -> float:
        return self.base_lr * self.gamma ** (self.last_epoch // self.step_size)


class MultiStepDecay(LRScheduler):
    def __init__(
        self,
        learning_rate: float,
        milestones: Sequence[int],
        gamma: float = 0.1,
        last_epoch: int = -1,
        verbose: bool = False,
    ) -> None:
        self.milestones, self.gamma = sorted(int(m) for m in milestones), float(gamma)
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self) -> float:
        return self.base_lr * self.gamma ** sum(1 for m in self.milestones if self.last_epoch >= m)


class ExponentialDecay(LRScheduler):
    def __init__(
        self, learning_rate: float, gamma: float, last_epoch: int = -1, verbose: bool = False
    ) -> None:
        self.gamma = float(gamma)
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self) -> float:
        return self.base_lr * self.gamma**self.last_epoch


class LambdaDecay(LRScheduler):
    def __init__(
        self,
        learning_rate: float,
        lr_lambda: Callable[[int], float],
        last_epoch: int = -1,
        verbose: bool = False,
    ) -> None:
        self.lr_lambda = lr_lambda
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self) -> float:
        return self.base_lr * self.lr_lambda(self.last_epoch)


class CosineAnnealingDecay(LRScheduler):
    """eta_min + (lr - eta_min) * (1 + cos(pi * epoch / T_max)) / 2 (closed form)."""

    def __init__(
        self,
        learning_rate: float,
        T_max: int,
        eta_min: float = 0.0,
        last_epoch: int = -1,
        verbose: bool = False,
    ) -> None:
        if T_max <= 0:
            raise OpArgumentError(f"[CosineAnnealingDecay] T_max must be a positive int, got {T_max}")
        self.T_max, self.eta_min = int(T_max), float(eta_min)
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self) -> float:
        e = min(self.last_epoch, self.T_max)
        return self.eta_min + (self.base_lr - self.eta_min) * (1 + math.cos(math.pi * e / self.T_max)) / 2


class LinearWarmup(LRScheduler):
    """Linear from ``start_lr`` to ``end_lr`` over ``warmup_steps``, then ``learning_rate``
    (a number or another scheduler, which is stepped from then on)."""

    def __init__(
        self,
        learning_rate: float | LRScheduler,
        warmup_steps: int,
        start_lr: float,
        end_lr: float,
        last_epoch: int = -1,
        verbose: bool = False,
    ) -> None:
        if warmup_steps <= 0:
            raise OpArgumentError(f"[LinearWarmup] warmup_steps must be a positive int, got {warmup_steps}")
        self.after = learning_rate
        self.warmup_steps, self.start_lr, self.end_lr = int(warmup_steps), float(start_lr), float(end_lr)
        base = learning_rate.base_lr if isinstance(learning_rate, LRScheduler) else float(learning_rate)
        super().__init__(base, last_epoch, verbose)

    def get_lr(self) -> float:
        if self.last_epoch < self.warmup_steps:
            return self.start_lr + (self.end_lr - self.start_lr) * self.last_epoch / self.warmup_steps
        if isinstance(self.after, LRScheduler):
            self.after.step(self.last_epoch - self.warmup_steps)
            return self.after.last_lr
        return float(self.after)

    def state_dict(self) -> dict[str, Any]:
        s = super().state_dict()
        if isinstance(self.after, LRScheduler):
            s["after"] = self.after.state_dict()
        return s

    def set_state_dict(self, state: dict[str, Any]) -> None:
        super().set_state_dict(state)
        if isinstance(self.after, LRScheduler) and "after" in state:
            self.after.set_state_dict(state["after"])


__all__ = [
    "LRScheduler",
    "StepDecay",
    "MultiStepDecay",
    "ExponentialDecay",
    "LambdaDecay",
    "CosineAnnealingDecay",
    "LinearWarmup",
]
