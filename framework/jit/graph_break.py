"""Graph breaks: where Python cannot be recorded into a program.

A ``to_static`` function whose trace stops at a read of a traced tensor's values (``print``,
``.numpy()``, ``.item()``, ``float(t)``, a NumPy or ``math`` call on it, an op whose output
shape depends on values) runs eagerly for that guard set when ``full_graph=False``; with
``full_graph=True`` the same stop is an error naming the line.

Which lines break is found by a *probe*: the call run once eagerly with every op's outputs
marked (:class:`ProbeTensor`); a read of a marked tensor's values is a break at the innermost
user line. Converted control flow (:mod:`framework.jit.convert_ops`) reads its conditions
without counting: the program records it. The probe's result is the call's result (eager
mode's, autograd included).
"""

from __future__ import annotations

import contextvars
import inspect
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from .._src import device as _dev
from .._src import dispatch
from .._src.ops import base
from .._src.tensor import Tensor
from ..static.nn import RECORDERS, check_loop_values
from .convert_ops import flatten, truth
from .trace import _user_line


@dataclass(frozen=True)
class GraphBreak:
    """One place a function breaks its graph: ``where`` is ``file:line (source)``.

    >>> import framework as fw
    >>> b = fw.jit.graph_breaks(lambda x: x * x.sum().item(), fw.ones([2]))[0]
    >>> b.reason
    'item() reads the value'
    """

    where: str
    reason: str

    def __str__(self) -> str:
        return f"{self.where}: {self.reason}"


class _Probe:
    def __init__(self, span: tuple[str, int, int] | None = None) -> None:
        self.breaks: dict[str, GraphBreak] = {}
        #: (file, first line, last line) of the probed function: the lines of it that break
        self.span = span
        self.lines: set[int] = set()

    def note(self, reason: str) -> None:
        where = _user_line()
        self.breaks.setdefault(where, GraphBreak(where, reason))
        if self.span is not None:
            self.lines.update(_outer_line(*self.span))


def _outer_line(filename: str, first: int, last: int) -> list[int]:
    """The line the probed function's own frame is at (its outermost frame on the stack: a
    break inside a helper it calls, or inside a converted branch, is the statement that calls it)."""
    frame = sys._getframe(2)
    found: list[int] = []
    while frame is not None:
        c = frame.f_code
        if c.co_filename == filename and first <= frame.f_lineno <= last:
            found = [frame.f_lineno]
        frame = frame.f_back  # type: ignore[assignment]
    return found


_PROBE: contextvars.ContextVar[_Probe | None] = contextvars.ContextVar("oarlock_probe", default=None)


def _note(reason: str) -> None:
    probe = _PROBE.get()
    if probe is not None:
        probe.note(reason)


class ProbeTensor(Tensor):
    """A tensor made while probing for graph breaks: it has its values; reading them is
    noted as a break (outside a probe it is an ordinary tensor)."""

    def numpy(self) -> Any:
        _note("numpy() reads the values")
        return super().numpy()

    def item(self) -> Any:
        _note("item() reads the value")
        return super().item()

    def tolist(self) -> Any:
        _note("tolist() reads the values")
        return super().tolist()

    def __bool__(self) -> bool:
        _note("bool() of a tensor (a Python if/while/and/or the conversion does not cover)")
        return super().__bool__()

    def __float__(self) -> float:
        _note("float() reads the value")
        return super().__float__()

    def __int__(self) -> int:
        _note("int() reads the value")
        return super().__int__()

    def __index__(self) -> int:
        _note("use as a Python index reads the value")
        return super().__index__()

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        _note("conversion to a numpy array (a NumPy or other library call)")
        return super().__array__(dtype)

    def __str__(self) -> str:
        _note("print/str of a tensor reads its values")
        return Tensor.__repr__(self)

    def __format__(self, spec: str) -> str:
        _note("formatting a tensor reads its values")
        return format(Tensor.__repr__(self), spec)


class ProbeTracer:
    """The dispatcher's hook while probing: each op runs eagerly (as with no hook); its
    outputs become :class:`ProbeTensor`. Random ops draw from the generator as eager mode."""

    runtime_random = False

    def __call__(self, op: base.OpDef, ins: list[Tensor], attrs: dict[str, Any]) -> list[Tensor]:
        if op.name == "full":
            a = dict(attrs)
            dev = a.pop("device", None) or _dev.get_device()
            outs = [base.fill_buffer(tuple(a["shape"]), a["value"], a["dtype"], dev)]
        else:
            outs = dispatch.run(op, ins, attrs, None if ins else _dev.get_device())
        for o in outs:
            if type(o) is Tensor:
                o.__class__ = ProbeTensor
        return outs


def _probe_cond(tracer: ProbeTracer, pred: Any, true_fn: Any, false_fn: Any) -> Any:
    fn = true_fn if truth(pred) else false_fn
    return None if fn is None else fn()


def _probe_while(tracer: ProbeTracer, cond: Any, body: Any, loop_vars: list[Tensor]) -> list[Tensor]:
    vals = list(loop_vars)
    while truth(cond(*vals)):
        vals = check_loop_values(body(*vals), loop_vars, "body")
    return vals


RECORDERS[ProbeTracer] = (_probe_cond, _probe_while)


def _marked(objs: Any) -> Iterator[Tensor]:
    leaves, _ = flatten(objs)
    for t in leaves:
        if type(t) is Tensor:
            yield t


def span_of(fn: Any) -> tuple[str, int, int] | None:
    """(file, first line, last line) of a function's source, or None where it has none."""
    func = getattr(fn, "__func__", fn)
    try:
        src, first = inspect.getsourcelines(func)
    except (OSError, TypeError):
        return None
    return func.__code__.co_filename, first, first + len(src) - 1


def probe(
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    lines: set[int] | None = None,
    span: tuple[str, int, int] | None = None,
) -> tuple[Any, list[GraphBreak]]:
    """Run ``fn(*args, **kwargs)`` eagerly, noting where it reads tensor values: its result and
    the breaks in order of first occurrence (one per line). With ``span`` (:func:`span_of` the
    function as written), ``lines`` gets the lines of it that were executing at each break."""
    p = _Probe(span)
    ins = list(_marked((args, kwargs)))
    for t in ins:  # the inputs are read like any traced tensor
        t.__class__ = ProbeTensor
    token = _PROBE.set(p)
    try:
        with base.tracing(ProbeTracer(), "to_static"):
            res = fn(*args, **kwargs)
    finally:
        _PROBE.reset(token)
        for t in ins:
            t.__class__ = Tensor
    if lines is not None:
        lines.update(p.lines)
    leaves, _ = flatten(res)
    for t in leaves:
        if type(t) is ProbeTensor:
            t.__class__ = Tensor
            if type(t.grad) is ProbeTensor:
                t.grad.__class__ = Tensor
    for t in ins:
        if type(t.grad) is ProbeTensor:
            t.grad.__class__ = Tensor
    return res, list(p.breaks.values())
