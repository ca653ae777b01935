"""Tier ``collectives``: run under mpiexec with 2 and 4 ranks (added when framework.distributed lands)."""

from __future__ import annotations

from ..cases import Case, Target


def unavailable(target: Target) -> str | None:
    return "framework.distributed is not in this oarlock yet"


def cases(target: Target) -> list[Case]:
    return []
