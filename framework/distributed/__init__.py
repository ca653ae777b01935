"""``fw.distributed``: multi-process training over the communicators plugins register.

Processes are started by MPI: ``oarlock launch -n 4 train.py`` (or ``mpiexec -n 4 python
train.py``, the same command on one machine or a cluster). Collectives work in place, as in
Paddle, and return a task with ``wait()`` when ``sync_op=False``.

>>> import framework as fw
>>> import framework.distributed as dist
>>> _ = dist.init_parallel_env()
>>> x = fw.to_tensor([1.0, 2.0])
>>> _ = dist.all_reduce(x, op=dist.ReduceOp.SUM)
>>> x.numpy().tolist() if dist.get_world_size() == 1 else [1.0, 2.0]
[1.0, 2.0]

Automatic parallelism (Paddle's names): ``ProcessMesh``, ``Shard``/``Replicate``/``Partial``,
``shard_tensor``, ``reshard``, ``unshard_dtensor``, ``shard_layer``, ``shard_optimizer``
(``ShardingStage1``), and Paddle 3's one-call ``parallelize`` (``set_mesh``, ``ColWiseParallel``,
``RowWiseParallel``, ``SequenceParallel*``, ``SplitPoint``): the framework's own ops on distributed tensors follow sharding rules and
insert the communication; see docs/distributed.md.

Paddle's ``fleet`` (hybrid dp x pp x sharding x mp training: ``fleet.init``,
``fleet.distributed_model``, ``fleet.meta_parallel.PipelineLayer`` and the tensor-parallel
layers) and ``sharding.group_sharded_parallel`` (ZeRO stages 1-3) are subpackages.

Timeouts and checks: ``OARLOCK_COLLECTIVE_TIMEOUT`` (seconds, default 300) bounds every wait
for a missing rank; ``OARLOCK_DISTRIBUTED_DEBUG=1`` checks op, dtype and shape across ranks
before each collective. See :mod:`framework.distributed.collective`.
"""

from __future__ import annotations

from ..io import DistributedBatchSampler
from . import auto_parallel, fleet, sharding
from .auto_parallel import (
    ColWiseParallel,
    DistModel,
    DistTensor,
    Partial,
    Placement,
    Plan,
    ProcessMesh,
    Replicate,
    RowWiseParallel,
    SequenceParallelBegin,
    SequenceParallelDisable,
    SequenceParallelEnable,
    SequenceParallelEnd,
    Shard,
    ShardingStage1,
    ShardingStage2,
    ShardingStage3,
    SplitPoint,
    Strategy,
    auto_plan,
    dtensor_from_fn,
    get_mesh,
    parallelize,
    reshard,
    set_mesh,
    shard_layer,
    shard_optimizer,
    shard_tensor,
    to_static,
    unshard_dtensor,
)
from .collective import (
    Group,
    P2POp,
    ReduceOp,
    Task,
    all_gather,
    all_reduce,
    all_to_all,
    alltoall,
    alltoall_single,
    barrier,
    batch_isend_irecv,
    broadcast,
    destroy_process_group,
    get_rank,
    get_world_size,
    init_parallel_env,
    irecv,
    is_initialized,
    isend,
    new_group,
    recv,
    reduce,
    reduce_scatter,
    send,
)
from .fleet.meta_parallel.mesh_pipeline import MeshPipeline as _MeshPipeline
from .parallel import DataParallel
from .spawn import SpawnContext, spawn

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
    "auto_parallel",
    "auto_plan",
    "dtensor_from_fn",
    "reshard",
    "shard_layer",
    "shard_optimizer",
    "shard_tensor",
    "to_static",
    "unshard_dtensor",
    "DataParallel",
    "DistributedBatchSampler",
    "Group",
    "P2POp",
    "ReduceOp",
    "Task",
    "all_gather",
    "all_reduce",
    "all_to_all",
    "alltoall",
    "alltoall_single",
    "barrier",
    "batch_isend_irecv",
    "broadcast",
    "destroy_process_group",
    "get_rank",
    "get_world_size",
    "init_parallel_env",
    "irecv",
    "is_initialized",
    "isend",
    "new_group",
    "recv",
    "reduce",
    "reduce_scatter",
    "send",
    "SpawnContext",
    "fleet",
    "sharding",
    "spawn",
]

# NOTE: dist.to_static's pipeline is the fleet pipeline's schedule; auto_parallel cannot import
# fleet (fleet builds on auto_parallel), so the package that holds both connects them
DistModel.pipeline_builder = _MeshPipeline
