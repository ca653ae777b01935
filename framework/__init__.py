"""Oarlock: a deep-learning framework whose core never touches hardware.

>>> import framework as fw
>>> x = fw.to_tensor([[1.0, 2.0], [3.0, 4.0]])
>>> (x @ x).numpy().tolist()
[[7.0, 10.0], [15.0, 22.0]]

Every device, the CPU included, is a plugin found through the ``oarlock.plugins`` entry
point. Switch device by name: ``fw.set_device("opencl")``, ``with fw.device("cpu"):``,
``x.to("opencl:0")`` or ``OARLOCK_DEVICE=opencl``.

Data types are numpy dtypes (``bfloat16`` from ml_dtypes); wherever a dtype is taken, its name
works too (``"float32"``). Floats default to float32 (:func:`set_default_dtype`).

>>> x = fw.to_tensor([1, 2], dtype=fw.int32)
>>> x.dtype == fw.int32, x.astype(fw.float16).dtype
(True, dtype('float16'))
>>> [str(d) for d in (fw.bfloat16, fw.float16, fw.float32, fw.float64)]
['bfloat16', 'float16', 'float32', 'float64']
>>> [str(d) for d in (fw.int8, fw.int16, fw.int32, fw.int64, fw.uint8, fw.bool_)]
['int8', 'int16', 'int32', 'int64', 'uint8', 'bool']
>>> [str(d) for d in (fw.uint16, fw.uint32, fw.uint64)]  # exact, as numpy
['uint16', 'uint32', 'uint64']
>>> (fw.to_tensor([2**32 - 1], dtype=fw.uint32) + 1).tolist()  # wraps modulo 2**32
[0]
>>> [str(d) for d in (fw.float8_e4m3fn, fw.float8_e5m2, fw.float8_e4m3fnuz, fw.float8_e5m2fnuz)]
['float8_e4m3fn', 'float8_e5m2', 'float8_e4m3fnuz', 'float8_e5m2fnuz']
>>> fw.to_tensor([0.3, 500.0]).astype(fw.float8_e4m3fn).astype("float32").tolist()  # storage only
[0.3125, nan]
>>> [str(d) for d in (fw.complex64, fw.complex128)], fw.to_tensor([1 + 2j]).dtype
(['complex64', 'complex128'], dtype('complex64'))
>>> isinstance(fw.float32, fw.dtype)
True

``CONTRACT_VERSION`` is the (major, minor) version of the adapter contract this core
implements; a plugin declares the version it targets, and a major mismatch keeps it out.

>>> fw.plugins()["cpu"].contract == fw.CONTRACT_VERSION
True
"""

from __future__ import annotations

from adapter_api import (
    CONTRACT_VERSION,
    DeviceError,
    DeviceMismatchError,
    KernelError,
    KernelNotFoundError,
    OarlockError,
    OpArgumentError,
    OutOfMemoryError,
    PluginError,
)

from . import compiler  # registers generated kernels for composites (framework.compiler)
from ._src import ops as _ops  # noqa: F401  (defines every op, attaches Tensor methods)
from ._src.autograd import enable_grad, grad, is_grad_enabled, no_grad, set_grad_enabled
from ._src.device import (
    Device,
    Event,
    Stream,
    current_stream,
    device_count,
    devices,
    empty_cache,
    get_device,
    get_device_properties,
    memory_stats,
    reset_peak_memory_stats,
    set_device,
    stream,
    synchronize,
)
from ._src.dispatch import FallbackWarning, fallback_stats, reset_fallback_stats, set_strict_kernels
from ._src.dtypes import (
    DType as _DType,
)
from ._src.dtypes import (  # wide unsigned integers and float8 storage dtypes
    bfloat16,
    bool_,
    complex64,
    complex128,
    float8_e4m3fn,
    float8_e4m3fnuz,
    float8_e5m2,
    float8_e5m2fnuz,
    float16,
    float32,
    float64,
    get_default_dtype,
    int8,
    int16,
    int32,
    int64,
    set_default_dtype,
    uint8,
    uint16,
    uint32,
    uint64,
)
from ._src.ops.base import path_stats as op_path_stats
from ._src.ops.complex import as_complex, as_real, complex, polar
from ._src.ops.creation import (
    arange,
    empty,
    empty_like,
    eye,
    full,
    full_like,
    linspace,
    ones,
    ones_like,
    tril,
    triu,
    zeros,
    zeros_like,
)
from ._src.ops.indexing import (
    gather,
    index_select,
    masked_fill,
    masked_select,
    nonzero,
    put_along_axis,
    scatter,
    scatter_add,
    take_along_axis,
    where,
)
from ._src.ops.math import (
    abs,
    add,
    all,
    allclose,
    amax,
    amin,
    any,
    argmax,
    argmin,
    cast,
    ceil,
    clip,
    cos,
    count_nonzero,
    divide,
    dot,
    equal,
    erf,
    exp,
    expm1,
    floor,
    floor_divide,
    greater_equal,
    greater_than,
    isfinite,
    isinf,
    isnan,
    less_equal,
    less_than,
    log,
    log1p,
    log2,
    logical_and,
    logical_not,
    logical_or,
    logical_xor,
    matmul,
    max,
    maximum,
    mean,
    min,
    minimum,
    mm,
    mod,
    multiply,
    neg,
    not_equal,
    pow,
    prod,
    reciprocal,
    remainder,
    round,
    rsqrt,
    sign,
    sin,
    sqrt,
    square,
    subtract,
    sum,
    tanh,
    trunc,
)
from ._src.ops.padding import pad
from ._src.ops.random import (
    Generator,
    bernoulli,
    get_rng_state,
    manual_seed,
    normal,
    rand,
    randint,
    randn,
    randperm,
    seed,
    set_rng_state,
    uniform,
)
from ._src.ops.shape import (
    broadcast_to,
    cat,
    chunk,
    concat,
    expand,
    expand_as,
    flatten,
    flip,
    permute,
    reshape,
    split,
    squeeze,
    stack,
    swapaxes,
    t,
    tile,
    transpose,
    unbind,
    unsqueeze,
)
from ._src.plugins import register_plugin
from ._src.tensor import Size, Tensor, from_dlpack, to_tensor

# isort: split
# Paddle's tensor functions added for API breadth (issue 17); each defined once in _src/ops.
from ._src.ops.composites.arith import (
    add_n,
    addmm,
    angle,
    bitwise_and,
    bitwise_not,
    bitwise_or,
    bitwise_xor,
    conj,
    cumprod,
    cumsum,
    diff,
    equal_all,
    fmax,
    fmin,
    gcd,
    imag,
    increment,
    inner,
    isclose,
    kron,
    lcm,
    lerp,
    multiplex,
    nansum,
    outer,
    real,
    scale,
    std,
    trace,
    var,
)
from ._src.ops.composites.manipulation import (
    broadcast_shape,
    broadcast_tensors,
    diag,
    diagflat,
    diagonal,
    einsum,
    gather_nd,
    is_complex,
    is_empty,
    is_floating_point,
    is_integer,
    is_tensor,
    meshgrid,
    moveaxis,
    numel,
    rank,
    repeat_interleave,
    reverse,
    roll,
    rot90,
    scatter_nd,
    scatter_nd_add,
    shape,
    shard_index,
    slice,
    strided_slice,
    tensordot,
    unstack,
)
from ._src.ops.composites.norm import logsumexp
from ._src.ops.composites.sampling import multinomial, poisson, randint_like, standard_normal
from ._src.ops.composites.sorting import (
    argsort,
    index_sample,
    kthvalue,
    median,
    mode,
    quantile,
    searchsorted,
    sort,
    topk,
    unique,
    unique_consecutive,
)
from ._src.ops.composites.special import (
    acos,
    acosh,
    asin,
    asinh,
    atan,
    atan2,
    atanh,
    cosh,
    deg2rad,
    digamma,
    erfinv,
    lgamma,
    log10,
    logit,
    rad2deg,
    sinh,
    stanh,
    tan,
)
from ._src.ops.linalg import (
    bincount,
    bmm,
    cholesky,
    cholesky_solve,
    cond,
    corrcoef,
    cov,
    cross,
    det,
    dist,
    eig,
    eigh,
    eigvals,
    eigvalsh,
    histogram,
    inverse,
    lstsq,
    lu,
    lu_unpack,
    matrix_power,
    multi_dot,
    mv,
    norm,
    pinv,
    qr,
    slogdet,
    solve,
    svd,
    triangular_solve,
)
from ._src.ops.math import remainder as floor_mod
from ._src.printing import set_printoptions

# isort: split
from . import (  # layers, functional, initializers, optimizers; collectives
    amp,
    autograd,
    base,
    device,
    distributed,
    distribution,
    fft,
    incubate,
    inference,
    io,
    jit,
    linalg,
    metric,
    nn,
    onnx,
    optim,
    optimizer,
    profiler,
    quantization,
    regularizer,
    static,
    tensor,
    utils,
    vision,
)
from ._src.io import CheckpointError, load, save
from .base.framework import disable_static, enable_static, get_flags, in_dynamic_mode, set_flags
from .device import CPUPlace, CUDAPlace, is_compiled_with_cuda
from .distributed import DataParallel
from .hapi import Model, callbacks, flops, summary
from .nn import ParamAttr

__version__ = "0.1.0"

dtype = _DType
clamp = clip


def registered_kernels(name: object = None) -> dict[str, list[object]]:
    """The kernels a device type's plugin registered, by op: ``{op: [dtypes]}`` (no fallbacks).

    Args:
        name (str | Device, optional): a device or device type; default the current device.

    Returns:
        dict[str, list[numpy.dtype]]: the dtypes of each op's kernels.

    Example:
        >>> import framework as fw
        >>> kernels = fw.registered_kernels("cpu")
        >>> fw.float32 in kernels["add"]
        True
    """
    from ._src import device as _d
    from ._src.plugins import host

    typ = (get_device() if name is None else _d.parse(name, check=False)).type
    out: dict[str, list[object]] = {}
    for op, dt, dtype in host().registry.kernels:
        if dt == typ:
            out.setdefault(op, []).append(dtype)
    return out


def __getattr__(name: str) -> object:
    """Paddle's in-place functions (``paddle.add_(x, y)``, ``paddle.tanh_(x)``): each is the
    Tensor method of that name called with the tensor first (``fw.add_(x, y)`` is
    ``x.add_(y)``), resolved on first use (PEP 562) rather than listed one by one.

    Example:
        >>> import framework as fw
        >>> x = fw.to_tensor([1.0, 2.0])
        >>> fw.add_(x, fw.to_tensor([1.0, 1.0])) is x, x.tolist()
        (True, [2.0, 3.0])
    """
    if name.endswith("_") and not name.startswith("_"):
        method = getattr(Tensor, name, None)
        if callable(method):
            return method
    raise AttributeError(f"module 'framework' has no attribute '{name}'")


def plugins() -> dict[str, object]:
    """Every discovered plugin with its status (what ``oarlock devices`` prints).

    Returns:
        dict[str, PluginRecord]: by plugin name: the module, contract version, device types,
        kernel count, and the error of a plugin that failed to load.

    Example:
        >>> import framework as fw
        >>> record = fw.plugins()["cpu"]
        >>> record.module, record.error, record.kernel_count > 0
        ('plugins.cpu', None, True)
    """
    from ._src.plugins import host

    return dict(host().records)


#: The public API: every name above except the ``from __future__`` import (a test keeps it
#: complete). ``framework.testing`` is imported on its own: ``from framework import testing``.
__all__ = [
    "amp",
    "autograd",
    "base",
    "callbacks",
    "flops",
    "hapi",
    "metric",
    "Model",
    "summary",
    "abs",
    "acos",
    "acosh",
    "add",
    "add_n",
    "addmm",
    "all",
    "allclose",
    "amax",
    "amin",
    "angle",
    "any",
    "arange",
    "argmax",
    "argmin",
    "argsort",
    "as_complex",
    "as_real",
    "asin",
    "asinh",
    "atan",
    "atan2",
    "atanh",
    "bernoulli",
    "bfloat16",
    "bincount",
    "bitwise_and",
    "bitwise_not",
    "bitwise_or",
    "bitwise_xor",
    "bmm",
    "bool_",
    "broadcast_shape",
    "broadcast_tensors",
    "broadcast_to",
    "cast",
    "cat",
    "ceil",
    "CheckpointError",
    "cholesky",
    "cholesky_solve",
    "chunk",
    "clamp",
    "clip",
    "compiler",
    "complex",
    "complex128",
    "complex64",
    "concat",
    "cond",
    "conj",
    "CONTRACT_VERSION",
    "corrcoef",
    "cos",
    "cosh",
    "count_nonzero",
    "CPUPlace",
    "CUDAPlace",
    "cov",
    "cross",
    "cumprod",
    "cumsum",
    "current_stream",
    "DataParallel",
    "deg2rad",
    "det",
    "Device",
    "device",
    "device_count",
    "DeviceError",
    "DeviceMismatchError",
    "devices",
    "diag",
    "diagflat",
    "diagonal",
    "diff",
    "digamma",
    "disable_static",
    "dist",
    "distributed",
    "distribution",
    "divide",
    "dot",
    "dtype",
    "eig",
    "eigh",
    "eigvals",
    "eigvalsh",
    "einsum",
    "empty",
    "empty_cache",
    "empty_like",
    "enable_grad",
    "enable_static",
    "equal",
    "equal_all",
    "erf",
    "erfinv",
    "Event",
    "exp",
    "expand",
    "expand_as",
    "expm1",
    "eye",
    "fallback_stats",
    "fft",
    "FallbackWarning",
    "flatten",
    "flip",
    "float16",
    "float32",
    "float64",
    "floor",
    "floor_divide",
    "floor_mod",
    "fmax",
    "fmin",
    "from_dlpack",
    "full",
    "full_like",
    "gather",
    "gather_nd",
    "gcd",
    "Generator",
    "get_default_dtype",
    "get_device",
    "get_device_properties",
    "get_flags",
    "get_rng_state",
    "grad",
    "greater_equal",
    "greater_than",
    "histogram",
    "imag",
    "incubate",
    "in_dynamic_mode",
    "increment",
    "index_sample",
    "index_select",
    "inner",
    "int16",
    "int32",
    "int64",
    "int8",
    "inverse",
    "inference",
    "io",
    "onnx",
    "ir",
    "is_compiled_with_cuda",
    "is_complex",
    "jit",
    "is_empty",
    "is_floating_point",
    "is_grad_enabled",
    "is_integer",
    "is_tensor",
    "isclose",
    "isfinite",
    "isinf",
    "isnan",
    "KernelError",
    "KernelNotFoundError",
    "kron",
    "kthvalue",
    "lcm",
    "lerp",
    "less_equal",
    "less_than",
    "lgamma",
    "linalg",
    "linspace",
    "load",
    "log",
    "log10",
    "log1p",
    "log2",
    "logical_and",
    "logical_not",
    "logical_or",
    "logical_xor",
    "logit",
    "logsumexp",
    "lstsq",
    "lu",
    "lu_unpack",
    "manual_seed",
    "masked_fill",
    "masked_select",
    "matmul",
    "matrix_power",
    "max",
    "maximum",
    "mean",
    "median",
    "memory_stats",
    "meshgrid",
    "min",
    "minimum",
    "mm",
    "mod",
    "mode",
    "moveaxis",
    "multi_dot",
    "multinomial",
    "multiplex",
    "multiply",
    "mv",
    "nansum",
    "neg",
    "nn",
    "no_grad",
    "nonzero",
    "norm",
    "normal",
    "not_equal",
    "numel",
    "OarlockError",
    "ones",
    "ones_like",
    "op_path_stats",
    "OpArgumentError",
    "optim",
    "optimizer",
    "polar",
    "profiler",
    "quantization",
    "outer",
    "OutOfMemoryError",
    "pad",
    "ParamAttr",
    "permute",
    "pinv",
    "PluginError",
    "plugins",
    "poisson",
    "pow",
    "prod",
    "put_along_axis",
    "qr",
    "quantile",
    "rad2deg",
    "rand",
    "randint",
    "randint_like",
    "randn",
    "randperm",
    "rank",
    "real",
    "reciprocal",
    "register_plugin",
    "regularizer",
    "registered_kernels",
    "remainder",
    "repeat_interleave",
    "reset_fallback_stats",
    "reset_peak_memory_stats",
    "reshape",
    "reverse",
    "roll",
    "rot90",
    "round",
    "rsqrt",
    "save",
    "scale",
    "scatter",
    "scatter_add",
    "scatter_nd",
    "scatter_nd_add",
    "searchsorted",
    "seed",
    "set_default_dtype",
    "set_device",
    "set_flags",
    "set_grad_enabled",
    "set_printoptions",
    "set_rng_state",
    "set_strict_kernels",
    "shape",
    "shard_index",
    "sign",
    "sin",
    "sinh",
    "slice",
    "slogdet",
    "solve",
    "sort",
    "split",
    "sqrt",
    "square",
    "squeeze",
    "stack",
    "standard_normal",
    "stanh",
    "static",
    "std",
    "Stream",
    "stream",
    "strided_slice",
    "subtract",
    "sum",
    "svd",
    "swapaxes",
    "synchronize",
    "t",
    "take_along_axis",
    "tan",
    "tanh",
    "Size",
    "Tensor",
    "tensor",
    "tensordot",
    "tile",
    "to_tensor",
    "topk",
    "trace",
    "transpose",
    "triangular_solve",
    "tril",
    "triu",
    "trunc",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float8_e4m3fn",
    "float8_e5m2",
    "float8_e4m3fnuz",
    "float8_e5m2fnuz",
    "unbind",
    "uniform",
    "utils",
    "unique",
    "unique_consecutive",
    "unsqueeze",
    "unstack",
    "var",
    "where",
    "zeros",
    "zeros_like",
    "vision",
]

# Paddle parity (issue 40): the functions Paddle's own examples call that were missing
from ._src.ops.composites.arith import baddbmm  # noqa: E402
from ._src.ops.composites.bessel import i0, i0e, i1, i1e  # noqa: E402
from ._src.ops.composites.gamma_functions import gammainc, gammaincc, polygamma  # noqa: E402
from ._src.ops.composites.grids import (  # noqa: E402
    asarray,
    assign,
    bucketize,
    clone,
    diag_embed,
    from_numpy,
    histogram_bin_edges,
    logspace,
    tril_indices,
    triu_indices,
    vander,
)
from ._src.ops.composites.joining import (  # noqa: E402
    atleast_1d,
    atleast_2d,
    atleast_3d,
    block_diag,
    broadcast_shapes,
    cartesian_prod,
    column_stack,
    combinations,
    crop,
    dsplit,
    dstack,
    hsplit,
    hstack,
    matrix_transpose,
    narrow,
    ravel,
    row_stack,
    take,
    tensor_split,
    tolist,
    unflatten,
    vsplit,
    vstack,
)
from ._src.ops.composites.masked_writes import (  # noqa: E402
    diagonal_scatter,
    fill_diagonal_tensor,
    index_fill,
    masked_scatter,
    select_scatter,
    slice_scatter,
)
from ._src.ops.composites.pointwise import (  # noqa: E402
    copysign,
    frac,
    heaviside,
    hypot,
    isin,
    isneginf,
    isposinf,
    isreal,
    ldexp,
    logaddexp,
    nan_to_num,
    negative,
    positive,
    sgn,
    signbit,
    sinc,
)
from ._src.ops.composites.sampling import rand_like, randn_like  # noqa: E402
from ._src.ops.composites.scans import (  # noqa: E402
    cummax,
    cummin,
    cumulative_trapezoid,
    logcumsumexp,
    nanmean,
    reduce_as,
    renorm,
    trapezoid,
)
from ._src.ops.composites.special import gammaln, multigammaln  # noqa: E402
from ._src.ops.linalg import cdist  # noqa: E402

mul = multiply
gt = greater_than
true_divide = divide  # Paddle's names
view_as_complex, view_as_real = as_complex, as_real
__all__ += [
    "gammainc",
    "gammaincc",
    "bucketize",
    "histogram_bin_edges",
    "i0",
    "i0e",
    "i1",
    "i1e",
    "polygamma",
    "fill_diagonal_tensor",
    "reduce_as",
    "rand_like",
    "randn_like",
    "cdist",
    "gt",
    "matrix_transpose",
    "tolist",
    "diagonal_scatter",
    "index_fill",
    "masked_scatter",
    "select_scatter",
    "slice_scatter",
    "asarray",
    "assign",
    "atleast_1d",
    "atleast_2d",
    "atleast_3d",
    "baddbmm",
    "block_diag",
    "broadcast_shapes",
    "cartesian_prod",
    "clone",
    "column_stack",
    "combinations",
    "copysign",
    "crop",
    "cummax",
    "cummin",
    "cumulative_trapezoid",
    "diag_embed",
    "dsplit",
    "dstack",
    "frac",
    "from_numpy",
    "gammaln",
    "heaviside",
    "hsplit",
    "hstack",
    "hypot",
    "isin",
    "isneginf",
    "isposinf",
    "isreal",
    "ldexp",
    "logaddexp",
    "logcumsumexp",
    "logspace",
    "mul",
    "multigammaln",
    "nan_to_num",
    "nanmean",
    "narrow",
    "negative",
    "positive",
    "ravel",
    "renorm",
    "row_stack",
    "sgn",
    "signbit",
    "sinc",
    "take",
    "tensor_split",
    "trapezoid",
    "tril_indices",
    "triu_indices",
    "unflatten",
    "vander",
    "vsplit",
    "vstack",
]

# Paddle parity of the tensor-op examples (issue 40, parity-a): names Paddle's examples call
from ._src.ops.composites.bitwise import bitwise_left_shift, bitwise_right_shift  # noqa: E402
from ._src.ops.composites.float_bits import frexp, nextafter  # noqa: E402
from ._src.ops.composites.grids import histogramdd  # noqa: E402
from ._src.ops.composites.nan_stats import nanmedian, nanquantile  # noqa: E402
from ._src.ops.composites.random_fills import binomial, standard_gamma  # noqa: E402

# Paddle's fuller put_along_axis (every reduce) and scatter_add(x, axis, index, src) replace the
# indexing ones (a call in the old form still works)
from ._src.ops.composites.scatter_reduce import (  # noqa: E402, F811
    index_add,
    index_put,
    put_along_axis,
    scatter_add,
    scatter_reduce,
)
from ._src.ops.composites.sorting import argwhere, msort  # noqa: E402
from ._src.ops.composites.strided import as_strided, unfold, view, view_as  # noqa: E402
from ._src.ops.creation import inclusive_range as range  # noqa: E402, A004  (Paddle's name)
from .tensor.mmap_storage import MmapStorage  # noqa: E402

__all__ += [
    "MmapStorage",
    "argwhere",
    "binomial",
    "bitwise_left_shift",
    "bitwise_right_shift",
    "as_strided",
    "frexp",
    "histogramdd",
    "msort",
    "nanmedian",
    "nanquantile",
    "nextafter",
    "range",
    "scatter_reduce",
    "index_add",
    "index_put",
    "true_divide",
    "view_as_complex",
    "view_as_real",
    "standard_gamma",
    "unfold",
    "view",
    "view_as",
]

# Paddle's top-level names from paddle.tensor (h-names): its creation helpers, the dtype tensor
# classes (paddle.FloatTensor...), log_normal, and paddle.softmax (compat_softmax: torch's dim)
from ._src.ops.composites.norm import softmax_compat as softmax  # noqa: E402
from ._src.ops.composites.random_fills import log_normal_sample as log_normal  # noqa: E402
from .tensor._creation import create_parameter  # noqa: E402
from .tensor._creation import dtype_tensor_factory as _dtype_tensor_factory  # noqa: E402

BFloat16Tensor = _dtype_tensor_factory("bfloat16")
BoolTensor = _dtype_tensor_factory("bool")
ByteTensor = _dtype_tensor_factory("uint8")
CharTensor = _dtype_tensor_factory("int8")
DoubleTensor = _dtype_tensor_factory("float64")
FloatTensor = _dtype_tensor_factory("float32")
HalfTensor = _dtype_tensor_factory("float16")
IntTensor = _dtype_tensor_factory("int32")
LongTensor = _dtype_tensor_factory("int64")
ShortTensor = _dtype_tensor_factory("int16")

__all__ += [
    "BFloat16Tensor",
    "BoolTensor",
    "ByteTensor",
    "CharTensor",
    "DoubleTensor",
    "FloatTensor",
    "HalfTensor",
    "IntTensor",
    "LongTensor",
    "ShortTensor",
    "create_parameter",
    "log_normal",
    "softmax",
]
