"""Fixtures for the OpenCL plugin's contract-level tests (helpers in opencl_harness.py)."""

from __future__ import annotations

from typing import Any

import pytest
from opencl_harness import Harness, opencl_or_skip


@pytest.fixture(scope="session")
def opencl() -> tuple[Any, Any]:
    return opencl_or_skip()


@pytest.fixture(scope="session")
def registry(opencl: tuple[Any, Any]) -> Any:
    return opencl[0]


@pytest.fixture(scope="session")
def runtime(opencl: tuple[Any, Any]) -> Any:
    return opencl[1]


@pytest.fixture(scope="session")
def h(opencl: tuple[Any, Any]) -> Harness:
    return Harness(*opencl)
