"""L-BFGS (Paddle's ``paddle.optimizer.LBFGS``): ``step(closure)`` re-evaluates the loss and
its gradient as often as the method needs. Two-loop recursion over the last
``history_size`` curvature pairs; fixed step ``learning_rate`` (the first step scaled by
1/||g||_1), as Paddle and PyTorch do when ``line_search_fn`` is None.

>>> import framework as fw
>>> w = fw.nn.Parameter.from_tensor(fw.to_tensor([3.0, -1.0], dtype="float64"))
>>> opt = fw.optimizer.LBFGS(learning_rate=1.0, max_iter=50, parameters=[w])
>>> def closure():
...     opt.clear_grad()
...     loss = ((w - 1.0) ** 2).sum()
...     loss.backward()
...     return loss
>>> _ = opt.step(closure)
>>> [round(v, 6) for v in w.tolist()]
[1.0, 1.0]
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from adapter_api import OpArgumentError

from .._src.autograd import no_grad
from .._src.ops import creation as C
from .._src.ops import math as M
from .._src.ops import shape as S
from .._src.tensor import Tensor
from .lr import LRScheduler
from .optimizer import Optimizer, _assign


class LBFGS(Optimizer):
    """Limited-memory BFGS. ``line_search_fn`` must be None (a fixed step); the strong-Wolfe
    line search is not implemented."""

    _slots = ()

    def __init__(
        self,
        learning_rate: float | LRScheduler = 1.0,
        max_iter: int = 20,
        max_eval: int | None = None,
        tolerance_grad: float = 1e-7,
        tolerance_change: float = 1e-9,
        history_size: int = 100,
        line_search_fn: str | None = None,
        parameters: Iterable[Any] | None = None,
        weight_decay: float | None = None,
        grad_clip: Any = None,
        name: str | None = None,
    ) -> None:
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name)
        if line_search_fn is not None:
            raise OpArgumentError(
                f"[LBFGS] line_search_fn={line_search_fn!r} is not implemented; pass line_search_fn=None (a fixed step)"
            )
        if max_iter <= 0 or history_size <= 0:
            raise OpArgumentError(
                f"[LBFGS] max_iter and history_size must be positive, got {max_iter} and {history_size}"
            )
        self.max_iter, self.max_eval = (
            int(max_iter),
            int(max_eval if max_eval is not None else max_iter * 5 // 4),
        )
        self.tolerance_grad, self.tolerance_change, self.history_size = (
            float(tolerance_grad),
            float(tolerance_change),
            int(history_size),
        )
        self._old_dirs: list[Tensor] = []
        self._old_stps: list[Tensor] = []
        self._ro: list[float] = []
        self._d: Tensor | None = None
        self._prev_g: Tensor | None = None
        self._h_diag = 1.0

    def _params(self) -> list[Tensor]:
        return [p for p in self._all_params() if not p.stop_gradient]

    def _flat_grad(self) -> Tensor:
        ps = self._params()
        gs = [(p.grad if p.grad is not None else C.zeros_like(p)).reshape((-1,)) for p in ps]
        g = S.concat(gs, axis=0) if len(gs) > 1 else gs[0]
        wd = self.weight_decay
        if wd:
            g = g + S.concat([p.reshape((-1,)) for p in ps], axis=0) * wd
        return g.detach()

    def _add(self, step: float, d: Tensor) -> None:
        off = 0
        for p in self._params():
            n = p.numel()
            _assign(p, p + d[off : off + n].reshape(p.shape) * step)
            off += n

    def step(self, closure: Callable[[], Tensor] | None = None) -> Tensor:  # type: ignore[override]
        """Run up to ``max_iter`` iterations; returns the first loss ``closure()`` gave."""
        if closure is None:
            raise OpArgumentError(
                "[LBFGS] step needs a closure that clears the gradients, computes the loss, calls backward and returns the loss"
            )
        lr = self.get_lr()
        orig_loss = closure()
        loss = float(orig_loss.item())
        evals = 1
        with no_grad():
            g = self._flat_grad()
            if float(M.max(M.abs(g)).item()) <= self.tolerance_grad:
                return orig_loss
            for it in range(self.max_iter):
                self._step_count += 1
                if self._d is None:
                    d = -g
                    self._h_diag = 1.0
                else:
                    y = g - self._prev_g
                    s = self._d * self._t
                    ys = float(M.sum(y * s).item())
                    if ys > 1e-10:
                        if len(self._old_dirs) == self.history_size:
                            self._old_dirs.pop(0)
                            self._old_stps.pop(0)
                            self._ro.pop(0)
                        self._old_dirs.append(y)
                        self._old_stps.append(s)
                        self._ro.append(1.0 / ys)
                        self._h_diag = ys / float(M.sum(y * y).item())
                    q = -g
                    al = []
                    for i in range(len(self._old_dirs) - 1, -1, -1):
                        a = float(M.sum(self._old_stps[i] * q).item()) * self._ro[i]
                        al.append(a)
                        q = q - self._old_dirs[i] * a
                    d = q * self._h_diag
                    for i, a in zip(range(len(self._old_dirs)), reversed(al)):
                        b = float(M.sum(self._old_dirs[i] * d).item()) * self._ro[i]
                        d = d + self._old_stps[i] * (a - b)
                self._prev_g = g
                self._d = d
                t = min(1.0, 1.0 / float(M.sum(M.abs(g)).item())) * lr if self._step_count == 1 else lr
                self._t = t
                gtd = float(M.sum(g * d).item())
                if gtd > -self.tolerance_change:
                    break
                self._add(t, d)
                if it != self.max_iter - 1:
                    with _enable():
                        loss_new = float(closure().item())
                    evals += 1
                    g = self._flat_grad()
                    if float(M.max(M.abs(g)).item()) <= self.tolerance_grad:
                        break
                    if (
                        abs(float(M.max(M.abs(d)).item()) * t) <= self.tolerance_change
                        or abs(loss_new - loss) < self.tolerance_change
                    ):
                        break
                    loss = loss_new
                if evals >= self.max_eval:
                    break
        return orig_loss


def _enable() -> Any:
    from .._src.autograd import enable_grad

    return enable_grad()
