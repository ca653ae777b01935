"""The distributed tensor: this rank's shard, the mesh, the placements and the global shape.

A :class:`DistTensor` is not a :class:`Tensor`: its ``shape`` is the global one and the ops of
:mod:`.ops` (and its operators) run on the local shards, inserting the communication the
sharding rules ask for. ``x._local_value()`` is this rank's shard, a plain tensor on the tape
(gradients flow through it); ranks outside the mesh hold ``None``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from adapter_api import OpArgumentError

from ..._src.autograd import no_grad
from ..._src.tensor import Tensor
from ..._src.tensor import to_tensor as _to_tensor
from .. import collective
from .mesh import ProcessMesh
from .placement import Partial, Placement, Replicate, Shard, chunk, short


def label(x: Any) -> str:
    """How an error names a tensor: its name, or its shape."""
    name = getattr(x, "name", None)
    shape = list(getattr(x, "shape", ()))
    return f"tensor '{name}' of shape {shape}" if name else f"the tensor of shape {shape}"


def check_placements(
    what: str, x: Any, shape: Sequence[int], mesh: ProcessMesh, placements: Any
) -> list[Placement]:
    """Validate an annotation: one placement per mesh axis, each Shard on an existing dim, at
    most one mesh axis per tensor dim. Errors name the tensor, the mesh and the placement."""
    if not isinstance(mesh, ProcessMesh):
        raise OpArgumentError(f"[{what}] {label(x)}: expected a dist.ProcessMesh, got {type(mesh).__name__}")
    placements = list(placements)
    if len(placements) != mesh.ndim:
        raise OpArgumentError(
            f"[{what}] {label(x)}: {len(placements)} placements {placements} for {mesh}, which has "
            f"{mesh.ndim} axes {mesh.dim_names}; give one placement per mesh axis"
        )
    seen: dict[int, str] = {}
    out: list[Placement] = []
    for axis, p in zip(mesh.dim_names, placements):
        if not isinstance(p, Placement):
            raise OpArgumentError(
                f"[{what}] {label(x)}: placement {p!r} on mesh axis '{axis}' of {mesh} is not a "
                "dist.Shard, dist.Replicate or dist.Partial"
            )
        if isinstance(p, Shard):
            nd = len(shape)
            if not -nd <= p.dim < nd:
                raise OpArgumentError(
                    f"[{what}] {label(x)}: placement {p} on mesh axis '{axis}' of {mesh} names tensor "
                    f"dim {p.dim}, but the tensor has {nd} dims; shard a dim in [0, {nd})"
                )
            p = Shard(p.dim % nd)
            if p.dim in seen:
                raise OpArgumentError(
                    f"[{what}] {label(x)}: placement {p} on mesh axes '{seen[p.dim]}' and '{axis}' of {mesh}: "
                    "one tensor dim sharded over two mesh axes is not supported; shard another dim"
                )
            seen[p.dim] = axis
        out.append(p)
    return out


def local_region(
    shape: Sequence[int], mesh: ProcessMesh, placements: list[Placement], coord: list[int]
) -> list[tuple[int, int]]:
    """``[start, end)`` per tensor dim of the shard at mesh coordinate ``coord``."""
    region = [(0, n) for n in shape]
    for axis, p in enumerate(placements):
        if isinstance(p, Shard):
            region[p.dim] = chunk(shape[p.dim], mesh.shape[axis], coord[axis])
    return region


class DistTensor:
    """A tensor laid out over a :class:`ProcessMesh` (see :func:`shard_tensor`)."""

    __array_priority__ = 1000  # numpy defers to our operators

    def __init__(
        self,
        local: Tensor | None,
        mesh: ProcessMesh,
        placements: list[Placement],
        shape: Sequence[int],
        dtype: Any,
        name: str | None = None,
    ) -> None:
        self._local = local
        self.process_mesh = mesh
        self.placements = list(placements)
        self.shape = tuple(int(s) for s in shape)
        self.dtype = dtype
        self.name = name

    # -- Paddle's accessors ---------------------------------------------------------------
    def _local_value(self) -> Tensor | None:
        """This rank's shard (None on a rank outside the mesh)."""
        return self._local

    local_value = _local_value

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def numel(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    @property
    def is_dist(self) -> bool:
        return True

    @property
    def stop_gradient(self) -> bool:
        return True if self._local is None else self._local.stop_gradient

    @stop_gradient.setter
    def stop_gradient(self, v: bool) -> None:
        if self._local is not None:
            self._local.stop_gradient = v

    @property
    def grad(self) -> DistTensor | None:
        """The gradient, laid out like the tensor (a shard's gradient is the gradient of the shard)."""
        g = None if self._local is None else self._local.grad
        if g is None and self._local is not None:
            return None
        for axis, p in enumerate(self.placements):  # an avg part's gradient is the whole over k
            if isinstance(p, Partial) and p.reduce_type == "avg" and g is not None:
                g = g * float(self.process_mesh.shape[axis])
        return DistTensor(
            g,
            self.process_mesh,
            [Replicate() if p.is_partial() else p for p in self.placements],
            self.shape,
            self.dtype,
        )

    @property
    def device(self) -> Any:
        return None if self._local is None else self._local.device

    def coordinate(self) -> list[int] | None:
        return self.process_mesh.coordinate(collective.get_rank())

    def local_region(self) -> list[tuple[int, int]] | None:
        c = self.coordinate()
        return None if c is None else local_region(self.shape, self.process_mesh, self.placements, c)

    def __repr__(self) -> str:
        return (
            f"DistTensor(shape={list(self.shape)}, dtype={self.dtype}, mesh={self.process_mesh.shape} "
            f"{self.process_mesh.dim_names}, placements={short(self.placements)}, "
            f"local_shape={None if self._local is None else list(self._local.shape)})"
        )


def _as_tensor(data: Any) -> Tensor:
    return data if isinstance(data, Tensor) else _to_tensor(data)


def shard_tensor(
    data: Any,
    mesh: ProcessMesh,
    placements: Sequence[Placement],
    dtype: Any = None,
    place: Any = None,
    stop_gradient: bool | None = None,
) -> DistTensor:
    """Lay the (global, same on every rank) ``data`` out over ``mesh``: each rank keeps its
    shard (``Shard``), the whole (``Replicate``) or -- for ``Partial`` -- the value on the
    first rank of the axis and zeros (sum) or the value (avg, max, min) elsewhere.

    >>> import numpy as np, framework.distributed as dist
    >>> m = dist.ProcessMesh([0], dim_names=["x"])
    >>> d = dist.shard_tensor(np.ones((4, 2), "float32"), m, [dist.Shard(0)])
    >>> d.shape, d.placements
    ((4, 2), [Shard(0)])
    """
    if isinstance(data, DistTensor):
        raise OpArgumentError(
            f"[shard_tensor] {label(data)} is already distributed ({data.process_mesh}, placements "
            f"{data.placements}); change its layout with dist.reshard(x, mesh, placements)"
        )
    x = _as_tensor(data)
    if dtype is not None:
        x = x.astype(dtype)
    if place is not None:
        x = x.to(place)
    ps = check_placements("shard_tensor", x, x.shape, mesh, placements)
    sg = x.stop_gradient if stop_gradient is None else stop_gradient
    coord = mesh.coordinate(collective.get_rank())
    local = None
    if coord is not None:
        region = local_region(x.shape, mesh, ps, coord)
        with no_grad():
            local = x[tuple(slice(a, b) for a, b in region)] if x.ndim else x.detach()
            for axis, p in enumerate(ps):
                if isinstance(p, Partial) and p.reduce_type == "sum" and coord[axis] != 0:
                    local = local * 0
            local = local.detach()
        local.stop_gradient = sg
    return DistTensor(local, mesh, ps, x.shape, x.dtype, getattr(x, "name", None))


def dtensor_from_fn(
    fn: Callable[..., Any], mesh: ProcessMesh, placements: Sequence[Placement], *args: Any, **kwargs: Any
) -> DistTensor:
    """``shard_tensor(fn(*args, **kwargs), mesh, placements)`` (Paddle's helper)."""
    return shard_tensor(fn(*args, **kwargs), mesh, placements)
