"""``DistributedStrategy``: the configuration ``fleet.init`` reads (Paddle's class, the parts
that collective training uses).

>>> from framework.distributed import fleet
>>> s = fleet.DistributedStrategy()
>>> s.hybrid_configs = {"dp_degree": 1, "pp_degree": 2}
>>> s.hybrid_configs["pp_degree"], s.hybrid_configs["mp_degree"]
(2, 1)
>>> s.pipeline_configs["schedule_mode"]
'1F1B'
"""

from __future__ import annotations

import copy
from typing import Any

from adapter_api import OpArgumentError

_HYBRID = {
    "dp_degree": -1,
    "mp_degree": 1,
    "pp_degree": 1,
    "sharding_degree": 1,
    "sep_degree": 1,
    "order": ["dp", "pp", "sharding", "sep", "mp"],
    "mp_configs": {},
    "pp_configs": {},
    "sharding_configs": {},
}
_PIPELINE = {
    "micro_batch_size": 1,
    "accumulate_steps": 1,
    "schedule_mode": "1F1B",
    "p2p_cache_shape": True,
    "enable_partial_send_recv": True,
}
_SHARDING = {"stage": 1, "sharding_degree": 8, "segment_broadcast_MB": 32.0}
_RECOMPUTE = {"checkpoints": [], "enable_offload": False}


def _merge(what: str, defaults: dict[str, Any], given: Any) -> dict[str, Any]:
    if not isinstance(given, dict):
        raise OpArgumentError(f"[DistributedStrategy] {what} must be a dict, got {type(given).__name__}")
    bad = sorted(set(given) - set(defaults))
    if bad:
        raise OpArgumentError(
            f"[DistributedStrategy] {what} has no key {', '.join(map(repr, bad))}; "
            f"known keys: {', '.join(sorted(defaults))}"
        )
    out = copy.deepcopy(defaults)
    out.update(copy.deepcopy(given))
    return out


class DistributedStrategy:
    """What ``fleet.init(is_collective=True, strategy=...)`` sets up. Assigning a dict to
    ``hybrid_configs``, ``pipeline_configs``, ``sharding_configs`` or ``recompute_configs``
    updates the given keys over the defaults (an unknown key is an error, as in Paddle).

    >>> s = DistributedStrategy()
    >>> s.pipeline_configs = {"accumulate_steps": 4, "micro_batch_size": 2}
    >>> s.pipeline_configs["accumulate_steps"]
    4
    """

    def __init__(self) -> None:
        self._hybrid = copy.deepcopy(_HYBRID)
        self._pipeline = copy.deepcopy(_PIPELINE)
        self._sharding = copy.deepcopy(_SHARDING)
        self._recompute = copy.deepcopy(_RECOMPUTE)
        self.sharding = False
        self.recompute = False
        self.amp = False
        self.find_unused_parameters = False
        self.fuse_grad_size_in_MB = 32
        self.tensor_parallel_configs: dict[str, Any] = {"tensor_init_seed": -1}

    @property
    def hybrid_configs(self) -> dict[str, Any]:
        return self._hybrid

    @hybrid_configs.setter
    def hybrid_configs(self, configs: dict[str, Any]) -> None:
        self._hybrid = _merge("hybrid_configs", self._hybrid, configs)
        order = self._hybrid["order"]
        if sorted(order) != sorted(_HYBRID["order"]):
            raise OpArgumentError(
                f"[DistributedStrategy] hybrid_configs['order'] must order {_HYBRID['order']}, got {order}"
            )

    @property
    def hybrid_parallel_order(self) -> list[str]:
        return list(self._hybrid["order"])

    @property
    def pipeline_configs(self) -> dict[str, Any]:
        return self._pipeline

    @pipeline_configs.setter
    def pipeline_configs(self, configs: dict[str, Any]) -> None:
        merged = _merge("pipeline_configs", self._pipeline, configs)
        if merged["schedule_mode"] not in ("1F1B", "FThenB"):
            raise OpArgumentError(
                f"[DistributedStrategy] pipeline_configs['schedule_mode'] must be '1F1B' or 'FThenB', "
                f"got {merged['schedule_mode']!r}"
            )
        self._pipeline = merged

    @property
    def sharding_configs(self) -> dict[str, Any]:
        return self._sharding

    @sharding_configs.setter
    def sharding_configs(self, configs: dict[str, Any]) -> None:
        self._sharding = _merge("sharding_configs", self._sharding, configs)

    @property
    def recompute_configs(self) -> dict[str, Any]:
        return self._recompute

    @recompute_configs.setter
    def recompute_configs(self, configs: dict[str, Any]) -> None:
        self._recompute = _merge("recompute_configs", self._recompute, configs)

    def __repr__(self) -> str:
        h = {k: v for k, v in self._hybrid.items() if k.endswith("degree")}
        return f"DistributedStrategy(hybrid_configs={h}, pipeline_configs={self._pipeline})"
