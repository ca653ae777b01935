"""``export``: an Oarlock Layer or ``to_static`` function as an ONNX file (Paddle's
``paddle.onnx.export``), written from the traced op-dialect program.

The Layer is traced as ``fw.jit.save`` traces it (``None`` dims become symbols), the portable
program (primitives and the composites a device fuses, before any fusion group) is translated
op by op through :data:`TRANSLATIONS` (one record per op), parameters and constants become
initializers. A symbolic dim is a named ``dim_param`` of the graph's inputs and outputs (a
dynamic axis); where an attribute holds one (``reshape``'s shape, ``slice``'s stops), its value
is computed in the graph from the input's ``Shape``. ``onnx.checker`` checks the file.

>>> import framework as fw, onnx, os, tempfile
>>> folder = tempfile.TemporaryDirectory()
>>> path = os.path.join(folder.name, "linear")
>>> fw.onnx.export(fw.nn.Linear(4, 2), path, input_spec=[fw.static.InputSpec([None, 4], "float32", "x")])
>>> model = onnx.load(path + ".onnx")
>>> [i.name for i in model.graph.input], model.graph.input[0].type.tensor_type.shape.dim[0].dim_param
(['x'], 'batch')
>>> folder.cleanup()
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from adapter_api import OarlockError

from .._src import autograd
from .._src import device as _dev
from .._src.tensor import Tensor
from ..ir import Operation, Program, SymDim, TensorType, Value
from ..ir.core import split_derived
from ..jit.api import StaticFunction
from ..nn import Layer
from ..static import InputSpec


class ExportError(OarlockError):
    """The program holds something ONNX export cannot write (the message names the op)."""


class _Graph:
    """The ONNX graph being built: nodes, initializers, value names, symbol values."""

    def __init__(self, program: Program, opset: int) -> None:
        import onnx

        self.onnx = onnx
        self.opset = opset
        self.nodes: list[Any] = []
        self.inits: list[Any] = []
        self.names: dict[Value, str] = {}
        self.sym_src: dict[str, tuple[str, int]] = {}
        self.sym_vals: dict[str, str] = {}
        self.count = 0
        self.program = program
        #: the top graph's node list: a symbol's ``Shape`` read inside a subgraph goes there,
        #: so every later use (inside or outside) sees it
        self.root = self.nodes

    def fresh(self, hint: str) -> str:
        self.count += 1
        return f"{hint}_{self.count}"

    def node(self, kind: str, ins: Sequence[str], n_out: int = 1, **attrs: Any) -> list[str]:
        outs = [self.fresh(kind.lower()) for _ in range(n_out)]
        self.nodes.append(self.onnx.helper.make_node(kind, list(ins), outs, **attrs))
        return outs

    def const(self, arr: Any, hint: str = "const") -> str:
        name = self.fresh(hint)
        self.inits.append(self.onnx.numpy_helper.from_array(np.asarray(arr), name))
        return name

    def sym(self, s: str) -> str:
        """An int64 [1] tensor holding symbol ``s``'s value, from the input's shape."""
        got = self.sym_vals.get(s)
        parts = split_derived(s) if got is None and s not in self.sym_src else None
        if parts is not None:  # b__div2: b // 2 (sizes are >= 0: Div truncates as floor does)
            base, how, k = parts
            inner, self.nodes = self.nodes, self.root
            (got,) = self.node(
                "Div" if how == "div" else "Mod", [self.sym(base), self.const(np.array([k], np.int64))]
            )
            self.nodes = inner
            self.sym_vals[s] = got
        if got is None:
            if s not in self.sym_src:
                raise ExportError(
                    f"[onnx.export] symbol {s!r} is not a dim of any input; export static sizes"
                )
            inp, axis = self.sym_src[s]
            inner, self.nodes = self.nodes, self.root
            (shape,) = self.node("Shape", [inp])
            (got,) = self.node("Gather", [shape, self.const(np.array([axis], np.int64))], axis=0)
            self.nodes = inner
            self.sym_vals[s] = got
        return got

    def dims(self, dims: Sequence[Any]) -> str:
        """A 1-D int64 tensor of ``dims`` (ints and symbolic dims)."""
        if not any(isinstance(d, SymDim) for d in dims):
            return self.const(np.array([int(d) for d in dims], np.int64))
        parts = []
        for d in dims:
            if isinstance(d, SymDim):
                acc = None
                for n, c in d.terms:
                    t = self.sym(n.split("*")[0])
                    for f in n.split("*")[1:]:  # a monomial b*t: the product of the dims
                        (t,) = self.node("Mul", [t, self.sym(f)])
                    if c != 1:
                        (t,) = self.node("Mul", [t, self.const(np.array([c], np.int64))])
                    acc = t if acc is None else self.node("Add", [acc, t])[0]
                if d.const:
                    (acc,) = self.node("Add", [acc, self.const(np.array([d.const], np.int64))])
                parts.append(acc)
            else:
                parts.append(self.const(np.array([int(d)], np.int64)))
        return self.node("Concat", parts, axis=0)[0]


Translation = Callable[[_Graph, Operation, list[str]], list[str]]
#: op name (``op.matmul``) → its translation into ONNX nodes
TRANSLATIONS: dict[str, Translation] = {}

_BINARY = {
    "add": "Add",
    "sub": "Sub",
    "mul": "Mul",
    "div": "Div",
    "pow": "Pow",
    "maximum": "Max",
    "minimum": "Min",
    "eq": "Equal",
    "lt": "Less",
    "gt": "Greater",
    "le": "LessOrEqual",
    "ge": "GreaterOrEqual",
    "logical_and": "And",
    "logical_or": "Or",
    "logical_xor": "Xor",
    "matmul": "MatMul",
    "where": "Where",
}
_UNARY = {
    "neg": "Neg",
    "exp": "Exp",
    "log": "Log",
    "sqrt": "Sqrt",
    "tanh": "Tanh",
    "abs": "Abs",
    "erf": "Erf",
    "sin": "Sin",
    "cos": "Cos",
    "floor": "Floor",
    "ceil": "Ceil",
    "sign": "Sign",
    "logical_not": "Not",
    "copy": "Identity",
}


def _simple(kind: str) -> Translation:
    return lambda g, op, ins: g.node(kind, ins)


for _n, _k in {**_BINARY, **_UNARY}.items():
    TRANSLATIONS["op." + _n] = _simple(_k)


def _translation(*names: str) -> Callable[[Translation], Translation]:
    def add(fn: Translation) -> Translation:
        for n in names:
            TRANSLATIONS["op." + n] = fn
        return fn

    return add


@_translation("ne")
def _ne(g: _Graph, op: Operation, ins: list[str]) -> list[str]:
    return g.node("Not", g.node("Equal", ins))


@_translation("rsqrt")
def _rsqrt(g: _Graph, op: Operation, ins: list[str]) -> list[str]:
    return g.node("Reciprocal", g.node("Sqrt", ins))


@_translation("matmul_t")
def _matmul_t(g: _Graph, op: Operation, ins: list[str]) -> list[str]:
    ins = list(ins)
    for k, key in enumerate(("transpose_x", "transpose_y")):
        if op.attrs.get(key):
            r = op.operands[k].type.rank
            ins[k] = g.node("Transpose", [ins[k]], perm=list(range(r - 2)) + [r - 1, r - 2])[0]
    return g.node("MatMul", ins)


@_translation("cast")
def _cast(g: _Graph, op: Operation, ins: list[str]) -> list[str]:
    return g.node("Cast", ins, to=g.onnx.helper.np_dtype_to_tensor_dtype(np.dtype(op.attrs["dtype"])))


@_translation("permute")
def _permute(g: _Graph, op: Operation, ins: list[str]) -> list[str]:
    return g.node("Transpose", ins, perm=[int(p) for p in op.attrs["perm"]])


@_translation("reshape")
def _reshape(g: _Graph, op: Operation, ins: list[str]) -> list[str]:
    return g.node("Reshape", [ins[0], g.dims(op.results[0].type.shape)])


@_translation("expand")
def _expand(g: _Graph, op: Operation, ins: list[str]) -> list[str]:
    return g.node("Expand", [ins[0], g.dims(op.attrs["shape"])])


@_translation("concat")
def _concat(g: _Graph, op: Operation, ins: list[str]) -> list[str]:
    return g.node("Concat", ins, axis=int(op.attrs["axis"]))


@_translation("slice")
def _slice(g: _Graph, op: Operation, ins: list[str]) -> list[str]:
    starts, stops, steps = (tuple(op.attrs[k]) for k in ("starts", "stops", "steps"))
    axes = g.const(np.arange(len(starts), dtype=np.int64))
    return g.node("Slice", [ins[0], g.dims(starts), g.dims(stops), axes, g.dims(steps)])


@_translation("pad")
def _pad(g: _Graph, op: Operation, ins: list[str]) -> list[str]:
    pads = [int(p[0]) for p in op.attrs["pads"]] + [int(p[1]) for p in op.attrs["pads"]]
    value = g.const(np.array(op.attrs.get("value", 0.0), op.operands[0].type.dtype))
    return g.node("Pad", [ins[0], g.const(np.array(pads, np.int64)), value], mode="constant")


@_translation("conv2d")
def _conv2d(g: _Graph, op: Operation, ins: list[str]) -> list[str]:
    """The cpu plugin's conv2d kernel keeps the op whole in a program (no im2col to export)."""
    (t, b), (lf, r) = op.attrs["padding"]
    w = op.operands[1].type.shape
    return g.node(
        "Conv",
        ins,
        kernel_shape=[int(w[2]), int(w[3])],
        strides=[int(s) for s in op.attrs["stride"]],
        dilations=[int(d) for d in op.attrs["dilation"]],
        pads=[int(t), int(lf), int(b), int(r)],
        group=int(op.attrs["groups"]),
    )


@_translation("relu")
def _relu(g: _Graph, op: Operation, ins: list[str]) -> list[str]:
    """relu stays whole in a program where the device has its kernel (the cpu plugin's)."""
    return g.node("Relu", ins)


def _reduce(kind: str, axes_input_since: int) -> Translation:
    def tr(g: _Graph, op: Operation, ins: list[str]) -> list[str]:
        axes = [int(a) for a in op.attrs.get("axes", ())]
        keep = int(bool(op.attrs.get("keepdim", False)))
        if not axes:
            return g.node("Identity", ins)
        if g.opset >= axes_input_since:
            return g.node(kind, [ins[0], g.const(np.array(axes, np.int64))], keepdims=keep)
        return g.node(kind, ins, axes=axes, keepdims=keep)

    return tr


TRANSLATIONS["op.sum"] = _reduce("ReduceSum", 13)
for _n, _k in {"max": "ReduceMax", "min": "ReduceMin", "prod": "ReduceProd"}.items():
    TRANSLATIONS["op." + _n] = _reduce(_k, 18)


@_translation("argmax", "argmin")
def _argmax(g: _Graph, op: Operation, ins: list[str]) -> list[str]:
    kind = "ArgMax" if op.name.endswith("argmax") else "ArgMin"
    return g.node(kind, ins, axis=int(op.attrs["axis"]), keepdims=int(bool(op.attrs.get("keepdim", False))))


@_translation("gather")
def _gather(g: _Graph, op: Operation, ins: list[str]) -> list[str]:
    return g.node("Gather", ins, axis=int(op.attrs["axis"]))


@_translation("attention")
def _attention(g: _Graph, op: Operation, ins: list[str]) -> list[str]:
    """softmax(q k^T * scale [+ mask] [causal]) v, written out (ONNX's Attention op is opset 23)."""
    q, k, v = op.operands[:3]
    dt = q.type.dtype
    kt = g.node("Transpose", [ins[1]], perm=list(range(k.type.rank - 2)) + [k.type.rank - 1, k.type.rank - 2])
    qs = g.node("Mul", [ins[0], g.const(np.array(op.attrs["scale"], dt))])
    (s,) = g.node("MatMul", qs + kt)
    ninf = g.const(np.array(-np.inf, dt)) if len(ins) > 3 or op.attrs.get("causal") else ""
    if len(ins) > 3:
        if op.operands[3].type.dtype == np.dtype(bool):
            (s,) = g.node("Where", [ins[3], s, ninf])
        else:
            (s,) = g.node("Add", [s, ins[3]])
    if op.attrs.get("causal"):
        lq, lk = q.type.shape[-2], k.type.shape[-2]
        if lq == lk:
            diag = 0
        elif isinstance(lq, int) and isinstance(lk, int):
            diag = lk - lq
        else:
            raise ExportError(
                f"[onnx.export] op 'attention' with causal=True takes {lq} queries and {lk} keys; export it with "
                f"static lengths or equal ones"
            )
        ones = g.onnx.numpy_helper.from_array(np.array([1], np.int64), g.fresh("one"))
        (full,) = g.node("ConstantOfShape", [g.dims([lq, lk])], value=ones)
        (tri,) = g.node("Trilu", [full, g.const(np.array(diag, np.int64))], upper=0)
        (mask,) = g.node("Cast", [tri], to=g.onnx.TensorProto.BOOL)
        (s,) = g.node("Where", [mask, s, ninf])
    (p,) = g.node("Softmax", [s], axis=-1)
    return g.node("MatMul", [p, ins[2]])


@_translation("full")
def _full(g: _Graph, op: Operation, ins: list[str]) -> list[str]:
    ty = op.results[0].type
    value = np.array([op.attrs["value"]], ty.dtype)
    tensor = g.onnx.numpy_helper.from_array(value, g.fresh("fill"))
    return g.node("ConstantOfShape", [g.dims(op.attrs["shape"])], value=tensor)


def _translate_block(
    g: _Graph, ops: Sequence[Operation], params: dict[str, Tensor], consts: dict[str, Tensor]
) -> list[str]:
    """Translate ``ops`` (a program's block or a region's) into ``g.nodes``; the names of what
    its terminator (``builtin.return`` or ``cf.yield``) returns."""
    outs: list[str] = []
    for op in ops:
        if op.name in ("builtin.return", "cf.yield"):
            outs = [g.names[v] for v in op.operands]
            continue
        if op.name == "builtin.parameter":
            g.names[op.result] = g.const(params[op.attrs["name"]].numpy(), "param")
            continue
        if op.name == "builtin.constant":
            ty = op.result.type
            if "name" in op.attrs:
                arr = consts[op.attrs["name"]].numpy()
            else:
                arr = np.full(ty.concrete({}), op.attrs["value"], ty.dtype)
            g.names[op.result] = g.const(arr, "constant")
            continue
        if op.name in ("cf.cond", "cf.while"):
            names = (_cond if op.name == "cf.cond" else _while)(g, op, params, consts)
        else:
            fn = TRANSLATIONS.get(op.name)
            if fn is None or op.regions:
                raise ExportError(
                    f"[onnx.export] op '{op.name}' has no ONNX translation (framework/onnx/export.py "
                    f"TRANSLATIONS); known: {len(TRANSLATIONS)} ops"
                )
            names = fn(g, op, [g.names[v] for v in op.operands])
        for r, n in zip(op.results, names):
            g.names[r] = n
    return outs


def _translate(
    g: _Graph, program: Program, params: dict[str, Tensor], consts: dict[str, Tensor]
) -> list[str]:
    return _translate_block(g, program.block.ops, params, consts)


def _subgraph(
    g: _Graph,
    name: str,
    inputs: Sequence[tuple[str, TensorType]],
    build: Callable[[], list[tuple[str, TensorType]]],
) -> Any:
    """An ONNX subgraph whose nodes ``build()`` translates; it reads the outer graph's names.
    Every output is an ``Identity`` made inside (a subgraph's outputs are its own values)."""
    outer, g.nodes = g.nodes, []
    try:
        outs = build()
        vis = []
        for src, ty in outs:
            (dst,) = g.node("Identity", [src])
            vis.append(_value_info(g, dst, ty))
        nodes = g.nodes
    finally:
        g.nodes = outer
    return g.onnx.helper.make_graph(nodes, name, [_value_info(g, n, t) for n, t in inputs], vis)


def _scalar_bool(g: _Graph, name: str, ty: TensorType) -> str:
    """A bool value of one element as the rank-0 tensor ``If``'s and ``Loop``'s conditions take."""
    return name if ty.rank == 0 else g.node("Reshape", [name, g.const(np.array([], np.int64))])[0]


def _cond(g: _Graph, op: Operation, params: dict[str, Tensor], consts: dict[str, Tensor]) -> list[str]:
    """``cf.cond`` as ONNX ``If``: each region a subgraph reading the outer scope."""
    pred = _scalar_bool(g, g.names[op.operands[0]], op.operands[0].type)
    types = [r.type for r in op.results]

    def branch(k: int) -> Callable[[], list[tuple[str, TensorType]]]:
        blk = op.regions[k].blocks[0]
        return lambda: list(zip(_translate_block(g, blk.ops, params, consts), types))

    then_g = _subgraph(g, g.fresh("then"), [], branch(0))
    else_g = _subgraph(g, g.fresh("else"), [], branch(1))
    return g.node("If", [pred], len(op.results), then_branch=then_g, else_branch=else_g)


def _while(g: _Graph, op: Operation, params: dict[str, Tensor], consts: dict[str, Tensor]) -> list[str]:
    """``cf.while`` as ONNX ``Loop`` with no trip count: the cond region is translated once on
    the initial values (Loop's first condition) and again at the end of the body (the next)."""
    cond_blk, body_blk = (r.blocks[0] for r in op.regions)
    types = [v.type for v in op.operands]

    def cond_on(names: list[str]) -> str:
        for a, n in zip(cond_blk.args, names):
            g.names[a] = n
        (c,) = _translate_block(g, cond_blk.ops, params, consts)
        return _scalar_bool(g, c, cond_blk.ops[-1].operands[0].type)

    first = cond_on([g.names[v] for v in op.operands])
    carried = [g.fresh("carried") for _ in types]
    it, c_in = g.fresh("iteration"), g.fresh("cond_in")

    def body() -> list[tuple[str, TensorType]]:
        for a, n in zip(body_blk.args, carried):
            g.names[a] = n
        new = _translate_block(g, body_blk.ops, params, consts)
        return [(cond_on(new), scalar(bool)), *zip(new, types)]

    def scalar(dt: Any) -> TensorType:
        return TensorType((), np.dtype(dt), types[0].device)

    inputs = [(it, scalar(np.int64)), (c_in, scalar(bool))]
    body_g = _subgraph(g, g.fresh("body"), inputs + list(zip(carried, types)), body)
    return g.node("Loop", ["", first, *[g.names[v] for v in op.operands]], len(types), body=body_g)


def _value_info(g: _Graph, name: str, ty: TensorType) -> Any:
    shape = [str(d) if isinstance(d, SymDim) else int(d) for d in ty.shape]
    return g.onnx.helper.make_tensor_value_info(name, g.onnx.helper.np_dtype_to_tensor_dtype(ty.dtype), shape)


def export(
    layer: Any,
    path: str | os.PathLike[str],
    input_spec: Sequence[InputSpec] | None = None,
    opset_version: int = 17,
    **configs: Any,
) -> None:
    """Write ``layer`` (a Layer or a ``to_static`` function) to ``path.onnx`` (Paddle's
    ``paddle.onnx.export``): traced for ``input_spec``, a ``None`` dim becomes a dynamic axis
    (the leading one is named ``batch`` for every input), checked by ``onnx.checker``.

    Example:
        >>> import framework as fw, onnxruntime as ort, numpy as np, os, tempfile
        >>> folder = tempfile.TemporaryDirectory()
        >>> net = fw.nn.Sequential(fw.nn.Linear(4, 8), fw.nn.ReLU(), fw.nn.Linear(8, 2))
        >>> path = os.path.join(folder.name, "mlp")
        >>> fw.onnx.export(net, path, input_spec=[fw.static.InputSpec([None, 4], "float32", "x")])
        >>> x = np.ones((3, 4), "float32")
        >>> (y,) = ort.InferenceSession(path + ".onnx").run(None, {"x": x})
        >>> bool(np.allclose(y, net(fw.to_tensor(x)).numpy(), atol=1e-5))
        True
        >>> folder.cleanup()
    """
    if configs:
        raise TypeError(
            f"[onnx.export] unexpected arguments {sorted(configs)}; expected input_spec=, opset_version="
        )
    if not 13 <= int(opset_version) <= 21:
        raise ValueError(f"[onnx.export] opset_version takes 13 to 21, got {opset_version}")
    import onnx

    path = os.fspath(path)
    file = path if path.endswith(".onnx") else path + ".onnx"
    if isinstance(layer, Layer):
        fwd = layer.forward
        sf = fwd if isinstance(fwd, StaticFunction) else StaticFunction(fwd, input_spec, layer, passes=None)
        params = layer.parameters()
    elif isinstance(layer, StaticFunction):
        sf, params = layer, []
    else:
        raise TypeError(f"[onnx.export] expected a Layer or a to_static function, got {type(layer).__name__}")
    spec = list(input_spec if input_spec is not None else sf.input_spec or [])
    if not spec:
        raise ValueError("[onnx.export] give input_spec=[fw.static.InputSpec(shape, dtype, name), ...]")
    dims = [
        tuple(
            ("batch" if j == 0 else f"s{k}_{j}") if d is None or d == -1 else d for j, d in enumerate(s.shape)
        )
        for k, s in enumerate(spec)
    ]
    dev = params[0].device if params else _dev.get_device()
    with autograd.no_grad():
        cp = sf.get_concrete_program([(d, s.dtype) for d, s in zip(dims, spec)], dev)
    names = [s.name if s.name else f"x{k}" for k, s in enumerate(spec)]
    g = _Graph(cp.program, int(opset_version))
    inputs = []
    for name, v, d in zip(names, cp.program.inputs, dims):
        g.names[v] = name
        for j, dim in enumerate(d):
            if isinstance(dim, str):
                g.sym_src.setdefault(dim, (name, j))
        inputs.append(_value_info(g, name, v.type))
    outs = _translate(g, cp.program, dict(cp.params), dict(cp.constants))
    out_names = [f"output_{k}" for k in range(len(outs))]
    for src, dst in zip(outs, out_names):
        g.nodes.append(onnx.helper.make_node("Identity", [src], [dst]))
    outputs = [_value_info(g, n, v.type) for n, v in zip(out_names, cp.program.outputs)]
    graph = onnx.helper.make_graph(g.nodes, "oarlock", inputs, outputs, g.inits)
    model = onnx.helper.make_model(
        graph, opset_imports=[onnx.helper.make_opsetid("", int(opset_version))], producer_name="oarlock"
    )
    model.ir_version = min(model.ir_version, 10)
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, file)
