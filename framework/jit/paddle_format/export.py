"""Oarlock programs written as Paddle 3's inference files (``fw.jit.save(..., format="paddle")``).

The traced program (op dialect) is lowered op by op to the ``pd_op`` dialect through a table
(one record per Oarlock op, :mod:`.export_math` and :mod:`.export_nn`), then serialised in the
layout :mod:`.program` reads: ``prefix.json`` (PIR as JSON, format version 4) and
``prefix.pdiparams`` (the persistable values sorted by name, each as the dense-tensor record
:mod:`.params` reads). Real Paddle 3 loads both with ``paddle.jit.load`` and with
``paddle.inference`` (``Config(prefix + ".json", prefix + ".pdiparams")``); Oarlock's own
``fw.jit.load(prefix)`` reads them back.

A ``None`` dim of an InputSpec is ``-1`` in the file; a reshape keeps it as ``0`` (the input's
dim at the same place) or ``-1`` (one inferred dim), and any other shape with dynamic dims is
computed at run time from ``shape64`` of the inputs (:meth:`.Emitter.shape_tensor`). Control
flow is written as Paddle's own: ``cf.cond`` → ``pd_op.if`` (two regions ending in
``cf.yield``), ``cf.while`` → ``pd_op.while`` (the condition first; the body block takes the
loop values and yields the next condition and values). An op with no lowering (outside the
table) raises :class:`PaddleExportError` naming the op, where it sits and the layer.

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

from ...ir import Operation, Program, SymDim, TensorType, Value
from .export_emit import (
    _CODES,
    EXPORT_TABLE,
    VERSION,
    Emitter,
    PaddleExportError,
    UnknownDtype,
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
    low = _Lowering(em, params, constants)
    for v, name in zip(program.inputs, input_names):
        t = v.type
        assert isinstance(t, TensorType)
        try:
            ty = of(t)
        except UnknownDtype as exc:
            raise PaddleExportError(f"[jit.save] input '{name}' of layer {layer_name} {exc}") from None
        attrs = {
            "name": a_str(name),
            "shape": a_intarray(ty.shape),
            "dtype": a_dtype(t.dtype),
            "place": a_place(0),
        }
        low.ids[v] = em.one("data", [], attrs, ty)
        for axis, d in enumerate(t.shape):  # where each dynamic dim can be read at run time
            if isinstance(d, SymDim) and d.terms[0][1] == 1 and len(d.terms) == 1 and not d.const:
                em.sym_sources.setdefault(d.terms[0][0], (low.ids[v], axis))
    outputs = low.block(list(program.block.ops), "the program")
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
    return doc, low.weights


def _yield(ids: list[int]) -> dict[str, Any]:
    return {"#": "2.yield", "A": [], "I": [{"%": r} for r in ids], "O": [], "OA": []}


class _Lowering:
    """One program's walk: the id of each lowered value, the weights written."""

    def __init__(self, em: Emitter, params: dict[str, Any], constants: dict[str, Any]) -> None:
        self.em, self.params, self.constants = em, params, constants
        self.ids: dict[Value, int] = {}
        self.weights: dict[str, np.ndarray] = {}
        self.by_name: dict[str, int] = {}

    def block(self, ops: list[Operation], where: str) -> list[int]:
        """Lower ``ops`` (a block) into the emitter's current op list; the ids its terminator
        (``builtin.return`` or ``cf.yield``) gives."""
        em, ids = self.em, self.ids
        for k, op in enumerate(ops):
            em.op, em.where = op, f"#{k} of {where}"
            if op.name in ("builtin.return", "cf.yield"):
                return [ids[v] for v in op.operands]
            if op.name == "builtin.parameter" or (op.name == "builtin.constant" and "name" in op.attrs):
                name = str(op.attrs["name"])
                src = self.params if op.name == "builtin.parameter" else self.constants
                if name not in self.by_name:
                    self.by_name[name] = em.parameter(name, result_type(op))
                    self.weights[name] = _numpy(src[name])
                ids[op.result] = self.by_name[name]
                continue
            if op.name == "builtin.constant":
                t = op.result.type
                assert isinstance(t, TensorType)
                if not t.is_static:
                    raise em.fail(f"is a constant of dynamic shape {t.shape}")
                ids[op.result] = em.full(list(t.shape), float(op.attrs["value"]), t.dtype)
                continue
            try:
                res = self.one(op, f"{op.name} #{k} of {where}")
            except UnknownDtype as exc:  # the op and its place named
                em.op, em.where = op, f"#{k} of {where}"
                raise em.fail(str(exc), "cast to a dtype Paddle has before saving") from None
            res = [res] if isinstance(res, int) else list(res)
            for v, r in zip(op.results, res):
                ids[v] = r
        raise em.fail("ends without a terminator")

    def one(self, op: Operation, inner: str) -> int | list[int]:
        """The ids of ``op``'s results, its ``pd_op`` ops written (``inner``: the place of a
        region's ops)."""
        if op.name == "cf.cond":
            return self.cond(op, inner)
        if op.name == "cf.while":
            return self.while_(op, inner)
        fn = EXPORT_TABLE.get(op.name)
        if fn is None or op.regions:
            raise self.em.fail(
                "has no lowering to Paddle's pd_op dialect (ops outside "
                "framework.jit.paddle_format.EXPORT_TABLE are not exported)",
                "save with format='oarlock', or export the model without this op",
            )
        return fn(self.em, op, [self.ids[v] for v in op.operands])

    def cond(self, op: Operation, where: str) -> list[int]:
        """``cf.cond`` → ``pd_op.if(pred)`` with a then and an else region, each ending in a
        ``cf.yield`` of the branch's results (the regions read outer values by their ids)."""
        em = self.em
        pred = self.ids[op.operands[0]]
        regions = []
        for i, r in enumerate(op.regions):
            ops = list(r.blocks[0].ops)
            body, res = em.nested(lambda ops=ops, i=i: self.block(ops, f"{where} region {i}"))
            body.append(_yield(res))
            regions.append(em.region(body))
        return self._control("1.if", op, [pred], regions)

    def while_(self, op: Operation, where: str) -> list[int]:
        """``cf.while(init...)`` (a cond region and a body region over the loop values) →
        ``pd_op.while(cond, init...)``: the cond region is written once before the loop on the
        initial values and again at the end of the body, whose block takes the loop values as
        arguments and yields ``(cond, values...)`` — the form Paddle's own ``while`` takes."""
        em, ids = self.em, self.ids
        cond_blk, body_blk = (r.blocks[0] for r in op.regions)
        init = [ids[v] for v in op.operands]

        def cond(vals: list[int]) -> int:
            ids.update(zip(cond_blk.args, vals))
            (c,) = self.block(list(cond_blk.ops), f"{where} region 0")
            return c

        first = cond(init)
        args = [em.block_arg(result_type(op, k)) for k in range(len(op.results))]

        def body() -> list[int]:
            ids.update(zip(body_blk.args, [a["#"] for a in args]))
            vals = self.block(list(body_blk.ops), f"{where} region 1")
            return [cond(vals), *vals]

        ops, yielded = em.nested(body)
        ops.append(_yield(yielded))
        return self._control("1.while", op, [first, *init], [em.region(ops, args)])

    def _control(self, name: str, op: Operation, ins: list[int], regions: list[dict[str, Any]]) -> list[int]:
        em = self.em
        em.op = op
        outs = [em.fresh(result_type(op, k)) for k in range(len(op.results))]
        em.ops.append(
            {
                "#": name,
                "A": [],
                "I": [{"%": i} for i in ins],
                "O": outs,
                "OA": [{"AT": a_array([a_bool(False) for _ in outs]), "N": "stop_gradient"}],
                "regions": regions,
            }
        )
        return [o["%"] for o in outs]


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
    if weights:
        write_params(prefix + ".pdiparams", weights)
    elif os.path.exists(prefix + ".pdiparams"):  # as Paddle: a program without weights has no file
        os.remove(prefix + ".pdiparams")
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
