"""The CPU plugin's thread policy: one budget of compute threads for matmul, the large numpy
kernels and the generated OpenMP kernels, and no busy-waiting between them.

On a machine with few cores three thread pools meet: the BLAS library's (matmul), libgomp's
(generated C kernels, ``#pragma omp parallel for``) and the plugin's stream workers. Left
alone, each sizes itself to the whole machine, and the BLAS and OpenMP threads spin for a while
after each call on the cores the next kernel needs (OpenBLAS's also wait on each other inside a
product, so one thread the OS puts off stalls the other). The policy:

- the budget is ``OARLOCK_NUM_THREADS``; else the smallest thread count the user gave BLAS or
  OpenMP (``OMP_NUM_THREADS``, ``OPENBLAS_NUM_THREADS``, ``MKL_NUM_THREADS``…) up to the cores;
  else the cores this process may run on;
- BLAS runs on one thread, and the plugin splits a product big enough to gain into independent
  blocks of rows (or of the batch) that :class:`WorkerPool`'s ``budget - 1`` threads and the
  calling thread take in turn (:func:`run_parts`) where the OpenMP team cannot (below), but
  only where BLAS may be called from several threads at once (MKL; :func:`split_products`):
  numpy's OpenBLAS gave wrong results at random that way, so its products run as one call on
  one thread (its own threads measured worse still on a loaded machine: docs/architecture.md).
  Nothing waits for a thread that has not
  started: the caller takes every block no worker has claimed yet, so a busy machine degrades
  to one thread, not to a stall. The blocks follow the BLAS kernel's row tiles
  (:func:`row_grain`), so a split product has the bits of the whole one at any budget. When the
  user sized BLAS themselves (one of the variables above, and no ``OARLOCK_NUM_THREADS``),
  BLAS is left as they set it and products are not split;
- large exp/log/sin/cos/tanh/erf kernels are split the same way (numpy's loops are single-
  threaded; the cheaper elementwise kernels are bound by memory traffic and run whole);
- a 2-D float product runs its blocks on the OpenMP team instead (gemm.py: numpy's BLAS
  called from C per block), and generated kernels get ``OMP_NUM_THREADS`` = the budget and
  ``GOMP_SPINCOUNT`` = :data:`SPIN_COUNT` (an idle team thread waits ~0.2 ms for the next
  kernel, then sleeps: a kernel of 100 us gains from a second thread instead of waiting ~45 us
  for it to wake), set before the first kernel loads libgomp unless the user set
  ``OMP_WAIT_POLICY`` or ``GOMP_SPINCOUNT``. BLAS runs on one thread inside each block, so
  nothing spins against it;
- a forked child runs OpenMP regions on one thread (its libgomp would wait for the parent's
  team);
- a stream worker runs the work its caller waits for, so it takes no share of the budget.

``OARLOCK_THREAD_POLICY=0`` leaves every pool as its library configures it and splits nothing.
"""

from __future__ import annotations

import ctypes
import itertools
import os
import queue
import threading
from typing import Any

from adapter_api import DeviceError

# what the user may have sized BLAS or OpenMP with (OpenBLAS also reads OMP_NUM_THREADS)
_BLAS_ENV = ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS")
_USER_ENV = (*_BLAS_ENV, "OMP_NUM_THREADS")
#: libgomp's busy-wait iterations before an idle OpenMP thread sleeps (~15-20 ns each measured on
#: the 2-core Intel VM: ~0.2 ms), so the next kernel finds its team awake; 0 would be passive
SPIN_COUNT = 10000


class _State:
    """What :func:`apply` decided, once per process."""

    def __init__(self, budget: int, own_blas: bool, limiter: Any) -> None:
        self.budget = budget
        self.own_blas = own_blas  # BLAS at one thread; the plugin splits products
        self.limiter = limiter
        self.pool: WorkerPool | None = None
        self.forked = False  # a forked child: the parent's OpenMP team is not there


_STATE: list[_State] = []
_LOCK = threading.Lock()


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _user_counts() -> list[int]:
    """The thread counts the user set for BLAS or OpenMP (positive integers only)."""
    out = []
    for k in _USER_ENV:
        try:
            n = int(os.environ.get(k, "").strip().split(",")[0])
        except ValueError:
            continue
        if n >= 1:
            out.append(n)
    return out


def budget() -> int:
    """Compute threads: ``OARLOCK_NUM_THREADS``, else the smallest BLAS/OpenMP count the user
    set (up to the cores), else the cores this process may use."""
    if _STATE:
        return _STATE[0].budget
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
    user = _user_counts()
    return min(min(user), _cores()) if user else _cores()


def enabled() -> bool:
    return os.environ.get("OARLOCK_THREAD_POLICY", "1").strip().lower() not in ("0", "off", "false", "no")


def apply() -> None:
    """Apply the policy once per process (idempotent); before the first generated kernel loads."""
    if _STATE or not enabled():
        return
    with _LOCK:
        if _STATE:
            return
        n = budget()
        explicit = bool(os.environ.get("OARLOCK_NUM_THREADS", "").strip())
        user_blas = any(os.environ.get(k, "").strip() for k in _USER_ENV)
        if explicit or "OMP_NUM_THREADS" not in os.environ:
            os.environ["OMP_NUM_THREADS"] = str(n)
        if not any(os.environ.get(k, "").strip() for k in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")):
            os.environ["GOMP_SPINCOUNT"] = str(SPIN_COUNT)
        own = explicit or not user_blas
        limiter = None
        if own:
            try:
                from threadpoolctl import threadpool_limits

                limiter = threadpool_limits(limits=1, user_api="blas")
            except Exception:  # noqa: BLE001 — no threadpoolctl, or a BLAS it cannot drive: keep BLAS's own
                limiter, own = None, False
        _STATE.append(_State(n, own, limiter))


def describe() -> dict[str, Any]:
    """What the policy set: the budget, whether products are split, the OpenMP settings and the
    BLAS pools' thread counts."""
    st = _STATE[0] if _STATE else None
    out: dict[str, Any] = {
        "enabled": enabled(),
        "budget": budget(),
        "split_matmul": split_products(numpy_blas()),  # numpy's BLAS; gemm.py's may be MKL
        "split_team": split_products(),  # kernels that call no BLAS
        "workers": (st.budget - 1) if st else 0,
        "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS"),
        "OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY"),
        "GOMP_SPINCOUNT": os.environ.get("GOMP_SPINCOUNT"),
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


def blas_pools() -> list[dict[str, Any]]:
    """threadpoolctl's BLAS entries, numpy's own first (scipy's, loaded by some kernels, after
    it; MKL's too), or [] without threadpoolctl or a BLAS it can read."""
    try:
        from threadpoolctl import threadpool_info

        pools = [p for p in threadpool_info() if p.get("user_api") == "blas"]
    except Exception:  # noqa: BLE001 — no threadpoolctl, or a BLAS it cannot read
        return []
    return sorted(pools, key=lambda p: "numpy" not in str(p.get("filepath", "")))


# -- splitting work ---------------------------------------------------------------------------
class _Job:
    """Independent parts of one kernel: whoever calls :meth:`work` claims the next part."""

    __slots__ = ("fn", "parts", "n", "claim", "left", "lock", "done", "error")

    def __init__(self, fn: Any, parts: list) -> None:
        self.fn, self.parts, self.n = fn, parts, len(parts)
        self.claim = itertools.count().__next__  # atomic under the GIL
        self.left = self.n
        self.lock = threading.Lock()
        self.done = threading.Lock()
        self.done.acquire()  # released by whoever finishes the last part
        self.error: BaseException | None = None

    def work(self) -> None:
        mine = 0
        try:
            while (i := self.claim()) < self.n:
                mine += 1
                self.fn(*self.parts[i])
        except BaseException as exc:  # noqa: BLE001 — handed to the caller
            self.error = exc
        finally:
            if mine:
                with self.lock:
                    self.left -= mine
                    last = self.left == 0
                if last:
                    self.done.release()


class WorkerPool:
    """``n`` daemon threads that sleep on a queue (no spinning) and help with :class:`_Job` s."""

    def __init__(self, n: int) -> None:
        self._queues: list[queue.SimpleQueue] = []
        for i in range(n):
            q: queue.SimpleQueue = queue.SimpleQueue()
            self._queues.append(q)
            threading.Thread(target=self._serve, args=(q,), name=f"oarlock-cpu-{i}", daemon=True).start()

    @staticmethod
    def _serve(q: queue.SimpleQueue) -> None:
        while True:
            q.get().work()

    def run(self, fn: Any, parts: list) -> None:
        """``fn(*p)`` for every ``p`` in ``parts``, on the workers and the calling thread; returns
        when all are done. The caller takes every part no worker has claimed, so it waits only
        for parts already running elsewhere."""
        job = _Job(fn, parts)
        for q in self._queues[: len(parts) - 1]:
            q.put(job)
        job.work()
        job.done.acquire()
        if job.error is not None:
            raise job.error


def _pool() -> WorkerPool | None:
    st = _STATE[0] if _STATE else None
    if st is None or st.budget < 2:
        return None
    if st.pool is None:
        with _LOCK:
            if st.pool is None:
                st.pool = WorkerPool(st.budget - 1)
    return st.pool


def _after_fork_in_child() -> None:
    """After a fork, in the child: it has none of the parent's threads, neither the worker
    pool's (a new one starts when needed) nor the OpenMP team's. libgomp does not know that:
    the child's next parallel region would wait forever for the team's threads, so the child
    runs OpenMP regions on its own thread (as torch's data-loader workers do)."""
    if _STATE:
        _STATE[0].pool = None
        _STATE[0].forked = True
    try:  # only if libgomp is loaded (RTLD_NOLOAD): a child that never had a team is left alone
        ctypes.CDLL("libgomp.so.1", mode=os.RTLD_NOLOAD | os.RTLD_LAZY).omp_set_num_threads(1)
    except (OSError, AttributeError):
        pass


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def threads_for(work: int, per_thread: int) -> int:
    """How many threads a kernel of ``work`` units should use when each should get at least
    ``per_thread`` of them: 1 below that, at most the budget (1 with the policy off)."""
    st = _STATE[0] if _STATE else None
    if st is None or st.budget < 2:
        return 1
    return max(1, min(st.budget, work // per_thread))


def team_threads(work: int, per_thread: int) -> int:
    """:func:`threads_for` on the OpenMP team (a kernel that sets its own thread count): 1 in
    a forked child, whose libgomp would wait for the parent's team."""
    st = _STATE[0] if _STATE else None
    return 1 if st is None or st.forked else threads_for(work, per_thread)


def owns_blas() -> bool:
    """Whether the policy sizes BLAS (on at one thread; the user did not size it)."""
    st = _STATE[0] if _STATE else None
    return bool(st and st.own_blas)


#: BLAS libraries (threadpoolctl's ``internal_api``, or gemm.py's ``onednn``) that several
#: threads may call at once: Intel's MKL and oneDNN (thread-safe by contract). Not numpy's OpenBLAS: in the full test suite's process,
#: 1x1 convolutions whose images ran as concurrent ``cblas_sgemm`` calls from the OpenMP team
#: (OpenBLAS 0.3.31 at one thread each) came out wrong at random (21 of 375 convolutions of one
#: run, every value doubled; 2 of 360 in another), right on the same inputs run again or on one
#: thread (OpenBLAS has open reports of the kind, OpenMathLib/OpenBLAS#5825). No wrong result is
#: known from the split matmuls, which call it the same way; they are not split either.
CONCURRENT_BLAS = frozenset({"mkl", "onednn"})


_NUMPY_BLAS: list[str] = []  #: numpy_blas()'s answer, read once: numpy's BLAS never changes in a process


def numpy_blas() -> str:
    """threadpoolctl's name for the BLAS numpy's ``matmul`` calls (``openblas``, ``mkl``…), or
    "" when it cannot be read. Read once per process (``threadpool_info`` takes milliseconds,
    and every product asks)."""
    if not _NUMPY_BLAS:
        pools = [p for p in blas_pools() if "numpy" in str(p.get("filepath", ""))] or blas_pools()
        _NUMPY_BLAS.append(str(pools[0].get("internal_api", "")) if pools else "")
    return _NUMPY_BLAS[0]


def split_products(blas: str | None = None) -> bool:
    """Whether the plugin splits work over its threads (it owns BLAS's threads: BLAS runs on
    one, and the budget has two or more). ``blas``: the library the blocks call (``mkl``,
    ``openblas``; :func:`numpy_blas`): then only where several threads may call it at once
    (:data:`CONCURRENT_BLAS`); otherwise the product runs as one call on one thread. The one
    rule for every kernel whose blocks call BLAS (split matmuls, gemm.c, conv.c's 1x1 path).

    >>> split_products("openblas")
    False
    """
    st = _STATE[0] if _STATE else None
    return bool(st and st.own_blas and st.budget > 1) and (blas is None or blas in CONCURRENT_BLAS)


def run_parts(fn: Any, parts: list) -> None:
    """``fn(*p)`` for each part, spread over the budget (in order on this thread without one)."""
    pool = _pool() if len(parts) > 1 else None
    if pool is None:
        for p in parts:
            fn(*p)
    else:
        pool.run(fn, parts)
