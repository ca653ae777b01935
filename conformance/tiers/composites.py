"""Tier ``compile``: compile access (added when framework.compiler lands)."""

from __future__ import annotations

from ..cases import Case, Target


def unavailable(target: Target) -> str | None:
    return "framework.compiler is not in this oarlock yet"


def cases(target: Target) -> list[Case]:
    return []
