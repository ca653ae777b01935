"""Random numbers from the counter-based Philox-4x32-10 generator.

``fw.seed(n)`` resets the global generator to (seed=n, offset=0). Each call consumes
``ceil(numel / 4)`` counters, so the same seed and call order give bitwise-identical
uniform tensors on every device (the ``philox_uniform`` primitive is specified bit for bit).
Normal samples use Box-Muller on those uniforms: identical up to the device's ``log``/``cos``
rounding (about one ulp).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from adapter_api import OpArgumentError

from .. import device as _dev
from .. import dispatch
from .. import dtypes as _dt
from ..tensor import Tensor, to_tensor
from . import base
from . import math as M
from .base import OPS
from .complex import as_complex
from .creation import _shape
from .shape import concat


class Generator:
    """A Philox random stream: a 64-bit seed and a 64-bit counter offset.

    Pass one as ``generator=`` to a random function to draw from it instead of the global
    stream; ``get_state``/``set_state`` save and restore ``(seed, offset)``.

    Args:
        seed (int): the seed; the offset starts at 0.

    Example:
        >>> import framework as fw
        >>> g = fw.Generator(3)
        >>> fw.rand([2], generator=g)
        Tensor(shape=[2], dtype=float32, device=cpu:0,
               [0.816655  , 0.11682552])
        >>> g.get_state()
        (3, 1)
    """

    def __init__(self, seed: int = 0) -> None:
        self.manual_seed(seed)

    def manual_seed(self, seed: int) -> Generator:
        if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool):
            raise OpArgumentError(f"[seed] expected an int, got {type(seed).__name__} {seed!r}")
        self.seed = int(seed) & 0xFFFFFFFFFFFFFFFF
        self.offset = 0
        return self

    def take(self, n: int) -> int:
        off = self.offset
        self.offset += (n + 3) // 4
        return off

    def get_state(self) -> tuple[int, int]:
        return (self.seed, self.offset)

    def set_state(self, state: tuple[int, int]) -> None:
        self.seed, self.offset = int(state[0]), int(state[1])


default_generator = Generator(0)


def seed(n: int) -> Generator:
    """Reset the global random stream to ``(seed=n, offset=0)`` (Paddle's ``paddle.seed``).

    ``manual_seed`` is this function. The same seed and the same calls give bitwise-identical
    uniform tensors on every device.

    Args:
        n (int): the seed.

    Returns:
        Generator: the global generator.

    Example:
        >>> import framework as fw
        >>> _ = fw.seed(1)
        >>> a = fw.rand([3])
        >>> _ = fw.manual_seed(1)
        >>> bool((fw.rand([3]) == a).all())
        True
    """
    return default_generator.manual_seed(n)


manual_seed = seed


def get_rng_state() -> tuple[int, int]:
    """The state ``(seed, offset)`` of the global random stream, for :func:`set_rng_state`.

    Returns:
        tuple[int, int]: the seed and the counter offset (each draw of n numbers advances it
        by ``ceil(n / 4)``).

    Example:
        >>> import framework as fw
        >>> _ = fw.seed(7)
        >>> _ = fw.rand([8])
        >>> fw.get_rng_state()
        (7, 2)
    """
    return default_generator.get_state()


def set_rng_state(state: tuple[int, int]) -> None:
    """Restore the global random stream to a state from :func:`get_rng_state`.

    Args:
        state (tuple[int, int]): ``(seed, offset)``.

    Example:
        >>> import framework as fw
        >>> state = fw.get_rng_state()
        >>> a = fw.rand([2])
        >>> fw.set_rng_state(state)
        >>> bool((fw.rand([2]) == a).all())
        True
    """
    default_generator.set_state(state)


def _uniform01(
    shape: tuple[int, ...], dtype: np.dtype, device: Any, gen: Generator | None, fixed: bool = False
) -> Tensor:
    """Uniforms in [0, 1) from ``gen`` (the global generator by default; ``fixed``: a
    generator made for this call from an explicit seed).

    Under a tracer that says ``runtime_random`` (``to_static``), a draw from the global
    generator is recorded with ``seed = offset = None``: the program takes the counters when
    it runs, so each call draws afresh exactly as eager mode does."""
    g = gen or default_generator
    dev = _dev.get_device() if device is None else _dev.parse(device)
    n = math.prod(shape)
    work = dtype if dtype in (_dt.float32, _dt.float64) else _dt.float32
    tracer = base.TRACER.get()
    if tracer is not None and getattr(tracer, "runtime_random", False) and not fixed:
        if gen is not None and gen is not default_generator:
            raise OpArgumentError(
                "[random] a Generator object passed to a random op while tracing for to_static: a "
                "program draws from the global generator (fw.seed) when it runs; drop generator=, "
                "or draw outside the traced function and pass the tensor in"
            )
        attrs = {"shape": shape, "seed": None, "offset": None, "dtype": work}
        out = base.apply(OPS["philox_uniform"], [], attrs)[0]
    else:
        off = g.take(n)
        attrs = {"shape": shape, "seed": g.seed, "offset": off, "dtype": work}
        out = dispatch.run(OPS["philox_uniform"], [], attrs, dev)[0]
    return out if work == dtype else M.cast(out, dtype)


def _float(dtype: Any) -> np.dtype:
    d = _dt.as_dtype(dtype) if dtype is not None else _dt.get_default_dtype()
    if not _dt.is_floating(d):
        raise OpArgumentError(f"[random] expected a floating dtype, got {d}")
    return d


def rand(shape: Any, dtype: Any = None, device: Any = None, generator: Generator | None = None) -> Tensor:
    """Uniform random numbers in ``[0, 1)``.

    Args:
        shape (int | list[int] | tuple[int] | Tensor): the shape.
        dtype (str | np.dtype, optional): a float dtype; default :func:`get_default_dtype`.
        device (str | Device, optional): default the current device.
        generator (Generator, optional): the stream to draw from; default the global one (:func:`seed`).

    Returns:
        Tensor: a new tensor.

    Example:
        >>> import framework as fw
        >>> _ = fw.seed(1)
        >>> fw.rand([3])
        Tensor(shape=[3], dtype=float32, device=cpu:0,
               [0.89025915, 0.8946847 , 0.5857259 ])
    """
    return _uniform01(_shape("rand", shape), _float(dtype), device, generator)


def uniform(
    shape: Any,
    dtype: Any = None,
    min: float = -1.0,
    max: float = 1.0,
    seed: int = 0,
    device: Any = None,
    generator: Generator | None = None,
) -> Tensor:
    """Uniform random numbers in ``[min, max)`` (Paddle's ``paddle.uniform``).

    Args:
        shape (int | list[int] | tuple[int] | Tensor): the shape.
        dtype (str | np.dtype, optional): a float dtype; default :func:`get_default_dtype`.
        min (float): the lower bound.
        max (float): the upper bound, above ``min``.
        seed (int): non-zero: draw from a stream of this seed made for the call (the same values
            each time); 0: from ``generator``.
        device (str | Device, optional): default the current device.
        generator (Generator, optional): the stream to draw from; default the global one (:func:`seed`).

    Returns:
        Tensor: a new tensor.

    Example:
        >>> import framework as fw
        >>> _ = fw.seed(1)
        >>> fw.uniform([3], min=0.0, max=10.0)
        Tensor(shape=[3], dtype=float32, device=cpu:0,
               [8.902592, 8.946847, 5.857259])
        >>> fw.uniform([2], seed=7).tolist() == fw.uniform([2], seed=7).tolist()
        True
    """
    if not min < max:
        raise OpArgumentError(f"[uniform] min must be below max, got min={min}, max={max}")
    g = Generator(seed) if seed else generator
    return (
        _uniform01(_shape("uniform", shape), _float(dtype), device, g, fixed=bool(seed)) * (max - min) + min
    )


def randn(shape: Any, dtype: Any = None, device: Any = None, generator: Generator | None = None) -> Tensor:
    """Standard normal random numbers (mean 0, standard deviation 1; Box-Muller).

    Args:
        shape (int | list[int] | tuple[int] | Tensor): the shape.
        dtype (str | np.dtype, optional): a float dtype; default :func:`get_default_dtype`.
        device (str | Device, optional): default the current device.
        generator (Generator, optional): the stream to draw from; default the global one (:func:`seed`).

    Returns:
        Tensor: a new tensor.

    Example:
        >>> import framework as fw
        >>> _ = fw.seed(1)
        >>> x = fw.randn([2, 3])
        >>> x.shape, x.dtype
        ((2, 3), dtype('float32'))
        >>> _ = fw.seed(1)
        >>> bool((fw.randn([2, 3]) == x).all())
        True
    """
    if dtype is not None and _dt.as_dtype(dtype, "randn").kind == "c":  # each part N(0, 1/2), as Paddle
        d = _dt.real_of(_dt.as_dtype(dtype))
        parts = normal(
            0.0, 0.5**0.5, (*_shape("randn", shape), 2), dtype=d, device=device, generator=generator
        )
        return as_complex(parts)
    return normal(0.0, 1.0, shape, dtype=dtype, device=device, generator=generator)


def normal(
    mean: float = 0.0,
    std: float = 1.0,
    shape: Any = None,
    dtype: Any = None,
    device: Any = None,
    generator: Generator | None = None,
) -> Tensor:
    """Normal random numbers of mean ``mean`` and standard deviation ``std`` (Box-Muller).

    Args:
        mean (float): the mean.
        std (float): the standard deviation.
        shape (int | list[int] | tuple[int] | Tensor, optional): the shape; default ``[]`` (0-d).
        dtype (str | np.dtype, optional): a float dtype; default :func:`get_default_dtype`.
        device (str | Device, optional): default the current device.
        generator (Generator, optional): the stream to draw from; default the global one (:func:`seed`).

    Returns:
        Tensor: a new tensor.

    Example:
        >>> import framework as fw
        >>> _ = fw.seed(1)
        >>> x = fw.normal(10.0, 0.1, [1000])
        >>> round(x.mean().item(), 1), round(x.std().item(), 1)
        (10.0, 0.1)
    """
    shape = _shape("normal", shape if shape is not None else ())
    d = _float(dtype)
    n = math.prod(shape)
    half = (n + 1) // 2
    work = _dt.float64 if d == _dt.float64 else _dt.float32
    u = _uniform01((2, half), work, device, generator)
    u1 = 1.0 - u[0]  # (0, 1]: log is finite
    u2 = u[1]
    r = M.sqrt(M.log(u1) * -2.0)
    th = u2 * (2.0 * math.pi)
    z = concat([r * M.cos(th), r * M.sin(th)])[:n].reshape(shape)
    z = z * std + mean if (std != 1.0 or mean != 0.0) else z
    return M.cast(z, d)


def randint(
    low: int = 0,
    high: int | None = None,
    shape: Any = (1,),
    dtype: Any = None,
    device: Any = None,
    generator: Generator | None = None,
) -> Tensor:
    """Random integers uniform in ``[low, high)``.

    Args:
        low (int): the lower bound; with ``high`` omitted, the upper one (and 0 the lower).
        high (int, optional): the upper bound, not included; ``high - low <= 2**24``.
        shape (int | list[int] | tuple[int] | Tensor): the shape.
        dtype (str | np.dtype, optional): default int64.
        device (str | Device, optional): default the current device.
        generator (Generator, optional): the stream to draw from; default the global one (:func:`seed`).

    Returns:
        Tensor: a new tensor.

    Example:
        >>> import framework as fw
        >>> _ = fw.seed(1)
        >>> fw.randint(0, 10, [5])
        Tensor(shape=[5], dtype=int64, device=cpu:0,
               [8, 8, 5, 7, 6])
    """
    if high is None:
        low, high = 0, low
    if high <= low:
        raise OpArgumentError(f"[randint] high ({high}) must be greater than low ({low})")
    if high - low > 2**24:
        raise OpArgumentError(f"[randint] ranges wider than 2**24 are not supported, got {high - low}")
    u = _uniform01(_shape("randint", shape), _dt.float64, device, generator)
    d = _dt.as_dtype(dtype) if dtype is not None else _dt.int64
    return M.cast(M.floor(u * float(high - low)) + float(low), d)


def bernoulli(
    x: Tensor, p: float | None = None, name: str | None = None, generator: Generator | None = None
) -> Tensor:
    """Random 0 or 1 elementwise, 1 with probability ``x`` (or ``p`` for every element).

    Args:
        x (Tensor): probabilities in ``[0, 1]``.
        p (float, optional): one probability for all elements, in place of ``x``'s values
            (``x`` then gives only the shape and dtype), as Paddle's ``p``.
        name: ignored (Paddle's signature).
        generator (Generator, optional): the stream to draw from; default the global one (:func:`seed`).

    Returns:
        Tensor: of ``x``'s shape and dtype.

    Example:
        >>> import framework as fw
        >>> fw.bernoulli(fw.to_tensor([0.0, 1.0, 0.0]))
        Tensor(shape=[3], dtype=float32, device=cpu:0,
               [0., 1., 0.])
        >>> fw.bernoulli(fw.to_tensor([0.3, 0.7]), p=0.0).tolist()
        [0.0, 0.0]
    """
    u = _uniform01(
        x.shape, x.dtype if x.dtype in (_dt.float32, _dt.float64) else _dt.float32, x.device, generator
    )
    if p is not None:
        if not 0.0 <= float(p) <= 1.0:
            raise OpArgumentError(f"[bernoulli] p must be in [0, 1], got {p}")
        return M.cast(M.less_than(u, float(p)), x.dtype)
    return M.cast(M.less_than(u, x), x.dtype)


def _host_uniform(n: int, g: Generator) -> np.ndarray:
    off = g.take(n)
    cpu = _dev.parse("cpu")
    t = dispatch.run(
        OPS["philox_uniform"], [], {"shape": (n,), "seed": g.seed, "offset": off, "dtype": _dt.float64}, cpu
    )[0]
    return t.numpy()


def randperm(n: int, dtype: Any = "int64", device: Any = None, generator: Generator | None = None) -> Tensor:
    """A random permutation of ``0 .. n-1``.

    The uniforms are drawn on the cpu plugin and sorted there, so the permutation is the same
    whatever the target device.

    Args:
        n (int): the length, >= 0.
        dtype (str | np.dtype): default int64.
        device (str | Device, optional): default the current device.
        generator (Generator, optional): the stream to draw from; default the global one (:func:`seed`).

    Returns:
        Tensor: a 1-d tensor holding each of ``0 .. n-1`` once.

    Example:
        >>> import framework as fw
        >>> _ = fw.seed(1)
        >>> fw.randperm(5)
        Tensor(shape=[5], dtype=int64, device=cpu:0,
               [2, 4, 3, 0, 1])
    """
    if n < 0:
        raise OpArgumentError(f"[randperm] n must be >= 0, got {n}")
    u = _host_uniform(n, generator or default_generator)
    perm = np.argsort(u, kind="stable").astype(np.int64)
    return to_tensor(perm, dtype=dtype, device=device)
