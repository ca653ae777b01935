"""``python -m conformance.parity``: Paddle's docstring examples, under real Paddle and Oarlock."""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path

from .examples import collect
from .report import evaluate_all, failure_reasons, passing, summarize, table, write_json
from .run import OarlockSide, PaddleSide

#: the committed list of examples Oarlock reproduces (tests/test_paddle_parity_examples.py)
PASSING = Path(__file__).resolve().parent.parent / "data" / "paddle_parity_passing.json"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m conformance.parity", description=__doc__)
    ap.add_argument("--json", type=Path, default=Path("paddle_parity_report.json"), help="report file")
    ap.add_argument("-k", default="", help="only examples whose id contains this text")
    ap.add_argument("--failures", type=int, default=30, help="how many failure reasons to list")
    ap.add_argument("--record", action="store_true", help=f"rewrite {PASSING.name} from this run")
    ap.add_argument("-v", "--verbose", action="store_true", help="one line per example")
    args = ap.parse_args(argv)

    warnings.simplefilter("ignore")
    examples = [e for e in collect() if args.k in e.id]
    paddle, oarlock = PaddleSide(), OarlockSide()

    def progress(o):
        if args.verbose:
            verdict = o.oarlock if o.paddle_reproduces else "paddle: " + o.paddle_note[:80]
            print(f"{o.id:<60} {verdict} {o.detail[:100]}", file=sys.stderr)

    outcomes = evaluate_all(examples, paddle, oarlock, progress)
    summary = summarize(outcomes)
    print(table(summary))
    t = summary["total"]
    print(
        f"\nOarlock reproduces {t['oarlock_passes']} of the {t['paddle_reproduces']} examples real Paddle "
        f"{paddle.paddle.__version__} reproduces ({t['oarlock_percent']} %); {t['raise']} raise, "
        f"{t['missing_api']} of them a missing function or module; exceptions: {summary['exceptions']}"
    )
    if args.failures:
        print("\nmost frequent failures:")
        for count, reason in failure_reasons(outcomes, args.failures):
            print(f"{count:>4}  {reason}")
    write_json(args.json, summary, outcomes, paddle.paddle.__version__)
    print(f"\nreport: {args.json}")
    if args.record:
        PASSING.write_text(json.dumps(passing(outcomes), indent=1, sort_keys=True) + "\n", encoding="utf-8")
        print(f"passing list: {PASSING}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
