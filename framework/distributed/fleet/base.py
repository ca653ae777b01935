"""``fleet.init`` and the calls after it (Paddle's ``paddle.distributed.fleet`` for
collective training): one hybrid topology (dp x pp x sharding x sep x mp on a
:class:`ProcessMesh`), and the model and optimizer wrapped for it.

>>> from framework.distributed import fleet
>>> strategy = fleet.DistributedStrategy()
>>> strategy.hybrid_configs = {"dp_degree": 1, "mp_degree": 1, "pp_degree": 1}
>>> fleet.init(is_collective=True, strategy=strategy)
>>> fleet.get_hybrid_communicate_group().get_parallel_mode(), fleet.worker_num()
(0, 1)
"""

from __future__ import annotations

from typing import Any

from adapter_api import OpArgumentError

from ..._src.autograd import no_grad
from .. import collective
from ..auto_parallel.dtensor import DistTensor
from ..parallel import DataParallel
from ..sharding import ShardedOptimizer, ShardingParallel
from .meta_parallel import PipelineLayer, PipelineParallel, TensorParallel
from .strategy import DistributedStrategy
from .topology import AXES, CURRENT, CommunicateTopology, HybridCommunicateGroup, ParallelMode, current_hcg

_FLEET = CURRENT


def init(
    role_maker: Any = None,
    is_collective: bool = False,
    strategy: DistributedStrategy | None = None,
    log_level: Any = "INFO",
) -> None:
    """Start the job's groups for ``strategy.hybrid_configs`` (``dp_degree=-1``: the ranks the
    other degrees leave). Collective training only: ``is_collective=False`` (parameter
    servers) is refused."""
    if not is_collective:
        raise OpArgumentError(
            "[fleet] only collective training is built: call fleet.init(is_collective=True, strategy=...)"
        )
    strategy = strategy if strategy is not None else DistributedStrategy()
    if not isinstance(strategy, DistributedStrategy):
        raise OpArgumentError(
            f"[fleet] strategy must be a fleet.DistributedStrategy, got {type(strategy).__name__}"
        )
    collective.init_parallel_env()
    world = collective.get_world_size()
    h = strategy.hybrid_configs
    deg = {k: max(int(h[f"{k}_degree"]), 1) for k in ("mp", "pp", "sharding", "sep")}
    dp = int(h["dp_degree"])
    rest = deg["mp"] * deg["pp"] * deg["sharding"] * deg["sep"]
    if dp < 0:
        if world % rest:
            raise OpArgumentError(
                f"[fleet] mp x pp x sharding x sep = {rest} does not divide the {world} ranks of the job"
            )
        dp = world // rest
    deg["dp"] = max(dp, 1)
    order = strategy.hybrid_parallel_order
    long = {v: k for k, v in AXES.items()}
    topo = CommunicateTopology([long[a] for a in order], [deg[a] for a in order])
    _FLEET["hcg"] = HybridCommunicateGroup(topo)
    _FLEET["strategy"] = strategy


_hcg = current_hcg


def get_hybrid_communicate_group() -> HybridCommunicateGroup:
    """The groups of this rank along each hybrid axis (after :func:`init`)."""
    return _hcg()


def worker_index() -> int:
    return collective.get_rank()


def worker_num() -> int:
    return collective.get_world_size()


def is_first_worker() -> bool:
    return collective.get_rank() == 0


def barrier_worker() -> None:
    collective.barrier()


def distributed_model(model: Any) -> Any:
    """``model`` wrapped for the topology: a pipeline (``pp_degree > 1``, the model a
    ``PipelineLayer``), tensor parallel (``mp_degree > 1``), sharded data parallel
    (``sharding_degree > 1``) or data parallel; the model itself on one rank."""
    hcg, strategy = _hcg(), _FLEET["strategy"]
    mode = hcg.get_parallel_mode()
    if mode == ParallelMode.PIPELINE_PARALLEL:
        if not isinstance(model, PipelineLayer):
            raise OpArgumentError(
                f"[fleet] pp_degree > 1 needs a PipelineLayer model, got {type(model).__name__}"
            )
        return PipelineParallel(model, hcg, strategy)
    if collective.get_world_size() == 1:
        return model
    if mode == ParallelMode.TENSOR_PARALLEL:
        return TensorParallel(model, hcg, strategy)
    if mode == ParallelMode.SHARDING_PARALLEL:
        return ShardingParallel(model, hcg, strategy)
    return DataParallel(
        model,
        find_unused_parameters=strategy.find_unused_parameters,
        comm_buffer_size=strategy.fuse_grad_size_in_MB,
        group=hcg.get_data_parallel_group(),
    )


def distributed_optimizer(optimizer: Any, strategy: DistributedStrategy | None = None) -> Any:
    """``optimizer`` for the topology: over tensor-parallel (distributed) parameters through
    ``dist.shard_optimizer``; with ``sharding_degree > 1`` its states split over the sharding
    group (ZeRO stage 1, or the stage of ``sharding_configs['stage']``)."""
    hcg = _hcg()
    if strategy is not None:
        _FLEET["strategy"] = strategy
    params = optimizer._all_params() if hasattr(optimizer, "_all_params") else []
    if hcg.get_sharding_parallel_world_size() > 1:
        return ShardedOptimizer(optimizer, hcg.get_sharding_parallel_group(), 1)
    if any(isinstance(p, DistTensor) for p in params) and hasattr(optimizer, "fused"):
        optimizer.fused = False  # the update runs eagerly: its ops meet the interceptor
    if hcg.get_parallel_mode() == ParallelMode.TENSOR_PARALLEL and hcg.get_data_parallel_world_size() > 1:
        return HybridParallelOptimizer(optimizer, hcg)
    return optimizer


class HybridParallelOptimizer:
    """The optimizer of a tensor-parallel model with data parallelism: before each step the
    gradients (of the distributed parameters: this rank's shards) are averaged over the dp
    group (Paddle's class of this name). Other attributes are the wrapped optimizer's."""

    def __init__(self, optimizer: Any, hcg: HybridCommunicateGroup) -> None:
        self.__dict__["_inner"], self.__dict__["_hcg"] = optimizer, hcg

    def __getattr__(self, name: str) -> Any:
        return getattr(self.__dict__["_inner"], name)

    def step(self) -> None:
        dp = self._hcg.get_data_parallel_group()
        with no_grad():
            for p in self._inner._all_params():
                local = p._local_value() if isinstance(p, DistTensor) else p
                if local.grad is not None:
                    collective.all_reduce(local.grad, op="avg", group=dp)
        self._inner.step()
