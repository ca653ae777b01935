"""Data-dependent control flow (Paddle's ``paddle.static.nn.cond`` and ``while_loop``).

Run eagerly, they are Python: the predicate is read and one branch runs (``cond``), or the
body runs while the condition holds (``while_loop``); gradients flow through what ran by the
ordinary tape. Under :func:`framework.jit.to_static` the tracer records them as the ``cf``
dialect's ``cf.cond`` / ``cf.while`` (both branches, the cond and the body are traced into
regions; the executor runs only what the values ask for).

>>> import framework as fw
>>> x = fw.to_tensor([1.0, 2.0])
>>> fw.static.nn.cond(x.sum() > 2.0, lambda: x * 2.0, lambda: x - 1.0).tolist()
[2.0, 4.0]
>>> i, s = fw.static.nn.while_loop(lambda i, s: i < 3, lambda i, s: [i + 1, s * 2.0],
...                                [fw.to_tensor(0), fw.to_tensor(1.0)])
>>> s.item()
8.0
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from adapter_api import OpArgumentError

from .._src.ops import base
from .._src.tensor import Tensor
from ..ir.control import loop_limit_error, max_while_iterations

__all__ = ["case", "cond", "switch_case", "while_loop"]


# -- nested structures of tensors (a tensor, None, or tuples/lists of them) -----------------
def flatten(what: str, obj: Any, path: str = "") -> tuple[list[Tensor], Any]:
    """The tensors of ``obj`` in order and its structure (for :func:`unflatten`)."""
    if obj is None:
        return [], None
    if isinstance(obj, Tensor):
        return [obj], "T"
    if isinstance(obj, (tuple, list)):
        flat: list[Tensor] = []
        parts = []
        for i, o in enumerate(obj):
            f, s = flatten(what, o, f"{path}[{i}]")
            flat += f
            parts.append(s)
        return flat, (type(obj), tuple(parts))
    raise OpArgumentError(
        f"[{what}] returned {type(obj).__name__} at {path or 'the top'}; return a Tensor, None, or a "
        f"tuple/list of them (make Python numbers tensors with fw.to_tensor)"
    )


def unflatten(struct: Any, flat: Sequence[Tensor]) -> Any:
    it = iter(flat)

    def build(s: Any) -> Any:
        if s is None:
            return None
        if s == "T":
            return next(it)
        kind, parts = s
        return kind(build(p) for p in parts)

    return build(struct)


def describe(t: Tensor) -> str:
    return f"{t.dtype}{list(t.shape)}"


def check_predicate(what: str, pred: Any) -> None:
    if isinstance(pred, Tensor):
        if pred.dtype != np.bool_ or pred.size != 1:
            raise OpArgumentError(
                f"[{what}] the predicate must be a bool tensor of one element (shape [] or [1]), got "
                f"{describe(pred)}; compare to get one (x.sum() > 0)"
            )
    elif not isinstance(pred, (bool, np.bool_)):
        raise OpArgumentError(
            f"[{what}] the predicate must be a bool tensor or a bool, got {type(pred).__name__}"
        )


def _truth(what: str, pred: Any) -> bool:
    check_predicate(what, pred)
    if isinstance(pred, Tensor):
        return bool(np.asarray(pred.numpy()).reshape(-1)[0])
    return bool(pred)


def check_loop_values(vals: Sequence[Any], init: Sequence[Tensor], where: str) -> list[Tensor]:
    """``vals`` (what the body returned) as a list with the loop values' count and types."""
    out = [vals] if isinstance(vals, Tensor) else list(vals) if isinstance(vals, (tuple, list)) else None
    if out is None or len(out) != len(init):
        got = type(vals).__name__ if out is None else f"{len(out)} values"
        raise OpArgumentError(
            f"[while_loop] {where} returned {got}; it must return a list/tuple of {len(init)} tensors, "
            f"one per loop value"
        )
    for i, (o, t) in enumerate(zip(out, init)):
        if not isinstance(o, Tensor) or o.dtype != t.dtype or tuple(o.shape) != tuple(t.shape):
            got = describe(o) if isinstance(o, Tensor) else type(o).__name__
            raise OpArgumentError(
                f"[while_loop] {where} returns {got} as loop value {i}, which entered as {describe(t)}: "
                f"the body must keep each loop value's dtype and shape"
            )
    return out


#: how a tracer records control flow: tracer class -> (cond recorder, while_loop recorder),
#: each called as ``recorder(tracer, ...)`` (framework.jit registers the to_static tracer's)
RECORDERS: dict[type, tuple[Callable[..., Any], Callable[..., Any]]] = {}


def _recorder(name: str, k: int) -> Callable[..., Any] | None:
    tracer = base.TRACER.get()
    if tracer is None:
        return None
    rec = RECORDERS.get(type(tracer))
    if rec is None:
        raise OpArgumentError(
            f"[{name}] control flow cannot be recorded by the tracer in use ({type(tracer).__name__}); "
            f"use it under fw.jit.to_static or eagerly"
        )
    return functools.partial(rec[k], tracer)


# -- the API --------------------------------------------------------------------------------
def cond(
    pred: Any,
    true_fn: Callable[[], Any] | None = None,
    false_fn: Callable[[], Any] | None = None,
    name: str | None = None,
    return_names: Sequence[str] | None = None,
) -> Any:
    """``true_fn()`` if ``pred`` holds, else ``false_fn()`` (Paddle's ``paddle.static.nn.cond``).

    ``pred`` is a bool tensor of one element (or a Python bool). Both functions take no
    arguments (they read what they need from the enclosing scope) and return the same
    structure: a tensor, a tuple/list of tensors, or None (a missing function returns None).
    Under ``to_static`` both are traced (the program runs only the taken one); each output must
    then have the same dtype and shape in both branches.
    """
    for fn, label in ((true_fn, "true_fn"), (false_fn, "false_fn")):
        if fn is not None and not callable(fn):
            raise OpArgumentError(f"[cond] {label} must be callable or None, got {type(fn).__name__}")
    hook = _recorder("cond", 0)
    if hook is not None:
        return hook(pred, true_fn, false_fn)
    fn = true_fn if _truth("cond", pred) else false_fn
    return None if fn is None else fn()


def while_loop(
    cond: Callable[..., Any],
    body: Callable[..., Any],
    loop_vars: Sequence[Tensor],
    is_test: bool = False,
    name: str | None = None,
    max_iterations: int | None = None,
) -> list[Tensor]:
    """Run ``loop_vars = body(*loop_vars)`` while ``cond(*loop_vars)`` holds; returns the final
    loop values as a list (Paddle's ``paddle.static.nn.while_loop``).

    A loop whose condition still holds after ``max_iterations`` bodies (default
    ``OARLOCK_MAX_WHILE_ITERATIONS``, else 10,000,000) raises ``LoopLimitError`` instead of
    running forever; under ``to_static`` the program's loop is capped by that variable, read
    when the program runs.

    ``cond`` returns a bool tensor of one element; ``body`` returns as many tensors as
    ``loop_vars``, each with its loop value's dtype and shape. Under ``to_static`` both are
    traced once into a ``cf.while``; the loop runs in the program."""
    if not callable(cond) or not callable(body):
        raise OpArgumentError(
            f"[while_loop] cond and body must be callable, got {type(cond).__name__} and {type(body).__name__}"
        )
    if isinstance(loop_vars, Tensor) or not isinstance(loop_vars, (list, tuple)) or not loop_vars:
        raise OpArgumentError("[while_loop] loop_vars must be a non-empty list or tuple of tensors")
    for i, v in enumerate(loop_vars):
        if not isinstance(v, Tensor):
            raise OpArgumentError(
                f"[while_loop] loop value {i} is {type(v).__name__}; loop values are tensors "
                f"(fw.to_tensor(...))"
            )
    hook = _recorder("while_loop", 1)
    if hook is not None:
        return hook(cond, body, list(loop_vars))
    if max_iterations is not None and (
        isinstance(max_iterations, bool) or not isinstance(max_iterations, int) or max_iterations < 1
    ):
        raise OpArgumentError(f"[while_loop] max_iterations must be an int >= 1, got {max_iterations!r}")
    limit = max_while_iterations() if max_iterations is None else max_iterations
    vals = list(loop_vars)
    n = 0
    while _truth("while_loop", cond(*vals)):
        if n == limit:
            raise loop_limit_error("while_loop", limit)
        vals = check_loop_values(body(*vals), loop_vars, "body")
        n += 1
    return vals


def case(
    pred_fn_pairs: Sequence[tuple[Any, Callable[[], Any]]],
    default: Callable[[], Any] | None = None,
    name: str | None = None,
) -> Any:
    """Python's ``if / elif / else`` (Paddle's ``paddle.static.nn.case``): the function of the
    first pair whose predicate holds, else ``default()`` (without one, the last pair's
    function is the default). Built from :func:`cond`, so it traces into nested ``cf.cond``."""
    pairs = list(pred_fn_pairs) if isinstance(pred_fn_pairs, (list, tuple)) else None
    if not pairs or any(not isinstance(p, (list, tuple)) or len(p) != 2 or not callable(p[1]) for p in pairs):
        raise OpArgumentError(
            "[case] pred_fn_pairs must be a non-empty list of (bool tensor, callable) pairs, got "
            f"{pred_fn_pairs!r}"
        )
    if default is not None and not callable(default):
        raise OpArgumentError(f"[case] default must be callable or None, got {type(default).__name__}")
    if default is None:
        *pairs, (_, default) = pairs
        if not pairs:
            return default()

    def chain(k: int) -> Any:
        if k == len(pairs):
            return default()
        pred, fn = pairs[k]
        return cond(pred, fn, lambda: chain(k + 1))

    return chain(0)


def switch_case(
    branch_index: Any,
    branch_fns: Any,
    default: Callable[[], Any] | None = None,
    name: str | None = None,
) -> Any:
    """C's ``switch`` (Paddle's ``paddle.static.nn.switch_case``): ``branch_fns`` is a dict
    ``{index: fn}``, a list of ``(index, fn)`` pairs, or a list of functions (indexed by
    position); the function whose index equals ``branch_index`` (an int tensor of one element)
    runs, else ``default()`` (without one, the function of the largest index)."""
    if isinstance(branch_fns, dict):
        items = list(branch_fns.items())
    elif isinstance(branch_fns, (list, tuple)) and all(callable(f) for f in branch_fns):
        items = list(enumerate(branch_fns))
    elif isinstance(branch_fns, (list, tuple)):
        items = [tuple(p) for p in branch_fns]
    else:
        items = []
    if not items or any(
        len(p) != 2 or not isinstance(p[0], (int, np.integer)) or not callable(p[1]) for p in items
    ):
        raise OpArgumentError(
            "[switch_case] branch_fns must be a dict {int: callable}, a list of (int, callable) pairs "
            f"or a list of callables, got {branch_fns!r}"
        )
    keys = [int(k) for k, _ in items]
    if len(set(keys)) != len(keys):
        raise OpArgumentError(f"[switch_case] the branch indices {keys} repeat; give each its own")
    if not isinstance(branch_index, Tensor) or branch_index.dtype.kind not in "iu" or branch_index.size != 1:
        got = describe(branch_index) if isinstance(branch_index, Tensor) else type(branch_index).__name__
        raise OpArgumentError(f"[switch_case] branch_index must be an int tensor of one element, got {got}")
    items.sort(key=lambda p: int(p[0]))
    if default is None:
        *items, (_, default) = items
    return case([(branch_index == int(k), fn) for k, fn in items], default) if items else default()
