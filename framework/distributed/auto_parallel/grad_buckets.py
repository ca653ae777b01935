"""The partial gradients of parameters over a data-parallel mesh axis, reduced in buckets while
the backward runs (as :class:`framework.DataParallel` does, from the same tape hook).

An op that reads a parameter replicated over an axis its other inputs are sharded on (the
batch over ``dp``) gives the parameter a gradient that is partial over that axis. The op
reads the parameter through :func:`partial_leaf`: an alias of it (the same storage) whose
gradient is kept apart from the parameter's own, and whose post-accumulate-grad hook (the tape
calls it once every use of the alias in this backward has been differentiated) hands the
complete partial gradient to the axis's :class:`_Buckets`. A bucket of about
:data:`BUCKET_BYTES` (per dtype) goes out as soon as it is full, asynchronously where the
communicator can, while the backward computes the gradients of the layers before; the last
buckets go, and every bucket is waited for and delivered, when that backward pass ends.

Delivery: ``param.grad += the sum over the axis`` (an all-reduce), or, for a parameter with a
gradient sink over the axis (ZeRO stages 2 and 3: ``leaf._grad_sink = GradSink(...)``), only
this rank's slice of the sum along the sink's dim goes to the sink (a reduce-scatter; the
bucket is laid out rank by rank so that one collective serves every parameter in it), started
with the communicator's ``reduce_scatter_async`` (contract 1.3: the cpu plugin's
``MPI_Ireduce_scatter_block``, NCCL's on cuda, host-staged on OpenCL). Where the communicator
has none (a plugin declaring an older contract, or one that leaves the contract's default), the
bucket is all-reduced asynchronously and this rank keeps its part (the same values; twice the
bytes on the wire, but overlapped all the same).

Every rank of an axis runs the same backward, so the hooks fire in the same order there and
the buckets (made in that order) match. Inside :func:`hold` (the pipeline's micro-batches)
the partial gradients are only added up; :func:`flush_grads` sends them.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import weakref
from collections.abc import Callable, Iterator
from typing import Any

from ..._src import autograd
from ..._src.tensor import Tensor
from ..._src.tensor import empty as _empty
from .. import collective
from ..parallel import _copy_into, _zero
from .dtensor import DistTensor
from .mesh import ProcessMesh
from .placement import Partial, Replicate, Shard, chunk
from .reshard import PENDING, _note, backward_across_meshes

#: bytes of one bucket (DataParallel's default, 25 MiB)
BUCKET_BYTES = 25 * 1024 * 1024
_HOLD: contextvars.ContextVar[bool] = contextvars.ContextVar("oarlock_hold_grads", default=False)


class GradSink:
    """Where a parameter's partial gradient over ``group`` goes instead of ``param.grad``:
    this rank's slice of the sum along ``dim`` (chunk ``group.rank`` of ``group.nranks``),
    handed to ``add(slice)``; ``why`` names it in the reshard log; ``done()``, when given, is
    called once the partial gradient of a backward is complete (ZeRO 3 drops the gathered
    whole value then)."""

    __slots__ = ("add", "dim", "done", "group", "why")

    def __init__(
        self,
        group: collective.Group,
        dim: int,
        add: Callable[[Tensor], None],
        why: str,
        done: Callable[[], None] | None = None,
    ) -> None:
        self.group, self.dim, self.add, self.why, self.done = group, dim, add, why, done


# -- the alias an op reads ----------------------------------------------------------------------
class _Alias(Tensor):
    """A leaf that reads its parameter's storage, whichever block the parameter holds now (an
    optimizer's update may give it a new one: the alias must not keep the old one alive)."""

    __slots__ = ()

    @property
    def _block(self) -> Any:  # type: ignore[override]
        return self._of()._block

    @_block.setter
    def _block(self, v: Any) -> None:
        pass  # (Tensor._make's first write: the parameter's storage is read instead)

    @property
    def _offset(self) -> int:  # type: ignore[override]
        return self._of()._offset

    @_offset.setter
    def _offset(self, v: int) -> None:
        pass

    @property
    def _nv(self) -> Any:  # type: ignore[override]
        return self._of()._nv

    @_nv.setter
    def _nv(self, v: Any) -> None:
        pass


#: (id(param), id(group)) -> (weak param, alias, mesh, axis)
_ALIASES: dict[tuple[int, int], tuple[Any, Tensor, ProcessMesh, int]] = {}


def partial_leaf(t: Tensor, group: collective.Group, mesh: ProcessMesh, axis: int) -> Tensor:
    """What an op reads for parameter ``t`` whose gradient there is partial over ``group``
    (mesh axis ``axis``): an alias of ``t`` (its storage, its shape), a leaf whose gradient
    goes to the bucket of ``group`` once complete (see the module); one per parameter and
    group, so that all its uses in one backward add up before the hook."""
    key = (id(t), id(group))
    got = _ALIASES.get(key)
    if got is not None and got[0]() is t and got[1].shape == t.shape:
        return got[1]
    ref = weakref.ref(t)
    q = object.__new__(_Alias)
    q._of = ref
    q.shape, q.dtype, q.device, q._node, q.stop_gradient = t.shape, t.dtype, t.device, None, False
    q._partial_of = group
    q.register_post_accumulate_grad_hook(lambda q: _complete(ref, q, group))
    if got is None:
        weakref.finalize(t, _ALIASES.pop, key, None)
    _ALIASES[key] = (ref, q, mesh, axis)
    return q


def is_partial_leaf(t: Tensor) -> bool:
    """Whether ``t`` is an alias :func:`partial_leaf` made."""
    return getattr(t, "_partial_of", None) is not None


def _complete(ref: Any, q: Tensor, group: collective.Group) -> None:
    g, q.grad = q.grad, None
    t = ref()
    if t is None or g is None:
        return
    mesh, axis = _ALIASES[(id(t), id(group))][2:]
    buckets = _BUCKETS.get(group)
    if buckets is None:
        buckets = _BUCKETS[group] = _Buckets(group, mesh, axis)
    buckets.add(t, g)
    sink = getattr(t, "_grad_sink", None)
    if isinstance(sink, GradSink) and sink.group is group and sink.done is not None:
        sink.done()


# -- the buckets of one group -------------------------------------------------------------------
_BUCKETS: dict[Any, _Buckets] = {}


class _Buckets:
    """The open buckets of one group (per dtype and destination), the ones in flight, and the
    partial gradients held (inside :func:`hold`)."""

    def __init__(self, group: collective.Group, mesh: ProcessMesh, axis: int) -> None:
        self.group, self.mesh, self.axis = group, mesh, axis
        self.k, self.c = group.nranks, group.rank
        self.pass_no = -1
        self.open: dict[tuple[Any, str], tuple[list[tuple[Tensor, Tensor]], list[int]]] = {}
        self.sent: list[tuple[str, list[tuple[Tensor, Tensor]], Tensor, Any, int]] = []
        self.finished = 0
        self.held: dict[int, tuple[Tensor, Tensor]] = {}

    def add(self, t: Tensor, g: Tensor) -> None:
        """From the hook: parameter ``t``'s partial gradient ``g`` of this backward is complete."""
        if _HOLD.get():
            old = self.held.get(id(t))
            self.held[id(t)] = (t, g if old is None else old[1] + g)
            return
        now = autograd.current_pass()
        if now != self.pass_no:
            self.pass_no = now
            autograd.queue_callback(self.finish)
        self._put(t, g)

    def _put(self, t: Tensor, g: Tensor) -> None:
        sink = getattr(t, "_grad_sink", None)
        kind = sink.why if isinstance(sink, GradSink) and sink.group is self.group else ""
        key = (g.dtype, kind)
        items, size = self.open.setdefault(key, ([], [0]))
        items.append((t, g.detach()))
        size[0] += g.nbytes
        if size[0] >= BUCKET_BYTES:
            del self.open[key]
            self._send(kind, items)
        self._progress()

    def _progress(self) -> None:
        """Let the buckets in flight progress (MPI moves data only inside its calls)."""
        while self.finished < len(self.sent):
            task = self.sent[self.finished][3]
            if task is not None and not task.is_completed():
                return
            self.finished += 1

    def _send(self, kind: str, items: list[tuple[Tensor, Tensor]]) -> None:
        """Pack the bucket's gradients into one buffer (rank by rank for a reduce-scatter: chunk
        r of every gradient, padded to the longest segment) and start its collective. What is
        kept until :meth:`finish` is each parameter and its gradient's shape (not the gradient)."""
        nbytes = sum(g.nbytes for _, g in items)
        names = ", ".join(str(getattr(t, "name", None) or list(t.shape)) for t, _ in items[:4])
        what = f"bucket of {len(items)} gradient(s) ({names}{', ...' if len(items) > 4 else ''})"
        shapes = [(t, list(g.shape)) for t, g in items]
        first = items[0][1]
        with autograd.no_grad():
            if not kind:
                flat = _empty((sum(g.numel() for _, g in items),), first.dtype, first.device)
                off = 0
                for _, g in items:
                    _copy_into(_view(flat, off, (g.numel(),)), g)
                    off += g.numel()
                task = collective.all_reduce(flat, group=self.group, sync_op=False)
                _note(
                    what, self.mesh, self.axis, Partial(), Replicate(), "all_reduce(sum)", nbytes, "backward"
                )
                self.sent.append((kind, shapes, flat, task, 0))
                return
            seg = max(
                sum(_chunk_numel(g.shape, t._grad_sink.dim, self.k, r) for t, g in items)
                for r in range(self.k)
            )
            flat = _empty((self.k * seg,), first.dtype, first.device)
            for r in range(self.k):
                off = r * seg
                for t, g in items:
                    piece = _chunk_of(g, t._grad_sink.dim, self.k, r)
                    _copy_into(_view(flat, off, (piece.numel(),)), piece)
                    off += piece.numel()
                if off < (r + 1) * seg:
                    _zero(_view(flat, off, ((r + 1) * seg - off,)))
            if collective.has_async_reduce_scatter(self.group, flat.device):
                out = _empty((seg,), flat.dtype, flat.device)
                task = collective.reduce_scatter(out, flat, group=self.group, sync_op=False)
                how, start = "reduce_scatter(sum)", 0
            else:  # asynchronous all the same: the whole sum, of which this rank keeps its part
                task = collective.all_reduce(flat, group=self.group, sync_op=False)
                out, how, start = flat, "reduce_scatter(sum), as an async all_reduce", self.c * seg
            _note(what, self.mesh, self.axis, Partial(), Shard(0), how, nbytes, kind)
            self.sent.append((kind, shapes, out, task, start))

    def finish(self) -> None:
        """Send the open buckets, wait for every one in flight and deliver it: a view of the
        all-reduced buffer into ``param.grad`` (as DataParallel), or a copy of this rank's
        slice to the sink."""
        with autograd.no_grad():
            for key in list(self.open):
                items, _ = self.open.pop(key)
                self._send(key[1], items)
            sent, self.sent, self.finished = self.sent, [], 0
            for kind, shapes, out, task, start in sent:
                if task is not None:
                    task.wait()
                off = start
                for t, shape in shapes:
                    if not kind:
                        part = _view(out, off, tuple(shape))
                        off += part.numel()
                        t.grad = part if t.grad is None else t.grad + part
                        continue
                    sink = t._grad_sink
                    a, b = chunk(shape[sink.dim], self.k, self.c)
                    shape[sink.dim] = b - a
                    part = _view(out, off, tuple(shape))
                    off += part.numel()
                    sink.add(part.clone())  # (the buffer is freed)

    def flush(self) -> None:
        """Send what :func:`hold` kept, then finish."""
        held, self.held = list(self.held.values()), {}
        for t, g in held:
            self._put(t, g)
        self.finish()


def _view(flat: Tensor, start: int, shape: tuple[int, ...]) -> Tensor:
    """``shape`` elements of the 1-d ``flat`` from element ``start``, sharing its storage."""
    return Tensor._make(
        flat._block, flat._offset + start * flat.dtype.itemsize, shape, flat.dtype, flat.device
    )


def _chunk_numel(shape: Any, dim: int, k: int, r: int) -> int:
    a, b = chunk(shape[dim], k, r)
    return math.prod(shape) // max(shape[dim], 1) * (b - a)


def _chunk_of(g: Tensor, dim: int, k: int, r: int) -> Tensor:
    """Chunk ``r`` of ``k`` of ``g`` along ``dim``: a view where it is contiguous (dim 0 or
    every dim before it of size 1), else a copy."""
    a, b = chunk(g.shape[dim], k, r)
    if math.prod(g.shape[:dim]) == 1:
        row = math.prod(g.shape[dim + 1 :])
        shape = (*g.shape[:dim], b - a, *g.shape[dim + 1 :])
        return _view(g, a * row, shape)
    return g[tuple(slice(None) for _ in range(dim)) + (slice(a, b),)]


def flush_grads(held: bool = False) -> None:
    """Send and deliver every partial gradient still kept in a bucket, group by group in the
    order the groups were first met (the same on every rank); inside :func:`hold` only with
    ``held=True`` (then what it kept goes too)."""
    if _HOLD.get() and not held:
        return
    for buckets in list(_BUCKETS.values()):
        buckets.flush()


#: callbacks run once a backward across ranks is finished (after the last buckets): ZeRO
#: stage 2 moves what is left of its whole gradients into its shards there (weak references)
AFTER_BACKWARD: list[Any] = []


def _after_backward() -> None:
    flush_grads()
    backward_across_meshes()
    flush_grads()  # the sources' backwards may have kept more
    for ref in list(AFTER_BACKWARD):
        fn = ref()
        if fn is None:
            AFTER_BACKWARD.remove(ref)
        else:
            fn()


DistTensor.across = staticmethod(lambda run: _after_backward() if run else bool(PENDING))


@contextlib.contextmanager
def hold() -> Iterator[None]:
    """Inside: the backwards only add up the partial gradients (per parameter, no collective);
    :func:`flush_grads` sends them (a pipeline's micro-batches reduce once)."""
    token = _HOLD.set(True)
    try:
        yield
    finally:
        _HOLD.reset(token)


__all__ = [
    "AFTER_BACKWARD",
    "BUCKET_BYTES",
    "GradSink",
    "flush_grads",
    "hold",
    "is_partial_leaf",
    "partial_leaf",
]
