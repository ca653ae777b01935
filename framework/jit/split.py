"""Graph breaks that split: a function whose trace breaks becomes traced pieces with the
Python between them run as written.

The probe (:mod:`framework.jit.graph_break`) says which lines of the function read tensor
values. Each *statement of the function's body* holding such a line (a ``print`` of a tensor,
``v = t.item()``, ``a = t.numpy()``, a NumPy call, an ``if`` on ``.item()``, a loop that
prints) runs as Python; so do statements Python must run for their effect on objects (an
attribute store ``self.n = ...``, ``import``, ``global``/``nonlocal``, ``raise``, ``del``)
and a ``return`` before the last Python statement. The runs of statements between
them become *segments*: each a function of the names it reads that earlier statements (or the
parameters) bind, returning the names it binds that later statements read, and run as its own
:class:`~framework.jit.api.StaticFunction` (its control flow converted, one program per guard
set: the shapes and dtypes of its tensors and the *values* of its Python inputs, a ``v`` from
``.item()`` included; re-traced on a guard miss, at most ``MAX_VARIANTS`` kept, with a
warning past that). The function itself is rewritten to call them::

    def f(x):                          def f(x):
        y = x @ w                          (y,) = _oarlock_segments[k][0](x)      # a program
        print(y.sum().item())   ->         print(y.sum().item())                  # Python
        return fw.relu(y) * 2              return _oarlock_segments[k][1](y)      # a program

What still runs as one whole eager call (the probe's result): a function whose source is not
available (lambdas, ``exec``, the REPL), generators and coroutines, a function whose every
statement must run as Python, one that makes a function or class (``def``, ``class``, a
lambda) in one piece and uses it in another, and a break inside a function the traced one calls (a helper or
a sub-layer's ``forward``) where that call is the whole statement that breaks; the statement
runs as Python, the rest is split around it.
"""

from __future__ import annotations

import ast
import itertools
import types
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from . import convert_ops
from .ast_convert import JST, _assigned, _def, _has, _SuperArgs, _Transformer, _walk_stmts, function_source

#: the global (in the function's module) through which a rewritten function finds its segments
SEGMENTS = "_oarlock_segments"
_KEYS = itertools.count()
#: statements that run as Python for what they do to objects and names
_PYTHON = (
    ast.Import,
    ast.ImportFrom,
    ast.Global,
    ast.Nonlocal,
    ast.Raise,
    ast.Delete,
)


def _callables(stmts: list[ast.stmt]) -> set[str]:
    """Names ``stmts`` bind to a function or class they make (``def``, ``class``, a lambda)."""
    out: set[str] = set()
    for s in stmts:
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(s.name)
        elif isinstance(s, ast.Assign) and isinstance(s.value, ast.Lambda):
            out.update(t.id for t in s.targets if isinstance(t, ast.Name))
    return out


class _Pieces(list):
    """A rewritten function's segments (a list that a weak reference can hold)."""


@dataclass
class Split:
    """A function split at its graph breaks: ``fn`` runs it; ``segments`` are the traced
    pieces (each a StaticFunction) and ``python_lines`` the first lines of the statements
    that run as Python. ``StaticFunction.splits`` lists them.

    >>> import framework as fw
    >>> def f(x):
    ...     y = x * 2
    ...     print(y.sum().item())
    ...     return y + 1
    >>> sf = fw.jit.to_static(f)
    >>> _ = sf(fw.ones([2])), sf(fw.ones([2]))  # doctest: +SKIP
    >>> len(sf.splits[0].segments)  # doctest: +SKIP
    2
    """

    fn: Callable[..., Any]
    segments: list[Any]
    python_lines: list[int]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)


def _reads(stmts: list[ast.stmt]) -> list[str]:
    out: dict[str, None] = {}
    for s in stmts:
        for n in ast.walk(s):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
                out.setdefault(n.id, None)
    return list(out)


def _sets_attribute(s: ast.stmt) -> bool:
    return any(isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store) for n in _walk_stmts([s]))


def _params(fdef: ast.FunctionDef) -> list[str]:
    a = fdef.args
    names = [x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
    return names + [x.arg for x in (a.vararg, a.kwarg) if x is not None]


def _kinds(body: list[ast.stmt], lines: set[int], offset: int) -> list[bool]:
    """Which statements run as Python (True) and which are traced (False)."""
    python = [
        isinstance(s, _PYTHON)
        or _sets_attribute(s)
        or any(s.lineno + offset <= ln <= (s.end_lineno or s.lineno) + offset for ln in lines)
        for s in body
    ]
    if any(python):
        last = max(i for i, p in enumerate(python) if p)
        for i, s in enumerate(body[:last]):  # a return before Python that follows it: Python
            python[i] = python[i] or _has([s], ast.Return)
    return python


def split(
    fn: Callable[..., Any], lines: set[int], make_static: Callable[[Callable[..., Any], str], Any]
) -> Split | None:
    """``fn`` split around the statements holding ``lines`` (absolute line numbers in its
    file), its segments made by ``make_static(function, name)``; None where it cannot be
    split (see the module's docstring)."""
    func = fn.__func__ if isinstance(fn, types.MethodType) else fn
    if not isinstance(func, types.FunctionType) or func.__name__ == "<lambda>" or not lines:
        return None
    got = function_source(func)
    if got is None:
        return None
    fdef, filename, offset, src_lines = got
    body = list(fdef.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # the docstring
    if not body or _has(body, (ast.Yield, ast.YieldFrom, ast.Await)):
        return None
    code = func.__code__
    if "__class__" in code.co_freevars and fdef.args.args:
        _SuperArgs(fdef.args.args[0].arg).visit(fdef)
    python = _kinds(body, lines, offset)
    if all(python) or not any(python):
        return None
    pieces: list[tuple[bool, list[ast.stmt]]] = []
    for s, p in zip(body, python):
        if pieces and not p and not pieces[-1][0]:
            pieces[-1][1].append(s)
        else:
            pieces.append((p, [s]))
    # a function made in one piece and used in another would cross as a Python value: from a
    # trace, the object of the first call (closing over traced tensors); into one, a new
    # object every call (a guard miss every call). Such a body is not split.
    for i, (_, stmts) in enumerate(pieces):
        made = _callables(stmts)
        if made and made & set(_reads([s for _, ss in pieces[:i] + pieces[i + 1 :] for s in ss])):
            return None
    key = next(_KEYS)
    defined = set(_params(fdef))
    new_body: list[ast.stmt] = []
    seg_defs: list[ast.FunctionDef] = []
    for i, (is_python, stmts) in enumerate(pieces):
        if is_python:
            new_body += stmts
            defined.update(_assigned(stmts))
            continue
        later = [s for _, ss in pieces[i + 1 :] for s in ss]
        final = not later and _has(stmts, ast.Return)
        ins = [n for n in _reads(stmts) if n in defined]
        outs = [] if final else [n for n in _assigned(stmts) if n in set(_reads(later))]
        defined.update(_assigned(stmts))
        if not final and not outs:
            continue  # binds nothing read later and does nothing else: nothing to run
        name = f"{fdef.name}_seg{len(seg_defs)}"
        seg_body = list(stmts) if final else [*stmts, ast.Return(_names(outs, ast.Load))]
        seg_defs.append(_def(name, ins, seg_body))
        call = ast.Call(
            ast.Subscript(
                ast.Subscript(ast.Name(SEGMENTS, ast.Load()), ast.Constant(key), ast.Load()),
                ast.Constant(len(seg_defs) - 1),
                ast.Load(),
            ),
            [ast.Name(n, ast.Load()) for n in ins],
            [],
        )
        new_body.append(ast.Return(call) if final else ast.Assign([_names(outs, ast.Store)], call))
        for node in (seg_body[-1], new_body[-1]):
            ast.copy_location(node, stmts[-1])
    if not seg_defs:
        return None
    py_lines = [ss[0].lineno + offset for p, ss in pieces if p]
    transformer = _Transformer(filename, offset, src_lines)
    seg_defs = [transformer.visit(d) for d in seg_defs]
    fdef.body = new_body
    fdef.decorator_list = []
    factory = _def("_oj_factory", list(code.co_freevars), [*seg_defs, fdef, ast.Return(ast.Constant(None))])
    mod = ast.Module([factory], [])
    ast.fix_missing_locations(mod)
    ast.increment_lineno(mod, offset)
    compiled = compile(mod, filename, "exec")
    fcode = next(c for c in compiled.co_consts if isinstance(c, types.CodeType))
    inner = {c.co_name: c for c in fcode.co_consts if isinstance(c, types.CodeType)}
    cells = dict(zip(code.co_freevars, func.__closure__ or ()))
    glb = func.__globals__
    glb.setdefault(JST, convert_ops)
    registry = glb.setdefault(SEGMENTS, weakref.WeakValueDictionary())

    def made(c: types.CodeType, defaults: Any = None) -> types.FunctionType:
        return types.FunctionType(c, glb, c.co_name, defaults, tuple(cells[n] for n in c.co_freevars))

    segments = _Pieces(make_static(made(inner[d.name]), d.name) for d in seg_defs)
    registry[key] = segments
    new = made(inner[fdef.name], func.__defaults__)
    new.__kwdefaults__ = func.__kwdefaults__
    new.__qualname__, new.__module__, new.__doc__ = func.__qualname__, func.__module__, func.__doc__
    new._oarlock_segments = segments  # type: ignore[attr-defined]  (keeps the weak entry alive)
    run: Callable[..., Any] = types.MethodType(new, fn.__self__) if isinstance(fn, types.MethodType) else new
    return Split(run, list(segments), py_lines)


def _names(names: list[str], ctx: Any) -> ast.Tuple:
    return ast.Tuple([ast.Name(n, ctx()) for n in names], ctx())
