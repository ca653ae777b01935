"""``fw.optimizer.lr`` (Paddle's ``paddle.optimizer.lr``): every learning-rate scheduler, with
Paddle's names and formulas. Pass one as ``learning_rate=`` and call ``scheduler.step()`` once
per epoch or step.

>>> from framework.optimizer.lr import PiecewiseDecay
>>> s = PiecewiseDecay(boundaries=[2, 4], values=[1.0, 0.5, 0.1])
>>> rates = []
>>> for _ in range(5):
...     rates.append(s())
...     s.step()
>>> rates
[1.0, 1.0, 0.5, 0.5, 0.1]
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
    """lr * gamma ** (epoch // step_size).

    >>> s = StepDecay(0.1, step_size=2, gamma=0.5)
    >>> rates = []
    >>> for _ in range(4):
    ...     rates.append(s())
    ...     s.step()
    >>> rates
    [0.1, 0.1, 0.05, 0.05]
    """

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


class PolynomialDecay(LRScheduler):
    """(lr - end_lr) * (1 - epoch / decay_steps) ** power + end_lr; with ``cycle`` the decay
    restarts at each multiple of ``decay_steps``."""

    def __init__(
        self,
        learning_rate: float,
        decay_steps: int,
        end_lr: float = 0.0001,
        power: float = 1.0,
        cycle: bool = False,
        last_epoch: int = -1,
        verbose: bool = False,
    ) -> None:
        if decay_steps <= 0:
            raise OpArgumentError(f"[PolynomialDecay] decay_steps must be a positive int, got {decay_steps}")
        self.decay_steps, self.end_lr, self.power, self.cycle = (
            int(decay_steps),
            float(end_lr),
            float(power),
            bool(cycle),
        )
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self) -> float:
        e, steps = self.last_epoch, self.decay_steps
        if self.cycle:
            steps *= max(1, math.ceil(e / steps))
        else:
            e = min(e, steps)
        return (self.base_lr - self.end_lr) * (1 - e / steps) ** self.power + self.end_lr


class NoamDecay(LRScheduler):
    """lr * d_model ** -0.5 * min(epoch ** -0.5, epoch * warmup_steps ** -1.5) (the
    Transformer paper's schedule; epoch 0 counts as 1 in the first term)."""

    def __init__(
        self,
        d_model: int,
        warmup_steps: int,
        learning_rate: float = 1.0,
        last_epoch: int = -1,
        verbose: bool = False,
    ) -> None:
        if d_model <= 0 or warmup_steps <= 0:
            raise OpArgumentError(
                f"[NoamDecay] d_model and warmup_steps must be positive, got {d_model} and {warmup_steps}"
            )
        self.d_model, self.warmup_steps = d_model, warmup_steps
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self) -> float:
        a = 1.0 if self.last_epoch == 0 else self.last_epoch**-0.5
        b = self.warmup_steps**-1.5 * self.last_epoch
        return self.base_lr * self.d_model**-0.5 * min(a, b)


class PiecewiseDecay(LRScheduler):
    """``values[i]`` while epoch < ``boundaries[i]``, then ``values[-1]``."""

    def __init__(
        self, boundaries: Sequence[int], values: Sequence[float], last_epoch: int = -1, verbose: bool = False
    ) -> None:
        if len(values) != len(boundaries) + 1:
            raise OpArgumentError(
                f"[PiecewiseDecay] values needs len(boundaries) + 1 = {len(boundaries) + 1} entries, got {len(values)}"
            )
        self.boundaries, self.values = [int(b) for b in boundaries], [float(v) for v in values]
        super().__init__(self.values[0], last_epoch, verbose)

    def get_lr(self) -> float:
        for b, v in zip(self.boundaries, self.values):
            if self.last_epoch < b:
                return v
        return self.values[-1]


class OneCycleLR(LRScheduler):
    """From max_learning_rate / divide_factor up to max_learning_rate over the first
    ``phase_pct`` of ``total_steps``, then down to ``end_learning_rate`` (``three_phase``:
    back to the initial rate first), annealed by cosine or linearly."""

    def __init__(
        self,
        max_learning_rate: float,
        total_steps: int,
        divide_factor: float = 25.0,
        end_learning_rate: float = 0.0001,
        phase_pct: float = 0.3,
        anneal_strategy: str = "cos",
        three_phase: bool = False,
        last_epoch: int = -1,
        verbose: bool = False,
    ) -> None:
        if total_steps <= 0:
            raise OpArgumentError(f"[OneCycleLR] total_steps must be a positive int, got {total_steps}")
        if not 0 < phase_pct < 1:
            raise OpArgumentError(f"[OneCycleLR] phase_pct must be in (0, 1), got {phase_pct}")
        if anneal_strategy not in ("cos", "linear"):
            raise OpArgumentError(
                f"[OneCycleLR] anneal_strategy must be 'cos' or 'linear', got {anneal_strategy!r}"
            )
        init = max_learning_rate / divide_factor
        self.total_steps, self.anneal = int(total_steps), anneal_strategy
        if three_phase:
            ends = [phase_pct * total_steps - 1, 2 * phase_pct * total_steps - 2, total_steps - 1]
            lrs = [init, max_learning_rate, init, end_learning_rate]
        else:
            ends = [phase_pct * total_steps - 1, total_steps - 1]
            lrs = [init, max_learning_rate, end_learning_rate]
        self.phases = [(s, e, lrs[i], lrs[i + 1]) for i, (s, e) in enumerate(zip([0.0] + ends[:-1], ends))]
        super().__init__(init, last_epoch, verbose)

    def _anneal(self, start: float, end: float, pct: float) -> float:
        if self.anneal == "cos":
            return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)
        return (end - start) * pct + start

    def get_lr(self) -> float:
        step = self.last_epoch
        if step > self.total_steps:
            raise OpArgumentError(
                f"[OneCycleLR] stepped {step} times, more than total_steps={self.total_steps}"
            )
        for s, e, lo, hi in self.phases:
            if step <= e or (s, e, lo, hi) == self.phases[-1]:
                pct = (step - s) / (e - s) if e > s else 1.0
                return self._anneal(lo, hi, min(pct, 1.0))
        return self.phases[-1][3]


class CosineAnnealingWarmRestarts(LRScheduler):
    """Cosine from lr down to eta_min over T_i epochs, restarting; T_i starts at T_0 and is
    multiplied by T_mult at each restart."""

    def __init__(
        self,
        learning_rate: float,
        T_0: int,
        T_mult: int = 1,
        eta_min: float = 0.0,
        last_epoch: int = -1,
        verbose: bool = False,
    ) -> None:
        if T_0 <= 0 or T_mult < 1:
            raise OpArgumentError(
                f"[CosineAnnealingWarmRestarts] T_0 must be positive and T_mult >= 1, got {T_0} and {T_mult}"
            )
        self.T_0, self.T_mult, self.eta_min = int(T_0), int(T_mult), float(eta_min)
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self) -> float:
        e, t = max(self.last_epoch, 0), self.T_0
        if self.T_mult == 1:
            e = e % t
        else:
            n = int(math.log(e / self.T_0 * (self.T_mult - 1) + 1, self.T_mult))
            e -= self.T_0 * (self.T_mult**n - 1) // (self.T_mult - 1)
            t = self.T_0 * self.T_mult**n
        return self.eta_min + (self.base_lr - self.eta_min) * (1 + math.cos(math.pi * e / t)) / 2


class ReduceOnPlateau(LRScheduler):
    """Multiply the rate by ``factor`` when the metric passed to ``step(metrics)`` has not
    improved (by ``threshold``, relative or absolute) for ``patience`` epochs; then wait
    ``cooldown`` epochs; never below ``min_lr``."""

    def __init__(
        self,
        learning_rate: float,
        mode: str = "min",
        factor: float = 0.1,
        patience: int = 10,
        threshold: float = 1e-4,
        threshold_mode: str = "rel",
        cooldown: int = 0,
        min_lr: float = 0.0,
        epsilon: float = 1e-8,
        verbose: bool = False,
    ) -> None:
        if mode not in ("min", "max") or threshold_mode not in ("rel", "abs"):
            raise OpArgumentError(
                f"[ReduceOnPlateau] mode must be 'min'/'max' and threshold_mode 'rel'/'abs', got {mode!r}, {threshold_mode!r}"
            )
        if not 0 <= factor < 1:
            raise OpArgumentError(f"[ReduceOnPlateau] factor must be in [0, 1), got {factor}")
        self.mode, self.factor, self.patience, self.threshold = (
            mode,
            float(factor),
            int(patience),
            float(threshold),
        )
        self.threshold_mode, self.cooldown, self.min_lr, self.epsilon = (
            threshold_mode,
            int(cooldown),
            float(min_lr),
            float(epsilon),
        )
        self.best: float | None = None
        self.num_bad_epochs = 0
        self.cooldown_counter = 0
        self.base_lr = self.last_lr = float(learning_rate)
        self.last_epoch = 0
        self.verbose = verbose

    def get_lr(self) -> float:
        return self.last_lr

    def _better(self, a: float, best: float) -> bool:
        d = self.threshold * abs(best) if self.threshold_mode == "rel" else self.threshold
        return a < best - d if self.mode == "min" else a > best + d

    def step(self, metrics: Any = None, epoch: int | None = None) -> None:  # type: ignore[override]
        if metrics is None:
            raise OpArgumentError(
                "[ReduceOnPlateau] step(metrics) needs the monitored value, e.g. scheduler.step(val_loss)"
            )
        m = float(metrics.item() if hasattr(metrics, "item") else metrics)
        self.last_epoch = self.last_epoch + 1 if epoch is None else int(epoch)
        if self.best is None or self._better(m, self.best):
            self.best, self.num_bad_epochs = m, 0
        else:
            self.num_bad_epochs += 1
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0
        if self.num_bad_epochs > self.patience:
            new = max(self.last_lr * self.factor, self.min_lr)
            if self.last_lr - new > self.epsilon:
                self.last_lr = new
            self.cooldown_counter, self.num_bad_epochs = self.cooldown, 0

    def state_dict(self) -> dict[str, Any]:
        return {
            "last_epoch": self.last_epoch,
            "last_lr": self.last_lr,
            "best": self.best,
            "num_bad_epochs": self.num_bad_epochs,
            "cooldown_counter": self.cooldown_counter,
        }

    def set_state_dict(self, state: dict[str, Any]) -> None:
        self.last_epoch, self.last_lr = int(state["last_epoch"]), float(state["last_lr"])
        self.best, self.num_bad_epochs, self.cooldown_counter = (
            state.get("best"),
            int(state.get("num_bad_epochs", 0)),
            int(state.get("cooldown_counter", 0)),
        )


__all__ = [
    "LRScheduler",
    "StepDecay",
    "MultiStepDecay",
    "ExponentialDecay",
    "LambdaDecay",
    "CosineAnnealingDecay",
    "LinearWarmup",
    "PolynomialDecay",
    "NoamDecay",
    "PiecewiseDecay",
    "OneCycleLR",
    "CosineAnnealingWarmRestarts",
    "ReduceOnPlateau",
]
