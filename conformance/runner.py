"""Running cases in forked workers, so a vendor kernel cannot take the run down.

The parent process imports the framework (which only registers plugins) but never opens the
device. Each worker is forked from it, opens the device on first use and runs cases one at a
time. A case whose worker dies (segfault, abort, ``os._exit``) is reported as crashed with the
signal; one that runs past its timeout is reported as timed out and its worker is killed.
Either way a fresh worker is forked and the run goes on with the next case.
"""

from __future__ import annotations

import faulthandler
import multiprocessing as mp
import os
import signal
import tempfile
import time
import traceback
import warnings
from collections.abc import Callable
from multiprocessing.connection import Connection, wait
from typing import Any

from .cases import Case, Result

DEFAULT_TIMEOUT = 120.0


def execute(case: Case) -> Result:
    """Run one case in this process and classify the outcome."""
    import framework as fw

    from .checks import CheckFailure, poison_outputs

    res = Result(case.id, case.tier, "passed", op=case.op, dtype=case.dtype)
    if case.preset is not None:
        res.outcome, res.message = case.preset, case.reason
        return res
    fw.reset_fallback_stats()
    poison_outputs(True)  # an output element a kernel never writes shows, in every tier
    t0 = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            data = case.fn() if case.fn is not None else None
        if isinstance(data, dict):
            res.data = data
            if data.get("skip"):
                res.outcome, res.message = "skipped", str(data["skip"])
    except CheckFailure as exc:
        res.outcome, res.message, res.expected, res.got = "failed", exc.message, exc.expected, exc.got
        res.data = getattr(exc, "data", {}) or {}
    except Exception as exc:  # noqa: BLE001 — any error of the device under test is a failure
        tb = traceback.extract_tb(exc.__traceback__)
        where = f" (at {tb[-1].filename.rsplit('/', 1)[-1]}:{tb[-1].lineno})" if tb else ""
        res.outcome, res.message = "failed", f"{type(exc).__name__}: {exc}{where}"
    res.duration = time.perf_counter() - t0
    fb = fw.fallback_stats()
    if fb:
        res.fallbacks = fb
        if res.outcome == "passed":
            res.outcome = "fallback"
            res.message = "passed, with CPU fallbacks: " + ", ".join(f"{k} x{v}" for k, v in fb.items())
    return res


def _worker(
    conn: Connection,
    cases: list[Case],
    setup: Callable[[], None] | None,
    job: Callable[[], Any] | None = None,
    crash_log: str | None = None,
) -> None:
    # NOTE: a clean exit with os._exit: the forked child must not run the parent's atexit
    # handlers or flush its buffers twice.
    code = 0
    if crash_log is not None:  # a fatal signal writes the Python stack here, for the report
        log = open(crash_log, "w")  # noqa: SIM115 — lives as long as the process
        faulthandler.enable(file=log, all_threads=False)
    try:
        if setup is not None:
            setup()
        if job is not None:  # one-off work (metadata): the closure came with the fork
            try:
                conn.send(("ok", job()))
            except Exception as exc:  # noqa: BLE001
                conn.send(("error", f"{type(exc).__name__}: {exc}"))
            return
        while True:
            try:
                i = conn.recv()
            except EOFError:
                break
            if i is None:
                break
            conn.send(execute(cases[i]).to_dict())
    except BaseException:  # noqa: BLE001
        code = 1
    finally:
        try:
            conn.close()
        finally:
            os._exit(code)


class _Worker:
    def __init__(
        self,
        ctx: Any,
        cases: list[Case],
        setup: Callable[[], None] | None,
        job: Callable[[], Any] | None = None,
    ) -> None:
        self.conn, child = ctx.Pipe()
        fd, self.crash_log = tempfile.mkstemp(prefix="oarlock-conformance-crash-", suffix=".txt")
        os.close(fd)
        self.proc = ctx.Process(target=_worker, args=(child, cases, setup, job, self.crash_log), daemon=True)
        self.proc.start()
        child.close()
        self.case: int | None = None
        self.started = 0.0

    def kill(self) -> None:
        if self.proc.is_alive():
            os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.join(5)
        self.conn.close()
        self._drop_log()

    def _drop_log(self) -> None:
        try:
            os.unlink(self.crash_log)
        except OSError:
            pass

    def death(self) -> str:
        """Why the worker died, with the innermost Python frames faulthandler wrote."""
        msg = _death(self.proc)
        try:
            with open(self.crash_log) as f:
                frames = [ln.strip() for ln in f if ln.strip().startswith("File ")]
        except OSError:
            frames = []
        if frames:
            msg += "; innermost frames: " + " <- ".join(frames[:4])
        return msg

    def stop(self) -> None:
        try:
            self.conn.send(None)
        except (BrokenPipeError, OSError):
            pass
        self.proc.join(5)
        if self.proc.is_alive():
            self.kill()
        else:
            self.conn.close()
            self._drop_log()


def _death(proc: Any) -> str:
    proc.join(5)
    code = proc.exitcode
    if code is not None and code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"the worker process crashed with {name} while running this case"
    return f"the worker process exited with status {code} while running this case"


class Runner:
    """Runs cases in ``jobs`` forked workers with a per-case timeout."""

    def __init__(
        self,
        cases: list[Case],
        timeout: float = DEFAULT_TIMEOUT,
        jobs: int = 1,
        setup: Callable[[], None] | None = None,
        isolate: bool = True,
    ) -> None:
        self.cases = cases
        self.timeout = timeout
        self.jobs = max(1, jobs)
        self.setup = setup
        self.isolate = isolate
        self.ctx = mp.get_context("fork")
        self.respawns = 0

    def call(self, fn: Callable[[], Any], timeout: float | None = None) -> tuple[str, Any]:
        """Run ``fn`` once in a fresh worker: ("ok", value) | ("error", text)."""
        if not self.isolate:
            try:
                return ("ok", fn())
            except Exception as exc:  # noqa: BLE001
                return ("error", f"{type(exc).__name__}: {exc}")
        w = _Worker(self.ctx, self.cases, self.setup, job=fn)
        try:
            if not w.conn.poll(timeout or self.timeout):
                w.kill()
                return ("error", f"timed out after {timeout or self.timeout:g} s")
            try:
                return w.conn.recv()
            except EOFError:
                return ("error", w.death())
        finally:
            w.stop()

    def run(self, on_result: Callable[[Result], None] | None = None) -> list[Result]:
        results: dict[int, Result] = {}
        todo = list(range(len(self.cases)))

        def done(i: int, r: Result) -> None:
            results[i] = r
            if on_result is not None:
                on_result(r)

        # presets need no worker
        for i in list(todo):
            if self.cases[i].preset is not None:
                done(i, execute(self.cases[i]))
                todo.remove(i)
        if not self.isolate:
            for i in todo:
                done(i, execute(self.cases[i]))
            return [results[i] for i in range(len(self.cases))]

        workers: list[_Worker] = []
        queue = list(todo)
        try:
            while queue or any(w.case is not None for w in workers):
                while queue and (len(workers) < self.jobs or any(w.case is None for w in workers)):
                    w = next((w for w in workers if w.case is None), None)
                    if w is None:
                        w = _Worker(self.ctx, self.cases, self.setup)
                        workers.append(w)
                    i = queue.pop(0)
                    w.case, w.started = i, time.monotonic()
                    try:
                        w.conn.send(i)
                    except (BrokenPipeError, OSError):
                        pass  # found dead below
                busy = [w for w in workers if w.case is not None]
                now = time.monotonic()
                limits = [self._limit(w.case) - (now - w.started) for w in busy if w.case is not None]
                ready = wait([w.conn for w in busy], timeout=max(0.0, min(limits)) if limits else None)
                now = time.monotonic()
                for w in list(busy):
                    i = w.case
                    assert i is not None
                    case = self.cases[i]
                    if w.conn in ready:
                        try:
                            d = w.conn.recv()
                        except (EOFError, OSError):
                            msg = w.death()
                            done(
                                i,
                                Result(
                                    case.id,
                                    case.tier,
                                    "failed",
                                    case.op,
                                    case.dtype,
                                    message=msg,
                                    duration=now - w.started,
                                    data={"crash": True},
                                ),
                            )
                            self._replace(workers, w)
                            continue
                        w.case = None
                        done(i, Result(**d))
                    elif now - w.started >= self._limit(i):
                        w.kill()
                        done(
                            i,
                            Result(
                                case.id,
                                case.tier,
                                "failed",
                                case.op,
                                case.dtype,
                                message=f"timed out after {self._limit(i):g} s (the case was killed; "
                                f"a hanging kernel?)",
                                duration=now - w.started,
                                data={"timeout": True},
                            ),
                        )
                        self._replace(workers, w, kill=False)
        finally:
            for w in workers:
                w.stop()
        return [results[i] for i in range(len(self.cases))]

    def _limit(self, i: int) -> float:
        return self.cases[i].timeout or self.timeout

    def _replace(self, workers: list[_Worker], w: _Worker, kill: bool = True) -> None:
        if kill:
            w.kill()
        workers.remove(w)
        self.respawns += 1
