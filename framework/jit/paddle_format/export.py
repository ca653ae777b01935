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
from typing import Any

import numpy as np

from ...ir import Program, TensorType, Value
from .export_emit import (
    _CODES,
    EXPORT_TABLE,
    VERSION,
    Emitter,
    PaddleExportError,
    a_array,
    a_bool,
    a_dtype,
    a_i32,
    a_intarray,
    a_place,
    a_str,
    export_lowering,
    of,
    result_type,
)
from .params import _BF16


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
    for v, name in zip(program.inputs, input_names):
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
