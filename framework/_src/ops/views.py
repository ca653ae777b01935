"""In-place writes: a tensor takes a new value (:func:`rebind`), and the write reaches the
tensors that view the same storage (its base and the base's other views), as in Paddle and
PyTorch.

An in-place update computes its result out of place (``r``), then *rebinds* the tensor to it:
the tensor object takes ``r``'s storage and graph position and its version goes up, while the
graph keeps the old value where it was used (:func:`alias`). No block is written, so a value an
autograd node saved stays what it was (autograd still refuses to read it: PyTorch's rule).

A view (``Tensor._view``: ``reshape``, ``flatten``, ``squeeze``, ``unsqueeze``, ``view``,
``detach``, ``as_real``/``as_complex``, the rows of ``unbind``) is a place in its base's
storage. Writing through one (or into a base that has views):

1. the base's new value is computed: ``r`` itself when the view covers the whole base (no
   copy), else the old base with the view's run of elements replaced (a concat: PyTorch's
   *copy-slices*), recorded for autograd;
2. the base is rebound to it, and so is every live view of the base (the written one too),
   each at its own place in the new storage. Where autograd records the update (grad on, not
   through ``detach``), a view's new graph position is a view op of the base's new value, so
   a gradient reaches whatever the write read, through the base.

A write autograd does not record (``no_grad``, through a ``detach`` view, ``set_value``, an
optimizer's step) changes the storage only: every tensor of the group keeps its graph position
and its version goes up, so a node that saved one of them refuses to read it.

>>> import framework as fw
>>> x = fw.ones([2, 3])
>>> y = x.reshape([6])
>>> y[0] = 5.0
>>> x.tolist()
[[5.0, 1.0, 1.0], [1.0, 1.0, 1.0]]
>>> x.unsqueeze(0).zero_()
Tensor(shape=[1, 2, 3], dtype=float32, device=cpu:0,
       [[[0., 0., 0.],
         [0., 0., 0.]]])
>>> y.tolist()
[0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
"""

from __future__ import annotations

import math
import weakref
from typing import TYPE_CHECKING

from adapter_api import OpArgumentError

from .. import autograd
from .. import dtypes as _dt
from ..tensor import Tensor
from . import creation
from . import math as M
from . import shape as S
from .base import OPS, TRACER, OpDef

if TYPE_CHECKING:
    import numpy as np


def alias(x: Tensor) -> Tensor:
    """A second tensor object for ``x``'s current value and graph position, so ``x`` itself
    can be rebound by an in-place update without the graph referring to its new value."""
    a = Tensor._make(x._block, x._offset, x.shape, x.dtype, x.device)
    a.stop_gradient = x.stop_gradient
    if x._node is not None:
        a._node, a._out_index = x._node, x._out_index
        x._node._outs[x._out_index] = weakref.ref(a)
    return a


def note_write(x: Tensor, write_back: bool = True) -> None:
    """``x`` is about to change in place: a trace in progress keeps its state (``to_static``
    writes the change back after each run of the program). ``write_back=False``: a view that
    follows its base's write; the trace puts it back when it ends, the base is written back."""
    watch = getattr(TRACER.get(), "watch", None)
    if watch is not None:
        watch(x, write_back)


def rebind(x: Tensor, r: Tensor, by: str, old: Tensor | None = None) -> None:
    """Make ``x`` hold ``r``'s storage and graph (how in-place updates work); ``by`` names the
    update, which bumps ``x``'s version (autograd refuses values saved before it). ``old`` is
    :func:`alias` of ``x`` taken before the update: where the graph moves on, autograd routes
    gradients recorded for the old version to it. The write reaches ``x``'s base and the
    base's views (:func:`_write_through`)."""
    if x._base is not None or x._views is not None:
        _write_through(x, r, by, old)
    else:
        _move(x, r, by, old)


def _move(x: Tensor, r: Tensor, by: str, old: Tensor | None, write_back: bool = True) -> None:
    """Rebind one tensor: ``r``'s storage, shape, dtype and (when it has one) graph position
    (``write_back``: see :func:`note_write`)."""
    if (
        r._node is None
        and x._node is not None
        and old is not None
        and r.dtype == x.dtype
        and r.shape == x.shape
        and autograd.GRAD_ENABLED.get()
    ):  # a value from outside the graph (x.uniform_(), a constant written): no gradient to the old
        r = overwritten(r, old)
    note_write(x, write_back)
    x._block = r._block
    x._offset = r._offset
    x._nv = None
    x.shape = r.shape
    x.dtype = r.dtype
    x._bump_version(by)
    _take_place(x, r, old)


def _take_place(x: Tensor, r: Tensor, old: Tensor | None) -> None:
    """``x`` takes ``r``'s graph position (when ``r`` has one), remembering where it stood."""
    if r._node is not None:  # x moves in the graph: remember where it stood (None: a constant)
        if x._earlier is None:
            x._earlier = {}
        x._earlier[x._edited_at] = weakref.ref(old) if old is not None and old._node is not None else None
        x._node = r._node
        x._out_index = r._out_index
        x.stop_gradient = r.stop_gradient
        r._node.rebound_output(r._out_index, x, old if old is not None and old._node is not None else None)


def overwritten(value: Tensor, old: Tensor) -> Tensor:
    """``value`` as the new value of a tensor whose old value was ``old``, recorded so that no
    gradient flows to ``old`` (``where(True, value, old)``): an in-place write of values that do
    not depend on it (``fill_``, ``uniform_``, a constant copied in)."""
    return M.where(creation.full_like(old, True, dtype="bool"), value, old)


def _in_place(x: Tensor, base: Tensor) -> bool:
    """Whether view ``x`` still views ``base``'s storage (not replaced another way)."""
    return x._block is base._block and x._offset == base._offset + x._view_rel


def _write_through(x: Tensor, r: Tensor, by: str, old: Tensor | None) -> None:
    """:func:`rebind` of a view, or of a base with views: every tensor of the group takes the
    new value (see the module docstring)."""
    base = x._root()
    if (base is not None and not _in_place(x, base)) or r.dtype != x.dtype or r.nbytes != x.nbytes:
        # its storage was replaced another way, or the update changes its size or dtype
        # (set_, resize_): it leaves the group, which keeps the old storage
        x._leave_views()
        _move(x, r, by, old)
        return
    if base is None:
        base = x
    recorded = autograd.GRAD_ENABLED.get() and not x._view_detached
    if recorded and base is not x and base._node is None and not base.stop_gradient:
        raise OpArgumentError(
            f"[{by}] a view of a leaf tensor that requires grad (a parameter, shape "
            f"{list(base.shape)}) cannot be modified in place: the write would change the leaf; "
            f"wrap it in `with fw.no_grad():` (as optimizers do) or modify a copy"
        )
    x.shape = r.shape  # reshape_ of a view: the same bytes, another shape
    members = base._view_members()
    if recorded and (r._node is not None or base._node is not None):
        ob = old if base is x else alias(base)
        nb = r if base is x else _spliced(ob, x, r)
        _move(base, nb, by, ob)
        for w in members:
            if w._view_detached:  # through detach(): its storage only
                _follow(w, base, by)
            else:
                w_old = old if w is x else (alias(w) if w._node is not None else None)
                _move(w, _viewed(base, w), by, w_old, write_back=False)
        return
    # storage only: every tensor of the group keeps its graph position
    if base is x or (x._view_rel == 0 and x.dtype == base.dtype and r.nbytes == base.nbytes):
        nb = r  # the whole base: r's storage as it is
    else:
        with autograd._GradMode(False):
            nb = _spliced(base._reshaped(base.shape), x, r)
    note_write(base)
    base._block, base._offset, base._nv = nb._block, nb._offset, None
    base._bump_version(by)
    for w in members:
        _follow(w, base, by)
    if base is not x and r._node is not None:  # through detach(): the view itself now depends on the graph
        _take_place(x, r, old)


def _follow(w: Tensor, base: Tensor, by: str) -> None:
    """View ``w`` takes its place in ``base``'s new storage, keeping its graph position."""
    note_write(w, write_back=False)
    w._block, w._offset, w._nv = base._block, base._offset + w._view_rel, None
    w._bump_version(by)


def _spliced(ob: Tensor, x: Tensor, r: Tensor) -> Tensor:
    """The base's new value: ``ob`` (its old value) with view ``x``'s place holding ``r``."""
    v = r
    if r.dtype != ob.dtype:  # an as_real / as_complex view: r in the base's dtype
        v = _as_complex_view(S.reshape(r, (-1, 2))) if ob.dtype.kind == "c" else _as_real_view(r)
    total, n = math.prod(ob.shape), math.prod(v.shape)
    at = x._view_rel // ob.dtype.itemsize
    if at == 0 and n == total:
        return S.reshape(v, ob.shape)
    flat = S.reshape(ob, (total,))
    parts = [S.slice_raw(flat, (0,), (at,), (1,))] if at else []
    parts.append(S.reshape(v, (n,)))
    if at + n < total:
        parts.append(S.slice_raw(flat, (at + n,), (total,), (1,)))
    return S.reshape(S.concat(parts, 0), ob.shape)


def _viewed(base: Tensor, w: Tensor) -> Tensor:
    """A tensor at view ``w``'s place in ``base``'s (new) storage; while autograd records and
    ``base`` is in the graph, its graph is the view of ``base``: flattened, re-typed (as_real,
    as_complex), the run of elements (slice), reshaped."""
    t = Tensor._make(base._block, base._offset + w._view_rel, w.shape, w.dtype, base.device)
    if base._node is None or not autograd.GRAD_ENABLED.get():
        return t
    src = _step(S.RESHAPE, base, (math.prod(base.shape),), base.dtype)
    if w.dtype != base.dtype:
        n = src.shape[0]
        if base.dtype.kind == "c":
            src = _step(AS_REAL, src, (n, 2), w.dtype)
            src = _step(S.RESHAPE, src, (2 * n,), w.dtype)
        else:
            src = _step(S.RESHAPE, src, (n // 2, 2), base.dtype)
            src = _step(AS_COMPLEX, src, (n // 2,), w.dtype)
    at, n = w._view_rel // w.dtype.itemsize, math.prod(w.shape)
    if at or n != src.shape[0]:
        attrs = {"starts": (at,), "stops": (at + n,), "steps": (1,)}
        src = _step(OPS["slice"], src, (n,), w.dtype, w._view_rel, attrs)
    autograd.record(S.RESHAPE, [src], {}, [t])
    return t


def _step(
    op: OpDef, src: Tensor, shape: tuple[int, ...], dtype: np.dtype, rel: int = 0, attrs: dict | None = None
) -> Tensor:
    """One view op of :func:`_viewed`'s graph: a tensor sharing ``src``'s storage, recorded."""
    t = Tensor._make(src._block, src._offset + rel, shape, dtype, src.device)
    autograd.record(op, [src], attrs or {}, [t])
    return t


# -- the two views between a complex tensor and its float pairs (complex.py builds on them) ------------------------------------------------------------------------------
def _g_as_real(n: autograd.Node, g: list[Tensor | None]) -> list[Tensor | None]:
    return [_as_complex_view(g[0])]


def _g_as_complex(n: autograd.Node, g: list[Tensor | None]) -> list[Tensor | None]:
    return [_as_real_view(g[0])]


AS_REAL = OPS["as_real"] = OpDef(
    "as_real", "view", None, _g_as_real, doc="complex [...] -> its float pairs [..., 2]"
)
AS_COMPLEX = OPS["as_complex"] = OpDef(
    "as_complex", "view", None, _g_as_complex, doc="float pairs [..., 2] -> complex [...]"
)


def _not_traced(name: str) -> None:
    if TRACER.get() is not None:
        raise OpArgumentError(
            f"[{name}] complex tensors cannot be traced yet (fw.jit.to_static, the compiler): the "
            f"program IR has no complex view; run the complex part eagerly, outside the traced function"
        )


def _as_real_view(x: Tensor) -> Tensor:
    _not_traced("as_real")
    out = x._view((*x.shape, 2), _dt.real_of(x.dtype))
    if autograd.GRAD_ENABLED.get() and not x.stop_gradient:
        autograd.record(AS_REAL, [x], {}, [out])
    return out


def _as_complex_view(x: Tensor) -> Tensor:
    _not_traced("as_complex")
    out = x._view(x.shape[:-1], _dt.complex_of(x.dtype))
    if autograd.GRAD_ENABLED.get() and not x.stop_gradient:
        autograd.record(AS_COMPLEX, [x], {}, [out])
    return out
