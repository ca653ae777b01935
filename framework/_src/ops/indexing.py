"""Indexing: gather/scatter, ``x[key]`` and ``x[key] = value``.

Basic keys (ints, slices with positive steps, None, Ellipsis) become one ``slice`` kernel
plus a reshape. Integer-array and boolean-mask keys are resolved on the host into flat
element indices (numpy's own indexing rules, so every numpy key works the same), then one
``gather``/``scatter`` runs on the device. Reading a mask or index tensor synchronizes.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from adapter_api import OpArgumentError

from .. import autograd, dispatch
from .. import dtypes as _dt
from ..tensor import Tensor, decides_on_sizes, to_tensor
from . import math as M
from .base import OPS, apply1
from .creation import arange
from .shape import flip, slice_raw
from .views import alias, note_write, rebind  # noqa: F401  (in-place writes; other ops import them from here)


class IndexOutOfRangeError(OpArgumentError, IndexError):
    """An index is outside a dimension (also ends ``for row in tensor`` loops)."""


def _axis(name: str, axis: int, ndim: int) -> int:
    if not isinstance(axis, (int, np.integer)) or not -max(ndim, 1) <= axis < max(ndim, 1):
        raise OpArgumentError(f"[{name}] axis {axis!r} is out of range for a tensor with {ndim} dimensions")
    return int(axis) % max(ndim, 1)


def _index_tensor(name: str, index: Any, device: Any) -> Tensor:
    if not isinstance(index, Tensor):
        index = to_tensor(np.asarray(index), device=device)
    if index.dtype.kind not in "iu":
        raise OpArgumentError(f"[{name}] index must hold integers, got dtype {index.dtype}")
    if index.device != device:
        raise OpArgumentError(
            f"[{name}] index is on {index.device} but the tensor is on {device}; move it with index.to('{device}')"
        )
    return index if index.dtype == _dt.int64 else index.astype(_dt.int64)


def gather(x: Tensor, index: Any, axis: int = 0, name: str | None = None) -> Tensor:
    """The entries of ``x`` at ``index`` along ``axis`` (``numpy.take``); ``index_select`` is this function.

    Args:
        x (Tensor): the input, at least 1-d.
        index (Tensor | list[int]): integer positions along ``axis``, of any shape, in
            ``[-n, n)`` for an axis of size ``n`` (a negative one counts from the end, as in
            Paddle); one outside is an error.
        axis (int): the dim to index.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: ``x``'s shape with dim ``axis`` replaced by ``index``'s shape.

    Example:
        >>> import framework as fw
        >>> x = fw.to_tensor([[1, 2, 3], [4, 5, 6]])
        >>> fw.gather(x, fw.to_tensor([1, 0]))
        Tensor(shape=[2, 3], dtype=int64, device=cpu:0,
               [[4, 5, 6],
                [1, 2, 3]])
        >>> fw.index_select(x, fw.to_tensor([2, 0]), axis=1).tolist()
        [[3, 1], [6, 4]]
        >>> fw.gather(x, fw.to_tensor([-1]), axis=1).tolist()
        [[3], [6]]
    """
    if x.ndim == 0:
        raise OpArgumentError("[gather] cannot gather from a 0-d tensor")
    ax = _axis("gather", axis, x.ndim)
    n = x.shape[ax]
    if not isinstance(index, Tensor):  # a host list: wrap and check here, no device op
        host = np.asarray(index)
        if host.dtype.kind in "iu" and host.size:
            _check_wrapped_range(host, ax, n)
            index = np.where(host < 0, host + n, host)
    idx = _index_tensor("gather", index, x.device)
    if not isinstance(index, Tensor):
        return take_rows(x, idx, ax)  # wrapped and checked on the host above
    if not dispatch.kernel_takes("gather", "wrap", x.device.type, x.dtype):
        # a plugin of contract < 1.2: its gather has no wrap, so wrap here (element-wise ops)
        try:
            return take_rows(x, M.where(idx < 0, idx + n, idx), ax)
        except OpArgumentError:
            _check_wrapped_range(idx.numpy(), ax, n)  # names the user's index, not the wrapped one
            raise
    try:  # negative indices count from the end (Paddle's rule): the kernel wraps and checks
        return apply1(OPS["gather"], [x, idx], {"axis": ax, "wrap": True})
    except IndexOutOfRangeError:
        raise
    except OpArgumentError as exc:
        raise IndexOutOfRangeError(str(exc)) from None


def _check_wrapped_range(index: np.ndarray, axis: int, n: int) -> None:
    """Raise :class:`IndexOutOfRangeError` for the first entry of ``index`` outside Paddle's
    ``[-n, n)``."""
    bad = index[(index < -n) | (index >= n)]
    if bad.size:
        raise IndexOutOfRangeError(
            f"[gather] index {int(bad.flat[0])} is out of range for axis {axis} of size {n}; "
            f"indices must be in [-{n}, {n})"
        )


def take_rows(x: Tensor, index: Tensor, axis: int) -> Tensor:
    """The ``gather`` kernel itself, for internal callers: ``index`` is int64 on ``x``'s device
    and every entry must lie in ``[0, x.shape[axis])`` (the kernel's bounds check raises
    otherwise: labels and ids use it as their range check); ``axis`` is non-negative."""
    if index.dtype != _dt.int64:
        index = index.astype(_dt.int64)
    return apply1(OPS["gather"], [x, index], {"axis": axis})


index_select = gather

_PERMUTATIONS: dict[tuple[tuple[int, ...], Any], Tensor] = {}


def permutation(perm: Any, device: Any) -> Tensor:
    """The int64 index tensor of the permutation ``perm`` of ``range(len(perm))`` for
    :func:`gather` (made once per permutation and device). Its gradient is a gather by the
    inverse permutation, not a scatter-add into zeros, and the compiler fuses a gather along
    the row by a rotation (``perm[j] = (j + s) % n``) into the kernel that reads it."""
    p = tuple(int(i) for i in perm)
    if sorted(p) != list(range(len(p))):
        raise OpArgumentError(f"[permutation] {list(p)} is not a permutation of range({len(p)})")
    key = (p, device)
    t = _PERMUTATIONS.get(key)
    if t is None:
        inv = tuple(int(i) for i in np.argsort(p))
        t = _PERMUTATIONS[key] = to_tensor(np.asarray(p, np.int64), device=device)
        u = (
            t
            if inv == p
            else _PERMUTATIONS.setdefault((inv, device), to_tensor(np.asarray(inv, np.int64), device=device))
        )
        t._inverse, u._inverse = u, t  # type: ignore[attr-defined]
    return t


def _scatter(opname: str, x: Tensor, index: Any, src: Any, axis: int, wrap: bool = True) -> Tensor:
    """``scatter``/``scatter_add`` of ``src`` into ``x`` at ``index`` along ``axis``; with
    ``wrap`` (the public functions) a negative index counts from the end, as in Paddle."""
    ax = _axis(opname, axis, x.ndim)
    idx = _index_tensor(opname, index, x.device)
    n = x.shape[ax] if x.ndim else 1
    if wrap:
        idx = M.where(idx < 0, idx + n, idx)
    want = x.shape[:ax] + idx.shape + x.shape[ax + 1 :]
    if not isinstance(src, Tensor):
        src = to_tensor(src, dtype=x.dtype, device=x.device)
    if src.dtype != x.dtype:
        src = src.astype(x.dtype)
    if src.shape != want:
        try:
            src = src.expand(want)
        except OpArgumentError:
            raise OpArgumentError(
                f"[{opname}] updates have shape {src.shape}, expected {want} (x {x.shape}, index {idx.shape}, axis {ax})"
            ) from None
    if not wrap:
        return apply1(OPS[opname], [x, idx, src], {"axis": ax})
    try:
        return apply1(OPS[opname], [x, idx, src], {"axis": ax})
    except OpArgumentError as exc:
        raise IndexOutOfRangeError(
            f"[{opname}] an index is out of range for axis {ax} of size {n}; indices must be in "
            f"[-{n}, {n}) (the device reports, after adding {n} to negative ones: {exc})"
        ) from None


def scatter_rows(opname: str, x: Tensor, index: Tensor, src: Tensor, axis: int) -> Tensor:
    """The ``scatter``/``scatter_add`` kernel (``opname``) for internal callers (gradients):
    ``index`` must lie in ``[0, x.shape[axis])``, no wrapping of negative ones."""
    return _scatter(opname, x, index, src, axis, wrap=False)


def scatter_add(x: Tensor, index: Any, updates: Any, axis: int = 0) -> Tensor:
    """A copy of ``x`` with ``updates`` added at ``index`` along ``axis``; repeated indices accumulate.

    Args:
        x (Tensor): the input.
        index (Tensor | list[int]): integer positions along ``axis``.
        updates (Tensor | number): of ``x``'s shape with dim ``axis`` replaced by ``index``'s
            shape (broadcast to it); cast to ``x``'s dtype.
        axis (int): the dim to index.

    Returns:
        Tensor: like ``x``.

    Example:
        >>> import framework as fw
        >>> fw.scatter_add(fw.zeros([3]), fw.to_tensor([1, 1]), fw.to_tensor([5.0, 7.0]))
        Tensor(shape=[3], dtype=float32, device=cpu:0,
               [ 0., 12.,  0.])
    """
    return _scatter("scatter_add", x, index, updates, axis)


def scatter(x: Tensor, index: Any, updates: Any, axis: int = 0, overwrite: bool = True) -> Tensor:
    """A copy of ``x`` with ``updates`` written at ``index`` along ``axis``.

    Args:
        x (Tensor): the input.
        index (Tensor | list[int]): integer positions along ``axis``.
        updates (Tensor | number): of ``x``'s shape with dim ``axis`` replaced by ``index``'s
            shape (broadcast to it); cast to ``x``'s dtype.
        axis (int): the dim to index.
        overwrite (bool): True: the updates replace the entries (the last one wins); False:
            the rows ``index`` names are zeroed, then every update to them is added (as Paddle).

    Returns:
        Tensor: like ``x``.

    Example:
        >>> import framework as fw
        >>> fw.scatter(fw.zeros([3, 2]), fw.to_tensor([2, 0]), fw.to_tensor([[1.0, 1.0], [2.0, 2.0]]))
        Tensor(shape=[3, 2], dtype=float32, device=cpu:0,
               [[2., 2.],
                [0., 0.],
                [1., 1.]])
    """
    if not overwrite:
        cleared = _scatter("scatter", x, index, 0, axis)
        return _scatter("scatter_add", cleared, index, updates, axis)
    return _scatter("scatter", x, index, updates, axis)


def checked_index(name: str, index: Tensor, size: int, what: str, negative: bool = False) -> Tensor:
    """``index`` unchanged, after the device's gather bounds check against ``size`` (a value
    outside ``[0, size)`` raises an error naming ``name`` and ``what``; nothing is read back).
    With ``negative``, values in ``[-size, 0)`` count from the end (Paddle's rule for gather,
    take/put_along_axis and the ``*_nd`` ops): they come back with ``size`` added."""
    low = -size if negative else 0
    if negative:
        index = M.where(index < 0, index + size, index)
    try:
        return take_rows(arange(size, device=index.device), index.reshape((-1,)), 0).reshape(index.shape)
    except OpArgumentError as exc:
        after = f", after adding {size} to negative ones" if negative else ""
        raise IndexOutOfRangeError(
            f"[{name}] {what} must be in [{low}, {size}); the device reports{after}: {exc}"
        ) from None


def _flat_positions(name: str, x: Tensor, idx_shape: tuple[int, ...], indices: Tensor, axis: int) -> Tensor:
    """Flat element offsets of take_along_axis positions (computed on the device); each index
    is checked against its own axis, so one past the end of a row is an error, not the next row."""
    if any(idx_shape[d] > x.shape[d] for d in range(x.ndim) if d != axis):
        raise OpArgumentError(
            f"[{name}] indices have shape {idx_shape} but x has {x.shape}: outside axis {axis} the "
            f"indices may not be larger than x"
        )
    indices = checked_index(
        name, indices, x.shape[axis], f"indices along axis {axis} (size {x.shape[axis]})", negative=True
    )
    strides = [int(np.prod(x.shape[i + 1 :])) for i in range(x.ndim)]
    flat = indices * strides[axis]
    for d in range(x.ndim):
        if d == axis:
            continue
        shape = [1] * x.ndim
        shape[d] = idx_shape[d]
        flat = flat + arange(idx_shape[d], device=x.device).reshape(shape) * strides[d]
    return flat


def _along_axis_shape(x: Tensor, idx: Tensor, ax: int) -> tuple[int, ...]:
    """Paddle's broadcast of take_along_axis: each dim but ``axis`` to the larger of the two."""
    return tuple(
        idx.shape[d] if d == ax else (0 if 0 in (x.shape[d], idx.shape[d]) else max(x.shape[d], idx.shape[d]))
        for d in range(x.ndim)
    )


def take_along_axis(x: Tensor, indices: Tensor, axis: int, broadcast: bool = True) -> Tensor:
    """The entries of ``x`` at ``indices`` along ``axis``, matched position by position elsewhere.

    As ``numpy.take_along_axis``: ``out[i, j] = x[i, indices[i, j]]`` for ``axis=1``.

    Args:
        x (Tensor): the input.
        indices (Tensor): integers, of ``x``'s rank.
        axis (int): the dim to index.
        broadcast (bool): outside ``axis``, ``indices`` and ``x`` broadcast to the larger size
            (Paddle's default); False: ``indices`` may be no larger than ``x`` there.

    Returns:
        Tensor: of ``indices``'s shape (after the broadcast).

    Example:
        >>> import framework as fw
        >>> x = fw.to_tensor([[1, 2, 3], [4, 5, 6]])
        >>> fw.take_along_axis(x, fw.to_tensor([[2], [0]]), axis=1)
        Tensor(shape=[2, 1], dtype=int64, device=cpu:0,
               [[3],
                [4]])
    """
    ax = _axis("take_along_axis", axis, x.ndim)
    idx = _index_tensor("take_along_axis", indices, x.device)
    if idx.ndim != x.ndim:
        raise OpArgumentError(f"[take_along_axis] indices need {x.ndim} dims like x, got shape {idx.shape}")
    if broadcast:
        if any(a != b and 1 not in (a, b) for d, (a, b) in enumerate(zip(x.shape, idx.shape)) if d != ax):
            raise OpArgumentError(
                f"[take_along_axis] indices have shape {idx.shape} but x has {x.shape}: outside axis {ax} "
                f"their sizes must match or be 1 (they broadcast)"
            )
        shape = _along_axis_shape(x, idx, ax)
        idx = idx.expand(shape)
        x = x.expand(shape[:ax] + (x.shape[ax],) + shape[ax + 1 :])
    flat = _flat_positions("take_along_axis", x, idx.shape, idx, ax)
    return gather(x.reshape((-1,)), flat, axis=0)


def put_along_axis(
    x: Tensor,
    indices: Tensor,
    values: Any,
    axis: int,
    reduce: str = "assign",
    include_self: bool = True,
    broadcast: bool = True,
) -> Tensor:
    """The write-and-add core of ``fw.put_along_axis`` for the ops below the composites.

    ``reduce`` is ``"assign"`` or ``"add"`` with ``include_self``; the public function
    (``composites/scatter_reduce.py``) adds the other reductions and documents the arguments.

    Example:
        >>> import framework as fw
        >>> from framework._src.ops import indexing
        >>> x = fw.to_tensor([[1, 2, 3], [4, 5, 6]])
        >>> indexing.put_along_axis(x, fw.to_tensor([[0], [0]]), 10, axis=1, reduce="add").tolist()
        [[11, 2, 3], [14, 5, 6]]
    """
    ax = _axis("put_along_axis", axis, x.ndim)
    idx = _index_tensor("put_along_axis", indices, x.device)
    if idx.ndim != x.ndim:
        raise OpArgumentError(f"[put_along_axis] indices need {x.ndim} dims like x, got shape {idx.shape}")
    if reduce not in ("assign", "add"):
        raise OpArgumentError(f"[put_along_axis] reduce must be 'assign' or 'add', got {reduce!r}")
    if not include_self:
        raise OpArgumentError("[put_along_axis] include_self=False is not supported; use the default True")
    if not isinstance(values, Tensor):
        values = to_tensor(values, dtype=x.dtype, device=x.device)
    if broadcast and all(i <= n for i, n in zip(idx.shape, x.shape, strict=True)):
        idx = idx.expand(x.shape[:ax] + (idx.shape[ax],) + x.shape[ax + 1 :])
    flat = _flat_positions("put_along_axis", x, idx.shape, idx, ax)
    fn = scatter_add if reduce == "add" else scatter
    return fn(x.reshape((-1,)), flat.reshape((-1,)), values.expand(idx.shape).reshape((-1,)), axis=0).reshape(
        x.shape
    )


# -- x[key] ---------------------------------------------------------------------------------
def _normalize_key(key: Any) -> tuple[Any, ...]:
    if not isinstance(key, tuple):
        key = (key,)
    return key


def _is_basic(k: Any) -> bool:
    return (
        k is None
        or k is Ellipsis
        or isinstance(k, slice)
        or (isinstance(k, (int, np.integer)) and not isinstance(k, bool))
    )


def _host_key(key: tuple[Any, ...]) -> tuple[Any, ...]:
    out = []
    for k in key:
        if isinstance(k, Tensor):
            k = k.numpy()
        elif isinstance(k, list):
            k = np.asarray(k)
        if isinstance(k, np.ndarray) and k.dtype.kind not in "biu":
            raise OpArgumentError(f"[getitem] index arrays must hold integers or bools, got dtype {k.dtype}")
        if isinstance(k, slice):
            for part in (k.start, k.stop, k.step):
                if isinstance(part, Tensor):
                    k = slice(
                        *(int(p.item()) if isinstance(p, Tensor) else p for p in (k.start, k.stop, k.step))
                    )
                    break
        out.append(k)
    return tuple(out)


def _np_index_error(op: str, x: Tensor, exc: Exception) -> IndexOutOfRangeError:
    return IndexOutOfRangeError(f"[{op}] {exc} (tensor shape {x.shape})")


def getitem(x: Tensor, key: Any) -> Tensor:
    key = _host_key(_normalize_key(key))
    if all(_is_basic(k) for k in key):
        return _basic_getitem(x, key)
    grid = np.arange(x.numel(), dtype=np.int64).reshape(x.shape)
    try:
        flat = grid[key]
    except IndexError as exc:
        raise _np_index_error("getitem", x, exc) from None
    idx = to_tensor(np.ascontiguousarray(flat).reshape(-1), device=x.device)
    return gather(x.reshape((-1,)), idx, axis=0).reshape(flat.shape)


def _basic_getitem(x: Tensor, key: tuple[Any, ...]) -> Tensor:
    n_real = sum(1 for k in key if k is not None and k is not Ellipsis)
    if sum(1 for k in key if k is Ellipsis) > 1:
        raise OpArgumentError("[getitem] an index can only have a single ellipsis ('...')")
    if n_real > x.ndim:
        raise IndexOutOfRangeError(
            f"[getitem] too many indices for a tensor of shape {x.shape}: {n_real} were given"
        )
    full: list[Any] = []
    for k in key:
        if k is Ellipsis:
            full.extend([slice(None)] * (x.ndim - n_real))
        else:
            full.append(k)
    full.extend([slice(None)] * (x.ndim - sum(1 for k in full if k is not None)))
    starts, stops, steps, out_shape, flips = [], [], [], [], []
    d = 0
    for k in full:
        if k is None:
            out_shape.append(1)
            continue
        size = x.shape[d]
        if isinstance(k, slice):
            st, sp, step, n, flipped = slice_bounds(k, size)
            starts.append(st)
            stops.append(sp)
            steps.append(step)
            out_shape.append(n)
            if flipped:
                flips.append(len(starts) - 1)
        else:
            i = index_bound(k, size, d)
            starts.append(i)
            stops.append(i + 1)
            steps.append(1)
        d += 1
    y = slice_raw(x, tuple(starts), tuple(stops), tuple(steps))
    if flips:
        y = flip(y, flips)
    return y.reshape(tuple(out_shape))


# NOTE: the bounds of a basic key are worked out here rather than by ``slice.indices`` (which
# makes every size a plain int): a dynamic dim traced by to_static stays symbolic, and every
# comparison that clamps a bound to it is a guard of the program (``x[:5]`` is ``x[:n]`` where
# ``n < 5``: another program). Plain ints take ``slice.indices``'s own rules.
def _int(v: Any) -> Any:
    """An index or bound as an int (a traced dynamic size, an int subclass, kept)."""
    if isinstance(v, int) and type(v) is not bool:
        return v
    try:
        return operator.index(v)
    except TypeError:
        raise TypeError(f"[getitem] indices must be integers or None, got {type(v).__name__} {v!r}") from None


@decides_on_sizes
def index_bound(k: Any, n: int, axis: int) -> int:
    """The position of index ``k`` along ``axis`` (of size ``n``): negative counts from the end.

    Example:
        >>> index_bound(-1, 4, 0), index_bound(2, 4, 0)
        (3, 2)
    """
    i = _int(k)
    j = i + n if i < 0 else i
    if j < 0 or j >= n:
        raise IndexOutOfRangeError(f"[getitem] index {i} is out of bounds for axis {axis} with size {n}")
    return j


@decides_on_sizes
def _clamp(v: Any, n: int, step: int) -> Any:
    """A bound of a slice over ``n`` entries clamped as ``slice.indices`` does; a comparison
    that cannot change it (``stop == n``) is not made, so it is no guard."""
    if v < 0:
        v = v + n
        if step > 0 and v < 0:
            return 0
        if step < 0 and v < -1:
            return -1
    elif step > 0 and v > n:
        return n
    elif step < 0 and v >= n:
        return n - 1
    return v


@decides_on_sizes
def _ceil_count(start: Any, stop: Any, step: int, n: int, affine: bool) -> Any:
    """``ceil((stop - start) / step)`` for ``stop > start`` and ``step > 1``. ``affine``: each
    bound is a plain int or an int plus ``n``; for a traced ``n`` the count is then written
    with ``n // step`` and ``n % step`` (a program's derived sizes) rather than a division of
    a sum of sizes, which a program cannot hold (it would be traced per size)."""
    if type(n) is int or type(start) is type(stop) is int or not affine:
        return -((start - stop) // step)
    # start = a_s * n + c_s, stop = a_e * n + c_e; the difference is alpha * n + c
    a_s, a_e = (0 if type(v) is int else 1 for v in (start, stop))
    alpha, c = a_e - a_s, int(stop) - a_e * int(n) - (int(start) - a_s * int(n))
    if alpha == 0:
        return -(-c // step)
    m = c + step - 1 if alpha == 1 else -c  # ceil((n + c) / k) = (n + c + k - 1) // k; -((n - c) // k)
    a, b = divmod(m, step)
    # (n + m) // k = n // k + a + (n % k + b) // k, the last 0 or 1: 0 where b = 0, n % 2
    # where k = 2; else it depends on n % k in a way no polynomial says (traced per size)
    if b and step != 2:
        return -((start - stop) // step)
    count = n // step + a + (n % step if b else 0)
    return count if alpha == 1 else -count


@decides_on_sizes
def slice_bounds(k: slice, n: int) -> tuple[Any, Any, int, Any, bool]:
    """``k`` over a dim of ``n`` entries as the slice primitive takes it: ``(start, stop, step,
    count, flipped)`` with ``step > 0``; ``flipped``: ``k``'s step is negative, the entries
    are these in reverse (Python's slice rules).

    Example:
        >>> slice_bounds(slice(None, 5), 3), slice_bounds(slice(None, None, -2), 5)
        ((0, 3, 1, 3, False), (0, 5, 2, 3, True))
    """
    a, b, c = k.start, k.stop, k.step
    affine = (a is None or type(a) is int) and (b is None or type(b) is int)
    step = 1 if c is None else _int(c)
    if step == 0:
        raise OpArgumentError(f"[getitem] slice step cannot be zero (got {k})")
    if type(n) is int and affine and type(step) is int:
        st, sp, step = k.indices(n)  # plain ints: the builtin rules (eager's path)
    else:
        st = (0 if step > 0 else n - 1) if k.start is None else _clamp(_int(k.start), n, step)
        sp = (n if step > 0 else -1) if k.stop is None else _clamp(_int(k.stop), n, step)
    if step > 0:
        if sp < st:
            sp = st
        count = sp - st if step == 1 else 0 if sp == st else _ceil_count(st, sp, step, n, affine)
        return st, sp, step, count, False
    if not sp < st:
        return 0, 0, -step, 0, True
    count = st - sp if step == -1 else _ceil_count(sp, st, -step, n, affine)
    return st - (count - 1) * -step, st + 1, -step, count, True


def setitem(x: Tensor, key: Any, value: Any) -> None:
    """``x[key] = value``: an out-of-place scatter whose result is rebound into ``x``."""
    if autograd.is_grad_enabled() and x.is_leaf and not x.stop_gradient:
        raise OpArgumentError(
            "[setitem] a leaf tensor that requires grad cannot be modified in place; "
            "wrap the assignment in `with fw.no_grad():` or assign to a copy"
        )
    key = _host_key(_normalize_key(key))
    grid = np.arange(x.numel(), dtype=np.int64).reshape(x.shape)
    try:
        flat = grid[key]
    except IndexError as exc:
        raise _np_index_error("setitem", x, exc) from None
    flat = np.ascontiguousarray(flat)
    if flat.size == 0:
        return
    if isinstance(value, Tensor):
        v = value.astype(x.dtype) if value.dtype != x.dtype else value
        if v.device != x.device:
            raise OpArgumentError(
                f"[setitem] value is on {v.device} but the tensor is on {x.device}; move it with value.to('{x.device}')"
            )
    else:
        try:
            v = to_tensor(np.asarray(value), dtype=x.dtype, device=x.device)
        except (TypeError, ValueError) as exc:
            raise OpArgumentError(
                f"[setitem] cannot assign {type(value).__name__} to a {x.dtype} tensor: {exc}"
            ) from None
    try:
        v = v.expand(flat.shape)
    except OpArgumentError:
        raise OpArgumentError(
            f"[setitem] value of shape {v.shape} cannot be broadcast to the indexed shape {flat.shape}"
        ) from None
    idx = to_tensor(flat.reshape(-1), device=x.device)
    src = alias(x)
    r = scatter(src.reshape((-1,)), idx, v.reshape((-1,)), axis=0).reshape(x.shape)
    rebind(x, r, "__setitem__", src)


def nonzero(x: Tensor, as_tuple: bool = False) -> Any:
    """The indices of the non-zero elements of ``x`` (read back to the host).

    Args:
        x (Tensor): the input.
        as_tuple (bool): False: one ``[n, x.ndim]`` tensor, a row per element; True: a tuple of
            ``x.ndim`` 1-d tensors, one per dim.

    Returns:
        Tensor | tuple[Tensor, ...]: int64 indices.

    Example:
        >>> import framework as fw
        >>> x = fw.to_tensor([[0, 1], [2, 0]])
        >>> fw.nonzero(x)
        Tensor(shape=[2, 2], dtype=int64, device=cpu:0,
               [[0, 1],
                [1, 0]])
        >>> [i.tolist() for i in fw.nonzero(x, as_tuple=True)]
        [[0, 1], [1, 0]]
    """
    idx = np.nonzero(x.numpy())
    if as_tuple:
        return tuple(to_tensor(i.astype(np.int64), device=x.device) for i in idx)
    return to_tensor(np.stack(idx, axis=-1).astype(np.int64).reshape(-1, x.ndim), device=x.device)


def masked_select(x: Tensor, mask: Tensor) -> Tensor:
    """The elements of ``x`` where ``mask`` is True, as a 1-d tensor.

    Args:
        x (Tensor): the input.
        mask (Tensor): bool, broadcast to ``x``'s shape.

    Returns:
        Tensor: 1-d, in row-major order.

    Example:
        >>> import framework as fw
        >>> x = fw.to_tensor([[1, 2, 3], [4, 5, 6]])
        >>> fw.masked_select(x, x > 3)
        Tensor(shape=[3], dtype=int64, device=cpu:0,
               [4, 5, 6])
    """
    if mask.dtype != _dt.bool_:
        raise OpArgumentError(f"[masked_select] mask must be bool, got {mask.dtype}")
    if mask.shape != x.shape:
        mask = mask.expand(x.shape)
    return getitem(x, mask)


def masked_fill(x: Tensor, mask: Tensor, value: Any) -> Tensor:
    """A copy of ``x`` with ``value`` where ``mask`` is True.

    Args:
        x (Tensor): the input.
        mask (Tensor): bool, broadcast with ``x``.
        value (number | Tensor): the value to put.

    Returns:
        Tensor: ``where(mask, value, x)``.

    Example:
        >>> import framework as fw
        >>> x = fw.to_tensor([[1, 2, 3], [4, 5, 6]])
        >>> fw.masked_fill(x, x > 3, 0)
        Tensor(shape=[2, 3], dtype=int64, device=cpu:0,
               [[1, 2, 3],
                [0, 0, 0]])
    """
    return M.where(mask, value, x)


def where(condition: Any, x: Any = None, y: Any = None, name: str | None = None) -> Any:
    """Elementwise ``x if condition else y``; with ``condition`` alone, the indices where it holds.

    Args:
        condition (Tensor): read as bool; broadcast with ``x`` and ``y``.
        x (Tensor | number, optional): taken where ``condition`` holds.
        y (Tensor | number, optional): taken elsewhere; ``x`` and ``y`` are promoted to one dtype.
        name: ignored (Paddle's signature).

    Returns:
        Tensor | tuple[Tensor, ...]: the chosen values; without ``x`` and ``y``,
        ``nonzero(condition, as_tuple=True)``, as in Paddle.

    Example:
        >>> import framework as fw
        >>> x = fw.to_tensor([[1, 2, 3], [4, 5, 6]])
        >>> fw.where(x > 3, x, -x)
        Tensor(shape=[2, 3], dtype=int64, device=cpu:0,
               [[-1, -2, -3],
                [ 4,  5,  6]])
        >>> [i.tolist() for i in fw.where(fw.to_tensor([True, False, True]))]
        [[0, 2]]
    """
    if x is None and y is None:
        return nonzero(condition, as_tuple=True)
    return M.where(condition, x, y)
