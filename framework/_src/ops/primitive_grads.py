"""The gradient rules of the primitives, attached to their OpDefs (``base.attach_grad``).

A rule is written with framework ops (so it is differentiable itself, and higher-order
gradients work): the user functions of ``math``, ``creation``, ``shape`` and ``indexing``, which
are built on the primitives, hence this module is loaded after them while the primitives
themselves (``primitives``) come first, declared with ``grad=LATER``.
"""

from __future__ import annotations

import math as _m
from typing import Any

import numpy as np

from .. import dtypes as _dt
from ..tensor import Tensor
from . import math as M
from .base import LATER, OPS, attach_grad
from .complex import conj_if_complex as _cj
from .creation import zeros_like
from .indexing import scatter_rows, take_rows
from .math import sum as _sum
from .shape import pad_raw, slice_raw

# -- gradient helpers -----------------------------------------------------------------------


def sum_to(g: Tensor, shape: tuple[int, ...]) -> Tensor:
    """Sum a broadcast gradient back to ``shape``."""
    if g.shape == shape:
        return g
    lead = len(g.shape) - len(shape)
    axes = tuple(range(lead)) + tuple(
        i + lead for i, s in enumerate(shape) if s == 1 and g.shape[i + lead] != 1
    )
    r = _sum(g, axis=axes, keepdim=True) if axes else g
    return r.reshape(shape)


# unary -------------------------------------------------------------------------------------
def _g_neg(n, g):
    return [-g[0]]


def _g_abs(n, g):
    return [g[0] * M.sign(n.inputs[0])]


def _g_exp(n, g):
    return [g[0] * _cj(n.out())]


def _g_log(n, g):
    return [g[0] / _cj(n.inputs[0])]


def _g_sqrt(n, g):
    return [g[0] / (_cj(n.out()) * 2.0)]


def _g_rsqrt(n, g):
    o = n.out()
    return [g[0] * (o * o * o) * -0.5]


def _g_sin(n, g):
    return [g[0] * _cj(M.cos(n.inputs[0]))]


def _g_cos(n, g):
    return [-(g[0] * _cj(M.sin(n.inputs[0])))]


def _g_tanh(n, g):
    o = n.out()
    return [g[0] * _cj(1.0 - o * o)]


def _g_erf(n, g):
    x = n.inputs[0]
    return [g[0] * (M.exp(-(x * x)) * (2.0 / _m.sqrt(_m.pi)))]


def _g_zero(n, g):
    """Piecewise-constant ops (floor, ceil, sign, floor_divide): a zero gradient, not None,
    as Paddle and PyTorch give."""
    return [zeros_like(t) if not t.stop_gradient else None for t in n.inputs]


for _name, _grad in [
    ("neg", _g_neg),
    ("abs", _g_abs),
    ("exp", _g_exp),
    ("log", _g_log),
    ("sqrt", _g_sqrt),
    ("rsqrt", _g_rsqrt),
    ("sin", _g_sin),
    ("cos", _g_cos),
    ("tanh", _g_tanh),
    ("erf", _g_erf),
    ("floor", _g_zero),
    ("ceil", _g_zero),
    ("sign", _g_zero),
]:
    attach_grad(_name, _grad)


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
        sum_to(g[0] * _cj(y), x.shape) if not x.stop_gradient else None,
        sum_to(g[0] * _cj(x), y.shape) if not y.stop_gradient else None,
    ]


def _g_div(n, g):
    x, y = n.inputs
    gx = g[0] / _cj(y)
    return [
        sum_to(gx, x.shape) if not x.stop_gradient else None,
        sum_to(-(gx * _cj(x)) / _cj(y), y.shape) if not y.stop_gradient else None,
    ]


def _g_pow(n, g):
    x, y = n.inputs
    gx = gy = None
    if not x.stop_gradient:
        gx = sum_to(g[0] * _cj(y * M.pow(x, y - 1.0)), x.shape)
    if not y.stop_gradient:
        safe = x if x.dtype.kind == "c" else M.where(x > 0.0, x, M.ones_like(x))  # complex: log is defined
        gy = sum_to(g[0] * _cj(n.out() * M.log(safe)), y.shape)
    return [gx, gy]


def _g_minmax(pick_x_when):
    def rule(n, g):
        x, y = n.inputs
        half = g[0] * 0.5
        eq = x == y
        first = pick_x_when(x, y)
        gx = M.where(first, g[0], M.where(eq, half, M.zeros_like(half)))
        gy = g[0] - gx
        return [sum_to(gx, x.shape), sum_to(gy, y.shape)]

    return rule


def _g_remainder(n, g):
    x, y = n.inputs
    return [sum_to(g[0], x.shape), sum_to(-(g[0] * M.floor_divide(x, y)), y.shape)]


for _name, _grad in [
    ("add", _g_add),
    ("sub", _g_sub),
    ("mul", _g_mul),
    ("div", _g_div),
    ("pow", _g_pow),
    ("maximum", _g_minmax(lambda x, y: x > y)),
    ("minimum", _g_minmax(lambda x, y: x < y)),
    ("floor_divide", _g_zero),
    ("remainder", _g_remainder),
]:
    attach_grad(_name, _grad)


def _g_where(n, g):
    c, x, y = n.inputs
    gx = sum_to(M.where(c, g[0], 0.0), x.shape) if not x.stop_gradient else None
    gy = sum_to(M.where(c, 0.0, g[0]), y.shape) if not y.stop_gradient else None
    return [None, gx, gy]


attach_grad("where", _g_where)


def _g_cast(n, g):
    x = n.inputs[0]
    return [g[0].astype(x.dtype) if _dt.is_floating(x.dtype) or x.dtype.kind == "c" else None]


attach_grad("cast", _g_cast)


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
    return [_keep(g[0], x, n.attrs) * _cj(o / x)]


def _g_maxmin(n, g):
    x = n.inputs[0]
    o = _keep(n.out(), x, n.attrs)
    mask = (x == o).astype(x.dtype)
    cnt = M.sum(mask, axis=n.attrs["axes"], keepdim=True)
    return [_keep(g[0], x, n.attrs) * mask / cnt]


attach_grad("sum", _g_sum)
attach_grad("prod", _g_prod)
attach_grad("max", _g_maxmin)
attach_grad("min", _g_maxmin)


# linear algebra ----------------------------------------------------------------------------
def _g_matmul(n, g):
    """ga = g b^T, gb = a^T g, through the transposed-operand composite ``matmul_t`` (a
    plugin's fused kernel reads the operands transposed in place; the decomposition copies)."""
    a, b = n.inputs
    return [
        M.matmul_t(g[0], _cj(b), False, True) if not a.stop_gradient else None,
        M.matmul_t(_cj(a), g[0], True, False) if not b.stop_gradient else None,
    ]


attach_grad("matmul", _g_matmul)


# layout ------------------------------------------------------------------------------------
def _g_permute(n, g):
    perm = n.attrs["perm"]
    inv = tuple(int(i) for i in np.argsort(perm))
    return [g[0].transpose(inv)]


attach_grad("permute", _g_permute)
attach_grad("expand", lambda n, g: [sum_to(g[0], n.inputs[0].shape)])


def _g_slice(n, g):
    """Scatter the gradient back: interleave zeros for steps > 1, then pad."""
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
            starts = [0] * len(r.shape)
            stops = list(r.shape)
            stops[d] = r.shape[d] + after
            r = slice_raw(r, tuple(starts), tuple(stops), (1,) * len(r.shape))
            after = 0
        pads.append((s, after))
    return [pad_raw(r, tuple(pads), 0.0)]


attach_grad("slice", _g_slice)


def _g_concat(n, g):
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


attach_grad("concat", _g_concat)


def _g_pad(n, g):
    x = n.inputs[0]
    starts = tuple(b for b, _ in n.attrs["pads"])
    stops = tuple(b + s for (b, _), s in zip(n.attrs["pads"], x.shape))
    return [slice_raw(g[0], starts, stops, (1,) * len(x.shape))]


attach_grad("pad", _g_pad)


# indexing ----------------------------------------------------------------------------------
def _g_gather(n, g):
    x, idx = n.inputs
    inverse = getattr(idx, "_inverse", None)
    if inverse is not None:  # a permutation (``indexing.permutation``): gather by its inverse
        return [take_rows(g[0], inverse, n.attrs["axis"]), None]
    if n.attrs.get("wrap"):  # negative indices count from the end: wrapped before the scatter
        idx = M.where(idx < 0, idx + x.shape[n.attrs["axis"]], idx)
    return [scatter_rows("scatter_add", zeros_like(x), idx, g[0], n.attrs["axis"]), None]


def _g_scatter_add(n, g):
    x, idx, src = n.inputs
    return [g[0], None, take_rows(g[0], idx, n.attrs["axis"])]


def _g_scatter(n, g):
    x, idx, src = n.inputs
    return [
        scatter_rows("scatter", g[0], idx, zeros_like(src), n.attrs["axis"]),
        None,
        take_rows(g[0], idx, n.attrs["axis"]),
    ]


attach_grad("gather", _g_gather)
attach_grad("scatter_add", _g_scatter_add)
attach_grad("scatter", _g_scatter)

# creation and memory ---------------------------------------------------------------------
attach_grad("copy", lambda n, g: [g[0]])

_MISSING = sorted(n for n, d in OPS.items() if d.grad is LATER)
if _MISSING:
    raise ImportError(f"[ops] primitives declared with grad=LATER but given no rule here: {_MISSING}")
