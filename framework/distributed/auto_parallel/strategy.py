"""``dist.Strategy``: what ``dist.to_static`` does beyond the placements (Paddle's class). Two
of Paddle's categories are read: ``pipeline`` (micro-batches over the stages the placements
make, :mod:`.pipeline`) and ``recompute``. Paddle's other categories (sharding,
gradient_merge, amp, fused_passes) are not built: naming one is an error that says so.

>>> import framework.distributed as dist
>>> s = dist.Strategy({"pipeline": {"enable": True, "accumulate_steps": 4}})
>>> s.pipeline.schedule_mode, s.pipeline.accumulate_steps, s.recompute.enable
('1F1B', 4, False)
"""

from __future__ import annotations

import copy
from typing import Any

from adapter_api import OpArgumentError

_DEFAULTS: dict[str, dict[str, Any]] = {
    # Paddle's defaults (paddle/distributed/auto_parallel/constants.py)
    "pipeline": {"enable": False, "schedule_mode": "1F1B", "micro_batch_size": 1, "accumulate_steps": 1},
    "recompute": {"enable": False},
}


class _Config:
    """One category of a :class:`Strategy`: its fields are attributes."""

    def __init__(self, category: str, values: dict[str, Any] | None) -> None:
        object.__setattr__(self, "_category", category)
        for k, v in {**_DEFAULTS[category], **(values or {})}.items():
            setattr(self, k, v)

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in _DEFAULTS[self._category]:
            raise OpArgumentError(
                f"[dist.Strategy] {self._category} has no field {name!r}; its fields are "
                f"{sorted(_DEFAULTS[self._category])}"
            )
        if name == "schedule_mode" and value not in ("1F1B", "FThenB"):
            raise OpArgumentError(
                f"[dist.Strategy] pipeline.schedule_mode must be '1F1B' or 'FThenB', got {value!r}"
            )
        object.__setattr__(self, name, value)

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in _DEFAULTS[self._category]}

    def __repr__(self) -> str:
        return f"{self._category}{self.to_dict()}"


class Strategy:
    """Paddle's ``dist.Strategy``: ``pipeline`` (``enable``, ``schedule_mode`` "1F1B" or
    "FThenB", ``micro_batch_size``, ``accumulate_steps``) and ``recompute`` (``enable``: each
    pipeline stage recomputes its activations in backward), given as a dict or set as
    attributes.

    >>> import framework.distributed as dist
    >>> s = dist.Strategy()
    >>> s.pipeline.enable = True
    >>> s.pipeline.schedule_mode = "FThenB"
    >>> s.pipeline
    pipeline{'enable': True, 'schedule_mode': 'FThenB', 'micro_batch_size': 1, 'accumulate_steps': 1}
    """

    def __init__(self, config: dict[str, Any] | None = None) -> None:
        if config is not None and not isinstance(config, dict):
            raise OpArgumentError(f"[dist.Strategy] config must be a dict, got {type(config).__name__}")
        config = copy.deepcopy(config or {})
        unknown = sorted(set(config) - set(_DEFAULTS))
        if unknown:
            raise OpArgumentError(
                f"[dist.Strategy] the categories {unknown} are not built; give {sorted(_DEFAULTS)}"
            )
        self.pipeline = _Config("pipeline", config.get("pipeline"))
        self.recompute = _Config("recompute", config.get("recompute"))

    def __repr__(self) -> str:
        return f"Strategy({self.pipeline!r}, {self.recompute!r})"
