"""One process of :func:`framework.distributed.spawn` (``python -m`` runs it; see there)."""

from __future__ import annotations

import pickle
import runpy
import sys
import traceback
from importlib import import_module
from pathlib import Path
from typing import Any

from .collective import get_rank


def _rank_main(folder: str) -> int:
    """In each process: load the function, run it, keep its return value for the parent."""
    job = pickle.loads(Path(folder, "job.pkl").read_bytes())
    if job["main"] is not None:
        mod = runpy.run_path(job["main"], run_name="__mp_main__")
        target: Any = mod[job["name"].split(".")[0]]
        rest = job["name"].split(".")[1:]
    else:
        target, rest = import_module(job["module"]), job["name"].split(".")
    for part in rest:
        target = getattr(target, part)
    try:
        value = target(*job["args"])
    except BaseException:
        traceback.print_exc()
        return 1
    Path(folder, f"rank{get_rank()}.out").write_bytes(pickle.dumps(value))
    return 0


if __name__ == "__main__":
    sys.exit(_rank_main(sys.argv[1]))
