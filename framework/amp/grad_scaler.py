"""``GradScaler``: dynamic loss scaling for low-precision training (Paddle's rules)."""

from __future__ import annotations

from typing import Any

from adapter_api import OpArgumentError

from .._src.autograd import no_grad
from .._src.ops import math as M
from .._src.tensor import Tensor


class GradScaler:
    """Scale the loss so float16/bfloat16 gradients do not underflow; unscale the gradients
    before the optimizer step, skip the step when any gradient is inf or NaN, and adapt the
    scale: times ``decr_ratio`` after ``decr_every_n_nan_or_inf`` bad steps in a row (never
    below 1), times ``incr_ratio`` after ``incr_every_n_steps`` good steps in a row.

    >>> import framework as fw
    >>> net = fw.nn.Linear(2, 1)
    >>> opt = fw.optimizer.SGD(0.1, parameters=net.parameters())
    >>> scaler = fw.amp.GradScaler(init_loss_scaling=1024)
    >>> loss = net(fw.ones([4, 2])).mean()
    >>> scaler.scale(loss).backward()
    >>> scaler.step(opt); scaler.update(); opt.clear_grad()
    >>> scaler.get_loss_scaling()
    1024.0
    """

    def __init__(
        self,
        enable: bool = True,
        init_loss_scaling: float = 2.0**16,
        incr_ratio: float = 2.0,
        decr_ratio: float = 0.5,
        incr_every_n_steps: int = 2000,
        decr_every_n_nan_or_inf: int = 1,
        use_dynamic_loss_scaling: bool = True,
    ) -> None:
        if init_loss_scaling <= 0 or incr_ratio <= 1.0 or not 0.0 < decr_ratio < 1.0:
            raise OpArgumentError(
                f"[GradScaler] need init_loss_scaling > 0, incr_ratio > 1 and 0 < decr_ratio < 1, got "
                f"{init_loss_scaling}, {incr_ratio}, {decr_ratio}"
            )
        if incr_every_n_steps < 1 or decr_every_n_nan_or_inf < 1:
            raise OpArgumentError(
                f"[GradScaler] incr_every_n_steps and decr_every_n_nan_or_inf must be >= 1, got {incr_every_n_steps}, {decr_every_n_nan_or_inf}"
            )
        self._enable = bool(enable)
        self._scale = float(init_loss_scaling)
        self._init = float(init_loss_scaling)
        self._incr_ratio, self._decr_ratio = float(incr_ratio), float(decr_ratio)
        self._incr_every, self._decr_every = int(incr_every_n_steps), int(decr_every_n_nan_or_inf)
        self._dynamic = bool(use_dynamic_loss_scaling)
        self._incr_count = self._decr_count = 0
        self._found_inf = False
        self._unscaled: set[int] = set()

    # -- the training step ------------------------------------------------------------------
    def scale(self, var: Tensor) -> Tensor:
        """``var * scale`` (``var`` unchanged when disabled)."""
        if not self._enable:
            return var
        return var * self._scale

    @no_grad()
    def unscale_(self, optimizer: Any) -> None:
        """Divide every gradient the optimizer holds by the scale, and note whether any is
        inf/NaN. Called by :meth:`step` when not called before it."""
        if not self._enable or id(optimizer) in self._unscaled:
            return
        params = optimizer._all_params()
        inv = 1.0 / self._scale
        bad = None
        for p in params:
            g = p.grad
            if g is None:
                continue
            g = g * inv
            p.grad = g
            nonfinite = M.sum(M.cast(M.logical_not(M.isfinite(g)), "int32"))
            bad = nonfinite if bad is None else bad + nonfinite
        self._found_inf = bad is not None and int(bad.item()) > 0
        self._unscaled.add(id(optimizer))

    def step(self, optimizer: Any) -> None:
        """Unscale (if not done), then ``optimizer.step()`` unless a gradient was inf/NaN."""
        if not self._enable:
            optimizer.step()
            return
        self.unscale_(optimizer)
        if not self._found_inf:
            optimizer.step()

    def update(self) -> None:
        """Adapt the scale after a step (dynamic loss scaling) and start the next step."""
        if self._enable and self._dynamic:
            if self._found_inf:
                self._incr_count = 0
                self._decr_count += 1
                if self._decr_count >= self._decr_every:
                    self._scale = max(self._scale * self._decr_ratio, 1.0)
                    self._decr_count = 0
            else:
                self._decr_count = 0
                self._incr_count += 1
                if self._incr_count >= self._incr_every:
                    self._scale *= self._incr_ratio
                    self._incr_count = 0
        self._unscaled.clear()
        self._found_inf = False

    def minimize(self, optimizer: Any, *args: Any, **kwargs: Any) -> None:
        """:meth:`step` then :meth:`update` (the loss was already scaled and back-propagated)."""
        self.step(optimizer)
        self.update()

    # -- queries and state -------------------------------------------------------------------
    def is_enable(self) -> bool:
        return self._enable

    def is_use_dynamic_loss_scaling(self) -> bool:
        return self._dynamic

    def found_inf(self) -> bool:
        """Whether the last unscaled gradients held an inf or NaN (the step was skipped)."""
        return self._found_inf

    def get_loss_scaling(self) -> float:
        return self._scale

    def get_init_loss_scaling(self) -> float:
        return self._init

    def set_init_loss_scaling(self, value: float) -> None:
        self._init = self._scale = float(value)

    def get_incr_ratio(self) -> float:
        return self._incr_ratio

    def get_decr_ratio(self) -> float:
        return self._decr_ratio

    def get_incr_every_n_steps(self) -> int:
        return self._incr_every

    def get_decr_every_n_nan_or_inf(self) -> int:
        return self._decr_every

    def state_dict(self) -> dict[str, Any]:
        if not self._enable:
            return {}
        return {
            "scale": self._scale,
            "incr_ratio": self._incr_ratio,
            "decr_ratio": self._decr_ratio,
            "incr_every_n_steps": self._incr_every,
            "decr_every_n_nan_or_inf": self._decr_every,
            "incr_count": self._incr_count,
            "decr_count": self._decr_count,
            "use_dynamic_loss_scaling": self._dynamic,
        }

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        if not self._enable:
            return
        missing = {"scale", "incr_count", "decr_count"} - set(state_dict)
        if missing:
            raise OpArgumentError(
                f"[GradScaler] state_dict lacks {sorted(missing)}; pass what GradScaler.state_dict() returned"
            )
        get = lambda k, d: state_dict.get(k, d)  # noqa: E731
        self._scale = float(get("scale", self._scale))
        self._incr_ratio, self._decr_ratio = (
            float(get("incr_ratio", self._incr_ratio)),
            float(get("decr_ratio", self._decr_ratio)),
        )
        self._incr_every, self._decr_every = (
            int(get("incr_every_n_steps", self._incr_every)),
            int(get("decr_every_n_nan_or_inf", self._decr_every)),
        )
        self._incr_count, self._decr_count = int(get("incr_count", 0)), int(get("decr_count", 0))
        self._dynamic = bool(get("use_dynamic_loss_scaling", self._dynamic))

    set_state_dict = load_state_dict


AmpScaler = GradScaler
