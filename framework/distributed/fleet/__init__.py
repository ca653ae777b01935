"""``fw.distributed.fleet``: Paddle's ``paddle.distributed.fleet`` front door for collective
training, on the same core as the auto-parallel API (the hybrid topology is a
``ProcessMesh``, its groups the mesh's; tensor-parallel layers hold distributed parameters).

>>> from framework.distributed import fleet
>>> strategy = fleet.DistributedStrategy()
>>> strategy.hybrid_configs = {"dp_degree": 1, "mp_degree": 1, "pp_degree": 1}
>>> fleet.init(is_collective=True, strategy=strategy)
>>> fleet.get_hybrid_communicate_group().get_stage_id()
0

Pipelines: ``meta_parallel.PipelineLayer`` and ``LayerDesc``; tensor parallel:
``meta_parallel.ColumnParallelLinear``, ``RowParallelLinear``, ``VocabParallelEmbedding``;
see docs/distributed.md.
"""

from __future__ import annotations

from . import meta_parallel, utils
from .base import (
    barrier_worker,
    distributed_model,
    distributed_optimizer,
    get_hybrid_communicate_group,
    init,
    is_first_worker,
    worker_index,
    worker_num,
)
from .recompute import recompute
from .strategy import DistributedStrategy
from .topology import CommunicateTopology, HybridCommunicateGroup, ParallelMode

__all__ = [
    "CommunicateTopology",
    "DistributedStrategy",
    "HybridCommunicateGroup",
    "ParallelMode",
    "barrier_worker",
    "distributed_model",
    "distributed_optimizer",
    "get_hybrid_communicate_group",
    "init",
    "is_first_worker",
    "meta_parallel",
    "recompute",
    "utils",
    "worker_index",
    "worker_num",
]
