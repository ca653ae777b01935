"""The primitive ops: the shape/dtype rule and the lowering of each.

The kernels live in plugins; what each computes is in ``adapter_api.primitives``. Gradient
rules are written with framework ops, so they are differentiable themselves: they need the
ops defined after this module, so each primitive is declared here with ``grad=LATER`` and
``primitive_grads`` attaches its rule once those ops exist.
"""

from __future__ import annotations

from typing import Any

from .. import dtypes as _dt
from ..tensor import Tensor
from .base import LATER, Lowering, broadcast_shapes, primitive

# -- shape rules ----------------------------------------------------------------------------


def _same(ins: list[Tensor], attrs: dict[str, Any]) -> list:
    x = ins[0]
    return [(x.shape, x.dtype)]


def _bool(ins: list[Tensor], attrs: dict[str, Any]) -> list:
    return [(ins[0].shape, _dt.bool_)]


def _make_binary_infer(name: str, out_bool: bool):
    def infer(ins: list[Tensor], attrs: dict[str, Any]) -> list:
        x, y = ins
        shape = broadcast_shapes(name, x.shape, y.shape)
        return [(shape, _dt.bool_ if out_bool else x.dtype)]

    return infer


def _where_infer(ins: list[Tensor], attrs: dict[str, Any]) -> list:
    c, x, y = ins
    return [(broadcast_shapes("where", broadcast_shapes("where", c.shape, x.shape), y.shape), x.dtype)]


def _reduce_infer(ins: list[Tensor], attrs: dict[str, Any]) -> list:
    x = ins[0]
    axes = attrs["axes"]
    keep = attrs["keepdim"]
    shape = tuple((1 if keep else None) if i in axes else s for i, s in enumerate(x.shape))
    return [(tuple(s for s in shape if s is not None), x.dtype)]


def _arg_infer(ins: list[Tensor], attrs: dict[str, Any]) -> list:
    x = ins[0]
    ax = attrs["axis"]
    shape = list(x.shape)
    if attrs["keepdim"]:
        shape[ax] = 1
    else:
        del shape[ax]
    return [(tuple(shape), _dt.int64)]


def _matmul_infer(ins: list[Tensor], attrs: dict[str, Any]) -> list:
    a, b = ins
    return [(a.shape[:-1] + b.shape[-1:], a.dtype)]


def _slice_len(start: int, stop: int, step: int) -> int:
    return max(0, (stop - start + step - 1) // step)


# unary -------------------------------------------------------------------------------------
def _math(fn: str) -> Lowering:
    return Lowering(c=f"{{fn:{fn}}}({{0}})", costly=fn in ("exp", "log", "tanh", "erf", "sin", "cos"))


# name, lowering to the loop IR (see base.Lowering for the template syntax)
for _name, _lower in [
    ("neg", "(-{0})"),
    ("abs", "{fn:fabs}({0})"),
    ("exp", _math("exp")),
    ("log", _math("log")),
    ("sqrt", _math("sqrt")),
    ("rsqrt", "({one} / {fn:sqrt}({0}))"),
    ("sin", _math("sin")),
    ("cos", _math("cos")),
    ("tanh", _math("tanh")),
    ("erf", _math("erf")),
    ("floor", _math("floor")),
    ("ceil", _math("ceil")),
    # numpy: sign(-0.0) is +0.0 and NaN stays NaN
    ("sign", "({0} != {0} ? {0} : ({0} > {zero} ? {one} : ({0} < {zero} ? -{one} : {zero})))"),
]:
    primitive(_name, _same, LATER, elementwise=True, lower=_lower)
_BOOLEAN = "a boolean result: nothing to differentiate"
primitive("logical_not", _bool, None, elementwise=True, lower="(!{0})", no_grad=_BOOLEAN)


# binary ------------------------------------------------------------------------------------
# NOTE: numpy's float divmod (npy_divmod): fmod, moved to the divisor's sign, and a quotient
# rounded to the nearest integer of (a - mod) / b; b == 0 gives a / b and NaN.
_FMOD = "{fn:fmod}({0}, {1})"
_ADJUST = f"({_FMOD} != {{zero}} && (({{1}} < {{zero}}) != ({_FMOD} < {{zero}})))"
_REMAINDER = (
    f"({_ADJUST} ? {_FMOD} + {{1}} : ({_FMOD} == {{zero}} ? {{fn:copysign}}({{zero}}, {{1}}) : {_FMOD}))"
)
_DIV = f"(({{0}} - {_FMOD}) / {{1}} - ({_ADJUST} ? {{one}} : {{zero}}))"
_FLOOR_DIVIDE = (
    f"({{1}} == {{zero}} ? {{0}} / {{1}} : ({_DIV} != {{zero}} ? {{fn:floor}}({_DIV}) + "
    f"({_DIV} - {{fn:floor}}({_DIV}) > ({{one}} / 2) ? {{one}} : {{zero}}) : "
    f"{{fn:copysign}}({{zero}}, {{0}} / {{1}})))"
)
for _name, _lower in [
    ("add", "({0} + {1})"),
    ("sub", "({0} - {1})"),
    ("mul", "({0} * {1})"),
    ("div", "({0} / {1})"),
    ("pow", Lowering(c="{fn:pow}({0}, {1})", costly=True)),
    ("maximum", "(({0} > {1} || {0} != {0}) ? {0} : {1})"),  # NaN wins
    ("minimum", "(({0} < {1} || {0} != {0}) ? {0} : {1})"),
    ("floor_divide", _FLOOR_DIVIDE),
    ("remainder", _REMAINDER),
]:
    primitive(_name, _make_binary_infer(_name, False), LATER, elementwise=True, lower=_lower)
for _name, _sym in (
    ("eq", "=="),
    ("ne", "!="),
    ("lt", "<"),
    ("le", "<="),
    ("gt", ">"),
    ("ge", ">="),
    ("logical_and", "&&"),
    ("logical_or", "||"),
):
    primitive(
        _name,
        _make_binary_infer(_name, True),
        None,
        elementwise=True,
        lower=f"({{0}} {_sym} {{1}})",
        no_grad=_BOOLEAN,
    )
primitive("where", _where_infer, LATER, elementwise=True, lower="({0} ? {1} : {2})")
primitive("cast", lambda ins, a: [(ins[0].shape, a["dtype"])], LATER, lower=Lowering("cast"))


# reductions -------------------------------------------------------------------------------
primitive("sum", _reduce_infer, LATER, lower=Lowering("reduce"))
primitive("prod", _reduce_infer, LATER)
primitive("max", _reduce_infer, LATER, lower=Lowering("reduce"))
primitive("min", _reduce_infer, LATER, lower=Lowering("reduce"))
primitive("argmax", _arg_infer, None, no_grad="an integer index: nothing to differentiate")
primitive("argmin", _arg_infer, None, no_grad="an integer index: nothing to differentiate")


# linear algebra ----------------------------------------------------------------------------
primitive("matmul", _matmul_infer, LATER)


# layout ------------------------------------------------------------------------------------
primitive("permute", lambda ins, a: [(tuple(ins[0].shape[p] for p in a["perm"]), ins[0].dtype)], LATER)
primitive("expand", lambda ins, a: [(a["shape"], ins[0].dtype)], LATER, lower=Lowering("pass"))


def _slice_infer(ins, a):
    return [
        (tuple(_slice_len(s, e, st) for s, e, st in zip(a["starts"], a["stops"], a["steps"])), ins[0].dtype)
    ]


primitive("slice", _slice_infer, LATER)


def _concat_infer(ins, a):
    ax = a["axis"]
    shape = list(ins[0].shape)
    shape[ax] = sum(t.shape[ax] for t in ins)
    return [(tuple(shape), ins[0].dtype)]


primitive("concat", _concat_infer, LATER)


def _pad_infer(ins, a):
    return [(tuple(s + b + e for s, (b, e) in zip(ins[0].shape, a["pads"])), ins[0].dtype)]


primitive("pad", _pad_infer, LATER)


# indexing ----------------------------------------------------------------------------------
def _gather_infer(ins, a):
    x, idx = ins
    ax = a["axis"]
    return [(x.shape[:ax] + idx.shape + x.shape[ax + 1 :], x.dtype)]


# NOTE: the loop IR reads a gather along the row whose index is a constant rotation of the
# row (rotary's rotate-half, roll) as a load at the rotated column (``compiler.loop_ir.Builder.take``)
primitive("gather", _gather_infer, LATER, lower=Lowering("take"))
primitive("scatter_add", lambda ins, a: [(ins[0].shape, ins[0].dtype)], LATER)
primitive("scatter", lambda ins, a: [(ins[0].shape, ins[0].dtype)], LATER)

# creation and memory ---------------------------------------------------------------------
primitive("full", lambda ins, a: [(a["shape"], a["dtype"])], no_grad="no tensor input")
primitive(
    "arange", lambda ins, a: [((0,), a["dtype"])], no_grad="no tensor input"
)  # length given by the caller
primitive("philox_uniform", lambda ins, a: [(a["shape"], a["dtype"])], no_grad="no tensor input")
primitive("copy", _same, LATER, lower=Lowering("pass"))
