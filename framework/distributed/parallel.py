"""Data parallel training: the same model on every rank, gradients averaged in buckets during
backward, from each parameter's post-accumulate-grad hook."""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np

from adapter_api import OarlockError, OpArgumentError

from .._src import autograd
from .._src import device as _dev
from .._src.autograd import no_grad
from .._src.ops.base import TRACER
from .._src.tensor import Tensor, to_tensor
from .._src.tensor import empty as _empty
from . import collective


class DataParallel:
    """Wrap a layer for data-parallel training over the ranks of ``group``.

    On construction every rank's parameters and buffers are overwritten with rank 0's, so all
    ranks start from the same weights. Then ``loss.backward()`` alone leaves every rank with the
    gradient averaged over the group: each parameter's post-accumulate-grad hook (it runs once
    the parameter's gradient of this backward is complete) marks it ready, and a bucket of
    about ``comm_buffer_size`` MiB (per device and dtype, in reverse parameter order, the
    order backward produces them) is all-reduced (``avg``) as soon as it and every bucket
    before it are ready -- the same buckets in the same order on every rank, overlapping the
    rest of backward where the device's communicator runs asynchronously (NCCL's stream, MPI's
    nonblocking all-reduce on cpu; each gradient ready tests the oldest bucket in flight, and
    every bucket is waited for when backward ends).
    When backward ends the remaining buckets go too, parameters without a gradient taking part
    with zeros, and each ``param.grad`` becomes a view of its bucket. ``opt.step()`` then
    updates identical weights on every rank.

    With equal per-rank batches and a loss that is a mean over the batch, the averaged
    gradient is the gradient of the global batch: N ranks with batch ``b`` follow one process
    with batch ``N*b`` (use :class:`DistributedBatchSampler`).

    Inside :meth:`no_sync` backward only accumulates (gradient accumulation); the first
    backward after it averages the accumulated gradients. :meth:`apply_collective_grads` is
    then a no-op; it averages explicitly where backward did not (a static training step, or
    parameters replaced by other tensors since the hooks were placed).

    With ``OARLOCK_DISTRIBUTED_DEBUG=1`` every ``check_every``-th forward first compares a
    checksum of every parameter across the ranks and raises naming the first that differs
    (ranks that silently drifted apart).

    Attribute access, ``parameters()``, ``state_dict()`` (unprefixed keys), ``train()``... go to
    the wrapped layer, so checkpoints load into a plain model.

    Args:
        layers (Layer): the model.
        strategy: Paddle's argument; not read.
        comm_buffer_size (float): the bucket size in MiB.
        last_comm_buffer_size (float): Paddle's size of the last bucket in MiB; not read.
        find_unused_parameters (bool): False: a parameter without a gradient on some rank
            takes part with zeros and gets the average (a warning names it). True: the ranks
            also sum how many of them gave each parameter a gradient; one that none did keeps
            ``grad`` None, as in a single process.
        group (Group, optional): the ranks to average over; default all of them.
        check_every (int, optional): forwards between the debug checks of the weights;
            default ``OARLOCK_DP_CHECK_EVERY`` or 10 (read only with ``OARLOCK_DISTRIBUTED_DEBUG=1``).

    Example:
        One process (``oarlock launch -n 4 train.py`` runs the same code on four ranks):

        >>> import framework as fw
        >>> model = fw.DataParallel(fw.nn.Linear(2, 1))
        >>> opt = fw.optimizer.SGD(0.1, parameters=model.parameters())
        >>> model(fw.ones([4, 2])).mean().backward()  # the average over the ranks
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
        check_every: int | None = None,
    ) -> None:
        if not hasattr(layers, "parameters"):
            raise OpArgumentError(
                f"[DataParallel] expected a layer with parameters(), got {type(layers).__name__}"
            )
        every = check_every if check_every is not None else _check_every_from_env()
        if every < 1:
            raise OpArgumentError(f"[DataParallel] check_every must be at least 1, got {every}")
        d = self.__dict__
        d["_layers"] = layers
        d["_group"] = collective._group(group)
        d["find_unused_parameters"] = find_unused_parameters
        d["_check_every"] = every
        d["_forwards"] = 0
        d["_reducer"] = _Reducer(self._group, int(comm_buffer_size * 1024 * 1024), find_unused_parameters)
        self.sync_params_buffers()
        self._reducer.attach(self._params())

    # -- delegation ---------------------------------------------------------------------
    def __getattr__(self, name: str) -> Any:
        return getattr(self.__dict__["_layers"], name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._layers, name, value)

    def __call__(self, *inputs: Any, **kwargs: Any) -> Any:
        return self.forward(*inputs, **kwargs)

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        if self._group.nranks > 1:
            if collective._STATE["debug"] and self._forwards % self._check_every == 0:
                self.check_parameters_agree()
            self.__dict__["_forwards"] += 1
            self._reducer.attach(self._params())
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

    def _named_params(self) -> list[tuple[str, Tensor]]:
        if hasattr(self._layers, "named_parameters"):
            return list(self._layers.named_parameters())
        return [(f"parameters()[{i}]", p) for i, p in enumerate(self._layers.parameters())]

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
        """Inside the block backward only accumulates gradients (and :meth:`apply_collective_grads`
        does nothing); the first backward after it averages what was accumulated."""
        self._reducer.sync = False
        try:
            yield
        finally:
            self._reducer.sync = True

    @no_grad()
    def apply_collective_grads(self) -> None:
        """Average every parameter's gradient over the group, unless backward already did.

        Backward averages through the parameters' hooks; this call is then a no-op. It averages
        where backward did not: a training step that ran without the eager tape (a static
        step), or parameters that are other tensors than when the hooks were placed. A
        parameter without a gradient takes part with zeros, so every rank makes the same calls.
        """
        if not self._reducer.sync or self._group.nranks == 1:
            return
        params = self._params()
        self._reducer.attach(params)
        if not self._reducer.averaged(params):
            self._reducer.reduce_all(params)

    sync_gradients = apply_collective_grads

    @no_grad()
    def check_parameters_agree(self) -> None:
        """Compare a checksum of every parameter across the ranks; raise naming the first that differs.

        Every rank makes the same call (one all-gather of a few bytes per parameter) and every
        rank raises the same error, so none is left waiting. ``forward`` calls it every
        ``check_every`` steps when ``OARLOCK_DISTRIBUTED_DEBUG=1``.
        """
        named = self._named_params()
        mine = []
        for _, p in named:
            a = p.numpy()
            mine.append(
                [hashlib.blake2b(a.tobytes(), digest_size=8).hexdigest(), float(a.astype("float64").sum())]
            )
        got = [json.loads(b) for b in self._group.host.all_gather_bytes(json.dumps(mine).encode())]
        for i, (name, p) in enumerate(named):
            if any(g[i][0] != got[0][i][0] for g in got):
                ranks = "\n".join(
                    f"  rank {self._group.ranks[r]}: checksum {g[i][0]}, sum {g[i][1]!r}"
                    for r, g in enumerate(got)
                )
                raise OarlockError(
                    f"[DataParallel] the ranks' parameters differ before forward {self._forwards}: the first is "
                    f"'{name}' (shape {list(p.shape)}, {p.dtype}):\n{ranks}\n"
                    "every rank must apply the same update to the same averaged gradients: look for "
                    "rank-dependent updates, a gradient changed after backward, or ranks that skipped a step"
                )


class _Reducer:
    """The gradient buckets of one :class:`DataParallel` and the state of the backward running now."""

    def __init__(self, group: collective.Group, bucket_bytes: int, find_unused: bool) -> None:
        self.group = group
        self.bucket_bytes = bucket_bytes
        self.find_unused = find_unused
        self.sync = True
        self.params: list[Tensor] = []
        self.handles: list[Any] = []
        self.buckets: list[list[Tensor]] = []
        self.bucket_of: dict[int, int] = {}
        #: per backward: ready parameters per bucket, the next bucket to send, what was sent
        self.ready: list[int] = []
        self.next = 0
        self.pass_no = -1  # the backward pass whose gradients are being averaged
        self.sent: list[tuple[list[Tensor], list[Tensor], Any]] = []
        self.finished = 0  # buckets of ``sent`` whose all-reduce finished
        #: id(param) -> the averaged gradient it was given (apply_collective_grads' no-op test)
        self.given: dict[int, Tensor] = {}
        self.warned = False

    def attach(self, params: list[Tensor]) -> None:
        """Hook ``params`` (again, where they are other tensors than last time) and bucket them."""
        if self.group.nranks == 1 or (
            len(params) == len(self.params) and all(p is q for p, q in zip(params, self.params))
        ):
            return
        for h in self.handles:
            h.remove()
        self.params = params
        self.handles = [
            p.register_post_accumulate_grad_hook(self._on_grad) for p in params if p._node is None
        ]
        self.buckets = _buckets(params, self.bucket_bytes)
        self.bucket_of = {id(p): b for b, bucket in enumerate(self.buckets) for p in bucket}

    def averaged(self, params: list[Tensor]) -> bool:
        """Whether the last backward averaged these gradients (and nothing replaced them since)."""
        return any(id(p) in self.given for p in params) and all(
            p.grad is None or self.given.get(id(p)) is p.grad for p in params
        )

    # -- during backward ----------------------------------------------------------------
    def _on_grad(self, p: Tensor) -> None:
        if not self.sync or TRACER.get() is not None:
            return
        if self.pass_no != autograd.current_pass():
            self.pass_no = autograd.current_pass()
            self.ready = [0] * len(self.buckets)
            self.next = 0
            self.sent = []
            self.finished = 0
            self.given = {}
            autograd.queue_callback(self._finish)
        b = self.bucket_of.get(id(p))
        if b is None:
            return
        self.ready[b] += 1
        with no_grad():
            while self.next < len(self.buckets) and self.ready[self.next] == len(self.buckets[self.next]):
                self._send(self.next)
                self.next += 1
        self._progress()

    def _progress(self) -> None:
        """Let the buckets in flight progress: MPI moves data only inside its calls, so each
        gradient ready tests the oldest unfinished bucket (one MPI_Test) while backward goes on."""
        while self.finished < len(self.sent):
            task = self.sent[self.finished][2]
            if task is not None and not task.is_completed():
                return
            self.finished += 1

    def _send(self, b: int) -> None:
        bucket = self.buckets[b]
        flat, views = _pack(bucket)
        task = collective.all_reduce(flat, op="avg", group=self.group, sync_op=False)
        self.sent.append((bucket, views, task))

    def _finish(self) -> None:
        with no_grad():
            while self.next < len(self.buckets):
                self._send(self.next)
                self.next += 1
            used = None
            if self.find_unused:  # how many ranks gave each parameter a gradient
                used = to_tensor(
                    np.array([p.grad is not None for p in self.params], np.int32),
                    device=self.params[0].device,
                )
                collective.all_reduce(used, op="sum", group=self.group)
            self._give(used)

    def _give(self, used: Tensor | None) -> None:
        unused = [p for p in self.params if p.grad is None]
        counts = dict(zip(map(id, self.params), used.numpy().tolist())) if used is not None else None
        for bucket, views, task in self.sent:
            if task is not None:
                task.wait()
            for p, v in zip(bucket, views):
                if counts is not None and counts[id(p)] == 0:
                    continue  # no rank gave it a gradient: None, as in one process
                p.grad = v
                self.given[id(p)] = v
        self.sent = []
        if unused and counts is None and not self.warned:
            self.warned = True
            warnings.warn(
                f"[DataParallel] {len(unused)} parameter(s) got no gradient in this backward on rank "
                f"{self.group.rank} (shapes {[list(p.shape) for p in unused[:4]]}); they took part in the "
                "average with zeros. Pass find_unused_parameters=True to keep grad None where no rank "
                "gave one",
                stacklevel=2,
            )

    # -- without hooks ------------------------------------------------------------------
    def reduce_all(self, params: list[Tensor]) -> None:
        self.given = {}
        for bucket in _buckets(params, self.bucket_bytes):
            flat, views = _pack(bucket)
            collective.all_reduce(flat, op="avg", group=self.group)
            for p, v in zip(bucket, views):
                p.grad = v
                self.given[id(p)] = v


def _check_every_from_env() -> int:
    raw = os.environ.get("OARLOCK_DP_CHECK_EVERY", "").strip()
    if not raw:
        return 10
    try:
        return int(raw)
    except ValueError:
        raise OpArgumentError(
            f"[DataParallel] OARLOCK_DP_CHECK_EVERY must be a whole number of forwards, got {raw!r}"
        ) from None


def _buckets(params: list[Tensor], bucket_bytes: int) -> list[list[Tensor]]:
    """Parameters in buckets of about ``bucket_bytes`` per (device, dtype), in reverse order
    (the order backward completes them); the same on every rank."""
    buckets: list[list[Tensor]] = []
    open_: dict[tuple[str, str], tuple[list[Tensor], list[int]]] = {}
    for p in reversed(params):
        key = (str(p.device), p.dtype.name)
        cur = open_.get(key)
        nbytes = math.prod(p.shape) * p.dtype.itemsize
        if cur is None or (cur[1][0] + nbytes > bucket_bytes and cur[0]):
            cur = open_[key] = ([], [0])
            buckets.append(cur[0])
        cur[0].append(p)
        cur[1][0] += nbytes
    return buckets


def _pack(bucket: list[Tensor]) -> tuple[Tensor, list[Tensor]]:
    """One flat buffer holding the bucket's gradients (zeros for a parameter without one), and
    a view of it shaped like each parameter."""
    first = bucket[0]
    flat = _empty((sum(math.prod(p.shape) for p in bucket),), first.dtype, first.device)
    off = 0
    views = []
    for p in bucket:
        view = Tensor._make(
            flat._block, flat._offset + off * p.dtype.itemsize, tuple(p.shape), p.dtype, p.device
        )
        if p.grad is None:
            _zero(view)
        else:
            _copy_into(view, p.grad)
        views.append(view)
        off += math.prod(p.shape)
    return flat, views


def _copy_into(dst: Tensor, src: Tensor) -> None:
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
    t = _dev.device_type(dst.device.type)
    if dst.nbytes:
        t.runtime.memset(
            dst.device.index, dst._block.handle, dst._offset, 0, dst.nbytes, t.stream(dst.device.index)
        )
