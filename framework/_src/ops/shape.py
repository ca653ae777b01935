"""Shape and layout ops: the reshape family (shares storage), transpose, expand, concat,
stack, split, flip, tile; the slice and pad primitives' raw forms (``pad`` itself, with its
modes, is in :mod:`.padding`)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from adapter_api import OpArgumentError

from .. import autograd, dispatch
from .. import dtypes as _dt
from ..tensor import Tensor, decides_on_sizes
from .base import OPS, TRACER, OpDef, apply1, call, composite
from .creation import arange, zeros
from .math import normalize_axes


def _view_grad(n: autograd.Node, g: list[Tensor | None]) -> list[Tensor | None]:
    return [g[0].reshape(n.inputs[0].shape)]


RESHAPE = OpDef("reshape", "view", None, _view_grad)
OPS["reshape"] = RESHAPE


def _resolve_shape(x: Tensor, shape: Any) -> tuple[int, ...]:
    if (
        type(shape) is tuple
        and all(type(s) is int and s >= 0 for s in shape)
        and math.prod(shape) == x.numel()
    ):
        return shape  # the common case, sizes given in full (2.2 -> 0.9 us)
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    if isinstance(shape, Tensor):
        shape = shape.tolist()
    elif (
        isinstance(shape, (tuple, list))
        and len(shape) == 1
        and isinstance(shape[0], Tensor)
        and shape[0].ndim == 1
    ):
        shape = shape[0].tolist()  # x.reshape(shape_tensor) reaches here as (shape_tensor,)
    try:  # an int subclass stays as it is (a traced dynamic dim keeps its symbol)
        shape = [
            s
            if isinstance(s, int) and type(s) is not bool
            else int(s.item())
            if isinstance(s, Tensor)
            else int(s)
            for s in shape
        ]
    except (TypeError, ValueError):
        raise OpArgumentError(f"[reshape] shape must be a sequence of ints, got {shape!r}") from None
    for i, s in enumerate(shape):
        if s == 0 and i < x.ndim:  # Paddle: 0 keeps x's size of that dim
            shape[i] = x.shape[i]
    n = x.numel()
    unknown = [i for i, s in enumerate(shape) if s == -1]
    if len(unknown) > 1:
        raise OpArgumentError(f"[reshape] only one dimension can be -1, got {tuple(shape)}")
    if any(s < -1 for s in shape):
        raise OpArgumentError(f"[reshape] invalid dimension in {tuple(shape)}; sizes must be >= 0 or -1")
    known = math.prod(s for s in shape if s != -1)
    if unknown:
        if known == 0 or n % known:
            raise OpArgumentError(f"[reshape] cannot reshape {x.shape} ({n} elements) into {tuple(shape)}")
        shape[unknown[0]] = n // known
    elif known != n:
        raise OpArgumentError(
            f"[reshape] cannot reshape {x.shape} ({n} elements) into {tuple(shape)} ({known} elements); "
            f"the element count must stay the same"
        )
    return tuple(shape)


def reshape(x: Tensor, shape: Any, name: str | None = None) -> Tensor:
    """The data of ``x`` in a new shape; shares its storage.

    Args:
        x (Tensor): the input.
        shape (list[int] | tuple[int] | Tensor): the new shape, of the same element count; one
            entry may be -1 (inferred); a 0 keeps ``x``'s size of that dim (as in Paddle).
        name: ignored (Paddle's signature).

    Returns:
        Tensor: a view of ``x``'s data (also ``x.reshape(shape)``).

    Example:
        >>> import framework as fw
        >>> fw.reshape(fw.arange(6), [2, -1])
        Tensor(shape=[2, 3], dtype=int64, device=cpu:0,
               [[0, 1, 2],
                [3, 4, 5]])
    """
    if not isinstance(x, Tensor):
        raise OpArgumentError(f"[reshape] expected a Tensor, got {type(x).__name__}")
    shape = _resolve_shape(x, shape)
    if shape == x.shape:
        return x
    if dispatch.INTERCEPTORS and x._dist:  # a distributed tensor: the interceptor's reshape
        return dispatch.intercept(RESHAPE, [x], {"shape": shape})
    out = x._view(shape)
    if autograd.GRAD_ENABLED.get() and not x.stop_gradient:
        autograd.record(RESHAPE, [x], {}, [out])
    return out


def flatten(x: Tensor, start_axis: int = 0, stop_axis: int = -1) -> Tensor:
    """Merge the dims ``start_axis`` to ``stop_axis`` (both included) into one.

    Args:
        x (Tensor): the input; a 0-d tensor becomes 1-d.
        start_axis (int): the first dim to merge.
        stop_axis (int): the last dim to merge.

    Returns:
        Tensor: a view of ``x``'s data.

    Example:
        >>> import framework as fw
        >>> x = fw.zeros([2, 3, 4])
        >>> fw.flatten(x).shape
        (24,)
        >>> fw.flatten(x, start_axis=1).shape
        (2, 12)
    """
    if x.ndim == 0:
        return reshape(x, (1,))
    s = start_axis % x.ndim
    e = stop_axis % x.ndim
    if s > e:
        raise OpArgumentError(f"[flatten] start_axis {start_axis} is after stop_axis {stop_axis}")
    return reshape(x, x.shape[:s] + (math.prod(x.shape[s : e + 1]),) + x.shape[e + 1 :])


@decides_on_sizes  # a dim of size 1 goes: a dynamic dim's size decides the result's rank
def squeeze(x: Tensor, axis: Any = None) -> Tensor:
    """Remove dims of size 1 from ``x``.

    Args:
        x (Tensor): the input.
        axis (int | list[int], optional): the dims to remove (those of size other than 1 are
            kept); ``None``: every dim of size 1.

    Returns:
        Tensor: a view of ``x``'s data.

    Example:
        >>> import framework as fw
        >>> x = fw.zeros([1, 3, 1])
        >>> fw.squeeze(x).shape
        (3,)
        >>> fw.squeeze(x, axis=0).shape
        (3, 1)
    """
    if axis is None:
        return reshape(x, tuple(s for s in x.shape if s != 1))
    axes = [axis] if isinstance(axis, int) else list(axis)
    norm = set()
    for a in axes:
        if not -max(x.ndim, 1) <= a < max(x.ndim, 1):
            raise OpArgumentError(f"[squeeze] axis {a} is out of range for {x.ndim} dimensions")
        norm.add(a % max(x.ndim, 1))
    return reshape(x, tuple(s for i, s in enumerate(x.shape) if not (i in norm and s == 1)))


def unsqueeze(x: Tensor, axis: Any) -> Tensor:
    """Insert dims of size 1 into ``x``.

    Args:
        x (Tensor): the input.
        axis (int | list[int]): the positions of the new dims in the result.

    Returns:
        Tensor: a view of ``x``'s data.

    Example:
        >>> import framework as fw
        >>> fw.unsqueeze(fw.to_tensor([1, 2, 3]), 0)
        Tensor(shape=[1, 3], dtype=int64, device=cpu:0,
               [[1, 2, 3]])
        >>> fw.unsqueeze(fw.zeros([3]), [0, 2]).shape
        (1, 3, 1)
    """
    axes = [axis] if isinstance(axis, int) else list(axis)
    shape = list(x.shape)
    for a in sorted(a % (len(shape) + len(axes)) if a < 0 else a for a in axes):
        if a > len(shape):
            raise OpArgumentError(f"[unsqueeze] axis {a} is out of range for {x.ndim} dimensions")
        shape.insert(a, 1)
    return reshape(x, tuple(shape))


def transpose(x: Tensor, perm: Sequence[int], name: str | None = None) -> Tensor:
    """Permute the dims of ``x`` (Paddle's ``transpose(x, perm)``); ``permute`` is this function.

    Args:
        x (Tensor): the input.
        perm (list[int] | tuple[int]): dim ``i`` of the result is dim ``perm[i]`` of ``x``.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: a new tensor (a copy).

    Example:
        >>> import framework as fw
        >>> x = fw.to_tensor([[1, 2, 3], [4, 5, 6]])
        >>> fw.transpose(x, [1, 0])
        Tensor(shape=[3, 2], dtype=int64, device=cpu:0,
               [[1, 4],
                [2, 5],
                [3, 6]])
        >>> fw.permute(fw.zeros([2, 3, 4]), [2, 0, 1]).shape
        (4, 2, 3)
    """
    perm = tuple(int(p) for p in perm)
    if sorted(p % max(x.ndim, 1) for p in perm) != list(range(x.ndim)):
        raise OpArgumentError(
            f"[transpose] perm {perm} is not a permutation of the {x.ndim} dimensions of {x.shape}"
        )
    perm = tuple(p % x.ndim for p in perm)
    if perm == tuple(range(x.ndim)):
        return x
    return apply1(OPS["permute"], [x], {"perm": perm})


permute = transpose


def swapaxes(x: Tensor, a: int, b: int) -> Tensor:
    """Swap two dims of ``x``.

    Args:
        x (Tensor): at least 2-d.
        a (int): one dim.
        b (int): the other.

    Returns:
        Tensor: a new tensor (a copy).

    Example:
        >>> import framework as fw
        >>> fw.swapaxes(fw.zeros([2, 3, 4]), 0, 2).shape
        (4, 3, 2)
    """
    if x.ndim < 2:
        raise OpArgumentError(f"[swapaxes] needs at least 2 dimensions, got shape {x.shape}")
    perm = list(range(x.ndim))
    a, b = a % x.ndim, b % x.ndim
    perm[a], perm[b] = perm[b], perm[a]
    return transpose(x, perm)


def t(x: Tensor) -> Tensor:
    """Transpose of a matrix; a 0-d or 1-d tensor comes back as it is.

    Args:
        x (Tensor): at most 2-d.

    Returns:
        Tensor: ``x`` with its two dims swapped.

    Example:
        >>> import framework as fw
        >>> fw.t(fw.to_tensor([[1, 2, 3]]))
        Tensor(shape=[3, 1], dtype=int64, device=cpu:0,
               [[1],
                [2],
                [3]])
    """
    if x.ndim > 2:
        raise OpArgumentError(f"[t] expects at most 2 dimensions, got shape {x.shape}; use transpose")
    return x if x.ndim < 2 else swapaxes(x, 0, 1)


def expand(x: Tensor, shape: Any) -> Tensor:
    """Broadcast ``x`` to ``shape``; ``broadcast_to`` is this function.

    Args:
        x (Tensor): the input; its dims align with the last ones of ``shape``.
        shape (int | list[int] | tuple[int]): the target shape; -1 keeps ``x``'s size there, and
            only dims of size 1 grow.

    Returns:
        Tensor: a new tensor (the values are copied).

    Example:
        >>> import framework as fw
        >>> fw.expand(fw.to_tensor([1, 2, 3]), [2, 3])
        Tensor(shape=[2, 3], dtype=int64, device=cpu:0,
               [[1, 2, 3],
                [1, 2, 3]])
        >>> fw.broadcast_to(fw.to_tensor([[1], [2]]), [-1, 2]).tolist()
        [[1, 1], [2, 2]]
    """
    shape = [shape] if isinstance(shape, int) else list(shape)
    if len(shape) < x.ndim:
        raise OpArgumentError(
            f"[expand] target shape {tuple(shape)} has fewer dims than the tensor {x.shape}"
        )
    src = (1,) * (len(shape) - x.ndim) + x.shape
    out = []
    for i, (s, t_) in enumerate(zip(src, shape)):
        t_ = (
            s if t_ == -1 else t_ if isinstance(t_, int) and type(t_) is not bool else int(t_)
        )  # a traced size kept
        if s != t_ and s != 1:
            raise OpArgumentError(
                f"[expand] cannot expand {x.shape} to {tuple(shape)}: dimension {i} is {s}, not 1 or {t_}"
            )
        out.append(t_)
    out = tuple(out)
    if out == x.shape:
        return x
    if src != x.shape:
        x = reshape(x, src)
    return apply1(OPS["expand"], [x], {"shape": out})


broadcast_to = expand


def expand_as(x: Tensor, y: Tensor) -> Tensor:
    """Broadcast ``x`` to the shape of ``y``.

    Args:
        x (Tensor): the input.
        y (Tensor): gives the shape.

    Returns:
        Tensor: ``expand(x, y.shape)``.

    Example:
        >>> import framework as fw
        >>> fw.expand_as(fw.to_tensor([[1], [2]]), fw.zeros([2, 3])).tolist()
        [[1, 1, 1], [2, 2, 2]]
    """
    return expand(x, y.shape)


def concat(x: Sequence[Tensor], axis: Any = 0, name: str | None = None) -> Tensor:
    """Join tensors along an existing dim; ``cat`` is this function.

    Args:
        x (list[Tensor]): at least one tensor, all of one rank (at least 1) and equal sizes but
            along ``axis``; their dtypes are promoted to a common one.
        axis (int | Tensor): the dim to join along.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: the joined tensor.

    Example:
        >>> import framework as fw
        >>> a = fw.to_tensor([[1, 2], [3, 4]])
        >>> fw.concat([a, fw.to_tensor([[5, 6]])], axis=0)
        Tensor(shape=[3, 2], dtype=int64, device=cpu:0,
               [[1, 2],
                [3, 4],
                [5, 6]])
        >>> fw.cat([a, a], axis=1).shape
        (2, 4)
    """
    xs = list(x)
    if isinstance(axis, Tensor):
        axis = int(axis.item())
    if not xs:
        raise OpArgumentError("[concat] expected a non-empty list of tensors")
    for i, t_ in enumerate(xs):
        if not isinstance(t_, Tensor):
            raise OpArgumentError(f"[concat] item {i} is a {type(t_).__name__}, expected a Tensor")
    nd = xs[0].ndim
    if nd == 0:
        raise OpArgumentError("[concat] cannot concatenate 0-d tensors; use stack")
    if not -nd <= axis < nd:
        raise OpArgumentError(f"[concat] axis {axis} is out of range for {nd} dimensions")
    ax = axis % nd
    d = xs[0].dtype
    for t_ in xs[1:]:
        if t_.dtype != d:
            d = _dt.promote(d, t_.dtype)
    for i, t_ in enumerate(xs):
        if t_.ndim != nd or any(a != b for j, (a, b) in enumerate(zip(t_.shape, xs[0].shape)) if j != ax):
            raise OpArgumentError(
                f"[concat] tensor {i} has shape {t_.shape}, but tensor 0 has {xs[0].shape}; all sizes but axis {ax} must match"
            )
    xs = [t_.astype(d) for t_ in xs]
    if len(xs) == 1:
        return xs[0]
    return apply1(OPS["concat"], xs, {"axis": ax})


cat = concat


def stack(xs: Sequence[Tensor], axis: int = 0, name: str | None = None) -> Tensor:
    """Join tensors of one shape along a new dim.

    Args:
        xs (list[Tensor]): at least one tensor, all of one shape.
        axis (int): the position of the new dim in the result.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: one dim more than the inputs.

    Example:
        >>> import framework as fw
        >>> a, b = fw.to_tensor([1, 2]), fw.to_tensor([3, 4])
        >>> fw.stack([a, b])
        Tensor(shape=[2, 2], dtype=int64, device=cpu:0,
               [[1, 2],
                [3, 4]])
        >>> fw.stack([a, b], axis=1).tolist()
        [[1, 3], [2, 4]]
    """
    xs = list(xs)
    if not xs:
        raise OpArgumentError("[stack] expected a non-empty list of tensors")
    for i, t_ in enumerate(xs):
        if t_.shape != xs[0].shape:
            raise OpArgumentError(
                f"[stack] tensor {i} has shape {t_.shape}, tensor 0 has {xs[0].shape}; they must be equal"
            )
    nd = xs[0].ndim + 1
    if not -nd <= axis < nd:
        raise OpArgumentError(f"[stack] axis {axis} is out of range for {nd} dimensions")
    return concat([unsqueeze(t_, axis % nd) for t_ in xs], axis=axis % nd)


def _plain(v: Any) -> bool:
    """An int that is only its value (not a traced dynamic size, an int subclass)."""
    return type(v) is int or isinstance(v, np.integer)


def slice_raw(x: Tensor, starts: tuple[int, ...], stops: tuple[int, ...], steps: tuple[int, ...]) -> Tensor:
    if (
        all(s == 0 for s in starts)
        and tuple(stops) == x.shape
        and all(s == 1 for s in steps)
        # a traced dynamic bound that is whole at this size only (`x[b % 3:]` at b = 12) is
        # a slice: the program's ops must not depend on the size
        and all(map(_plain, starts))
        and all(e is d or (_plain(e) and _plain(d)) for e, d in zip(stops, x.shape))
    ):
        return x
    return apply1(OPS["slice"], [x], {"starts": tuple(starts), "stops": tuple(stops), "steps": tuple(steps)})


def pad_raw(x: Tensor, pads: tuple[tuple[int, int], ...], value: float) -> Tensor:
    if all(b == 0 and e == 0 for b, e in pads):
        return x
    return apply1(OPS["pad"], [x], {"pads": tuple(pads), "value": value})


@decides_on_sizes
def _divides(n: int, k: int) -> bool:
    """Whether ``k`` equal parts cut a dim of ``n`` (under to_static a guard on a dynamic ``n``:
    ``split(x, 2)`` traced at even sizes serves every even size)."""
    return k > 0 and not n % k


def split(x: Tensor, num_or_sections: Any, axis: int = 0) -> list[Tensor]:
    """Cut ``x`` into parts along ``axis`` (Paddle's ``split``).

    Args:
        x (Tensor): the input, at least 1-d.
        num_or_sections (int | list[int]): an int: that many equal parts (it must divide the
            size); a list: the sizes of the parts, one of which may be -1 (the rest).
        axis (int): the dim to cut.

    Returns:
        list[Tensor]: the parts, in order.

    Example:
        >>> import framework as fw
        >>> x = fw.arange(6)
        >>> [p.tolist() for p in fw.split(x, 3)]
        [[0, 1], [2, 3], [4, 5]]
        >>> [p.tolist() for p in fw.split(x, [1, -1])]
        [[0], [1, 2, 3, 4, 5]]
    """
    if not -max(x.ndim, 1) <= axis < max(x.ndim, 1) or x.ndim == 0:
        raise OpArgumentError(f"[split] axis {axis} is out of range for shape {x.shape}")
    ax = axis % x.ndim
    n = x.shape[ax]
    if isinstance(num_or_sections, int):
        if not _divides(n, num_or_sections):
            raise OpArgumentError(
                f"[split] cannot split size {n} of axis {ax} into {num_or_sections} equal parts"
            )
        sizes = [n // num_or_sections] * num_or_sections
    else:
        sizes = list(num_or_sections)
        if sizes.count(-1) == 1:
            sizes[sizes.index(-1)] = n - (sum(sizes) + 1)
        if sum(sizes) != n or any(s < 0 for s in sizes):
            raise OpArgumentError(
                f"[split] sections {list(num_or_sections)} do not add up to size {n} of axis {ax}"
            )
    return list(call(OPS["split"], [x], {"sizes": tuple(sizes), "axis": ax}))


def _g_split(node: autograd.Node, gouts: list[Tensor | None]) -> list[Tensor | None]:
    """The gradient of ``split``: the parts' gradients concatenated back along the axis (a
    part without one contributes zeros), one concat instead of a zero-padded copy per part
    and their sum."""
    x = node.inputs[0]  # type: ignore[index]
    if x.stop_gradient or all(g is None for g in gouts):
        return [None]
    ax, parts = node.attrs["axis"], []
    for size, g in zip(node.attrs["sizes"], gouts):
        if g is None:
            shape = list(x.shape)
            shape[ax] = size
            g = zeros(shape, dtype=x.dtype, device=x.device)
        parts.append(g)
    return [concat(parts, ax)]


def contiguous_slice(shape: tuple[int, ...], attrs: dict[str, Any]) -> int | None:
    """The first element of ``slice(x, starts, stops, steps)`` in ``x`` (of ``shape``, row-major)
    when the slice is one contiguous run of it (every axis after the first one cut is whole,
    every axis before it keeps one index), else None."""
    try:
        starts, stops, steps = (tuple(attrs[k]) for k in ("starts", "stops", "steps"))
    except (KeyError, TypeError):
        return None
    if not len(starts) == len(stops) == len(steps) == len(shape):
        return None
    if not all(isinstance(v, (int, np.integer)) for v in (*starts, *stops, *steps)):
        return None
    off, stride, inner = 0, 1, True  # inner: every axis after this one is whole
    for d, a, b, st in reversed(list(zip(shape, starts, stops, steps))):
        if not (0 <= a <= b <= d and st >= 1):
            return None
        n = len(range(a, b, st))
        if not inner and n != 1:
            return None  # a cut axis inside: strided
        if n > 1 and st != 1:
            return None
        off += a * stride
        stride *= d
        inner = inner and n == d
    return off


@composite("split", grad=_g_split)
def _split_decomposition(x: Tensor, *, sizes: tuple[int, ...], axis: int) -> tuple[Tensor, ...]:
    """The parts of ``x`` along ``axis``, of the given sizes: slices. Eager autograd records
    the composite as one node (:func:`_g_split`); a traced program keeps the slices, whose
    summed zero-pads the canonical pass makes a concat.

    NOTE: in eager mode a part that is one contiguous run of ``x`` (:func:`contiguous_slice`:
    every axis before ``axis`` of size 1) is a view of its storage, as a reshape is (in-place
    updates rebind a tensor to new storage; only an optimizer's fused update writes parameters
    in place, and views of them see it, as in PyTorch): the Llama block's q, k, v split of the
    permuted qkv copied 3 MB a step (0.38 ms at two threads)."""
    views = TRACER.get() is None and not getattr(x, "_dist", False)
    out = []
    start = 0
    for s in sizes:
        starts = [0] * x.ndim
        stops = list(x.shape)
        starts[axis], stops[axis] = start, start + s
        attrs = {"starts": tuple(starts), "stops": tuple(stops), "steps": (1,) * x.ndim}
        off = contiguous_slice(x.shape, attrs) if views else None
        if off is None:
            out.append(slice_raw(x, attrs["starts"], attrs["stops"], attrs["steps"]))
        else:
            shape = tuple(b - a for a, b in zip(starts, stops))
            out.append(Tensor._make(x._block, x._offset + off * x.dtype.itemsize, shape, x.dtype, x.device))
        start += s
    return tuple(out)


def chunk(x: Tensor, chunks: int, axis: int = 0) -> list[Tensor]:
    """Cut ``x`` into ``chunks`` parts of equal size along ``axis``, the last one smaller if need be.

    Args:
        x (Tensor): the input.
        chunks (int): the number of parts wanted (positive); fewer come back when the size
            does not allow that many.
        axis (int): the dim to cut.

    Returns:
        list[Tensor]: the parts, in order.

    Example:
        >>> import framework as fw
        >>> [p.tolist() for p in fw.chunk(fw.arange(5), 2)]
        [[0, 1, 2], [3, 4]]
    """
    if not isinstance(chunks, (int, np.integer)) or isinstance(chunks, bool) or chunks <= 0:
        raise OpArgumentError(f"[chunk] chunks must be a positive int, got {chunks!r}")
    n = x.shape[axis]
    size = -(-n // chunks)
    sizes = [size] * (n // size) + ([n % size] if n % size else [])
    return split(x, sizes, axis)


def unbind(x: Tensor, axis: int = 0) -> list[Tensor]:
    """The slices of ``x`` along ``axis``, that dim removed.

    Args:
        x (Tensor): the input, at least 1-d.
        axis (int): the dim to take apart.

    Returns:
        list[Tensor]: ``x.shape[axis]`` tensors.

    Example:
        >>> import framework as fw
        >>> [p.tolist() for p in fw.unbind(fw.to_tensor([[1, 2], [3, 4]]), axis=1)]
        [[1, 3], [2, 4]]
    """
    parts = split(x, x.shape[axis], axis)
    for p in parts:  # the rows that share x's storage (split's contiguous parts) view it, as Paddle's
        if p._block is x._block and p._base is None:
            x._adopt(p)
    return [squeeze(p, axis) for p in parts]


def flip(x: Tensor, axis: Any) -> Tensor:
    """Reverse the order of the elements of ``x`` along ``axis``.

    Args:
        x (Tensor): the input.
        axis (int | list[int]): the dims to reverse.

    Returns:
        Tensor: a new tensor.

    Example:
        >>> import framework as fw
        >>> x = fw.to_tensor([[1, 2], [3, 4]])
        >>> fw.flip(x, 0)
        Tensor(shape=[2, 2], dtype=int64, device=cpu:0,
               [[3, 4],
                [1, 2]])
        >>> fw.flip(x, [0, 1]).tolist()
        [[4, 3], [2, 1]]
    """
    for a in normalize_axes("flip", axis, x.ndim):
        n = x.shape[a]
        x = apply1(OPS["gather"], [x, arange(n - 1, -1, -1, device=x.device)], {"axis": a})
    return x


def _repeat_times(repeat_times: Any) -> list[int]:
    """``tile``'s repeat counts as ints >= 0 (a list, a tuple or an int tensor; Paddle's forms)."""
    if isinstance(repeat_times, Tensor):
        repeat_times = repeat_times.tolist()
    if not isinstance(repeat_times, (list, tuple)):
        raise OpArgumentError(
            f"[tile] repeat_times must be a list or tuple of ints (or an int tensor), got {type(repeat_times).__name__}"
        )
    reps = []
    for i, r in enumerate(repeat_times):
        v = r.item() if isinstance(r, Tensor) and r.size == 1 else r
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
            raise OpArgumentError(
                f"[tile] repeat_times[{i}] must be an int >= 0, got {r!r} (repeat_times={list(repeat_times)!r})"
            )
        reps.append(int(v))
    return reps


def tile(x: Tensor, repeat_times: Sequence[int]) -> Tensor:
    """Repeat ``x`` ``repeat_times[i]`` times along each dim ``i``.

    Args:
        x (Tensor): the input.
        repeat_times (list[int]): repeats per dim; when it is longer than ``x``'s rank, ``x``
            gets leading dims of size 1, when shorter it applies to the last dims.

    Returns:
        Tensor: a new tensor.

    Example:
        >>> import framework as fw
        >>> fw.tile(fw.to_tensor([1, 2]), [2, 2])
        Tensor(shape=[2, 4], dtype=int64, device=cpu:0,
               [[1, 2, 1, 2],
                [1, 2, 1, 2]])
    """
    reps = _repeat_times(repeat_times)
    out = [r * s for r, s in zip(reps[::-1], x.shape[::-1])] + reps[: max(0, len(reps) - x.ndim)][::-1]
    if math.prod(max(d, 1) for d in out) >= 2**62:
        raise OpArgumentError(
            f"[tile] repeat_times {reps} make x of shape {list(x.shape)} into {out[::-1]}, more than any array "
            "can index; check repeat_times"
        )
    if len(reps) < x.ndim:
        reps = [1] * (x.ndim - len(reps)) + reps
    x = reshape(x, (1,) * (len(reps) - x.ndim) + x.shape)
    inter = []
    target = []
    for r, s in zip(reps, x.shape):
        inter += [1, s]
        target += [r, s]
    y = expand(reshape(x, tuple(inter)), tuple(target))
    return reshape(y, tuple(r * s for r, s in zip(reps, x.shape)))
