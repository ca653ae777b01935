"""Under mpiexec: the collectives tier (framework.distributed.selfcheck) on one device.

If the device's plugin does not register a communicator yet but ships one as
``<plugin>.communicator.register_communicator`` (the OpenCL plugin until its hook calls it),
it is registered here first; tests/test_distributed.py reports that gap separately.
"""

from __future__ import annotations

import importlib
import sys

from framework._src.plugins import host
from framework.distributed.selfcheck import main

args = sys.argv[1:]
device = args[args.index("--device") + 1].split(":")[0]
reg = host().registry
if device not in reg.communicators and device in reg.runtimes:
    plugin_module = host().records[reg.runtimes[device][0]].module
    importlib.import_module(plugin_module + ".communicator").register_communicator(reg)
sys.exit(main(args))
