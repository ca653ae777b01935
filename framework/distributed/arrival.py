"""Before a collective that a program may well call on one rank only (``x.numpy()`` of a sharded
tensor under ``if rank == 0:``): wait until the peers have reached the same call, and raise at
once, naming the call and the peer, when a peer shows that it never will.

Under ``oarlock launch`` every rank keeps, in the job folder, how many times it has reached each
such call (``rank<r>.calls``, a small JSON object written on each call), next to its record of
the collective it is in (:class:`.supervisor.Activity`). :func:`arrive` bumps this rank's count
and waits until every peer's count is as high. A peer that cannot get there is seen by its
record: it has ended or is exiting (its script finished), a collective of it raised, or it has
waited in another collective for :data:`STUCK_AFTER` seconds (it waits for this rank, which
waits for it). A peer that is computing is waited for, up to the collective timeout.

Outside ``oarlock launch`` (plain ``mpiexec``, no job folder) nothing is recorded and the
collective itself runs: a missing rank then shows as its timeout.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from adapter_api import CommunicationError

from . import collective
from .supervisor import JOB_ENV, _read_record, describe_exit, read_exit

#: seconds a peer may wait in another collective before it counts as stuck there
STUCK_AFTER = 2.0
#: this rank's counts: call key -> how many times it was reached
_COUNTS: dict[str, int] = {}


def _write_counts(folder: str, rank: int) -> None:
    path = Path(folder) / f"rank{rank}.calls"
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(_COUNTS))
    os.replace(tmp, path)  # a reader sees the old or the new file, never half of one


def _count(folder: str, rank: int, key: str) -> int:
    try:
        return int(json.loads((Path(folder) / f"rank{rank}.calls").read_text()).get(key, 0))
    except (OSError, ValueError):
        return 0


def _cannot(folder: str, rank: int, since: dict[int, tuple], now: float) -> str | None:
    """Why peer ``rank`` will never reach the call, or None while it still may."""
    ended = read_exit(folder, rank)
    if ended is not None:
        return f"it has ended (it {describe_exit(int(ended.get('code', 0)))})"
    rec = _read_record(folder, rank)
    if rec is None:
        return None
    kind, seq, _t, _timeout, what = rec
    if kind == "S" and what.startswith("exiting"):
        return "its script has finished (it is exiting)"
    if kind == "F":
        return f"it failed: {what}"
    if kind == "I":
        first = since.setdefault(rank, (seq, now))
        if first[0] != seq:
            since[rank] = (seq, now)
        elif now - first[1] >= STUCK_AFTER:
            return f"it waits in {what} (collective #{seq}) instead"
    else:
        since.pop(rank, None)
    return None


def arrive(key: str, ranks: list[int], call: str, advice: str) -> None:
    """Wait until every rank of ``ranks`` (world ranks; this one among them) has reached the
    call ``key`` as many times as this rank; raise :class:`CommunicationError` naming ``call``,
    the peer, what it does instead and ``advice`` when a peer cannot (see the module).

    >>> arrive("example", [0], "x.numpy()", "")   # a world of one: nothing to wait for
    """
    folder = os.environ.get(JOB_ENV)
    if not folder or not collective.is_initialized():
        return
    me = collective.get_rank()
    peers = [r for r in ranks if r != me]
    if not peers:
        return
    n = _COUNTS[key] = _COUNTS.get(key, 0) + 1
    _write_counts(folder, me)
    act = collective._STATE["activity"]
    if act is not None:
        act.state("waiting", f"for rank(s) {peers} to reach {call} (call #{n} there)")
    timeout = float(collective._world().host.timeout)
    t0 = time.monotonic()
    waiting = set(peers)
    since: dict[int, tuple] = {}
    while waiting:
        now = time.monotonic()
        for p in sorted(waiting):
            if _count(folder, p, key) >= n:
                waiting.discard(p)
                continue
            why = _cannot(folder, p, since, now)
            if why is None and now - t0 > timeout:
                why = f"it did not reach it in {timeout:g} s (OARLOCK_COLLECTIVE_TIMEOUT)"
            if why is not None:
                raise CommunicationError(
                    f"[distributed] {call} on rank {me} is a collective of ranks {sorted(ranks)}, but rank {p} "
                    f"has not called it ({why}); {advice}"
                )
        if waiting:
            time.sleep(0.0005 if now - t0 < 0.05 else 0.01)


__all__ = ["arrive"]
