"""Paddle's own docstring examples that Oarlock reproduces keep being reproduced.

``conformance/data/paddle_parity_passing.json`` is the list ``python -m conformance.parity
--record`` wrote: the examples real Paddle reproduces and Oarlock matched (values, dtypes and
shapes; the leaves recorded as random by dtype and shape only). Each is run again here under
real Paddle and under ``framework`` imported as ``paddle``; one that no longer matches is a
regression. Skipped where paddlepaddle is not installed (``pip install 'oarlock[dev]'``).
"""

from __future__ import annotations

import json
import warnings

import pytest

from conformance.parity import OarlockSide, PaddleSide, collect, evaluate
from conformance.parity.__main__ import PASSING

RECORDED: dict[str, list[str] | None] = json.loads(PASSING.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def sides():
    pytest.importorskip(
        "paddle", reason="real Paddle (the oracle) is not installed: pip install paddlepaddle"
    )
    warnings.simplefilter("ignore")
    return PaddleSide(), OarlockSide(), {e.id: e for e in collect()}


def test_the_recorded_list_is_not_empty():
    assert len(RECORDED) >= 250


@pytest.mark.parametrize("example_id", sorted(RECORDED))
def test_example_still_reproduced(sides, example_id):
    paddle, oarlock, examples = sides
    if example_id not in examples:
        pytest.fail(f"{example_id} is no longer among the wheel's examples; re-record the list")
    out = evaluate(examples[example_id], paddle, oarlock, random=RECORDED[example_id])
    assert out.paddle_runs, f"real Paddle no longer runs it: {out.paddle_note}"
    assert out.oarlock == "pass", f"{out.oarlock}: {out.detail}"
