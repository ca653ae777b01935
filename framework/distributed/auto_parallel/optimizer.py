"""``shard_optimizer``: an optimizer over distributed parameters (Paddle's
``dist.shard_optimizer``), with the ZeRO stages ``ShardingStage1`` / ``2`` / ``3``.

The optimizer's update is framework ops on the parameter and its gradient, so on distributed
parameters the states it makes (Adam's moments, momentum's velocity) are distributed too and
lie as the parameter does: a column shard's moments are that column shard. That is the default.

``ShardingStage1(axis, mesh)`` shards the states further over the data-parallel mesh axis
``axis`` (ZeRO stage 1): each rank of the axis keeps the states of one slice of each
parameter (the first dim no other axis shards, :func:`zero_placements`), updates only that
slice of the parameter from the same slice of the gradient, and the slices are all-gathered
into the parameter after the step. The gradients are all-reduced in backward.

``ShardingStage2(axis, mesh)`` also shards the gradients: a parameter's partial gradient over
``axis`` is reduce-scattered in its bucket during the backward (instead of all-reduced; see
:mod:`.grad_buckets`) and each rank keeps its slice only (``p.grad`` is then None; ``opt.grad_shard(p)`` is the slice, laid out
as the states); several backwards before a step add up in the slices. Under ``dist.to_static``
the traced step's program reduce-scatters each gradient and returns the slice only
(:class:`_TracedGradSlice`).

``ShardingStage3(axis, mesh)`` also shards the parameters: each parameter is laid out
``Shard(d)`` over ``axis`` in place (the same object), so its states and its gradient are
that slice too; an op that needs it whole all-gathers it. ``dist.parallelize`` gathers each
layer's parameters before its forward, drops them after it and gathers them again for its
backward (:mod:`.zero3`); their gradients are reduce-scattered onto the slices in buckets.

The training is the same as with the unsharded optimizer; ``ClipGradByGlobalNorm`` takes
its norm over the sharded gradients (the squares are summed over the ranks).

>>> import numpy as np, framework as fw, framework.distributed as dist
>>> m = dist.ProcessMesh([0], dim_names=["dp"])
>>> w = dist.shard_tensor(fw.nn.Parameter.from_tensor(fw.ones((4, 2))), m, [dist.Replicate()])
>>> opt = dist.shard_optimizer(fw.optim.Adam(parameters=[w]), dist.ShardingStage1("dp", m))
>>> (w * w).sum().backward(); opt.step(); opt.clear_grad()
>>> [type(v).__name__ for v in opt.state_dict().values() if isinstance(v, fw.Tensor)][:2]
['DistTensor', 'DistTensor']
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

from adapter_api import OpArgumentError

from ..._src.autograd import no_grad
from ..._src.tensor import Tensor
from .dtensor import DistTensor, local_region
from .grad_buckets import AFTER_BACKWARD, GradSink
from .mesh import ProcessMesh
from .placement import Placement, Shard
from .reshard import ensure_groups, reshard
from .zero3 import shard_parameter_in_place


def zero_placements(
    shape: tuple[int, ...], mesh: ProcessMesh, placements: list[Placement], axis: int | str
) -> list[Placement]:
    """``placements`` with the first tensor dim no other mesh axis shards (and at least as long
    as mesh axis ``axis`` has ranks) sharded over ``axis``; unchanged when ``axis`` already
    shards or no dim fits."""
    a = mesh.axis(axis)
    out = list(placements)
    if not out[a].is_replicated():
        return out
    taken = {p.dim for p in out if isinstance(p, Shard)}
    k = mesh.shape[a]
    for d, n in enumerate(shape):
        if d not in taken and n >= k:
            out[a] = Shard(d)
            break
    return out


class ShardingStage1:
    """ZeRO stage 1 over mesh axis ``sharding_mesh_dim``: the optimizer states (and the
    update) of each parameter split over that axis (Paddle's ``dist.ShardingStage1``).

    ``__call__(name, param, accumulator)`` is Paddle's ``shard_fn`` signature: the
    accumulator laid out as :meth:`placements` says.

    >>> import framework.distributed as dist
    >>> dist.ShardingStage1("dp").stage
    1
    """

    stage = 1

    def __init__(self, sharding_mesh_dim: int | str, mesh: ProcessMesh | None = None) -> None:
        self.axis = sharding_mesh_dim
        self.mesh = mesh

    def placements(self, param: DistTensor) -> list[Placement]:
        """The param's placements with its first dim no other axis shards (and at least as
        long as the axis has ranks) sharded over the sharding axis."""
        mesh = param.process_mesh
        if self.mesh is not None and self.mesh != mesh:
            raise OpArgumentError(
                f"[{type(self).__name__}] parameter '{param.name}' is on {mesh}, the sharding stage on {self.mesh}"
            )
        return zero_placements(param.shape, mesh, list(param.placements), self.axis)

    def __call__(self, name: str, param: DistTensor, accumulator: DistTensor) -> DistTensor:
        return reshard(
            accumulator, param.process_mesh, self.placements(param), why=f"{type(self).__name__} {name}"
        )


class ShardingStage2(ShardingStage1):
    """ZeRO stage 2 (Paddle's ``dist.ShardingStage2``): the states and the gradients split
    over ``sharding_mesh_dim`` (the gradients reduce-scattered in buckets during backward).

    >>> import framework.distributed as dist
    >>> dist.ShardingStage2("dp").stage
    2
    """

    stage = 2


class ShardingStage3(ShardingStage1):
    """ZeRO stage 3 (Paddle's ``dist.ShardingStage3``): the parameters too are split over
    ``sharding_mesh_dim`` (laid out ``Shard(d)`` in place); states and gradients follow them.

    >>> import framework.distributed as dist
    >>> dist.ShardingStage3("dp").stage
    3
    """

    stage = 3


class _TracedGradSlice:
    """Stage 2 under ``dist.to_static`` (:mod:`framework.jit.train_step` reads it as the
    parameter's ``_traced_grad_sink``): the traced step's whole gradient of ``p`` is sliced as
    the states lie *in the program* (:meth:`slice`), so the pass ``dist_reduce_scatter`` makes
    the gradient's all-reduce and the slice one reduce-scatter and the program returns only
    this rank's slice; the optimizer keeps it (:meth:`__call__`)."""

    __slots__ = ("opt", "p", "v")

    def __init__(self, opt: _ShardOptimizer, p: DistTensor, v: DistTensor) -> None:
        self.opt, self.p, self.v = weakref.proxy(opt), p, v

    def slice(self, g: Tensor) -> Tensor:
        p = self.p
        d = DistTensor(g, p.process_mesh, p.placements, p.shape, g.dtype, f"the gradient of {p.name}")
        why = f"ShardingStage2 gradient of {p.name}, in the program"
        return reshard(d, p.process_mesh, self.v.placements, why=why)._local

    def __call__(self, part: Tensor) -> None:
        self.opt._keep_slice(self.p, part)


class _ShardOptimizer:
    """The optimizer ``shard_optimizer`` returns for stages 1 and 2: it steps the wrapped
    optimizer on views of the parameters laid out as the states are, then writes them back.
    Under stage 2 it keeps the gradients' slices (see the module)."""

    def __init__(self, optimizer: Any, shard_fn: Any) -> None:
        self._inner = optimizer
        self._shard_fn = shard_fn
        self.stage = getattr(shard_fn, "stage", 1)
        self._views: list[tuple[DistTensor, DistTensor]] = []  # (parameter, the view the states follow)
        self._kept: dict[int, Tensor] = {}  # stage 2: id(param) -> this rank's gradient slice
        for group in optimizer.param_groups:
            views = []
            for p in group["params"]:
                if not isinstance(p, DistTensor):
                    raise OpArgumentError(
                        f"[shard_optimizer] parameter '{getattr(p, 'name', None)}' is not distributed; "
                        "lay the model out first (dist.shard_layer or dist.shard_tensor)"
                    )
                v = p
                placements = getattr(shard_fn, "placements", None)
                if placements is not None and placements(p) != p.placements:
                    v = DistTensor(None, p.process_mesh, placements(p), p.shape, p.dtype, p.name)
                    v.optimize_attr = getattr(p, "optimize_attr", None)
                    for attr in ("regularizer", "need_clip"):
                        if hasattr(p, attr):
                            setattr(v, attr, getattr(p, attr))
                self._views.append((p, v))
                views.append(v)
            group["params"] = views
        if self.stage == 2:
            self._sink_gradients()

    def __getattr__(self, name: str) -> Any:  # lr, state_dict, set_state_dict, ...
        return getattr(self._inner, name)

    # -- stage 2: the gradients' slices ---------------------------------------------------
    def _sink_gradients(self) -> None:
        """Each sharded parameter's partial gradient over the sharding axis goes to
        :meth:`_keep` (reduce-scattered) instead of being all-reduced into ``p.grad``."""
        for mesh in {id(p.process_mesh): p.process_mesh for p, _ in self._views}.values():
            ensure_groups(mesh)  # a collective of the world: every rank, the same order
        for p, v in self._views:
            local = p._local_value()
            if v is p or local is None or p.process_mesh.get_dim_size(self._shard_fn.axis) == 1:
                continue  # (one rank on the axis: nothing is partial, the sweep slices)
            a = p.process_mesh.axis(self._shard_fn.axis)
            local._grad_sink = GradSink(
                p.process_mesh.get_group(a),
                v.placements[a].dim,
                lambda part, p=p: self._keep_slice(p, part),
                "ShardingStage2 gradient",
            )
            local._traced_grad_sink = _TracedGradSlice(self, p, v)
        AFTER_BACKWARD.append(weakref.WeakMethod(self._sweep))

    def _keep_slice(self, p: DistTensor, part: Tensor) -> None:
        """Add ``part`` (this rank's slice of ``p``'s gradient) to the kept slice."""
        old = self._kept.get(id(p))
        self._kept[id(p)] = part if old is None else old + part

    def _keep(self, p: DistTensor, v: DistTensor, g: Tensor) -> None:
        """Add this rank's slice of ``g`` (``p``'s whole gradient) to the kept slice."""
        d = DistTensor(g, p.process_mesh, p.placements, p.shape, g.dtype)
        part = reshard(d, p.process_mesh, v.placements, why=f"ShardingStage2 gradient of {p.name}")._local
        self._keep_slice(p, part.clone())  # not a view: the whole gradient is freed

    @no_grad()
    def _sweep(self) -> None:
        """After a backward: what reached ``p.grad`` whole (a gradient not partial over the
        sharding axis) moves into the slice, and ``p.grad`` is dropped."""
        for p, v in self._views:
            local = p._local_value()
            if v is p or local is None or local.grad is None:
                continue
            self._keep(p, v, local.grad.detach())
            local.grad = None

    def grad_shard(self, p: DistTensor) -> DistTensor | None:
        """Stage 2: this rank's slice of ``p``'s gradient, laid out as its states (None before
        a backward; other stages: ``p.grad``)."""
        if self.stage != 2:
            return p.grad
        for q, v in self._views:
            if q is p and v is not p:
                g = self._kept.get(id(p))
                return None if g is None else DistTensor(g, p.process_mesh, v.placements, p.shape, g.dtype)
        return p.grad

    def local_grad(self, p: DistTensor) -> Tensor | None:
        """This rank's local gradient of ``p`` as the step uses it (stage 2: the kept slice)."""
        if self.stage == 2 and id(p) in self._kept:
            return self._kept[id(p)]
        local = p._local_value()
        return None if local is None else local.grad

    def set_local_grad(self, p: DistTensor, g: Tensor) -> None:
        if self.stage == 2 and any(q is p and v is not p for q, v in self._views):
            self._kept[id(p)] = g
        else:
            p._local_value().grad = g

    def local_grad_shape(self, p: DistTensor) -> list[int]:
        """The shape of :meth:`local_grad` on this rank."""
        for q, v in self._views:
            if q is p and v is not p and self.stage == 2:
                region = local_region(p.shape, p.process_mesh, v.placements, p.coordinate())
                return [e - b for b, e in region]
        return list(p._local_value().shape)

    @no_grad()
    def step(self) -> None:
        """Slice each parameter and its gradient as its states lie, step, gather back."""
        if self.stage == 2:
            self._sweep()
        moved = []
        for p, v in self._views:
            if v is p or p._local_value() is None:  # not sharded, or another pipeline stage's
                continue
            if self.stage == 2:
                kept = self._kept.get(id(p))
                if kept is None:
                    continue
            else:
                g = p.grad
                if g is None:
                    continue
            r = reshard(p.detach(), p.process_mesh, v.placements, why="ShardingStage slice")
            v._local, v.device = r._local, r.device  # the update writes it
            v._local.stop_gradient = False
            if self.stage == 2:
                v._local.grad = kept
            else:
                v._local.grad = reshard(g, p.process_mesh, v.placements, why="ShardingStage1 slice")._local
            moved.append((p, v))
        try:
            self._inner.step()
        finally:
            for p, v in moved:
                whole = reshard(v.detach(), p.process_mesh, p.placements, why="ShardingStage gather")
                p._local_value().set_value(whole._local)
                v._local = None  # the slice is not kept between steps

    def clear_grad(self, set_to_zero: bool = False) -> None:
        self._kept.clear()
        for p, _ in self._views:
            p.clear_grad(set_to_zero)

    clear_gradients = clear_grad
    zero_grad = clear_grad


def shard_optimizer(optimizer: Any, shard_fn: Callable[..., Any] | None = None) -> Any:
    """Paddle's ``dist.shard_optimizer``: ``optimizer`` over distributed parameters. Without
    ``shard_fn`` the states follow the parameters' placements (what the optimizer does on
    distributed parameters anyway: the optimizer comes back as it is); with
    ``ShardingStage1(axis)`` they are split over ``axis`` too, ``ShardingStage2`` splits the
    gradients as well, ``ShardingStage3`` the parameters (in place; the optimizer comes back
    as it is, its states following them). See the module docstring."""
    if not hasattr(optimizer, "param_groups") or not hasattr(optimizer, "_update"):
        raise OpArgumentError(
            f"[shard_optimizer] expected a framework optimizer (fw.optim.*), got {type(optimizer).__name__}"
        )
    if hasattr(optimizer, "fused"):  # the update runs eagerly: its ops meet the interceptor
        optimizer.fused = False
    if shard_fn is not None and not hasattr(shard_fn, "placements"):
        raise OpArgumentError(
            "[shard_optimizer] shard_fn must be a sharding stage (dist.ShardingStage1, 2 or 3), "
            f"got {shard_fn!r}"
        )
    for p in optimizer._all_params():
        if not isinstance(p, DistTensor):
            raise OpArgumentError(
                f"[shard_optimizer] parameter '{getattr(p, 'name', None)}' is not distributed; "
                "lay the model out first (dist.shard_layer or dist.shard_tensor)"
            )
    if shard_fn is None:
        return optimizer
    if getattr(shard_fn, "stage", 1) == 3:
        for p in optimizer._all_params():
            shard_parameter_in_place(p, shard_fn.placements(p), f"ShardingStage3 {p.name}")
        return optimizer
    return _ShardOptimizer(optimizer, shard_fn)


__all__ = [
    "ShardingStage1",
    "ShardingStage2",
    "ShardingStage3",
    "shard_optimizer",
    "zero_placements",
]
