"""One module per tier; each has ``cases(target) -> list[Case]``."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from types import ModuleType


def _lazy(name: str) -> Callable[[], ModuleType]:
    return lambda: importlib.import_module(f"conformance.tiers.{name}")


TIER_MODULES: dict[str, Callable[[], ModuleType]] = {
    "runtime": _lazy("runtime"),
    "primitives": _lazy("primitives"),
    "random": _lazy("random"),
    "lowp": _lazy("lowp"),
    "autograd": _lazy("autograd"),
    "composites": _lazy("composites"),
    "static": _lazy("static"),
    "compile": _lazy("compile"),
    "collectives": _lazy("collectives"),
    "models": _lazy("models"),
}
