"""A whole training step under ``to_static``: ``loss.backward()``, ``opt.step()`` and
``opt.clear_grad()`` called inside the traced function.

    @fw.jit.to_static
    def train_step(x, y):
        loss = fw.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.clear_grad()
        return loss

The split (documented in docs/user-guide.md): the **forward and backward** are traced into one
program; the **optimizer update** runs after it, in the order the function called it, as the
optimizer's own update program (framework.optimizer.fused: every parameter's update traced from the
optimizer's code into one program, run by the executor with the fusion pass; the step's
learning rate and bias corrections are its runtime scalars) where the optimizer runs fused,
which is the default with the compiler on (``OARLOCK_COMPILE=0``, ``fused=False`` or an
optimizer without a split update: eagerly, op by op). While tracing:

- ``loss.backward()`` on a traced tensor records the gradient rules (``autograd.grad`` of the
  loss with respect to the leaves its tape reaches: parameters, inputs that need a gradient)
  and hands each leaf its traced gradient in ``.grad`` for the rest of the trace; the
  gradients become extra outputs of the program. Nothing is accumulated into a real ``.grad``.
  A leaf whose gradient another object keeps (``leaf._traced_grad_sink``: ZeRO stage 2's
  optimizer under ``dist.to_static``) has it cut in the program (``sink.slice(g)``: this rank's
  slice) and handed over (``sink(g)``) when the program has run; its ``.grad`` stays None.
- ``opt.step()`` and ``opt.clear_grad()`` are recorded as *actions*, not run (the optimizer's
  state, step count and learning-rate schedule stay Python state, as eagerly).

Each call of the program then runs it once and replays the actions: the gradients computed
since the previous action are accumulated into the leaves' ``.grad`` exactly as eager
``backward`` does (onto a gradient left from before the call too), ``opt.step()`` updates the
parameters (the Layer's own tensors: shared, never copied; their storage is repointed to the
update's results, the objects stay) and ``opt.clear_grad()`` clears.
So N calls give the parameters N eager steps give, for every optimizer.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from adapter_api import OpArgumentError

from .._src import autograd
from .._src.tensor import Tensor

#: the step being traced (set by ``to_static`` while it traces)
RECORDING: contextvars.ContextVar[StepRecord | None] = contextvars.ContextVar(
    "oarlock_jit_step", default=None
)


@dataclass
class StepRecord:
    """What a traced function did besides computing its outputs."""

    args: Sequence[Tensor]  #: the traced inputs (a leaf among them is ``("input", k)``)
    #: ("grads", [(leaf, k)]) with k the index among the gradient outputs, ("step", opt),
    #: ("clear_grad", (opt, set_to_zero)); a leaf is ("input", k), ("tensor", t) or
    #: ("sink", s): a leaf with a ``_traced_grad_sink`` s (see :meth:`backward`) hands its
    #: gradient to ``s(g)`` instead of ``.grad``
    actions: list[tuple[str, Any]] = field(default_factory=list)
    grads: list[Tensor] = field(default_factory=list)  #: the traced gradient outputs
    pending: dict[int, tuple[Tensor, Tensor]] = field(default_factory=dict)  #: leaf id -> (leaf, delta)
    saved: dict[int, tuple[Tensor, Any]] = field(default_factory=dict)  #: leaf id -> (leaf, .grad before)
    visible: dict[int, Tensor] = field(default_factory=dict)  #: leaf id -> its traced .grad now

    @property
    def active(self) -> bool:
        return bool(self.actions or self.pending or self.grads)

    def backward(self, loss: Tensor, grad_tensor: Tensor | None, retain_graph: bool) -> None:
        if loss.stop_gradient:
            raise OpArgumentError(
                "[backward] the tensor does not require a gradient (stop_gradient=True) and has no graph; "
                "call the traced step with gradients enabled (not under fw.no_grad) and parameters that "
                "take a gradient"
            )
        leaves = _leaves(loss)
        grads = autograd.grad([loss], leaves, [grad_tensor], retain_graph=retain_graph, allow_unused=True)
        for leaf, g in zip(leaves, grads):
            if g is None:
                continue
            if tuple(g.shape) != tuple(leaf.shape):
                g = g.reshape(leaf.shape)
            key = id(leaf)
            if key not in self.saved:
                self.saved[key] = (leaf, leaf.grad)
            sink = getattr(leaf, "_traced_grad_sink", None)
            if sink is not None:  # the gradient's owner keeps a part of it (ZeRO stage 2: a slice)
                g = sink.slice(g)
            prev = self.pending.get(key)
            self.pending[key] = (leaf, g if prev is None else (prev[1] + g).detach())
            if sink is not None:  # not in .grad, as eagerly (the owner holds it)
                continue
            # what later code in the trace reads: this call's gradients (one from before the
            # call is added when the program runs, not while tracing)
            seen = self.visible.get(key)
            leaf.grad = self.visible[key] = g.detach() if seen is None else (seen + g).detach()

    def flush(self) -> None:
        """The gradients since the last action become outputs, accumulated when run."""
        if not self.pending:
            return
        pos = {id(a): k for k, a in enumerate(self.args)}
        items = []
        for leaf, g in self.pending.values():
            sink = getattr(leaf, "_traced_grad_sink", None)
            if sink is not None:
                where = ("sink", sink)
            else:
                where = ("input", pos[id(leaf)]) if id(leaf) in pos else ("tensor", leaf)
            items.append((where, len(self.grads)))
            self.grads.append(g)
        self.pending.clear()
        self.actions.append(("grads", items))

    def optimizer(self, kind: str, opt: Any, set_to_zero: bool = False) -> None:
        self.flush()
        if kind == "step":
            self.actions.append(("step", opt))
            return
        self.actions.append(("clear_grad", (opt, set_to_zero)))
        for p in opt._all_params():  # later code in the trace sees the gradients cleared
            if self.visible.pop(id(p), None) is not None:
                p.grad = None

    def restore(self) -> None:
        """Give every leaf back the ``.grad`` it had before the trace."""
        for leaf, g in self.saved.values():
            leaf.grad = g


def recording_optimizer(opt: Any, kind: str, set_to_zero: bool = False) -> bool:
    """Called by ``Optimizer.step`` / ``clear_grad``: while a step is traced, record the call
    (it runs after the program, see the module docstring) and return True."""
    rec = RECORDING.get()
    if rec is None:
        return False
    rec.optimizer(kind, opt, set_to_zero)
    return True


def traced_backward(loss: Tensor, grad_tensor: Tensor | None, retain_graph: bool) -> bool:
    """Called by a traced tensor's ``backward``: record it into the step being traced and
    return True (False when no step is traced: the caller runs autograd as usual)."""
    rec = RECORDING.get()
    if rec is None:
        return False
    rec.backward(loss, grad_tensor, retain_graph)
    return True


@contextlib.contextmanager
def recording(args: Sequence[Tensor]) -> Iterator[StepRecord]:
    rec = StepRecord(list(args))
    token = RECORDING.set(rec)
    try:
        yield rec
    finally:
        RECORDING.reset(token)
        rec.restore()


def _leaves(loss: Tensor) -> list[Tensor]:
    """The tensors ``loss``'s tape reaches that take a gradient and have no node: what eager
    ``backward`` accumulates ``.grad`` into."""
    out: list[Tensor] = []
    seen_nodes: set[int] = set()
    seen: set[int] = set()
    stack = [loss._node] if loss._node is not None else []
    while stack:
        node = stack.pop()
        if id(node) in seen_nodes or node.inputs is None:
            continue
        seen_nodes.add(id(node))
        for t in node.inputs:
            if t._node is not None:
                stack.append(t._node)
            elif not t.stop_gradient and id(t) not in seen:
                seen.add(id(t))
                out.append(t)
    return out


def apply(actions: list[tuple[str, Any]], grads: Sequence[Tensor], inputs: Sequence[Tensor]) -> None:
    """Replay the recorded actions after a run: accumulate the gradients, step, clear."""
    for kind, what in actions:
        if kind == "grads":
            for (where, ref), k in what:
                g = grads[k]
                if where == "sink":
                    ref(g)
                    continue
                leaf = inputs[ref] if where == "input" else ref
                leaf.grad = g if leaf.grad is None else (leaf.grad + g).detach()
        elif kind == "step":
            what.step()
        else:
            opt, set_to_zero = what
            opt.clear_grad(set_to_zero)
