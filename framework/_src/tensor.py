"""The Tensor: a contiguous region of one device's memory, with shape and dtype.

Storage is always contiguous (row-major) with a byte offset into a caching-allocator block,
so kernels never see strides. Reshape-like ops share storage; slicing and transposing copy
(see docs/user-guide.md). Operators and methods are attached by ``framework._src.ops``.

Views: a tensor made by a view op (``reshape``, ``flatten``, ``squeeze``, ``unsqueeze``,
``view``, ``detach``, ``as_real``/``as_complex``) records its *base* (the tensor whose storage
it views, never itself a view) and where in that storage it starts (:meth:`Tensor._view`); the
base keeps weak references to its views. An in-place update never writes a block: it gives the
updated tensor new storage (``ops.views.rebind``), so the base and every view of it are given
the new storage together, each at its own place in it (:meth:`Tensor._view_members`). A tensor
that is not a view and has none pays one attribute test per in-place update, nothing per op.
"""

from __future__ import annotations

import contextlib
import math
import types
import weakref
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import numpy as np

from adapter_api import OpArgumentError

from . import device as _dev
from . import dtypes as _dt
from .allocator import Block

#: how many of a tensor's last in-place modifications it remembers the time of
EDITS_KEPT = 16
_ref = weakref.ref
#: a view's attributes (in its ``__dict__``): a copy of the tensor does not take them
VIEW_STATE = frozenset(("_base", "_view_rel", "_view_detached", "_views"))


class Size(tuple):
    """A tensor's shape: a tuple of ints that equals the list of the same ints.

    As with Paddle's ``paddle.Size`` (a list), Paddle code such as ``if x.shape == [2, 3]``
    or ``x.shape + [1]`` means what it means in Paddle. A slice is a plain tuple
    (``x.shape[1:] == [3]`` is False; compare ``list(x.shape[1:])``): a Size slice would make
    every index of a shape a Python call on the path of every op. A shape cannot be changed in
    place (Paddle's can, being a list); ``list(x.shape)`` is the copy to change.

    Example:
        >>> import framework as fw
        >>> x = fw.ones([2, 3])
        >>> x.shape == [2, 3], x.shape == (2, 3), list(x.shape[1:]) == [3]
        (True, True, True)
        >>> x.shape + [1], [4] + x.shape
        ((2, 3, 1), (4, 2, 3))
        >>> s = list(x.shape); s[0] = -1; x.reshape(s).shape
        (2, 3)
    """

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        return tuple.__eq__(self, tuple(other) if isinstance(other, list) else other)

    def __ne__(self, other: object) -> bool:
        return tuple.__ne__(self, tuple(other) if isinstance(other, list) else other)

    __hash__ = tuple.__hash__

    def __add__(self, other: Any) -> Size:
        if isinstance(other, (list, tuple)):
            return Size(tuple.__add__(self, tuple(other)))
        return NotImplemented

    def __radd__(self, other: Any) -> Size:
        if isinstance(other, (list, tuple)):
            return Size(tuple(other) + tuple(self))
        return NotImplemented

    def __setitem__(self, i: Any, v: Any) -> None:
        raise TypeError(
            f"[Tensor.shape] a shape cannot be changed in place (got shape{list(self)}[{i!r}] = {v!r}); "
            "Paddle's shape is a list, Oarlock's an immutable Size: change a copy, s = list(x.shape)"
        )


#: Size objects by shape, shared (immutable): making a tuple subclass costs far more than a
#: dict lookup on the path that makes every tensor
_SIZES: dict[tuple[int, ...], Size] = {}
_SIZES_KEPT = 4096
#: how many blocks of :func:`own_sizes` are open (in any thread): while one is, every tensor
#: gets a Size of its own, and caches keyed by shapes (``ops.base.broadcast_shapes``) are
#: passed by
OWN_SIZES = 0


def _size(shape: Any) -> Size:
    """The shared :class:`Size` of ``shape`` (a tuple), kept for the next tensor of it; inside
    :func:`own_sizes`, a Size of its own."""
    if OWN_SIZES:
        return Size(shape)
    if len(_SIZES) >= _SIZES_KEPT:
        _SIZES.clear()
    s = _SIZES[shape] = Size(shape)
    return s


@contextlib.contextmanager
def own_sizes() -> Iterator[None]:
    """In the block, each tensor made gets a :class:`Size` of its own, none is shared.

    A dim may then be an int subclass that carries more than its value: a traced dynamic dim
    (``framework.jit.size_guards.SymInt``) equals and hashes as the plain int, so a shared
    Size of the same ints would drop it (and one holding it would leak into later tensors).
    Shapes given as a Size are kept as they are. Nests; a thread's block makes the others'
    tensors unshared too for its duration (slower, not different).

    Example:
        >>> import framework as fw
        >>> from framework._src.tensor import own_sizes
        >>> with own_sizes():
        ...     a, b = fw.zeros([2, 3]), fw.zeros([2, 3])
        >>> a.shape == b.shape, a.shape is b.shape
        (True, False)
    """
    global OWN_SIZES
    OWN_SIZES += 1
    try:
        yield
    finally:
        OWN_SIZES -= 1


#: the code of the framework's functions whose comparisons of sizes decide what a traced
#: program computes, as a user's ``if x.shape[0] > 4:`` does (a slice's bounds clamped to its
#: dim, an index checked against it). Under ``to_static`` each comparison they make of a
#: dynamic dim is a guard (``framework.jit.size_guards``); the framework's other comparisons
#: of sizes (shape rules) are not, probing covers those.
SIZE_DECISIONS: set[types.CodeType] = set()
_F = TypeVar("_F", bound=Callable[..., Any])


def decides_on_sizes(fn: _F) -> _F:
    """Mark ``fn`` as deciding on sizes (:data:`SIZE_DECISIONS`): under ``to_static`` the
    comparisons of dynamic dims made in its own body (its generator expressions included)
    are guards of the program.

    Example:
        >>> from framework._src.tensor import SIZE_DECISIONS, decides_on_sizes
        >>> @decides_on_sizes
        ... def clamp(stop, n):
        ...     return n if stop > n else stop
        >>> clamp.__code__ in SIZE_DECISIONS, clamp(5, 3)
        (True, 3)
    """
    todo = [fn.__code__]
    while todo:  # its generator expressions and comprehensions compare in frames of their own
        code = todo.pop()
        SIZE_DECISIONS.add(code)
        todo += [c for c in code.co_consts if isinstance(c, types.CodeType)]
    return fn


class Tensor:
    """An n-dimensional array on a device, with the data for autograd.

    ``fw.Tensor(data)`` is :func:`to_tensor`; ops make tensors too. A tensor has ``shape`` (a
    :class:`Size`, a tuple that equals lists as Paddle's does), ``dtype`` (a numpy dtype), ``device`` (a :class:`Device`), ``stop_gradient`` (True:
    no gradient flows to it) and, after ``backward()``, ``grad``. Most functions of ``fw`` are
    methods as well (``x.sum(axis=0)``, ``x.reshape([4])``, ``x.astype("int32")``), and Python
    operators work (``+ - * / // % ** @``, comparisons, ``x[key]``, ``x[key] = value``).
    ``numpy()``, ``item()`` and ``tolist()`` copy values to the host.

    Args:
        data: numbers, nested lists, a numpy array or a tensor.
        dtype (str | numpy.dtype, optional): as in :func:`to_tensor`.
        device (str | Device, optional): default the current device.
        stop_gradient (bool): True: no gradient is computed for it.

    Example:
        >>> import framework as fw
        >>> x = fw.Tensor([[1.0, 2.0], [3.0, 4.0]], stop_gradient=False)
        >>> x.shape, x.dtype, x.device
        ((2, 2), dtype('float32'), Device('cpu:0'))
        >>> (x * x).sum().backward()
        >>> x.grad
        Tensor(shape=[2, 2], dtype=float32, device=cpu:0,
               [[2., 4.],
                [6., 8.]])
        >>> x.mean(axis=1).tolist()
        [1.5, 3.5]
    """

    __slots__ = (
        "_block",
        "_offset",
        "shape",
        "dtype",
        "device",
        "_nv",
        "_node",
        "stop_gradient",
        "__dict__",
        "__weakref__",
    )

    # Rarely set attributes are class-level defaults (an instance gets a __dict__ only when
    # one is set), so making a tensor on the hot path sets eight slots and nothing else.
    _out_index = 0
    grad: Any = None
    _hooks: Any = None
    #: ``hook(tensor)`` calls once the leaf's gradient is complete (``autograd``)
    _post_accumulate_hooks: Any = None
    _retain_grad = False
    name: str | None = None
    persistable = False
    #: a distributed tensor's class sets it: its ops go to ``dispatch.INTERCEPTORS``
    _dist = False
    #: how many times the tensor was modified in place (``x.add_``, ``x[i] = v``, ``set_value``,
    #: an optimizer's update...): ``x._inplace_version()``
    _version = 0
    #: the in-place operation that last changed the tensor (named in autograd's error)
    _modified_by: str | None = None
    #: a clock of in-place modifications, over all tensors: each one ticks it. An autograd node
    #: keeps the time it was recorded; an input whose ``_edited_at`` is later changed since
    #: (``autograd.Node``). One read per recorded op, one comparison per node in backward.
    _clock = 0
    #: the clock's time of this tensor's last in-place modification
    _edited_at = -1
    #: the clock's times of the last :data:`EDITS_KEPT` modifications (for the error's versions)
    _edit_times: tuple[int, ...] = ()
    #: clock time of a modification -> weak reference to the tensor that held this one's value
    #: and graph position before it, where that update moved it to another node
    #: (``indexing.rebind``; None: it was a constant); autograd sends a gradient recorded
    #: earlier there
    _earlier: dict[int, Any] | None = None
    #: a view: the tensor whose storage it views (never itself a view; a weak reference to it
    #: from a ``detach()`` view), read with :meth:`_root`; None: not a view
    _base: Any = None
    #: a view: its byte offset in its base's storage
    _view_rel = 0
    #: a view made by ``detach``: writes through it are not recorded by autograd
    _view_detached = False
    #: a base: weak references to its views (dead ones dropped now and then)
    _views: list[Any] | None = None

    # -- construction (internal) --------------------------------------------------------
    @classmethod
    def _make(
        cls, block: Block, offset: int, shape: tuple[int, ...], dtype: np.dtype, device: _dev.Device
    ) -> Tensor:
        t = object.__new__(cls)
        t._block = block
        t._offset = offset
        t.shape = (
            shape
            if type(shape) is Size
            else (s if not OWN_SIZES and (s := _SIZES.get(shape)) is not None else _size(shape))
        )
        t.dtype = dtype
        t.device = device
        t._nv = None
        t._node = None
        t.stop_gradient = True
        return t

    def __init__(
        self, data: Any = None, dtype: Any = None, device: Any = None, stop_gradient: bool = True
    ) -> None:
        src = to_tensor(data, dtype=dtype, device=device, stop_gradient=stop_gradient)
        for slot in Tensor.__slots__:
            if slot not in ("__weakref__", "__dict__"):
                setattr(self, slot, getattr(src, slot))

    # -- metadata -----------------------------------------------------------------------
    @property
    def ndim(self) -> int:
        return len(self.shape)

    def dim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        """Number of elements (Paddle's ``Tensor.size``)."""
        return math.prod(self.shape)

    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * self.dtype.itemsize

    @property
    def place(self) -> _dev.Device:
        return self.device

    @property
    def requires_grad(self) -> bool:
        return not self.stop_gradient

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        self.stop_gradient = not value

    def requires_grad_(self, value: bool = True) -> Tensor:
        self.stop_gradient = not value
        return self

    @property
    def is_leaf(self) -> bool:
        return self._node is None

    def _bump_version(self, by: str) -> None:
        """Record that ``by`` (an in-place operation) changed this tensor's value."""
        Tensor._clock += 1
        self._edited_at = Tensor._clock
        self._edit_times = (*self._edit_times[1 - EDITS_KEPT :], Tensor._clock)
        self._version += 1
        self._modified_by = by

    def _version_at(self, time: int) -> str:
        """This tensor's version at clock ``time`` (for messages; exact while the modifications
        since are among the last :data:`EDITS_KEPT`)."""
        since = sum(1 for e in self._edit_times if e > time)
        if since == len(self._edit_times) and self._version > since:
            return f"{self._version - since} or earlier"
        return str(self._version - since)

    def _inplace_version(self) -> int:
        """How many times this tensor was modified in place (Paddle's ``_inplace_version``).

        Example:
            >>> import framework as fw
            >>> x = fw.ones([2])
            >>> x.add_(fw.ones([2]))._inplace_version()
            1
        """
        return self._version

    def _reshaped(self, shape: tuple[int, ...]) -> Tensor:
        """A tensor sharing this one's storage with another shape (no graph recorded, not a
        view: for the engine's own temporaries, which nobody updates in place)."""
        t = Tensor._make(self._block, self._offset, shape, self.dtype, self.device)
        return t

    # -- views --------------------------------------------------------------------------
    def _view(
        self, shape: tuple[int, ...], dtype: np.dtype | None = None, rel: int = 0, detached: bool = False
    ) -> Tensor:
        """A view of this tensor's storage: ``shape`` and ``dtype`` (default this one's),
        starting ``rel`` bytes into it, registered with the base so in-place updates of either
        reach the other (no graph recorded: the view op records it). ``detached``: writes
        through it are not recorded by autograd (``detach``)."""
        t = Tensor._make(
            self._block, self._offset + rel, shape, self.dtype if dtype is None else dtype, self.device
        )
        views = self._views
        if self._base is not None or (views is not None and len(views) >= 8):
            self._adopt(t, detached)
            return t
        # NOTE: the common case (a view of a tensor that is not one) inline
        t._base = _ref(self) if detached else self
        if rel:
            t._view_rel = rel
        if detached:
            t._view_detached = True
        if views is None:
            self._views = [_ref(t)]
        else:
            views.append(_ref(t))
        return t

    def _adopt(self, t: Tensor, detached: bool = False) -> None:
        """Register ``t``, a tensor on this one's storage (``t._offset`` at or after its own), as
        a view of this tensor's base (of this tensor, if it is not a view)."""
        base = self._root()
        if base is None:
            base, rel = self, t._offset - self._offset
        elif self._block is base._block and self._offset == base._offset + self._view_rel:
            rel = t._offset - base._offset
        else:  # its storage was replaced another way (Layer.to): it is a base of its own now
            self._leave_views()
            base, rel = self, t._offset - self._offset
        detached = detached or self._view_detached
        t._base = _ref(base) if detached else base
        if rel:
            t._view_rel = rel
        if detached:
            t._view_detached = True
        views = base._views
        if views is None:
            base._views = [weakref.ref(t)]
        else:
            n = len(views)
            if n >= 8 and not n & (n - 1):  # at each power of two: drop the dead (amortised O(1))
                views[:] = [r for r in views if r() is not None]
            views.append(weakref.ref(t))

    def _view_members(self) -> list[Tensor]:
        """This base's live views that still view its storage; the others are forgotten (their
        storage was replaced another way: they keep it, as a base of their own)."""
        refs = self._views
        if not refs:
            return []
        live, keep = [], []
        block, offset = self._block, self._offset
        for r in refs:
            w = r()
            if w is None or w._root() is not self:
                continue
            if w._block is block and w._offset == offset + w._view_rel:
                live.append(w)
                keep.append(r)
            else:
                w._leave_views()
        self._views = keep or None
        return live

    def _root(self) -> Tensor | None:
        """The base this view views; None if it is not a view. A ``detach()`` view holds its
        base weakly (PyTorch's rule: a detached tensor keeps the storage, not the tensor it came
        from, that tensor's gradient, or a graph it is or will be part of): once the base is
        gone, it is a base of its own. Two detached views of a base that is gone no longer see
        each other's in-place updates (PyTorch's share the storage's version)."""
        b = self._base
        if type(b) is not _ref:
            return b
        t = b()
        if t is None:
            self._leave_views()
        return t

    def _leave_views(self) -> None:
        """Stop sharing in-place updates: a view forgets its base; a base hands its views a
        base of their own that keeps the storage they share (they stay views of each other)."""
        d = self.__dict__
        if d.get("_base") is not None:
            for k in ("_base", "_view_rel", "_view_detached"):
                d.pop(k, None)
            return
        members = self._view_members()
        self._views = None
        if members:
            keeper = Tensor._make(self._block, self._offset, self.shape, self.dtype, self.device)
            keeper._views = [weakref.ref(w) for w in members]
            for w in members:
                w._base = keeper

    def _bump_versions(self, by: str) -> None:
        """:meth:`_bump_version` of this tensor and of every tensor sharing its storage as a
        view (its base, their views): the values of all of them changed."""
        base = self._root()
        if base is None and self._views is None:
            self._bump_version(by)
            return
        base = self if base is None else base
        base._bump_version(by)
        for w in base._view_members():
            w._bump_version(by)

    def native(self) -> Any:
        """The plugin's native view of this tensor (numpy array on cpu, ...)."""
        nv = self._nv
        if nv is None:
            rt = _dev.device_type(self.device.type).runtime
            nv = self._nv = rt.view(self._block.handle, self._offset, self.shape, self.dtype)
        return nv

    # -- host access (synchronizes) -----------------------------------------------------
    def numpy(self) -> np.ndarray:
        """A host copy of the values (waits for the work that writes this tensor)."""
        out = np.empty(self.shape, self.dtype)
        if out.nbytes:
            dt = _dev.device_type(self.device.type)
            dt.runtime.copy_d2h(
                self.device.index, out, self._block.handle, self._offset, dt.stream(self.device.index), True
            )
        return out

    def item(self) -> Any:
        if math.prod(self.shape) != 1:
            raise OpArgumentError(
                f"[item] only a tensor with one element can be converted to a Python scalar, got shape {self.shape}"
            )
        return self.numpy().reshape(()).item()

    def tolist(self) -> Any:
        return self.numpy().tolist()

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        a = self.numpy()
        return a if dtype is None else a.astype(dtype)

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("[len] len() of a 0-d tensor")
        return self.shape[0]

    def __bool__(self) -> bool:
        if math.prod(self.shape) != 1:
            raise OpArgumentError(
                f"[bool] the truth value of a tensor with {self.numel()} elements is ambiguous; use .any() or .all()"
            )
        return bool(self.item())

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __index__(self) -> int:
        if self.dtype.kind not in "iu":
            raise TypeError(f"[index] only integer tensors can be used as an index, got {self.dtype}")
        return int(self.item())

    def __repr__(self) -> str:
        grad = "" if self.stop_gradient else ", stop_gradient=False"
        try:
            arr = self.numpy()
            fmt = _complex_format(arr) if self.dtype.kind == "c" else None
            body = np.array2string(arr, separator=", ", prefix="       ", formatter=fmt)
        except Exception as exc:  # noqa: BLE001 — repr must not raise
            body = f"<unreadable: {exc}>"
        return f"Tensor(shape={list(self.shape)}, dtype={self.dtype}, device={self.device}{grad},\n       {body})"

    def __hash__(self) -> int:
        return id(self)

    # -- DLPack -------------------------------------------------------------------------
    def __dlpack__(self, *args: Any, **kwargs: Any) -> Any:
        nv = self.native()
        if not hasattr(nv, "__dlpack__"):
            raise OpArgumentError(
                f"[dlpack] tensors on {self.device} cannot be exported with DLPack; use .to('cpu') first"
            )
        return nv.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self) -> Any:
        nv = self.native()
        if not hasattr(nv, "__dlpack_device__"):
            raise OpArgumentError(
                f"[dlpack] tensors on {self.device} cannot be exported with DLPack; use .to('cpu') first"
            )
        return nv.__dlpack_device__()


def _complex_item(v: complex) -> str:
    """One complex element as Paddle prints it: ``(1.00000000+2.00000000j)``."""
    return f"({v.real:.8f}{v.imag:+.8f}j)"


def _complex_format(arr: np.ndarray) -> dict[str, Any]:
    """numpy's formatter for complex elements printed as Paddle's, right-aligned to the widest."""
    flat = arr.reshape(-1)
    if flat.size > np.get_printoptions()["threshold"]:  # elided: the edges are what prints
        k = np.get_printoptions()["edgeitems"]
        flat = np.concatenate([flat[:k], flat[-k:]])
    width = max((len(_complex_item(v)) for v in flat), default=0)
    return {"complex_kind": lambda v: _complex_item(v).rjust(width)}


# -- making tensors ------------------------------------------------------------------------
def empty(shape: tuple[int, ...], dtype: np.dtype, device: _dev.Device) -> Tensor:
    nbytes = math.prod(shape) * dtype.itemsize
    block = _dev.allocator_of(device).malloc(nbytes)
    return Tensor._make(block, 0, shape, dtype, device)


def from_numpy_copy(arr: np.ndarray, device: _dev.Device) -> Tensor:
    if not arr.flags.c_contiguous:
        arr = np.ascontiguousarray(
            arr
        )  # NOTE: np.ascontiguousarray turns 0-d into 1-d; only call it when needed
    t = empty(arr.shape, arr.dtype, device)
    if arr.nbytes:
        dt = _dev.device_type(device.type)
        dt.runtime.copy_h2d(device.index, t._block.handle, 0, arr, dt.stream(device.index), True)
    return t


def _as_numpy(data: Any, dtype: np.dtype | None) -> np.ndarray:
    if isinstance(data, np.ndarray):
        arr = data
        if arr.dtype == np.dtype(object):
            raise OpArgumentError(
                "[to_tensor] numpy arrays of dtype object are not supported; convert to numbers first"
            )
        if arr.dtype not in _dt._SUPPORTED and dtype is None:
            _check_fits_int64(arr)
            arr = arr.astype(_canonical(arr.dtype))
    elif isinstance(data, np.generic):
        return _as_numpy(np.asarray(data), dtype)
    elif isinstance(data, (bool, int, float)):
        want = dtype if dtype is not None else _dt.infer_dtype(data)
        try:
            arr = np.asarray(data, dtype=want)
        except OverflowError:
            raise OpArgumentError(
                f"[to_tensor] the integer {_short_int(data)} does not fit {np.dtype(want).name} "
                f"(range {_int_range(want)}); give a float (fw.to_tensor(float(x))) or a smaller value"
            ) from None
    else:
        try:
            arr = np.asarray(data)
        except ValueError as exc:
            raise OpArgumentError(
                f"[to_tensor] data is not a regular (rectangular) nested list: {exc}"
            ) from exc
        if arr.dtype == np.dtype(object) and _has_huge_int(data):
            raise OpArgumentError(
                "[to_tensor] the data holds an integer beyond int64 (range "
                f"{_int_range(np.dtype(np.int64))}); give floats or smaller values"
            )
        if arr.dtype == np.dtype(object) or arr.dtype.kind in "USV":
            raise OpArgumentError(
                f"[to_tensor] cannot make a tensor from {type(data).__name__} holding {arr.dtype} values; "
                f"give numbers, nested lists of numbers, a numpy array or a Tensor"
            )
        if dtype is None:
            if arr.dtype.kind == "f":
                arr = arr.astype(_dt.get_default_dtype())
            elif arr.dtype.kind == "c":  # Python complex numbers: complex64 (complex128 under float64)
                arr = arr.astype(_dt.complex_of(_dt.get_default_dtype()))
            elif arr.dtype.kind in "iu" and arr.dtype not in _dt._SUPPORTED:
                _check_fits_int64(arr)
                arr = arr.astype(np.int64)
    if dtype is not None and arr.dtype != dtype:
        arr = arr.astype(dtype)
    return arr


def _short_int(v: int) -> str:
    return str(v) if abs(v) < 10**20 else f"{'-' if v < 0 else ''}~2**{abs(v).bit_length() - 1}"


def _int_range(dtype: Any) -> str:
    d = np.dtype(dtype)
    if d.kind not in "iub":
        return "that of the dtype"
    info = np.iinfo(d) if d.kind != "b" else None
    return "0..1" if info is None else f"{info.min}..{info.max}"


def _has_huge_int(data: Any) -> bool:
    """``data`` (nested lists/tuples) holds a Python int that int64 cannot hold."""
    if isinstance(data, (list, tuple)):
        return any(_has_huge_int(v) for v in data)
    return isinstance(data, int) and not isinstance(data, bool) and not -(2**63) <= data < 2**63


def _check_fits_int64(arr: np.ndarray) -> None:
    """uint16/32 fit int64 exactly; uint64 values above 2**63 - 1 would wrap: raise instead."""
    if (
        arr.dtype.kind == "u"
        and arr.dtype.itemsize == 8
        and arr.size
        and int(arr.max()) > np.iinfo(np.int64).max
    ):
        raise OpArgumentError(
            f"[to_tensor] uint64 value {int(arr.max())} does not fit int64 (the widest integer dtype here) and would wrap; "
            f"convert it to float64 or reduce it below 2**63 first"
        )


def _canonical(d: np.dtype) -> np.dtype:
    if d.kind == "f":
        return _dt.float64
    if d.kind in "iu":
        return _dt.int64
    if d.kind == "c":
        return _dt.complex128
    raise OpArgumentError(f"[to_tensor] unsupported numpy dtype {d}")


def to_tensor(
    data: Any,
    dtype: Any = None,
    device: Any = None,
    stop_gradient: bool = True,
    place: Any = None,
    *,
    requires_grad: bool = False,
) -> Tensor:
    """Make a tensor from Python numbers, nested lists, a numpy array or another tensor.

    ``tensor`` is this function. The data is copied. Python floats give the default float dtype
    (float32), ints int64 and bools bool; a numpy array keeps its dtype.

    Args:
        data: numbers, nested lists, a numpy array or a tensor.
        dtype (str | numpy.dtype, optional): the dtype wanted; default inferred from ``data``.
        device (str | Device, optional): default the current device.
        stop_gradient (bool): True: no gradient is computed for it.
        place (str | Device, optional): Paddle's name for ``device``.
        requires_grad (bool): True: a gradient is computed for it (``stop_gradient=False``).

    Returns:
        Tensor: a new tensor.

    Example:
        >>> import framework as fw
        >>> fw.to_tensor([[1.0, 2.0], [3.0, 4.0]]).shape
        (2, 2)
        >>> fw.to_tensor([1, 2], dtype="float64")
        Tensor(shape=[2], dtype=float64, device=cpu:0,
               [1., 2.])
        >>> fw.tensor(3).dtype
        dtype('int64')
    """
    dev = (
        _dev.get_device()
        if device is None and place is None
        else _dev.parse(device if device is not None else place)
    )
    d = _dt.as_dtype(dtype, "to_tensor") if dtype is not None else None
    if isinstance(data, Tensor):
        t = data.to(dev)
        if d is not None and t.dtype != d:
            t = t.astype(d)
        elif t is data:
            t = data.clone()
        t = t.detach()
    else:
        t = from_numpy_copy(_as_numpy(data, d), dev)
    t.stop_gradient = stop_gradient and not requires_grad
    return t


def from_dlpack(obj: Any, device: Any = None) -> Tensor:
    """Import a DLPack-capable host array (numpy, a torch CPU tensor) as a tensor; the data is copied.

    Args:
        obj: an object with ``__dlpack__`` whose memory is on the host.
        device (str | Device, optional): where the tensor goes; default the current device.

    Returns:
        Tensor: a new tensor.

    Example:
        >>> import framework as fw, numpy as np
        >>> fw.from_dlpack(np.arange(3.0))
        Tensor(shape=[3], dtype=float64, device=cpu:0,
               [0., 1., 2.])
    """
    if not hasattr(obj, "__dlpack__"):
        raise OpArgumentError(f"[from_dlpack] expected an object with __dlpack__, got {type(obj).__name__}")
    try:
        arr = np.from_dlpack(obj)
    except (RuntimeError, BufferError, TypeError) as exc:
        raise OpArgumentError(
            f"[from_dlpack] only host (CPU) DLPack arrays can be imported here: {exc}; move the array to the host first"
        ) from exc
    return from_numpy_copy(_as_numpy(arr, None), _dev.get_device() if device is None else _dev.parse(device))
