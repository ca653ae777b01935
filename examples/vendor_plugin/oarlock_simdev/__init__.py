"""oarlock-simdev: a simulated device for Oarlock, written the way a vendor would write one.

Memory lives in host ``bytearray`` buffers behind the runtime interface; kernels are numpy.
It implements only the primitive set, so every composite, autograd and model runs on it
through the core's decompositions.
"""

from adapter_api import hookimpl

CONTRACT = (1, 2)  # the adapter contract this plugin was written for (1.2: gather takes wrap)
__version__ = "0.1.0"


@hookimpl
def oarlock_register(registry):
    from .communicator import SimCommunicator
    from .kernels import KERNELS
    from .runtime import SimRuntime

    registry.add_runtime("simdev", SimRuntime)
    for op, dtypes, fn in KERNELS:
        registry.add_kernel(op, "simdev", dtypes, fn, broadcast=True)
    registry.add_communicator("simdev", SimCommunicator)  # host-staged collectives (needs MPI)


@hookimpl
def oarlock_plugin_info():
    return {"version": __version__, "description": "simulated device: host bytearrays, numpy kernels"}
