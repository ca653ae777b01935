"""Weight-decay regularizers (Paddle's ``paddle.regularizer``): L2Decay and L1Decay.

Pass one as an optimizer's ``weight_decay=`` (every parameter) or as ``ParamAttr(regularizer=)``
(one parameter; it then replaces the optimizer's, as in Paddle). Every optimizer adds the
regularizer's term to the gradient after gradient clipping and before its update.

>>> import framework as fw
>>> w = fw.nn.Parameter.from_tensor(fw.to_tensor([1.0, -2.0]))
>>> opt = fw.optimizer.SGD(learning_rate=0.1, parameters=[w], weight_decay=fw.regularizer.L1Decay(0.5))
>>> (w * 0.0).sum().backward(); opt.step()
>>> [round(v, 6) for v in w.tolist()]  # w - 0.1 * 0.5 * sign(w)
[0.95, -1.95]
"""

from __future__ import annotations

from ._src.ops import math as M
from ._src.tensor import Tensor

__all__ = ["L1Decay", "L2Decay", "WeightDecayRegularizer"]


class WeightDecayRegularizer:
    """Base of the regularizers: ``coeff`` and the term :meth:`__call__` adds to a gradient.

    Example:
        >>> import framework as fw
        >>> isinstance(fw.regularizer.L2Decay(1e-4), fw.regularizer.WeightDecayRegularizer)
        True
    """

    def __init__(self, coeff: float = 0.0) -> None:
        self.coeff = float(coeff)

    def term(self, param: Tensor) -> Tensor:
        """The regularization gradient of ``param`` (what is added to its gradient)."""
        raise NotImplementedError("need term")

    def __call__(self, param: Tensor, grad: Tensor) -> Tensor:
        """``grad`` plus this regularizer's term for ``param``."""
        return grad + M.cast(self.term(param), grad.dtype) if self.coeff else grad

    def __repr__(self) -> str:
        return f"{type(self).__name__}, coeff={self.coeff:f}"


class L2Decay(WeightDecayRegularizer):
    """L2 weight decay: adds ``coeff * param`` to the gradient (loss ``coeff/2 * ||param||^2``).

    Example:
        >>> import framework as fw
        >>> w = fw.nn.Parameter.from_tensor(fw.to_tensor([1.0, -2.0]))
        >>> opt = fw.optimizer.SGD(learning_rate=0.1, parameters=[w], weight_decay=fw.regularizer.L2Decay(0.5))
        >>> (w * 0.0).sum().backward(); opt.step()
        >>> [round(v, 6) for v in w.tolist()]
        [0.95, -1.9]
    """

    def term(self, param: Tensor) -> Tensor:
        return param * self.coeff


class L1Decay(WeightDecayRegularizer):
    """L1 weight decay: adds ``coeff * sign(param)`` to the gradient (loss ``coeff * ||param||_1``).

    Example:
        >>> import framework as fw
        >>> fw.regularizer.L1Decay(0.5)(fw.to_tensor([3.0, -1.0, 0.0]), fw.zeros([3])).tolist()
        [0.5, -0.5, 0.0]
    """

    def term(self, param: Tensor) -> Tensor:
        return M.sign(param) * self.coeff
