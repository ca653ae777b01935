"""More of Paddle's random numbers, from the Philox uniforms (so a seed gives the same samples on
every device): the fills behind ``x.cauchy_()``, ``x.geometric_()``, ``x.log_normal_()`` and
``x.random_()``, and the binomial and standard gamma distributions.
"""

from __future__ import annotations

import math as _m
from typing import Any

import numpy as np

from adapter_api import OpArgumentError

from ... import dtypes as _dt
from ...tensor import Tensor, to_tensor
from .. import math as M
from .. import random as R
from ..complex import as_complex
from ..methods import inplace
from ._common import float_arg, store_out, tensor_arg
from .special import lgamma, tan


def _uniform_like(x: Tensor, dtype: Any = None) -> Tensor:
    return R.rand(x.shape, dtype=dtype or (x.dtype if _dt.is_floating(x.dtype) else None), device=x.device)


def cauchy(x: Tensor, loc: float = 0.0, scale: float = 1.0) -> Tensor:
    """Cauchy random numbers of ``x``'s shape and dtype: ``loc + scale * tan(pi * (u - 1/2))``.

    Args:
        x (Tensor): gives the shape, float dtype and device.
        loc (float): the median.
        scale (float): the half width at half maximum.

    Returns:
        Tensor: a new tensor (``x.cauchy_()`` stores it into ``x``).

    Example:
        >>> import framework as fw
        >>> x = fw.zeros([2, 3])
        >>> x.cauchy_(1.0, 2.0).shape
        (2, 3)
    """
    x = float_arg("cauchy_", x)
    return tan((_uniform_like(x) - 0.5) * _m.pi) * scale + loc


def geometric(x: Tensor, probs: Any) -> Tensor:
    """Paddle's geometric fill: ``log(u) / log(1 - probs)`` for uniforms ``u`` in ``(0, 1]``
    (a continuous count of failures, not rounded, as Paddle's ``geometric_`` gives it).

    Args:
        x (Tensor): gives the shape, float dtype and device.
        probs (float | Tensor): the success probability, in ``(0, 1)``; broadcast with ``x``.

    Returns:
        Tensor: a new tensor of ``x``'s shape (``x.geometric_()`` stores it into ``x``).

    Example:
        >>> import framework as fw
        >>> bool((fw.zeros([100]).geometric_(0.3) >= 0).all())
        True
    """
    x = float_arg("geometric_", x)
    u = 1.0 - _uniform_like(x)
    p = probs if isinstance(probs, Tensor) else to_tensor(float(probs), dtype=x.dtype, device=x.device)
    return M.log(u) / M.log1p(-M.cast(p, x.dtype))


def log_normal(x: Tensor, mean: float = 1.0, std: float = 2.0) -> Tensor:
    """Log-normal random numbers: ``exp(n)`` for normals ``n`` of the given mean and std.

    Args:
        x (Tensor): gives the shape, float dtype and device.
        mean (float): the mean of the underlying normal.
        std (float): its standard deviation.

    Returns:
        Tensor: a new tensor (``x.log_normal_()`` stores it into ``x``).

    Example:
        >>> import framework as fw
        >>> bool((fw.zeros([4]).log_normal_() > 0).all())
        True
    """
    x = float_arg("log_normal_", x)
    return M.exp(R.normal(mean, std, x.shape, dtype=x.dtype, device=x.device))


def bernoulli_fill(x: Tensor, p: Any = 0.5, name: str | None = None) -> Tensor:
    """0 or 1 of ``x``'s shape and dtype, 1 with probability ``p`` (Paddle's ``x.bernoulli_(p)``:
    ``x``'s values are not read; :func:`framework.bernoulli` reads them as the probabilities).

    Args:
        x (Tensor): gives the shape, dtype and device.
        p (float | Tensor): the probability of a 1, in ``[0, 1]``; a tensor broadcast to ``x``
            gives one per element.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: a new tensor (``x.bernoulli_(p)`` stores it into ``x``).

    Example:
        >>> import framework as fw
        >>> fw.ones([3]).bernoulli_(0.0).tolist(), fw.zeros([2]).bernoulli_(1.0).tolist()
        ([0.0, 0.0, 0.0], [1.0, 1.0])
    """
    x = tensor_arg("bernoulli_", x)
    if isinstance(p, Tensor):
        prob = M.cast(p, _dt.float32 if x.dtype not in (_dt.float32, _dt.float64) else x.dtype)
    else:
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 <= float(p) <= 1.0:
            raise OpArgumentError(f"[bernoulli_] p must be a number in [0, 1] or a Tensor, got {p!r}")
        prob = float(p)
    u = _uniform_like(x, None if _dt.is_floating(x.dtype) else _dt.float32)
    return M.cast(M.less_than(u, prob), x.dtype)


def random_integers(x: Tensor, from_: int = 0, to: int | None = None, *, generator: Any = None) -> Tensor:
    """Integers uniform in ``[from_, to)``, in ``x``'s shape and dtype.

    With ``to`` omitted the range reaches the dtype's largest value (integers) or
    ``2 ** mantissa bits`` (floats, so each value is exact), as Paddle's ``random_``.

    Args:
        x (Tensor): gives the shape, dtype and device.
        from_ (int): the lower bound.
        to (int, optional): the upper bound, not included.
        generator: Paddle's placeholder, not read.

    Returns:
        Tensor: a new tensor (``x.random_()`` stores it into ``x``).

    Example:
        >>> import framework as fw
        >>> v = fw.zeros([50]).random_(0, 4)
        >>> sorted(set(v.tolist())) <= [0.0, 1.0, 2.0, 3.0]
        True
    """
    x = tensor_arg("random_", x)
    if to is None:
        if _dt.is_floating(x.dtype):
            to = 2 ** (np.finfo(x.dtype if x.dtype != _dt.bfloat16 else np.float32).nmant + 1) + 1
        elif x.dtype == _dt.bool_:
            to = 2
        else:
            to = int(np.iinfo(x.dtype).max) + 1
    if from_ >= to:
        raise OpArgumentError(f"[random_] from_ must be below to, got from_={from_} >= to={to}")
    u = R.rand(x.shape, dtype="float64", device=x.device)
    return M.cast(M.floor(u * float(to - from_)) + float(from_), x.dtype)


def binomial(count: Tensor, prob: Tensor, name: str | None = None) -> Tensor:
    """Binomial random counts: successes in ``count`` trials of probability ``prob``, elementwise.

    The cumulative distribution is inverted, summed from ``k = 0`` in log space; the number of
    rounds is ``max(count) + 1``.

    Args:
        count (Tensor): the numbers of trials (non-negative).
        prob (Tensor): the success probabilities, in ``[0, 1]``; broadcast with ``count``.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: int64 counts of the broadcast shape.

    Example:
        >>> import framework as fw
        >>> out = fw.binomial(fw.to_tensor([10.0, 50.0]), fw.to_tensor([0.0, 1.0]))
        >>> out.tolist(), out.dtype
        ([0, 50], dtype('int64'))
    """
    n = tensor_arg("binomial", count).astype("float64")
    p = tensor_arg("binomial", prob, "prob").astype("float64")
    n, p = n + p * 0.0, p + n * 0.0
    if bool(M.any(n < 0).item()) or bool(M.any((p < 0) | (p > 1)).item()):
        raise OpArgumentError("[binomial] count must be non-negative and prob in [0, 1]")
    u = R.rand(n.shape, dtype="float64", device=n.device)
    rounds = int(M.max(n).item()) + 1 if n.numel() else 0
    pc = M.minimum(M.maximum(p, 1e-300), 1.0 - 1e-16)
    log_p, log_q = M.log(pc), M.log1p(-pc)
    base = lgamma(n + 1.0)
    k_out = n * 0.0
    cdf = n * 0.0
    done = n * 0.0 > 1.0
    for k in range(rounds):
        logpmf = base - _m.lgamma(k + 1) - lgamma(M.maximum(n - k, 0.0) + 1.0) + log_p * k + log_q * (n - k)
        cdf = cdf + M.where(n >= k, M.exp(logpmf), 0.0)
        hit = (~done) & (u < cdf)
        k_out = M.where(hit, float(k), k_out)
        done = done | hit
    k_out = M.where(done, k_out, n)
    k_out = M.where(p == 0, 0.0, M.where(p == 1, n, k_out))
    return M.cast(k_out, _dt.int64)


def standard_gamma(x: Tensor, name: str | None = None) -> Tensor:
    """Gamma random numbers of shape ``x`` (scale 1), elementwise.

    Marsaglia and Tsang's method: ``d * v`` for ``v = (1 + c n) ** 3`` of a normal ``n``,
    accepted by one uniform; 12 rounds of candidates leave a chance below 1e-15 that a sample
    is still pending (it then keeps its last candidate). Shapes below 1 use ``gamma(a + 1) *
    u ** (1 / a)``.

    Args:
        x (Tensor): the shapes ``alpha > 0``, float.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: samples of ``x``'s shape and dtype.

    Example:
        >>> import framework as fw
        >>> _ = fw.seed(1)
        >>> round(fw.standard_gamma(fw.full([20000], 3.0)).mean().item(), 1)
        3.0
    """
    a = float_arg("standard_gamma", x)
    if bool(M.any(a <= 0).item()):
        raise OpArgumentError("[standard_gamma] the shapes x must be positive")
    boost = a < 1.0
    d = M.where(boost, a + 1.0, a) - 1.0 / 3.0
    c = 1.0 / M.sqrt(d * 9.0)
    out = d * 1.0
    done = a < 0.0
    for _ in range(12):
        n = R.randn(a.shape, dtype=a.dtype, device=a.device)
        u = R.rand(a.shape, dtype=a.dtype, device=a.device)
        v = (n * c + 1.0) ** 3
        ok = (v > 0) & (M.log(M.maximum(u, 1e-30)) < n * n * 0.5 + d - d * v + d * M.log(M.maximum(v, 1e-30)))
        take = ok & (~done)
        out = M.where(take, d * v, out)
        done = done | ok
    u = R.rand(a.shape, dtype=a.dtype, device=a.device)
    return M.where(boost, out * M.pow(M.maximum(u, 1e-30), 1.0 / a), out)


def _gaussian_dtype(name: str, dtype: Any, mean: Any) -> tuple[np.dtype, float]:
    d = _dt.as_dtype(dtype, name) if dtype is not None else _dt.get_default_dtype()
    if not (_dt.is_floating(d) or d.kind == "c"):
        raise OpArgumentError(f"[{name}] dtype must be a float or complex dtype, got {d}")
    if isinstance(mean, complex):
        if d.kind != "c":
            raise OpArgumentError(f"[{name}] a complex mean {mean} needs a complex dtype, got {d}")
        if mean.real != mean.imag:
            raise OpArgumentError(
                f"[{name}] a complex mean must have equal real and imaginary parts (Paddle's rule), got {mean}"
            )
        mean = mean.real
    return d, float(mean)


def _gaussian(shape: Any, mean: float, std: float, seed: int, d: np.dtype, device: Any) -> Tensor:
    gen = R.Generator(seed) if seed else None
    if d.kind == "c":  # each part of std / sqrt(2), both parts of mean ``mean`` (as Paddle)
        shp = tuple(R._shape("gaussian", shape))
        parts = R.normal(
            mean, std / _m.sqrt(2.0), (*shp, 2), dtype=_dt.real_of(d), device=device, generator=gen
        )
        return as_complex(parts)
    return R.normal(mean, std, shape, dtype=d, device=device, generator=gen)


def gaussian(
    shape: Any,
    mean: float | complex = 0.0,
    std: float = 1.0,
    seed: int = 0,
    dtype: Any = None,
    name: str | None = None,
    *,
    out: Tensor | None = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """Normal random numbers of mean ``mean`` and standard deviation ``std`` (Paddle's
    ``paddle.tensor.random.gaussian``).

    Args:
        shape (list[int] | tuple[int] | Tensor): the shape.
        mean (float | complex): the mean; complex (equal parts) for a complex dtype.
        std (float): the standard deviation (of each part, over ``sqrt(2)``, for a complex dtype).
        seed (int): non-zero: a stream of this seed made for the call (the same values each
            time); 0: the global generator (:func:`framework.seed`).
        dtype (str | np.dtype, optional): float or complex; default :func:`get_default_dtype`.
        name: ignored (Paddle's signature).
        out (Tensor, optional): receives the result.
        device (str, optional): default the current device.
        requires_grad (bool): the result is a leaf that requires grad.

    Returns:
        Tensor: a new tensor (``out`` when given).

    Example:
        >>> import framework as fw
        >>> x = fw.tensor.random.gaussian([2, 3], mean=1.0, std=0.5, seed=7)
        >>> x.shape, x.dtype, x.tolist() == fw.tensor.random.gaussian([2, 3], 1.0, 0.5, seed=7).tolist()
        ((2, 3), dtype('float32'), True)
    """
    d, m = _gaussian_dtype("gaussian", dtype, mean)
    r = _gaussian(shape, m, std, seed, d, device)
    if requires_grad:
        r.stop_gradient = False
    return store_out("gaussian", r, out)


def gaussian_fill(
    x: Tensor, mean: float | complex = 0.0, std: float = 1.0, seed: int = 0, name: str | None = None
) -> Tensor:
    """Normal random numbers of ``x``'s shape, dtype and device (what :func:`gaussian_` stores into ``x``).

    Args:
        x (Tensor): gives the shape, a float or complex dtype and the device.
        mean (float | complex): the mean.
        std (float): the standard deviation.
        seed (int): non-zero: a stream of this seed made for the call; 0: the global generator.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: a new tensor.
    """
    x = tensor_arg("gaussian_", x)
    d, m = _gaussian_dtype("gaussian_", x.dtype, mean)
    return _gaussian(x.shape, m, std, seed, d, x.device)


_gaussian_inplace = inplace(gaussian_fill, "gaussian_")


def gaussian_(
    x: Tensor, mean: float | complex = 0.0, std: float = 1.0, seed: int = 0, name: str | None = None
) -> Tensor:
    """``x`` filled in place with normal random numbers (Paddle's ``paddle.tensor.random.gaussian_``).

    Args:
        x (Tensor): the tensor to fill (float or complex); its shape, dtype and device are kept.
        mean (float | complex): the mean.
        std (float): the standard deviation.
        seed (int): non-zero: a stream of this seed made for the call; 0: the global generator.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: ``x`` itself.

    Example:
        >>> import framework as fw
        >>> x = fw.zeros([2, 2], dtype="float64")
        >>> y = fw.tensor.random.gaussian_(x, mean=3.0, std=0.5)
        >>> y is x, x.dtype, bool((x != 0).all())
        (True, dtype('float64'), True)
    """
    return _gaussian_inplace(x, mean, std, seed)


def log_normal_sample(
    mean: float | Tensor = 1.0, std: float | Tensor = 2.0, shape: Any = None, name: str | None = None
) -> Tensor:
    """``exp(n)`` for normal ``n`` of mean ``mean`` and standard deviation ``std`` (Paddle's
    ``paddle.log_normal``; ``x.log_normal_()`` fills a tensor).

    Args:
        mean (float | Tensor): the mean of the underlying normal; a tensor gives one per element.
        std (float | Tensor): its standard deviation; a tensor gives one per element.
        shape (list[int], optional): the shape when ``mean`` and ``std`` are numbers (a tensor's
            shape wins, as in Paddle).
        name: ignored (Paddle's signature).

    Returns:
        Tensor: a new tensor of the default float dtype (a tensor ``mean``'s or ``std``'s dtype).

    Example:
        >>> import framework as fw
        >>> x = fw.tensor.random.log_normal(mean=fw.to_tensor([0.0, 1.0]), std=0.5)
        >>> x.shape, bool((x > 0).all())
        ((2,), True)
    """
    ts = [t for t in (mean, std) if isinstance(t, Tensor)]
    if not ts:
        if shape is None:
            raise OpArgumentError("[log_normal] give shape when mean and std are numbers")
        return M.exp(R.normal(float(mean), float(std), shape))
    for t in ts:
        if not _dt.is_floating(t.dtype):
            raise OpArgumentError(
                f"[log_normal] a tensor mean or std must be float32 or float64, got {t.dtype}"
            )
    ref = ts[0]
    m = mean if isinstance(mean, Tensor) else float(mean)
    s = std if isinstance(std, Tensor) else float(std)
    if len(ts) == 2 and tuple(mean.shape) != tuple(std.shape):
        if mean.size != std.size:
            raise OpArgumentError(
                f"[log_normal] mean of shape {list(mean.shape)} and std of shape {list(std.shape)}: "
                "expected the same number of elements"
            )
        s = std.reshape(mean.shape)  # Paddle reads std in mean's shape
    z = R.normal(0.0, 1.0, ref.shape if len(ts) == 1 else mean.shape, dtype=ref.dtype, device=ref.device)
    return M.exp(z * s + m)


def uniform_random_batch_size_like(
    input: Tensor,
    shape: Any,
    dtype: Any = "float32",
    input_dim_idx: int = 0,
    output_dim_idx: int = 0,
    min: float = -1.0,
    max: float = 1.0,
    seed: int = 0,
) -> Tensor:
    """Uniform random numbers in ``[min, max)`` of ``shape`` with dim ``output_dim_idx`` taken
    from ``input``'s dim ``input_dim_idx`` (the batch size; Paddle's
    ``paddle.tensor.random.uniform_random_batch_size_like``).

    Args:
        input (Tensor): gives the batch size (its values are not read) and the device.
        shape (list[int]): the shape, but for dim ``output_dim_idx``.
        dtype (str | np.dtype): float32 or float64.
        input_dim_idx (int): the dim of ``input`` that is the batch size.
        output_dim_idx (int): the dim of the result that takes it.
        min (float): the lower bound.
        max (float): the upper bound.
        seed (int): non-zero: a stream of this seed made for the call; 0: the global generator.

    Returns:
        Tensor: a new tensor.

    Example:
        >>> import framework as fw
        >>> fw.tensor.random.uniform_random_batch_size_like(fw.zeros([3, 7]), [2, 5]).shape
        (3, 5)
    """
    input = tensor_arg("uniform_random_batch_size_like", input, "input")
    shp = list(shape)
    for what, i, n in (
        ("input_dim_idx", input_dim_idx, input.ndim),
        ("output_dim_idx", output_dim_idx, len(shp)),
    ):
        if not 0 <= i < n:
            raise OpArgumentError(f"[uniform_random_batch_size_like] {what} {i} is out of range for {n} dims")
    shp[output_dim_idx] = input.shape[input_dim_idx]
    d = _dt.as_dtype(dtype, "uniform_random_batch_size_like")
    if not _dt.is_floating(d):
        raise OpArgumentError(f"[uniform_random_batch_size_like] dtype must be a float dtype, got {d}")
    return R.uniform(shp, dtype=d, min=min, max=max, seed=seed, device=input.device)
