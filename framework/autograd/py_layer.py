"""``PyLayer``: an operation whose forward and backward are Python functions (Paddle's ``paddle.autograd.PyLayer``)."""

from __future__ import annotations

from typing import Any

from adapter_api import OpArgumentError

from .._src import autograd as _ag
from .._src.opdef import OpDef
from .._src.ops import creation as _C
from .._src.tensor import Tensor


class PyLayerContext:
    """What ``forward`` hands to ``backward``: ``save_for_backward`` / ``saved_tensor``, and any attribute.

    Example:
        >>> import framework as fw
        >>> ctx = fw.autograd.PyLayerContext()
        >>> ctx.save_for_backward(fw.ones([1]))
        >>> len(ctx.saved_tensor())
        1
    """

    def __init__(self) -> None:
        self._saved: tuple[Any, ...] = ()
        self._non_differentiable: set[int] = set()

    def save_for_backward(self, *tensors: Any) -> None:
        """Keep tensors (or anything) for ``backward``; :meth:`saved_tensor` returns them."""
        self._saved = tensors

    def saved_tensor(self) -> tuple[Any, ...]:
        """The objects given to :meth:`save_for_backward`, in order."""
        return self._saved

    def mark_non_differentiable(self, *tensors: Tensor) -> None:
        """Outputs that take no gradient (their ``stop_gradient`` stays True)."""
        self._non_differentiable.update(id(t) for t in tensors)

    def mark_not_inplace(self, *tensors: Tensor) -> None:
        """Accepted (Paddle's hint for in-place outputs; outputs here are always new tensors)."""


def _pylayer_grad(node: Any, gouts: list[Tensor | None]) -> list[Tensor | None]:
    cls, ctx, metas, n_in = node.ctx
    grads = [_C.zeros(s, dtype=d, device=dev) if g is None else g for g, (s, d, dev) in zip(gouts, metas)]
    res = cls.backward(ctx, *grads)
    res = list(res) if isinstance(res, (tuple, list)) else [res]
    if len(res) != n_in:
        raise OpArgumentError(
            f"[PyLayer] {cls.__name__}.backward returned {len(res)} gradient(s) but forward took {n_in} tensor "
            f"input(s); return one gradient (or None) per tensor input"
        )
    for i, (g, t) in enumerate(zip(res, node.inputs)):
        if g is not None and (not isinstance(g, Tensor) or tuple(g.shape) != tuple(t.shape)):
            got = tuple(g.shape) if isinstance(g, Tensor) else type(g).__name__
            raise OpArgumentError(
                f"[PyLayer] {cls.__name__}.backward's gradient {i} is {got}, expected a tensor of shape "
                f"{tuple(t.shape)} (the input's)"
            )
    return res


#: the record autograd keeps for a PyLayer application (not a registered op: no kernel, no
#: decomposition; its gradient is the layer's own backward)
PY_LAYER = OpDef("py_layer", "pylayer", None, _pylayer_grad)


class PyLayer:
    """Define an operation by a ``forward`` and a ``backward``, both static methods taking ``ctx``.

    ``forward(ctx, *args, **kwargs)`` runs without recording a graph and returns a tensor or a
    tuple of them; ``backward(ctx, *grads)`` gets one gradient per output and returns one per
    tensor input of forward (None for an input that takes none). Call it with ``apply``. With
    ``create_graph=True``, backward's own ops are recorded, so a backward written with
    differentiable ops gives higher-order gradients.

    Example:
        >>> import framework as fw
        >>> class Cube(fw.autograd.PyLayer):
        ...     @staticmethod
        ...     def forward(ctx, x):
        ...         ctx.save_for_backward(x)
        ...         return x**3
        ...     @staticmethod
        ...     def backward(ctx, dy):
        ...         (x,) = ctx.saved_tensor()
        ...         return dy * 3 * x**2
        >>> x = fw.to_tensor([1.0, 2.0], stop_gradient=False)
        >>> y = Cube.apply(x)
        >>> y.sum().backward()
        >>> y.tolist(), x.grad.tolist()
        ([1.0, 8.0], [3.0, 12.0])
    """

    @staticmethod
    def forward(ctx: PyLayerContext, *args: Any, **kwargs: Any) -> Any:
        """The operation; override it."""
        raise NotImplementedError("need forward")

    @staticmethod
    def backward(ctx: PyLayerContext, *grads: Tensor) -> Any:
        """The gradients of the tensor inputs from those of the outputs; override it."""
        raise NotImplementedError("need backward")

    @classmethod
    def apply(cls, *args: Any, **kwargs: Any) -> Any:
        """Run ``forward`` and, when an input needs a gradient, record ``backward`` for autograd."""
        ctx = PyLayerContext()
        inputs = [a for a in args if isinstance(a, Tensor)]
        with _ag.no_grad():
            outs = cls.forward(ctx, *args, **kwargs)
        single = isinstance(outs, Tensor)
        seq = [outs] if single else list(outs) if isinstance(outs, (tuple, list)) else None
        if seq is None:
            raise OpArgumentError(
                f"[PyLayer] {cls.__name__}.forward must return a tensor or a tuple of tensors, got {type(outs).__name__}"
            )
        if _ag.is_grad_enabled() and any(not t.stop_gradient for t in inputs):
            seq = [o.detach() if any(o is t for t in inputs) else o for o in seq]  # an input passed through
            diff = [o for o in seq if isinstance(o, Tensor) and id(o) not in ctx._non_differentiable]
            metas = [(o.shape, o.dtype, o.device) for o in diff]
            _ag.record(PY_LAYER, inputs, {}, diff, ctx=(cls, ctx, metas, len(inputs)))
        if single:
            return seq[0]
        return type(outs)(seq) if isinstance(outs, tuple) else seq
