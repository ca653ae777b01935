"""Reverse-mode autograd on a tape.

Each op application that needs a gradient records a :class:`Node` holding the op's inputs,
attributes and (weakly) its outputs. ``backward`` walks the nodes in reverse topological
order and calls each op's gradient rule, which is written with framework ops itself, so
``create_graph=True`` gives higher-order gradients.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import weakref
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from adapter_api import OpArgumentError

from . import dispatch
from .opdef import OPS

if TYPE_CHECKING:
    from .opdef import OpDef
    from .tensor import Tensor

#: Whether ops record a graph. A context variable: it nests, and each thread (or asyncio task)
#: has its own, starting enabled — like PyTorch's thread-local grad mode.
GRAD_ENABLED: contextvars.ContextVar[bool] = contextvars.ContextVar("oarlock_grad_enabled", default=True)


def is_grad_enabled() -> bool:
    """Whether ops record the graph for autograd now (False inside ``with fw.no_grad():``).

    Returns:
        bool: the current grad mode.

    Example:
        >>> import framework as fw
        >>> fw.is_grad_enabled()
        True
        >>> with fw.no_grad():
        ...     fw.is_grad_enabled()
        False
    """
    return GRAD_ENABLED.get()


class _GradMode(contextlib.ContextDecorator):
    def __init__(self, mode: bool) -> None:
        self.mode = mode
        self.tokens: list[contextvars.Token[bool]] = []

    def __enter__(self) -> None:
        self.tokens.append(GRAD_ENABLED.set(self.mode))

    def __exit__(self, *exc: object) -> None:
        GRAD_ENABLED.reset(self.tokens.pop())


def no_grad(func: Callable[..., Any] | None = None) -> Any:
    """Record no graph: a context manager (``with fw.no_grad():``) or a decorator.

    Tensors made inside have ``stop_gradient=True``; use it for inference and for updates that
    must not be differentiated.

    Args:
        func (callable, optional): decorated as ``@fw.no_grad``; also ``@fw.no_grad()``.

    Returns:
        A context manager that also decorates, or the wrapped ``func``.

    Example:
        >>> import framework as fw
        >>> x = fw.to_tensor([1.0, 2.0], stop_gradient=False)
        >>> with fw.no_grad():
        ...     y = x * 2
        >>> y.stop_gradient
        True
        >>> @fw.no_grad
        ... def double(t):
        ...     return t * 2
        >>> double(x).stop_gradient
        True
    """
    if callable(func):

        @functools.wraps(func)
        def wrapper(*a: Any, **k: Any) -> Any:
            with _GradMode(False):
                return func(*a, **k)

        return wrapper
    return _GradMode(False)


def enable_grad() -> _GradMode:
    """A context manager (or decorator) that records the graph again, e.g. inside ``fw.no_grad()``.

    Returns:
        A context manager that also decorates.

    Example:
        >>> import framework as fw
        >>> x = fw.to_tensor([1.0], stop_gradient=False)
        >>> with fw.no_grad():
        ...     with fw.enable_grad():
        ...         y = x * 2
        >>> y.stop_gradient
        False
    """
    return _GradMode(True)


def set_grad_enabled(mode: bool) -> _SetGradMode:
    """Turn graph recording on or off from here on; the returned object's ``__exit__`` undoes it.

    Args:
        mode (bool): record the graph (True) or not.

    Returns:
        A context-manager object; its ``__exit__`` restores the mode from before the call.

    Example:
        >>> import framework as fw
        >>> _ = fw.set_grad_enabled(False)
        >>> fw.is_grad_enabled()
        False
        >>> _ = fw.set_grad_enabled(True)
        >>> fw.is_grad_enabled()
        True
    """
    return _SetGradMode(mode)


class _SetGradMode(_GradMode):
    """``set_grad_enabled``'s object: the call already switched the mode, so a ``with`` on it
    does not switch again, and its exit restores the mode from before the call."""

    def __init__(self, mode: bool) -> None:
        super().__init__(mode)
        super().__enter__()
        self.pending = True

    def __enter__(self) -> None:
        if self.pending:
            self.pending = False
            return
        super().__enter__()


class Node:
    """One recorded op application."""

    __slots__ = ("op", "inputs", "attrs", "_outs", "n_outputs", "ctx", "__weakref__")

    def __init__(
        self, op: OpDef, inputs: list[Tensor], attrs: dict[str, Any], outputs: list[Tensor], ctx: Any = None
    ) -> None:
        self.op = op
        self.inputs: list[Tensor] | None = inputs
        self.attrs = attrs
        self._outs = [weakref.ref(o) for o in outputs]
        self.n_outputs = len(outputs)
        self.ctx = ctx

    def out(self, i: int = 0) -> Tensor:
        t = self._outs[i]()
        if t is None:
            raise OpArgumentError(f"[backward] output {i} of '{self.op.name}' was freed before backward")
        return t

    def __repr__(self) -> str:
        return f"<Node {self.op.name}>"


def record(
    op: OpDef, inputs: list[Tensor], attrs: dict[str, Any], outputs: list[Tensor], ctx: Any = None
) -> None:
    node = Node(op, inputs, attrs, outputs, ctx)
    for i, o in enumerate(outputs):
        if o.dtype.kind == "f" or o.dtype.name == "bfloat16":
            o._node = node
            o._out_index = i
            o.stop_gradient = False


def _topo(roots: Sequence[Tensor]) -> list[Node]:
    order: list[Node] = []
    seen: set[int] = set()
    stack: list[tuple[Node, bool]] = [(r._node, False) for r in roots if r._node is not None]
    while stack:
        node, done = stack.pop()
        if done:
            order.append(node)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.append((node, True))
        if node.inputs is None:
            raise OpArgumentError(
                f"[backward] the graph through '{node.op.name}' was already freed by an earlier backward; "
                f"pass retain_graph=True to the first backward() to call it twice"
            )
        for t in node.inputs:
            n = t._node
            if n is not None and id(n) not in seen:
                stack.append((n, False))
    order.reverse()
    return order


def run_backward(
    roots: Sequence[Tensor],
    grad_roots: Sequence[Tensor | None],
    retain_graph: bool = False,
    create_graph: bool = False,
    inputs: Sequence[Tensor] | None = None,
    allow_unused: bool = False,
) -> list[Tensor | None] | None:
    for r in roots:
        if r.stop_gradient:
            raise OpArgumentError(
                "[backward] the tensor does not require a gradient (stop_gradient=True) and has no graph; "
                "set stop_gradient=False on the leaves you differentiate with respect to"
            )
    grads: dict[int, list[Any]] = {}
    leaf_grads: dict[int, Any] = {}
    want = {id(t): t for t in inputs} if inputs is not None else None

    def _push(t: Tensor, g: Tensor) -> None:
        node = t._node
        if want is not None and id(t) in want:
            prev = leaf_grads.get(id(t))
            leaf_grads[id(t)] = g if prev is None else prev + g
            if node is None:
                return
        if node is None:
            if want is None and not t.stop_gradient:
                if t._hooks:
                    for h in t._hooks:
                        r = h(g)
                        if r is not None:
                            g = r
                if g.shape != t.shape:
                    g = g.reshape(t.shape)
                if t.grad is None:
                    t.grad = g if create_graph else g.detach()
                else:
                    t.grad = t.grad + g if create_graph else (t.grad + g).detach()
            return
        slot = grads.setdefault(id(node), [None] * node.n_outputs)
        i = t._out_index
        slot[i] = g if slot[i] is None else slot[i] + g

    with _GradMode(create_graph):
        for r, g in zip(roots, grad_roots):
            if g is None:  # as Paddle: ones of the root's shape (also for a non-scalar root)
                g = dispatch.run(OPS["full"], [], {"shape": r.shape, "value": 1, "dtype": r.dtype}, r.device)[
                    0
                ]
            elif g.shape != r.shape:
                raise OpArgumentError(f"[backward] grad_tensor has shape {g.shape}, expected {r.shape}")
            _push(r, g)
        done: list[Node] = []
        for node in _topo(roots):
            gouts = grads.pop(id(node), None)
            if gouts is None or all(g is None for g in gouts):
                continue
            for i, ref in enumerate(node._outs):
                t = ref()
                if t is not None and gouts[i] is not None:
                    if t._hooks:
                        for h in t._hooks:
                            r = h(gouts[i])
                            if r is not None:
                                gouts[i] = r
                    if t._retain_grad and want is None:
                        t.grad = gouts[i] if t.grad is None else t.grad + gouts[i]
            if node.op.grad is None:
                raise OpArgumentError(f"[backward] op '{node.op.name}' has no gradient rule")
            gins = node.op.grad(node, gouts)
            assert node.inputs is not None
            for t, g in zip(node.inputs, gins):
                if g is not None and not t.stop_gradient:
                    _push(t, g)
            done.append(node)
        if not retain_graph:
            # Freed only now: a later node's rule may still read this node's outputs,
            # which are kept alive by the inputs of the nodes that consumed them.
            for node in done:
                node.inputs = None
                node.ctx = None
    if inputs is None:
        return None
    out = []
    for t in inputs:
        g = leaf_grads.get(id(t))
        if g is None and not allow_unused:
            raise OpArgumentError(
                "[grad] one of the inputs was not used to compute the outputs; pass allow_unused=True to get None for it"
            )
        out.append(g)
    return out


def backward(tensor: Tensor, grad_tensor: Tensor | None = None, retain_graph: bool = False) -> None:
    run_backward([tensor], [grad_tensor], retain_graph=retain_graph)


def grad(
    outputs: Tensor | Sequence[Tensor],
    inputs: Tensor | Sequence[Tensor],
    grad_outputs: Tensor | Sequence[Tensor | None] | None = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    allow_unused: bool = False,
) -> list[Tensor | None]:
    """The gradients of ``outputs`` with respect to ``inputs``; nothing is accumulated into ``.grad``.

    Args:
        outputs (Tensor | list[Tensor]): the tensors to differentiate.
        inputs (Tensor | list[Tensor]): the tensors to differentiate with respect to.
        grad_outputs (Tensor | list[Tensor | None], optional): the gradients of ``outputs`` (ones
            for a ``None``, which a 0-d output takes).
        retain_graph (bool, optional): keep the graph for another backward pass; default
            ``create_graph``.
        create_graph (bool): record the backward pass too, for higher-order gradients.
        allow_unused (bool): give ``None`` for an input the outputs do not depend on, instead of
            raising.

    Returns:
        list[Tensor | None]: one gradient per input.

    Example:
        >>> import framework as fw
        >>> x = fw.to_tensor([1.0, 2.0], stop_gradient=False)
        >>> (dx,) = fw.grad((x**3).sum(), x, create_graph=True)
        >>> dx.tolist()
        [3.0, 12.0]
        >>> fw.grad(dx.sum(), x)[0]
        Tensor(shape=[2], dtype=float32, device=cpu:0,
               [ 6., 12.])
    """
    from .tensor import Tensor as _T

    outs = [outputs] if isinstance(outputs, _T) else list(outputs)
    ins = [inputs] if isinstance(inputs, _T) else list(inputs)
    if grad_outputs is None:
        gos: list[Tensor | None] = [None] * len(outs)
    elif isinstance(grad_outputs, _T):
        gos = [grad_outputs]
    else:
        gos = list(grad_outputs)
    keep = create_graph if retain_graph is None else retain_graph
    res = run_backward(
        outs, gos, retain_graph=keep, create_graph=create_graph, inputs=ins, allow_unused=allow_unused
    )
    assert res is not None
    return res
