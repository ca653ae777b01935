"""``pd_op`` lowerings of Oarlock's elementwise, reduction and shape ops (for
:mod:`.export`): one record per Oarlock op.

>>> from framework.jit.paddle_format import export, export_math
>>> "op.add" in export.EXPORT_TABLE and "op.reshape" in export.EXPORT_TABLE
True
"""

from __future__ import annotations

from ...ir import Operation, TensorType
from .export_emit import (
    EXPORT_TABLE,
    SLICE_END,
    Emitter,
    PdType,
    a_array,
    a_bool,
    a_dtype,
    a_f32,
    a_i32,
    a_i64,
    export_lowering,
    result_type,
)

_BINARY = {
    "add": "add",
    "sub": "subtract",
    "mul": "multiply",
    "div": "divide",
    "pow": "elementwise_pow",
    "maximum": "maximum",
    "minimum": "minimum",
    "eq": "equal",
    "ne": "not_equal",
    "lt": "less_than",
    "gt": "greater_than",
    "le": "less_equal",
    "ge": "greater_equal",
    "logical_and": "logical_and",
    "logical_or": "logical_or",
    "logical_xor": "logical_xor",
}
_UNARY = {
    "relu": "relu",
    "exp": "exp",
    "log": "log",
    "sqrt": "sqrt",
    "rsqrt": "rsqrt",
    "tanh": "tanh",
    "abs": "abs",
    "erf": "erf",
    "sin": "sin",
    "cos": "cos",
    "floor": "floor",
    "ceil": "ceil",
    "sign": "sign",
    "logical_not": "logical_not",
    "copy": "assign",
}


def _same(pd_name: str):
    def lower(em: Emitter, op: Operation, ins: list[int]) -> int:
        return em.one(pd_name, ins, {}, result_type(op))

    return lower


for _o, _p in {**_BINARY, **_UNARY}.items():
    EXPORT_TABLE["op." + _o] = _same(_p)


@export_lowering("neg")
def _neg(em: Emitter, op: Operation, ins: list[int]) -> int:
    dt = op.operands[0].type.dtype  # type: ignore[attr-defined]
    minus = em.full([1], -1.0, dt if dt.kind == "f" else "float32")
    return em.one(
        "scale", [ins[0], minus], {"bias": a_f32(0.0), "bias_after_scale": a_bool(True)}, result_type(op)
    )


@export_lowering("cast")
def _cast(em: Emitter, op: Operation, ins: list[int]) -> int:
    return em.one("cast", ins, {"dtype": a_dtype(op.attrs["dtype"])}, result_type(op))


@export_lowering("permute")
def _permute(em: Emitter, op: Operation, ins: list[int]) -> int:
    perm = a_array([a_i32(p) for p in op.attrs["perm"]])
    return em.one("transpose", ins, {"perm": perm}, result_type(op))


def _in_shape(op: Operation, k: int = 0) -> tuple:
    t = op.operands[k].type
    assert isinstance(t, TensorType)
    return t.shape


@export_lowering("reshape")
def _reshape(em: Emitter, op: Operation, ins: list[int]) -> int:
    out = op.results[0].type.shape  # type: ignore[attr-defined]
    target = em.shape_arg(out, _in_shape(op))
    shape = em.int_array(target) if target is not None else em.shape_tensor(out)
    return em.one("reshape", [ins[0], shape], {}, result_type(op))


@export_lowering("expand")
def _expand(em: Emitter, op: Operation, ins: list[int]) -> int:
    src = _in_shape(op)
    target = list(op.attrs["shape"])
    lead = len(target) - len(src)
    spelled: list[int] | None = []
    for i, d in enumerate(target):
        if isinstance(d, int):
            spelled.append(d)
        elif i >= lead and src[i - lead] == d:
            spelled.append(-1)  # Paddle's expand: -1 keeps the input's dim
        else:  # a dynamic dim the input does not hold: the whole shape computed at run time
            spelled = None
            break
    shape = em.int_array(spelled) if spelled is not None else em.shape_tensor(target)
    return em.one("expand", [ins[0], shape], {}, result_type(op))


@export_lowering("concat")
def _concat(em: Emitter, op: Operation, ins: list[int]) -> int:
    axis = em.full([1], float(op.attrs["axis"]), "int32")
    return em.one("concat", [em.combine(ins), axis], {}, result_type(op))


@export_lowering("slice")
def _slice(em: Emitter, op: Operation, ins: list[int]) -> int:
    shape = _in_shape(op)
    axes, starts, ends, steps = [], [], [], []
    for ax, (b, e, s) in enumerate(zip(op.attrs["starts"], op.attrs["stops"], op.attrs["steps"])):
        dim = shape[ax]
        if b == 0 and e == dim and s == 1:
            continue
        if not isinstance(b, int):
            raise em.fail(f"starts axis {ax} at the dynamic {b}", "give static sizes in input_spec")
        if not isinstance(e, int):
            if e != dim:
                raise em.fail(f"stops axis {ax} at the dynamic {e}", "give static sizes in input_spec")
            e = SLICE_END
        axes.append(ax)
        starts.append(b)
        ends.append(e)
        steps.append(int(s))
    if not axes:
        return em.one("assign", ins, {}, result_type(op))
    if all(s == 1 for s in steps):
        attrs = {
            "axes": a_array([a_i64(a) for a in axes]),
            "infer_flags": a_array([a_i64(1) for _ in axes]),
            "decrease_axis": a_array([]),
        }
        return em.one("slice", [ins[0], em.int_array(starts), em.int_array(ends)], attrs, result_type(op))
    if any(s < 0 for s in steps):
        raise em.fail(f"slices with negative steps {steps}, which this exporter does not write")
    return em.one(
        "strided_slice",
        [ins[0], em.int_array(starts), em.int_array(ends), em.int_array(steps)],
        {"axes": a_array([a_i32(a) for a in axes])},
        result_type(op),
    )


def _reduce(pd_name: str, with_dtype: bool):
    def lower(em: Emitter, op: Operation, ins: list[int]) -> int:
        axes = [int(a) for a in op.attrs.get("axes", ())]
        if not axes:  # Oarlock: no axis reduced; Paddle's empty list means all
            return em.one("assign", ins, {}, result_type(op))
        attrs = {"dtype": a_dtype(None)} if with_dtype else {}
        attrs["keepdim"] = a_bool(bool(op.attrs.get("keepdim", False)))
        return em.one(pd_name, [ins[0], em.int_array(axes)], attrs, result_type(op))

    return lower


EXPORT_TABLE["op.sum"] = _reduce("sum", True)
EXPORT_TABLE["op.max"] = _reduce("max", False)
EXPORT_TABLE["op.min"] = _reduce("min", False)


@export_lowering("prod")
def _prod(em: Emitter, op: Operation, ins: list[int]) -> int:
    axes = [int(a) for a in op.attrs.get("axes", ())]
    if not axes:
        return em.one("assign", ins, {}, result_type(op))
    attrs = {"keepdim": a_bool(bool(op.attrs.get("keepdim", False))), "reduce_all": a_bool(False)}
    return em.one("prod", [ins[0], em.int_array(axes)], attrs, result_type(op))


def _rows(em: Emitter, op: Operation, ins: list[int], axis: int) -> tuple[int, int]:
    """The index and updates of a scatter with the index flattened to one dim (Paddle's
    scatter/index_add take a 1-D index): the updates' index dims merged likewise."""
    x, idx, upd = (op.operands[k].type for k in range(3))
    assert isinstance(x, TensorType) and isinstance(idx, TensorType) and isinstance(upd, TensorType)
    if idx.rank == 1:
        return ins[1], ins[2]
    if not all(isinstance(d, int) for d in idx.shape):
        raise em.fail(
            f"scatters with an index of dynamic shape {idx.shape}", "give static sizes in input_spec"
        )
    n = 1
    for d in idx.shape:
        n *= int(d)
    index = em.one("reshape", [ins[1], em.int_array([n])], {}, PdType(idx.dtype, [n]))
    target = [*x.shape[:axis], n, *x.shape[axis + 1 :]]
    spelled = em.shape_arg(target, upd.shape)
    shape = em.int_array(spelled) if spelled is not None else em.shape_tensor(target)
    return index, em.one("reshape", [ins[2], shape], {}, PdType(upd.dtype, target))


@export_lowering("scatter_add")
def _scatter_add(em: Emitter, op: Operation, ins: list[int]) -> int:
    """``pd_op.index_add(x, index, updates)`` along the axis: repeated indices accumulate."""
    axis = int(op.attrs["axis"])
    index, updates = _rows(em, op, ins, axis)
    return em.one("index_add", [ins[0], index, updates], {"axis": a_i32(axis)}, result_type(op))


@export_lowering("scatter")
def _scatter(em: Emitter, op: Operation, ins: list[int]) -> int:
    """``pd_op.scatter`` (rows of axis 0, the last update wins): what ``x[idx] = v`` is traced to."""
    if int(op.attrs["axis"]) != 0:
        raise em.fail(f"scatters along axis {op.attrs['axis']}; Paddle's scatter writes rows of axis 0 only")
    index, updates = _rows(em, op, ins, 0)
    return em.one("scatter", [ins[0], index, updates], {"overwrite": a_bool(True)}, result_type(op))


@export_lowering("argmax", "argmin")
def _argmax(em: Emitter, op: Operation, ins: list[int]) -> int:
    axis = em.full([1], float(op.attrs["axis"]), "int64")
    attrs = {
        "keepdims": a_bool(bool(op.attrs.get("keepdim", False))),
        "flatten": a_bool(False),
        "dtype": a_dtype(op.results[0].type.dtype),  # type: ignore[attr-defined]
    }
    return em.one(op.name.partition(".")[2], [ins[0], axis], attrs, result_type(op))


@export_lowering("where")
def _where(em: Emitter, op: Operation, ins: list[int]) -> int:
    """Paddle's ``where`` takes operands of the result's shape: the others are expanded first,
    to the runtime shape of an operand that has it (or to the static result shape)."""
    out = op.results[0].type.shape  # type: ignore[attr-defined]
    shapes = [_in_shape(op, k) for k in range(3)]
    full = [k for k, sh in enumerate(shapes) if tuple(sh) == tuple(out)]
    target = None
    args = list(ins)
    for k, sh in enumerate(shapes):
        if tuple(sh) == tuple(out):
            continue
        if target is None:
            if full:
                ref = op.operands[full[0]].type  # type: ignore[attr-defined]
                target = em.one("shape64", [ins[full[0]]], {}, PdType("int64", [ref.rank]))
            else:
                target = em.shape_tensor(list(out))
        t = op.operands[k].type  # type: ignore[attr-defined]
        args[k] = em.one("expand", [ins[k], target], {}, PdType(t.dtype, out))
    return em.one("where", args, {}, result_type(op))
