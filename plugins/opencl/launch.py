"""What every OpenCL kernel launch of ``kernels.py`` shares: the dtype sets, the index block
that describes a strided region to ``math.cl``, grids, collapsed strides, index checks that
become errors naming the op, and the binder that records a call's arguments once per view.

>>> from plugins.opencl.launch import _strides
>>> _strides([2, 3, 4])
[12, 4, 1]
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from adapter_api import KernelError, OarlockError, OpArgumentError

if TYPE_CHECKING:
    from .runtime import CLView, OpenCLDevice

FLOATS = ("float16", "float32", "float64")
INTS = ("uint8", "int32", "int64", "uint16", "uint32", "uint64")  # wide uints: see programs.TYPES
NUMERIC = FLOATS + INTS
ALL = NUMERIC + ("bool",)

_i64 = np.int64
_MAXD = 8
_INDEX = np.dtype(
    [
        ("rank", np.int64),
        ("flat", np.int64),
        ("shape", np.int64, _MAXD),
        ("s0", np.int64, _MAXD),
        ("s1", np.int64, _MAXD),
        ("s2", np.int64, _MAXD),
    ]
)
_FLAT = np.zeros((), _INDEX)
_FLAT["rank"], _FLAT["flat"] = 1, 1
_ONE_A, _ONE_B = _FLAT.copy(), _FLAT.copy()  # binary ops: a (or b) is a single element
_ONE_A["flat"], _ONE_B["flat"] = 2, 3


# -- launch helpers ----------------------------------------------------------------------
_NAMES = {np.dtype(n): n for n in ALL}  # dtype.name costs microseconds per launch


def _env(ctx: Any, dtype: np.dtype) -> tuple[OpenCLDevice, Any]:
    dev = ctx.runtime.device(ctx.device_index)
    if dtype.itemsize == 8 and dtype.kind == "f" and not dev.has_fp64:
        from .programs import require_fp64

        require_fp64(dev)
    return dev, (ctx.stream if ctx.stream is not None else dev.queue)


def _launch(dev: OpenCLDevice, q: Any, kernel: Any, n: int, *args: Any) -> None:
    ls = dev.local_size
    dev.launch(q, kernel, (-(-n // ls) * ls,), (ls,), *args)


def _grid(n: int, per: int, ls: int) -> tuple[int]:
    """Global size for ``n`` elements at ``per`` per item in groups of ``ls`` (at least one group)."""
    return (max(1, -(-n // (per * ls))) * ls,)


def _launch_ew(dev: OpenCLDevice, q: Any, kernel: Any, n: int, *args: Any) -> None:
    """Launch an elementwise kernel that takes ``dev.per_item`` consecutive elements per item."""
    ls = dev.ew_local
    dev.launch(q, kernel, _grid(n, dev.per_item, ls), (ls,), *args)


def _strides(shape: Sequence[int]) -> list[int]:
    out, acc = [0] * len(shape), 1
    for d in range(len(shape) - 1, -1, -1):
        out[d] = acc
        acc *= shape[d]
    return out


def _collapse(shape: Sequence[int], *strides: Sequence[int]) -> tuple[list[int], list[list[int]]]:
    """Drop size-1 dims and merge neighbours every operand walks contiguously."""
    out_shape: list[int] = []
    out_strides: list[list[int]] = [[] for _ in strides]
    for d, size in enumerate(shape):
        if size == 1:
            continue
        if out_shape and all(os[-1] == st[d] * size for os, st in zip(out_strides, strides)):
            out_shape[-1] *= size
            for os, st in zip(out_strides, strides):
                os[-1] = st[d]
        else:
            out_shape.append(size)
            for os, st in zip(out_strides, strides):
                os.append(st[d])
    return out_shape, out_strides


def _index(shape: Sequence[int], *strides: Sequence[int]) -> np.ndarray:
    cshape, cstrides = _collapse(shape, *strides)
    if not cshape:
        return _FLAT
    if len(cshape) == 1 and all(s[0] == 1 for s in cstrides):
        return _FLAT
    if len(cshape) > _MAXD:
        raise KernelError(
            f"[opencl] {len(cshape)} non-mergeable dims in shape {tuple(shape)}; "
            f"kernels index at most {_MAXD}; reshape the tensor to fewer dims"
        )
    ix = np.zeros((), _INDEX)
    r = len(cshape)
    ix["rank"] = r
    ix["shape"][:r] = cshape
    for name, st in zip(("s0", "s1", "s2"), cstrides):
        ix[name][:r] = st
    return ix


def _bcast_strides(out_shape: tuple[int, ...], shape: tuple[int, ...]) -> list[int]:
    shape = (1,) * (len(out_shape) - len(shape)) + tuple(shape)
    st = _strides(shape)
    return [0 if s == 1 and o != 1 else st[d] for d, (s, o) in enumerate(zip(shape, out_shape))]


def _strided_copy(
    dev: OpenCLDevice,
    q: Any,
    y: CLView,
    yo: int,
    x: CLView,
    xo: int,
    shape: Sequence[int],
    src: Sequence[int],
    dst: Sequence[int],
) -> None:
    """y[yo + dst . i] = x[xo + src . i] over ``shape`` (offsets and strides in elements)."""
    n = math.prod(shape)
    if n == 0:
        return
    cshape, (cs, cd) = _collapse(shape, src, dst)
    size = x.dtype.itemsize
    if not cshape or (len(cshape) == 1 and cs[0] == 1 and cd[0] == 1):
        dev.copy(q, y.buffer, yo * size, x.buffer, xo * size, n * size)
        return
    k = dev.kernel("move", str(size), "strided_copy")
    _launch_ew(dev, q, k, n, y.buffer, _i64(yo), x.buffer, _i64(xo), _i64(n), _index(shape, src, dst))


def index_error(bad: int, notes: Sequence[tuple[Any, ...]]) -> OpArgumentError:
    """The error for index ``bad`` reported by one of the launches ``notes`` (op, axis, size,
    and the lowest index allowed where it is not 0: ``-size`` for a gather with ``wrap``)."""
    if len(notes) == 1:
        op, axis, size, *low = notes[0]
        return OpArgumentError(
            f"[{op}] index {bad} out of range for axis {axis} of size {size}; indices must be in "
            f"[{low[0] if low else 0}, {size})"
        )
    which = ", ".join(f"{n[0]} (axis {n[1]} of size {n[2]})" for n in notes)
    return OpArgumentError(
        f"[{notes[0][0]}] index {bad} out of range in one of the static program's {which}; "
        f"indices must be in [0, size) ([-size, size) for a gather of a user's index)"
    )


def _check_index(dev: OpenCLDevice, q: Any, op: str, axis: int, size: int, low: int = 0) -> None:
    from .runtime import Recorder

    note = (op, axis, size) if not low else (op, axis, size, low)
    if type(q) is Recorder:  # a bound launch: the queue's next synchronisation reads it
        q.check(note)
        return
    bad = dev.take_error(q)
    if bad is not None:
        raise index_error(bad, [note])


def _translated(op: str, fn: Callable[..., None]) -> Callable[..., None]:
    """Run ``fn``, turning pyopencl errors into Oarlock errors that name ``op``."""

    def kernel(ctx: Any, outs: list, ins: list, **attrs: Any) -> None:
        try:
            fn(ctx, outs, ins, **attrs)
        except OarlockError:
            raise
        except Exception as exc:
            import pyopencl as cl

            if not isinstance(exc, cl.Error):
                raise
            from .errors import translate

            dev = ctx.runtime.device(ctx.device_index)
            raise translate(exc, f"kernel '{op}'", dev.name) from exc

    kernel.__name__ = kernel.__qualname__ = f"opencl_{op}"
    return kernel


_BOUND_CACHE = 4096  #: recorded calls kept per device (see _binder) ...
_BOUND_SCRATCH = 64 << 20  #: ... and the scratch bytes they may hold between them


def _view_key(v: CLView) -> tuple[int, int, tuple[int, ...], np.dtype]:
    return id(v.buffer), v.offset, v.shape, v.dtype


def _binder(fn: Callable[..., None]) -> Callable[..., Any]:
    """The bind fast path of kernel ``fn`` (adapter_api's ``Binder``): run ``fn`` once with a
    :class:`~plugins.opencl.runtime.Recorder` for its queue, so everything it works out per
    call (kernel lookup, grid, index structs, scratch buffers, argument bytes) is settled
    here; the returned call enqueues the recorded launches on their own kernel objects, whose
    arguments stay set. Declines (None) where ``fn`` raises: the plain call reports it."""

    def bind(ctx: Any, outs: list, ins: list, **attrs: Any) -> Any:
        from .runtime import Recorder

        dev = ctx.runtime.device(ctx.device_index)
        q = ctx.stream if ctx.stream is not None else dev.queue
        # NOTE: the executor binds an instruction again whenever one of its tensors moves, and
        # a decoding loop that feeds a run's outputs back alternates between the same few
        # buffers: a call recorded for exactly these views is taken from the device's cache
        # (it holds its buffers, so an id here is never another buffer's).
        try:
            key = (
                fn,
                id(q),
                *(_view_key(v) for v in outs),
                None,
                *(_view_key(v) for v in ins),
                *attrs.items(),
            )
            call = dev.bound.get(key)
        except TypeError:  # an unhashable attribute: record without the cache
            key, call = None, None
        if call is not None:
            dev.bound.move_to_end(key)
            return call[0]
        rec = Recorder(dev, q)
        try:
            fn(dataclasses.replace(ctx, stream=rec), outs, ins, **attrs)
        except Exception:  # noqa: BLE001 — the unbound call raises it with the op's name
            dev.give_back(rec.private)
            return None
        call = rec.finish()
        if key is not None:
            views = {id(v.buffer) for v in (*outs, *ins)}
            scratch = sum(a.size for a in rec.buffers() if id(a) not in views)
            dev.bound[key] = (call, scratch)
            dev.bound_scratch += scratch
            while len(dev.bound) > _BOUND_CACHE or dev.bound_scratch > _BOUND_SCRATCH:
                dev.bound_scratch -= dev.bound.popitem(last=False)[1][1]
        return call

    return bind
