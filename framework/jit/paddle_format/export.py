"""Oarlock programs written as Paddle 3's inference files (``fw.jit.save(..., format="paddle")``).

The traced program (op dialect) is lowered op by op to the ``pd_op`` dialect through a table
(one record per Oarlock op, :mod:`.export_math` and :mod:`.export_nn`), then serialised in the
layout :mod:`.program` reads: ``prefix.json`` (PIR as JSON, format version 4) and
``prefix.pdiparams`` (the persistable values sorted by name, each as the dense-tensor record
:mod:`.params` reads). Real Paddle 3 loads both with ``paddle.jit.load`` and with
``paddle.inference`` (``Config(prefix + ".json", prefix + ".pdiparams")``); Oarlock's own
``fw.jit.load(prefix)`` reads them back.

A ``None`` dim of an InputSpec is ``-1`` in the file; a reshape keeps it as ``0`` (the input's
dim at the same place) or ``-1`` (one inferred dim). An op with no lowering here (control flow:
``cf.cond``/``cf.while``; ops outside the table) raises :class:`PaddleExportError` naming the
op, where it sits and the layer.

>>> import framework as fw, os, tempfile
>>> d = tempfile.TemporaryDirectory(); prefix = os.path.join(d.name, "mlp")
>>> fw.jit.save(fw.nn.Linear(4, 2), prefix, [fw.static.InputSpec([None, 4], "float32", "x")],
...             format="paddle")
>>> sorted(os.listdir(d.name))
['mlp.json', 'mlp.pdiparams']
>>> fw.jit.load(prefix)(fw.ones([3, 4])).shape
(3, 2)
>>> d.cleanup()
"""

from __future__ import annotations

import json
import os
import struct
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ...ir import Operation, Program, TensorType, Value
from .params import _BF16, VAR_TYPES
from .program import _DTYPES, PaddleFormatError

#: the program format version written (Paddle 3.0 to 3.3 read it)
VERSION = 4
_TAGS = {name: tag for tag, name in _DTYPES.items()}
_CODES = {dt: code for code, dt in VAR_TYPES.items()}
#: Paddle's ``INT_MAX`` end of a slice: "to the end of the axis"
SLICE_END = 2147483647


class PaddleExportError(PaddleFormatError):
    """An Oarlock program holds an op (or a form of one) that has no ``pd_op`` lowering; the
    message names the op, where it sits and the layer saved."""


# -- attributes ------------------------------------------------------------------------------
def a_bool(v: bool) -> dict[str, Any]:
    return {"#": "0.a_bool", "D": bool(v)}


def a_i32(v: int) -> dict[str, Any]:
    return {"#": "0.a_i32", "D": int(v)}


def a_i64(v: int) -> dict[str, Any]:
    return {"#": "0.a_i64", "D": int(v)}


def a_f32(v: float) -> dict[str, Any]:
    return {"#": "0.a_f32", "D": float(v)}


def a_f64(v: float) -> dict[str, Any]:
    return {"#": "0.a_f64", "D": float(v)}


def a_str(v: str) -> dict[str, Any]:
    return {"#": "0.a_str", "D": str(v)}


def a_array(items: Sequence[dict[str, Any]]) -> dict[str, Any]:
    return {"#": "0.a_array", "D": list(items)}


def a_intarray(v: Sequence[int]) -> dict[str, Any]:
    return {"#": "1.a_intarray", "D": [int(x) for x in v]}


def a_dtype(dt: Any) -> dict[str, Any]:
    return {"#": "1.a_dtype", "D": "Undefined(ALL_DTYPE)" if dt is None else dtype_name(dt)}


def a_place(kind: int = 0) -> dict[str, Any]:
    return {"#": "1.a_place", "D": [kind, 0, ""]}


def dtype_name(dt: Any) -> str:
    name = str(np.dtype(dt))
    if name not in _TAGS:
        raise PaddleExportError(f"[jit.save] dtype {name} has no Paddle spelling; known: {sorted(_TAGS)}")
    return name


def finite(value: float, dtype: Any) -> float:
    """``value`` with ±inf as the dtype's extreme finite value (Paddle's JSON holds no inf)."""
    v = float(value)
    if np.isinf(v) and np.dtype(dtype).kind == "f":
        fi = np.finfo(np.dtype(dtype))
        return float(fi.max if v > 0 else fi.min)
    return v


# -- the emitter ------------------------------------------------------------------------------
class PdType:
    """A ``pd_op`` value's type as written: dtype name and dims (``-1`` for a dynamic one)."""

    def __init__(self, dtype: Any, shape: Sequence[Any]) -> None:
        self.dtype = dtype_name(dtype)
        self.shape = [d if isinstance(d, int) and d >= 0 else -1 for d in shape]

    def json(self) -> dict[str, Any]:
        return {"#": "0.t_dtensor", "D": [{"#": "0.t_" + _TAGS[self.dtype]}, self.shape, "NCHW", [], 0]}


def of(t: TensorType) -> PdType:
    return PdType(t.dtype, t.shape)


class Emitter:
    """Builds the ``pd_op`` op list: value ids, op records, the small constant ops Paddle's
    ops take their shapes and axes from."""

    def __init__(self, layer_name: str) -> None:
        self.layer_name = layer_name
        self.ops: list[dict[str, Any]] = []
        self.params: list[dict[str, Any]] = []
        self.types: dict[int, Any] = {}
        self._next = 1
        self.op: Operation | None = None
        self.where = ""

    def fail(self, what: str, hint: str = "") -> PaddleExportError:
        name = self.op.name if self.op is not None else "?"
        tail = f"; {hint}" if hint else ""
        return PaddleExportError(
            f"[jit.save] op '{name}' ({self.where}) of layer {self.layer_name} {what}{tail}"
        )

    def fresh(self, ty: Any) -> dict[str, Any]:
        vid = self._next
        self._next += 1
        self.types[vid] = ty
        return {"%": vid, "TT": ty.json() if isinstance(ty, PdType) else ty}

    def emit(
        self, name: str, inputs: Sequence[int], attrs: dict[str, dict[str, Any]], outs: Sequence[Any]
    ) -> list[int]:
        """Append ``pd_op.<name>`` (``builtin.<name>`` for ``0.`` names) and return its result ids."""
        results = [self.fresh(t) for t in outs]
        rec = {
            "#": name if "." in name else "1." + name,
            "A": [{"AT": v, "N": k} for k, v in attrs.items()],
            "I": [{"%": int(i)} for i in inputs],
            "O": results,
            "OA": [{"AT": a_array([a_bool(True) for _ in results]), "N": "stop_gradient"}],
        }
        self.ops.append(rec)
        return [r["%"] for r in results]

    def one(self, name: str, inputs: Sequence[int], attrs: dict[str, dict[str, Any]], out: Any) -> int:
        return self.emit(name, inputs, attrs, [out])[0]

    def parameter(self, name: str, ty: PdType) -> int:
        res = self.fresh(ty)
        self.params.append({"#": "p", "A": [0, 1, 1, name], "DA": [], "O": res, "OA": [1, 0, 1], "QA": []})
        return res["%"]

    def int_array(self, values: Sequence[int]) -> int:
        return self.one(
            "full_int_array",
            [],
            {"value": a_array([a_i64(v) for v in values]), "dtype": a_dtype("int64"), "place": a_place(1)},
            PdType("int64", [len(values)]),
        )

    def full(self, shape: Sequence[int], value: float, dtype: Any) -> int:
        return self.one(
            "full",
            [],
            {
                "shape": a_intarray(shape),
                "value": a_f64(finite(value, dtype)),
                "dtype": a_dtype(dtype),
                "place": a_place(0),
            },
            PdType(dtype, shape),
        )

    def combine(self, ids: Sequence[int]) -> int:
        items = [self.types[i].json() for i in ids]
        return self.one("0.combine", ids, {}, {"#": "0.t_vec", "D": items})

    def shape_arg(self, target: Sequence[Any], source: Sequence[Any], what: str) -> list[int]:
        """A reshape/expand target with symbolic dims spelled as Paddle reads them: ``0`` for the
        source's dim at the same place, ``-1`` for one dim Paddle infers."""
        out: list[int] = []
        inferred = False
        for i, d in enumerate(target):
            if isinstance(d, int) and d >= 0:
                out.append(d)
            elif i < len(source) and source[i] == d:
                out.append(0)
            elif not inferred:
                out.append(-1)
                inferred = True
            else:
                raise self.fail(
                    f"takes {what} {tuple(str(x) for x in target)}, with more than one dynamic dim "
                    f"that is not the input's",
                    "give static sizes in input_spec for those dims",
                )
        return out


Lowering = Callable[[Emitter, Operation, list[int]], "int | list[int]"]
#: Oarlock op name (``op.conv2d``) → its ``pd_op`` lowering
EXPORT_TABLE: dict[str, Lowering] = {}


def export_lowering(*names: str) -> Callable[[Lowering], Lowering]:
    """Register ``fn`` as the ``pd_op`` lowering of the Oarlock ops ``names`` (without ``op.``)."""

    def add(fn: Lowering) -> Lowering:
        for n in names:
            EXPORT_TABLE["op." + n] = fn
        return fn

    return add


def result_type(op: Operation, k: int = 0) -> PdType:
    t = op.results[k].type
    assert isinstance(t, TensorType)
    return of(t)


# -- tensors into .pdiparams ---------------------------------------------------------------
def _varint(v: int) -> bytes:
    out = bytearray()
    v &= (1 << 64) - 1
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def tensor_record(a: np.ndarray, name: str) -> bytes:
    """One dense-tensor record in the layout :func:`.params.read_tensor` reads."""
    dt = np.dtype(a.dtype).newbyteorder("<") if a.dtype.byteorder == ">" else np.dtype(a.dtype)
    code = _BF16 if dt.name == "bfloat16" else _CODES.get(dt)
    if code is None:
        raise PaddleExportError(
            f"[jit.save] weight '{name}' has dtype {dt}, which Paddle's files do not hold"
        )
    desc = b"\x08" + _varint(code) + b"".join(b"\x10" + _varint(int(d)) for d in a.shape)
    head = struct.pack("<IQI", 0, 0, 0) + struct.pack("<i", len(desc)) + desc
    return head + np.ascontiguousarray(a, dtype=dt).tobytes()


def write_params(path: str, weights: dict[str, np.ndarray]) -> None:
    """``path`` (``.pdiparams``): the weights in sorted-name order, as Paddle's ``save_combine``."""
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        for name in sorted(weights):
            f.write(tensor_record(np.asarray(weights[name]), name))
    os.replace(tmp, path)


# -- the program ------------------------------------------------------------------------------
def lower_program(
    program: Program,
    params: dict[str, Any],
    constants: dict[str, Any],
    input_names: list[str],
    layer_name: str = "the layer",
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The JSON document of ``program`` in the ``pd_op`` dialect and the weights it names."""
    from . import export_math, export_nn  # noqa: F401  (the tables register themselves)

    em = Emitter(layer_name)
    ids: dict[Value, int] = {}
    weights: dict[str, np.ndarray] = {}
    by_name: dict[str, int] = {}
    for k, (v, name) in enumerate(zip(program.inputs, input_names)):
        t = v.type
        assert isinstance(t, TensorType)
        ty = of(t)
        ids[v] = em.one(
            "data",
            [],
            {
                "name": a_str(name),
                "shape": a_intarray(ty.shape),
                "dtype": a_dtype(t.dtype),
                "place": a_place(0),
            },
            ty,
        )
    outputs: list[int] = []
    for k, op in enumerate(program.block.ops):
        em.op, em.where = op, f"#{k} of the program"
        if op.name == "builtin.return":
            outputs = [ids[v] for v in op.operands]
            continue
        if op.name == "builtin.parameter" or (op.name == "builtin.constant" and "name" in op.attrs):
            name = str(op.attrs["name"])
            src = params if op.name == "builtin.parameter" else constants
            if name not in by_name:
                by_name[name] = em.parameter(name, result_type(op))
                weights[name] = _numpy(src[name])
            ids[op.result] = by_name[name]
            continue
        if op.name == "builtin.constant":
            t = op.result.type
            assert isinstance(t, TensorType)
            if not t.is_static:
                raise em.fail(f"is a constant of dynamic shape {t.shape}")
            ids[op.result] = em.full(list(t.shape), float(op.attrs["value"]), t.dtype)
            continue
        fn = EXPORT_TABLE.get(op.name)
        if fn is None or op.regions:
            raise em.fail(
                "has no lowering to Paddle's pd_op dialect (control flow and ops outside "
                "framework.jit.paddle_format.EXPORT_TABLE are not exported)",
                "save with format='oarlock', or export the model without this op",
            )
        res = fn(em, op, [ids[v] for v in op.operands])
        res = [res] if isinstance(res, int) else list(res)
        for v, r in zip(op.results, res):
            ids[v] = r
    em.op = None
    for col, vid in enumerate(outputs):
        em.ops.append(
            {
                "#": "1.fetch",
                "A": [{"AT": a_str(f"fetch_name_{col}"), "N": "name"}, {"AT": a_i32(col), "N": "col"}],
                "I": [{"%": vid}],
                "O": [em.fresh(em.types[vid])],
                "OA": [
                    {"AT": a_array([a_bool(True)]), "N": "persistable"},
                    {"AT": a_array([a_bool(True)]), "N": "stop_gradient"},
                ],
            }
        )
    block = {"#": "block_0", "args": [], "ops": em.params + em.ops}
    doc = {
        "base_code": {"magic": "pir", "trainable": False, "version": VERSION},
        "program": {"regions": [{"#": "region_0", "blocks": [block]}]},
    }
    return doc, weights


def _numpy(t: Any) -> np.ndarray:
    return t.numpy() if hasattr(t, "numpy") else np.asarray(t)


def write_paddle_program(
    prefix: str,
    program: Program,
    params: dict[str, Any],
    constants: dict[str, Any],
    input_names: list[str],
    layer_name: str = "the layer",
) -> None:
    """Write ``prefix.json`` and ``prefix.pdiparams`` for a traced program (what
    ``fw.jit.save(..., format="paddle")`` does after tracing)."""
    doc, weights = lower_program(program, params, constants, input_names, layer_name)
    write_params(prefix + ".pdiparams", weights)
    tmp = prefix + ".json.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(doc, f, allow_nan=False)
    os.replace(tmp, prefix + ".json")


__all__ = [
    "EXPORT_TABLE",
    "PaddleExportError",
    "export_lowering",
    "lower_program",
    "write_paddle_program",
    "write_params",
]
