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
from . import sharding as _sh
from .base import LATER, Identity, Lowering, broadcast_shapes, primitive
from .cost import elementwise_flops, matmul_flops, reduction_flops

# -- shape rules ----------------------------------------------------------------------------


def _same(ins: list[Tensor], attrs: dict[str, Any]) -> list:
    x = ins[0]
    return [(x.shape, x.dtype)]


_tuple_eq = tuple.__eq__


def _bool(ins: list[Tensor], attrs: dict[str, Any]) -> list:
    return [(ins[0].shape, _dt.bool_)]


def _make_binary_infer(name: str, out_bool: bool):
    def infer(ins: list[Tensor], attrs: dict[str, Any]) -> list:
        x, y = ins
        # tuple.__eq__: Size's list-aware == is a Python call, and this runs for every binary op
        shape = (
            x.shape
            if x.shape is y.shape or _tuple_eq(x.shape, y.shape)
            else broadcast_shapes(name, x.shape, y.shape)
        )
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
#: primitives fw.amp.auto_cast keeps in float32 (precision-sensitive: exponentials)
_DENY = {"exp": "deny", "log": "deny", "rsqrt": "deny", "erf": "deny"}


def _math(fn: str) -> Lowering:
    return Lowering(c=f"{{fn:{fn}}}({{0}})", costly=fn in ("exp", "log", "tanh", "erf", "sin", "cos"))


# NOTE: integers wrap modulo 2**bits as numpy's do: computed in an unsigned type ({U}), which
# C defines to wrap, where signed overflow is undefined
_NEG_INT = "(({T})(({U})0 - ({U}){0}))"
# name, lowering to the loop IR (see base.Lowering for the template syntax)
for _name, _lower in [
    ("neg", Lowering(c="(-{0})", c_int=_NEG_INT)),
    ("abs", Lowering(c="{fn:fabs}({0})", c_int=f"({{0}} < 0 ? {_NEG_INT} : {{0}})", c_uint="{0}")),
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
    (
        "sign",
        Lowering(
            c="({0} != {0} ? {0} : ({0} > {zero} ? {one} : ({0} < {zero} ? -{one} : {zero})))",
            c_int="(({T})(({0} > 0) - ({0} < 0)))",
        ),
    ),
]:
    primitive(
        _name,
        _same,
        LATER,
        elementwise=True,
        lower=_lower,
        family="unary",
        flops=elementwise_flops,
        amp=_DENY.get(_name, ""),
        sharding=_sh.elementwise("one" if _name == "neg" else ""),  # -(partial) is partial
    )
_BOOLEAN = "a boolean result: nothing to differentiate"
primitive("logical_not", _bool, None, elementwise=True, lower="(!{0})", no_grad=_BOOLEAN, family="unary")


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
_OR, _AND = "({0} || {1})", "({0} && {1})"  # bool add/maximum, mul/minimum (numpy's)
# name, lowering, other OpDef fields (identity: x op c is x bit for bit; the sharding rule's
# linear: how partial values pass)
for _name, _lower, _facts in [
    (
        "add",
        Lowering(c="({0} + {1})", c_int="(({T})(({U}){0} + ({U}){1}))", c_bool=_OR),
        dict(commutative=True, identity=Identity(-0.0, both=True), sharding=_sh.elementwise("all")),
    ),
    (
        "sub",
        Lowering(c="({0} - {1})", c_int="(({T})(({U}){0} - ({U}){1}))"),
        dict(identity=Identity(0.0), sharding=_sh.elementwise("all")),
    ),
    (
        "mul",
        Lowering(c="({0} * {1})", c_int="(({T})(({U}){0} * ({U}){1}))", c_bool=_AND),
        dict(commutative=True, identity=Identity(1.0, both=True), sharding=_sh.elementwise("one")),
    ),
    ("div", "({0} / {1})", dict(identity=Identity(1.0), sharding=_sh.elementwise("first"))),
    (
        "pow",
        Lowering(
            c="{fn:pow}({0}, {1})",
            costly=True,
            c_int="(({T})oarlock_ipow((uint64_t)(int64_t){0}, (int64_t){1}))",
        ),
        dict(amp="deny"),
    ),
    (  # NaN wins
        "maximum",
        Lowering(c="(({0} > {1} || {0} != {0}) ? {0} : {1})", c_int="({0} > {1} ? {0} : {1})", c_bool=_OR),
        dict(commutative=True),
    ),
    (
        "minimum",
        Lowering(c="(({0} < {1} || {0} != {0}) ? {0} : {1})", c_int="({0} < {1} ? {0} : {1})", c_bool=_AND),
        dict(commutative=True),
    ),
    (
        "floor_divide",
        Lowering(c=_FLOOR_DIVIDE, c_int="(({T})oarlock_floordiv((int64_t){0}, (int64_t){1}))"),
        {},
    ),
    ("remainder", Lowering(c=_REMAINDER, c_int="(({T})oarlock_mod((int64_t){0}, (int64_t){1}))"), {}),
]:
    primitive(
        _name,
        _make_binary_infer(_name, False),
        LATER,
        elementwise=True,
        lower=_lower,
        family="binary",
        flops=elementwise_flops,
        **_facts,
    )
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
        family="compare",
        commutative=_name in ("eq", "ne", "logical_and", "logical_or"),
    )
primitive("where", _where_infer, LATER, elementwise=True, lower="({0} ? {1} : {2})")
primitive(
    "cast", lambda ins, a: [(ins[0].shape, a["dtype"])], LATER, lower=Lowering("cast"), sharding=_sh.cast
)


# reductions -------------------------------------------------------------------------------
_RED = dict(family="reduce")
_FOLD = dict(family="reduce", flops=reduction_flops)  # argmax/argmin: index selection, no arithmetic
primitive(
    "sum",
    _reduce_infer,
    LATER,
    lower=Lowering("reduce"),
    amp="deny",
    sharding=_sh.reduction("one", "sum"),
    **_FOLD,
)
primitive("prod", _reduce_infer, LATER, amp="deny", sharding=_sh.reduction(kept=True), **_FOLD)
primitive("max", _reduce_infer, LATER, lower=Lowering("reduce"), sharding=_sh.reduction("", "max"), **_FOLD)
primitive("min", _reduce_infer, LATER, lower=Lowering("reduce"), sharding=_sh.reduction("", "min"), **_FOLD)
_INDEX = "an integer index: nothing to differentiate"
_ARG = _sh.reduction(kept=True, axis_attr="axis")
primitive("argmax", _arg_infer, None, no_grad=_INDEX, sharding=_ARG, **_RED)
primitive("argmin", _arg_infer, None, no_grad=_INDEX, sharding=_ARG, **_RED)


# sorting -----------------------------------------------------------------------------------
def _argsort_sharding(attrs: dict[str, Any], ins: list[Any]) -> Any:
    """The sorted (last) axis whole on every rank; the others keep their placements."""
    return _sh.axis_kept({"axis": -1}, ins)


primitive(
    "argsort", lambda ins, a: [(ins[0].shape, _dt.int64)], None, no_grad=_INDEX, sharding=_argsort_sharding
)


# linear algebra ----------------------------------------------------------------------------
primitive("matmul", _matmul_infer, LATER, amp="allow", sharding=_sh.matmul, flops=matmul_flops)


# layout ------------------------------------------------------------------------------------
primitive(
    "permute",
    lambda ins, a: [(tuple(ins[0].shape[p] for p in a["perm"]), ins[0].dtype)],
    LATER,
    sharding=_sh.permute,
)
primitive(
    "expand", lambda ins, a: [(a["shape"], ins[0].dtype)], LATER, lower=Lowering("pass"), sharding=_sh.expand
)


def _slice_infer(ins, a):
    return [
        (tuple(_slice_len(s, e, st) for s, e, st in zip(a["starts"], a["stops"], a["steps"])), ins[0].dtype)
    ]


primitive("slice", _slice_infer, LATER, sharding=_sh.slice_)


def _concat_infer(ins, a):
    ax = a["axis"]
    shape = list(ins[0].shape)
    shape[ax] = sum(t.shape[ax] for t in ins)
    return [(tuple(shape), ins[0].dtype)]


primitive("concat", _concat_infer, LATER, sharding=_sh.concat)


def _pad_infer(ins, a):
    return [(tuple(s + b + e for s, (b, e) in zip(ins[0].shape, a["pads"])), ins[0].dtype)]


primitive("pad", _pad_infer, LATER, sharding=_sh.pad)


# indexing ----------------------------------------------------------------------------------
def _gather_infer(ins, a):
    x, idx = ins
    ax = a["axis"]
    return [(x.shape[:ax] + idx.shape + x.shape[ax + 1 :], x.dtype)]


# NOTE: the loop IR reads a gather along the row whose index is a constant rotation of the
# row (rotary's rotate-half, roll) as a load at the rotated column (``compiler.loop_ir.Builder.take``)
primitive("gather", _gather_infer, LATER, lower=Lowering("take"), sharding=_sh.gather)
_SCATTER = "writes rows by index anywhere in the output: replicated"
primitive("scatter_add", lambda ins, a: [(ins[0].shape, ins[0].dtype)], LATER, no_sharding=_SCATTER)
primitive("scatter", lambda ins, a: [(ins[0].shape, ins[0].dtype)], LATER, no_sharding=_SCATTER)

# creation and memory ---------------------------------------------------------------------
_CREATES = "no tensor input: a new replicated tensor"
primitive("full", lambda ins, a: [(a["shape"], a["dtype"])], no_grad="no tensor input", no_sharding=_CREATES)
primitive(
    "arange", lambda ins, a: [((0,), a["dtype"])], no_grad="no tensor input", no_sharding=_CREATES
)  # length given by the caller
primitive(
    "philox_uniform",
    lambda ins, a: [(a["shape"], a["dtype"])],
    no_grad="no tensor input",
    no_sharding=_CREATES,
    random=True,
)
primitive("copy", _same, LATER, lower=Lowering("pass"), family="unary", sharding=_sh.elementwise("one"))
