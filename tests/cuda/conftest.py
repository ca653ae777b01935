"""Fixtures of the CUDA plugin tests."""

from __future__ import annotations

import pytest
from cuda_marks import cuda_unavailable, skip_reason


@pytest.fixture(scope="session")
def runtime():
    """A CUDARuntime on a machine with a GPU; the test is skipped otherwise."""
    from plugins.cuda import CUDARuntime

    if cuda_unavailable() is not None:
        pytest.skip(skip_reason())
    return CUDARuntime()
