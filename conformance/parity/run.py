"""Run one example under a side (real Paddle, or Oarlock imported as ``paddle``) and compare.

Each run gets a fresh namespace whose builtins carry two hooks: ``print`` records the objects it
is given (converted at once to plain values, so later in-place changes do not reach them) and,
on the Oarlock side, ``__import__`` answers ``paddle`` and ``paddle.x.y`` with ``framework`` and
``framework.x.y``. Real Paddle stays imported and untouched in ``sys.modules``. Seeds (the side's,
numpy's, Python's) are fixed before each run and global modes are restored after it.

What a run records is a list of *leaves*: ``(path, kind, payload)`` for every printed or
displayed value, tensors as ``("tensor", dtype, shape, array)``. Two runs compare leaf by leaf;
a leaf that changes between two seeds under real Paddle is random and is compared by kind,
dtype and shape only.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import importlib
import io
import math
import os
import random as pyrandom
import re
import signal
import sys
import tempfile
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import framework

from .examples import Example

SEED = 2023
TIMEOUT_S = 20
#: tensors and floats: ``|got - want| <= ATOL + RTOL * |want|`` (float32 printed to 8 digits;
#: real Paddle's docstrings were written on GPUs, where reductions round differently)
RTOL, ATOL = 1e-4, 1e-5
#: what counts as "the API is missing" rather than "the API misbehaves"
MISSING = ("AttributeError", "ModuleNotFoundError", "ImportError")


@dataclass
class Run:
    """What one example did under one side."""

    leaves: list[tuple] = field(default_factory=list)
    #: text printed by each part, index-aligned with ``example.parts``
    texts: list[str] = field(default_factory=list)
    error: BaseException | None = None
    error_part: int = -1


class Side:
    """How to run examples under one library: its module, tensor type and global resets."""

    name = ""

    def __init__(self) -> None:
        self.builtins = dict(vars(builtins))

    def is_tensor(self, v) -> bool:
        raise NotImplementedError("need is_tensor")

    def tensor_leaf(self, v) -> tuple:
        raise NotImplementedError("need tensor_leaf")

    def dtype_name(self, v) -> str | None:
        """The dtype's name when ``v`` is a dtype object of this side, else None."""
        return None

    def text(self, v) -> str:
        """``v``'s text as the example shows it (its ``str``)."""
        return _text(v)

    def reset(self, seed: int) -> None:
        raise NotImplementedError("need reset")


class PaddleSide(Side):
    """Real Paddle, imported normally."""

    name = "paddle"

    def __init__(self) -> None:
        super().__init__()
        # the oracle is optional: imported only when a paddle side is made
        self.paddle = paddle = importlib.import_module("paddle")
        paddle.set_device("cpu")

    def is_tensor(self, v) -> bool:
        return isinstance(v, self.paddle.Tensor)

    def tensor_leaf(self, v) -> tuple:
        dtype = str(v.dtype).replace("paddle.", "")
        if dtype in ("bfloat16", "float16"):
            arr = v.astype("float32").numpy()
        else:
            arr = v.numpy()
        return ("tensor", dtype, tuple(v.shape), np.array(arr))

    def dtype_name(self, v):
        if isinstance(v, (self.paddle.dtype, getattr(self.paddle.base.core, "DataType", ()))):
            return str(v).replace("paddle.", "")
        return None

    @contextlib.contextmanager
    def seeds_moved(self, offset: int):
        """Inside, ``paddle.seed(s)`` seeds ``s + offset``: an example that seeds itself draws
        other numbers, so the leaves that come from the generator show up as random."""
        real = self.paddle.seed
        self.paddle.seed = lambda s: real(s + offset)
        try:
            yield
        finally:
            self.paddle.seed = real

    def reset(self, seed: int) -> None:
        p = self.paddle
        if not p.in_dynamic_mode():
            p.disable_static()
        p.set_default_dtype("float32")
        p.set_device("cpu")
        p.seed(seed)


class OarlockSide(Side):
    """Oarlock's ``framework`` package, imported by the example as ``paddle``."""

    name = "oarlock"

    def __init__(self) -> None:
        super().__init__()
        self.fw = framework
        real_import = builtins.__import__

        def alias_import(name, globals=None, locals=None, fromlist=(), level=0):
            if level == 0 and (name == "paddle" or name.startswith("paddle.")):
                target = "framework" + name[len("paddle") :]
                try:
                    return real_import(target, globals, locals, fromlist, level)
                except ModuleNotFoundError as e:
                    raise ModuleNotFoundError(f"No module named '{name}' ({e})", name=name) from None
            return real_import(name, globals, locals, fromlist, level)

        self.builtins["__import__"] = alias_import

    def is_tensor(self, v) -> bool:
        return isinstance(v, self.fw.Tensor)

    def text(self, v) -> str:
        """A class the package exports at its top level shows under the name the example
        imported it by (``type(x)`` is ``<class 'paddle.Tensor'>``, as ``paddle.Tensor`` is
        ``framework.Tensor`` here); anything else shows its ``str``."""
        if isinstance(v, type) and getattr(self.fw, v.__name__, None) is v:
            return f"<class 'paddle.{v.__name__}'>"
        return _text(v)

    def tensor_leaf(self, v) -> tuple:
        dtype = _dtype_str(v.dtype)
        arr = np.asarray(v.numpy())
        if dtype in ("bfloat16", "float16"):
            arr = arr.astype(np.float32)
        return ("tensor", dtype, tuple(v.shape), np.array(arr))

    def dtype_name(self, v):
        if isinstance(v, np.dtype) or (isinstance(v, type) and issubclass(v, np.generic)):
            return _dtype_str(v)
        fw_dtype = getattr(self.fw, "dtype", None)
        if isinstance(fw_dtype, type) and isinstance(v, fw_dtype):
            return _dtype_str(v)
        return None

    def reset(self, seed: int) -> None:
        fw = self.fw
        fw.set_default_dtype("float32")
        fw.set_device("cpu")
        fw.seed(seed)


def _dtype_str(d) -> str:
    s = str(d).replace("paddle.", "").replace("framework.", "")
    if s.startswith("<class 'numpy."):
        s = np.dtype(d).name
    return s


def _leaves(side: Side, v, path: str, out: list, depth: int = 0) -> None:
    """Append ``v`` as comparable leaves (tensors, arrays, scalars, strings, objects' text)."""
    if depth > 6:
        out.append((path, "obj", side.text(v)))
    elif side.is_tensor(v):
        out.append((path, *side.tensor_leaf(v)))
    elif (name := side.dtype_name(v)) is not None:
        out.append((path, "dtype", name))
    elif isinstance(v, np.ndarray):
        out.append((path, "tensor", v.dtype.name, v.shape, v.copy()))
    elif isinstance(v, np.generic):
        out.append((path, "tensor", v.dtype.name, (), np.asarray(v)))
    elif isinstance(v, bool) or v is None:
        out.append((path, "py", repr(v)))
    elif isinstance(v, (int, float, complex)):
        out.append((path, "number", type(v).__name__, v))
    elif isinstance(v, str):
        out.append((path, "text", v))
    elif isinstance(v, (list, tuple)):
        out.append((path, "seq", len(v)))
        for i, item in enumerate(v):
            _leaves(side, item, f"{path}[{i}]", out, depth + 1)
    elif isinstance(v, dict):
        out.append((path, "dict", sorted(map(str, v))))
        for k in v:
            _leaves(side, v[k], f"{path}[{k!r}]", out, depth + 1)
    else:
        out.append((path, "obj", side.text(v)))


def _text(v) -> str:
    try:
        return str(v)
    except Exception as e:  # noqa: BLE001  (a value whose str() fails is still a value to report)
        return f"<str() raised {type(e).__name__}>"


class _Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise _Timeout(f"example ran past {TIMEOUT_S} s")


def run_example(side: Side, example: Example, seed: int = SEED) -> Run:
    """Execute the example's parts in a fresh namespace; record printed values and text."""
    run = Run()
    part_no = [0]

    def record_print(*args, sep=" ", end="\n", file=None, flush=False):
        if file is None or file is sys.stdout:
            for i, a in enumerate(args):
                _leaves(side, a, f"p{part_no[0]}.{i}", run.leaves)
        builtins.print(*args, sep=sep, end=end, file=file, flush=flush)

    bi = dict(side.builtins)
    bi["print"] = record_print
    ns: dict[str, Any] = {"__name__": "__parity__", "__builtins__": bi}
    side.reset(seed)
    np.random.seed(seed)
    pyrandom.seed(seed)
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(TIMEOUT_S)
    # files an example writes (paddle.save(..., "test.pp")) land in a folder of their own
    scratch = tempfile.TemporaryDirectory(prefix="parity-")
    here = os.getcwd()
    os.chdir(scratch.name)
    try:
        for n, part in enumerate(example.parts):
            part_no[0] = n
            buf = io.StringIO()
            run.texts.append("")
            if part.skipped or not part.source.strip():
                continue
            try:
                # as in xdoctest, a statement's value is shown only where the docstring shows it
                show = (lambda v, n=n, buf=buf: _display(side, v, f"d{n}", run, buf)) if part.want else None
                with contextlib.redirect_stdout(buf):
                    _exec_part(part.source, ns, show)
            except BaseException as e:  # noqa: BLE001  (any failure of the example is its result)
                if isinstance(e, KeyboardInterrupt):
                    raise
                run.error, run.error_part = e, n
                run.texts[n] = buf.getvalue()
                break
            run.texts[n] = buf.getvalue()
    finally:
        os.chdir(here)
        scratch.cleanup()
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
        with contextlib.suppress(Exception):
            side.reset(seed)
    return run


def _display(side: Side, v, path: str, run: Run, buf: io.StringIO) -> None:
    if v is None:
        return
    _leaves(side, v, path, run.leaves)
    buf.write(repr(v) + "\n")


def _exec_part(source: str, ns: dict, display) -> None:
    tree = ast.parse(source, mode="exec")
    last = tree.body[-1] if tree.body else None
    if display is not None and isinstance(last, ast.Expr):
        body = ast.Module(body=tree.body[:-1], type_ignores=[])
        exec(compile(body, "<example>", "exec"), ns)  # noqa: S102  (running the example is the point)
        display(eval(compile(ast.Expression(last.value), "<example>", "eval"), ns))  # noqa: S307
    else:
        exec(compile(tree, "<example>", "exec"), ns)  # noqa: S102


# -------------------------------------------------------------------------------------------
# comparisons
# -------------------------------------------------------------------------------------------
_NUMBER = re.compile(
    r"([-+]?(?:nan|inf|\d+\.\d*(?:e[-+]?\d+)?|\.\d+(?:e[-+]?\d+)?|\d+(?:e[-+]?\d+)?))", re.IGNORECASE
)
_PLACE = re.compile(
    r"(?:CUDA)?Place\((?:gpu|cpu|gpu_pinned|undefined)(?::\d+)?\)|CPUPlace\(\)|CUDAPlace\(\d+\)"
)


def _tokens(s: str) -> list:
    s = _PLACE.sub("Place(cpu)", s)
    out: list = []
    for i, piece in enumerate(_NUMBER.split(s)):
        if i % 2:
            out.append(float(piece))
        else:
            text = "".join(piece.split())
            if text:
                out.append(text)
    return out


def text_matches(got: str, want: str) -> bool:
    """Paddle's printed text against its docstring: same words, numbers within tolerance."""
    a, b = _tokens(got), _tokens(want)
    if len(a) != len(b):
        return False
    for x, y in zip(a, b, strict=True):
        if isinstance(x, float) != isinstance(y, float):
            return False
        if isinstance(x, float):
            if not (x == y or (math.isnan(x) and math.isnan(y)) or abs(x - y) <= ATOL + RTOL * abs(y)):
                return False
        elif x != y:
            return False
    return True


def paddle_reproduces(example: Example, run: Run) -> tuple[bool, str]:
    """Whether real Paddle runs the example and prints what its docstring says."""
    if run.error is not None:
        return False, f"raises {type(run.error).__name__}: {_first_line(run.error)}"
    if all(p.skipped or not p.source.strip() for p in example.parts):
        return False, "every statement is skipped (+SKIP / +REQUIRES)"
    got = ""
    for part, text in zip(example.parts, run.texts, strict=True):
        got += text
        if part.want:
            if not part.skipped and not text_matches(got, part.want):
                return False, f"prints {got.strip()[:200]!r}, docstring says {part.want[:200]!r}"
            got = ""
    return True, ""


def random_paths(a: Run, b: Run) -> set[str] | None:
    """Leaves that differ between two seeds (None: the runs differ in structure: all random)."""
    if len(a.leaves) != len(b.leaves):
        return None
    out = set()
    for x, y in zip(a.leaves, b.leaves, strict=True):
        if x[:2] != y[:2]:
            return None
        if leaf_mismatch(x, y, random=False):
            out.add(x[0])
    return out


def leaf_mismatch(want: tuple, got: tuple, random: bool) -> str:
    """'' when ``got`` stands for ``want``; else what differs (path, expected, got)."""
    path, kind = want[0], want[1]
    if got[1] != kind:
        return f"{path}: expected a {kind}, got a {got[1]} ({_short(got)})"
    if kind == "tensor":
        _, _, wd, ws, wa = want
        _, _, gd, gs, ga = got
        if wd != gd:
            return f"{path}: dtype {gd}, expected {wd}"
        if tuple(ws) != tuple(gs):
            return f"{path}: shape {list(gs)}, expected {list(ws)}"
        if random or wa.size == 0:
            return ""
        if wa.dtype.kind in "fc" or ga.dtype.kind in "fc":
            ok = np.allclose(
                ga.astype(np.complex128), wa.astype(np.complex128), rtol=RTOL, atol=ATOL, equal_nan=True
            )
        else:
            ok = np.array_equal(ga, wa)
        return "" if ok else f"{path}: values {_arr(ga)}, expected {_arr(wa)}"
    if kind == "number":
        if got[2] != want[2]:
            return f"{path}: a {got[2]} {got[3]!r}, expected a {want[2]} {want[3]!r}"
        if random or got[3] == want[3]:
            return ""
        w, g = complex(want[3]), complex(got[3])
        if (w != w and g != g) or abs(g - w) <= ATOL + RTOL * abs(w):
            return ""
        return f"{path}: {got[3]!r}, expected {want[3]!r}"
    if kind in ("text", "obj"):
        if random or text_matches(got[2], want[2]):
            return ""
        return f"{path}: {got[2][:120]!r}, expected {want[2][:120]!r}"
    if got[2:] != want[2:]:
        return f"{path}: {got[2:]!r}, expected {want[2:]!r}"
    return ""


def compare(want: Run, got: Run, random: set[str] | None) -> str:
    """'' when Oarlock's run reproduces Paddle's values; else the first difference."""
    if len(want.leaves) != len(got.leaves):
        return f"printed {len(got.leaves)} values, expected {len(want.leaves)}: " + _first_diff(want, got)
    for w, g in zip(want.leaves, got.leaves, strict=True):
        if w[0] != g[0]:
            return f"printed {g[0]} where Paddle printed {w[0]}"
        msg = leaf_mismatch(w, g, random=random is None or w[0] in random)
        if msg:
            return msg
    return ""


def _first_diff(want: Run, got: Run) -> str:
    for w, g in zip(want.leaves, got.leaves, strict=False):
        if w[:2] != g[:2]:
            return f"{g[0]} is a {g[1]}, expected {w[0]} a {w[1]}"
    return "one side printed more"


def _first_line(e: BaseException) -> str:
    s = str(e).strip().splitlines()
    return s[0][:300] if s else ""


def _short(leaf) -> str:
    return repr(leaf[2:])[:100]


def _arr(a: np.ndarray) -> str:
    return np.array2string(a.ravel()[:6], precision=6, separator=",") + ("..." if a.size > 6 else "")


def error_summary(e: BaseException) -> str:
    return f"{type(e).__name__}: {_first_line(e)}"


def capture(side: Side, value) -> Run:
    """``value`` (a tensor, a number, a nested list of them...) as a :class:`Run`'s leaves, so
    hand-written differential tests compare with :func:`compare` like the examples do."""
    run = Run()
    _leaves(side, value, "v", run.leaves)
    return run
