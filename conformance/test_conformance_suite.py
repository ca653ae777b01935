"""The test pytest collects for ``pytest -p conformance.pytest_plugin --pyargs conformance``."""

from conformance.pytest_plugin import check


def test_conformance_case(conformance_case, conformance_results):  # type: ignore[no-untyped-def]
    check(conformance_case, conformance_results)
