"""A Paddle program and its weights as an Oarlock Layer whose forward is a traced program.

:class:`PaddleModel` holds the ``.pdiparams`` tensors as its parameters; its forward runs the
``pd_op`` program through the converter table (:class:`Interpreter`). Under ``to_static``
that run is traced, so the program becomes an op-dialect :class:`framework.ir.Program`
(dynamic dims symbolic, as ``fw.jit.save`` makes them), optimised and fused by the same passes
and run by the executor on the model's device.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator
from typing import Any

import numpy as np

from ..._src import autograd
from ..._src import device as _dev
from ..._src.ops import base
from ..._src.tensor import Tensor
from ...ir import TensorType
from ...ir import passes as _passes
from ...nn import Layer, Parameter
from ..api import StaticFunction
from . import lower_math, lower_nn  # noqa: F401 — fill the table
from .params import read_params
from .program import PaddleFormatError, PdOp, PdProgram, read_program
from .table import TABLE, Ctx, LoweringError

#: ops the loader itself handles (inputs, outputs, parameters, vectors)
_STRUCTURAL = frozenset(
    {
        "builtin.parameter",
        "builtin.combine",
        "builtin.split",
        "builtin.slice",
        "pd_op.data",
        "pd_op.fetch",
        "pd_op.if",
        "pd_op.while",
        "cf.yield",
        "builtin.shadow_output",
    }
)


def unsupported_ops(program: PdProgram) -> dict[str, list[str]]:
    """The ops of ``program`` with no Oarlock lowering, each with where it occurs.

    Example:
        >>> from framework.jit.paddle_format import unsupported_ops
        >>> from framework.jit.paddle_format.program import PdProgram, PdOp
        >>> p = PdProgram("m.json", 4, [PdOp("pd_op.frobnicate", [], [], {}, "block_0 op #0")], {}, [], [])
        >>> unsupported_ops(p)
        {'pd_op.frobnicate': ['block_0 op #0']}
    """
    out: dict[str, list[str]] = {}

    def walk(ops: list[PdOp]) -> None:
        for op in ops:
            if op.name not in TABLE and op.name not in _STRUCTURAL:
                out.setdefault(op.name, []).append(op.where)
            for r in op.regions:
                walk(r)

    walk(program.ops)
    return out


def check_supported(program: PdProgram) -> None:
    """Raise :class:`LoweringError` naming every op of ``program`` without a lowering."""
    missing = unsupported_ops(program)
    if not missing:
        return
    name, wheres = next(iter(missing.items()))
    rest = "; ".join(f"'{n}' ({len(w)}x)" for n, w in list(missing.items())[1:])
    raise LoweringError(
        f"[jit.load] Paddle program op '{name}' (at {wheres[0]}) has no Oarlock lowering"
        + (f"; also without one: {rest}" if rest else "")
        + f" — '{program.path}'. Each lowering is one record in framework/jit/paddle_format "
        f"(lower_math.py, lower_nn.py)"
    )


class _Missing:
    """A result Oarlock's lowering does not compute; reading it is an error."""

    def __init__(self, op: PdOp, k: int) -> None:
        self.op, self.k = op, k


@contextlib.contextmanager
def _untraced() -> Iterator[None]:
    """Run eagerly even inside a trace: ops over values known when the program is read."""
    token = base.TRACER.set(None)
    try:
        with autograd.no_grad():
            yield
    finally:
        base.TRACER.reset(token)


class Interpreter:
    """Runs a :class:`PdProgram` op by op through the converter table, on tensors."""

    def __init__(self, program: PdProgram, params: dict[str, Tensor]) -> None:
        self.program = program
        self.params = params

    def __call__(self, *inputs: Tensor) -> Any:
        prog = self.program
        if len(inputs) != len(prog.inputs):
            raise TypeError(
                f"[jit.load] the Paddle program '{prog.path}' takes {len(prog.inputs)} inputs "
                f"({[i.name for i in prog.inputs]}), got {len(inputs)}"
            )
        env: dict[int, Any] = {i.value: x for i, x in zip(prog.inputs, inputs)}
        for name, (vid, _) in prog.params.items():
            env[vid] = self.params[name]
        device = inputs[0].device if inputs else _dev.get_device()
        self._block(prog.ops, env, device)
        res = [self._read(env, v, None) for v in prog.outputs]
        res = [r if isinstance(r, Tensor) else Ctx(prog.ops[0], device).tensor(r) for r in res]
        return res[0] if len(res) == 1 else tuple(res)

    def _block(self, ops: list[PdOp], env: dict[int, Any], device: Any) -> list[Any]:
        """Run ``ops`` in ``env``; the values its ``cf.yield`` gives (a region's results)."""
        for op in ops:
            if op.name in ("builtin.parameter", "pd_op.data", "pd_op.fetch", "builtin.shadow_output"):
                continue
            ins = [None if v is None else self._read(env, v, op) for v in op.inputs]
            if op.name == "cf.yield":
                return ins
            if op.name == "pd_op.if":
                outs = self._if(op, ins, env, device)
            elif op.name == "pd_op.while":
                outs = self._while(op, ins, env, device)
            else:
                outs = self._run(op, ins, device)
            for (vid, _), val in zip(op.outputs, outs):
                env[vid] = val
        return []

    def _if(self, op: PdOp, ins: list[Any], env: dict[int, Any], device: Any) -> list[Any]:
        """``pd_op.if``: both regions traced into one ``cf.cond`` (``fw.static.nn.cond``);
        a predicate known when the program is read picks its region."""
        from ...static.nn import cond

        ctx = Ctx(op, device)
        if len(op.regions) != 2:
            raise ctx.fail(f"has {len(op.regions)} regions; expected a then and an else block")

        def branch(k: int) -> Any:
            def run() -> tuple[Tensor, ...]:
                vals = self._block(op.regions[k], dict(env), device)
                return tuple(ctx.tensor(v, "a result") for v in vals)

            return run

        if isinstance(ins[0], np.ndarray):
            return list(branch(0 if bool(ins[0].reshape(())) else 1)())
        return list(cond(ctx.tensor(ins[0]).reshape([]), branch(0), branch(1)))

    def _while(self, op: PdOp, ins: list[Any], env: dict[int, Any], device: Any) -> list[Any]:
        """``pd_op.while(cond, *vars)``: its body block takes the carried values as arguments
        and yields ``(cond, *vars)``; one ``cf.while`` (``fw.static.nn.while_loop``)."""
        from ...static.nn import while_loop

        ctx = Ctx(op, device)
        if len(op.regions) != 1 or len(op.region_args[0]) != len(ins) - 1:
            raise ctx.fail("has a body that does not carry its loop values as block arguments")

        def body(c: Tensor, *vals: Tensor) -> list[Tensor]:
            scope = dict(env)
            scope.update(zip(op.region_args[0], vals))
            out = self._block(op.regions[0], scope, device)
            return [ctx.tensor(v, "a loop value").reshape(list(t.shape)) for v, t in zip(out, (c, *vals))]

        start = [ctx.tensor(v, "a loop value") for v in ins]
        res = while_loop(lambda c, *vals: c.reshape([]), body, start)
        return list(res[1:])

    def _read(self, env: dict[int, Any], vid: int, op: PdOp | None) -> Any:
        val = env.get(vid)
        if isinstance(val, _Missing):
            who = f"'{op.name}' (at {op.where})" if op is not None else "the program's output"
            raise LoweringError(
                f"[jit.load] {who} reads result #{val.k} of '{val.op.name}' (at {val.op.where}), "
                f"which Oarlock's lowering does not compute (only inference results are)"
            )
        if val is None and vid not in env:
            raise LoweringError(
                f"[jit.load] '{self.program.path}': value %{vid} is read before it is defined"
            )
        return val

    def _run(self, op: PdOp, ins: list[Any], device: Any) -> list[Any]:
        n = len(op.outputs)
        if op.name == "builtin.combine":
            return [list(ins)]
        if op.name == "builtin.split":
            return list(ins[0])
        if op.name == "builtin.slice":
            return [ins[0][int(op.attrs["index"])]]
        ctx = Ctx(op, device)
        fn = TABLE.get(op.name)
        if fn is None:
            raise ctx.fail("has no Oarlock lowering")
        flat = [v for x in ins for v in (x if isinstance(x, list) else [x]) if v is not None]
        if flat and all(isinstance(v, np.ndarray) for v in flat):  # known when read: fold on the host
            with _untraced():
                cpu = Ctx(op, _dev.parse("cpu"))
                res = fn(cpu, ins, op.attrs)
            res = _to_host(res)
        else:
            res = fn(ctx, ins, op.attrs)
        if isinstance(res, list):  # a vector result (split)
            res = (res,)
        res = res if isinstance(res, tuple) else (res,)
        if len(res) < n:
            res = res + (None,) * (n - len(res))
        return [_Missing(op, k) if r is None else r for k, r in enumerate(res[:n])]


def _to_host(res: Any) -> Any:
    if isinstance(res, Tensor):
        return res.numpy()
    if isinstance(res, (tuple, list)):
        return type(res)(_to_host(r) for r in res)
    return res


_NAME = re.compile(r"[^A-Za-z0-9_]")


class PaddleModel(Layer):
    """A model saved by Paddle's ``paddle.jit.save``, loaded by :func:`load` (``fw.jit.load``).

    Call it with tensors on the device of its parameters; ``input_names`` and
    ``output_names`` are the names Paddle's predictor gives them; ``program`` is the
    op-dialect program it runs for the saved input shapes.

    Example (a one-op program, as Paddle writes it; see :func:`load`):
        >>> import framework as fw
        >>> from framework.jit.paddle_format import PaddleModel
        >>> issubclass(PaddleModel, fw.nn.Layer)
        True
    """

    def __init__(
        self, program: PdProgram, weights: dict[str, np.ndarray], device: _dev.Device, optimize: bool = True
    ) -> None:
        super().__init__()
        from ... import to_tensor

        self.paddle_program = program
        self.input_names = [i.name for i in program.inputs]
        fetch = {op.inputs[0]: op.attrs.get("name") for op in program.ops if op.name == "pd_op.fetch"}
        self.output_names = [str(fetch.get(v) or f"fetch_name_{k}") for k, v in enumerate(program.outputs)]
        #: what each input takes (``-1`` for a dim of any size)
        self.input_types = [TensorType(tuple(i.shape), i.dtype, str(device)) for i in program.inputs]
        params: dict[str, Tensor] = {}
        used: set[str] = set()
        for name, arr in weights.items():
            key = _NAME.sub("_", name)
            while key in used or not key or key[0].isdigit():
                key = "p_" + key
            used.add(key)
            p = Parameter.from_tensor(to_tensor(arr, dtype=arr.dtype, device=device), trainable=False)
            self.add_parameter(key, p)
            params[name] = p
        passes = _passes.DEFAULT_LEVEL if optimize else None
        self._static = StaticFunction(
            Interpreter(program, params), None, self, passes=passes, backend="CINN" if optimize else None
        )
        self.eval()
        self.program = self._trace(device)

    def _trace(self, device: _dev.Device) -> Any:
        """The op-dialect program for the saved input shapes (dynamic dims symbolic), traced
        now so that a model Oarlock cannot run fails at load, naming the op."""
        specs = [  # the leading dim is one batch symbol for every input
            (
                tuple(("batch" if j == 0 else f"s{k}_{j}") if d < 0 else d for j, d in enumerate(i.shape)),
                i.dtype,
            )
            for k, i in enumerate(self.paddle_program.inputs)
        ]
        from ..api import _Specialise

        with autograd.no_grad():
            try:
                return self._static.get_concrete_program(specs, device).program
            except _Specialise:  # dims that do not follow affinely: one program per size, at call
                return None

    def forward(self, *inputs: Tensor) -> Any:
        with autograd.no_grad():
            return self._static(*inputs)


def is_paddle_model(path: str) -> bool:
    """Whether ``path`` names a Paddle 3 model: ``<prefix>.json`` or a prefix with one."""
    return path.endswith(".json") and os.path.exists(path) or os.path.exists(path + ".json")


def load(
    path: str | os.PathLike[str],
    device: Any = None,
    params_file: str | os.PathLike[str] | None = None,
    optimize: bool = True,
) -> PaddleModel:
    """Load ``<prefix>.json`` and ``<prefix>.pdiparams`` written by Paddle 3's
    ``paddle.jit.save`` onto ``device`` (the current device by default). ``optimize=False``
    runs the traced program without Oarlock's passes and fusion (``Config.switch_ir_optim``).

    Example:
        >>> import framework as fw, json, os, tempfile
        >>> ty = {"#": "0.t_dtensor", "D": [{"#": "0.t_f32"}, [-1, 2], "NCHW", [], 0]}
        >>> def op(kind_name, ins, out, **attrs):
        ...     a = [{"N": k, "AT": {"#": kind, "D": v}} for k, (kind, v) in attrs.items()]
        ...     return {"#": kind_name, "A": a, "I": [{"%": i} for i in ins], "O": [{"%": out, "TT": ty}]}
        >>> ops = [op("1.data", [], 1, name=("0.a_str", "x")), op("1.relu", [1], 2),
        ...        op("1.fetch", [2], 3, col=("0.a_i32", 0))]
        >>> doc = {"base_code": {"magic": "pir", "version": 4},
        ...        "program": {"regions": [{"blocks": [{"ops": ops}]}]}}
        >>> folder = tempfile.TemporaryDirectory()
        >>> prefix = os.path.join(folder.name, "relu")
        >>> with open(prefix + ".json", "w") as f:
        ...     json.dump(doc, f)
        >>> model = fw.jit.load(prefix, device="cpu")
        >>> model.input_names, model.output_names
        (['x'], ['fetch_name_0'])
        >>> model(fw.to_tensor([[-1.0, 2.0]])).tolist()
        [[0.0, 2.0]]
        >>> folder.cleanup()
    """
    path = os.fspath(path)
    prefix = path[: -len(".json")] if path.endswith(".json") else path
    program = read_program(prefix + ".json")
    check_supported(program)
    pfile = os.fspath(params_file) if params_file is not None else prefix + ".pdiparams"
    weights = read_params(pfile, list(program.params))
    for name, (_, ty) in program.params.items():
        got = weights[name]
        if ty.dtype is not None and (tuple(got.shape) != ty.shape or got.dtype != ty.dtype):
            raise PaddleFormatError(
                f"[jit.load] '{pfile}' holds {got.dtype}{list(got.shape)} for parameter '{name}', "
                f"which the program declares {ty.dtype}{list(ty.shape)}: the weights belong to "
                f"another program"
            )
    dev = _dev.get_device() if device is None else _dev.parse(device)
    return PaddleModel(program, weights, dev, optimize)
