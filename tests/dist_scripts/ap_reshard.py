"""Under mpiexec (2 or 4 ranks; argv: [device] out): every reshard transition against numpy, forward and backward,
on a 1-d mesh (even and uneven shapes), on a 2x2 mesh (4 ranks) and between two meshes;
each rank writes out/rank{r}.json: [{"name", "ok", "detail"}]."""

from __future__ import annotations

import json
import os
import sys
import traceback

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

import framework.distributed as dist  # noqa: E402
from framework.distributed.auto_parallel.selfcheck import run_reshard_checks  # noqa: E402

out = sys.argv[-1]
device = sys.argv[1] if len(sys.argv) > 2 else "cpu"
dist.init_parallel_env()
rank, n = dist.get_rank(), dist.get_world_size()
records: list[dict] = []


def check(name: str, fn) -> None:
    try:
        fn()
        records.append({"name": name, "ok": True})
    except Exception as exc:  # noqa: BLE001 - recorded for the test to show
        records.append(
            {
                "name": name,
                "ok": False,
                "detail": f"{type(exc).__name__}: {exc}\n{traceback.format_exc()[-800:]}",
            }
        )


run_reshard_checks(check, device)

# an inserted reshard is logged
check(
    "log",
    lambda: (
        None
        if any(rec["collective"].startswith("all_gather") for rec in dist.auto_parallel.reshard_log())
        else (_ for _ in ()).throw(AssertionError("no all_gather logged"))
    ),
)

with open(os.path.join(out, f"rank{rank}.json"), "w") as f:
    json.dump(records, f)
