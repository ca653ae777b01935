"""Real Paddle as the differential oracle: its docstring examples run under Paddle and Oarlock.

``python -m conformance.parity`` reads the ``>>>`` examples of the installed ``paddlepaddle``
wheel (never copied here), runs each under real Paddle and under ``framework`` imported as
``paddle``, and counts the examples Paddle reproduces and, of those, the ones Oarlock reproduces
(values, dtypes and shapes within tolerance; random values by dtype and shape). See the
"Paddle parity" section of docs/benchmarks.md.
"""

from __future__ import annotations

from .examples import FILES, Example, Part, collect
from .report import Outcome, evaluate, evaluate_all, passing, summarize
from .run import OarlockSide, PaddleSide, Run, capture, compare, run_example

__all__ = [
    "FILES",
    "Example",
    "OarlockSide",
    "Outcome",
    "PaddleSide",
    "Part",
    "Run",
    "capture",
    "collect",
    "compare",
    "evaluate",
    "evaluate_all",
    "passing",
    "run_example",
    "summarize",
]
