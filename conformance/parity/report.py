"""Run every example under both sides and count: the per-file table and the JSON report."""

from __future__ import annotations

import collections
import json
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .examples import Example
from .run import (
    MISSING,
    SEED,
    PaddleSide,
    Side,
    compare,
    error_summary,
    paddle_reproduces,
    random_paths,
    run_example,
)


@dataclass
class Outcome:
    """One example's result: Paddle's verdict on itself, then Oarlock's against Paddle."""

    id: str
    file: str
    paddle_runs: bool = False
    paddle_reproduces: bool = False
    paddle_note: str = ""
    #: leaves compared by kind, dtype and shape only; None: all of them
    random: list[str] | None = field(default_factory=list)
    #: "pass", "mismatch" or "raise" ("" when real Paddle does not run the example)
    oarlock: str = ""
    error_type: str = ""
    detail: str = ""
    #: wall time of Oarlock's run
    seconds: float = 0.0


def evaluate(
    example: Example, paddle: PaddleSide, oarlock: Side, random: list[str] | None | bool = True
) -> Outcome:
    """Run ``example`` under both sides. ``random=True`` finds random leaves by a second seed;
    a list (or None) gives them, as recorded, to skip the second Paddle run."""
    out = Outcome(id=example.id, file=example.file)
    want = run_example(paddle, example, SEED)
    out.paddle_runs = want.error is None
    out.paddle_reproduces, out.paddle_note = paddle_reproduces(example, want)
    if not out.paddle_runs:
        return out
    if random is True:
        with paddle.seeds_moved(1):
            again = run_example(paddle, example, SEED + 1)
        found = random_paths(want, again) if again.error is None else None
        out.random = None if found is None else sorted(found)
    else:
        out.random = random
    start = time.perf_counter()
    got = run_example(oarlock, example, SEED)
    out.seconds = round(time.perf_counter() - start, 3)
    if got.error is not None:
        out.oarlock, out.error_type = "raise", type(got.error).__name__
        out.detail = f"part {got.error_part}: {error_summary(got.error)}"
        return out
    diff = compare(want, got, None if out.random is None else set(out.random))
    out.oarlock, out.detail = ("mismatch", diff) if diff else ("pass", "")
    return out


def evaluate_all(
    examples: Iterable[Example],
    paddle: PaddleSide,
    oarlock: Side,
    progress: Callable[[Outcome], None] | None = None,
) -> list[Outcome]:
    outcomes = []
    for ex in examples:
        o = evaluate(ex, paddle, oarlock)
        outcomes.append(o)
        if progress:
            progress(o)
    return outcomes


def _counts(rows: list[Outcome]) -> dict:
    ok = [r for r in rows if r.paddle_reproduces]
    passed = sum(r.oarlock == "pass" for r in ok)
    return {
        "examples": len(rows),
        "paddle_reproduces": len(ok),
        "oarlock_passes": passed,
        "oarlock_percent": round(100.0 * passed / len(ok), 1) if ok else 0.0,
        "mismatch": sum(r.oarlock == "mismatch" for r in ok),
        "raise": sum(r.oarlock == "raise" for r in ok),
        "missing_api": sum(r.oarlock == "raise" and r.error_type in MISSING for r in ok),
        "paddle_runs": sum(r.paddle_runs for r in rows),
        "oarlock_passes_of_paddle_runs": sum(r.oarlock == "pass" for r in rows),
    }


def summarize(outcomes: list[Outcome]) -> dict:
    by_file: dict[str, list[Outcome]] = collections.defaultdict(list)
    for o in outcomes:
        by_file[o.file].append(o)
    ok = [o for o in outcomes if o.paddle_reproduces]
    errors = collections.Counter(o.error_type for o in ok if o.oarlock == "raise")
    return {
        "total": _counts(outcomes),
        "files": {f: _counts(rows) for f, rows in by_file.items()},
        "exceptions": dict(errors.most_common()),
    }


def failure_reasons(outcomes: list[Outcome], n: int = 40) -> list[tuple[int, str]]:
    """The most frequent reasons Oarlock fails an example real Paddle reproduces."""
    counter: collections.Counter[str] = collections.Counter()
    for o in outcomes:
        if o.paddle_reproduces and o.oarlock != "pass":
            reason = re.sub(r"^part \d+: ", "", o.detail)
            reason = re.sub(r"\[[^\]]*\]$", "[...]", reason)[:160]
            counter[f"{o.oarlock}: {reason}"] += 1
    return [(c, r) for r, c in counter.most_common(n)]


def table(summary: dict) -> str:
    head = f"{'file':<28}{'examples':>9}{'paddle ok':>10}{'oarlock':>9}{'%':>7}{'mismatch':>9}{'raise':>7}{'missing':>9}"
    lines = [head, "-" * len(head)]
    rows = [*summary["files"].items(), ("total", summary["total"])]
    for name, c in rows:
        if name == "total":
            lines.append("-" * len(head))
        lines.append(
            f"{name:<28}{c['examples']:>9}{c['paddle_reproduces']:>10}{c['oarlock_passes']:>9}"
            f"{c['oarlock_percent']:>7.1f}{c['mismatch']:>9}{c['raise']:>7}{c['missing_api']:>9}"
        )
    return "\n".join(lines)


def write_json(path: Path, summary: dict, outcomes: list[Outcome], paddle_version: str) -> None:
    doc = {"paddle_version": paddle_version, **summary, "examples": [asdict(o) for o in outcomes]}
    path.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")


#: examples slower than this under Oarlock stay out of the regression list (the test suite's
#: budget; e.g. Unfold's example unfolds a [100, 3, 224, 224] batch)
SLOW_S = 3.0


def passing(outcomes: list[Outcome]) -> dict[str, list[str] | None]:
    """The examples Oarlock reproduces quickly, with their random leaves: the regression list."""
    return {
        o.id: o.random for o in outcomes if o.paddle_reproduces and o.oarlock == "pass" and o.seconds < SLOW_S
    }
