"""``jacobian`` and ``hessian`` (Paddle's ``paddle.autograd.jacobian`` / ``hessian``), built on ``fw.grad``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from adapter_api import OpArgumentError

from .._src.autograd import grad
from .._src.ops import creation as _C
from .._src.ops import shape as S
from .._src.tensor import Tensor


class Jacobian:
    """The Jacobian of ``ys`` with respect to ``xs``, indexed like a tensor (``J[:]``, ``J[0, :]``).

    Without a batch axis, ``ys`` and ``xs`` are 0-d or 1-d and ``J`` has shape
    ``[ys.size, xs.size]`` (a 0-d one's axis left out); with ``batch_axis=0`` they are (B,) or
    (B, n) and ``J`` has shape ``[B, ys.size, xs.size]``. The rows are computed with
    ``create_graph=True`` on first use, so ``J`` is itself differentiable.

    Example:
        >>> import framework as fw
        >>> x = fw.to_tensor([1.0, 2.0], stop_gradient=False)
        >>> J = fw.autograd.jacobian(x * x, x)
        >>> J.shape, J[:].tolist()
        ([2, 2], [[2.0, 0.0], [0.0, 4.0]])
    """

    def __init__(
        self, ys: Tensor, xs: Tensor, batch_axis: int | None = None, _gradient: bool = False
    ) -> None:
        if batch_axis not in (None, 0):
            raise OpArgumentError(f"[jacobian] batch_axis must be None or 0, got {batch_axis!r}")
        lim = 1 if batch_axis is None else 2
        for what, t in (("ys", ys), ("xs", xs)):
            if not isinstance(t, Tensor):
                raise OpArgumentError(f"[jacobian] {what} must be a Tensor, got {type(t).__name__}")
            if t.ndim > lim or (batch_axis == 0 and t.ndim == 0):
                want = "0-d or 1-d" if batch_axis is None else "1-d or 2-d (batch first)"
                raise OpArgumentError(
                    f"[jacobian] {what} must be {want} with batch_axis={batch_axis}, got shape {t.shape}"
                )
        if batch_axis == 0 and ys.shape[0] != xs.shape[0]:
            raise OpArgumentError(
                f"[jacobian] ys and xs must have the same batch size, got {ys.shape} and {xs.shape}"
            )
        self._ys, self._xs, self._batched = ys, xs, batch_axis == 0
        # ys is a gradient taken with create_graph: without a graph it is a constant of xs
        # (a linear function's), whose Jacobian is 0; a user's ys without one raises in grad
        self._constant = _gradient and ys.stop_gradient
        b = 1 if self._batched else 0
        self.shape = ([ys.shape[0]] if self._batched else []) + list(ys.shape[b:]) + list(xs.shape[b:])
        self._value: Tensor | None = None

    def _row(self, y: Tensor) -> Tensor:
        if self._constant:
            return _C.zeros(self._xs.shape, dtype=self._xs.dtype, device=self._xs.device)
        (g,) = grad(y, self._xs, retain_graph=True, create_graph=True, allow_unused=True)
        return _C.zeros(self._xs.shape, dtype=self._xs.dtype, device=self._xs.device) if g is None else g

    def _full(self) -> Tensor:
        if self._value is None:
            ys, b = self._ys, self._batched
            if ys.ndim == b:  # one output per sample
                self._value = self._row(ys.sum() if b else ys)
            else:
                rows = [self._row(ys[:, i].sum() if b else ys[i]) for i in range(ys.shape[-1])]
                self._value = S.stack(rows, axis=1 if b else 0)
        return self._value

    def __getitem__(self, index: Any) -> Tensor:
        return self._full()[index]

    def __repr__(self) -> str:
        return f"Jacobian(shape={self.shape})"


class Hessian(Jacobian):
    """The Hessian of a scalar ``ys`` (per sample with ``batch_axis=0``) with respect to ``xs``.

    Example:
        >>> import framework as fw
        >>> x = fw.to_tensor([1.0, 2.0], stop_gradient=False)
        >>> fw.autograd.hessian((x**3).sum(), x)[:].tolist()
        [[6.0, 0.0], [0.0, 12.0]]
    """

    def __init__(self, ys: Tensor, xs: Tensor, batch_axis: int | None = None) -> None:
        if not isinstance(ys, Tensor) or ys.ndim != (0 if batch_axis is None else 1):
            raise OpArgumentError(
                f"[hessian] ys must be a scalar (a (B,) tensor with batch_axis=0), got "
                f"{getattr(ys, 'shape', type(ys).__name__)}"
            )
        (g,) = grad(ys.sum() if batch_axis == 0 else ys, xs, create_graph=True, allow_unused=True)
        if g is None:
            g = _C.zeros(xs.shape, dtype=xs.dtype, device=xs.device)
        super().__init__(g, xs, batch_axis, _gradient=True)


def _each(ys: Any, xs: Any, make: Any, batch_axis: int | None) -> Any:
    ys_seq, xs_seq = isinstance(ys, Sequence), isinstance(xs, Sequence)
    if ys_seq and xs_seq:
        return tuple(tuple(make(y, x, batch_axis) for x in xs) for y in ys)
    if ys_seq:
        return tuple(make(y, xs, batch_axis) for y in ys)
    if xs_seq:
        return tuple(make(ys, x, batch_axis) for x in xs)
    return make(ys, xs, batch_axis)


def jacobian(ys: Any, xs: Any, batch_axis: int | None = None) -> Any:
    """The Jacobian of ``ys`` with respect to ``xs`` (:class:`Jacobian`; tuples of them for tuples).

    Args:
        ys (Tensor | tuple[Tensor]): outputs, 0-d or 1-d (with ``batch_axis=0``: (B,) or (B, m)).
        xs (Tensor | tuple[Tensor]): inputs, with ``stop_gradient=False``.
        batch_axis (int, optional): None, or 0 for a batch of independent samples.

    Returns:
        Jacobian | tuple: ``J[:]`` is the matrix as a tensor.

    Example:
        >>> import framework as fw
        >>> x = fw.to_tensor([[1.0, 2.0], [3.0, 4.0]], stop_gradient=False)
        >>> fw.autograd.jacobian(x**2, x, batch_axis=0)[:].tolist()
        [[[2.0, 0.0], [0.0, 4.0]], [[6.0, 0.0], [0.0, 8.0]]]
    """
    return _each(ys, xs, Jacobian, batch_axis)


def hessian(ys: Tensor, xs: Any, batch_axis: int | None = None) -> Any:
    """The Hessian of a scalar ``ys`` with respect to ``xs`` (:class:`Hessian`; a tuple of tuples
    for a tuple of ``xs``).

    Args:
        ys (Tensor): a 0-d output (with ``batch_axis=0``: one per sample, shape (B,)).
        xs (Tensor | tuple[Tensor]): inputs, with ``stop_gradient=False``.
        batch_axis (int, optional): None, or 0.

    Returns:
        Hessian | tuple: ``H[:]`` is the matrix as a tensor.

    Example:
        >>> import framework as fw
        >>> x = fw.to_tensor([1.0, 3.0], stop_gradient=False)
        >>> fw.autograd.hessian((x[0] * x[1]) ** 2, x)[:].tolist()
        [[18.0, 12.0], [12.0, 2.0]]
    """
    if isinstance(xs, Sequence):
        gs = grad(ys.sum() if batch_axis == 0 else ys, list(xs), create_graph=True, allow_unused=True)
        gs = [_C.zeros(x.shape, dtype=x.dtype, device=x.device) if g is None else g for g, x in zip(gs, xs)]
        return tuple(tuple(Jacobian(g, x, batch_axis, _gradient=True) for x in xs) for g in gs)
    return Hessian(ys, xs, batch_axis)
