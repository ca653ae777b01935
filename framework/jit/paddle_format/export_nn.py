"""``pd_op`` lowerings of Oarlock's network ops (for :mod:`.export`): matmul, conv2d, pad,
gather, attention, fill — one record per Oarlock op.

>>> from framework.jit.paddle_format import export, export_nn
>>> "op.conv2d" in export.EXPORT_TABLE and "op.attention" in export.EXPORT_TABLE
True
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...ir import Operation, SymDim, TensorType
from .export_emit import (
    Emitter,
    PdType,
    a_array,
    a_bool,
    a_dtype,
    a_f32,
    a_f64,
    a_i32,
    a_i64,
    a_place,
    a_str,
    export_lowering,
    finite,
    of,
    result_type,
)


def _matmul(em: Emitter, ins: list[int], tx: bool, ty: bool, out: PdType) -> int:
    return em.one("matmul", ins, {"transpose_x": a_bool(tx), "transpose_y": a_bool(ty)}, out)


@export_lowering("matmul")
def _mm(em: Emitter, op: Operation, ins: list[int]) -> int:
    return _matmul(em, ins, False, False, result_type(op))


@export_lowering("matmul_t")
def _mm_t(em: Emitter, op: Operation, ins: list[int]) -> int:
    tx, ty = bool(op.attrs.get("transpose_x")), bool(op.attrs.get("transpose_y"))
    return _matmul(em, ins, tx, ty, result_type(op))


@export_lowering("conv2d")
def _conv2d(em: Emitter, op: Operation, ins: list[int]) -> int:
    (t, b), (lf, r) = op.attrs["padding"]
    attrs = {
        "strides": a_array([a_i32(s) for s in op.attrs["stride"]]),
        "paddings": a_array([a_i32(p) for p in (t, b, lf, r)]),
        "padding_algorithm": a_str("EXPLICIT"),
        "dilations": a_array([a_i32(d) for d in op.attrs["dilation"]]),
        "groups": a_i32(op.attrs["groups"]),
        "data_format": a_str("NCHW"),
    }
    return em.one("conv2d", ins, attrs, result_type(op))


@export_lowering("conv2d_transpose")
def _conv2d_transpose(em: Emitter, op: Operation, ins: list[int]) -> int:
    """``pd_op.conv2d_transpose(x, w, output_size=[])``: the output size follows from the
    strides, paddings and output padding, as Paddle writes a ``Conv2DTranspose`` layer."""
    (t, b), (lf, r) = op.attrs["padding"]
    attrs = {
        "strides": a_array([a_i32(s) for s in op.attrs["stride"]]),
        "paddings": a_array([a_i32(p) for p in (t, b, lf, r)]),
        "output_padding": a_array([a_i32(p) for p in op.attrs.get("output_padding", (0, 0))]),
        "padding_algorithm": a_str("EXPLICIT"),
        "groups": a_i32(op.attrs["groups"]),
        "dilations": a_array([a_i32(d) for d in op.attrs["dilation"]]),
        "data_format": a_str("NCHW"),
    }
    return em.one("conv2d_transpose", [*ins, em.int_array([])], attrs, result_type(op))


@export_lowering("argsort")
def _argsort(em: Emitter, op: Operation, ins: list[int]) -> int:
    """``pd_op.argsort`` (values and indices; the indices are the result) along the last axis,
    stable as Oarlock's sort."""
    x = op.operands[0].type
    assert isinstance(x, TensorType)
    attrs = {
        "axis": a_i32(-1),
        "descending": a_bool(bool(op.attrs.get("descending"))),
        "stable": a_bool(True),
    }
    return em.emit("argsort", ins, attrs, [of(x), result_type(op)])[1]


@export_lowering("pad")
def _pad(em: Emitter, op: Operation, ins: list[int]) -> int:
    """Constant padding; an infinite value (max pooling's) is the dtype's extreme finite value."""
    dt = op.operands[0].type.dtype  # type: ignore[attr-defined]
    pads = [(int(b), int(a)) for b, a in op.attrs["pads"]]
    if len(pads) == 4 and pads[0] == pads[1] == (0, 0):
        # an NCHW tensor padded in H and W (pooling's padding): Paddle's pad3d over an added D
        # dim, as paddle.nn.functional.pad writes it (the Predictor's pd_op.pad kernel fails on
        # a dynamic batch)
        t = op.operands[0].type
        (h0, h1), (w0, w1) = pads[2], pads[3]
        shape5 = list(t.shape[:2]) + [1] + list(t.shape[2:])  # type: ignore[attr-defined]
        x5 = em.one("unsqueeze", [ins[0], em.int_array([2])], {}, PdType(dt, shape5))
        out = op.results[0].type.shape  # type: ignore[attr-defined]
        attrs = {
            "mode": a_str("constant"),
            "pad_value": a_f64(finite(op.attrs.get("value", 0.0), dt)),
            "data_format": a_str("NCDHW"),
        }
        y5 = em.one(
            "pad3d",
            [x5, em.int_array([w0, w1, h0, h1, 0, 0])],
            attrs,
            PdType(dt, list(out[:2]) + [1] + list(out[2:])),
        )
        return em.one("squeeze", [y5, em.int_array([2])], {}, result_type(op))
    flat = [x for p in pads for x in p]
    value = em.full([1], float(op.attrs.get("value", 0.0)), dt)
    return em.one("pad", [ins[0], value], {"paddings": a_array([a_i32(p) for p in flat])}, result_type(op))


@export_lowering("gather")
def _gather(em: Emitter, op: Operation, ins: list[int]) -> int:
    x, idx = op.operands[0].type, op.operands[1].type
    assert isinstance(x, TensorType) and isinstance(idx, TensorType)
    axis = int(op.attrs["axis"])
    if axis == 0 and x.rank == 2 and np.dtype(idx.dtype).kind == "i" and not op.attrs.get("wrap"):
        attrs = {"padding_idx": a_i64(-1), "sparse": a_bool(False)}
        return em.one("embedding", [ins[1], ins[0]], attrs, result_type(op))
    if idx.rank > 1:
        raise em.fail(f"gathers along axis {axis} of a rank-{x.rank} tensor with a rank-{idx.rank} index")
    return em.one("gather", [ins[0], ins[1], em.full([1], float(axis), "int32")], {}, result_type(op))


@export_lowering("attention")
def _attention(em: Emitter, op: Operation, ins: list[int]) -> int:
    """softmax(q k^T * scale [+ mask | where mask] [causal]) v, written out in pd_op ops."""
    q, k = op.operands[0].type, op.operands[1].type
    assert isinstance(q, TensorType) and isinstance(k, TensorType)
    dt = q.dtype
    score_shape = list(q.shape[:-1]) + [k.shape[-2]]
    st = PdType(dt, score_shape)
    scale = em.full([1], float(op.attrs["scale"]), dt)
    qs = em.one(
        "scale", [ins[0], scale], {"bias": a_f32(0.0), "bias_after_scale": a_bool(True)}, PdType(dt, q.shape)
    )
    s = _matmul(em, [qs, ins[1]], False, True, st)
    if len(ins) > 3:
        m = op.operands[3].type
        assert isinstance(m, TensorType)
        if np.dtype(m.dtype) == np.dtype(bool):
            mask = ins[3]
            if list(m.shape) != score_shape:  # Paddle's where takes operands of one shape
                target = em.one("shape64", [s], {}, PdType("int64", [len(score_shape)]))
                mask = em.one("expand", [mask, target], {}, PdType("bool", score_shape))
            s = _masked(em, mask, s, st)
        else:
            s = em.one("add", [s, ins[3]], {}, st)
    if op.attrs.get("causal"):
        lq, lk = q.shape[-2], k.shape[-2]
        diag = _difference(lk, lq)
        if diag is None:
            raise em.fail(
                f"is causal attention over {lq} queries and {lk} keys, whose difference is not a "
                f"number known when saving",
                "give the queries and keys lengths that differ by a fixed number in input_spec",
            )
        # Paddle's where takes operands of one shape: the mask at the scores' (run-time) shape
        ones = em.one(
            "full_like",
            [s, em.full([1], 1.0, "float32")],
            {"dtype": a_dtype("float32"), "place": a_place(0)},
            PdType("float32", score_shape),
        )
        tri = em.one("tril", [ones], {"diagonal": a_i32(diag)}, PdType("float32", score_shape))
        mask = em.one("cast", [tri], {"dtype": a_dtype("bool")}, PdType("bool", score_shape))
        s = _masked(em, mask, s, st)
    p = em.one("softmax", [s], {"axis": a_i32(-1)}, st)
    return _matmul(em, [p, ins[2]], False, False, result_type(op))


def _difference(a: Any, b: Any) -> int | None:
    """``a - b`` when it is a number (both static, or one symbol plus constants)."""
    if isinstance(a, int) and isinstance(b, int):
        return a - b
    if isinstance(a, SymDim) and isinstance(b, SymDim) and a.terms == b.terms:
        return a.const - b.const
    return None


def _masked(em: Emitter, mask: int, s: int, st: PdType) -> int:
    """``where(mask, s, lowest)``: the fill made at the scores' run-time shape (``full_like``)."""
    fill = em.full([1], -np.inf, st.dtype)
    low = em.one("full_like", [s, fill], {"dtype": a_dtype(st.dtype), "place": a_place(0)}, st)
    return em.one("where", [mask, s, low], {}, st)


@export_lowering("full")
def _full(em: Emitter, op: Operation, ins: list[int]) -> int:
    """A static shape: ``pd_op.full``; a dynamic one: ``pd_op.full_with_tensor`` with the shape
    computed at run time (as Paddle writes ``paddle.full([paddle.shape(x)[0], 4], v)``)."""
    t = op.results[0].type
    assert isinstance(t, TensorType)
    value = finite(op.attrs["value"], t.dtype)
    if t.is_static:
        return em.full(list(t.shape), value, t.dtype)
    v = em.full([1], value, t.dtype)
    shape = em.shape_tensor(list(t.shape))
    return em.one("full_with_tensor", [v, shape], {"dtype": a_dtype(t.dtype)}, result_type(op))


@export_lowering("arange")
def _arange(em: Emitter, op: Operation, ins: list[int]) -> int:
    """``pd_op.arange(start, end, step)`` with the scalars in the result's dtype (as Paddle
    casts them); a length that is a dynamic dim (``arange(t)`` traced with a ``None`` length)
    gives ``end = start + length * step`` computed from the input's run-time shape."""
    t = op.results[0].type
    assert isinstance(t, TensorType)
    dt, start, step, (n,) = t.dtype, op.attrs["start"], op.attrs["step"], t.shape
    scalar = PdType(dt, [])

    def as_dtype(d: Any) -> int:  # an int or a dynamic dim, as a scalar of the result's dtype
        if not isinstance(d, SymDim):
            return em.full([], float(d), dt)
        v = em.dim(d)
        return v if np.dtype(dt) == np.int64 else em.one("cast", [v], {"dtype": a_dtype(dt)}, scalar)

    s = as_dtype(start)
    length = as_dtype(n)
    span = em.scale(length, float(step), 0.0, scalar)
    end = em.one("add", [s, span], {}, scalar)
    return em.one(
        "arange",
        [s, end, em.full([], float(step), dt)],
        {"dtype": a_dtype(dt), "place": a_place(0)},
        result_type(op),
    )
