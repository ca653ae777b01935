"""What the rewritten code calls (:mod:`framework.jit.ast_convert`): each function looks at
its condition and either runs Python (a Python value, or a tensor with values: eager mode, a
graph-break probe) or records the IR's control flow (a tensor being traced).

The rules of a traced ``if`` (``cf.cond``): every name either branch assigns is an output.
Tensors must agree in dtype and shape; a Python number on one side and a tensor on the other
becomes a tensor; equal Python values pass through; two different numbers become tensors.
Anything else (a name only one branch assigns, two different lists...) gives a marker
(:class:`Undefined`) that raises, naming the variable and the line, only if it is used. A
traced ``while`` (``cf.while``) carries the tensors and numbers the body assigns; a name first
assigned in the body is local to it (a marker after the loop).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .._src import dtypes as _dt
from .._src.ops import base
from .._src.ops.math import logical_and, logical_not, logical_or
from .._src.tensor import Tensor
from ..ir import Operation, Region
from .control import record_cond, trace_while
from .trace import GraphBreakError, Tracer, TracingError, _Symbolic, _user_line


class ConversionError(TracingError):
    """Converted control flow cannot hold what the code does (the message names the variable
    and the line).

    >>> import framework as fw
    >>> def f(x):
    ...     if x.sum() > 0:
    ...         y = x + 1
    ...     return y
    >>> try:
    ...     fw.jit.to_static(f)(fw.ones([2]))
    ... except fw.jit.ConversionError as e:
    ...     print("'y'" in str(e))
    True
    """


class LoopMutationError(GraphBreakError):
    """A traced loop changes a list or dict in place: a graph break (the call runs eagerly)."""


def _snapshot(v: Any) -> Any:
    if type(v) is list:
        return [id(x) for x in v]
    if type(v) is dict:
        return [(k, id(x)) for k, x in v.items()]
    return None


# -- values that are not there --------------------------------------------------------------------
class Undefined:
    """A variable with no value at this point: using it in any way raises
    :class:`ConversionError` with the reason (a name assigned in one branch of a traced ``if``,
    a name first assigned in a traced loop's body, or one not assigned yet)."""

    __slots__ = ("name", "why")

    def __init__(self, name: str, why: str | None = None) -> None:
        self.name = name
        self.why = why

    def error(self) -> ConversionError:
        at = _user_line()
        at = "" if at == "<unknown>" else f" at {at}"
        if self.why is None:
            return ConversionError(
                f"[to_static] local variable '{self.name}' is used{at} before it is assigned"
            )
        return ConversionError(f"[to_static] variable '{self.name}' is used{at}, but {self.why}")

    def _fail(self, *args: Any, **kwargs: Any) -> Any:
        raise self.error()

    def __getattr__(self, attr: str) -> Any:
        raise self.error()

    def __repr__(self) -> str:
        return f"<undefined {self.name!r}>"


for _name in (
    "__bool__ __call__ __iter__ __len__ __getitem__ __setitem__ __contains__ __index__ __int__ __float__ "
    "__neg__ __pos__ __abs__ __invert__ __add__ __radd__ __sub__ __rsub__ __mul__ __rmul__ __matmul__ "
    "__rmatmul__ __truediv__ __rtruediv__ __floordiv__ __rfloordiv__ __mod__ __rmod__ __pow__ __rpow__ "
    "__lt__ __le__ __gt__ __ge__ __and__ __rand__ __or__ __ror__ __xor__ __rxor__"
).split():
    setattr(Undefined, _name, Undefined._fail)


def load(scope: dict[str, Any], names: Sequence[str]) -> tuple[Any, ...]:
    """The values of ``names`` in ``scope`` (``locals()``), a marker for one not bound yet."""
    return tuple(scope[n] if n in scope else Undefined(n) for n in names)


# -- telling traced from concrete ----------------------------------------------------------------
def _tracer() -> Tracer | None:
    tr = base.TRACER.get()
    return tr if isinstance(tr, Tracer) else None


def is_traced(x: Any) -> bool:
    """``x`` is a tensor of the program being traced (no values: its control flow is recorded)."""
    return isinstance(x, Tensor) and isinstance(x._block, _Symbolic) and x._block.tracer is _tracer()


def truth(x: Any) -> bool:
    """``bool(x)`` as eager mode computes it; a concrete tensor's value is read without
    counting as a graph break (the traced program would have recorded this branch)."""
    if isinstance(x, Undefined):
        raise x.error()
    if isinstance(x, Tensor):
        if x.size != 1:
            raise TracingError(
                f"[to_static] the truth value of a tensor with {x.size} elements is ambiguous; use .any() or .all()"
            )
        return bool(np.asarray(Tensor.numpy(x)).reshape(-1)[0])
    return bool(x)


def _index(x: Any) -> int:
    if isinstance(x, Tensor):
        if x.dtype.kind not in "iu" or x.size != 1:
            raise TracingError(f"[to_static] range() takes integers, got a {x.dtype}{list(x.shape)} tensor")
        return int(np.asarray(Tensor.numpy(x)).reshape(-1)[0])
    return operator.index(x)


def _number(v: Any) -> bool:
    return isinstance(v, (bool, int, float, np.bool_, np.integer, np.floating))


def _dtype_of(*vs: Any) -> np.dtype:
    if all(isinstance(v, (bool, np.bool_)) for v in vs):
        return np.dtype(np.bool_)
    if all(isinstance(v, (bool, int, np.bool_, np.integer)) for v in vs):
        return np.dtype(np.int64)
    return _dt.get_default_dtype()


def _as_bool(tr: Tracer, x: Any) -> Tensor:
    """A one-element bool tensor for a traced condition (``if x:`` on a number tensor: x != 0)."""
    if not isinstance(x, Tensor):
        return base.full_tensor((), bool(truth(x)), np.dtype(np.bool_), tr.device)
    if x.size != 1:
        raise TracingError(
            f"[to_static] the truth value of a tensor with {x.size} elements is ambiguous; use .any() or .all()"
        )
    return x if x.dtype == np.bool_ else x != 0


# -- nested structures ------------------------------------------------------------------------------
def flatten(obj: Any) -> tuple[list[Any], Any]:
    """The leaves of ``obj`` (tuples, lists and dicts opened) and its structure."""
    if isinstance(obj, (tuple, list)):
        leaves: list[Any] = []
        parts = []
        for o in obj:
            lv, s = flatten(o)
            leaves += lv
            parts.append(s)
        return leaves, (type(obj), tuple(parts))
    if isinstance(obj, dict):
        leaves, parts = [], []
        for k, o in obj.items():
            lv, s = flatten(o)
            leaves += lv
            parts.append((k, s))
        return leaves, (dict, tuple(parts))
    return [obj], None


def unflatten(struct: Any, leaves: Sequence[Any]) -> Any:
    it = iter(leaves)

    def build(s: Any) -> Any:
        if s is None:
            return next(it)
        kind, parts = s
        if kind is dict:
            return {k: build(p) for k, p in parts}
        items = [build(p) for p in parts]
        return kind(items) if kind in (list, tuple) else kind(*items)  # a namedtuple takes fields

    return build(struct)


# -- if --------------------------------------------------------------------------------------------
def convert_ifelse(
    pred: Any,
    true_fn: Callable[..., Any],
    false_fn: Callable[..., Any],
    names: Sequence[str],
    values: Sequence[Any],
    where: str,
    returns: bool = False,
) -> Any:
    """``true_fn(*values)`` or ``false_fn(*values)`` as Python picks, or both traced into a
    ``cf.cond`` when ``pred`` is a traced tensor. Each function returns the new values of
    ``names`` (``returns``: the function's return value)."""
    if not is_traced(pred):
        return (true_fn if truth(pred) else false_fn)(*values)
    tr = _tracer()
    assert tr is not None
    p = _as_bool(tr, pred)
    opened = len(tr.opened)
    # each branch changes its own copy of a list or dict (both run while tracing)
    b0, r0, v0 = _trace_branch(tr, true_fn, _copies(values), f"the true branch of the if at {where}")
    b1, r1, v1 = _trace_branch(tr, false_fn, _copies(values), f"the false branch of the if at {where}")
    if returns:
        r0, r1, names = (r0,), (r1,), ("the return value",)
    pairs: list[tuple[Tensor, Tensor]] = []
    merged: list[Any] = []  # per name: a marker, or (structure, leaves); a leaf pair stands for an output
    for i, name in enumerate(names):
        la, sa = flatten(r0[i])
        lb, sb = flatten(r1[i])
        if sa != sb:
            merged.append(Undefined(name, f"the branches of the if at {where} give it different structures"))
            continue
        leaves = [_merge_leaf(tr, x, y, name, where) for x, y in zip(la, lb)]
        pairs += [m for m in leaves if isinstance(m, tuple)]
        merged.append((sa, leaves))
    if not pairs:  # nothing comes out: no cf.cond (the branches' ops are dropped)
        _drop(tr, opened)
    outs = iter(_emit(tr, p, (b0, v0), (b1, v1), pairs) if pairs else [])
    res = []
    for m in merged:
        if isinstance(m, Undefined):
            res.append(m)
        else:
            struct, leaves = m
            res.append(unflatten(struct, [next(outs) if isinstance(v, tuple) else v for v in leaves]))
    if returns:
        leaves, _ = flatten(res[0])
        for v in leaves:
            if isinstance(v, Undefined):
                raise v.error()
        return res[0]
    return tuple(res)


def _alias(t: Tensor) -> Tensor:
    """Another tensor object for the same value (and autograd node): an in-place op in one
    branch (``k += 1`` rebinds ``k``'s storage) must not reach the other branch's ``k``."""
    c = object.__new__(type(t))
    for slot in Tensor.__slots__:
        if slot not in ("__dict__", "__weakref__"):
            setattr(c, slot, getattr(t, slot))
    c.__dict__.update(t.__dict__)
    return c


def _drop(tr: Tracer, opened: int) -> None:
    """Forget the blocks traced since ``tr.opened`` had ``opened`` entries (their ops' uses)."""
    for blk in tr.opened[opened:]:
        for op in blk.ops:
            op.drop_operands()


def _copies(values: Sequence[Any]) -> list[Any]:
    """What one branch of a traced if gets: its own copies of lists and dicts, aliases of tensors."""
    out = []
    for v in values:
        if isinstance(v, Tensor):
            v = _alias(v)
        elif type(v) in (list, dict):
            leaves, struct = flatten(v)
            v = unflatten(struct, [_alias(x) if isinstance(x, Tensor) else x for x in leaves])
        out.append(v)
    return out


def _trace_branch(
    tr: Tracer, fn: Callable[..., Any], values: Sequence[Any], what: str
) -> tuple[Any, Any, dict[int, Any]]:
    """Trace ``fn(*values)`` into a new block: the block, what it returned and the IR value of
    every tensor in it (read while the region is open: a view gets its reshape there)."""
    with tr.region(what) as blk:
        res = fn(*values)
        leaves, _ = flatten(res)
        vals = {id(t): tr.value_of(t, "cond") for t in leaves if isinstance(t, Tensor)}
        return blk, res, vals


def _merge_leaf(tr: Tracer, a: Any, b: Any, name: str, where: str) -> Any:
    """One leaf after a traced if: a pair of tensors (an output of the cf.cond), a Python
    value both branches agree on, or a marker."""
    if a is b:
        return a
    if isinstance(a, Undefined) or isinstance(b, Undefined):
        if isinstance(a, Undefined) and isinstance(b, Undefined):
            return a
        side = "false" if isinstance(a, Undefined) else "true"
        return Undefined(
            name,
            f"it is assigned only in the {side} branch of the if at {where}, whose condition is a "
            f"tensor; assign it before the if or in both branches",
        )
    ta, tb = isinstance(a, Tensor), isinstance(b, Tensor)
    if ta and tb:
        if a.dtype != b.dtype or tuple(a.shape) != tuple(b.shape):
            return Undefined(
                name,
                f"the branches of the if at {where} give it {a.dtype}{list(a.shape)} and "
                f"{b.dtype}{list(b.shape)}; a traced if needs one dtype and shape from both",
            )
        return (a, b)
    if ta and _number(b):
        return (a, base.full_tensor(tuple(a.shape), b, a.dtype, tr.device))
    if tb and _number(a):
        return (base.full_tensor(tuple(b.shape), a, b.dtype, tr.device), b)
    if _number(a) and _number(b):
        if type(a) is type(b) and a == b:
            return a
        dt = _dtype_of(a, b)
        return (base.full_tensor((), a, dt, tr.device), base.full_tensor((), b, dt, tr.device))
    if a is b:
        return a
    try:
        same = type(a) is type(b) and bool(a == b)
    except Exception:  # noqa: BLE001 — a value without a plain ==: not the same
        same = False
    if same:
        return a
    return Undefined(
        name,
        f"the branches of the if at {where}, whose condition is a tensor, give it different Python "
        f"values ({type(a).__name__} and {type(b).__name__}); a program holds one of them only",
    )


def _emit(
    tr: Tracer, pred: Tensor, side0: Any, side1: Any, pairs: list[tuple[Tensor, Tensor]]
) -> list[Tensor]:
    """The cf.cond yielding each pair (true side, false side); its output tensors."""
    blocks = []
    for k, (blk, vals) in enumerate((side0, side1)):
        # a tensor made after the branches (a number on one side) is a value of the outer block
        ys = [vals[id(p[k])] if id(p[k]) in vals else tr.value_of(p[k], "cond") for p in pairs]
        blk.append("cf.yield", ys, [])
        blocks.append(blk)
    types = [tr._type(a.shape, a.dtype) for a, _ in pairs]
    pv = tr.value_of(pred, "cond")
    op = tr.block.append_op(Operation("cf.cond", [pv], types, regions=[Region([b]) for b in blocks]))
    outs = [tr._tensor(r, a.shape, a.dtype) for r, (a, _) in zip(op.results, pairs)]
    record_cond(tr, op, outs, pred)
    return outs


def convert_ifexp(pred: Any, true_fn: Callable[[], Any], false_fn: Callable[[], Any], where: str) -> Any:
    """``a if pred else b``: as :func:`convert_ifelse` with ``returns``."""
    return convert_ifelse(pred, true_fn, false_fn, (), (), where, returns=True)


# -- and, or, not --------------------------------------------------------------------------------
def convert_logical_and(lhs: Callable[[], Any], rhs: Callable[[], Any]) -> Any:
    """``lhs() and rhs()``: Python's (``rhs`` runs only when needed) unless a side is a traced
    tensor, then ``fw.logical_and`` of both as bool tensors."""
    a = lhs()
    if is_traced(a):
        tr = _tracer()
        return logical_and(_as_bool(tr, a), _as_bool(tr, rhs()))  # type: ignore[arg-type]
    return rhs() if truth(a) else a


def convert_logical_or(lhs: Callable[[], Any], rhs: Callable[[], Any]) -> Any:
    """``lhs() or rhs()``: as :func:`convert_logical_and`."""
    a = lhs()
    if is_traced(a):
        tr = _tracer()
        return logical_or(_as_bool(tr, a), _as_bool(tr, rhs()))  # type: ignore[arg-type]
    return a if truth(a) else rhs()


def convert_logical_not(x: Any) -> Any:
    """``not x``: ``fw.logical_not`` of a traced tensor, else Python's."""
    if is_traced(x):
        return logical_not(_as_bool(_tracer(), x))  # type: ignore[arg-type]
    return not truth(x)


# -- while and for-range ---------------------------------------------------------------------------
def convert_while(
    cond_fn: Callable[..., Any],
    body_fn: Callable[..., Any],
    names: Sequence[str],
    values: Sequence[Any],
    where: str,
) -> tuple[Any, ...]:
    """``while cond_fn(*values): values = body_fn(*values)`` in Python, until the condition is
    a traced tensor: from there the loop is one ``cf.while``."""
    vals = tuple(values)
    while True:
        c = cond_fn(*vals)
        if is_traced(c):
            return _traced_while(cond_fn, body_fn, names, vals, where)
        if not truth(c):
            return vals
        vals = tuple(body_fn(*vals))


class _Widen(Exception):
    """A loop value that entered as a Python number leaves the body as a tensor of another
    dtype or shape: trace again with that."""

    def __init__(self, i: int, t: Tensor) -> None:
        self.i, self.shape, self.dtype = i, tuple(t.shape), t.dtype


def _traced_while(
    cond_fn: Callable[..., Any],
    body_fn: Callable[..., Any],
    names: Sequence[str],
    vals: tuple[Any, ...],
    where: str,
) -> tuple[Any, ...]:
    tr = _tracer()
    assert tr is not None
    carried = [i for i, v in enumerate(vals) if isinstance(v, Tensor) or _number(v)]
    init = {
        i: vals[i]
        if isinstance(vals[i], Tensor)
        else base.full_tensor((), vals[i], _dtype_of(vals[i]), tr.device)
        for i in carried
    }

    def full(ts: Sequence[Tensor]) -> list[Any]:
        out = list(vals)
        for i, t in zip(carried, ts):
            out[i] = t
        return out

    def cond(*ts: Tensor) -> Tensor:
        return _as_bool(tr, cond_fn(*full(ts)))

    def body(*ts: Tensor) -> list[Tensor]:
        before = {i: _snapshot(v) for i, v in enumerate(vals) if i not in init}
        res = tuple(body_fn(*full(ts)))
        for i, (v, r) in enumerate(zip(vals, res)):
            if r is v and i in before and _snapshot(v) != before[i]:
                raise LoopMutationError(
                    f"[to_static] the while loop at {where}, whose condition is a tensor, changes the "
                    f"{type(v).__name__} '{names[i]}' in place (append, item assignment...); a program cannot "
                    f"repeat that a number of times it learns only when it runs: stack the tensors instead "
                    f"(or give the loop a Python bound)"
                )
            if i in init or r is v or isinstance(v, Undefined):
                continue
            raise ConversionError(
                f"[to_static] the while loop at {where}, whose condition is a tensor, changes '{names[i]}' "
                f"({type(v).__name__}); a traced loop carries tensors and numbers only: make it a "
                f"tensor, or keep it out of the loop"
            )
        out = []
        for i in carried:
            r, t = res[i], init[i]
            if _number(r):
                r = base.full_tensor(tuple(t.shape), r, t.dtype, tr.device)
            elif not isinstance(r, Tensor):
                raise ConversionError(
                    f"[to_static] the while loop at {where}, whose condition is a tensor, makes '{names[i]}' a "
                    f"{type(r).__name__}; it entered as {t.dtype}{list(t.shape)} and must stay so"
                )
            elif r.dtype != t.dtype or tuple(r.shape) != tuple(t.shape):
                if not isinstance(vals[i], Tensor):
                    raise _Widen(i, r)
                raise ConversionError(
                    f"[to_static] the while loop at {where}, whose condition is a tensor, changes '{names[i]}' "
                    f"from {t.dtype}{list(t.shape)} to {r.dtype}{list(r.shape)}; a loop value keeps its dtype "
                    f"and shape (cast it before the loop)"
                )
            out.append(r)
        return out

    for _ in range(len(carried) + 1):
        opened = len(tr.opened)
        try:
            outs = trace_while(tr, cond, body, [init[i] for i in carried])
            break
        except _Widen as w:  # a number that becomes a tensor: start it as that tensor
            _drop(tr, opened)  # the attempt's regions
            init[w.i] = base.full_tensor(w.shape, vals[w.i], w.dtype, tr.device)
    else:  # pragma: no cover — every retry widens one value for good
        raise ConversionError(f"[to_static] the loop values of the while loop at {where} do not settle")
    res = list(vals)
    for i, o in zip(carried, outs):
        res[i] = o
    for i, v in enumerate(vals):
        if isinstance(v, Undefined):
            res[i] = Undefined(
                names[i],
                f"it is first assigned inside the while loop at {where}, whose condition is a tensor: its "
                f"value after the loop is not kept; assign it before the loop",
            )
    return tuple(res)


class RangeLoop:
    """``range(start, stop, step)`` of a rewritten ``for`` loop; the bounds may be tensors."""

    __slots__ = ("start", "stop", "step", "n")

    def __init__(self, start: Any, stop: Any, step: Any) -> None:
        traced = any(is_traced(v) for v in (start, stop, step))
        if is_traced(step):
            raise ConversionError(
                "[to_static] range() with a traced tensor step: give the step as a Python int"
            )
        self.step = _index(step)
        if self.step == 0:
            raise ValueError("range() arg 3 must not be zero")
        if traced:
            self.start, self.stop, self.n = start, stop, None
            for v in (start, stop):
                if isinstance(v, Tensor) and (v.dtype.kind not in "iu" or v.size != 1):
                    raise ConversionError(
                        f"[to_static] range() takes integers, got a {v.dtype}{list(v.shape)} tensor"
                    )
        else:
            self.start, self.stop = _index(start), _index(stop)
            self.n = len(range(self.start, self.stop, self.step))


def range_of(*args: Any) -> RangeLoop:
    """The bounds of ``range(*args)``."""
    if len(args) == 1:
        return RangeLoop(0, args[0], 1)
    return RangeLoop(args[0], args[1], args[2] if len(args) > 2 else 1)


def range_holds(r: RangeLoop, k: Any) -> Any:
    """Whether iteration ``k`` runs (a bool tensor when the bounds are traced)."""
    if r.n is not None:
        return k < r.n
    at = r.start + k * r.step
    return at < r.stop if r.step > 0 else at > r.stop


def range_item(r: RangeLoop, k: Any) -> Any:
    """The loop variable of iteration ``k``."""
    return r.start + k * r.step
