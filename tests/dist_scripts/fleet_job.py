"""Under mpiexec (4 ranks): the pipeline checks (pp_train.py) then the tensor-parallel and
ZeRO checks (fleet_train.py) in one job, so the test suite starts the 4 ranks once.

``python fleet_job.py DEVICE OUT`` writes ``OUT/pp/rank{r}.npz`` and ``OUT/fleet/rank{r}.npz``.
"""

from __future__ import annotations

import os
import runpy
import sys

here = os.path.dirname(os.path.abspath(__file__))
device, out = sys.argv[1], sys.argv[2]
for part, script in (("pp", "pp_train.py"), ("fleet", "fleet_train.py")):
    os.makedirs(os.path.join(out, part), exist_ok=True)
    sys.argv = [script, device, os.path.join(out, part)]
    runpy.run_path(os.path.join(here, script), run_name="__main__")
