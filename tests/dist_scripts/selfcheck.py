"""Under mpiexec: the collectives tier (framework.distributed.selfcheck) on one device."""

from __future__ import annotations

import sys

from framework.distributed.selfcheck import main

sys.exit(main(sys.argv[1:]))
