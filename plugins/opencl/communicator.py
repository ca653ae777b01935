"""Collectives for OpenCL devices, staged through host memory over the host (MPI) communicator.

OpenCL has no collective library: each call copies the device buffer to a host array, runs
the host communicator's collective on it (the CPU plugin's, on MPI, with its timeouts and
fault reports) and copies the result back. Wire it up from the plugin's hook with
``register_communicator(registry)``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adapter_api import StagedCommunicator


class OpenCLCommunicator(StagedCommunicator):
    """Host-staged collectives on ``CLView`` buffers (see ``OpenCLRuntime.view``)."""

    def download(self, view: Any, stream: Any) -> np.ndarray:
        out = np.empty(tuple(view.shape), view.dtype)
        if out.nbytes:
            self.runtime.copy_d2h(self.device_index, out, view.buffer, view.offset, stream, True)
        return out

    def upload(self, view: Any, array: np.ndarray, stream: Any) -> None:
        array = np.ascontiguousarray(array, dtype=view.dtype)
        if array.nbytes:
            self.runtime.copy_h2d(self.device_index, view.buffer, view.offset, array, stream, True)


def register_communicator(registry: Any) -> None:
    registry.add_communicator("opencl", OpenCLCommunicator)
