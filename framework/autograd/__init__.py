"""``fw.autograd`` (Paddle's ``paddle.autograd``): ``PyLayer``, ``backward``, ``jacobian``, ``hessian``.

Gradients themselves come from ``Tensor.backward`` and :func:`framework.grad`; higher-order
gradients from ``fw.grad(..., create_graph=True)``.

>>> import framework as fw
>>> x = fw.to_tensor([2.0], stop_gradient=False)
>>> fw.autograd.backward([(x * x).sum()])
>>> x.grad.tolist()
[4.0]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._src.autograd import enable_grad, no_grad, run_backward
from .._src.tensor import Tensor
from .functional import Hessian, Jacobian, hessian, jacobian
from .py_layer import PyLayer, PyLayerContext

#: Paddle's other name for PyLayer (the same class)
Function = PyLayer

__all__ = [
    "Function",
    "Hessian",
    "Jacobian",
    "PyLayer",
    "PyLayerContext",
    "backward",
    "enable_grad",
    "hessian",
    "jacobian",
    "no_grad",
]


def backward(
    tensors: Tensor | Sequence[Tensor], grad_tensors: Any = None, retain_graph: bool = False
) -> None:
    """Accumulate into ``.grad`` the gradients of several outputs at once (Paddle's ``paddle.autograd.backward``).

    Args:
        tensors (Tensor | list[Tensor]): the outputs.
        grad_tensors (list[Tensor | None], optional): their gradients (ones for a None / 1-element output).
        retain_graph (bool): keep the graph for another pass.

    Example:
        >>> import framework as fw
        >>> x = fw.to_tensor([1.0, 2.0], stop_gradient=False)
        >>> fw.autograd.backward([x * 2, x * x], [fw.ones([2]), fw.ones([2])])
        >>> x.grad.tolist()
        [4.0, 6.0]
    """
    roots = [tensors] if isinstance(tensors, Tensor) else list(tensors)
    grads = [None] * len(roots) if grad_tensors is None else list(grad_tensors)
    if isinstance(grad_tensors, Tensor):
        grads = [grad_tensors]
    run_backward(roots, grads, retain_graph=retain_graph)
