"""The pieces every export lowering uses: Paddle's attribute records, value types, the
:class:`Emitter` that writes ``pd_op`` operations, and ``EXPORT_TABLE`` (one lowering per
Oarlock op, filled by :mod:`.export_math` and :mod:`.export_nn`; :mod:`.export` walks a
program through it and writes the files).

>>> from framework.jit.paddle_format import export_math  # fills the table
>>> from framework.jit.paddle_format.export_emit import EXPORT_TABLE
>>> EXPORT_TABLE["op.relu"].__name__
'lower'
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ...ir import Operation, TensorType
from ...ir.core import split_derived
from .params import VAR_TYPES
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


class UnknownDtype(PaddleExportError):
    """A dtype Paddle's files have no name for; :class:`Emitter` callers add the op and place."""


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
        raise UnknownDtype(f"has dtype {name}, which Paddle's files do not spell; known: {sorted(_TAGS)}")
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
        #: symbol name -> (the id of a program input, the axis that holds it)
        self.sym_sources: dict[str, tuple[int, int]] = {}
        self._dims: dict[str, int] = {}
        self._last_arg = 0
        self._regions = 0

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

    def nested(self, fn: Callable[[], Any]) -> tuple[list[dict[str, Any]], Any]:
        """Run ``fn`` writing into a fresh op list (a region's block): that list and what ``fn``
        returned. Dims computed inside stay inside (an outer block cannot read them)."""
        saved, dims = self.ops, dict(self._dims)
        self.ops = []
        try:
            return self.ops, fn()
        finally:
            self.ops, self._dims = saved, dims

    def block_arg(self, ty: PdType) -> dict[str, Any]:
        """A region block's argument (a loop's carried value): Paddle numbers them -1, -2, ..."""
        self._last_arg -= 1
        self.types[self._last_arg] = ty
        return {"#": self._last_arg, "TT": ty.json()}

    def region(self, ops: list[dict[str, Any]], args: Sequence[dict[str, Any]] = ()) -> dict[str, Any]:
        """A region of one block holding ``ops`` (ending in its ``cf.yield``)."""
        self._regions += 1
        k = self._regions
        return {"#": f"region_{k}", "blocks": [{"#": f"block_{k}", "args": list(args), "ops": ops}]}

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

    def scalar_int(self, value: int) -> int:
        """An ``int64`` scalar (shape ``[]``) holding ``value``."""
        return self.full([], float(value), "int64")

    def dim(self, d: Any) -> int:
        """An ``int64`` scalar holding dim ``d`` at run time: an int, or an affine expression of
        the inputs' dynamic dims and their products (each read as ``shape64(input)[axis]``, as Paddle's own
        programs read ``paddle.shape(x)[i]``). Values are cached per block (:meth:`nested`)."""
        if isinstance(d, int):
            return self.scalar_int(d)
        key = str(d)
        if key in self._dims:
            return self._dims[key]
        total = None
        for name, coef in d.terms:
            term = None
            for factor in name.split("*"):  # a product of dims (``b*t``) is their scalars multiplied
                f = self._sym_dim(factor)
                term = f if term is None else self.one("multiply", [term, f], {}, PdType("int64", []))
            if coef != 1:
                term = self.scale(term, float(coef), 0.0, PdType("int64", []))
            total = term if total is None else self.one("add", [total, term], {}, PdType("int64", []))
        assert total is not None
        if d.const:
            total = self.scale(total, 1.0, float(d.const), PdType("int64", []))
        self._dims[key] = total
        return total

    def _sym_dim(self, name: str) -> int:
        """An ``int64`` scalar holding the dynamic dim ``name`` (one symbol) at run time, read
        from the first program input that holds it (cached per block); a derived one
        (``b__div2``) is computed from its base."""
        parts = split_derived(name) if name not in self.sym_sources else None
        if parts is not None:
            if name not in self._dims:
                base, how, k = parts
                self._dims[name] = self.one(
                    "floor_divide" if how == "div" else "remainder",
                    [self._sym_dim(base), self.full([], float(k), "int64")],
                    {},
                    PdType("int64", []),
                )
            return self._dims[name]
        if name not in self.sym_sources:
            raise self.fail(f"uses the dynamic dim {name}, which no program input holds")
        vid, axis = self.sym_sources[name]
        if name not in self._dims:
            rank = len(self.types[vid].shape)
            shp = self.one("shape64", [vid], {}, PdType("int64", [rank]))
            self._dims[name] = self.one(
                "slice",
                [shp, self.int_array([axis]), self.int_array([axis + 1])],
                {
                    "axes": a_array([a_i64(0)]),
                    "infer_flags": a_array([a_i64(1)]),
                    "decrease_axis": a_array([a_i64(0)]),
                },
                PdType("int64", []),
            )
        return self._dims[name]

    def scale(self, x: int, factor: float, bias: float, out: PdType) -> int:
        s = self.full([1], factor, "float32")
        return self.one("scale", [x, s], {"bias": a_f32(bias), "bias_after_scale": a_bool(True)}, out)

    def shape_tensor(self, dims: Sequence[Any]) -> int:
        """An ``int64[len(dims)]`` shape: a constant when every dim is static, else the dims'
        scalars stacked (Paddle's own spelling of ``[paddle.shape(x)[0], 4]``)."""
        if all(isinstance(d, int) for d in dims):
            return self.int_array([int(d) for d in dims])
        parts = [self.dim(d) for d in dims]
        vec = self.combine(parts)
        return self.one("stack", [vec], {"axis": a_i32(0)}, PdType("int64", [len(dims)]))

    def combine(self, ids: Sequence[int]) -> int:
        items = [self.types[i].json() for i in ids]
        return self.one("0.combine", ids, {}, {"#": "0.t_vec", "D": items})

    def shape_arg(self, target: Sequence[Any], source: Sequence[Any]) -> list[int] | None:
        """A reshape target with symbolic dims spelled as Paddle reads them: ``0`` for the
        source's dim at the same place, ``-1`` for one dim Paddle infers; None when more than
        one dim is neither (then the shape is computed at run time: :meth:`shape_tensor`)."""
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
                return None
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
