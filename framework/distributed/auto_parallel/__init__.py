"""Automatic parallelism (Paddle's ``paddle.distributed`` auto-parallel API): lay a few tensors
out over a :class:`ProcessMesh` with placements; ops propagate the layouts by their sharding
rules and insert the communication. See docs/distributed.md.

>>> import numpy as np, framework.distributed as dist
>>> mesh = dist.ProcessMesh([0], dim_names=["mp"])
>>> w = dist.shard_tensor(np.ones((4, 6), "float32"), mesh, [dist.Shard(1)])
>>> w.placements, w.process_mesh.dim_names
([Shard(1)], ['mp'])
"""

from __future__ import annotations

from . import functional, spmd
from .dtensor import DistTensor, dtensor_from_fn, shard_tensor
from .layer import local_bytes, shard_layer
from .mesh import ProcessMesh
from .optimizer import ShardingStage1, ShardingStage2, ShardingStage3, shard_optimizer
from .parallelize import get_mesh, parallelize, set_mesh
from .placement import Partial, Placement, Replicate, Shard
from .planner import Plan, auto_plan
from .plans import (
    ColWiseParallel,
    RowWiseParallel,
    SequenceParallelBegin,
    SequenceParallelDisable,
    SequenceParallelEnable,
    SequenceParallelEnd,
)
from .reshard import LOG, reshard, unshard_dtensor
from .stages import SplitPoint
from .static import DistModel, to_static
from .strategy import Strategy


def reshard_log() -> list[dict]:
    """Every reshard this process ran (tensor, mesh axis, from, to, collective, bytes, why)."""
    return LOG


__all__ = [
    "ColWiseParallel",
    "RowWiseParallel",
    "SequenceParallelBegin",
    "SequenceParallelDisable",
    "SequenceParallelEnable",
    "SequenceParallelEnd",
    "SplitPoint",
    "get_mesh",
    "parallelize",
    "set_mesh",
    "DistModel",
    "DistTensor",
    "auto_plan",
    "Partial",
    "Placement",
    "Plan",
    "ProcessMesh",
    "Replicate",
    "Shard",
    "ShardingStage1",
    "ShardingStage2",
    "ShardingStage3",
    "Strategy",
    "dtensor_from_fn",
    "functional",
    "local_bytes",
    "reshard",
    "reshard_log",
    "shard_layer",
    "shard_optimizer",
    "shard_tensor",
    "spmd",
    "to_static",
    "unshard_dtensor",
]
