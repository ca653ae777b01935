"""The hybrid topology: ranks laid out on a :class:`ProcessMesh` with the axes ``dp``, ``pp``,
``sharding``, ``sep`` and ``mp`` (Paddle's ``CommunicateTopology`` and
``HybridCommunicateGroup``). The groups of each axis are the mesh's groups, so the fleet
front door and the auto-parallel core share one set of communicators.

>>> topo = CommunicateTopology(["data", "pipe", "model"], [2, 2, 1])
>>> topo.get_coord(3), topo.get_comm_list("pipe")
(Coordinate(data=1, pipe=1, model=0), [[0, 1], [2, 3]])
"""

from __future__ import annotations

import collections
import itertools
import math
from typing import Any

import numpy as np

from adapter_api import OpArgumentError

from .. import collective
from ..auto_parallel.mesh import ProcessMesh

#: Paddle's long axis names and the mesh's short ones
AXES = {"data": "dp", "pipe": "pp", "sharding": "sharding", "sep": "sep", "model": "mp"}
LONG = {v: k for k, v in AXES.items()}


class ParallelMode:
    """What ``get_parallel_mode`` answers (Paddle's values)."""

    DATA_PARALLEL = 0
    TENSOR_PARALLEL = 1
    PIPELINE_PARALLEL = 2
    SHARDING_PARALLEL = 3
    SEGMENT_PARALLEL = 4


class CommunicateTopology:
    """Ranks numbered row-major over named axes (the last axis varies fastest)."""

    def __init__(
        self,
        hybrid_group_names: list[str] | None = None,
        dims: list[int] | None = None,
    ) -> None:
        names = list(hybrid_group_names or ["data", "pipe", "sharding", "sep", "model"])
        dims = [int(d) for d in (dims or [1] * len(names))]
        if len(names) != len(dims) or any(d < 1 for d in dims):
            raise OpArgumentError(
                f"[CommunicateTopology] need one degree >= 1 per axis, got names {names} and dims {dims}"
            )
        self._parallel_names, self._dims = names, dims
        self.coordinate = collections.namedtuple("Coordinate", names)
        coords = [self.coordinate(*c) for c in itertools.product(*[range(d) for d in dims])]
        self._coord2rank = {c: r for r, c in enumerate(coords)}
        self._rank2coord = dict(enumerate(coords))
        self._world_size = math.prod(dims)

    def get_hybrid_group_names(self) -> list[str]:
        return list(self._parallel_names)

    def get_dim(self, axis_name: str) -> int:
        return self._dims[self._axis(axis_name)]

    get_dim_size = get_dim

    def world_size(self) -> int:
        return self._world_size

    def _axis(self, name: str) -> int:
        if name not in self._parallel_names:
            raise OpArgumentError(f"[CommunicateTopology] no axis {name!r}; axes: {self._parallel_names}")
        return self._parallel_names.index(name)

    def get_rank(self, **coord: int) -> int:
        return self._coord2rank[self.coordinate(**coord)]

    def get_coord(self, rank: int) -> Any:
        if rank not in self._rank2coord:
            raise OpArgumentError(f"[CommunicateTopology] rank {rank} is not in [0, {self._world_size})")
        return self._rank2coord[rank]

    def get_axis_list(self, axis_name: str, index: int) -> list[int]:
        a = self._axis(axis_name)
        return sorted(r for c, r in self._coord2rank.items() if c[a] == index)

    def get_comm_list(self, axis_name: str) -> list[list[int]]:
        """The rank lists along ``axis_name`` (one group per combination of the other axes)."""
        a = self._axis(axis_name)
        grid = np.arange(self._world_size).reshape(self._dims)
        return np.moveaxis(grid, a, -1).reshape(-1, self._dims[a]).tolist()

    def get_rank_from_stage(self, global_rank: int, **kwargs: int) -> int:
        return self.get_rank(**self.get_coord(global_rank)._replace(**kwargs)._asdict())

    def mesh(self) -> ProcessMesh:
        """The same layout as a :class:`ProcessMesh` with the short axis names."""
        return ProcessMesh(
            np.arange(self._world_size).reshape(self._dims),
            [AXES.get(n, n) for n in self._parallel_names],
        )


class HybridCommunicateGroup:
    """This rank's groups along each axis of ``topology`` (every rank of the world builds it,
    in the same order: creating a group is a collective of the world).

    >>> import framework.distributed as dist
    >>> _ = dist.init_parallel_env()
    >>> hcg = HybridCommunicateGroup(CommunicateTopology(["data", "pipe", "model"], [1, 1, 1]))
    >>> hcg.get_stage_id(), hcg.get_data_parallel_world_size()
    (0, 1)
    """

    def __init__(self, topology: CommunicateTopology) -> None:
        self._topo = topology
        self.global_rank = collective.get_rank()
        world = collective.get_world_size()
        if topology.world_size() != world:
            raise OpArgumentError(
                f"[fleet] the hybrid degrees {dict(zip(topology._parallel_names, topology._dims))} "
                f"make {topology.world_size()} ranks, the job has {world}; make their product the job size"
            )
        self.mesh = topology.mesh()
        self._coord = topology.get_coord(self.global_rank)
        self._groups: dict[str, collective.Group] = {}
        for long in topology._parallel_names:  # every axis, on every rank, in one order
            self._groups[long] = self._make(long)
        self.stage_id = self._rank_on("pipe")

    def _make(self, long: str) -> collective.Group:
        g = self.mesh.get_group(AXES.get(long, long))
        assert g is not None  # every rank of the world is on the mesh
        return g

    def _rank_on(self, long: str) -> int:
        return getattr(self._coord, long) if long in self._topo._parallel_names else 0

    def _size(self, long: str) -> int:
        return self._topo.get_dim(long) if long in self._topo._parallel_names else 1

    def _group(self, long: str) -> collective.Group:
        g = self._groups.get(long)
        if g is None:
            raise OpArgumentError(f"[fleet] the topology has no {long!r} axis: {self._topo._parallel_names}")
        return g

    # -- Paddle's accessors ---------------------------------------------------------------
    def topology(self) -> CommunicateTopology:
        return self._topo

    def get_global_rank(self) -> int:
        return self.global_rank

    def get_parallel_mode(self) -> int:
        pp, mp, sep, sh, dp = (self._size(n) for n in ("pipe", "model", "sep", "sharding", "data"))
        if pp > 1:
            return ParallelMode.PIPELINE_PARALLEL
        if mp > 1:
            return ParallelMode.TENSOR_PARALLEL
        if sep > 1:
            return ParallelMode.SEGMENT_PARALLEL
        if sh > 1:
            return ParallelMode.SHARDING_PARALLEL
        return ParallelMode.DATA_PARALLEL

    def get_data_parallel_rank(self) -> int:
        return self._rank_on("data")

    def get_data_parallel_world_size(self) -> int:
        return self._size("data")

    def get_data_parallel_group(self) -> collective.Group:
        return self._group("data")

    def get_data_parallel_group_src_rank(self) -> int:
        return self._group("data").ranks[0]

    def get_model_parallel_rank(self) -> int:
        return self._rank_on("model")

    def get_model_parallel_world_size(self) -> int:
        return self._size("model")

    def get_model_parallel_group(self) -> collective.Group:
        return self._group("model")

    def get_model_parallel_group_src_rank(self) -> int:
        return self._group("model").ranks[0]

    def get_stage_id(self) -> int:
        return self.stage_id

    def get_pipe_parallel_world_size(self) -> int:
        return self._size("pipe")

    def get_pipe_parallel_group(self) -> collective.Group:
        return self._group("pipe")

    def get_sharding_parallel_rank(self) -> int:
        return self._rank_on("sharding")

    def get_sharding_parallel_world_size(self) -> int:
        return self._size("sharding")

    def get_sharding_parallel_group(self) -> collective.Group:
        return self._group("sharding")

    def get_sharding_parallel_group_src_rank(self) -> int:
        return self._group("sharding").ranks[0]

    def get_sep_parallel_rank(self) -> int:
        return self._rank_on("sep")

    def get_sep_parallel_world_size(self) -> int:
        return self._size("sep")

    def get_sep_parallel_group(self) -> collective.Group:
        return self._group("sep")

    def is_first_stage(self) -> bool:
        return self.stage_id == 0

    def is_last_stage(self) -> bool:
        return self.stage_id == self._size("pipe") - 1

    def get_rank_from_stage(self, stage_id: int, **kwargs: int) -> int:
        return self._topo.get_rank_from_stage(self.global_rank, pipe=stage_id, **kwargs)

    def __repr__(self) -> str:
        degrees = dict(zip(self._topo._parallel_names, self._topo._dims))
        return f"HybridCommunicateGroup(rank={self.global_rank}, degrees={degrees}, stage={self.stage_id})"


#: what ``fleet.init`` set up: the hybrid group and the strategy
CURRENT: dict[str, Any] = {"hcg": None, "strategy": None}


def current_hcg() -> HybridCommunicateGroup:
    """The hybrid group of ``fleet.init`` (an error before it)."""
    if CURRENT["hcg"] is None:
        raise OpArgumentError("[fleet] call fleet.init(is_collective=True, strategy=...) first")
    return CURRENT["hcg"]
