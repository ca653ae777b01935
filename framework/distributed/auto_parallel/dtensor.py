"""The distributed tensor: this rank's shard, the mesh, the placements and the global shape.

A :class:`DistTensor` is a :class:`Tensor` whose ``shape`` is the global one: every framework
op on it (functions, methods, operators) is handed by the engine's interceptor hook to
:mod:`.spmd`, which runs it on the local shards, inserting the communication the sharding
rules ask for. ``x._local_value()`` is this rank's shard, a plain tensor on the tape
(gradients flow through it); ranks outside the mesh hold ``None``.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import numpy as np

from adapter_api import OpArgumentError

from ..._src import autograd, dispatch
from ..._src.autograd import no_grad
from ..._src.tensor import Size, Tensor
from ..._src.tensor import to_tensor as _to_tensor
from .. import collective
from ..arrival import arrive
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
    seen: dict[int, list[str]] = {}
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
            if p.dim in seen:  # nested: this axis splits each chunk of the earlier axes
                seen[p.dim].append(axis)
                k = math.prod(mesh.get_dim_size(a) for a in seen[p.dim])
                if shape[p.dim] % k:
                    raise OpArgumentError(
                        f"[{what}] {label(x)}: placement {p} on mesh axes {seen[p.dim]} of {mesh}: a dim "
                        f"sharded over several mesh axes needs its size {shape[p.dim]} divisible by their "
                        f"{k} ranks; pad the dim or shard it over one axis"
                    )
            else:
                seen[p.dim] = [axis]
        out.append(p)
    return out


def local_region(
    shape: Sequence[int], mesh: ProcessMesh, placements: list[Placement], coord: list[int]
) -> list[tuple[int, int]]:
    """``[start, end)`` per tensor dim of the shard at mesh coordinate ``coord``."""
    region = [(0, n) for n in shape]
    index: dict[int, tuple[int, int]] = {}  # dim -> (chunk index, chunks): axes nest in mesh order
    for axis, p in enumerate(placements):
        if isinstance(p, Shard):
            i, k = index.get(p.dim, (0, 1))
            index[p.dim] = (i * mesh.shape[axis] + coord[axis], k * mesh.shape[axis])
    for d, (i, k) in index.items():
        region[d] = chunk(shape[d], k, i)
    return region


class DistTensor(Tensor):
    """A tensor laid out over a :class:`ProcessMesh` (see :func:`shard_tensor`): a
    :class:`Tensor` whose ``shape`` is the global one. Every framework op on it goes through
    the interceptor of :mod:`.spmd` (the op's sharding rule, the reshards it needs, the op on
    the local shards); its storage is this rank's shard, ``_local_value()``."""

    __slots__ = ()
    _dist = True
    __array_priority__ = 1000  # numpy defers to our operators
    #: the engine's interceptor for ops on distributed tensors (:func:`.spmd.intercept` sets
    #: it); registered with the engine when the first distributed tensor is made
    interceptor: ClassVar[Any] = None
    #: ``whole(x, why) -> DistTensor``: ``x`` replicated on its mesh (:mod:`.reshard` sets it)
    whole: ClassVar[Any] = None
    #: ``across(run)``: with None, whether moves between meshes wait for their gradient; with
    #: True, finish the backward across ranks: the kept gradient all-reduces, the moves'
    #: gradients (:mod:`.reshard` sets it)
    across: ClassVar[Any] = None

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
        self.shape = Size(int(s) for s in shape)
        self.dtype = dtype
        # a rank outside the mesh holds nothing; its ops still see the current device (a
        # composite's helper tensors are made there), and skip the kernel
        self.device = _current_device() if local is None else local.device
        self._node = None
        if name is not None:
            self.name = name
        if not dispatch.INTERCEPTORS and DistTensor.interceptor is not None:
            dispatch.INTERCEPTORS.append(DistTensor.interceptor)  # the first one turns it on

    # -- Paddle's accessors ---------------------------------------------------------------
    def _local_value(self) -> Tensor | None:
        """This rank's shard (None on a rank outside the mesh)."""
        return self._local

    local_value = _local_value

    def is_dist(self) -> bool:
        return True

    @property
    def dist_attr(self) -> tuple[ProcessMesh, list[Placement], tuple[int, ...]]:
        """(mesh, placements, global shape)."""
        return self.process_mesh, list(self.placements), self.shape

    # -- storage and the tape are the local shard's -------------------------------------------
    @property
    def stop_gradient(self) -> bool:  # type: ignore[override]
        return True if self._local is None else self._local.stop_gradient

    @stop_gradient.setter
    def stop_gradient(self, v: bool) -> None:
        if self._local is not None:
            self._local.stop_gradient = v

    @property
    def _block(self) -> Any:  # type: ignore[override]
        return None if self._local is None else self._local._block

    @_block.setter
    def _block(self, v: Any) -> None:
        self._local._block = v

    @property
    def _offset(self) -> int:  # type: ignore[override]
        return 0 if self._local is None else self._local._offset

    @_offset.setter
    def _offset(self, v: int) -> None:
        self._local._offset = v

    @property
    def _nv(self) -> Any:  # type: ignore[override]
        return None if self._local is None else self._local._nv

    @_nv.setter
    def _nv(self, v: Any) -> None:
        if self._local is not None:
            self._local._nv = v

    @property
    def grad(self) -> DistTensor | None:  # type: ignore[override]
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

    @grad.setter
    def grad(self, g: Any) -> None:
        if self._local is not None:
            self._local.grad = g._local if isinstance(g, DistTensor) else g

    def clear_grad(self, set_to_zero: bool = False) -> None:
        if self._local is not None:
            self._local.clear_grad(set_to_zero)

    def detach(self) -> DistTensor:
        local = None if self._local is None else self._local.detach()
        return DistTensor(local, self.process_mesh, self.placements, self.shape, self.dtype, self.name)

    def backward(self, grad_tensor: Any = None, retain_graph: bool = False) -> None:
        """Backward from a distributed scalar: a Partial value is all-reduced first (on the tape);
        every rank calls it, also one outside the loss's mesh: the gradients of moves between
        meshes are exchanged after the local backward."""
        r = self.whole(self, "backward") if any(p.is_partial() for p in self.placements) else self
        pending = self.across(None)
        if r._local is not None:
            g = grad_tensor._local if isinstance(grad_tensor, DistTensor) else grad_tensor
            autograd.backward(r._local, g, retain_graph or pending)
        # the kept gradients of replicated parameters are all-reduced in buckets; moves between
        # meshes send their gradients back to the source ranks
        self.across(True)

    def numpy(self) -> Any:
        """The whole tensor, as Paddle's ``numpy()`` of a distributed tensor: read locally where
        it is replicated on this rank; else gathered from the shards (a Partial value reduced),
        a collective of the ranks that hold the other parts, which must all call it. Called on
        some of them only (``if rank == 0: x.numpy()``), it raises at once under ``oarlock
        launch`` once a peer shows it will not call it (see :mod:`framework.distributed.arrival`).
        None on a rank outside the mesh."""
        spread = [a for a, p in enumerate(self.placements) if not p.is_replicated()]
        if spread and self._local is not None:
            ids = np.asarray(self.process_mesh.process_ids).reshape(self.process_mesh.shape)
            at = list(self.coordinate())
            index = tuple(slice(None) if a in spread else at[a] for a in range(len(at)))
            peers = sorted(int(r) for r in np.ravel(ids[index]))
            arrive(
                f"numpy {peers}",
                peers,
                f"numpy() of {label(self)} ({short(self.placements)} over {self.process_mesh})",
                "call it on every one of those ranks (before `if rank == 0:`), read this rank's part "
                "with x._local_value().numpy(), or replicate x first (dist.reshard) where one rank reads it",
            )
        r = self.whole(self, "numpy") if spread else self
        return None if r._local is None else r._local.numpy()

    def native(self) -> Any:
        raise OpArgumentError(
            f"[distributed] {label(self)} is laid out over {self.process_mesh} as {short(self.placements)}: "
            "a kernel sees its shard only; use x._local_value()"
        )

    def _reshaped(self, shape: tuple[int, ...]) -> Tensor:
        raise OpArgumentError(
            f"[distributed] {label(self)}: a storage view of a distributed tensor; use x.reshape(shape)"
        )

    def __deepcopy__(self, memo: dict[int, Any]) -> DistTensor:
        import copy

        local = None if self._local is None else copy.deepcopy(self._local, memo)
        new = object.__new__(type(self))
        DistTensor.__init__(new, local, self.process_mesh, self.placements, self.shape, self.dtype, self.name)
        if _is_parameter(self):
            new.trainable, new.optimize_attr, new.persistable = (
                self.trainable,
                dict(self.optimize_attr),
                True,
            )
        memo[id(self)] = new
        return new

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


def _is_parameter(x: Any) -> bool:
    return isinstance(x, Tensor) and hasattr(type(x), "from_tensor") and hasattr(x, "trainable")


_DIST_KINDS: dict[type, type] = {}


def dist_parameter(kind: type, d: DistTensor, trainable: bool, name: str | None) -> DistTensor:
    """``d`` as a parameter of class ``kind`` (the layer's ``Parameter``): a distributed
    subclass of it, so the layer registers it and the optimizer updates it, while its storage
    and gradient are this rank's shard's (a trainable leaf of class ``kind``)."""
    cls = _DIST_KINDS.get(kind)
    if cls is None:
        cls = _DIST_KINDS[kind] = type(f"Dist{kind.__name__}", (DistTensor, kind), {"__slots__": ()})
    local = d._local
    if local is not None and not isinstance(local, kind):
        local = kind.from_tensor(local, trainable=trainable)
        local.name = name
    p = object.__new__(cls)
    DistTensor.__init__(p, local, d.process_mesh, d.placements, d.shape, d.dtype, name)
    p.trainable = trainable
    p.optimize_attr = {"learning_rate": 1.0}
    p.persistable = True
    return p


def _as_tensor(data: Any) -> Tensor:
    return data if isinstance(data, Tensor) else _to_tensor(data)


def _current_device() -> Any:
    from ..._src.device import get_device

    return get_device()


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
    _check_same_data(x, mesh)
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
    d = DistTensor(local, mesh, ps, x.shape, x.dtype, getattr(x, "name", None))
    if _is_parameter(data):  # a parameter stays one (Paddle's dist parameter)
        return dist_parameter(type(data), d, not sg, getattr(data, "name", None))
    return d


def _check_same_data(x: Tensor, mesh: ProcessMesh) -> None:
    """``shard_tensor`` takes the same global value on every rank: compare a digest of it across
    the mesh's ranks when the collectives' check runs (``OARLOCK_DISTRIBUTED_DEBUG=1``: every
    call; by default the 1st, 2nd, 4th... call from each call site), so that ranks holding
    different data do not mix it silently."""
    g = collective._world()
    if g.nranks < 2 or not collective._should_check(g, "shard_tensor"):
        return
    data = np.ascontiguousarray(x.numpy())
    mine = f"{hashlib.sha256(data.tobytes()).hexdigest()[:16]} {list(data.shape)} {data.dtype}"
    got = [b.decode() for b in g.host.all_gather_bytes(mine.encode())]
    members = {g.ranks[i]: d for i, d in enumerate(got) if g.ranks[i] in mesh.process_ids}
    if len(set(members.values())) > 1:
        lines = "\n".join(f"  rank {r}: sha256 {d}" for r, d in sorted(members.items()))
        raise OpArgumentError(
            f"[shard_tensor] {label(x)}: the ranks of {mesh} passed different data (each rank must pass "
            f"the same global value; its shard is cut from it):\n{lines}\n"
            "seed every rank alike (fw.seed) or broadcast the value from one rank first"
        )


def dtensor_from_fn(
    fn: Callable[..., Any], mesh: ProcessMesh, placements: Sequence[Placement], *args: Any, **kwargs: Any
) -> DistTensor:
    """``shard_tensor(fn(*args, **kwargs), mesh, placements)`` (Paddle's helper)."""
    return shard_tensor(fn(*args, **kwargs), mesh, placements)
