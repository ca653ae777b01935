"""Paddle's remaining random functions, from the Philox uniforms (so a seed gives the same
samples on every device): multinomial, standard_normal, randint_like and poisson."""

from __future__ import annotations

import math as _m
from typing import Any

from adapter_api import OpArgumentError

from ... import dtypes as _dt
from ...tensor import Tensor
from .. import math as M
from .. import random as R
from ._common import float_arg, tensor_arg
from .arith import cumsum
from .sorting import topk


def standard_normal(shape: Any, dtype: Any = None, name: str | None = None) -> Tensor:
    """Standard normal random numbers (mean 0, standard deviation 1), as :func:`randn`.

    Args:
        shape (int | list[int] | tuple[int] | Tensor): the shape.
        dtype (str | np.dtype, optional): a float dtype; default :func:`get_default_dtype`.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: a new tensor on the current device.

    Example:
        >>> import framework as fw
        >>> fw.standard_normal([2, 3]).shape
        (2, 3)
    """
    return R.randn(shape, dtype=dtype)


def randint_like(
    x: Tensor, low: int = 0, high: int | None = None, dtype: Any = None, name: str | None = None
) -> Tensor:
    """Random integers uniform in ``[low, high)``, of ``x``'s shape, device and (by default) dtype.

    Args:
        x (Tensor): gives the shape, the device and the default dtype.
        low (int): the lower bound; with ``high`` omitted, the upper one (and 0 the lower).
        high (int, optional): the upper bound, not included.
        dtype (str | np.dtype, optional): default ``x.dtype``.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: a new tensor.

    Example:
        >>> import framework as fw
        >>> _ = fw.seed(1)
        >>> fw.randint_like(fw.zeros([4], dtype="int32"), 0, 10)
        Tensor(shape=[4], dtype=int32, device=cpu:0,
               [8, 8, 5, 7])
    """
    x = tensor_arg("randint_like", x)
    return R.randint(low, high, x.shape, dtype=dtype if dtype is not None else x.dtype, device=x.device)


def _like_args(name: str, x: Any, dtype: Any, device: Any, requires_grad: bool) -> tuple[Tensor, Any, Any]:
    x = tensor_arg(name, x)
    d = dtype if dtype is not None else (x.dtype if _dt.is_floating(x.dtype) else _dt.get_default_dtype())
    return x, d, device if device is not None else x.device


def rand_like(
    input: Tensor,
    name: str | None = None,
    *,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """Uniform random numbers in [0, 1) of ``input``'s shape (and device, and float dtype).

    Args:
        input (Tensor): gives the shape, the device and the default dtype.
        name: ignored (Paddle's signature).
        dtype (str | np.dtype, optional): a float dtype; default ``input``'s (or the default one).
        device (str, optional): default ``input``'s.
        requires_grad (bool): True: a gradient is computed for it.

    Returns:
        Tensor: a new tensor.

    Example:
        >>> import framework as fw
        >>> fw.rand_like(fw.zeros([2, 3])).shape
        (2, 3)
    """
    x, d, dev = _like_args("rand_like", input, dtype, device, requires_grad)
    out = R.rand(x.shape, dtype=d, device=dev)
    out.stop_gradient = not requires_grad
    return out


def randn_like(
    input: Tensor,
    name: str | None = None,
    *,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """Standard normal random numbers of ``input``'s shape (and device, and float dtype).

    Args:
        input (Tensor): gives the shape, the device and the default dtype.
        name: ignored (Paddle's signature).
        dtype (str | np.dtype, optional): a float dtype; default ``input``'s (or the default one).
        device (str, optional): default ``input``'s.
        requires_grad (bool): True: a gradient is computed for it.

    Returns:
        Tensor: a new tensor.

    Example:
        >>> import framework as fw
        >>> fw.randn_like(fw.zeros([2, 3], dtype="float64")).dtype
        dtype('float64')
    """
    x, d, dev = _like_args("randn_like", input, dtype, device, requires_grad)
    out = R.randn(x.shape, dtype=d, device=dev)
    out.stop_gradient = not requires_grad
    return out


def multinomial(
    x: Tensor, num_samples: int = 1, replacement: bool = False, name: str | None = None
) -> Tensor:
    """Class indices drawn from the probabilities in the last axis of ``x``.

    With ``replacement`` by inverting the cumulative distribution, without by the Gumbel-top-k
    trick (each class at most once).

    Args:
        x (Tensor): ``[c]`` or ``[n, c]`` non-negative weights (need not sum to 1).
        num_samples (int): draws per row; at most ``c`` without replacement.
        replacement (bool): draw with replacement.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: int64 ``[num_samples]`` or ``[n, num_samples]``.

    Example:
        >>> import framework as fw
        >>> fw.multinomial(fw.to_tensor([0.0, 1.0, 0.0]), 3, replacement=True)
        Tensor(shape=[3], dtype=int64, device=cpu:0,
               [1, 1, 1])
        >>> sorted(fw.multinomial(fw.to_tensor([1.0, 0.0, 1.0]), 2).tolist())
        [0, 2]
    """
    p = float_arg("multinomial", x)
    if p.ndim not in (1, 2):
        raise OpArgumentError(
            f"[multinomial] x must be 1-d or 2-d (rows of probabilities), got shape {p.shape}"
        )
    c = p.shape[-1]
    if not isinstance(num_samples, int) or num_samples <= 0 or (not replacement and num_samples > c):
        raise OpArgumentError(
            f"[multinomial] num_samples must be a positive int (at most {c} without replacement), got {num_samples!r}"
        )
    if bool(M.any(p < 0).item()):
        raise OpArgumentError("[multinomial] probabilities must be non-negative")
    lead = p.shape[:-1]
    if replacement:
        cdf = cumsum(p, axis=-1)
        total = cdf[..., c - 1 :]
        u = R.rand(lead + (num_samples,), dtype=p.dtype, device=p.device) * total
        below = M.cast(cdf.unsqueeze(-2) <= u.unsqueeze(-1), _dt.int64)
        return M.minimum(M.sum(below, axis=-1), c - 1)
    u = R.rand(p.shape, dtype=p.dtype, device=p.device)
    gumbel = -M.log(-M.log(M.clip(u, 1e-20, 1.0 - 1e-7)))
    keys = M.where(p > 0, M.log(M.where(p > 0, p, 1.0)) + gumbel, float("-inf"))
    return topk(keys, num_samples, axis=-1)[1]


def poisson(x: Tensor, name: str | None = None) -> Tensor:
    """Poisson random numbers with the rates in ``x``, elementwise.

    The cumulative distribution is inverted (summed in log space from k = 0 until every uniform
    is covered); the number of rounds grows like ``max(x) + 10 * sqrt(max(x))``.

    Args:
        x (Tensor): non-negative rates; integers are cast to the default float dtype.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: counts, of ``x``'s shape and float dtype.

    Example:
        >>> import framework as fw
        >>> _ = fw.seed(1)
        >>> fw.poisson(fw.to_tensor([0.0, 2.0, 5.0]))
        Tensor(shape=[3], dtype=float32, device=cpu:0,
               [0., 4., 5.])
        >>> round(fw.poisson(fw.full([10000], 3.0)).mean().item(), 1)
        3.0
    """
    lam = float_arg("poisson", x)
    if bool(M.any(lam < 0).item()):
        raise OpArgumentError("[poisson] rates must be non-negative")
    work = lam.astype("float64") if lam.dtype != _dt.float64 else lam
    u = R.rand(lam.shape, dtype=work.dtype, device=lam.device)
    top = float(M.max(work).item()) if work.numel() else 0.0
    rounds = int(top + 10 * _m.sqrt(top) + 20)
    log_lam = M.log(M.where(work > 0, work, 1.0))
    k_out = work * 0.0
    cdf = work * 0.0
    done = work <= 0
    for k in range(rounds):
        logp = log_lam * float(k) - work - _m.lgamma(k + 1)
        cdf = cdf + M.exp(logp)
        hit = (~done) & (u < cdf)
        k_out = M.where(hit, float(k), k_out)
        done = done | hit
        if k % 16 == 15 and bool(M.all(done).item()):
            break
    k_out = M.where(done, k_out, float(rounds))
    return M.cast(k_out, lam.dtype)
