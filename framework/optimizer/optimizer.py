"""Optimizers (Paddle names and keywords): SGD, Momentum (Nesterov), Adam, AdamW.

>>> import framework as fw
>>> w = fw.nn.Parameter.from_tensor(fw.to_tensor([1.0, 2.0], dtype="float64"))
>>> opt = fw.optim.SGD(learning_rate=0.1, parameters=[w])
>>> (w * w).sum().backward()
>>> opt.step(); opt.clear_grad()
>>> w.tolist()
[0.8, 1.6]
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from adapter_api import OpArgumentError

from .._src.autograd import no_grad
from .._src.ops import math as M
from .._src.tensor import Tensor, to_tensor
from ..jit import train_step as _jit_step
from ..regularizer import L2Decay, WeightDecayRegularizer
from .assign import _assign
from .lr import LRScheduler


class Optimizer:
    """Base class. ``parameters`` is a list of parameters (or of dicts ``{"params": [...],
    "learning_rate": scale, "weight_decay": wd}``); ``learning_rate`` is a number or an
    :class:`~framework.optimizer.lr.LRScheduler`."""

    #: the state slots the optimizer keeps per parameter (``param_<i>.<slot>`` in its state
    #: dict); None: not declared, any slot name loads
    _slots: tuple[str, ...] | None = None

    def __init__(
        self,
        learning_rate: float | LRScheduler = 0.001,
        parameters: Iterable[Any] | None = None,
        weight_decay: float | None = None,
        grad_clip: Any = None,
        name: str | None = None,
        fused: bool | None = None,
    ) -> None:
        if parameters is None:
            raise OpArgumentError(
                f"[{type(self).__name__}] parameters= is required, e.g. parameters=model.parameters()"
            )
        if not isinstance(learning_rate, (int, float, LRScheduler)):
            raise OpArgumentError(
                f"[{type(self).__name__}] learning_rate must be a number or an LRScheduler, got {type(learning_rate).__name__}"
            )
        self._learning_rate = learning_rate
        # a float or L2Decay is the update's own L2 term; another regularizer (L1Decay) is
        # added to the gradient in _apply_groups, as a ParamAttr's regularizer is
        self.regularization = weight_decay if isinstance(weight_decay, WeightDecayRegularizer) else None
        if self.regularization is not None and not isinstance(weight_decay, L2Decay):
            weight_decay = 0.0
        if not isinstance(weight_decay, (int, float, L2Decay, type(None))) or isinstance(weight_decay, bool):
            raise OpArgumentError(
                f"[{type(self).__name__}] weight_decay must be a float, fw.regularizer.L1Decay/L2Decay or None, "
                f"got {weight_decay!r}"
            )
        self.weight_decay = float(getattr(weight_decay, "coeff", weight_decay) or 0.0)
        self.grad_clip = grad_clip
        self.param_groups: list[dict[str, Any]] = []
        plist = list(parameters)
        if plist and isinstance(plist[0], dict):
            for g in plist:
                self.param_groups.append(
                    {
                        "learning_rate": 1.0,
                        "weight_decay": self.weight_decay,
                        **g,
                        "params": list(g["params"]),
                    }
                )
        else:
            self.param_groups.append(
                {"params": plist, "learning_rate": 1.0, "weight_decay": self.weight_decay}
            )
        if not any(g["params"] for g in self.param_groups):
            raise OpArgumentError(
                f"[{type(self).__name__}] parameters= is empty: there is nothing to optimize; pass "
                f"model.parameters() of a model that has parameters"
            )
        for g in self.param_groups:
            for i, p in enumerate(g["params"]):
                if not isinstance(p, Tensor):
                    raise OpArgumentError(
                        f"[{type(self).__name__}] parameter {i} is a {type(p).__name__}, expected a Tensor/Parameter"
                    )
        self._state: dict[int, dict[str, Tensor]] = {}
        self._step_count = 0
        if fused not in (None, True, False):
            raise OpArgumentError(f"[{type(self).__name__}] fused must be None, True or False, got {fused!r}")
        #: run the update as one program (framework.optimizer.fused): True, False, or None for
        #: "when the compiler is on and the device has compile access"
        self.fused = fused
        self._fused_update: Any = None

    # -- learning rate --------------------------------------------------------------------
    def get_lr(self) -> float:
        lr = self._learning_rate
        return lr() if isinstance(lr, LRScheduler) else float(lr)

    def set_lr(self, value: float) -> None:
        if isinstance(self._learning_rate, LRScheduler):
            raise OpArgumentError("[set_lr] the learning rate is an LRScheduler; call its step() instead")
        self._learning_rate = float(value)

    def set_lr_scheduler(self, scheduler: LRScheduler) -> None:
        self._learning_rate = scheduler

    # -- state ------------------------------------------------------------------------------
    def _all_params(self) -> list[Tensor]:
        return [p for g in self.param_groups for p in g["params"]]

    def state_dict(self) -> dict[str, Any]:
        """``{"param_<i>.<slot>": tensor, ..., "step": n, "LR_Scheduler": {...}}`` (i is the
        parameter's position in the optimizer's list)."""
        out: dict[str, Any] = {}
        for i, p in enumerate(self._all_params()):
            for k, v in self._state.get(id(p), {}).items():
                out[f"param_{i}.{k}"] = v
        out["step"] = self._step_count
        if isinstance(self._learning_rate, LRScheduler):
            out["LR_Scheduler"] = self._learning_rate.state_dict()
        return out

    def set_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Load what :meth:`state_dict` wrote: ``param_<i>.<slot>`` values, ``step`` and
        ``LR_Scheduler``. Every key is checked before anything is loaded: a key this optimizer
        does not write, an empty dict, a slot of another optimizer, a parameter index past the
        end or a value of the wrong kind or shape raises, naming the key and what was expected
        (Paddle ignores such keys; here they are mistakes to report)."""
        params = self._all_params()
        cls = type(self).__name__
        slots = self._slots
        expected = "'step', 'LR_Scheduler' and 'param_<i>.<slot>'" + (
            f" with <slot> one of {list(slots)} and i < {len(params)}" if slots is not None else ""
        )
        if not isinstance(state_dict, Mapping):
            raise OpArgumentError(
                f"[{cls}.set_state_dict] expected a dict as state_dict() returns, got {type(state_dict).__name__}"
            )
        if not state_dict:
            raise OpArgumentError(
                f"[{cls}.set_state_dict] the state dict is empty: nothing would be loaded; expected the keys "
                f"{expected} (pass what {cls}.state_dict() returned)"
            )
        loads: list[tuple[Tensor, str, Any]] = []
        step = lr_state = None
        for key, v in state_dict.items():
            where = f"[{cls}.set_state_dict] '{key}'"
            if key == "step":
                if isinstance(v, Tensor) and v.size == 1:
                    v = v.item()
                if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
                    raise OpArgumentError(f"{where} must be an int (the step count), got {v!r}")
                step = int(v)
            elif key == "LR_Scheduler":
                lr_state = self._check_lr_state(where, v)
            elif isinstance(key, str) and key.startswith("param_"):
                idx, dot, slot = key[len("param_") :].partition(".")
                if not dot or not idx.isdigit() or not slot:
                    raise OpArgumentError(f"{where} is not of the form param_<i>.<slot>; expected {expected}")
                i = int(idx)
                if i >= len(params):
                    raise OpArgumentError(
                        f"{where} names parameter {i}, but the optimizer has {len(params)}; the checkpoint is for "
                        "another model"
                    )
                if slots is not None and slot not in slots:
                    raise OpArgumentError(
                        f"{where} names slot '{slot}', which {cls} does not keep; its slots are {list(slots)} "
                        "(a state dict of another optimizer, or a misspelled key)"
                    )
                loads.append((params[i], slot, self._slot_value(where, params[i], slot, v)))
            else:
                raise OpArgumentError(
                    f"[{cls}.set_state_dict] unexpected key {key!r}: {cls}.state_dict() writes {expected}; nothing "
                    "was loaded (a .pdopt written by real Paddle names its state by Paddle's internal parameter "
                    "names, which do not map here: start the optimizer afresh)"
                )
        if step is not None:
            self._step_count = step
        if lr_state is not None:
            self._learning_rate.set_state_dict(lr_state)
        for p, slot, value in loads:
            self._state.setdefault(id(p), {})[slot] = value

    def _check_lr_state(self, where: str, v: Any) -> dict[str, Any] | None:
        """The scheduler's state to load (None when the learning rate is a number: Paddle
        ignores the key then)."""
        if not isinstance(self._learning_rate, LRScheduler):
            return None
        if not isinstance(v, Mapping):
            raise OpArgumentError(
                f"{where} must be a dict (LRScheduler.state_dict()), got {type(v).__name__}"
            )
        own = self._learning_rate.state_dict()
        missing = [k for k in own if k not in v]
        if missing:
            raise OpArgumentError(
                f"{where} lacks {missing} of {type(self._learning_rate).__name__}; it holds {sorted(v)}"
            )
        return dict(v)

    def _slot_value(self, where: str, p: Tensor, slot: str, v: Any) -> Any:
        """The value to keep for one slot: an int step count, or a copy of the tensor on the
        parameter's device (the update writes its state in place; the caller keeps the dict's)."""
        if slot in self._scalar_slots():
            if isinstance(v, Tensor) and v.size == 1:
                v = v.item()
            if isinstance(v, (float, np.floating)) and float(v).is_integer():
                v = int(v)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
                raise OpArgumentError(f"{where} must be an int (a step count), got {v!r}")
            return int(v)
        if isinstance(v, np.ndarray):
            v = to_tensor(v)
        if not isinstance(v, Tensor):
            raise OpArgumentError(f"{where} is a {type(v).__name__}; expected a Tensor of shape {p.shape}")
        if v.shape != p.shape:
            raise OpArgumentError(f"{where} has shape {v.shape}, its parameter has {p.shape}")
        return v.to(p.device).detach().clone()

    set_dict = set_state_dict
    load_state_dict = set_state_dict

    def _scalar_slots(self) -> tuple[str, ...]:
        return ()

    # -- stepping -------------------------------------------------------------------------
    def clear_grad(self, set_to_zero: bool = False) -> None:
        """Drop every parameter's gradient (``set_to_zero=True`` keeps zero tensors)."""
        if _jit_step.recording_optimizer(self, "clear_grad", set_to_zero):
            return  # inside a traced training step: runs after the program (framework.jit.train_step)
        for p in self._all_params():
            p.clear_grad(set_to_zero)

    clear_gradients = clear_grad
    zero_grad = clear_grad

    @no_grad()
    def step(self) -> None:
        """Apply one update to every parameter that has a gradient."""
        if _jit_step.recording_optimizer(self, "step"):
            return  # inside a traced training step: runs after the program (framework.jit.train_step)
        self._step_count += 1
        work = self._work()
        if not work:
            return
        plan = self._plan(self.get_lr(), work)
        if self.fused is not False and self._fusable():
            from . import fused

            if self._fused_update is None:
                self._fused_update = fused.FusedUpdate(self)
            if self._fused_update.step(work, plan):
                return
        self._apply_groups(work, plan)

    def _work(self) -> list[tuple[dict[str, Any], list[tuple[Tensor, Tensor]]]]:
        """Each parameter group with the (parameter, gradient) pairs it updates now: the
        parameters that have a gradient and take one."""
        out = []
        for group in self.param_groups:
            pg = [(p, p.grad) for p in group["params"] if p.grad is not None and not p.stop_gradient]
            if pg:
                out.append((group, pg))
        return out

    def _plan(self, base_lr: float, work: list[tuple[dict[str, Any], list[Any]]]) -> list[list[Any]]:
        """The host side of a step, per parameter of ``work``: its learning rate, or for a
        fusable optimizer the scalars ``_scalars`` gives (advancing step counters)."""
        plan = []
        for group, pg in work:
            lr = base_lr * group["learning_rate"]
            row = []
            for p, _ in pg:
                scale = getattr(p, "optimize_attr", None)
                plr = lr * scale["learning_rate"] if scale else lr
                if self._fusable():
                    state = self._state.setdefault(id(p), {})
                    row.append(self._scalars(plr, group["weight_decay"], state))
                else:
                    row.append(plr)
            plan.append(row)
        return plan

    def _apply_groups(
        self,
        work: list[tuple[dict[str, Any], list[tuple[Tensor, Tensor]]]],
        plan: list[list[Any]],
        states: dict[int, dict[str, Tensor]] | None = None,
    ) -> None:
        """The tensor side of a step: clipping, then every parameter's update. Eager runs it
        on the tensors; framework.optimizer.fused traces it into the update program (``states``:
        the traced states by parameter, ``plan``: the traced scalars)."""
        states = self._state if states is None else states
        for (group, pg), row in zip(work, plan):
            if self.grad_clip is not None:
                pg = self.grad_clip(pg)
            for (p, g), sc in zip(pg, row):
                if g.dtype != p.dtype:
                    g = M.cast(g, p.dtype)
                wd = group["weight_decay"]
                own = getattr(p, "regularizer", None)
                if own is not None:  # Paddle: a ParamAttr's regularizer replaces the optimizer's
                    g = own(p, g)
                    wd = wd if self._decoupled_decay() else 0.0
                elif self.regularization is not None and not isinstance(self.regularization, L2Decay):
                    g = self.regularization(p, g)
                state = states.setdefault(id(p), {})
                if self._fusable():
                    self._apply(p, g.detach(), wd, state, sc)
                else:
                    self._update(p, g.detach(), sc, wd, state)

    def _decoupled_decay(self) -> bool:
        """Whether ``weight_decay`` is decoupled from the gradient (AdamW): a parameter's own
        regularizer then adds to it rather than replacing it."""
        return bool(getattr(self, "_decoupled", False))

    # -- a fusable optimizer splits its update: host scalars, then tensor math ----------------
    def _fusable(self) -> bool:
        """Whether the update is split into ``_scalars`` + ``_apply`` (SGD, Momentum, Adam,
        AdamW), which the update program traces; other optimizers run ``_update`` eagerly."""
        return type(self)._apply is not Optimizer._apply

    def _scalars(self, lr: float, wd: float, state: dict[str, Any]) -> dict[str, float]:
        """The step's scalars for one parameter (host side: advances its step counter)."""
        return {"lr": lr}

    def _init_state(self, p: Tensor, state: dict[str, Any]) -> None:
        """Create the state slots the update reads, as zeros (the update program takes them
        as inputs; a zero slot updates exactly as a missing one)."""

    def _apply(self, p: Tensor, g: Tensor, wd: float, state: dict[str, Tensor], sc: dict[str, Any]) -> None:
        raise NotImplementedError("need _apply")

    def _update(self, p: Tensor, g: Tensor, lr: float, wd: float, state: dict[str, Tensor]) -> None:
        raise NotImplementedError("need _update")

    def minimize(
        self, loss: Tensor, startup_program: Any = None, parameters: Any = None, no_grad_set: Any = None
    ) -> None:
        loss.backward()
        self.step()


class SGD(Optimizer):
    """p -= lr * (g + weight_decay * p)."""

    _slots = ()

    def __init__(
        self,
        learning_rate: float | LRScheduler = 0.001,
        parameters: Iterable[Any] | None = None,
        weight_decay: float | None = None,
        grad_clip: Any = None,
        name: str | None = None,
        fused: bool | None = None,
    ) -> None:
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name, fused)

    def _apply(self, p, g, wd, state, sc):  # type: ignore[no-untyped-def]
        if wd:
            g = g + p * wd
        _assign(p, p - g * sc["lr"])


class Momentum(Optimizer):
    """v = momentum * v + g; p -= lr * v, or with ``use_nesterov``: p -= lr * (g + momentum * v)."""

    _slots = ("velocity",)

    def __init__(
        self,
        learning_rate: float | LRScheduler = 0.001,
        momentum: float = 0.9,
        parameters: Iterable[Any] | None = None,
        use_nesterov: bool = False,
        weight_decay: float | None = None,
        grad_clip: Any = None,
        name: str | None = None,
        fused: bool | None = None,
    ) -> None:
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name, fused)
        self.momentum, self.use_nesterov = float(momentum), bool(use_nesterov)

    def _init_state(self, p, state):  # type: ignore[no-untyped-def]
        if "velocity" not in state:
            state["velocity"] = M.zeros_like(p)

    def _apply(self, p, g, wd, state, sc):  # type: ignore[no-untyped-def]
        if wd:
            g = g + p * wd
        v = state.get("velocity")
        v = g if v is None else v * self.momentum + g
        state["velocity"] = v
        step = g + v * self.momentum if self.use_nesterov else v
        _assign(p, p - step * sc["lr"])


class Adam(Optimizer):
    """m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
    p -= lr * (m / (1-b1^t)) / (sqrt(v / (1-b2^t)) + epsilon). ``weight_decay`` is L2 (added to g)."""

    _slots = ("moment1", "moment2", "moment2_max", "t")

    _decoupled = False

    def __init__(
        self,
        learning_rate: float | LRScheduler = 0.001,
        beta1: float = 0.9,
        beta2: float = 0.999,
        epsilon: float = 1e-8,
        parameters: Iterable[Any] | None = None,
        weight_decay: float | None = None,
        grad_clip: Any = None,
        lazy_mode: bool = False,
        multi_precision: bool = False,
        amsgrad: bool = False,
        name: str | None = None,
        fused: bool | None = None,
    ) -> None:
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name, fused)
        for nm, b in (("beta1", beta1), ("beta2", beta2)):
            if not 0.0 <= b < 1.0:
                raise OpArgumentError(f"[{type(self).__name__}] {nm} must be in [0, 1), got {b}")
        self.beta1, self.beta2, self.epsilon, self.amsgrad = (
            float(beta1),
            float(beta2),
            float(epsilon),
            amsgrad,
        )

    def _scalars(self, lr, wd, state):  # type: ignore[no-untyped-def]
        t = int(state["t"]) + 1 if "t" in state else 1
        state["t"] = t
        sc = {"lr_bc1": lr / (1 - self.beta1**t), "rsqrt_bc2": 1.0 / math.sqrt(1 - self.beta2**t)}
        if self._decoupled and wd:
            sc["decay"] = 1.0 - lr * wd
        return sc

    def _init_state(self, p, state):  # type: ignore[no-untyped-def]
        for k in ("moment1", "moment2") + (("moment2_max",) if self.amsgrad else ()):
            if k not in state:
                state[k] = M.zeros_like(p)

    def _apply(self, p, g, wd, state, sc):  # type: ignore[no-untyped-def]
        if wd and self._decoupled:
            _assign(p, p * sc["decay"])
        elif wd:
            g = g + p * wd
        m = state.get("moment1")
        v = state.get("moment2")
        m = g * (1 - self.beta1) if m is None else m * self.beta1 + g * (1 - self.beta1)
        v = g * g * (1 - self.beta2) if v is None else v * self.beta2 + g * g * (1 - self.beta2)
        state["moment1"], state["moment2"] = m, v
        denom_v = v
        if self.amsgrad:
            vmax = state.get("moment2_max")
            denom_v = v if vmax is None else M.maximum(vmax, v)
            state["moment2_max"] = denom_v
        upd = m / (M.sqrt(denom_v) * sc["rsqrt_bc2"] + self.epsilon) * sc["lr_bc1"]
        _assign(p, p - upd)

    def state_dict(self) -> dict[str, Any]:
        out = super().state_dict()
        for k in [k for k in out if k.endswith(".t")]:
            out[k] = int(out[k])
        return out

    def _scalar_slots(self) -> tuple[str, ...]:
        return ("t",)


class AdamW(Adam):
    """Adam with decoupled weight decay: p -= lr * weight_decay * p before the Adam step
    (``weight_decay`` defaults to 0.01 as in Paddle). ``apply_decay_param_fun(name)``
    is not supported: pass param groups with ``weight_decay: 0.0`` instead."""

    _decoupled = True

    def __init__(
        self,
        learning_rate: float | LRScheduler = 0.001,
        beta1: float = 0.9,
        beta2: float = 0.999,
        epsilon: float = 1e-8,
        parameters: Iterable[Any] | None = None,
        weight_decay: float = 0.01,
        lr_ratio: Any = None,
        apply_decay_param_fun: Any = None,
        grad_clip: Any = None,
        lazy_mode: bool = False,
        multi_precision: bool = False,
        amsgrad: bool = False,
        name: str | None = None,
        fused: bool | None = None,
    ) -> None:
        super().__init__(
            learning_rate,
            beta1,
            beta2,
            epsilon,
            parameters,
            weight_decay,
            grad_clip,
            lazy_mode,
            multi_precision,
            amsgrad,
            name,
            fused,
        )
