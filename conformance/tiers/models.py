"""Tier ``models``: model regression (added when framework.nn and framework.optim land)."""

from __future__ import annotations

from ..cases import Case, Target


def unavailable(target: Target) -> str | None:
    return "framework.nn and framework.optim are not in this oarlock yet"


def cases(target: Target) -> list[Case]:
    return []
