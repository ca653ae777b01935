"""Tier ``collectives``: every collective x dtype x reduce op, then every reshard transition of
``fw.distributed.reshard`` built on them (``reshard/...``: S->R, P->R, P->S, R->S, R->P,
S(i)->S(j), uneven shards, a 2x2 mesh and a move between meshes, forward and backward), under
mpiexec with 2 and 4 ranks.

The checks themselves live with the communication code (``framework.distributed.selfcheck``,
one numpy reference per rank); this tier launches them and turns each rank count into a case.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from ..cases import Case, Target
from ..checks import CheckFailure

RANKS = (2, 4)
TIMEOUT = 600.0


def unavailable(target: Target) -> str | None:
    try:
        import framework.distributed.selfcheck  # noqa: F401
    except ImportError as exc:
        return f"framework.distributed cannot be imported ({exc})"
    if not target.has_communicator:
        return f"the '{target.plugin}' plugin registers no communicator for '{target.type}'"
    return None


def run_ranks(device: str, n: int) -> dict[str, Any]:
    from framework.distributed.selfcheck import run_tier

    records = run_tier(device, (n,), timeout=TIMEOUT - 30)
    bad = [r for r in records if not r.get("ok")]
    names = Counter(r["name"].split("/")[0] for r in records)
    data = {"checks": len(records), "by_collective": dict(names)}
    if bad:
        first = "\n".join(
            f"rank {r['rank']} {r['name']}: {r.get('detail', '')}" for r in bad[:5]
        )  # whole tracebacks
        raise CheckFailure(
            f"{len(bad)} of {len(records)} collective checks failed with {n} ranks:\n{first}",
            "every rank ok",
            f"{len(bad)} failed",
        )
    return data


def cases(target: Target) -> list[Case]:
    if unavailable(target):
        return []
    return [
        Case(
            f"collectives/{n}_ranks",
            "collectives",
            (lambda n=n: run_ranks(target.device, n)),
            timeout=TIMEOUT,
        )
        for n in RANKS
    ]
