"""The conformance suite catches the bugs vendors make: each one is planted in a copy of the
example vendor plugin (examples/vendor_plugin), and the suite must fail exactly the cases of
the op that has it (the case id names the op), while the unmodified copy passes the same cases.

Three copies are used: the plugin as shipped; a "half" one that also registers float16 and
bfloat16 (sums and matmuls accumulated in float32, as the contract asks); an "async" one whose
created streams run copies on a thread, a little late each, as a real device's queue does.
Each run is the conformance CLI limited to one tier and the op's cases (`--tier`, `-k`), a
few seconds each.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VENDOR = os.path.join(ROOT, "examples", "vendor_plugin", "oarlock_simdev")
KERNELS, RUNTIME, INIT = "kernels.py", "runtime.py", "__init__.py"

# -- variants of the example plugin (text edits of the shipped files) ----------------------------
HALF_EDITS = [
    (
        KERNELS,
        'FLOAT = ("float32", "float64")',
        'FLOAT = ("float32", "float64", "float16", "bfloat16")\nHALF = ("float16", "bfloat16")',
    ),
    # NOTE: numpy sums bfloat16 in bfloat16, and float16 matmuls round every partial sum;
    # the contract asks for float32 accumulation, rounded once.
    (
        KERNELS,
        '("sum", NUM, reduce(np.sum)),',
        '("sum", NUM, reduce(lambda x, axis, keepdims: np.sum(x, axis=axis, keepdims=keepdims,\n'
        "                                                      dtype=np.float32 if x.dtype.name in HALF else None))),",
    ),
    (
        KERNELS,
        '("matmul", NUM, lambda ctx, outs, ins: outs[0].__setitem__(..., np.matmul(*ins))),',
        '("matmul", NUM, lambda ctx, outs, ins: outs[0].__setitem__(..., np.matmul(\n'
        "        *(i.astype(np.float32) if i.dtype.name in HALF else i for i in ins)))),",
    ),
    (
        RUNTIME,
        'DTYPES = ("float32", "float64", "int32", "int64", "bool")',
        'DTYPES = ("float32", "float64", "float16", "bfloat16", "int32", "int64", "bool")',
    ),
]

ASYNC_RUNTIME = '''

import queue
import threading


class SimStream:
    """Work queued here runs in order on its own thread, each step 20 ms late (a busy device)."""

    def __init__(self):
        self.work, self.pending, self.idle = queue.Queue(), 0, threading.Condition()
        threading.Thread(target=self._run, daemon=True).start()

    def submit(self, fn):
        with self.idle:
            self.pending += 1
        self.work.put(fn)

    def _run(self):
        while True:
            fn = self.work.get()
            time.sleep(0.02)
            fn()
            with self.idle:
                self.pending -= 1
                self.idle.notify_all()

    def wait(self):
        with self.idle:
            while self.pending:
                self.idle.wait()


class AsyncSimRuntime(SimRuntime):
    def _on(self, stream, fn, blocking):
        if stream is None:
            return fn()
        stream.submit(fn)
        if blocking:
            stream.wait()

    def create_stream(self, index):
        stream = SimStream()
        self.__dict__.setdefault("streams", []).append(stream)
        return stream

    def synchronize(self, index):  # the whole device: every stream it created
        for stream in self.__dict__.get("streams", []):
            stream.wait()

    def memset(self, index, buffer, offset, value, nbytes, stream):
        self._on(stream, lambda: SimRuntime.memset(self, index, buffer, offset, value, nbytes, stream), False)

    def copy_h2d(self, index, dst, dst_offset, src, stream, blocking=True):
        self._on(stream, lambda: SimRuntime.copy_h2d(self, index, dst, dst_offset, src, stream), blocking)

    def copy_d2h(self, index, dst, src, src_offset, stream, blocking=True):
        self._on(stream, lambda: SimRuntime.copy_d2h(self, index, dst, src, src_offset, stream), True)

    def copy_d2d(self, index, dst, dst_offset, src, src_offset, nbytes, stream, blocking=True):
        self._on(stream, lambda: SimRuntime.copy_d2d(self, index, dst, dst_offset, src, src_offset, nbytes, stream),
                 blocking)

    def synchronize_stream(self, stream):
        if stream is not None:
            stream.wait()

    def query_stream(self, stream):
        return stream is None or stream.pending == 0

    def record_event(self, event, stream):
        event.done = threading.Event()

        def mark():
            event.time = time.perf_counter()
            event.done.set()

        self._on(stream, mark, False)

    def stream_wait_event(self, stream, event):
        if getattr(event, "done", None) is not None:
            self._on(stream, event.done.wait, False)

    def synchronize_event(self, event):
        if getattr(event, "done", None) is not None:
            event.done.wait()

    def query_event(self, event):
        return getattr(event, "done", None) is None or event.done.is_set()
'''

ASYNC_EDITS = [
    (
        RUNTIME,
        "    def elapsed_ms(self, start, end):\n        return (end.time - start.time) * 1000.0\n",
        "    def elapsed_ms(self, start, end):\n        return (end.time - start.time) * 1000.0\n"
        + ASYNC_RUNTIME,
    ),
    (INIT, "from .runtime import SimRuntime", "from .runtime import AsyncSimRuntime as SimRuntime"),
]

VARIANTS = {"base": [], "half": HALF_EDITS, "async": ASYNC_EDITS}

# helpers some mutants call, added to kernels.py before the KERNELS table
HELPERS = """

def _toward_zero(r, dtype):  # the bug: round to the dtype toward zero, not to nearest
    h = r.astype(dtype)
    over = np.abs(h.astype(np.float64)) > np.abs(r.astype(np.float64))
    h[over] = np.nextafter(h[over], np.zeros_like(h[over]))
    return h


def _sum_in_half(x, axis, keepdims):  # the bug: float16 partial sums rounded to float16
    if x.dtype != np.float16 or not x.size or not axis:
        return np.sum(x, axis=axis, keepdims=keepdims, dtype=np.float32 if x.dtype.name in HALF else None)
    for a in sorted(axis, reverse=True):
        x = np.add.accumulate(x, axis=a, dtype=x.dtype).take([-1], axis=a)
    return x if keepdims else x.squeeze(axis)


def _matmul_in_half(a, b):  # the bug: bfloat16 partial sums rounded to bfloat16
    if a.dtype.name != "bfloat16":
        return np.matmul(*(i.astype(np.float32) if i.dtype.name in HALF else i for i in (a, b)))
    acc = np.zeros(a.shape[:-1] + b.shape[-1:], a.dtype)
    for k in range(a.shape[-1]):
        acc = (acc.astype(np.float32) + a[..., :, k : k + 1].astype(np.float32) * b[..., k : k + 1, :]).astype(a.dtype)
    return acc


def _first_65536(r):  # the bug: a grid of at most 65,536 work items, the rest never written
    r = np.array(r, order="C")  # a copy in row-major order: reshape(-1) is a view of it
    r.reshape(-1)[65536:] = 0
    return r


def _axis_head(x, axes, n=1024):  # the bug: one work-group of n per output, the rest of the axis unread
    return x[tuple(slice(0, n) if i in axes else slice(None) for i in range(x.ndim))]
"""


@dataclass
class Mutant:
    name: str
    variant: str
    edits: list[tuple[str, str, str]]
    tier: str
    pattern: str
    failing: list[str]  #: exactly these case ids must fail


def k(op: str, *dtypes: str) -> list[str]:
    return [f"primitives/{op}[{d}]" for d in dtypes]


TANH_SATURATES_AT_4_8 = [
    (KERNELS, '"cos", "tanh", "floor"', '"cos", "floor"'),
    (
        KERNELS,
        '("logical_not", ("bool",)',
        '("tanh", FLOAT, elementwise(lambda x: np.where(np.abs(x) > 4.8, np.sign(x), np.tanh(x)))),\n'
        '    ("logical_not", ("bool",)',
    ),
]

MUTANTS = [
    # integer width
    Mutant(
        "int64 sum accumulated in int32",
        "base",
        [
            (
                KERNELS,
                '("sum", NUM, reduce(np.sum)),',
                '("sum", NUM, reduce(lambda x, axis, keepdims: np.sum(x.astype(np.int32) if x.dtype == np.int64 else x,\n'
                "                                                      axis=axis, keepdims=keepdims))),",
            )
        ],
        "primitives",
        "sum[int",
        k("sum", "int64"),
    ),
    Mutant(
        "int64 matmul through float64",
        "base",
        [(KERNELS, "np.matmul(*ins)", "np.matmul(*(i.astype(np.float64) for i in ins))")],
        "primitives",
        "matmul[int",
        k("matmul", "int64"),
    ),
    # narrowing casts
    Mutant(
        "narrowing int->int cast saturates",
        "base",
        [
            (
                KERNELS,
                'if x.dtype.kind == "f" and y.dtype.kind in "iu" else x)',
                'if x.dtype.kind == "f" and y.dtype.kind in "iu" else\n'
                '              np.clip(x, np.iinfo(y.dtype).min, np.iinfo(y.dtype).max) if y.dtype.kind in "iu" else x)',
            )
        ],
        "primitives",
        "cast[int",
        k("cast", "int64"),
    ),
    # scatter bounds
    Mutant(
        "scatter and scatter_add clamp an out-of-range index",
        "base",
        [(KERNELS, "(checked_index(index, x.shape[axis]),)", "(np.clip(index, 0, x.shape[axis] - 1),)")],
        "primitives",
        "scatter[float32],scatter_add[int64]",
        k("scatter", "float32") + k("scatter_add", "int64"),
    ),
    # NaN in argmax/argmin
    Mutant(
        "argmax skips NaN",
        "base",
        [
            (
                KERNELS,
                "np.argmax(ins[0], axis",
                'np.argmax(np.where(np.isnan(ins[0]), -np.inf, ins[0]) if ins[0].dtype.kind == "f" else ins[0], axis',
            )
        ],
        "primitives",
        "argmax[",
        k("argmax", "float32", "float64"),
    ),
    Mutant(
        "argmin skips NaN",
        "base",
        [
            (
                KERNELS,
                "np.argmin(ins[0], axis",
                'getattr(np, "nanargmin" if ins[0].dtype.kind == "f" else "argmin")(ins[0], axis',
            )
        ],
        "primitives",
        "argmin[",
        k("argmin", "float32", "float64"),
    ),
    # signed zeros
    Mutant(
        "neg(+0.0) gives +0.0 (computed as 0 - x)",
        "base",
        [(KERNELS, '("neg", NUM, elementwise(np.negative)),', '("neg", NUM, elementwise(lambda x: 0 - x)),')],
        "primitives",
        "neg[",
        k("neg", "float32", "float64"),
    ),
    Mutant(
        "copy turns -0.0 into +0.0 (x + 0)",
        "base",
        [
            (
                KERNELS,
                "outs[0].__setitem__(..., ins[0])),",
                'outs[0].__setitem__(..., ins[0] + 0 if ins[0].dtype.kind == "f" else ins[0])),',
            )
        ],
        "primitives",
        "copy[",
        k("copy", "float32", "float64"),
    ),
    # half precision
    Mutant(
        "float16 add rounded toward zero",
        "half",
        [
            (
                KERNELS,
                '("add", ALL, elementwise(lambda x, y: x | y if x.dtype == bool else x + y)),',
                '("add", ALL, elementwise(lambda x, y: x | y if x.dtype == bool else\n'
                "                         _toward_zero(x.astype(np.float32) + y, x.dtype) if x.dtype == np.float16 else x + y)),",
            )
        ],
        "primitives",
        "add[float16],add[float32]",
        k("add", "float16"),
    ),
    Mutant(
        "cast to bfloat16 truncates",
        "half",
        [
            (
                KERNELS,
                "    x, y = ins[0], outs[0]\n",
                "    x, y = ins[0], outs[0]\n"
                '    if y.dtype.name == "bfloat16" and x.dtype.kind == "f":  # keep the top 16 bits\n'
                "        y[...] = (x.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16).view(y.dtype)\n"
                "        return\n",
            )
        ],
        "primitives",
        "cast[float32],cast[float64],cast[int32]",
        k("cast", "float32", "float64"),
    ),
    Mutant(
        "float16 sum accumulated in float16",
        "half",
        [
            (
                KERNELS,
                "reduce(lambda x, axis, keepdims: np.sum(x, axis=axis, keepdims=keepdims,\n"
                "                                                      dtype=np.float32 if x.dtype.name in HALF else None))",
                "reduce(_sum_in_half)",
            )
        ],
        "primitives",
        "sum[float",
        k("sum", "float16"),
    ),
    Mutant(
        "bfloat16 matmul accumulated in bfloat16",
        "half",
        [
            (
                KERNELS,
                "np.matmul(\n        *(i.astype(np.float32) if i.dtype.name in HALF else i for i in ins))",
                "_matmul_in_half(*ins)",
            )
        ],
        "primitives",
        "matmul[float16],matmul[bfloat16]",
        k("matmul", "bfloat16"),
    ),
    # runtime
    Mutant(
        "elapsed_ms returns seconds",
        "base",
        [(RUNTIME, "return (end.time - start.time) * 1000.0", "return end.time - start.time")],
        "runtime",
        "elapsed_ms",
        ["runtime/elapsed_ms"],
    ),
    Mutant(
        "query_event answers True before the work is done",
        "async",
        [(RUNTIME, 'return getattr(event, "done", None) is None or event.done.is_set()', "return True")],
        "runtime",
        "query_event,query_stream,synchronize_stream",
        ["runtime/query_event"],
    ),
    Mutant(
        "query_stream answers True before the work is done",
        "async",
        [(RUNTIME, "return stream is None or stream.pending == 0", "return True")],
        "runtime",
        "query_event,query_stream,synchronize_stream",
        ["runtime/query_stream"],
    ),
    Mutant(
        "synchronize_stream returns before the work is done",
        "async",
        [(RUNTIME, "        if stream is not None:\n            stream.wait()\n", "        pass\n")],
        "runtime",
        "query_event,query_stream,synchronize_stream",
        ["runtime/synchronize_stream"],
    ),
    # shapes
    Mutant(
        "sum reads only the first 64 elements of a reduced axis",
        "base",
        [
            (
                KERNELS,
                '("sum", NUM, reduce(np.sum)),',
                '("sum", NUM, reduce(lambda x, axis, keepdims: np.sum(\n'
                "    x[tuple(slice(0, 64) if i in axis else slice(None) for i in range(x.ndim))], axis=axis, keepdims=keepdims))),",
            )
        ],
        "primitives",
        "sum[float32],sum[int32]",
        k("sum", "float32", "int32"),
    ),
    Mutant(
        "matmul drops K past 64",
        "base",
        [(KERNELS, "np.matmul(*ins)", "np.matmul(ins[0][..., :64], ins[1][..., :64, :])")],
        "primitives",
        "matmul[float64],matmul[int64]",
        k("matmul", "float64", "int64"),
    ),
    Mutant(
        "add writes only the first 65,536 elements",
        "base",
        [
            (
                KERNELS,
                "elementwise(lambda x, y: x | y if x.dtype == bool else x + y)",
                "elementwise(lambda x, y: _first_65536(x | y if x.dtype == bool else x + y))",
            )
        ],
        "primitives",
        "add[float32],add[bool]",
        k("add", "float32", "bool"),
    ),
    Mutant(
        "scatter and scatter_add ignore a 0-d index",
        "base",
        [
            (
                KERNELS,
                "    y[...] = x\n",
                "    y[...] = x\n    if index.ndim == 0:  # loops over index.shape[0]\n        return\n",
            )
        ],
        "primitives",
        "scatter[int32],scatter_add[float32]",
        k("scatter", "int32") + k("scatter_add", "float32"),
    ),
    Mutant(
        "tanh is 1 past 4.8",
        "base",
        TANH_SATURATES_AT_4_8,
        "primitives",
        "tanh[",
        k("tanh", "float32", "float64"),
    ),
    Mutant(
        "float32 exp overflows to inf past 80 (a low threshold)",
        "base",
        [
            (KERNELS, '"exp", "log"', '"log"'),
            (
                KERNELS,
                '("logical_not", ("bool",)',
                '("exp", FLOAT, elementwise(lambda x: np.where(x > 80, np.inf, np.exp(x)) if x.dtype == np.float32 else np.exp(x))),\n'
                '    ("logical_not", ("bool",)',
            ),
        ],
        "primitives",
        "exp[",
        k("exp", "float32"),
    ),
]


#: The same classes of bug as above (a limit on the elements a kernel covers, a reduced axis read
#: only in part), at sizes and in ops the suite once never sampled: it judges by class, so these
#: are caught too (each escaped the suite before its samples grew past 1,024 along an axis and
#: past 65,536 elements in every op family).
LARGE_MUTANTS = [
    Mutant(
        "sum reads only the first 1,024 elements of a reduced axis",
        "base",
        [
            (
                KERNELS,
                '("sum", NUM, reduce(np.sum)),',
                '("sum", NUM, reduce(lambda x, axis, keepdims: np.sum(_axis_head(x, axis), axis=axis, keepdims=keepdims))),',
            )
        ],
        "primitives",
        "sum[float64],sum[int64]",
        k("sum", "float64", "int64"),
    ),
    Mutant(
        "max reads only the first 1,024 elements of a reduced axis",
        "base",
        [
            (
                KERNELS,
                '("max", ALL, reduce(np.max)),',
                '("max", ALL, reduce(lambda x, axis, keepdims: np.max(_axis_head(x, axis), axis=axis, keepdims=keepdims))),',
            )
        ],
        "primitives",
        "max[float32],max[int32]",
        k("max", "float32", "int32"),
    ),
    Mutant(
        "argmax reads only the first 1,024 elements of its axis",
        "base",
        [(KERNELS, "np.argmax(ins[0], axis", "np.argmax(_axis_head(ins[0], (axis,)), axis")],
        "primitives",
        "argmax[float64],argmax[bool]",
        k("argmax", "float64", "bool"),
    ),
    Mutant(
        "matmul drops K past 1,024",
        "base",
        [(KERNELS, "np.matmul(*ins)", "np.matmul(ins[0][..., :1024], ins[1][..., :1024, :])")],
        "primitives",
        "matmul[float32],matmul[int32]",
        k("matmul", "float32", "int32"),
    ),
    Mutant(
        "copy writes only the first 65,536 elements",
        "base",
        [
            (
                KERNELS,
                '("copy", ALL, lambda ctx, outs, ins: outs[0].__setitem__(..., ins[0])),',
                '("copy", ALL, lambda ctx, outs, ins: outs[0].__setitem__(..., _first_65536(ins[0]))),',
            )
        ],
        "primitives",
        "copy[float64],copy[int32]",
        k("copy", "float64", "int32"),
    ),
    Mutant(
        "permute writes only the first 65,536 elements",
        "base",
        [(KERNELS, "ins[0].transpose(perm)", "_first_65536(ins[0].transpose(perm))")],
        "primitives",
        "permute[float32],permute[bool]",
        k("permute", "float32", "bool"),
    ),
    Mutant(
        "gather takes only the first 65,536 indices",
        "base",
        [
            (
                KERNELS,
                "np.take(ins[0], checked_index(ins[1], ins[0].shape[axis], wrap), axis)",
                "_first_65536(np.take(ins[0], checked_index(ins[1], ins[0].shape[axis], wrap), axis))",
            )
        ],
        "primitives",
        "gather[float32],gather[int64]",
        k("gather", "float32", "int64"),
    ),
    Mutant(
        "full leaves everything past 65,536 elements unwritten",
        "base",
        [(KERNELS, "outs[0].fill(value)", "outs[0].reshape(-1)[:65536].fill(value)")],
        "primitives",
        "full[float64],full[int32]",
        k("full", "float64", "int32"),
    ),
    Mutant(
        "cast writes only the first 65,536 elements",
        "base",
        [
            (
                KERNELS,
                "else x)\n    )\n",
                "else x)\n    )\n    y.reshape(-1)[65536:] = 0  # the rest never written\n",
            )
        ],
        "primitives",
        "cast[float32],cast[int64]",
        k("cast", "float32", "int64"),
    ),
    Mutant(
        "arange writes only the first 65,536 elements",
        "base",
        [
            (
                KERNELS,
                "outs[0][...] = np.arange(outs[0].shape[0]) * step + start",
                "outs[0][...] = _first_65536(np.arange(outs[0].shape[0]) * step + start)",
            )
        ],
        "primitives",
        "arange[float64],arange[int32]",
        k("arange", "float64", "int32"),
    ),
]
MUTANTS += LARGE_MUTANTS

#: The same bugs, seen by other tiers: the static tier once compared programs only with eager
#: mode on the same device (a kernel wrong in both passed), and nothing checked that the
#: device-wide synchronize() waits for work on a created stream.
MUTANTS += [
    Mutant(
        "tanh is 1 past 4.8, seen by the static tier alone",
        "base",
        TANH_SATURATES_AT_4_8,
        "static",
        "static/tanh[",
        ["static/tanh[float32]", "static/tanh[float64]"],
    ),
    Mutant(
        "synchronize (the whole device) returns before work on a created stream is done",
        "async",
        [
            (
                RUNTIME,
                '        for stream in self.__dict__.get("streams", []):\n            stream.wait()\n',
                "        pass\n",
            )
        ],
        "runtime",
        "synchronize_device",
        ["runtime/synchronize_device"],
    ),
]


def make_plugin(dest: str, variant: str, edits: list[tuple[str, str, str]] = ()) -> str:
    """A copy of the example plugin with the variant's and the mutant's edits; its folder."""
    pkg = os.path.join(dest, "oarlock_simdev")
    shutil.copytree(VENDOR, pkg, ignore=shutil.ignore_patterns("__pycache__"))
    path = os.path.join(pkg, KERNELS)
    text = open(path).read()
    open(path, "w").write(text.replace("\nKERNELS = [", HELPERS + "\n\nKERNELS = [", 1))
    for fname, old, new in [*VARIANTS[variant], *edits]:
        path = os.path.join(pkg, fname)
        text = open(path).read()
        assert text.count(old) == 1, (
            f"{fname}: the text to replace is not there once (the example moved?): {old!r}"
        )
        open(path, "w").write(text.replace(old, new))
    return pkg


def conformance(pkg: str, tier: str, pattern: str, report: str) -> tuple[subprocess.CompletedProcess, dict]:
    env = dict(os.environ, OARLOCK_PLUGINS="cpu")  # only the copy provides simdev
    env.pop("OARLOCK_DEVICE", None)
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "framework.cli",
            "conformance",
            "--plugin",
            pkg,
            "--device",
            "simdev",
            "--tier",
            tier,
            "-k",
            pattern,
            "-q",
            "--strict",
            "--json",
            report,
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    data = json.loads(open(report).read()) if os.path.exists(report) else {}
    return p, data


def _runs(variant: str) -> list[tuple[str, str]]:
    return sorted({(m.tier, m.pattern) for m in MUTANTS if m.variant == variant})


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_the_unmutated_plugin_passes_the_cases_the_mutants_fail(variant, tmp_path):
    pkg = make_plugin(str(tmp_path), variant)
    tiers = sorted({t for t, _ in _runs(variant)})
    for tier in tiers:
        pattern = ",".join(p for t, p in _runs(variant) if t == tier)
        proc, rep = conformance(pkg, tier, pattern, str(tmp_path / f"{tier}.json"))
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
        ran = {r["id"] for r in rep["results"] if r["outcome"] == "passed"}
        for m in MUTANTS:
            if m.variant == variant and m.tier == tier:
                assert set(m.failing) <= ran, (m.name, sorted(set(m.failing) - ran))


@pytest.mark.parametrize("mutant", MUTANTS, ids=[m.name for m in MUTANTS])
def test_conformance_fails_the_case_of_the_op_with_the_bug(mutant, tmp_path):
    pkg = make_plugin(str(tmp_path), mutant.variant, mutant.edits)
    proc, rep = conformance(pkg, mutant.tier, mutant.pattern, str(tmp_path / "r.json"))
    assert proc.returncode == 1, f"{mutant.name}: not caught\n" + proc.stdout[-3000:] + proc.stderr[-2000:]
    failed = sorted(r["id"] for r in rep["results"] if r["outcome"] == "failed")
    assert failed == sorted(mutant.failing), (
        mutant.name,
        failed,
        [r["message"][:300] for r in rep["results"] if r["outcome"] == "failed"],
    )
    for r in rep["results"]:
        if r["outcome"] == "failed":  # a wrong value, not a crash of the suite
            assert r["message"] and "Traceback" not in r["message"], r["message"]
            if mutant.tier == "primitives":
                assert r["message"].startswith(f"{r['op']}[") or f"[{r['op']}]" in r["message"], r["message"]
            else:
                assert r["id"].split("/")[1] in r["message"], r["message"]
