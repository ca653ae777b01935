"""Paddle 3's program file (PIR serialised as JSON, ``<prefix>.json``), read into plain records.

The file (``base_code`` ``{"magic": "pir", "version": N}`` and ``program``) holds regions of
blocks of operations. An operation is ``{"#": name, "I": inputs, "O": outputs, "A":
attributes, "regions": ...}``; a name is ``<dialect id>.<op>`` (``1.conv2d`` is
``pd_op.conv2d``, ``0.combine`` is ``builtin.combine``; ``p`` is ``builtin.parameter``, whose
``A`` ends with the parameter's name); a value is ``{"%": id}`` (``0``: an absent optional
input); a type is ``{"#": "0.t_dtensor", "D": [dtype, dims, layout, lod, offset]}`` or a
``0.t_vec`` of those; an attribute is ``{"N": name, "AT": {"#": kind, "D": data}}``.

This module only reads (JSON, no code): :func:`read_program` gives a :class:`PdProgram` whose
ops are :class:`PdOp` records, the ``pd_op`` dialect as Oarlock sees it, before the converter
table (:mod:`.converters`) lowers it to the op dialect.

>>> import json, tempfile, os
>>> from framework.jit.paddle_format.program import read_program
>>> t = {"#": "0.t_dtensor", "D": [{"#": "0.t_f32"}, [-1, 2], "NCHW", [], 0]}
>>> data = {"#": "1.data", "A": [{"N": "name", "AT": {"#": "0.a_str", "D": "x"}}],
...         "I": [], "O": [{"%": 1, "TT": t}]}
>>> relu = {"#": "1.relu", "A": [], "I": [{"%": 1}], "O": [{"%": 2, "TT": t}]}
>>> fetch = {"#": "1.fetch", "A": [{"N": "col", "AT": {"#": "0.a_i32", "D": 0}}],
...          "I": [{"%": 2}], "O": [{"%": 3, "TT": t}]}
>>> doc = {"base_code": {"magic": "pir", "version": 4}, "program": {"regions": [
...     {"#": "region_0", "blocks": [{"#": "block_0", "args": [], "ops": [data, relu, fetch]}]}]}}
>>> d = tempfile.TemporaryDirectory(); p = os.path.join(d.name, "m.json")
>>> with open(p, "w") as f: json.dump(doc, f)
>>> prog = read_program(p)
>>> [op.name for op in prog.ops], prog.inputs[0].name, prog.inputs[0].shape
(['pd_op.data', 'pd_op.relu', 'pd_op.fetch'], 'x', (-1, 2))
>>> d.cleanup()
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from adapter_api import OarlockError


class PaddleFormatError(OarlockError):
    """A file written by Paddle is missing, damaged, of an unknown version, or uses an op
    Oarlock cannot run (the message names the file or the op and where it sits)."""


#: dialect ids of the serialised names
DIALECTS = {"0": "builtin", "1": "pd_op", "2": "cf", "3": "pd_dist"}
#: the short names of builtin ops
SHORT = {"p": "builtin.parameter"}
#: the program format versions this reader was checked against (Paddle 3.0 to 3.3)
KNOWN_VERSIONS = frozenset({1, 2, 3, 4})

_DTYPES = {
    "f16": "float16",
    "f32": "float32",
    "f64": "float64",
    "bf16": "bfloat16",
    "i8": "int8",
    "ui8": "uint8",
    "i16": "int16",
    "i32": "int32",
    "i64": "int64",
    "bool": "bool",
    "c64": "complex64",
    "c128": "complex128",
}


def np_dtype(name: str) -> np.dtype:
    """A numpy dtype for Paddle's dtype name (``float32``, ``bfloat16``...)."""
    if name == "bfloat16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


@dataclass(frozen=True)
class PdType:
    """A value's type: a dense tensor (``dtype``, ``shape`` with ``-1`` for unknown dims) or,
    with ``items``, a vector of them (what ``builtin.combine`` makes)."""

    dtype: np.dtype | None
    shape: tuple[int, ...] = ()
    items: tuple[PdType, ...] | None = None


@dataclass
class PdOp:
    """One operation of the ``pd_op`` dialect (or ``builtin``), as saved."""

    name: str
    inputs: list[int | None]
    outputs: list[tuple[int, PdType]]
    attrs: dict[str, Any]
    where: str
    regions: list[list[PdOp]] = field(default_factory=list)
    #: the value ids of each region's block arguments (a loop body's carried values)
    region_args: list[list[int]] = field(default_factory=list)


@dataclass
class PdInput:
    name: str
    value: int
    shape: tuple[int, ...]
    dtype: np.dtype


@dataclass
class PdProgram:
    """A Paddle program: its ops in order, parameters (name → value id), inputs (``pd_op.data``
    in program order) and outputs (``pd_op.fetch`` by column)."""

    path: str
    version: int
    ops: list[PdOp]
    params: dict[str, tuple[int, PdType]]
    inputs: list[PdInput]
    outputs: list[int]

    def op_names(self) -> dict[str, int]:
        """How many times each op name occurs (regions included)."""
        out: dict[str, int] = {}

        def walk(ops: list[PdOp]) -> None:
            for op in ops:
                out[op.name] = out.get(op.name, 0) + 1
                for r in op.regions:
                    walk(r)

        walk(self.ops)
        return out


class _Reader:
    def __init__(self, path: str) -> None:
        self.path = path

    def fail(self, what: str) -> PaddleFormatError:
        return PaddleFormatError(
            f"[jit.load] '{self.path}' is not a Paddle program file Oarlock can read: {what}"
        )

    def type(self, t: Any) -> PdType:
        if not isinstance(t, dict) or "#" not in t:
            raise self.fail(f"a value type is {t!r}")
        kind = t["#"]
        if kind == "0.t_dtensor":
            d = t.get("D")
            if not isinstance(d, list) or len(d) < 2 or not isinstance(d[0], dict):
                raise self.fail(f"a dense tensor type is {d!r}")
            return PdType(self.dtype(d[0].get("#", "")), tuple(int(x) for x in d[1]))
        if kind == "0.t_vec":
            return PdType(None, (), tuple(self.type(x) for x in t.get("D", [])))
        if kind.startswith("0.t_") and kind[4:] in _DTYPES:  # a scalar type used as a type
            return PdType(self.dtype(kind), ())
        return PdType(None, (), None)  # another kind (selected rows, a null type): named on use

    def dtype(self, tag: str) -> np.dtype | None:
        name = _DTYPES.get(tag[4:]) if tag.startswith("0.t_") else None
        return np_dtype(name) if name else None

    def attr(self, at: Any) -> Any:
        if not isinstance(at, dict) or "#" not in at:
            raise self.fail(f"an attribute is {at!r}")
        kind, d = at["#"], at.get("D")
        if kind in ("0.a_bool", "0.a_str", "1.a_place", "1.a_datalayout", "1.a_layout"):
            return d
        if kind in ("0.a_i32", "0.a_i64", "0.a_index"):
            return int(d)
        if kind in ("0.a_f32", "0.a_f64"):
            return float(d)
        if kind == "0.a_array":
            return [self.attr(x) for x in d]
        if kind == "1.a_intarray":
            return [int(x) for x in d]
        if kind == "1.a_dtype":
            return None if not isinstance(d, str) or d.startswith("Undefined") else np_dtype(d)
        if kind == "0.a_type":
            return self.type(d)
        return RawAttr(kind, d)

    def ops(self, block: Any, where: str) -> list[PdOp]:
        if not isinstance(block, dict) or not isinstance(block.get("ops"), list):
            raise self.fail(f"{where} has no list of ops")
        out = []
        for k, op in enumerate(block["ops"]):
            out.append(self.op(op, f"{where} op #{k}"))
        return out

    def op(self, op: Any, where: str) -> PdOp:
        if not isinstance(op, dict) or not isinstance(op.get("#"), str):
            raise self.fail(f"{where} is {str(op)[:80]!r}")
        raw = op["#"]
        dialect, dot, rest = raw.partition(".")
        name = (
            f"{DIALECTS.get(dialect, 'dialect' + dialect)}.{rest}"
            if dot
            else SHORT.get(raw, f"builtin.{raw}")
        )
        outs = op.get("O", [])
        outs = [outs] if isinstance(outs, dict) else outs
        outputs = [(int(o["%"]), self.type(o.get("TT"))) for o in outs]
        inputs = [int(i["%"]) or None for i in op.get("I", [])]
        a = op.get("A", [])
        if name == "builtin.parameter":
            if not isinstance(a, list) or not a or not isinstance(a[-1], str):
                raise self.fail(f"{where}: a parameter without a name ({a!r})")
            attrs: dict[str, Any] = {"parameter_name": a[-1]}
        else:
            attrs = {x["N"]: self.attr(x.get("AT")) for x in a if isinstance(x, dict) and "N" in x}
        struct = attrs.get("struct_name")
        if isinstance(struct, str) and struct:
            where = f"{where}, {struct}"
        regions, args = [], []
        for r in op.get("regions", []) or []:
            for b in r.get("blocks", []):
                regions.append(self.ops(b, f"{where} {b.get('#', 'block')}"))
                args.append([int(a["#"]) for a in b.get("args", []) if isinstance(a, dict)])
        return PdOp(name, inputs, outputs, attrs, where, regions, args)


@dataclass(frozen=True)
class RawAttr:
    """An attribute of a kind this reader does not decode; a converter that needs it says so."""

    kind: str
    data: Any


def read_program(path: str | os.PathLike[str]) -> PdProgram:
    """Read a ``.json`` program written by ``paddle.jit.save`` (Paddle 3, PIR).

    A file that is not JSON, not a PIR program, or shaped otherwise raises
    :class:`framework.jit.PaddleFormatError` naming the file and what was found."""
    path = os.fspath(path)
    r = _Reader(path)
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except FileNotFoundError:
        raise PaddleFormatError(f"[jit.load] no Paddle program at '{path}'") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise r.fail(f"not JSON ({exc})") from None
    base = doc.get("base_code") if isinstance(doc, dict) else None
    if not isinstance(base, dict) or base.get("magic") != "pir":
        raise r.fail(f"its base_code is {str(base)[:80]!r}; expected magic 'pir' (Paddle 3's format)")
    version = base.get("version")
    if not isinstance(version, int) or version not in KNOWN_VERSIONS:
        raise r.fail(
            f"program format version {version!r}; this reader knows versions {sorted(KNOWN_VERSIONS)} "
            f"(Paddle 3.0 to 3.3): save it with one of those Paddle versions"
        )
    try:
        regions = doc["program"]["regions"]
        block = regions[0]["blocks"][0]
    except (KeyError, IndexError, TypeError):
        raise r.fail("it has no program.regions[0].blocks[0]") from None
    ops = r.ops(block, "block_0")
    params: dict[str, tuple[int, PdType]] = {}
    inputs: list[PdInput] = []
    fetches: list[tuple[int, int]] = []
    for op in ops:
        if op.name == "builtin.parameter":
            vid, ty = op.outputs[0]
            params[op.attrs["parameter_name"]] = (vid, ty)
        elif op.name == "pd_op.data":
            vid, ty = op.outputs[0]
            shape = tuple(op.attrs.get("shape", ty.shape))
            dtype = op.attrs.get("dtype") or ty.dtype
            inputs.append(PdInput(str(op.attrs.get("name", f"x{len(inputs)}")), vid, shape, dtype))
        elif op.name == "pd_op.fetch":
            fetches.append((int(op.attrs.get("col", len(fetches))), op.inputs[0]))
    if not fetches:
        raise r.fail("it has no pd_op.fetch (no outputs): save it with paddle.jit.save")
    outputs = [v for _, v in sorted(fetches)]
    return PdProgram(path, version, ops, params, inputs, outputs)  # type: ignore[arg-type]
