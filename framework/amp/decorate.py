"""``decorate``: O2 mixed precision — parameters cast to float16/bfloat16, float32 master
weights kept for the optimizer."""

from __future__ import annotations

from typing import Any

from adapter_api import OpArgumentError

from .._src import dtypes as _dt
from .._src.autograd import no_grad
from .._src.ops import math as M
from .._src.tensor import Tensor
from ..jit import train_step as _jit_step

#: layer types whose parameters stay float32 under O2 (Paddle keeps normalisations in float32)
_KEEP_FP32 = (
    "BatchNorm1D",
    "BatchNorm2D",
    "SyncBatchNorm",
    "LayerNorm",
    "RMSNorm",
    "GroupNorm",
    "InstanceNorm2D",
    "LocalResponseNorm",
)


class MasterWeightOptimizer:
    """An optimizer whose updates run on float32 copies ("master weights") of low-precision
    parameters: each step casts the gradients up, steps the masters, and writes them back
    cast down. Every other attribute is the wrapped optimizer's."""

    def __init__(self, optimizer: Any, params: list[Tensor]) -> None:
        self._inner = optimizer
        self._pairs: list[tuple[Tensor, Tensor]] = []
        masters: dict[int, Tensor] = {}
        for p in params:
            if _dt.is_floating(p.dtype) and p.dtype in (_dt.float16, _dt.bfloat16):
                m = M.cast(p.detach(), _dt.float32).detach()
                m.stop_gradient = p.stop_gradient
                for attr in ("optimize_attr", "name"):
                    if hasattr(p, attr):
                        try:
                            setattr(m, attr, getattr(p, attr))
                        except AttributeError:
                            pass
                masters[id(p)] = m
                self._pairs.append((p, m))
        for g in optimizer.param_groups:
            g["params"] = [masters.get(id(p), p) for p in g["params"]]
        self._low = list(params)

    def _all_params(self) -> list[Tensor]:
        """The model's (low-precision) parameters: what GradScaler unscales."""
        return list(self._low)

    @no_grad()
    def step(self) -> None:
        if _jit_step.recording_optimizer(self, "step"):
            return  # inside a traced training step: runs after the program (framework.jit.train_step)
        for p, m in self._pairs:
            m.grad = None if p.grad is None else M.cast(p.grad, _dt.float32).detach()
        self._inner.step()
        for p, m in self._pairs:
            p.set_value(M.cast(m, p.dtype))

    def clear_grad(self, set_to_zero: bool = False) -> None:
        if _jit_step.recording_optimizer(self, "clear_grad", set_to_zero):
            return
        for p in self._low:
            p.clear_grad(set_to_zero)
        self._inner.clear_grad(set_to_zero)

    clear_gradients = clear_grad
    zero_grad = clear_grad

    def minimize(self, loss: Tensor, *args: Any, **kwargs: Any) -> None:
        loss.backward()
        self.step()

    def master_weights(self) -> list[Tensor]:
        return [m for _, m in self._pairs]

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def _cast_layer(layer: Any, dtype: Any, excluded: tuple[type, ...]) -> None:
    from ..nn.layer import _move_into

    for sub in layer.sublayers(include_self=True):
        if type(sub).__name__ in _KEEP_FP32 or (excluded and isinstance(sub, excluded)):
            continue
        for _, p in sub.named_parameters(include_sublayers=False):
            if p.dtype == _dt.float32:
                _move_into(p, dtype=dtype)


def decorate(
    models: Any,
    optimizers: Any = None,
    level: str = "O1",
    dtype: str = "float16",
    master_weight: bool | None = None,
    save_dtype: Any = None,
    master_grad: bool = False,
    excluded_layers: Any = None,
) -> Any:
    """Prepare ``models`` (and ``optimizers``) for :func:`auto_cast` at ``level``.

    ``O1`` returns them unchanged. ``O2`` casts the float32 parameters of every layer except
    the normalisation layers (and ``excluded_layers``) to ``dtype``, and with ``master_weight``
    (the default) wraps each optimizer in a :class:`MasterWeightOptimizer` that updates
    float32 copies. Returns ``models`` or ``(models, optimizers)`` in the shapes given.
    """
    if level not in ("O1", "O2"):
        raise OpArgumentError(f"[decorate] level must be 'O1' or 'O2', got {level!r}")
    low = _dt.as_dtype(dtype, "decorate")
    if low not in (_dt.float16, _dt.bfloat16):
        raise OpArgumentError(f"[decorate] dtype must be 'float16' or 'bfloat16', got {dtype!r}")
    model_list = list(models) if isinstance(models, (list, tuple)) else [models]
    opt_list = (
        []
        if optimizers is None
        else (list(optimizers) if isinstance(optimizers, (list, tuple)) else [optimizers])
    )
    if level == "O2":
        excl: tuple[type, ...] = ()
        if excluded_layers is not None:
            items = excluded_layers if isinstance(excluded_layers, (list, tuple)) else [excluded_layers]
            excl = tuple(x if isinstance(x, type) else type(x) for x in items)
        for m in model_list:
            _cast_layer(m, low, excl)
        if master_weight is not False:
            opt_list = [
                o if isinstance(o, MasterWeightOptimizer) else MasterWeightOptimizer(o, o._all_params())
                for o in opt_list
            ]
    out_models = model_list if isinstance(models, (list, tuple)) else model_list[0]
    if optimizers is None:
        return out_models
    out_opts = opt_list if isinstance(optimizers, (list, tuple)) else opt_list[0]
    return out_models, out_opts
