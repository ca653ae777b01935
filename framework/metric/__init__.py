"""``fw.metric``: :class:`Metric` and :class:`Accuracy` (Paddle's ``paddle.metric``).

>>> import framework as fw
>>> m = fw.metric.Accuracy()
>>> pred = fw.to_tensor([[0.1, 0.9], [0.8, 0.2]])
>>> m.update(m.compute(pred, fw.to_tensor([[1], [1]])))
0.5
>>> m.accumulate()
0.5
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adapter_api import OpArgumentError

from .._src.tensor import Tensor, to_tensor


class Metric:
    """Base class: ``compute`` (optional, on tensors, per batch), ``update`` (accumulate),
    ``accumulate`` (the value so far), ``reset`` and ``name``."""

    def reset(self) -> None:
        raise NotImplementedError("need reset")

    def update(self, *args: Any) -> Any:
        raise NotImplementedError("need update")

    def accumulate(self) -> Any:
        raise NotImplementedError("need accumulate")

    def name(self) -> Any:
        raise NotImplementedError("need name")

    def compute(self, *args: Any) -> Any:
        return args


def _np(x: Any) -> np.ndarray:
    return x.numpy() if isinstance(x, Tensor) else np.asarray(x)


class Accuracy(Metric):
    """Top-k classification accuracy for each k in ``topk``."""

    def __init__(self, topk: Any = (1,), name: str | None = None) -> None:
        self.topk = (topk,) if isinstance(topk, int) else tuple(int(k) for k in topk)
        if not self.topk or min(self.topk) < 1:
            raise OpArgumentError(f"[Accuracy] topk must be positive ints, got {topk!r}")
        self.maxk = max(self.topk)
        self._name = name or "acc"
        self.reset()

    def compute(self, pred: Any, label: Any, *args: Any) -> np.ndarray:
        """(N, maxk) 0/1 matrix: whether the i-th highest score of each row is its label.
        ``label`` holds class ids (N,) or (N, 1), or one-hot rows (N, C)."""
        p, y = _np(pred), _np(label)
        if p.ndim < 1 or p.shape[-1] < self.maxk:
            raise OpArgumentError(
                f"[Accuracy] pred must have at least topk={self.maxk} scores per row, got shape {p.shape}"
            )
        p = p.reshape(-1, p.shape[-1])
        if y.ndim >= 1 and y.shape[-1] == p.shape[-1] and p.shape[-1] > 1 and y.size == p.size:
            y = y.reshape(-1, p.shape[-1]).argmax(-1)
        y = y.reshape(-1)
        if y.shape[0] != p.shape[0]:
            raise OpArgumentError(f"[Accuracy] pred has {p.shape[0]} rows but label has {y.shape[0]} values")
        order = np.argsort(-p.astype(np.float64), axis=-1, kind="stable")[:, : self.maxk]
        return (order == y[:, None]).astype(np.float32)

    def update(self, correct: Any, *args: Any) -> Any:
        """Add a batch's ``compute`` result; returns the batch's accuracy (a list for several k)."""
        c = _np(correct)
        n = c.shape[0]
        accs = []
        for i, k in enumerate(self.topk):
            hits = float(c[:, :k].sum())
            self.total[i] += hits
            self.count[i] += n
            accs.append(hits / n if n else 0.0)
        return accs[0] if len(accs) == 1 else accs

    def reset(self) -> None:
        self.total = [0.0] * len(self.topk)
        self.count = [0] * len(self.topk)

    def accumulate(self) -> Any:
        res = [t / c if c else 0.0 for t, c in zip(self.total, self.count)]
        return res[0] if len(res) == 1 else res

    def name(self) -> list[str]:
        return [self._name] if len(self.topk) == 1 else [f"{self._name}_top{k}" for k in self.topk]


def accuracy(
    input: Tensor, label: Tensor, k: int = 1, correct: Any = None, total: Any = None, name: str | None = None
) -> Tensor:
    """Top-``k`` accuracy of one batch (Paddle's ``paddle.metric.accuracy``), as a 0-d float32 tensor.

    Args:
        input (Tensor): ``[N, C]`` scores.
        label (Tensor): ``[N, 1]`` (or ``[N]``) class ids.
        k (int): a row counts as right when its label is among its ``k`` highest scores.
        correct, total: Paddle's output tensors for static graphs; not supported.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: the fraction of right rows, on ``input``'s device.

    Example:
        >>> import framework as fw
        >>> pred = fw.to_tensor([[0.1, 0.9], [0.8, 0.2]])
        >>> fw.metric.accuracy(pred, fw.to_tensor([[1], [1]]))
        Tensor(shape=[], dtype=float32, device=cpu:0,
               0.5)
    """
    if correct is not None or total is not None:
        raise OpArgumentError("[accuracy] correct= and total= are not supported; use the returned tensor")
    m = Accuracy(k)
    value = m.update(m.compute(input, label))
    return to_tensor(value, dtype="float32", device=input.device if isinstance(input, Tensor) else None)


__all__ = ["Accuracy", "Metric", "accuracy"]
