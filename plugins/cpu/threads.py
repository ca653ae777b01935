"""The CPU plugin's thread policy: one budget of compute threads for BLAS and the generated
OpenMP kernels, and no busy-waiting between them.

On a machine with few cores three thread pools meet: the BLAS library's (matmul), libgomp's
(generated C kernels, ``#pragma omp parallel for``) and the plugin's stream workers. Left
alone, libgomp's workers spin for a while after each kernel, on the cores the next matmul's
BLAS threads need, and each pool sizes itself to the whole machine. The policy:

- the budget is ``OARLOCK_NUM_THREADS``, else the cores this process may run on;
- BLAS is limited to the budget (threadpoolctl, at runtime creation);
- generated kernels get ``OMP_NUM_THREADS`` = the budget and ``OMP_WAIT_POLICY=PASSIVE``
  (their threads sleep as soon as a kernel ends), set before the first kernel loads libgomp
  unless the user set them;
- a stream worker runs the work its caller waits for, so it takes no share of the budget.

``OARLOCK_THREAD_POLICY=0`` leaves every pool as its library configures it.
"""

from __future__ import annotations

import os
import threading
from typing import Any

from adapter_api import DeviceError

_APPLIED: list[Any] = []
_LOCK = threading.Lock()


def budget() -> int:
    """Compute threads: ``OARLOCK_NUM_THREADS``, else the cores this process may use."""
    env = os.environ.get("OARLOCK_NUM_THREADS", "").strip()
    if env:
        try:
            n = int(env)
        except ValueError:
            n = 0
        if n < 1:
            raise DeviceError(
                f"[cpu] OARLOCK_NUM_THREADS must be a positive integer, got {env!r}; unset it or give one"
            )
        return n
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def enabled() -> bool:
    return os.environ.get("OARLOCK_THREAD_POLICY", "1").strip().lower() not in ("0", "off", "false", "no")


def apply() -> None:
    """Apply the policy once per process (idempotent); before the first generated kernel loads."""
    if _APPLIED or not enabled():
        return
    with _LOCK:
        if _APPLIED:
            return
        n = budget()
        explicit = bool(os.environ.get("OARLOCK_NUM_THREADS", "").strip())
        if explicit or "OMP_NUM_THREADS" not in os.environ:
            os.environ["OMP_NUM_THREADS"] = str(n)
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        limiter = None
        try:
            from threadpoolctl import threadpool_limits

            limiter = threadpool_limits(limits=n, user_api="blas")
        except Exception:  # noqa: BLE001 — no threadpoolctl, or a BLAS it cannot drive: keep BLAS's own
            limiter = None
        _APPLIED.append((n, limiter))


def describe() -> dict[str, Any]:
    """What the policy set: the budget, the OpenMP settings and the BLAS pools' thread counts."""
    out: dict[str, Any] = {
        "enabled": enabled(),
        "budget": budget(),
        "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS"),
        "OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY"),
    }
    try:
        from threadpoolctl import threadpool_info

        out["pools"] = [
            (p.get("internal_api"), p.get("num_threads"))
            for p in threadpool_info()
            if p.get("user_api") == "blas"
        ]
    except Exception:  # noqa: BLE001
        out["pools"] = []
    return out
