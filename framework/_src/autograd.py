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
import itertools
import weakref
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from adapter_api import OarlockError, OpArgumentError

from . import dispatch
from . import profiling as _profiling
from .opdef import OPS
from .tensor import Tensor

if TYPE_CHECKING:
    from .opdef import OpDef

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
    """One recorded op application.

    It keeps the op's inputs and (weakly) its outputs for the gradient rule, and the time it
    was recorded on the clock of in-place modifications (``Tensor._clock``): an input whose
    ``_edited_at`` is later was modified in place since. Outputs are fresh tensors (version 0)
    unless an in-place update rebound one (``out_versions``). Backward refuses values changed
    since (:func:`_modified_error`).
    """

    __slots__ = (
        "op",
        "inputs",
        "attrs",
        "_outs",
        "n_outputs",
        "ctx",
        "time",
        "out_versions",
        "kept",
        "__weakref__",
    )

    def __init__(
        self, op: OpDef, inputs: list[Tensor], attrs: dict[str, Any], outputs: list[Tensor], ctx: Any = None
    ) -> None:
        self.op = op
        self.inputs: list[Tensor] | None = inputs
        self.attrs = attrs
        self._outs = [weakref.ref(o) for o in outputs]
        self.n_outputs = len(outputs)
        self.ctx = ctx
        self.time = Tensor._clock
        self.out_versions: list[int] | None = None
        #: where the tensors rebound to its outputs stood before (see :meth:`rebound_output`)
        self.kept: list[Tensor] | None = None

    def out(self, i: int = 0) -> Tensor:
        t = self._outs[i]()
        if t is None:
            raise OpArgumentError(f"[backward] output {i} of '{self.op.name}' was freed before backward")
        saved = 0 if self.out_versions is None else self.out_versions[i]
        if t._version != saved:
            raise _modified_error(self, t, f"output {i}", str(saved))
        return t

    def rebound_output(self, i: int, t: Tensor, was: Tensor | None = None) -> None:
        """Output ``i`` is now ``t`` (an in-place update rebound ``t`` to it), at ``t``'s version.
        ``was`` is the alias of ``t``'s position before (``Tensor._earlier`` refers to it
        weakly): the node keeps it alive where the new value does not read it (a write through a
        view replaces the whole base), as the nodes recorded before need it in backward."""
        self._outs[i] = weakref.ref(t)
        if self.out_versions is None:
            self.out_versions = [0] * self.n_outputs
        self.out_versions[i] = t._version
        if was is not None:
            if self.kept is None:
                self.kept = []
            self.kept.append(was)

    def __repr__(self) -> str:
        return f"<Node {self.op.name}>"


def _changed_at(t: Tensor) -> int:
    """The clock's time of the last change of ``t``'s value: its own in-place update, or an
    in-place write into the storage it shares (a view of a parameter an optimizer updated)."""
    return max(t._edited_at, getattr(t._block, "written_at", -1))


def _describe(t: Tensor) -> str:
    name = f"'{t.name}', " if t.name else ""
    return f"{name}shape {list(t.shape)}, {t.dtype}"


def _modified_error(node: Node, t: Tensor, which: str, saved: str, why: str = "") -> OarlockError:
    by = f" (last by {t._modified_by})" if t._modified_by else ""
    return OarlockError(
        f"[backward] one of the variables needed for gradient computation has been modified by an "
        f"inplace operation: {which} of '{node.op.name}' ({_describe(t)}) is at version {t._version}{by}, "
        f"but '{node.op.name}' saved it at version {saved}{why}. Update a copy instead "
        f"(y = x.clone(); y.add_(...)) or an out-of-place result (x = x + ...), or make the "
        f"in-place change after backward()"
    )


def _storage_written_error(node: Node, t: Tensor, i: int) -> OarlockError:
    return OarlockError(
        f"[backward] one of the variables needed for gradient computation has been modified by an "
        f"inplace operation: input {i} of '{node.op.name}' ({_describe(t)}) shares storage (it is a view, "
        f"e.g. of a parameter) that was written in place after '{node.op.name}' saved it (an optimizer's "
        f"fused step). Run the step after backward(), or take the view after the step"
    )


class _Overwritten(Tensor):
    """What a gradient rule sees for an input changed in place since it was recorded: its
    shape, dtype and device, but reading its value raises the version error."""

    __slots__ = ("_error",)

    def native(self) -> Any:
        raise self._error

    def numpy(self) -> Any:
        raise self._error


class _OverwrittenStorage:
    """The storage of an :class:`_Overwritten` tensor: any use raises the version error."""

    __slots__ = ("_error",)

    def __init__(self, error: OarlockError) -> None:
        self._error = error

    def __getattr__(self, name: str) -> Any:
        raise object.__getattribute__(self, "_error")


def _stand_in(t: Tensor, error: OarlockError) -> _Overwritten:
    s = object.__new__(_Overwritten)
    s._block, s._offset, s.shape, s.dtype, s.device = (
        _OverwrittenStorage(error),
        0,
        t.shape,
        t.dtype,
        t.device,
    )
    s._nv, s._node, s.stop_gradient, s._error = None, None, t.stop_gradient, error
    return s


_CONSTANT = object()
_GONE = object()


def _earlier_place(t: Tensor, time: int) -> Any:
    """Where ``t`` stood in the graph at clock ``time``: None if no in-place update moved it
    since, else the alias the first such update left (``Tensor._earlier``; it has the old
    shape and dtype), ``_CONSTANT`` if it was in no graph then, ``_GONE`` if the alias died."""
    moved = [k for k in t._earlier or () if k > time]
    if not moved:
        return None
    ref = t._earlier[min(moved)]
    if ref is None:
        return _CONSTANT
    was = ref()
    return _GONE if was is None else was


def _grad_with_modified_inputs(
    node: Node, gouts: list[Any], order: list[Node], at: int
) -> tuple[list[Any], list[Tensor]]:
    """Run ``node``'s rule when some inputs changed in place after it was recorded.

    A rule that reads such a value raises (as PyTorch and Paddle do). A gradient for such an
    input goes to the tensor itself where the update left its place in the graph alone (no_grad,
    ``set_value``, an optimizer's step), else to the tensor it was when recorded (the alias the
    update left in the graph, ``Tensor._earlier``) as long as that one's node is still to be
    differentiated; otherwise it raises too. Returns the input gradients and the tensors to
    give them to (None: drop the gradient).
    """
    real = node.inputs
    assert real is not None
    errors = {
        i: _modified_error(node, t, f"input {i}", t._version_at(node.time))
        if t._edited_at > node.time
        else _storage_written_error(node, t, i)
        for i, t in enumerate(real)
        if _changed_at(t) > node.time
    }
    # where each modified input stood when recorded: itself (None: it kept its place), the
    # alias an update that moved it left behind, or _CONSTANT / _GONE
    was = {i: _earlier_place(real[i], node.time) for i in errors}
    node.inputs = [
        _stand_in(was[i] if isinstance(was.get(i), Tensor) else t, errors[i]) if i in errors else t
        for i, t in enumerate(real)
    ]
    try:
        gins = node.op.grad(node, gouts)  # type: ignore[misc]
    finally:
        node.inputs = real
    targets: list[Tensor | None] = list(real)
    later: dict[int, int] | None = None
    for i in errors:
        t, w = real[i], was[i]
        if gins[i] is None or t.stop_gradient or w is None:
            continue
        if w is _CONSTANT:  # no gradient was asked for it then
            targets[i] = None
            continue
        if isinstance(w, Tensor) and w._node is not None:
            if later is None:
                later = {id(n): k for k, n in enumerate(order) if k > at}
            if id(w._node) in later:
                targets[i] = w
                continue
        raise _modified_error(
            node, t, f"input {i}", t._version_at(node.time), "; its gradient would flow into the new value"
        ) from None
    return gins, targets


def record(
    op: OpDef, inputs: list[Tensor], attrs: dict[str, Any], outputs: list[Tensor], ctx: Any = None
) -> None:
    node = Node(op, inputs, attrs, outputs, ctx)
    for i, o in enumerate(outputs):
        if o.dtype.kind in "fc" or o.dtype.name == "bfloat16":  # float and complex
            o._node = node
            o._out_index = i
            o.stop_gradient = False


def _topo(roots: Sequence[Tensor], stop: dict[int, Tensor] | None = None) -> list[Node]:
    """The nodes behind ``roots``, each after every node that consumes its outputs; a tensor in
    ``stop`` is a leaf here (the walk does not go into the graph behind it)."""
    order: list[Node] = []
    seen: set[int] = set()
    stack: list[tuple[Node, bool]] = [
        (r._node, False) for r in roots if r._node is not None and (stop is None or id(r) not in stop)
    ]
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
            if t._earlier is not None and t._edited_at > node.time:
                # moved in the graph by an in-place update since: the gradient goes where it
                # stood then (_grad_with_modified_inputs), so the walk goes there too; walking
                # to its new node would order the walk wrongly where the update read this node
                # (x = a * 2; v = x.reshape([-1]); v.mul_(3); the reshape node now feeds x)
                was = _earlier_place(t, node.time)
                if isinstance(was, Tensor):
                    n = was._node
                elif was is _CONSTANT:
                    n = None
            if n is not None and id(n) not in seen and (stop is None or id(t) not in stop):
                stack.append((n, False))
    order.reverse()
    return order


#: how many post-accumulate hooks are registered (process-wide); with none, backward counts no uses
_post_hook_count = 0
#: the backward pass running now in this thread (innermost): its serial number and the
#: callbacks queued for its end (:func:`current_pass`, :func:`queue_callback`)
_PASS: contextvars.ContextVar[tuple[int, list[Callable[[], None]]] | None] = contextvars.ContextVar(
    "oarlock_backward_pass", default=None
)
_PASS_NUMBERS = itertools.count(1)


def _pending_uses(order: list[Node]) -> dict[int, int]:
    pending: dict[int, int] = {}
    for node in order:
        assert node.inputs is not None
        for t in node.inputs:
            if t._node is None and t._post_accumulate_hooks:
                pending[id(t)] = pending.get(id(t), 0) + 1
    return pending


def _settle(node: Node, pending: dict[int, int], accumulated: dict[int, Tensor]) -> None:
    """``node`` was differentiated (or skipped): its leaves with hooks have one use fewer left."""
    assert node.inputs is not None
    for t in node.inputs:
        k = id(t)
        n = pending.get(k)
        if n is not None:
            if n == 1:
                del pending[k]
                if k in accumulated:
                    _announce(t, accumulated)
            else:
                pending[k] = n - 1


def _announce(t: Tensor, accumulated: dict[int, Tensor]) -> None:
    del accumulated[id(t)]
    for h in list(t._post_accumulate_hooks):
        h(t)


def current_pass() -> int:
    """The serial number of the backward pass running now (innermost), so a hook can tell a new
    pass from the one it saw last; raises outside backward."""
    running = _PASS.get()
    if running is None:
        raise OpArgumentError("[current_pass] no backward pass is running")
    return running[0]


def queue_callback(fn: Callable[[], None]) -> None:
    """Run ``fn()`` once the backward pass running now has computed every gradient.

    For hooks that act on the whole pass (DataParallel waits for its last gradient bucket
    there). Callbacks run in the order queued, before the graph is freed.

    Args:
        fn (callable): called with no arguments.

    Raises:
        OpArgumentError: outside a backward pass.
    """
    running = _PASS.get()
    if running is None:
        raise OpArgumentError(
            "[queue_callback] no backward pass is running; queue callbacks from a hook that backward calls"
        )
    running[1].append(fn)


def register_post_accumulate_grad_hook(t: Tensor, hook: Callable[[Tensor], None]) -> Any:
    """Call ``hook(t)`` once ``t.grad`` holds all of this backward pass's gradient for the leaf ``t``.

    It runs once per ``backward()`` that reaches ``t`` (after every contribution was summed into
    ``t.grad``), not for :func:`grad`, which accumulates nothing. PyTorch's hook of this name.

    Args:
        t (Tensor): a leaf tensor that requires a gradient (a parameter).
        hook (callable): ``hook(tensor) -> None``; it may read and replace ``tensor.grad``.

    Returns:
        A handle whose ``remove()`` unregisters the hook.

    Example:
        >>> import framework as fw
        >>> w = fw.to_tensor([1.0, 2.0], stop_gradient=False)
        >>> seen = []
        >>> h = w.register_post_accumulate_grad_hook(lambda p: seen.append(p.grad.tolist()))
        >>> (w * w + w).sum().backward()   # two uses of w: the hook runs once, with their sum
        >>> seen
        [[3.0, 5.0]]
        >>> h.remove()
    """
    if t.stop_gradient or t._node is not None:
        raise OpArgumentError(
            "[register_post_accumulate_grad_hook] the tensor must be a leaf that requires a gradient "
            f"(stop_gradient={t.stop_gradient}, leaf={t._node is None}); register it on a parameter"
        )
    if not callable(hook):
        raise OpArgumentError(
            f"[register_post_accumulate_grad_hook] hook must be callable, got {type(hook).__name__}"
        )
    if t._post_accumulate_hooks is None:
        t._post_accumulate_hooks = []
    t._post_accumulate_hooks.append(hook)
    global _post_hook_count
    _post_hook_count += 1
    return _PostHookHandle(t, hook)


class _PostHookHandle:
    def __init__(self, t: Tensor, hook: Callable[[Tensor], None]) -> None:
        self._t, self._hook = weakref.ref(t), hook

    def remove(self) -> None:
        global _post_hook_count
        t = self._t()
        hooks = t._post_accumulate_hooks if t is not None else None
        if hooks and self._hook in hooks:
            hooks.remove(self._hook)
            _post_hook_count -= 1
        self._t = lambda: None


def run_backward(
    roots: Sequence[Tensor],
    grad_roots: Sequence[Tensor | None],
    retain_graph: bool = False,
    create_graph: bool = False,
    inputs: Sequence[Tensor] | None = None,
    allow_unused: bool = False,
    stop_at_inputs: bool = False,
) -> list[Tensor | None] | None:
    """Differentiate ``roots`` (seeded with ``grad_roots``): into the leaves' ``.grad``, or with
    ``inputs`` given, into the returned list. ``stop_at_inputs`` treats ``inputs`` as leaves
    (the walk stops there): the gradient through one op's own inner graph, as
    ``ops.base._grad_by_decomposition`` takes it."""
    for r in roots:
        if r.stop_gradient:
            raise OpArgumentError(
                "[backward] the tensor does not require a gradient (stop_gradient=True) and has no graph; "
                "set stop_gradient=False on the leaves you differentiate with respect to"
            )
    grads: dict[int, list[Any]] = {}
    leaf_grads: dict[int, Any] = {}
    want = {id(t): t for t in inputs} if inputs is not None else None
    #: leaves with post-accumulate hooks that got a gradient in this backward, not yet announced
    accumulated: dict[int, Tensor] = {}

    def _push(t: Tensor, g: Tensor) -> None:
        node = t._node
        if want is not None and id(t) in want:
            prev = leaf_grads.get(id(t))
            leaf_grads[id(t)] = g if prev is None else prev + g
            if node is None or stop_at_inputs:
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
                if t._post_accumulate_hooks:
                    accumulated[id(t)] = t
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
        order = _topo(roots, want if stop_at_inputs else None)
        # leaf -> how many recorded uses of it are still to be differentiated; its
        # post-accumulate hooks run when that reaches 0 (only counted where a hook exists)
        pending = _pending_uses(order) if _post_hook_count and want is None else None
        callbacks: list[Callable[[], None]] = []
        token = _PASS.set((next(_PASS_NUMBERS), callbacks))
        try:
            for at, node in enumerate(order):
                gouts = grads.pop(id(node), None)
                if gouts is None or all(g is None for g in gouts):
                    if pending:
                        _settle(node, pending, accumulated)
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
                assert node.inputs is not None
                targets = node.inputs
                if node.time != Tensor._clock and max(map(_changed_at, targets), default=-1) > node.time:
                    gins, targets = _grad_with_modified_inputs(node, gouts, order, at)
                elif _profiling.ACTIVE:  # fw.profiler: the node's gradient rule as one span
                    t0 = _profiling.now()
                    gins = node.op.grad(node, gouts)
                    _profiling.span(_profiling.BACKWARD, node.op.name + "_grad", t0)
                else:
                    gins = node.op.grad(node, gouts)
                for t, g in zip(targets, gins):
                    if g is not None and t is not None and not t.stop_gradient:
                        _push(t, g)
                done.append(node)
                if pending:
                    _settle(node, pending, accumulated)
            for t in list(accumulated.values()):  # leaves used by no node (a root itself)
                _announce(t, accumulated)
            for fn in callbacks:
                fn()
        finally:
            _PASS.reset(token)
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
    outs = [outputs] if isinstance(outputs, Tensor) else list(outputs)
    ins = [inputs] if isinstance(inputs, Tensor) else list(inputs)
    if grad_outputs is None:
        gos: list[Tensor | None] = [None] * len(outs)
    elif isinstance(grad_outputs, Tensor):
        gos = [grad_outputs]
    else:
        gos = list(grad_outputs)
    keep = create_graph if retain_graph is None else retain_graph
    res = run_backward(
        outs, gos, retain_graph=keep, create_graph=create_graph, inputs=ins, allow_unused=allow_unused
    )
    assert res is not None
    return res
