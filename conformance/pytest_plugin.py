"""The conformance suite as a pytest plugin: one pytest test per conformance case.

    pytest -p conformance.pytest_plugin --pyargs conformance --conformance-device opencl
    pytest -p conformance.pytest_plugin --pyargs conformance --conformance-device simdev \\
        --conformance-tier primitives -k "matmul" --junitxml=junit.xml

Cases still run in forked workers with a timeout (all of them once, on the first test that
needs a result), so a crashing kernel fails its own test; "not supported" cases are skipped.
"""

from __future__ import annotations

from typing import Any

import pytest

from .cases import TIERS, Case, Result, collect, make_target
from .runner import DEFAULT_TIMEOUT, Runner


def pytest_addoption(parser: Any) -> None:
    g = parser.getgroup("oarlock conformance")
    g.addoption("--conformance-device", default=None, help="device to run the conformance suite on")
    g.addoption(
        "--conformance-tier", action="append", default=[], help=f"tiers ({', '.join(TIERS)}); repeatable"
    )
    g.addoption("--conformance-timeout", type=float, default=DEFAULT_TIMEOUT, help="seconds per case")
    g.addoption(
        "--conformance-plugin",
        action="append",
        default=[],
        help="load an uninstalled plugin (module or path)",
    )


def _cases(config: Any) -> list[Case]:
    cached = getattr(config, "_oarlock_conformance_cases", None)
    if cached is None:
        from .cli import _tiers, load_plugin

        for spec in config.getoption("conformance_plugin"):
            load_plugin(spec)
        target = make_target(config.getoption("conformance_device"))
        cached = collect(target, _tiers(config.getoption("conformance_tier")))
        config._oarlock_conformance_cases = cached
    return cached


def pytest_generate_tests(metafunc: Any) -> None:
    if "conformance_case" not in metafunc.fixturenames:
        return
    if not metafunc.config.getoption("conformance_device"):
        metafunc.parametrize(
            "conformance_case",
            [
                pytest.param(
                    None,
                    marks=pytest.mark.skip(
                        reason="give --conformance-device NAME to run the conformance suite"
                    ),
                )
            ],
        )
        return
    cases = _cases(metafunc.config)
    metafunc.parametrize("conformance_case", cases, ids=[c.id for c in cases])


@pytest.fixture(scope="session")
def conformance_results(request: Any) -> dict[str, Result]:
    """Every selected case's result; the cases run (isolated) the first time this is asked for."""
    config = request.config
    selected = {item.callspec.id for item in request.session.items if hasattr(item, "callspec")}
    cases = [c for c in _cases(config) if c.id in selected]
    results = Runner(cases, timeout=config.getoption("conformance_timeout")).run()
    return {r.id: r for r in results}


def check(case: Case, results: dict[str, Result]) -> None:
    r = results[case.id]
    if r.outcome in ("not_supported", "skipped"):
        pytest.skip(f"{r.outcome}: {r.message}")
    if r.outcome == "failed":
        extra = (
            f"\nexpected: {r.expected}\ngot:      {r.got}"
            if r.expected is not None or r.got is not None
            else ""
        )
        pytest.fail(f"{r.message}{extra}", pytrace=False)
