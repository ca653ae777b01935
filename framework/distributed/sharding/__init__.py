"""``fw.distributed.sharding``: ZeRO stages 1-3 over a data-parallel group (Paddle's
``paddle.distributed.sharding.group_sharded_parallel``); see :mod:`.group_sharded`.

>>> from framework.distributed.sharding import LEVELS
>>> LEVELS
{'os': 1, 'os_g': 2, 'p_g_os': 3}
"""

from __future__ import annotations

from .group_sharded import (
    LEVELS,
    GroupShardedModel,
    ShardedOptimizer,
    ShardingParallel,
    group_sharded_parallel,
    save_group_sharded_model,
)

__all__ = [
    "LEVELS",
    "GroupShardedModel",
    "ShardedOptimizer",
    "ShardingParallel",
    "group_sharded_parallel",
    "save_group_sharded_model",
]
