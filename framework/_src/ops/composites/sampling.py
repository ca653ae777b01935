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
from ..indexing import take_along_axis
from ..shape import concat
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


def _row_uniforms(name: str, bs: int, topp_seed: Tensor | None, seed: int, like: Tensor) -> Tensor:
    """``[bs, 1]`` uniforms in [0, 1): row ``i`` from a stream of ``topp_seed[i]`` when given,
    else all from a stream of ``seed`` (``-1``: the global generator)."""
    if topp_seed is not None:
        seeds = tensor_arg(name, topp_seed, "topp_seed").numpy().reshape(-1)
        if seeds.size != bs:
            raise OpArgumentError(f"[{name}] topp_seed must hold {bs} seeds (one per row), got {seeds.size}")
        rows = [
            R.rand([1, 1], dtype=like.dtype, device=like.device, generator=R.Generator(int(s))) for s in seeds
        ]
        return concat(rows, 0)
    gen = R.Generator(seed) if seed != -1 else None
    return R.rand([bs, 1], dtype=like.dtype, device=like.device, generator=gen)


def top_p_sampling(
    x: Tensor,
    ps: Tensor,
    threshold: Tensor | None = None,
    topp_seed: Tensor | None = None,
    seed: int = -1,
    k: int = 0,
    mode: str = "truncated",
    return_top: bool = False,
    name: str | None = None,
) -> tuple[Tensor, ...]:
    """One token per row drawn from the smallest set of most probable tokens whose probability
    reaches ``ps`` (nucleus sampling; Paddle's ``paddle.tensor.search.top_p_sampling``, which
    Paddle runs on CUDA only; here a composite on every device).

    Per row: the probabilities sorted largest first, ``u`` uniform in ``[0, ps)``, the token
    taken is the first whose running sum reaches ``u`` -- a draw from the top-p set in
    proportion to the probabilities. With ``ps <= 0`` that is the most probable token.

    Args:
        x (Tensor): ``[batch, vocab]`` probabilities (float).
        ps (Tensor): ``[batch]`` top-p value per row.
        threshold (Tensor, optional): ``[batch]``: tokens below it are never drawn (the most
            probable one always may be).
        topp_seed (Tensor, optional): ``[batch]`` int64 seed per row.
        seed (int): ``-1``: the global generator (:func:`framework.seed`); else a stream of it.
        k (int): with ``return_top``, also the ``k`` largest probabilities and their ids.
        mode (str): ``"truncated"`` (the only mode here; ``"non-truncated"`` is refused).
        return_top (bool): also return the top-``k`` scores and ids.
        name: ignored (Paddle's signature).

    Returns:
        tuple[Tensor, Tensor]: the drawn probability ``[batch, 1]`` (``x``'s dtype) and its id
        ``[batch, 1]`` (int64); with ``return_top``, then ``[batch, k]`` scores and ids.

    Example:
        >>> import framework as fw
        >>> x = fw.to_tensor([[0.1, 0.6, 0.3], [0.5, 0.2, 0.3]])
        >>> value, ids = fw.tensor.search.top_p_sampling(x, fw.to_tensor([0.0, 0.0]))
        >>> value.tolist(), ids.tolist()
        ([[0.6000000238418579], [0.5]], [[1], [0]])
    """
    op = "top_p_sampling"
    x = tensor_arg(op, x)
    if x.ndim != 2 or not _dt.is_floating(x.dtype):
        raise OpArgumentError(
            f"[{op}] x must be a 2-d float tensor [batch, vocab], got {list(x.shape)} {x.dtype}"
        )
    bs, c = x.shape
    ps = tensor_arg(op, ps, "ps")
    if ps.size != bs:
        raise OpArgumentError(f"[{op}] ps must hold {bs} values (one per row), got shape {list(ps.shape)}")
    if mode != "truncated":
        raise OpArgumentError(
            f"[{op}] mode {mode!r} is not supported here: only 'truncated' (sampling within the top-p set)"
        )
    if not isinstance(k, int) or not 0 <= k <= c:
        raise OpArgumentError(f"[{op}] k must be an int in [0, {c}], got {k!r}")
    probs, order = topk(x, c, axis=-1)  # largest first
    kept = probs
    n_kept = None
    if threshold is not None:
        thr = M.cast(tensor_arg(op, threshold, "threshold").reshape([bs, 1]), x.dtype)
        keep = probs >= thr  # a prefix of the sorted row; the first token stays drawable
        kept = M.where(keep, probs, M.zeros_like(probs))
        n_kept = M.maximum(M.sum(M.cast(keep, _dt.int64), axis=-1, keepdim=True), 1)
    cdf = cumsum(kept, axis=-1)
    # u in [0, min(ps, the mass left after the threshold)): the draw stays proportional
    reach = M.minimum(M.cast(ps.reshape([bs, 1]), x.dtype), cdf[:, c - 1 :])
    u = _row_uniforms(op, bs, topp_seed, seed, x) * reach
    at = M.sum(M.cast(cdf < u, _dt.int64), axis=-1, keepdim=True)
    at = M.minimum(at, (n_kept - 1) if n_kept is not None else c - 1)
    out = (take_along_axis(probs, at, -1), take_along_axis(order, at, -1))
    if return_top:
        return (*out, probs[:, :k], order[:, :k])
    return out
