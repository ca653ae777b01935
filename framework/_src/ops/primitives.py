"""The primitive ops: shape/dtype rule and gradient rule of each, side by side.

The kernels live in plugins; what each computes is in ``adapter_api.primitives``. Gradient
rules are written with framework ops, so they are differentiable themselves.
"""

from __future__ import annotations

import math as _m
from typing import Any

import numpy as np

from .. import dtypes as _dt
from ..tensor import Tensor
from . import sharding as _sh
from .base import Identity, Lowering, broadcast_shapes, primitive
from .cost import matmul_flops

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


# -- gradient helpers -----------------------------------------------------------------------


def sum_to(g: Tensor, shape: tuple[int, ...]) -> Tensor:
    """Sum a broadcast gradient back to ``shape``."""
    if g.shape == shape:
        return g
    from .math import sum as _sum

    lead = len(g.shape) - len(shape)
    axes = tuple(range(lead)) + tuple(
        i + lead for i, s in enumerate(shape) if s == 1 and g.shape[i + lead] != 1
    )
    r = _sum(g, axis=axes, keepdim=True) if axes else g
    return r.reshape(shape)


def _m_():
    from . import math as M

    return M


# unary -------------------------------------------------------------------------------------
def _g_neg(n, g):
    return [-g[0]]


def _g_abs(n, g):
    return [g[0] * _m_().sign(n.inputs[0])]


def _g_exp(n, g):
    return [g[0] * n.out()]


def _g_log(n, g):
    return [g[0] / n.inputs[0]]


def _g_sqrt(n, g):
    return [g[0] / (n.out() * 2.0)]


def _g_rsqrt(n, g):
    o = n.out()
    return [g[0] * (o * o * o) * -0.5]


def _g_sin(n, g):
    return [g[0] * _m_().cos(n.inputs[0])]


def _g_cos(n, g):
    return [-(g[0] * _m_().sin(n.inputs[0]))]


def _g_tanh(n, g):
    o = n.out()
    return [g[0] * (1.0 - o * o)]


def _g_erf(n, g):
    x = n.inputs[0]
    return [g[0] * (_m_().exp(-(x * x)) * (2.0 / _m.sqrt(_m.pi)))]


def _g_zero(n, g):
    """Piecewise-constant ops (floor, ceil, sign, floor_divide): a zero gradient, not None,
    as Paddle and PyTorch give."""
    from .creation import zeros_like

    return [zeros_like(t) if not t.stop_gradient else None for t in n.inputs]


#: primitives fw.amp.auto_cast keeps in float32 (precision-sensitive: exponentials, sums)
_DENY = {"exp": "deny", "log": "deny", "rsqrt": "deny", "erf": "deny", "pow": "deny"}


def _math(fn: str) -> Lowering:
    return Lowering(c=f"{{fn:{fn}}}({{0}})", costly=fn in ("exp", "log", "tanh", "erf", "sin", "cos"))


# NOTE: integers wrap modulo 2**bits as numpy's do: computed in an unsigned type ({U}), which
# C defines to wrap, where signed overflow is undefined
_NEG_INT = "(({T})(({U})0 - ({U}){0}))"
# name, gradient rule, lowering to the loop IR (see base.Lowering for the template syntax)
for _name, _grad, _lower in [
    ("neg", _g_neg, Lowering(c="(-{0})", c_int=_NEG_INT)),
    ("abs", _g_abs, Lowering(c="{fn:fabs}({0})", c_int=f"({{0}} < 0 ? {_NEG_INT} : {{0}})", c_uint="{0}")),
    ("exp", _g_exp, _math("exp")),
    ("log", _g_log, _math("log")),
    ("sqrt", _g_sqrt, _math("sqrt")),
    ("rsqrt", _g_rsqrt, "({one} / {fn:sqrt}({0}))"),
    ("sin", _g_sin, _math("sin")),
    ("cos", _g_cos, _math("cos")),
    ("tanh", _g_tanh, _math("tanh")),
    ("erf", _g_erf, _math("erf")),
    ("floor", _g_zero, _math("floor")),
    ("ceil", _g_zero, _math("ceil")),
    # numpy: sign(-0.0) is +0.0 and NaN stays NaN
    (
        "sign",
        _g_zero,
        Lowering(
            c="({0} != {0} ? {0} : ({0} > {zero} ? {one} : ({0} < {zero} ? -{one} : {zero})))",
            c_int="(({T})(({0} > 0) - ({0} < 0)))",
        ),
    ),
]:
    primitive(
        _name,
        _same,
        _grad,
        elementwise=True,
        lower=_lower,
        family="unary",
        amp=_DENY.get(_name, ""),
        sharding=_sh.elementwise("one" if _name == "neg" else ""),  # -(partial) is partial
    )
_BOOLEAN = "a boolean result: nothing to differentiate"
primitive("logical_not", _bool, None, elementwise=True, lower="(!{0})", no_grad=_BOOLEAN, family="unary")


# binary ------------------------------------------------------------------------------------
def _g_add(n, g):
    x, y = n.inputs
    return [
        sum_to(g[0], x.shape) if not x.stop_gradient else None,
        sum_to(g[0], y.shape) if not y.stop_gradient else None,
    ]


def _g_sub(n, g):
    x, y = n.inputs
    return [
        sum_to(g[0], x.shape) if not x.stop_gradient else None,
        sum_to(-g[0], y.shape) if not y.stop_gradient else None,
    ]


def _g_mul(n, g):
    x, y = n.inputs
    return [
        sum_to(g[0] * y, x.shape) if not x.stop_gradient else None,
        sum_to(g[0] * x, y.shape) if not y.stop_gradient else None,
    ]


def _g_div(n, g):
    x, y = n.inputs
    gx = g[0] / y
    return [
        sum_to(gx, x.shape) if not x.stop_gradient else None,
        sum_to(-(gx * x) / y, y.shape) if not y.stop_gradient else None,
    ]


def _g_pow(n, g):
    M = _m_()
    x, y = n.inputs
    gx = gy = None
    if not x.stop_gradient:
        gx = sum_to(g[0] * y * M.pow(x, y - 1.0), x.shape)
    if not y.stop_gradient:
        safe = M.where(x > 0.0, x, M.ones_like(x))
        gy = sum_to(g[0] * n.out() * M.log(safe), y.shape)
    return [gx, gy]


def _g_minmax(pick_x_when):
    def rule(n, g):
        x, y = n.inputs
        half = g[0] * 0.5
        eq = x == y
        first = pick_x_when(x, y)
        M = _m_()
        gx = M.where(first, g[0], M.where(eq, half, M.zeros_like(half)))
        gy = g[0] - gx
        return [sum_to(gx, x.shape), sum_to(gy, y.shape)]

    return rule


def _g_remainder(n, g):
    x, y = n.inputs
    M = _m_()
    return [sum_to(g[0], x.shape), sum_to(-(g[0] * M.floor_divide(x, y)), y.shape)]


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
# name, gradient rule, lowering, other OpDef fields (identity: x op c is x bit for bit;
# linear: how partial values pass the sharding rule)
for _name, _grad, _lower, _facts in [
    (
        "add",
        _g_add,
        Lowering(c="({0} + {1})", c_int="(({T})(({U}){0} + ({U}){1}))", c_bool=_OR),
        dict(commutative=True, identity=Identity(-0.0, both=True), sharding=_sh.elementwise("all")),
    ),
    (
        "sub",
        _g_sub,
        Lowering(c="({0} - {1})", c_int="(({T})(({U}){0} - ({U}){1}))"),
        dict(identity=Identity(0.0), sharding=_sh.elementwise("all")),
    ),
    (
        "mul",
        _g_mul,
        Lowering(c="({0} * {1})", c_int="(({T})(({U}){0} * ({U}){1}))", c_bool=_AND),
        dict(commutative=True, identity=Identity(1.0, both=True), sharding=_sh.elementwise("one")),
    ),
    ("div", _g_div, "({0} / {1})", dict(identity=Identity(1.0), sharding=_sh.elementwise("first"))),
    (
        "pow",
        _g_pow,
        Lowering(
            c="{fn:pow}({0}, {1})",
            costly=True,
            c_int="(({T})oarlock_ipow((uint64_t)(int64_t){0}, (int64_t){1}))",
        ),
        dict(amp="deny"),
    ),
    (  # NaN wins
        "maximum",
        _g_minmax(lambda x, y: x > y),
        Lowering(c="(({0} > {1} || {0} != {0}) ? {0} : {1})", c_int="({0} > {1} ? {0} : {1})", c_bool=_OR),
        dict(commutative=True),
    ),
    (
        "minimum",
        _g_minmax(lambda x, y: x < y),
        Lowering(c="(({0} < {1} || {0} != {0}) ? {0} : {1})", c_int="({0} < {1} ? {0} : {1})", c_bool=_AND),
        dict(commutative=True),
    ),
    (
        "floor_divide",
        _g_zero,
        Lowering(c=_FLOOR_DIVIDE, c_int="(({T})oarlock_floordiv((int64_t){0}, (int64_t){1}))"),
        {},
    ),
    (
        "remainder",
        _g_remainder,
        Lowering(c=_REMAINDER, c_int="(({T})oarlock_mod((int64_t){0}, (int64_t){1}))"),
        {},
    ),
]:
    primitive(
        _name,
        _make_binary_infer(_name, False),
        _grad,
        elementwise=True,
        lower=_lower,
        family="binary",
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


def _g_where(n, g):
    c, x, y = n.inputs
    M = _m_()
    gx = sum_to(M.where(c, g[0], 0.0), x.shape) if not x.stop_gradient else None
    gy = sum_to(M.where(c, 0.0, g[0]), y.shape) if not y.stop_gradient else None
    return [None, gx, gy]


primitive("where", _where_infer, _g_where, elementwise=True, lower="({0} ? {1} : {2})")


def _g_cast(n, g):
    x = n.inputs[0]
    return [g[0].astype(x.dtype) if _dt.is_floating(x.dtype) else None]


primitive(
    "cast", lambda ins, a: [(ins[0].shape, a["dtype"])], _g_cast, lower=Lowering("cast"), sharding=_sh.cast
)


# reductions -------------------------------------------------------------------------------
def _keep(g: Tensor, x: Tensor, attrs: dict[str, Any]) -> Tensor:
    if attrs["keepdim"]:
        return g
    shape = tuple(1 if i in attrs["axes"] else s for i, s in enumerate(x.shape))
    return g.reshape(shape)


def _g_sum(n, g):
    x = n.inputs[0]
    return [_keep(g[0], x, n.attrs).expand(x.shape)]


def _g_prod(n, g):
    x = n.inputs[0]
    o = _keep(n.out(), x, n.attrs)
    return [_keep(g[0], x, n.attrs) * o / x]


def _g_maxmin(n, g):
    M = _m_()
    x = n.inputs[0]
    o = _keep(n.out(), x, n.attrs)
    mask = (x == o).astype(x.dtype)
    cnt = M.sum(mask, axis=n.attrs["axes"], keepdim=True)
    return [_keep(g[0], x, n.attrs) * mask / cnt]


_RED = dict(family="reduce")
primitive(
    "sum",
    _reduce_infer,
    _g_sum,
    lower=Lowering("reduce"),
    amp="deny",
    sharding=_sh.reduction("one", "sum"),
    **_RED,
)
primitive("prod", _reduce_infer, _g_prod, amp="deny", sharding=_sh.reduction(kept=True), **_RED)
primitive(
    "max", _reduce_infer, _g_maxmin, lower=Lowering("reduce"), sharding=_sh.reduction("", "max"), **_RED
)
primitive(
    "min", _reduce_infer, _g_maxmin, lower=Lowering("reduce"), sharding=_sh.reduction("", "min"), **_RED
)
_INDEX = "an integer index: nothing to differentiate"
_ARG = _sh.reduction(kept=True, axis_attr="axis")
primitive("argmax", _arg_infer, None, no_grad=_INDEX, sharding=_ARG, **_RED)
primitive("argmin", _arg_infer, None, no_grad=_INDEX, sharding=_ARG, **_RED)


# linear algebra ----------------------------------------------------------------------------
def _g_matmul(n, g):
    """ga = g b^T, gb = a^T g, through the transposed-operand composite ``matmul_t`` (a
    plugin's fused kernel reads the operands transposed in place; the decomposition copies)."""
    a, b = n.inputs
    M = _m_()
    return [
        M.matmul_t(g[0], b, False, True) if not a.stop_gradient else None,
        M.matmul_t(a, g[0], True, False) if not b.stop_gradient else None,
    ]


primitive("matmul", _matmul_infer, _g_matmul, amp="allow", sharding=_sh.matmul, flops=matmul_flops)


# layout ------------------------------------------------------------------------------------
def _g_permute(n, g):
    perm = n.attrs["perm"]
    inv = tuple(int(i) for i in np.argsort(perm))
    return [g[0].transpose(inv)]


primitive(
    "permute",
    lambda ins, a: [(tuple(ins[0].shape[p] for p in a["perm"]), ins[0].dtype)],
    _g_permute,
    sharding=_sh.permute,
)
primitive(
    "expand",
    lambda ins, a: [(a["shape"], ins[0].dtype)],
    lambda n, g: [sum_to(g[0], n.inputs[0].shape)],
    lower=Lowering("pass"),
    sharding=_sh.expand,
)


def _slice_infer(ins, a):
    return [
        (tuple(_slice_len(s, e, st) for s, e, st in zip(a["starts"], a["stops"], a["steps"])), ins[0].dtype)
    ]


def _g_slice(n, g):
    """Scatter the gradient back: interleave zeros for steps > 1, then pad."""
    from .shape import pad_raw

    x = n.inputs[0]
    r = g[0]
    pads = []
    for d, (s, st, size) in enumerate(zip(n.attrs["starts"], n.attrs["steps"], x.shape)):
        length = r.shape[d]
        if st > 1 and length > 0:
            shp = r.shape
            r = r.reshape(shp[: d + 1] + (1,) + shp[d + 1 :])
            zp = [(0, 0)] * len(r.shape)
            zp[d + 1] = (0, st - 1)
            r = pad_raw(r, tuple(zp), 0.0)
            r = r.reshape(shp[:d] + (length * st,) + shp[d + 1 :])
            span = length * st
        else:
            span = length
        after = size - s - span
        if after < 0:  # the last interleaved zeros run past the end
            from .shape import slice_raw

            starts = [0] * len(r.shape)
            stops = list(r.shape)
            stops[d] = r.shape[d] + after
            r = slice_raw(r, tuple(starts), tuple(stops), (1,) * len(r.shape))
            after = 0
        pads.append((s, after))
    return [pad_raw(r, tuple(pads), 0.0)]


primitive("slice", _slice_infer, _g_slice, sharding=_sh.slice_)


def _concat_infer(ins, a):
    ax = a["axis"]
    shape = list(ins[0].shape)
    shape[ax] = sum(t.shape[ax] for t in ins)
    return [(tuple(shape), ins[0].dtype)]


def _g_concat(n, g):
    from .shape import slice_raw

    ax = n.attrs["axis"]
    out = []
    start = 0
    for t in n.inputs:
        starts = [0] * len(t.shape)
        stops = list(g[0].shape)
        starts[ax] = start
        stops[ax] = start + t.shape[ax]
        start += t.shape[ax]
        out.append(slice_raw(g[0], tuple(starts), tuple(stops), (1,) * len(t.shape)))
    return out


primitive("concat", _concat_infer, _g_concat, sharding=_sh.concat)


def _pad_infer(ins, a):
    return [(tuple(s + b + e for s, (b, e) in zip(ins[0].shape, a["pads"])), ins[0].dtype)]


def _g_pad(n, g):
    from .shape import slice_raw

    x = n.inputs[0]
    starts = tuple(b for b, _ in n.attrs["pads"])
    stops = tuple(b + s for (b, _), s in zip(n.attrs["pads"], x.shape))
    return [slice_raw(g[0], starts, stops, (1,) * len(x.shape))]


primitive("pad", _pad_infer, _g_pad, sharding=_sh.pad)


# indexing ----------------------------------------------------------------------------------
def _gather_infer(ins, a):
    x, idx = ins
    ax = a["axis"]
    return [(x.shape[:ax] + idx.shape + x.shape[ax + 1 :], x.dtype)]


def _g_gather(n, g):
    from .creation import zeros_like
    from .indexing import gather, scatter_add

    x, idx = n.inputs
    inverse = getattr(idx, "_inverse", None)
    if inverse is not None:  # a permutation (``indexing.permutation``): gather by its inverse
        return [gather(g[0], inverse, axis=n.attrs["axis"]), None]
    return [scatter_add(zeros_like(x), idx, g[0], axis=n.attrs["axis"]), None]


def _g_scatter_add(n, g):
    from .indexing import gather

    x, idx, src = n.inputs
    return [g[0], None, gather(g[0], idx, axis=n.attrs["axis"])]


def _g_scatter(n, g):
    from .creation import zeros_like
    from .indexing import gather, scatter

    x, idx, src = n.inputs
    return [
        scatter(g[0], idx, zeros_like(src), axis=n.attrs["axis"]),
        None,
        gather(g[0], idx, axis=n.attrs["axis"]),
    ]


# NOTE: the loop IR reads a gather along the row whose index is a constant rotation of the
# row (rotary's rotate-half, roll) as a load at the rotated column (``compiler.ir.Builder.take``)
primitive("gather", _gather_infer, _g_gather, lower=Lowering("take"), sharding=_sh.gather)
_SCATTER = "writes rows by index anywhere in the output: replicated"
primitive("scatter_add", lambda ins, a: [(ins[0].shape, ins[0].dtype)], _g_scatter_add, no_sharding=_SCATTER)
primitive("scatter", lambda ins, a: [(ins[0].shape, ins[0].dtype)], _g_scatter, no_sharding=_SCATTER)

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
primitive(
    "copy",
    _same,
    lambda n, g: [g[0]],
    lower=Lowering("pass"),
    family="unary",
    sharding=_sh.elementwise("one"),
)
