"""``shard_optimizer``: an optimizer over distributed parameters (Paddle's
``dist.shard_optimizer``), with optional ZeRO stage 1 (``ShardingStage1``).

The optimizer's update is framework ops on the parameter and its gradient, so on distributed
parameters the states it makes (Adam's moments, momentum's velocity) are distributed too and
lie as the parameter does: a column shard's moments are that column shard. That is the default.

``ShardingStage1(axis, mesh)`` shards the states further over the data-parallel mesh axis
``axis`` (ZeRO stage 1): each rank of the axis keeps the states of one slice of each
parameter (the first dim no other axis shards), updates only that slice of the parameter
from the same slice of the gradient, and the slices are all-gathered into the parameter
after the step. The gradients are still all-reduced in backward (stage 2 would
reduce-scatter them: not built). The states per rank are divided by the axis size; the
training is the same as with the unsharded optimizer.

>>> import numpy as np, framework as fw, framework.distributed as dist
>>> m = dist.ProcessMesh([0], dim_names=["dp"])
>>> w = dist.shard_tensor(fw.nn.Parameter.from_tensor(fw.ones((4, 2))), m, [dist.Replicate()])
>>> opt = dist.shard_optimizer(fw.optim.Adam(parameters=[w]), dist.ShardingStage1("dp", m))
>>> (w * w).sum().backward(); opt.step(); opt.clear_grad()
>>> [type(v).__name__ for v in opt.state_dict().values() if isinstance(v, fw.Tensor)][:2]
['DistTensor', 'DistTensor']
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from adapter_api import OpArgumentError

from ..._src.autograd import no_grad
from .dtensor import DistTensor
from .mesh import ProcessMesh
from .placement import Placement, Shard
from .reshard import reshard


class ShardingStage1:
    """ZeRO stage 1 over mesh axis ``sharding_mesh_dim``: the optimizer states (and the
    update) of each parameter split over that axis (Paddle's ``dist.ShardingStage1``).

    ``__call__(name, param, accumulator)`` is Paddle's ``shard_fn`` signature: the
    accumulator laid out as :meth:`placements` says."""

    def __init__(self, sharding_mesh_dim: int | str, mesh: ProcessMesh | None = None) -> None:
        self.axis = sharding_mesh_dim
        self.mesh = mesh

    def placements(self, param: DistTensor) -> list[Placement]:
        """The param's placements with its first dim no other axis shards (and at least as
        long as the axis has ranks) sharded over the sharding axis."""
        mesh = param.process_mesh
        if self.mesh is not None and self.mesh != mesh:
            raise OpArgumentError(
                f"[ShardingStage1] parameter '{param.name}' is on {mesh}, the sharding stage on {self.mesh}"
            )
        a = mesh.axis(self.axis)
        out = list(param.placements)
        if not out[a].is_replicated():
            return out
        taken = {p.dim for p in out if isinstance(p, Shard)}
        k = mesh.shape[a]
        for d, n in enumerate(param.shape):
            if d not in taken and n >= k:
                out[a] = Shard(d)
                break
        return out

    def __call__(self, name: str, param: DistTensor, accumulator: DistTensor) -> DistTensor:
        return reshard(accumulator, param.process_mesh, self.placements(param), why=f"ShardingStage1 {name}")


class _ShardOptimizer:
    """The optimizer ``shard_optimizer`` returns: it steps the wrapped optimizer on views of
    the parameters laid out as the states are, then writes them back."""

    def __init__(self, optimizer: Any, shard_fn: Any) -> None:
        self._inner = optimizer
        self._shard_fn = shard_fn
        self._views: list[tuple[DistTensor, DistTensor]] = []  # (parameter, the view the states follow)
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
                self._views.append((p, v))
                views.append(v)
            group["params"] = views

    def __getattr__(self, name: str) -> Any:  # lr, state_dict, set_state_dict, ...
        return getattr(self._inner, name)

    @no_grad()
    def step(self) -> None:
        """Slice each parameter and its gradient as its states lie, step, gather back."""
        moved = []
        for p, v in self._views:
            if v is p:
                continue
            g = p.grad
            if g is None or p._local_value() is None:  # no gradient, or a rank outside its mesh
                continue  # (another pipeline stage's parameter)
            r = reshard(p.detach(), p.process_mesh, self._shard_fn.placements(p), why="ShardingStage1 slice")
            v._local, v.placements, v.device = r._local, list(r.placements), r.device  # the update writes it
            v._local.stop_gradient = False
            v._local.grad = reshard(g, p.process_mesh, v.placements, why="ShardingStage1 slice")._local
            moved.append((p, v))
        try:
            self._inner.step()
        finally:
            for p, v in moved:
                whole = reshard(v.detach(), p.process_mesh, p.placements, why="ShardingStage1 gather")
                p._local_value().set_value(whole._local)
                v._local.grad = None

    def clear_grad(self, set_to_zero: bool = False) -> None:
        for p, _ in self._views:
            p.clear_grad(set_to_zero)

    clear_gradients = clear_grad
    zero_grad = clear_grad


def shard_optimizer(optimizer: Any, shard_fn: Callable[..., Any] | None = None) -> Any:
    """Paddle's ``dist.shard_optimizer``: ``optimizer`` over distributed parameters. Without
    ``shard_fn`` the states follow the parameters' placements (what the optimizer does on
    distributed parameters anyway: the optimizer comes back as it is); with
    ``ShardingStage1(axis)`` they are split over ``axis`` too (ZeRO stage 1, see the module
    docstring)."""
    if not hasattr(optimizer, "param_groups") or not hasattr(optimizer, "_update"):
        raise OpArgumentError(
            f"[shard_optimizer] expected a framework optimizer (fw.optim.*), got {type(optimizer).__name__}"
        )
    if hasattr(optimizer, "fused"):  # the update runs eagerly: its ops meet the interceptor
        optimizer.fused = False
    if shard_fn is None:
        for p in optimizer._all_params():
            if not isinstance(p, DistTensor):
                raise OpArgumentError(
                    f"[shard_optimizer] parameter '{getattr(p, 'name', None)}' is not distributed; "
                    "lay the model out first (dist.shard_layer or dist.shard_tensor)"
                )
        return optimizer
    if not hasattr(shard_fn, "placements"):
        raise OpArgumentError(
            f"[shard_optimizer] shard_fn must be a sharding stage (dist.ShardingStage1), got {shard_fn!r}"
        )
    return _ShardOptimizer(optimizer, shard_fn)


__all__ = ["ShardingStage1", "shard_optimizer"]
