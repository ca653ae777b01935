"""Converters of ONNX's element-wise ops: arithmetic, comparisons, logic, activations."""

from __future__ import annotations

import functools

import numpy as np

import framework as fw
from framework.nn import functional as F

from ._registry import Node, converter


def _binary(fn):  # type: ignore[no-untyped-def]
    return lambda n: fn(n.tensor(0), n.tensor(1))


for _op, _fn in {
    "Add": fw.add,
    "Sub": fw.subtract,
    "Mul": fw.multiply,
    "Equal": fw.equal,
    "Greater": fw.greater_than,
    "Less": fw.less_than,
    "GreaterOrEqual": fw.greater_equal,
    "LessOrEqual": fw.less_equal,
    "And": fw.logical_and,
    "Or": fw.logical_or,
    "Xor": fw.logical_xor,
    "BitwiseAnd": fw.bitwise_and,
    "BitwiseOr": fw.bitwise_or,
    "BitwiseXor": fw.bitwise_xor,
}.items():
    converter(_op)(_binary(_fn))


def _int(t: fw.Tensor) -> bool:
    return np.dtype(t.dtype).kind in "iu"


@converter("Div")
def _div(n: Node) -> fw.Tensor:
    a, b = n.tensor(0), n.tensor(1)
    if _int(a):  # ONNX: integer division truncates toward zero
        q = fw.floor_divide(fw.abs(a), fw.abs(b))
        neg = fw.logical_xor(fw.less_than(a, fw.zeros_like(a)), fw.less_than(b, fw.zeros_like(b)))
        return fw.where(neg, fw.negative(q), q)
    return fw.divide(a, b)


@converter("Pow")
def _pow(n: Node) -> fw.Tensor:
    a, b = n.tensor(0), n.tensor(1)
    if b.dtype != a.dtype:
        b = b.astype(a.dtype)
    return fw.pow(a, b)


@converter("Mod")
def _mod(n: Node) -> fw.Tensor:
    a, b = n.tensor(0), n.tensor(1)
    if n.attr("fmod", 0):  # C's fmod: the sign of the dividend
        if _int(a):
            r = fw.remainder(fw.abs(a), fw.abs(b))
            return fw.where(fw.less_than(a, fw.zeros_like(a)), fw.negative(r), r)
        return fw.subtract(a, fw.multiply(fw.trunc(fw.divide(a, b)), b))
    return fw.remainder(a, b)


@converter("BitShift")
def _bitshift(n: Node) -> fw.Tensor:
    """x << s is x * 2**s, x >> s is floor(x / 2**s) (arithmetic for signed x); a shift that is
    negative or at least the width gives 0 to the left, the sign fill to the right."""
    a, b = n.tensor(0), n.tensor(1)
    bits = np.dtype(a.dtype).itemsize * 8
    signed = np.dtype(a.dtype).kind == "i"
    zero = fw.zeros_like(b)
    # a right shift of bits-1 on a signed value is its sign fill too (2**(bits-1) overflows)
    top = bits - 1 if signed and n.attr("direction") != "LEFT" else bits
    ok = fw.logical_and(fw.greater_equal(b, zero), fw.less_than(b, fw.full_like(b, top)))
    two = fw.pow(fw.full_like(b, 2), fw.where(ok, b, zero))
    if n.attr("direction") == "LEFT":
        return fw.where(ok, fw.multiply(a, two), fw.zeros_like(a))
    fill = (
        fw.where(fw.less_than(a, fw.zeros_like(a)), fw.full_like(a, -1), fw.zeros_like(a))
        if signed
        else fw.zeros_like(a)
    )
    return fw.where(ok, fw.floor_divide(a, two), fill)


def _variadic(fn):  # type: ignore[no-untyped-def]
    return lambda n: functools.reduce(fn, n.all_tensors())


converter("Max")(_variadic(fw.maximum))
converter("Min")(_variadic(fw.minimum))
converter("Sum")(_variadic(fw.add))


@converter("Mean")
def _mean(n: Node) -> fw.Tensor:
    ts = n.all_tensors()
    return fw.divide(
        functools.reduce(fw.add, ts), fw.full([], float(len(ts)), dtype=ts[0].dtype, device=n.device)
    )


def _unary(fn):  # type: ignore[no-untyped-def]
    return lambda n: fn(n.tensor(0))


for _op, _fn in {
    "Abs": fw.abs,
    "Neg": fw.negative,
    "Exp": fw.exp,
    "Log": fw.log,
    "Sqrt": fw.sqrt,
    "Reciprocal": fw.reciprocal,
    "Floor": fw.floor,
    "Ceil": fw.ceil,
    "Sign": fw.sign,
    "Sin": fw.sin,
    "Cos": fw.cos,
    "Tan": fw.tan,
    "Asin": fw.asin,
    "Acos": fw.acos,
    "Atan": fw.atan,
    "Sinh": fw.sinh,
    "Cosh": fw.cosh,
    "Asinh": fw.asinh,
    "Acosh": fw.acosh,
    "Atanh": fw.atanh,
    "Erf": fw.erf,
    "Relu": F.relu,
    "Sigmoid": F.sigmoid,
    "Tanh": fw.tanh,
    "Softsign": F.softsign,
    "Not": fw.logical_not,
    "BitwiseNot": fw.bitwise_not,
    "IsNaN": fw.isnan,
    "Mish": F.mish,
}.items():
    converter(_op)(_unary(_fn))


@converter("Identity")
def _identity(n: Node) -> object:
    return n.inputs[0]


@converter("Round")
def _round(n: Node) -> fw.Tensor:
    x = n.tensor(0)  # half to even, as ONNX
    lo = fw.floor(x)
    frac = fw.subtract(x, lo)
    half = fw.full([], 0.5, dtype=x.dtype, device=n.device)
    odd = fw.not_equal(fw.remainder(lo, fw.full([], 2.0, dtype=x.dtype, device=n.device)), fw.zeros_like(lo))
    up = fw.logical_or(fw.greater_than(frac, half), fw.logical_and(fw.equal(frac, half), odd))
    return fw.where(up, fw.add(lo, fw.ones_like(lo)), lo)


@converter("Softplus")
def _softplus(n: Node) -> fw.Tensor:
    x = n.tensor(0)
    return fw.log1p(fw.exp(x))


@converter("IsInf")
def _isinf(n: Node) -> fw.Tensor:
    x = n.tensor(0)
    pos, neg = n.attr("detect_positive", 1), n.attr("detect_negative", 1)
    if pos and neg:
        return fw.isinf(x)
    if pos:
        return fw.isposinf(x)
    if neg:
        return fw.isneginf(x)
    return fw.zeros(x.shape, dtype="bool", device=n.device)


def _scalar(n: Node, v: float, like: fw.Tensor) -> fw.Tensor:
    return fw.full([], v, dtype=like.dtype, device=n.device)


@converter("LeakyRelu")
def _leaky(n: Node) -> fw.Tensor:
    return F.leaky_relu(n.tensor(0), n.attr("alpha", 0.01))


@converter("Elu")
def _elu(n: Node) -> fw.Tensor:
    return F.elu(n.tensor(0), n.attr("alpha", 1.0))


@converter("Celu")
def _celu(n: Node) -> fw.Tensor:
    return F.celu(n.tensor(0), n.attr("alpha", 1.0))


@converter("Selu")
def _selu(n: Node) -> fw.Tensor:
    x = n.tensor(0)
    alpha, gamma = n.attr("alpha", 1.67326319217681884765625), n.attr("gamma", 1.05070102214813232421875)
    neg = fw.multiply(_scalar(n, alpha, x), fw.subtract(fw.exp(x), _scalar(n, 1.0, x)))
    return fw.multiply(_scalar(n, gamma, x), fw.where(fw.greater_than(x, _scalar(n, 0.0, x)), x, neg))


@converter("HardSigmoid")
def _hardsigmoid(n: Node) -> fw.Tensor:
    x = n.tensor(0)
    y = fw.add(fw.multiply(x, _scalar(n, n.attr("alpha", 0.2), x)), _scalar(n, n.attr("beta", 0.5), x))
    return fw.clip(y, 0.0, 1.0)


@converter("HardSwish")
def _hardswish(n: Node) -> fw.Tensor:
    x = n.tensor(0)
    return fw.multiply(x, fw.clip(fw.add(fw.multiply(x, _scalar(n, 1 / 6, x)), _scalar(n, 0.5, x)), 0.0, 1.0))


@converter("ThresholdedRelu")
def _thresholded(n: Node) -> fw.Tensor:
    x = n.tensor(0)
    return fw.where(fw.greater_than(x, _scalar(n, n.attr("alpha", 1.0), x)), x, fw.zeros_like(x))


@converter("PRelu")
def _prelu(n: Node) -> fw.Tensor:
    x, slope = n.tensor(0), n.tensor(1)
    return fw.where(fw.less_than(x, fw.zeros_like(x)), fw.multiply(x, slope), x)


@converter("Gelu")
def _gelu(n: Node) -> fw.Tensor:
    return F.gelu(n.tensor(0), approximate=n.attr("approximate", "none") == "tanh")


@converter("Shrink")
def _shrink(n: Node) -> fw.Tensor:
    x = n.tensor(0)
    lambd, bias = n.attr("lambd", 0.5), n.attr("bias", 0.0)
    lo = fw.add(x, _scalar(n, bias, x))
    hi = fw.subtract(x, _scalar(n, bias, x))
    zero = fw.zeros_like(x)
    return fw.where(
        fw.less_than(x, _scalar(n, -lambd, x)),
        lo,
        fw.where(fw.greater_than(x, _scalar(n, lambd, x)), hi, zero),
    )


@converter("Clip")
def _clip(n: Node) -> fw.Tensor:
    x = n.tensor(0)
    lo = n.tensor(1) if n.has(1) else (_scalar(n, n.attrs["min"], x) if "min" in n.attrs else None)
    hi = n.tensor(2) if n.has(2) else (_scalar(n, n.attrs["max"], x) if "max" in n.attrs else None)
    if lo is not None:
        x = fw.maximum(x, lo)
    if hi is not None:
        x = fw.minimum(x, hi)
    return x


@converter("Where")
def _where(n: Node) -> fw.Tensor:
    return fw.where(n.tensor(0), n.tensor(1), n.tensor(2))


@converter("Cast", "CastLike")
def _cast(n: Node) -> fw.Tensor:
    x = n.tensor(0)
    if n.op_type == "CastLike":
        dt = n.inputs[1].dtype
    else:
        from ._model import np_dtype

        dt = np_dtype(n.attr("to"), f"Cast '{n.proto.name}'")
    if np.dtype(dt) == np.dtype(x.dtype):
        return x
    if str(dt).startswith("float8") and n.attrs.get("saturate", 1):  # ONNX's default: the OCP saturating mode
        from framework.nn.quant import float8_saturate

        floating = str(x.dtype).startswith(("float", "bfloat")) and not str(x.dtype).startswith("float8")
        return float8_saturate(x if floating else fw.cast(x, "float32"), dt)
    return fw.cast(x, dt)
