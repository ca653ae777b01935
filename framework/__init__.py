"""Oarlock: a deep-learning framework whose core never touches hardware.

>>> import framework as fw
>>> x = fw.to_tensor([[1.0, 2.0], [3.0, 4.0]])
>>> (x @ x).numpy().tolist()
[[7.0, 10.0], [15.0, 22.0]]

Every device, the CPU included, is a plugin found through the ``oarlock.plugins`` entry
point. Switch device by name: ``fw.set_device("opencl")``, ``with fw.device("cpu"):``,
``x.to("opencl:0")`` or ``OARLOCK_DEVICE=opencl``.
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
    device,
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
    bfloat16,
    bool_,
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
)
from ._src.ops.base import path_stats as op_path_stats
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
    pad,
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
from ._src.tensor import Tensor, from_dlpack, to_tensor

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
    trace,
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
from ._src.ops.composites.misc import cumsum, std, topk, var
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
    distributed,
    inference,
    io,
    jit,
    linalg,
    metric,
    nn,
    optim,
    optimizer,
    static,
)
from ._src.io import CheckpointError, load, save
from .distributed import DataParallel
from .hapi import Model, callbacks, flops, summary

__version__ = "0.1.0"

tensor = to_tensor
dtype = type(float32)
clamp = clip


def registered_kernels(name: object = None) -> dict[str, list[object]]:
    """``{op: [dtypes]}`` of the kernels a device's plugin registered (no fallbacks)."""
    from ._src import device as _d
    from ._src.plugins import host

    typ = (get_device() if name is None else _d.parse(name, check=False)).type
    out: dict[str, list[object]] = {}
    for (op, dt, dtype) in host().registry.kernels:
        if dt == typ:
            out.setdefault(op, []).append(dtype)
    return out


def plugins() -> dict[str, object]:
    """Every discovered plugin with its status (what ``oarlock devices`` prints)."""
    from ._src.plugins import host

    return dict(host().records)


#: The public API: every name above except the ``from __future__`` import (a test keeps it
#: complete). ``framework.testing`` is imported on its own: ``from framework import testing``.
__all__ = [
    "amp", "callbacks", "flops", "hapi", "metric", "Model", "summary", "abs", "acos", "acosh", "add", "add_n", "addmm", "all", "allclose", "amax", "amin", "angle",
    "any", "arange", "argmax", "argmin", "argsort", "asin", "asinh", "atan", "atan2", "atanh",
    "bernoulli", "bfloat16", "bincount", "bitwise_and", "bitwise_not", "bitwise_or", "bitwise_xor",
    "bmm", "bool_", "broadcast_shape", "broadcast_tensors", "broadcast_to", "cast", "cat", "ceil",
    "CheckpointError", "cholesky", "cholesky_solve", "chunk", "clamp", "clip", "compiler", "concat",
    "cond", "conj", "CONTRACT_VERSION", "corrcoef", "cos", "cosh", "count_nonzero", "cov", "cross",
    "cumprod", "cumsum", "current_stream", "DataParallel", "deg2rad", "det", "Device", "device",
    "device_count", "DeviceError", "DeviceMismatchError", "devices", "diag", "diagflat", "diagonal",
    "diff", "digamma", "dist", "distributed", "divide", "dot", "dtype", "eig", "eigh", "eigvals",
    "eigvalsh", "einsum", "empty", "empty_cache", "empty_like", "enable_grad", "equal", "equal_all",
    "erf", "erfinv", "Event", "exp", "expand", "expand_as", "expm1", "eye", "fallback_stats",
    "FallbackWarning", "flatten", "flip", "float16", "float32", "float64", "floor", "floor_divide",
    "floor_mod", "fmax", "fmin", "from_dlpack", "full", "full_like", "gather", "gather_nd", "gcd",
    "Generator", "get_default_dtype", "get_device", "get_device_properties", "get_rng_state",
    "grad", "greater_equal", "greater_than", "histogram", "imag", "increment", "index_sample",
    "index_select", "inner", "int16", "int32", "int64", "int8", "inverse", "inference", "io", "ir", "is_complex", "jit",
    "is_empty", "is_floating_point", "is_grad_enabled", "is_integer", "is_tensor", "isclose",
    "isfinite", "isinf", "isnan", "KernelError", "KernelNotFoundError", "kron", "kthvalue", "lcm",
    "lerp", "less_equal", "less_than", "lgamma", "linalg", "linspace", "load", "log", "log10",
    "log1p", "log2", "logical_and", "logical_not", "logical_or", "logical_xor", "logit",
    "logsumexp", "lstsq", "lu", "lu_unpack", "manual_seed", "masked_fill", "masked_select",
    "matmul", "matrix_power", "max", "maximum", "mean", "median", "memory_stats", "meshgrid", "min",
    "minimum", "mm", "mod", "mode", "moveaxis", "multi_dot", "multinomial", "multiplex", "multiply",
    "mv", "nansum", "neg", "nn", "no_grad", "nonzero", "norm", "normal", "not_equal", "numel",
    "OarlockError", "ones", "ones_like", "op_path_stats", "OpArgumentError", "optim", "optimizer",
    "outer", "OutOfMemoryError", "pad", "permute", "pinv", "PluginError", "plugins", "poisson",
    "pow", "prod", "put_along_axis", "qr", "quantile", "rad2deg", "rand", "randint", "randint_like",
    "randn", "randperm", "rank", "real", "reciprocal", "register_plugin", "registered_kernels",
    "remainder", "repeat_interleave", "reset_fallback_stats", "reset_peak_memory_stats", "reshape",
    "reverse", "roll", "rot90", "round", "rsqrt", "save", "scale", "scatter", "scatter_add",
    "scatter_nd", "scatter_nd_add", "searchsorted", "seed", "set_default_dtype", "set_device",
    "set_grad_enabled", "set_printoptions", "set_rng_state", "set_strict_kernels", "shape",
    "shard_index", "sign", "sin", "sinh", "slice", "slogdet", "solve", "sort", "split", "sqrt",
    "square", "squeeze", "stack", "standard_normal", "stanh", "static", "std", "Stream", "stream",
    "strided_slice", "subtract", "sum", "svd", "swapaxes", "synchronize", "t", "take_along_axis",
    "tan", "tanh", "Tensor", "tensor", "tensordot", "tile", "to_tensor", "topk", "trace",
    "transpose", "triangular_solve", "tril", "triu", "trunc", "uint8", "unbind", "uniform",
    "unique", "unique_consecutive", "unsqueeze", "unstack", "var", "where", "zeros", "zeros_like",
]
