"""Data parallel training: the same model on every rank, gradients averaged in buckets."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from typing import Any

from adapter_api import OpArgumentError

from .._src.autograd import no_grad
from .._src.tensor import Tensor
from .._src.tensor import empty as _empty
from . import collective


class DataParallel:
    """Wrap a layer for data-parallel training over the ranks of ``group``.

    On construction every rank's parameters and buffers are overwritten with rank 0's, so all
    ranks start from the same weights. Gradients are averaged **by an explicit step after
    backward** -- :meth:`apply_collective_grads` (also ``sync_gradients``) -- not by hooks:
    Oarlock's tape calls a parameter's hook once per gradient *contribution*, before they are
    summed, so only the end of backward knows a gradient is final. The gradients are packed
    into buckets of about ``comm_buffer_size`` MiB (per device and dtype, in reverse
    parameter order, the order backward produces them); each bucket is one ``all_reduce(avg)``
    and each ``param.grad`` becomes a view of its bucket.

    With equal per-rank batches and a loss that is a mean over the batch, the averaged
    gradient is the gradient of the global batch: N ranks with batch ``b`` follow one process
    with batch ``N*b`` (use :class:`DistributedBatchSampler`).

    Attribute access, ``parameters()``, ``state_dict()`` (unprefixed keys), ``train()``... go to
    the wrapped layer, so checkpoints load into a plain model.

    Args:
        layers (Layer): the model.
        strategy: Paddle's argument; not read.
        comm_buffer_size (float): the bucket size in MiB.
        last_comm_buffer_size (float): Paddle's size of the last bucket in MiB.
        find_unused_parameters (bool): Paddle's argument: allow parameters without a gradient.
        group (Group, optional): the ranks to average over; default all of them.

    Example:
        One process (``oarlock launch -n 4 train.py`` runs the same code on four ranks):

        >>> import framework as fw
        >>> model = fw.DataParallel(fw.nn.Linear(2, 1))
        >>> opt = fw.optimizer.SGD(0.1, parameters=model.parameters())
        >>> model(fw.ones([4, 2])).mean().backward()
        >>> model.apply_collective_grads()  # the average over the ranks
        >>> model.weight.grad.tolist()
        [[1.0], [1.0]]
        >>> opt.step(); opt.clear_grad()
        >>> sorted(model.state_dict())
        ['bias', 'weight']
    """

    def __init__(
        self,
        layers: Any,
        strategy: Any = None,
        comm_buffer_size: float = 25,
        last_comm_buffer_size: float = 1,
        find_unused_parameters: bool = False,
        group: collective.Group | None = None,
    ) -> None:
        if not hasattr(layers, "parameters"):
            raise OpArgumentError(
                f"[DataParallel] expected a layer with parameters(), got {type(layers).__name__}"
            )
        d = self.__dict__
        d["_layers"] = layers
        d["_group"] = collective._group(group)
        d["_bucket_bytes"] = int(comm_buffer_size * 1024 * 1024)
        d["_sync"] = True
        d["find_unused_parameters"] = find_unused_parameters
        self.sync_params_buffers()

    # -- delegation ---------------------------------------------------------------------
    def __getattr__(self, name: str) -> Any:
        return getattr(self.__dict__["_layers"], name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._layers, name, value)

    def __call__(self, *inputs: Any, **kwargs: Any) -> Any:
        return self._layers(*inputs, **kwargs)

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        return self._layers(*inputs, **kwargs)

    def scale_loss(self, loss: Tensor) -> Tensor:
        """Paddle compatibility: the loss is not scaled (gradients are averaged instead)."""
        return loss

    @property
    def group(self) -> collective.Group:
        return self._group

    # -- synchronisation ----------------------------------------------------------------
    def _params(self) -> list[Tensor]:
        return [p for p in self._layers.parameters() if not p.stop_gradient]

    @no_grad()
    def sync_params_buffers(self, src: int = 0) -> None:
        """Broadcast every parameter and buffer from world rank ``src``."""
        if self._group.nranks == 1:
            return
        tensors = list(self._layers.parameters())
        if hasattr(self._layers, "buffers"):
            tensors += list(self._layers.buffers())
        for t in tensors:
            collective.broadcast(t, src=src, group=self._group)

    @contextlib.contextmanager
    def no_sync(self) -> Iterator[None]:
        """Inside the block :meth:`apply_collective_grads` does nothing (gradient accumulation)."""
        self.__dict__["_sync"] = False
        try:
            yield
        finally:
            self.__dict__["_sync"] = True

    def _buckets(self, params: list[Tensor]) -> list[list[Tensor]]:
        buckets: list[list[Tensor]] = []
        open_: dict[tuple[str, str], tuple[list[Tensor], list[int]]] = {}
        for p in reversed(params):
            key = (str(p.device), p.dtype.name)
            cur = open_.get(key)
            nbytes = math.prod(p.shape) * p.dtype.itemsize
            if cur is None or (cur[1][0] + nbytes > self._bucket_bytes and cur[0]):
                cur = open_[key] = ([], [0])
                buckets.append(cur[0])
            cur[0].append(p)
            cur[1][0] += nbytes
        return buckets

    @no_grad()
    def apply_collective_grads(self) -> None:
        """Average every parameter's gradient over the group (call after ``backward``).

        A parameter without a gradient on this rank takes part with zeros, so every rank makes
        the same calls (and it then gets the average of the other ranks' gradients).
        """
        if not self._sync or self._group.nranks == 1:
            return
        for bucket in self._buckets(self._params()):
            first = bucket[0]
            total = sum(math.prod(p.shape) for p in bucket)
            flat = _empty((total,), first.dtype, first.device)
            off = 0
            views = []
            for p in bucket:
                n = math.prod(p.shape)
                view = Tensor._make(
                    flat._block, flat._offset + off * p.dtype.itemsize, tuple(p.shape), p.dtype, p.device
                )
                g = p.grad
                if g is None:
                    _zero(view)
                else:
                    _copy_into(view, g)
                views.append(view)
                off += n
            collective.all_reduce(flat, op="avg", group=self._group)
            for p, v in zip(bucket, views):
                p.grad = v

    sync_gradients = apply_collective_grads


def _copy_into(dst: Tensor, src: Tensor) -> None:
    from .._src import device as _dev

    if src.device != dst.device or src.dtype != dst.dtype:
        src = src.to(dst.device).astype(dst.dtype)
    t = _dev.device_type(dst.device.type)
    if dst.nbytes:
        t.runtime.copy_d2d(
            dst.device.index,
            dst._block.handle,
            dst._offset,
            src._block.handle,
            src._offset,
            dst.nbytes,
            t.stream(dst.device.index),
            True,
        )


def _zero(dst: Tensor) -> None:
    from .._src import device as _dev

    t = _dev.device_type(dst.device.type)
    if dst.nbytes:
        t.runtime.memset(
            dst.device.index, dst._block.handle, dst._offset, 0, dst.nbytes, t.stream(dst.device.index)
        )
