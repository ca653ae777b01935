"""The AST rewrite of dynamic-to-static: a function's ``if``/``while``/``for i in range(n)``
statements become calls of :mod:`framework.jit.convert_ops`, which run them as Python when
the condition is a Python value (or a concrete tensor) and record ``cf.cond``/``cf.while``
when it is a traced tensor (Paddle's dy2static does the same).

What is rewritten, in each function body (nested ``def`` bodies too):

- ``if c: A else: B`` → two local functions taking and returning the names either branch
  assigns, and ``names = convert_ifelse(c, true_fn, false_fn, ...)``;
- an ``if`` with a ``return`` inside: the statements after it move into the branch that does
  not return (so every path of the ``if`` returns) and it becomes
  ``return convert_ifelse(..., returns=True)``;
- ``while c: body`` → cond and body functions over the names the body assigns and
  ``names = convert_while(...)``; ``break`` becomes a flag the condition reads and
  ``continue`` skips the rest of the body (both by the same moving of statements);
- ``for i in range(...)`` → a counted ``while`` (``i`` is assigned from the counter);
- ``and``/``or``/``not`` and ``x if c else y`` in those conditions and in expressions →
  ``convert_logical_*`` / ``convert_ifexp``.

Left as Python (a traced condition there is a graph break, see :mod:`framework.jit.graph_break`):
loops with ``else:`` or a ``return`` inside, ``for`` over anything but ``range``, statements
with ``global``/``nonlocal``/``yield``, returns inside ``try``/``with``, generators, lambdas,
functions whose source is not available. The rewritten code keeps the file name and line
numbers of the original, so errors and graph breaks name the user's lines.
"""

from __future__ import annotations

import ast
import copy
import functools
import inspect
import textwrap
import types
from collections.abc import Callable
from typing import Any

from . import convert_ops

JST = "_oarlock_jst"  # the module the rewritten code calls, set in the function's globals
_PREFIX = "_oj_"
_CARRIED = (_PREFIX + "brk_", _PREFIX + "k_")  # generated names that are state (others are not)
_LOOPS = (ast.While, ast.For, ast.AsyncFor)
_MUTATORS = frozenset("append extend insert pop remove clear update setdefault popitem".split())
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


# -- what a piece of code does -------------------------------------------------------------------
def _walk_scope(node: ast.AST, loops: bool = True) -> Any:
    """The nodes under ``node`` in its own scope (not nested functions/classes, not nested loops
    when ``loops`` is False)."""
    todo = list(ast.iter_child_nodes(node))
    while todo:
        n = todo.pop()
        yield n
        if isinstance(n, _SCOPES) or (not loops and isinstance(n, _LOOPS)):
            continue
        todo.extend(ast.iter_child_nodes(n))


def _walk_stmts(stmts: list[ast.stmt], loops: bool = True) -> Any:
    for s in stmts:
        yield s
        if isinstance(s, _SCOPES) or (not loops and isinstance(s, _LOOPS)):
            continue
        yield from _walk_scope(s, loops)


def _has(stmts: list[ast.stmt], kinds: Any, loops: bool = True) -> bool:
    return any(isinstance(n, kinds) for n in _walk_stmts(stmts, loops))


def _opaque_return(stmts: list[ast.stmt]) -> bool:
    """A ``return`` the rewrite cannot move: inside a loop, ``try`` or ``with``."""
    for n in _walk_stmts(stmts):
        if isinstance(n, (*_LOOPS, ast.Try, ast.With, ast.AsyncWith)) and _has([n], ast.Return):
            return True
    return False


def _unconvertible(stmts: list[ast.stmt]) -> bool:
    return _has(stmts, (ast.Global, ast.Nonlocal, ast.Yield, ast.YieldFrom, ast.Await))


def _assigned(stmts: list[ast.stmt]) -> list[str]:
    """The names ``stmts`` bind in their scope, in order of first binding (generated helper
    names left out, loop state kept)."""
    out: dict[str, None] = {}

    def add(name: str) -> None:
        if not name.startswith(_PREFIX) or name.startswith(_CARRIED):
            out.setdefault(name, None)

    for n in _walk_stmts(stmts):
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            add(n.id)
        elif (  # a container changed in place (out[k] = v, out.append(v)): its new value is an output
            isinstance(n, ast.Subscript)
            and isinstance(n.ctx, (ast.Store, ast.Del))
            and isinstance(n.value, ast.Name)
        ) or (
            isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and n.func.attr in _MUTATORS
            and isinstance(n.func.value, ast.Name)
        ):
            add(n.value.id if isinstance(n, ast.Subscript) else n.func.value.id)  # type: ignore[union-attr]
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            add(n.name)
        elif isinstance(n, ast.alias):
            add((n.asname or n.name).split(".")[0])
    # names bound in a nested scope are not ours, but _walk_stmts yields the nested def itself
    return list(out)


def _always_transfers(stmts: list[ast.stmt]) -> bool:
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, (ast.Return, ast.Break, ast.Continue, ast.Raise)):
        return True
    return isinstance(last, ast.If) and _always_transfers(last.body) and _always_transfers(last.orelse)


def _move_rest(stmts: list[ast.stmt], kinds: Any, loops: bool) -> list[ast.stmt]:
    """Rewrite ``stmts`` so that an ``if`` holding a transfer (``kinds``: return, or
    break/continue of the enclosing loop) is the last statement of its list: what follows it
    moves into each of its branches that does not always transfer (recursively)."""
    out: list[ast.stmt] = []
    for i, s in enumerate(stmts):
        if isinstance(s, ast.If) and _has([s], kinds, loops):
            rest = stmts[i + 1 :]
            for attr in ("body", "orelse"):
                branch = getattr(s, attr)
                if rest and not _always_transfers(branch):
                    branch = branch + copy.deepcopy(rest)
                setattr(s, attr, _move_rest(branch, kinds, loops) or [ast.Pass()])
            out.append(s)
            return out
        out.append(s)
    return out


def _def(name: str, params: list[str], body: list[ast.stmt]) -> ast.FunctionDef:
    args = ast.arguments([], [ast.arg(p) for p in params], None, [], [], None, [])
    fdef = ast.FunctionDef(name, args, body or [ast.Pass()], [], None)
    if "type_params" in ast.FunctionDef._fields:  # Python 3.12+
        fdef.type_params = []
    return fdef


class _Transformer(ast.NodeTransformer):
    def __init__(self, filename: str, offset: int, lines: list[str]) -> None:
        self.n = 0
        self.filename, self.offset, self.lines = filename, offset, lines

    def _id(self) -> int:
        self.n += 1
        return self.n

    # -- helpers building code -------------------------------------------------------------
    @staticmethod
    def _jst(name: str, args: list[ast.expr], **kw: ast.expr) -> ast.Call:
        return ast.Call(
            ast.Attribute(ast.Name(JST, ast.Load()), name, ast.Load()),
            args,
            [ast.keyword(k, v) for k, v in kw.items()],
        )

    @staticmethod
    def _tuple(names: list[str], ctx: Any) -> ast.Tuple:
        return ast.Tuple([ast.Name(n, ctx()) for n in names], ctx())

    def _fn(self, name: str, params: list[str], body: list[ast.stmt]) -> ast.FunctionDef:
        return _def(name, params, body)

    def _load(self, names: list[str]) -> ast.Call:
        # the names' current values (a marker for a name not bound yet)
        return self._jst(
            "load", [ast.Call(ast.Name("locals", ast.Load()), [], []), ast.Constant(tuple(names))]
        )

    def _where(self, node: ast.AST) -> ast.Constant:
        # where the statement is, as errors and graph breaks name it
        ln = getattr(node, "lineno", 1)
        text = self.lines[ln - 1].strip() if 0 < ln <= len(self.lines) else "?"
        return ast.Constant(f"{self.filename}:{ln + self.offset} ({text})")

    # -- functions -------------------------------------------------------------------------
    def visit_FunctionDef(self, node: ast.FunctionDef) -> Any:
        if _unconvertible(node.body) or _has(node.body, (ast.Yield, ast.YieldFrom)):
            return node
        if _has(node.body, ast.Return) and not _opaque_return(node.body):
            body = list(node.body)
            if not _always_transfers(body):
                body.append(ast.Return(ast.Constant(None)))
            node.body = _move_rest(body, ast.Return, True)
        self.generic_visit(node)
        return node

    def visit_Lambda(self, node: ast.Lambda) -> Any:
        return node  # expressions inside a lambda stay as written

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> Any:
        return node

    # -- expressions -----------------------------------------------------------------------
    def visit_BoolOp(self, node: ast.BoolOp) -> Any:
        self.generic_visit(node)
        name = "convert_logical_and" if isinstance(node.op, ast.And) else "convert_logical_or"
        expr = node.values[-1]
        for v in reversed(node.values[:-1]):
            expr = self._jst(name, [self._thunk(v), self._thunk(expr)])
        return expr

    def visit_UnaryOp(self, node: ast.UnaryOp) -> Any:
        self.generic_visit(node)
        if isinstance(node.op, ast.Not):
            return self._jst("convert_logical_not", [node.operand])
        return node

    def visit_IfExp(self, node: ast.IfExp) -> Any:
        self.generic_visit(node)
        return self._jst(
            "convert_ifexp", [node.test, self._thunk(node.body), self._thunk(node.orelse), self._where(node)]
        )

    @staticmethod
    def _thunk(e: ast.expr) -> ast.Lambda:
        return ast.Lambda(ast.arguments([], [], None, [], [], None, []), e)

    # -- if ----------------------------------------------------------------------------------
    def visit_If(self, node: ast.If) -> Any:
        stmts = node.body + node.orelse
        returns = _has([node], ast.Return)
        if (
            _unconvertible(stmts)
            or _opaque_return(stmts)
            or _has(stmts, (ast.Break, ast.Continue), False)  # of a loop left as Python
            or (returns and not (_always_transfers(node.body) and _always_transfers(node.orelse)))
        ):
            self.generic_visit(node)  # stays Python (a return inside a loop left as Python...)
            return node
        self.generic_visit(node)
        k = self._id()
        names = _assigned(node.body + node.orelse)
        tname, fname = f"{_PREFIX}true_{k}", f"{_PREFIX}false_{k}"
        tail: list[ast.stmt] = [] if returns else [ast.Return(self._tuple(names, ast.Load))]
        tfn = self._fn(tname, names, node.body + tail)
        ffn = self._fn(fname, names, (node.orelse or []) + tail)
        call = self._jst(
            "convert_ifelse",
            [
                node.test,
                ast.Name(tname, ast.Load()),
                ast.Name(fname, ast.Load()),
                ast.Constant(tuple(names)),
                self._load(names),
                self._where(node),
            ],
            returns=ast.Constant(returns),
        )
        if returns:
            last: ast.stmt = ast.Return(call)
        elif names:
            last = ast.Assign([self._tuple(names, ast.Store)], call)
        else:
            last = ast.Expr(call)
        return [tfn, ffn, last]

    # -- loops -------------------------------------------------------------------------------
    def _loop_ok(self, node: ast.While | ast.For) -> bool:
        return not (node.orelse or _unconvertible(node.body) or _has(node.body, ast.Return))

    def _prepare_body(self, body: list[ast.stmt], k: int) -> tuple[list[ast.stmt], bool]:
        """The body with break/continue (of this loop) rewritten: returns it and whether it
        breaks (then ``_oj_brk_k`` says so)."""
        kinds = (ast.Break, ast.Continue)
        if _has(body, (ast.Try, ast.With, ast.AsyncWith), False) and _has(body, kinds, False):
            raise _Leave
        body = _move_rest(list(body), kinds, False)
        flag = f"{_PREFIX}brk_{k}"
        breaks = _has(body, ast.Break, False)

        class Swap(ast.NodeTransformer):
            def visit_Break(self, n: ast.Break) -> Any:
                return ast.copy_location(ast.Assign([ast.Name(flag, ast.Store())], ast.Constant(True)), n)

            def visit_Continue(self, n: ast.Continue) -> Any:
                return ast.copy_location(ast.Pass(), n)

            def visit_While(self, n: ast.AST) -> Any:
                return n  # an inner loop's break/continue are its own

            visit_For = visit_AsyncFor = visit_FunctionDef = visit_AsyncFunctionDef = visit_While
            visit_ClassDef = visit_Lambda = visit_While

        return [Swap().visit(s) for s in body], breaks

    def _emit_while(
        self, node: ast.AST, test: ast.expr, body: list[ast.stmt], k: int, breaks: bool, pre: list[ast.stmt]
    ) -> list[ast.stmt]:
        flag = f"{_PREFIX}brk_{k}"
        if breaks:
            test = self._jst(
                "convert_logical_and",
                [
                    self._thunk(self._jst("convert_logical_not", [ast.Name(flag, ast.Load())])),
                    self._thunk(test),
                ],
            )
            pre = [*pre, ast.Assign([ast.Name(flag, ast.Store())], ast.Constant(False))]
        names = _assigned(body)
        if breaks and flag not in names:
            names.append(flag)
        cname, bname = f"{_PREFIX}cond_{k}", f"{_PREFIX}body_{k}"
        cfn = self._fn(cname, names, [ast.Return(test)])
        bfn = self._fn(bname, names, [*body, ast.Return(self._tuple(names, ast.Load))])
        call = self._jst(
            "convert_while",
            [
                ast.Name(cname, ast.Load()),
                ast.Name(bname, ast.Load()),
                ast.Constant(tuple(names)),
                self._load(names),
                self._where(node),
            ],
        )
        last = ast.Assign([self._tuple(names, ast.Store)], call) if names else ast.Expr(call)
        return [*pre, cfn, bfn, last]

    def _open_loop(self, node: ast.While | ast.For) -> tuple[int, list[ast.stmt], bool] | None:
        """The loop's number, its body with break/continue rewritten and whether it breaks; None
        (the loop visited as Python) when it stays Python."""
        try:
            if not self._loop_ok(node):
                raise _Leave
            k = self._id()
            return (k, *self._prepare_body(node.body, k))
        except _Leave:
            self.generic_visit(node)
            return None

    def visit_While(self, node: ast.While) -> Any:
        opened = self._open_loop(node)
        if opened is None:
            return node
        k, node.body, breaks = opened
        self.generic_visit(node)
        return self._emit_while(node, node.test, node.body, k, breaks, [])

    def visit_For(self, node: ast.For) -> Any:
        it = node.iter
        if not (
            isinstance(node.target, ast.Name)
            and isinstance(it, ast.Call)
            and isinstance(it.func, ast.Name)
            and it.func.id == "range"
            and 1 <= len(it.args) <= 3
            and not it.keywords
            and not any(isinstance(a, ast.Starred) for a in it.args)
        ):
            self.generic_visit(node)
            return node
        opened = self._open_loop(node)
        if opened is None:
            return node
        k, body, breaks = opened
        rng, cnt = f"{_PREFIX}it_{k}", f"{_PREFIX}k_{k}"
        pre: list[ast.stmt] = [
            ast.Assign([ast.Name(rng, ast.Store())], self._jst("range_of", list(it.args))),
            ast.Assign([ast.Name(cnt, ast.Store())], ast.Constant(0)),
        ]
        head = ast.Assign(
            [ast.Name(node.target.id, ast.Store())],
            self._jst("range_item", [ast.Name(rng, ast.Load()), ast.Name(cnt, ast.Load())]),
        )
        step = ast.Assign(
            [ast.Name(cnt, ast.Store())],
            ast.BinOp(ast.Name(cnt, ast.Load()), ast.Add(), ast.Constant(1)),
        )
        node.body = [head, *body]
        self.generic_visit(node)
        test = self._jst("range_holds", [ast.Name(rng, ast.Load()), ast.Name(cnt, ast.Load())])
        return self._emit_while(node, test, [*node.body, step], k, breaks, pre)


class _Leave(Exception):
    """This loop stays Python."""


class _SuperArgs(ast.NodeTransformer):
    """``super()`` → ``super(__class__, self)``: the rewritten function is not made in a class
    body, so the implicit ``__class__`` cell is passed explicitly."""

    def __init__(self, first: str) -> None:
        self.first = first

    def visit_Call(self, node: ast.Call) -> Any:
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id == "super" and not node.args:
            node.args = [ast.Name("__class__", ast.Load()), ast.Name(self.first, ast.Load())]
        return node


_NEEDS = (ast.If, ast.While, ast.For, ast.IfExp, ast.BoolOp, ast.UnaryOp)


def function_source(fn: types.FunctionType) -> tuple[ast.FunctionDef, str, int, list[str]] | None:
    """The ``def`` of a plain function as parsed from its source, its file name, the offset of
    its lines in that file and its source lines; None for generators and coroutines and where
    the source is not available (a lambda's line, ``exec``, the REPL)."""
    code = fn.__code__
    if code.co_flags & (inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR):
        return None
    try:
        src = textwrap.dedent(inspect.getsource(fn))
        filename = inspect.getsourcefile(fn) or code.co_filename
        tree = ast.parse(src)
    except (OSError, TypeError, SyntaxError):
        return None
    if not tree.body or not isinstance(tree.body[0], ast.FunctionDef) or tree.body[0].name != fn.__name__:
        return None
    return tree.body[0], filename, code.co_firstlineno - 1, src.splitlines()


@functools.lru_cache(maxsize=512)
def _convert_code(fn: types.FunctionType) -> types.FunctionType | None:
    code = fn.__code__
    got = function_source(fn)
    if got is None:
        return None
    fdef, filename, _, lines = got
    if not any(isinstance(n, _NEEDS) for n in ast.walk(fdef)):
        return None
    fdef.decorator_list = []
    if "__class__" in code.co_freevars and fdef.args.args:
        _SuperArgs(fdef.args.args[0].arg).visit(fdef)
    _Transformer(filename, code.co_firstlineno - 1, lines).visit(fdef)
    free = list(code.co_freevars)
    factory = _def("_oj_factory", free, [fdef, ast.Return(ast.Name(fdef.name, ast.Load()))])
    mod = ast.Module([factory], [])
    ast.fix_missing_locations(mod)
    ast.increment_lineno(mod, code.co_firstlineno - 1)
    compiled = compile(mod, filename, "exec")
    fcode = next(c for c in compiled.co_consts if isinstance(c, types.CodeType))
    inner = next(c for c in fcode.co_consts if isinstance(c, types.CodeType) and c.co_name == fdef.name)
    cells = dict(zip(code.co_freevars, fn.__closure__ or ()))
    closure = tuple(cells[n] for n in inner.co_freevars)
    fn.__globals__.setdefault(JST, convert_ops)
    new = types.FunctionType(inner, fn.__globals__, fn.__name__, fn.__defaults__, closure)
    new.__kwdefaults__ = fn.__kwdefaults__
    new.__dict__.update(fn.__dict__)
    new.__qualname__ = fn.__qualname__
    new.__module__ = fn.__module__
    new.__doc__ = fn.__doc__
    return new


def convert(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` with its control flow rewritten (see the module's docstring); ``fn`` itself
    when there is nothing to rewrite or its source is not available. A bound method comes
    back bound to the same object."""
    if isinstance(fn, types.MethodType):
        inner = convert(fn.__func__)
        return fn if inner is fn.__func__ else types.MethodType(inner, fn.__self__)
    if not isinstance(fn, types.FunctionType) or fn.__name__ == "<lambda>":
        return fn
    try:
        new = _convert_code(fn)
    except (SyntaxError, ValueError, StopIteration, KeyError):
        return fn
    return fn if new is None else new
