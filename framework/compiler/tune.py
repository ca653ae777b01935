"""Launch tuning: the work-group size and vector width of generated kernels, measured once per
device, kernel and shape bucket and kept on disk.

A kernel of the "rows" layout (C, OpenCL on a CPU device) takes its work-group size (rows per
work-group) at launch, so tuning costs no rebuild: the first launch of a kernel in a shape
bucket (rows and row length, each rounded up to a power of two) times every candidate
(:data:`CANDIDATES`: a warm-up each, then :data:`REPEATS` rounds timing each once, the
fastest run counting) and keeps the fastest. The timed launches write stand-ins for the
outputs (:func:`stand_ins`), never the outputs themselves: an output can be an input's storage
(an optimizer's fused step writes each parameter in place), and a launch repeated on it would
apply the update once per launch; the caller then launches once, with the choice. Choices live in
``tuning.json`` beside the kernel cache (:func:`cache.cache_dir`), keyed by the compiler's
identity (device, driver, compiler version), the kernel's entry name (a hash of its program)
and the bucket, and are written under a file lock through a temp file + ``os.replace``.

The vector width of a "rows" kernel (the elements per chunk of its passes along a row: each
reduction keeps that many partial results, and the second pass prefetches the next row chunk
by chunk) is compiled in, so each candidate (:data:`WIDTHS`, only those whose source differs)
is a build; it is chosen once per device, kernel and row length, before the work-group size.

``OARLOCK_TUNE=0`` turns tuning off: every launch takes the emitter's fixed defaults
(``emit.LOCAL_SIZE``, ``emit._RowLoops.width``), so runs are deterministic. A damaged tuning file is ignored (and
rewritten on the next choice); the folder must be private, as for the kernel cache.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from .._src import device as _dev
from .cache import cache_dir, check_private, read_regular

#: work-group sizes tried for a "rows" kernel (None: the driver picks)
CANDIDATES: tuple[int | None, ...] = (None, 1, 4, 16, 64, 256)
REPEATS = 5
#: launches smaller than this many elements keep the default (timing them is noise)
MIN_ELEMENTS = 1 << 16
#: the file's format, bumped too when the emitters change the code of kernels whose entry names
#: (a hash of the program, not of the source) stay, so choices measured on the old code go
#: (2: PoCL's softmax computes exp as vectorisable arithmetic, its work-group size choice changed;
#: 3: "rows" kernels pass along a row in chunks with partial results per lane and prefetch the
#: next row, and their vector width is a choice too; 4: PoCL's tanh is vectorisable arithmetic;
#: 5: erf too, and the row math always inlined; 6: C computes float exp as arithmetic and
#: reads bool tensors as bytes, which vectorises a masked softmax's row loop; 7: C streams a
#: row out during the next row's last pass, and a row statistic divides as one reciprocal;
#: 8: C streams a row out chunk by chunk during its own last pass, which always runs in chunks)
VERSION = 8
#: vector widths tried for a "rows" kernel (emit/rows.py ``_RowLoops.width``; 1: plain loops)
WIDTHS: tuple[int, ...] = (1, 8, 32)

_LOCK = threading.Lock()
_MEMORY: dict[str, int | None] = {}
_LOADED: dict[Path, dict[str, Any]] = {}
STATS = {"measured": 0, "from_disk": 0}


def stand_ins(device_type: str, ctx: Any, args: list[Any], outputs: range) -> tuple[list[Any], list[Any]]:
    """``args`` with the launch's outputs (the positions ``outputs``) replaced by fresh
    scratch views of their shapes and dtypes, for the timed launches of a tuning; and the
    allocations holding them (keep them until those launches are done).

    >>> import numpy as np
    >>> from framework.compiler import tune
    >>> from framework._src import device, dispatch
    >>> ctx = dispatch.context(device.parse("cpu"))
    >>> y = np.zeros(3, np.float32)
    >>> args, _ = tune.stand_ins("cpu", ctx, [np.ones(3, np.float32), y], range(1, 2))
    >>> args[1] is y, args[1].shape
    (False, (3,))
    """
    alloc = _dev.allocator_of(_dev.Device(device_type, ctx.device_index))
    args, blocks = list(args), []
    for k in outputs:
        shape, dtype = tuple(args[k].shape), args[k].dtype
        blocks.append(alloc.malloc(max(1, int(np.prod(shape, dtype=np.int64))) * np.dtype(dtype).itemsize))
        args[k] = ctx.runtime.view(blocks[-1].handle, 0, shape, dtype)
    return args, blocks


def on_stand_ins(
    device_type: str, ctx: Any, args: list[Any], outputs: range, launch: Callable[[list[Any], Any], None]
) -> Callable[[Any], None]:
    """``run(choice)`` for :func:`choose`: ``launch(args, choice)`` with :func:`stand_ins` for
    the outputs, made at the first timed run (a choice already known costs nothing)."""
    held: list[list[Any]] = []

    def run(choice: Any) -> None:
        if not held:
            trial, blocks = stand_ins(device_type, ctx, args, outputs)
            held.extend((trial, blocks))
        launch(held[0], choice)

    return run


def enabled() -> bool:
    return os.environ.get("OARLOCK_TUNE", "1").strip().lower() not in ("0", "false", "off", "no")


def path() -> Path:
    return cache_dir() / "tuning.json"


def bucket(rows: int, n: int) -> str:
    """Shape bucket: rows and row length rounded up to powers of two."""
    return f"{1 << max(rows - 1, 0).bit_length()}x{1 << max(n - 1, 0).bit_length()}"


def key(identity: str, entry: str, rows: int, n: int) -> str:
    dev = hashlib.sha256(identity.encode()).hexdigest()[:16]
    return f"{dev}|{entry}|{bucket(rows, n)}"


def _read(p: Path) -> dict[str, Any]:
    raw, _ = read_regular(p)  # a FIFO or a device in its place is never read
    if raw is None:
        return {}
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        return {}
    if (
        not isinstance(data, dict)
        or data.get("version") != VERSION
        or not isinstance(data.get("entries"), dict)
    ):
        return {}
    return data["entries"]


def _entries() -> dict[str, Any]:
    p = path()
    got = _LOADED.get(p)
    if got is None:
        got = _LOADED[p] = _read(p)
    return got


def _store(k: str, value: dict[str, Any]) -> None:
    """Add one choice to the tuning file (merged with what other processes wrote)."""
    p = path()
    try:
        p.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        check_private(p.parent)
        from filelock import FileLock

        with FileLock(str(p) + ".lock", timeout=60):
            entries = _read(p)
            entries[k] = value
            fd, tmp = tempfile.mkstemp(dir=p.parent, prefix=".tmp-", suffix=".json")
            try:
                with os.fdopen(fd, "w") as f:
                    json.dump({"version": VERSION, "entries": entries}, f, indent=1, sort_keys=True)
                os.replace(tmp, p)
            except OSError:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise
        _LOADED[p] = entries
    except Exception:  # noqa: BLE001 — a cache that cannot be written only costs a re-tune
        _LOADED.setdefault(p, {})[k] = value


def choose(
    comp: Any,
    entry: str,
    rows: int,
    n: int,
    default: int | None,
    run: Callable[[int | None], None],
    sync: Callable[[], None],
) -> int | None:
    """The work-group size to launch ``entry`` with on ``rows`` rows of ``n`` elements.

    ``run(local)`` launches the kernel, ``sync()`` waits for the device. Measures on the
    first call for a bucket (when tuning is on and the launch is large enough).
    """
    if not enabled() or rows * max(n, 1) < MIN_ELEMENTS:
        return default
    cands = tuple(c for c in CANDIDATES if c is None or c <= rows)
    return _pick(key(comp.identity(), entry, rows, n), "local", cands, default, run, sync)


def _pick(
    k: str,
    field: str,
    candidates: tuple[Any, ...],
    default: Any,
    run: Callable[[Any], None],
    sync: Callable[[], None],
) -> Any:
    """The fastest of ``candidates`` for key ``k`` (from memory, the file, or measured now:
    a warm-up each, then :data:`REPEATS` rounds timing each once; a candidate's time is its
    fastest run), kept in the file as ``{field: choice}``."""
    got = _MEMORY.get(k, False)
    if got is not False:
        return got
    with _LOCK:
        stored = _entries().get(k)
        if isinstance(stored, dict) and field in stored:
            STATS["from_disk"] += 1
            _MEMORY[k] = stored[field]
            return stored[field]
        runs: dict[Any, float] = {}
        for cand in candidates:
            try:
                run(cand)  # warm-up (and the driver's first-launch work, or a build)
                sync()
            except Exception:  # noqa: BLE001 — a size the device refuses is not a choice
                continue
            runs[cand] = float("inf")
        # round robin, the fastest run of each: other work on the machine slows some runs of
        # every candidate alike instead of all runs of one
        for _ in range(REPEATS):
            for cand in runs:
                t0 = time.perf_counter()
                run(cand)
                sync()
                runs[cand] = min(runs[cand], time.perf_counter() - t0)
        times = {str(c): round(t * 1e3, 4) for c, t in runs.items()}
        best = min(runs, key=runs.__getitem__) if runs else default
        STATS["measured"] += 1
        _MEMORY[k] = best
        _store(k, {field: best, "ms": times, "default": default})
        return best


def rows_local(
    comp: Any,
    entry: str,
    rows: int,
    n: int,
    default: int | None,
    launch: Callable[[int | None], None],
    sync: Callable[[], None],
) -> int | None:
    """The work-group size for a "rows" kernel: tuned where the launch takes one (not C,
    whose launch has no work-groups), else ``default``."""
    if comp.language == "c":
        return default
    return choose(comp, entry, rows, n, default, launch, sync)


def width_key(identity: str, entry: str, n: int) -> str:
    """Key of a vector width choice: device, kernel and row length (the width changes the
    work along a row, not across rows)."""
    dev = hashlib.sha256(identity.encode()).hexdigest()[:16]
    return f"{dev}|{entry}|width n={n}"


def rows_width(
    comp: Any,
    entry: str,
    rows: int,
    n: int,
    default: int,
    candidates: tuple[int, ...],
    run: Callable[[int], None],
    sync: Callable[[], None],
) -> int:
    """The vector width to build a "rows" kernel with (its passes in chunks of that many
    elements, each reduction keeping that many partial results; emit/rows.py ``_RowLoops``),
    measured once per device, kernel and row length among ``candidates`` (the distinct
    sources: each is a build, through the program cache). ``run(width)`` builds (once) and
    launches that variant on the caller's arguments. ``default`` when tuning is off, the
    launch is small or there is nothing to choose."""
    if not enabled() or rows * max(n, 1) < MIN_ELEMENTS or len(candidates) < 2:
        return default
    return _pick(width_key(comp.identity(), entry, n), "width", candidates, default, run, sync)


_EPOCH = 0


def epoch() -> int:
    """A number that changes whenever :func:`reset` forgets the choices held in memory (what
    callers that keep a choice of their own key it by)."""
    return _EPOCH


def reset() -> None:
    """Forget choices held in memory (the file stays)."""
    global _EPOCH
    _EPOCH += 1
    _MEMORY.clear()
    _LOADED.clear()
    STATS.update(measured=0, from_disk=0)


def local_size(comp: Any, kind: str) -> int | None:
    """The compile-time work-group size for kernels of ``kind`` (None: the emitter's default)."""
    return None
