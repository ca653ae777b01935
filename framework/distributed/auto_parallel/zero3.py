"""ZeRO stage 3's parameters: laid out ``Shard(d)`` over the data-parallel axis in place, and
gathered whole for one layer at a time.

``dist.parallelize`` (``sharding_level=3``) gathers a layer's parameters before its forward
(:func:`gather_for_forward`) and hands them to :func:`release_after_forward` after it: the
whole values are dropped then (the layer's recorded ops keep the tensors, without storage), and
gathered again when the gradient of the layer's output arrives in backward, just before the
layer's own gradient rules run; once a parameter's gradient is complete (its partial gradient
handed to its bucket) the whole value is dropped again. So a rank holds its shards plus the
whole parameters of about one layer, in forward and in backward.

The gathered value is a leaf of its own whose partial gradient over the axis goes, in
buckets, to a reduce-scatter onto the shard (:class:`.grad_buckets.GradSink`); a gradient that
reaches it whole is sliced onto the shard when the backward ends.
"""

from __future__ import annotations

from typing import Any

from adapter_api import OpArgumentError

from ..._src.autograd import is_grad_enabled, no_grad
from ..._src.ops.base import TRACER
from ..._src.tensor import Tensor
from .dtensor import DistTensor
from .grad_buckets import AFTER_BACKWARD, GradSink
from .placement import Placement, Replicate
from .reshard import reshard


def shard_parameter_in_place(p: DistTensor, placements: list[Placement], why: str) -> None:
    """Lay parameter ``p`` out as ``placements`` on its mesh, the same object (its layer and
    optimizer keep it): its storage becomes this rank's new shard, a trainable leaf."""
    if list(placements) == list(p.placements):
        return
    r = reshard(p.detach(), p.process_mesh, placements, why=why)
    local = p._local_value()
    if local is not None:
        new = type(local).from_tensor(r._local.clone(), trainable=not local.stop_gradient)
        for attr in ("name", "optimize_attr", "regularizer", "need_clip"):
            if hasattr(local, attr):
                setattr(new, attr, getattr(local, attr))
        p._local = new
    p.placements = list(r.placements)


class _Dropped:
    """The storage of a gathered parameter between its layer's forward and its backward: any
    use of it is an error that says so."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __getattr__(self, attr: str) -> Any:
        raise OpArgumentError(
            f"[ShardingStage3] the whole value of parameter '{self.name}' was dropped after its layer's "
            "forward (it is gathered again for the layer's backward); read the parameter through its "
            "layer, or use sharding_level 2 where whole parameters must outlive the forward"
        )


#: bytes of whole gathered parameters held now, and the peak since the last reset
_HELD = {"now": 0, "peak": 0}


def gathered_bytes(reset: bool = False) -> tuple[int, int]:
    """``(now, peak)``: bytes of whole parameters ZeRO stage 3 holds gathered on this rank now,
    and the most it held at once since the last ``reset=True``.

    >>> import framework.distributed.auto_parallel.zero3 as z
    >>> z.gathered_bytes(reset=True)
    (0, 0)
    """
    got = (_HELD["now"], _HELD["peak"])
    if reset:
        _HELD["peak"] = _HELD["now"]
        got = (_HELD["now"], _HELD["now"])
    return got


def _count(n: int) -> None:
    _HELD["now"] += n
    _HELD["peak"] = max(_HELD["peak"], _HELD["now"])


class _Gathered:
    """One gathered parameter of one forward: its leaf, and how to drop and gather it again."""

    __slots__ = ("held", "leaf", "p", "whole")

    def __init__(self, p: DistTensor, leaf: Tensor, whole: list[Placement]) -> None:
        self.p, self.leaf, self.whole, self.held = p, leaf, whole, True
        _count(leaf.nbytes)

    def drop(self) -> None:
        if not self.held:
            return
        self.leaf._block, self.leaf._nv = _Dropped(str(self.p.name)), None  # (its aliases read it)
        self.held = False
        _count(-self.leaf.nbytes)

    @no_grad()
    def gather(self) -> None:
        if self.held:
            return
        p = self.p
        r = reshard(
            p.detach(), p.process_mesh, self.whole, why=f"ShardingStage3 gather {p.name} for backward"
        )
        leaf = self.leaf
        leaf._block, leaf._offset, leaf._nv = r._local._block, r._local._offset, None
        self.held = True
        _count(self.leaf.nbytes)


#: the gathered parameters of forwards whose backward has not run (kept until it ends: a
#: gradient that reaches one whole is moved to its shard then; cleared after every backward)
_GATHERED: list[_Gathered] = []


def gather_for_forward(p: DistTensor, axis: int | str) -> DistTensor:
    """Parameter ``p`` (sharded over mesh axis ``axis``) all-gathered over ``axis`` for a
    forward: a leaf of its own (see the module); under ``no_grad`` just the gathered value."""
    mesh = p.process_mesh
    a = mesh.axis(axis)
    whole = [Replicate() if i == a else q for i, q in enumerate(p.placements)]
    if TRACER.get() is not None:  # dist.to_static: the gather and its backward are in the program
        return reshard(p, mesh, whole, why=f"ShardingStage3 gather {p.name}")
    with no_grad():
        r = reshard(p.detach(), mesh, whole, why=f"ShardingStage3 gather {p.name}")
    local = p._local_value()
    if local is None or local.stop_gradient or not is_grad_enabled():
        return r
    got = r._local  # the leaf shares its storage, not its identity (a detached view would keep
    leaf = Tensor._make(got._block, got._offset, got.shape, got.dtype, got.device)  # it alive)
    leaf.stop_gradient = False

    def add(part: Tensor) -> None:
        own = p._local_value()
        own.grad = part if own.grad is None else own.grad + part

    def into_shard(g: Tensor) -> None:  # a whole gradient: this rank's slice of it
        d = DistTensor(g, mesh, whole, p.shape, g.dtype)
        add(reshard(d, mesh, list(p.placements), why=f"ShardingStage3 gradient of {p.name}")._local.clone())

    record = _Gathered(p, leaf, whole)
    if mesh.shape[a] > 1:  # (one rank on the axis: nothing is partial, the sweep slices)
        leaf._grad_sink = GradSink(
            mesh.get_group(a), p.placements[a].dim, add, "ShardingStage3 gradient", done=record.drop
        )
    leaf._into_shard = into_shard
    leaf._gathered = record
    _GATHERED.append(record)
    return DistTensor(leaf, mesh, whole, p.shape, p.dtype, p.name)


def release_after_forward(gathered: list[DistTensor], out: Any) -> None:
    """After a layer's forward: drop the whole values of its ``gathered`` parameters (from
    :func:`gather_for_forward`), to be gathered again when the gradient of ``out`` (the layer's
    output: a tensor or a tuple, list or dict of them) arrives."""
    records = [g._local._gathered for g in gathered if hasattr(g._local, "_gathered")]
    if not records:
        return
    outs = out.values() if isinstance(out, dict) else out if isinstance(out, (tuple, list)) else [out]
    hooked = False
    for o in outs:
        t = o._local_value() if isinstance(o, DistTensor) else o
        if isinstance(t, Tensor) and not t.stop_gradient:
            t.register_hook(lambda g: _gather_all(records))
            hooked = True
    if hooked:  # (no gradient will come back: the values are dropped with the leaves)
        for r in records:
            r.drop()


def _gather_all(records: list[_Gathered]) -> None:
    for r in records:
        r.gather()


@no_grad()
def _gathered_grads_to_shards() -> None:
    """After a backward: a gathered parameter's gradient that reached it whole (not partial
    over the sharding axis) is sliced onto the shard; the gathered leaves are let go."""
    for rec in _GATHERED:
        leaf = rec.leaf
        if leaf.grad is not None:  # (the slice needs the gradient only, not the whole value)
            leaf._into_shard(leaf.grad.detach())
            leaf.grad = None
        rec.drop()
    _GATHERED.clear()


AFTER_BACKWARD.append(lambda: _gathered_grads_to_shards)  # a module function: never collected


__all__ = ["gather_for_forward", "gathered_bytes", "release_after_forward", "shard_parameter_in_place"]
