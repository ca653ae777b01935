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
from .creation import _shape
from .shape import concat


class Generator:
    """A Philox stream: a 64-bit seed and a 64-bit counter offset."""

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
    """Seed the global generator (Paddle's ``paddle.seed``)."""
    return default_generator.manual_seed(n)


manual_seed = seed


def get_rng_state() -> tuple[int, int]:
    return default_generator.get_state()


def set_rng_state(state: tuple[int, int]) -> None:
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
    """Uniform in [0, 1)."""
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
    """Uniform in [min, max) (Paddle's ``paddle.uniform``)."""
    if not min < max:
        raise OpArgumentError(f"[uniform] min must be below max, got min={min}, max={max}")
    g = Generator(seed) if seed else generator
    return (
        _uniform01(_shape("uniform", shape), _float(dtype), device, g, fixed=bool(seed)) * (max - min) + min
    )


def randn(shape: Any, dtype: Any = None, device: Any = None, generator: Generator | None = None) -> Tensor:
    """Standard normal samples (Box-Muller)."""
    return normal(0.0, 1.0, shape, dtype=dtype, device=device, generator=generator)


def normal(
    mean: float = 0.0,
    std: float = 1.0,
    shape: Any = None,
    dtype: Any = None,
    device: Any = None,
    generator: Generator | None = None,
) -> Tensor:
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
    """Integers uniform in [low, high)."""
    if high is None:
        low, high = 0, low
    if high <= low:
        raise OpArgumentError(f"[randint] high ({high}) must be greater than low ({low})")
    if high - low > 2**24:
        raise OpArgumentError(f"[randint] ranges wider than 2**24 are not supported, got {high - low}")
    u = _uniform01(_shape("randint", shape), _dt.float64, device, generator)
    d = _dt.as_dtype(dtype) if dtype is not None else _dt.int64
    return M.cast(M.floor(u * float(high - low)) + float(low), d)


def bernoulli(p: Tensor, generator: Generator | None = None) -> Tensor:
    """1 with probability ``p`` elementwise."""
    u = _uniform01(
        p.shape, p.dtype if p.dtype in (_dt.float32, _dt.float64) else _dt.float32, p.device, generator
    )
    return M.cast(M.less_than(u, p), p.dtype)


def _host_uniform(n: int, g: Generator) -> np.ndarray:
    off = g.take(n)
    cpu = _dev.parse("cpu")
    t = dispatch.run(
        OPS["philox_uniform"], [], {"shape": (n,), "seed": g.seed, "offset": off, "dtype": _dt.float64}, cpu
    )[0]
    return t.numpy()


def randperm(n: int, dtype: Any = "int64", device: Any = None, generator: Generator | None = None) -> Tensor:
    """A random permutation of 0..n-1 (argsort of Philox uniforms drawn on the cpu plugin,
    so it is identical whatever the target device)."""
    if n < 0:
        raise OpArgumentError(f"[randperm] n must be >= 0, got {n}")
    u = _host_uniform(n, generator or default_generator)
    perm = np.argsort(u, kind="stable").astype(np.int64)
    return to_tensor(perm, dtype=dtype, device=device)
