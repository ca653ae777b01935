"""numpy kernels for the primitive set (what each computes: adapter_api/primitives.py).

A kernel is ``fn(ctx, outs, ins, **attrs)``: it writes its result into ``outs[0]``, a numpy
view of device memory the core allocated with the output's shape and dtype.
"""

import math

import numpy as np

from adapter_api import OpArgumentError

FLOAT = ("float32", "float64")
NUM = (*FLOAT, "int32", "int64")
ALL = (*NUM, "bool")


def elementwise(fn):
    def kernel(ctx, outs, ins, **attrs):
        with np.errstate(all="ignore"):
            outs[0][...] = fn(*ins)

    return kernel


def checked_index(index, size, wrap=False):
    """``index`` checked against ``[0, size)``; with ``wrap`` (a gather of a user's index)
    against ``[-size, size)``, negative ones counted from the end."""
    low = -size if wrap else 0
    if index.size and (index.min() < low or index.max() >= size):
        raise OpArgumentError(
            f"[simdev] index out of range [{low}, {size}): got {index.min()}..{index.max()}; check the indices"
        )
    return np.where(index < 0, index + size, index) if wrap else index


def argsort(ctx, outs, ins, descending):
    # stable; NaN last ascending, first descending (a stable sort of the reversed row, reversed)
    x = ins[0]
    if x.ndim == 0:
        outs[0][...] = 0
    elif descending:
        outs[0][...] = x.shape[-1] - 1 - np.argsort(x[..., ::-1], axis=-1, kind="stable")[..., ::-1]
    else:
        outs[0][...] = np.argsort(x, axis=-1, kind="stable")


def scatter(ctx, outs, ins, axis, add=False):
    x, index, src = ins
    y = outs[0]
    y[...] = x
    key = (slice(None),) * axis + (checked_index(index, x.shape[axis]),)
    np.add.at(y, key, src) if add else y.__setitem__(key, src)


def saturate(x, dtype):  # float -> int: truncate, saturate to the target's range, NaN -> 0
    t = np.trunc(x.astype(np.float64))
    info = np.iinfo(dtype)
    hi = float(info.max) + 1.0  # a power of two: exact
    out = np.asarray(np.where((t >= info.min) & (t < hi), t, 0).astype(dtype))
    out[t >= hi], out[t < info.min] = info.max, info.min
    return out


def cast(ctx, outs, ins, dtype):
    x, y = ins[0], outs[0]
    y[...] = (
        x != 0
        if y.dtype == bool
        else (saturate(x, y.dtype) if x.dtype.kind == "f" and y.dtype.kind in "iu" else x)
    )


def reduce(fn):
    def kernel(ctx, outs, ins, axes, keepdim):
        outs[0][...] = fn(ins[0], axis=axes, keepdims=keepdim) if axes else ins[0]

    return kernel


def philox(ctx, outs, ins, shape, seed, offset, dtype):
    n = outs[0].size
    c = np.zeros((4, (n + 3) // 4), np.uint64)
    ctr = np.arange(c.shape[1], dtype=np.uint64) + np.uint64(offset)
    c[0], c[1] = ctr & np.uint64(0xFFFFFFFF), ctr >> np.uint64(32)
    k = [seed & 0xFFFFFFFF, (seed >> 32) & 0xFFFFFFFF]
    for _ in range(10):  # Philox-4x32-10: ten rounds, key bumped after each
        p0, p1 = c[0] * np.uint64(0xD2511F53), c[2] * np.uint64(0xCD9E8D57)
        c = np.stack(
            [
                (p1 >> np.uint64(32)) ^ c[1] ^ np.uint64(k[0]),
                p1 & np.uint64(0xFFFFFFFF),
                (p0 >> np.uint64(32)) ^ c[3] ^ np.uint64(k[1]),
                p0 & np.uint64(0xFFFFFFFF),
            ]
        )
        k = [(k[0] + 0x9E3779B9) & 0xFFFFFFFF, (k[1] + 0xBB67AE85) & 0xFFFFFFFF]
    bits = c.T.reshape(-1)[:n] >> np.uint64(8)
    outs[0][...] = (bits.astype(np.float64) * 2.0**-24).reshape(outs[0].shape)


def pad(ctx, outs, ins, pads, value):
    outs[0][...] = value
    outs[0][tuple(slice(b, b + s) for (b, _), s in zip(pads, ins[0].shape))] = ins[0]


def arange(ctx, outs, ins, start, step, dtype):
    outs[0][...] = np.arange(outs[0].shape[0]) * step + start


erf = np.vectorize(math.erf, otypes=[np.float64])

KERNELS = [
    ("neg", NUM, elementwise(np.negative)),
    ("abs", NUM, elementwise(np.abs)),
    ("sign", NUM, elementwise(np.sign)),
    ("rsqrt", FLOAT, elementwise(lambda x: 1 / np.sqrt(x))),
    ("erf", FLOAT, elementwise(lambda x: erf(x) if x.size else x)),
    *[
        (n, FLOAT, elementwise(getattr(np, n)))
        for n in ("exp", "log", "sqrt", "sin", "cos", "tanh", "floor", "ceil")
    ],
    ("logical_not", ("bool",), elementwise(np.logical_not)),
    ("add", ALL, elementwise(lambda x, y: x | y if x.dtype == bool else x + y)),
    ("mul", ALL, elementwise(lambda x, y: x & y if x.dtype == bool else x * y)),
    ("sub", NUM, elementwise(np.subtract)),
    ("div", FLOAT, elementwise(np.divide)),
    ("pow", NUM, elementwise(np.power)),
    *[(n, ALL, elementwise(getattr(np, n))) for n in ("maximum", "minimum")],
    *[(n, NUM, elementwise(getattr(np, n))) for n in ("floor_divide", "remainder")],
    *[
        (n, ALL, elementwise(getattr(np, f)))
        for n, f in [
            ("eq", "equal"),
            ("ne", "not_equal"),
            ("lt", "less"),
            ("le", "less_equal"),
            ("gt", "greater"),
            ("ge", "greater_equal"),
        ]
    ],
    ("logical_and", ("bool",), elementwise(np.logical_and)),
    ("logical_or", ("bool",), elementwise(np.logical_or)),
    ("where", ALL, elementwise(np.where)),
    ("cast", ALL, cast),
    ("sum", NUM, reduce(np.sum)),
    ("prod", NUM, reduce(np.prod)),
    ("max", ALL, reduce(np.max)),
    ("min", ALL, reduce(np.min)),
    (
        "argmax",
        ALL,
        lambda ctx, outs, ins, axis, keepdim: outs[0].__setitem__(
            ..., np.argmax(ins[0], axis, keepdims=keepdim)
        ),
    ),
    (
        "argmin",
        ALL,
        lambda ctx, outs, ins, axis, keepdim: outs[0].__setitem__(
            ..., np.argmin(ins[0], axis, keepdims=keepdim)
        ),
    ),
    ("argsort", ALL, argsort),
    ("matmul", NUM, lambda ctx, outs, ins: outs[0].__setitem__(..., np.matmul(*ins))),
    ("permute", ALL, lambda ctx, outs, ins, perm: outs[0].__setitem__(..., ins[0].transpose(perm))),
    ("expand", ALL, lambda ctx, outs, ins, shape: outs[0].__setitem__(..., np.broadcast_to(ins[0], shape))),
    (
        "slice",
        ALL,
        lambda ctx, outs, ins, starts, stops, steps: outs[0].__setitem__(
            ..., ins[0][tuple(map(slice, starts, stops, steps))]
        ),
    ),
    ("concat", ALL, lambda ctx, outs, ins, axis: outs[0].__setitem__(..., np.concatenate(ins, axis))),
    ("pad", ALL, pad),
    (
        "gather",
        ALL,
        lambda ctx, outs, ins, axis, wrap=False: outs[0].__setitem__(
            ..., np.take(ins[0], checked_index(ins[1], ins[0].shape[axis], wrap), axis)
        ),
    ),
    ("scatter_add", NUM, lambda ctx, outs, ins, axis: scatter(ctx, outs, ins, axis, add=True)),
    ("scatter", ALL, scatter),
    ("full", ALL, lambda ctx, outs, ins, shape, value, dtype: outs[0].fill(value)),
    ("arange", NUM, arange),
    ("philox_uniform", FLOAT, philox),
    ("copy", ALL, lambda ctx, outs, ins: outs[0].__setitem__(..., ins[0])),
]
