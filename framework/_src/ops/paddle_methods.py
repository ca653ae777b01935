"""Tensor methods and in-place variants where Paddle has them (``x.var()``, ``x.topk(k)``,
``x.clip_(0, 1)``), attached after every op is defined. Each method is the function of the
same name; an in-place variant (trailing ``_``) computes it and rebinds the tensor to the
result, as ``x.add_`` does."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..tensor import Tensor
from . import complex as CX
from . import creation, indexing, shape, unary
from . import math as M
from . import random as R
from .composites import (
    activation,
    arith,
    bessel,
    bitwise,
    float_bits,
    gamma_functions,
    grids,
    inplace_forms,
    joining,
    manipulation,
    masked_writes,
    nan_stats,
    norm,
    pointwise,
    products,
    random_fills,
    sampling,
    scans,
    scatter_reduce,
    sorting,
    special,
    strided,
)
from .methods import inplace


def _uniform_(self: Tensor, min: float = -1.0, max: float = 1.0, seed: int = 0) -> Tensor:
    return R.uniform(self.shape, dtype=self.dtype, min=min, max=max, seed=seed, device=self.device)


def _normal_(self: Tensor, mean: float = 0.0, std: float = 1.0) -> Tensor:
    return R.normal(mean, std, self.shape, dtype=self.dtype, device=self.device)


def _exponential_(self: Tensor, lam: float = 1.0) -> Tensor:
    u = R.rand(self.shape, dtype=self.dtype, device=self.device)
    return -M.log(1.0 - u) * (1.0 / lam)


def _scale(
    self: Tensor, scale: float = 1.0, bias: float = 0.0, bias_after_scale: bool = True, act: Any = None
) -> Tensor:
    return arith.scale(self, scale, bias, bias_after_scale)


METHODS: dict[str, Callable[..., Any]] = {
    # statistics and reductions
    "var": arith.var,
    "std": arith.std,
    "logsumexp": norm.logsumexp,
    "cumsum": arith.cumsum,
    "cumprod": arith.cumprod,
    "nansum": arith.nansum,
    "numel_tensor": manipulation.numel,
    "median": sorting.median,
    "quantile": sorting.quantile,
    "topk": sorting.topk,
    "sort": sorting.sort,
    "argsort": sorting.argsort,
    "kthvalue": sorting.kthvalue,
    "mode": sorting.mode,
    "unique": sorting.unique,
    "unique_consecutive": sorting.unique_consecutive,
    # elementwise
    "atan": special.atan,
    "asin": special.asin,
    "acos": special.acos,
    "tan": special.tan,
    "sinh": special.sinh,
    "cosh": special.cosh,
    "asinh": special.asinh,
    "acosh": special.acosh,
    "atanh": special.atanh,
    "lgamma": special.lgamma,
    "digamma": special.digamma,
    "erfinv": special.erfinv,
    "logit": special.logit,
    "log10": special.log10,
    "log2": M.log2,
    "log1p": M.log1p,
    "expm1": M.expm1,
    "trunc": M.trunc,
    "rad2deg": special.rad2deg,
    "deg2rad": special.deg2rad,
    "sigmoid": activation.sigmoid,
    "lerp": arith.lerp,
    "fmax": arith.fmax,
    "fmin": arith.fmin,
    "gcd": arith.gcd,
    "lcm": arith.lcm,
    "diff": arith.diff,
    "scale": _scale,
    "remainder": M.remainder,
    "mod": M.remainder,
    "floor_divide": M.floor_divide,
    "floor_mod": M.remainder,
    "atan2": special.atan2,
    "isclose": arith.isclose,
    "equal_all": arith.equal_all,
    "allclose": M.allclose,
    "bitwise_and": arith.bitwise_and,
    "bitwise_or": arith.bitwise_or,
    "bitwise_xor": arith.bitwise_xor,
    "bitwise_not": arith.bitwise_not,
    "logical_and": M.logical_and,
    "logical_or": M.logical_or,
    "logical_xor": M.logical_xor,
    "less_than": M.less_than,
    "less_equal": M.less_equal,
    "greater_than": M.greater_than,
    "greater_equal": M.greater_equal,
    "real": arith.real,
    "imag": arith.imag,
    "conj": arith.conj,
    "angle": arith.angle,
    "as_real": CX.as_real,
    "as_complex": CX.as_complex,
    # products
    "mm": M.mm,
    "dot": M.dot,
    "inner": arith.inner,
    "outer": arith.outer,
    "kron": arith.kron,
    "trace": arith.trace,
    "diagonal": manipulation.diagonal,
    "tensordot": manipulation.tensordot,
    "addmm": arith.addmm,
    # manipulation and indexing
    "roll": manipulation.roll,
    "rot90": manipulation.rot90,
    "moveaxis": manipulation.moveaxis,
    "repeat_interleave": manipulation.repeat_interleave,
    "unstack": manipulation.unstack,
    "gather_nd": manipulation.gather_nd,
    "scatter_nd_add": manipulation.scatter_nd_add,
    "strided_slice": manipulation.strided_slice,
    "reverse": manipulation.reverse,
    "scatter": indexing.scatter,
    "scatter_add": scatter_reduce.scatter_add,
    "take_along_axis": indexing.take_along_axis,
    "put_along_axis": scatter_reduce.put_along_axis,
    "masked_select": indexing.masked_select,
    "nonzero": indexing.nonzero,
    "index_sample": sorting.index_sample,
    "where": lambda self, x=None, y=None: indexing.where(self, x, y),
    "is_floating_point": manipulation.is_floating_point,
    "is_integer": manipulation.is_integer,
    "is_complex": manipulation.is_complex,
    "is_empty": manipulation.is_empty,
    "rank": manipulation.rank,
    "broadcast_tensors": lambda self, *others: manipulation.broadcast_tensors([self, *others]),
    "multinomial": sampling.multinomial,
    "zeros_like": creation.zeros_like,
    "ones_like": creation.ones_like,
    "tril": creation.tril,
    "triu": creation.triu,
    "stack": lambda self, *others, axis=0: shape.stack([self, *others], axis=axis),
}

#: in-place variants: name -> (function, keeps the shape)
INPLACE: dict[str, tuple[Callable[..., Tensor], bool]] = {
    "clip": (M.clip, True),
    "clamp": (M.clip, True),
    "exp": (M.exp, True),
    "sqrt": (M.sqrt, True),
    "rsqrt": (M.rsqrt, True),
    "reciprocal": (M.reciprocal, True),
    "floor": (M.floor, True),
    "ceil": (M.ceil, True),
    "round": (M.round, True),
    "trunc": (M.trunc, True),
    "tanh": (M.tanh, True),
    "abs": (M.abs, True),
    "neg": (M.neg, True),
    "sin": (M.sin, True),
    "cos": (M.cos, True),
    "log": (M.log, True),
    "sigmoid": (activation.sigmoid, True),
    "square": (M.square, True),
    "divide": (M.divide, True),
    "pow": (M.pow, True),
    "remainder": (M.remainder, True),
    "mod": (M.remainder, True),
    "floor_divide": (M.floor_divide, True),
    "lerp": (arith.lerp, True),
    "erfinv": (special.erfinv, True),
    "cumsum": (arith.cumsum, True),
    "scale": (_scale, True),
    "masked_fill": (indexing.masked_fill, True),
    "scatter": (indexing.scatter, True),
    "put_along_axis": (scatter_reduce.put_along_axis, True),
    "uniform": (_uniform_, True),
    "normal": (_normal_, True),
    "exponential": (_exponential_, True),
    "squeeze": (shape.squeeze, False),
    "unsqueeze": (shape.unsqueeze, False),
    "flatten": (shape.flatten, False),
    "reshape": (lambda self, *s: self.reshape(*s), False),
    "tril": (creation.tril, True),
    "triu": (creation.triu, True),
    "logit": (special.logit, True),
    "atan": (special.atan, True),
    "tan": (special.tan, True),
    "digamma": (special.digamma, True),
    "lgamma": (special.lgamma, True),
    "log1p": (M.log1p, True),
    "expm1": (M.expm1, True),
}

#: ``&``, ``|``, ``^``, ``~``: bitwise on integers, logical on bools; floats raise (as Paddle's
#: bitwise ops do), never a silent cast to bool
OPERATORS: dict[str, Any] = {
    "__and__": arith.bitwise_and,
    "__or__": arith.bitwise_or,
    "__xor__": arith.bitwise_xor,
    "__rand__": lambda self, other: arith.bitwise_and(other, self),
    "__ror__": lambda self, other: arith.bitwise_or(other, self),
    "__rxor__": lambda self, other: arith.bitwise_xor(other, self),
    "__invert__": arith.bitwise_not,
}

# Paddle parity (issue 40): the new functions as methods too
METHODS.update(
    {
        "take": joining.take,
        "ravel": joining.ravel,
        "narrow": joining.narrow,
        "unflatten": joining.unflatten,
        "tensor_split": joining.tensor_split,
        "hsplit": joining.hsplit,
        "vsplit": joining.vsplit,
        "dsplit": joining.dsplit,
        "signbit": pointwise.signbit,
        "copysign": pointwise.copysign,
        "hypot": pointwise.hypot,
        "ldexp": pointwise.ldexp,
        "logaddexp": pointwise.logaddexp,
        "heaviside": pointwise.heaviside,
        "frac": pointwise.frac,
        "sgn": pointwise.sgn,
        "nan_to_num": pointwise.nan_to_num,
        "sinc": pointwise.sinc,
        "isin": pointwise.isin,
        "logcumsumexp": scans.logcumsumexp,
        "cummax": scans.cummax,
        "cummin": scans.cummin,
        "trapezoid": scans.trapezoid,
        "nanmean": scans.nanmean,
        "renorm": scans.renorm,
        "diag_embed": grids.diag_embed,
        "vander": grids.vander,
        "select_scatter": masked_writes.select_scatter,
        "slice_scatter": masked_writes.slice_scatter,
        "diagonal_scatter": masked_writes.diagonal_scatter,
        "index_fill": masked_writes.index_fill,
        "masked_scatter": masked_writes.masked_scatter,
        "fill_diagonal_tensor": masked_writes.fill_diagonal_tensor,
        "reduce_as": scans.reduce_as,
        "gammaln": special.gammaln,
        "multigammaln": special.multigammaln,
        "element_size": lambda self: self.dtype.itemsize,
        "repeat": lambda self, *repeats: shape.tile(
            self,
            list(repeats[0])
            if len(repeats) == 1 and isinstance(repeats[0], (list, tuple))
            else list(repeats),
        ),
        "bucketize": grids.bucketize,
        "split_with_sizes": lambda self, split_sizes, dim=0: shape.split(self, list(split_sizes), dim),
    }
)
INPLACE.update(
    {
        "copysign": (pointwise.copysign, True),
        "hypot": (pointwise.hypot, True),
        "ldexp": (pointwise.ldexp, True),
        "frac": (pointwise.frac, True),
        "sgn": (pointwise.sgn, True),
        "nan_to_num": (pointwise.nan_to_num, True),
        "sinc": (pointwise.sinc, True),
        "renorm": (scans.renorm, True),
        "index_fill": (masked_writes.index_fill, True),
        "masked_scatter": (masked_writes.masked_scatter, True),
        "fill_diagonal_tensor": (masked_writes.fill_diagonal_tensor, True),
        "fill_diagonal": (masked_writes.fill_diagonal, True),
        "gammaln": (special.gammaln, True),
        "multigammaln": (special.multigammaln, True),
    }
)

del METHODS["numel_tensor"]
for _k, _v in OPERATORS.items():
    setattr(Tensor, _k, _v)
for _k, _v in METHODS.items():
    if not hasattr(Tensor, _k):
        setattr(Tensor, _k, _v)
for _k, (_fn, _same) in INPLACE.items():
    if not hasattr(Tensor, _k + "_"):
        setattr(Tensor, _k + "_", inplace(_fn, _k + "_", _same))

# Paddle parity of the tensor-op examples (issue 40, parity-a)
for _k, _v in {
    "bitwise_invert": arith.bitwise_not,
    "bitwise_left_shift": bitwise.bitwise_left_shift,
    "bitwise_right_shift": bitwise.bitwise_right_shift,
    "frexp": float_bits.frexp,
    "nextafter": float_bits.nextafter,
    "nanmedian": nan_stats.nanmedian,
    "nanquantile": nan_stats.nanquantile,
    "msort": sorting.msort,
    "argwhere": sorting.argwhere,
    "scatter_reduce": scatter_reduce.scatter_reduce,
    "as_strided": strided.as_strided,
    "unfold": strided.unfold,
    "view_as": strided.view_as,
    "set_": strided.set_,
    "resize_": strided.resize_,
    "_is_shared_buffer_with": strided.is_shared_buffer_with,
}.items():
    if not hasattr(Tensor, _k):
        setattr(Tensor, _k, _v)


def _view(self: Tensor, *shape_or_dtype: Any, **kw: Any) -> Tensor:
    """``x.view(shape)`` reshapes; ``x.view(dtype)`` reads the bytes as ``dtype`` (Paddle's)."""
    arg = shape_or_dtype[0] if len(shape_or_dtype) == 1 else None
    if arg is not None and not isinstance(arg, (list, tuple, int, Tensor)):
        return strided.view(self, arg)
    return Tensor.reshape(self, *shape_or_dtype, **kw)


Tensor.view = _view
for _k, (_fn, _same) in {
    "scatter_reduce": (scatter_reduce.scatter_reduce, True),
    "bitwise_invert": (arith.bitwise_not, True),
    "bitwise_left_shift": (bitwise.bitwise_left_shift, True),
    "bitwise_right_shift": (bitwise.bitwise_right_shift, True),
    "cauchy": (random_fills.cauchy, True),
    "geometric": (random_fills.geometric, True),
    "log_normal": (random_fills.log_normal, True),
    "random": (random_fills.random_integers, True),
    "bernoulli": (random_fills.bernoulli_fill, True),
}.items():
    setattr(Tensor, _k + "_", inplace(_fn, _k + "_", _same))

# Paddle's in-place forms of math functions (``x.log2_()``, ``paddle.gcd_(x, y)``): the result
# stored back into the tensor, its dtype kept (``inplace``)
for _k, _fn in {
    "cumprod": arith.cumprod,
    "gcd": arith.gcd,
    "lcm": arith.lcm,
    "floor_mod": M.remainder,
    "log10": special.log10,
    "log2": unary.log2,
    "i0": bessel.i0,
    "polygamma": gamma_functions.polygamma,
    "gammainc": gamma_functions.gammainc,
    "gammaincc": gamma_functions.gammaincc,
    "addmm": products.addmm,
    "baddbmm": products.baddbmm,
    "index_add": scatter_reduce.index_add,
    "index_put": scatter_reduce.index_put,
    # paddle.tensor.ops's trigonometric in-place functions
    "asin": special.asin,
    "acos": special.acos,
    "sinh": special.sinh,
    "cosh": special.cosh,
    "asinh": special.asinh,
    "acosh": special.acosh,
    "atanh": special.atanh,
    "erf": unary.erf,
}.items():
    if not hasattr(Tensor, _k + "_"):
        setattr(Tensor, _k + "_", inplace(_fn, _k + "_"))
Tensor.index_add = scatter_reduce.index_add
Tensor.index_put = scatter_reduce.index_put
Tensor.true_divide = M.divide
Tensor.view_as_complex = CX.as_complex
Tensor.view_as_real = CX.as_real

# paddle.tensor's remaining in-place names (issue 40): the comparisons and logical ops (x becomes
# bool), bitwise ops, cast_/t_/transpose_/where_/scatter_add_
for _k, _fn in inplace_forms.INPLACE_FORMS.items():
    if not hasattr(Tensor, _k):
        setattr(Tensor, _k, _fn)
