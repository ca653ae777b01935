"""Collectives for simdev, staged through host memory (the recipe for a device with no
collective library): the host communicator (MPI) runs each collective on numpy copies."""

import numpy as np

from adapter_api import StagedCommunicator


class SimCommunicator(StagedCommunicator):
    """A simdev view is a numpy array over the buffer: download copies it, upload writes into it."""

    def download(self, view, stream):
        return np.array(view, copy=True)

    def upload(self, view, array, stream):
        view[...] = array
