"""Reshard: move a distributed tensor from one layout to another with the collectives of
:mod:`framework.distributed.collective`, on the tape.

Transitions, per mesh axis (``k`` ranks on the axis, ``B`` bytes of the global tensor):

=================  ================================  ==================================
from -> to         forward                           backward (of the local value)
=================  ================================  ==================================
S(d) -> R          all_gather along d                slice of this rank's chunk
P -> R             all_reduce(op)                    identity (avg: / k)
P -> S(d)          reduce_scatter(op) along d        all_gather along d (avg: / k)
R -> S(d)          local slice                       all_gather along d
R -> P(sum)        first rank keeps, others zero     identity
R -> P(avg)        keep                              times k
R -> P(max/min)    keep                              identity
S(i) -> S(j)       all_to_all                        all_to_all S(j) -> S(i)
mesh A -> mesh B   gather on A, send/recv, slice     (no gradient across meshes)
=================  ================================  ==================================

Gradients keep one rule: the local gradient of a replicated tensor is the whole gradient,
of a shard the shard's gradient, of a ``Partial(sum)`` part the whole gradient (of a
``Partial(avg)`` part the whole gradient over k). Uneven shards
(chunks of ``ceil(n/k)``) are padded for the collective and trimmed after.
Every transition is logged (logger ``oarlock.distributed``; printed to stderr with
``OARLOCK_PRINT_IR=1``) and kept in :data:`LOG`.
"""

from __future__ import annotations

import contextvars
import logging
import sys
from typing import Any

from adapter_api import OpArgumentError

from ..._src import autograd, env
from ..._src.opdef import OpDef
from ..._src.ops import base as _base
from ..._src.ops import creation as _creation
from ..._src.ops import shape as _shape
from ..._src.tensor import Tensor
from ..._src.tensor import empty as _empty
from ..._src.tensor import to_tensor as _to_tensor
from .. import collective
from .dtensor import DistTensor, check_placements, label
from .mesh import ProcessMesh
from .placement import Partial, Placement, Replicate, Shard, chunk, short

_log = logging.getLogger("oarlock.distributed")

#: every reshard this process ran: dicts with tensor, axis, transition, collective, bytes
LOG: list[dict[str, Any]] = []


def _note(
    x: Any, mesh: ProcessMesh, axis: int, src: Placement, dst: Placement, how: str, nbytes: int, why: str
) -> None:
    rec = {
        "tensor": x if isinstance(x, str) else label(x),
        "mesh_axis": mesh.dim_names[axis],
        "from": short([src]),
        "to": short([dst]),
        "collective": how,
        "bytes": nbytes,
        "why": why,
    }
    LOG.append(rec)
    line = (
        f"[reshard] {rec['tensor']}: {rec['from']} -> {rec['to']} on mesh axis '{rec['mesh_axis']}' "
        f"({how}, {nbytes} bytes){' for ' + why if why else ''}"
    )
    _log.info(line)
    if env.flag("OARLOCK_PRINT_IR"):
        print(line, file=sys.stderr, flush=True)


# -- the tape: one node per collective ------------------------------------------------------
def _grad_of(node: autograd.Node, gouts: list[Tensor | None]) -> list[Tensor | None]:
    g = gouts[0]
    return [None if g is None else node.attrs["backward"](g)]


_RESHARD = OpDef("reshard", "collective", None, _grad_of, doc="a reshard step (its backward is in attrs)")


def _on_tape(inp: Tensor, out: Tensor, backward: Any) -> Tensor:
    if out is inp:  # nothing moved (one rank on the axis)
        return inp
    if autograd.is_grad_enabled() and not inp.stop_gradient:
        autograd.record(_RESHARD, [inp], {"backward": backward}, [out])
    return out


# -- local building blocks (no tape) ---------------------------------------------------------
def _narrow(t: Tensor, dim: int, start: int, end: int) -> Tensor:
    if start == 0 and end == t.shape[dim]:
        return t
    return t[tuple(slice(None) for _ in range(dim)) + (slice(start, end),)]


def _pad(t: Tensor, dim: int, size: int) -> Tensor:
    if t.shape[dim] == size:
        return t
    extra = list(t.shape)
    extra[dim] = size - t.shape[dim]
    return _shape.concat([t, _creation.zeros(extra, dtype=t.dtype, device=t.device)], axis=dim)


def _front(t: Tensor, dim: int) -> Tensor:
    """``t`` with ``dim`` moved first (a contiguous copy)."""
    if dim == 0:
        return t
    perm = [dim] + [i for i in range(t.ndim) if i != dim]
    return _shape.transpose(t, perm)


def _back(t: Tensor, dim: int) -> Tensor:
    if dim == 0:
        return t
    perm = list(range(1, dim + 1)) + [0] + list(range(dim + 1, t.ndim))
    return _shape.transpose(t, perm)


def _gather(t: Tensor, dim: int, n: int, g: collective.Group, k: int) -> Tensor:
    """All ranks' chunks of a dim of global size ``n``, joined."""
    size = -(-n // k)
    src = _front(_pad(t, dim, size), dim)
    out = _empty((k, *src.shape), src.dtype, src.device)
    collective.all_gather(out, src, group=g)
    full = out.reshape((k * size, *src.shape[1:]))
    return _back(_narrow(full, 0, 0, n), dim)


def _reduce_scatter(t: Tensor, dim: int, k: int, c: int, op: str, g: collective.Group) -> Tensor:
    n = t.shape[dim]
    size = -(-n // k)
    src = _front(_pad(t, dim, size * k), dim)
    out = _empty((size, *src.shape[1:]), src.dtype, src.device)
    collective.reduce_scatter(out, src, op=op, group=g)
    a, b = chunk(n, k, c)
    return _back(_narrow(out, 0, 0, b - a), dim)


def _all_reduce(t: Tensor, op: str, g: collective.Group) -> Tensor:
    out = t.detach().clone() if hasattr(t, "clone") else t.detach() + 0
    collective.all_reduce(out, op=op, group=g)
    return out


def _all_to_all(t: Tensor, i: int, j: int, ni: int, nj: int, k: int, c: int, g: collective.Group) -> Tensor:
    """Shard(i) -> Shard(j): split my chunk along j into k pieces, swap, join along i."""
    si, sj = -(-ni // k), -(-nj // k)
    src = _front(_pad(_pad(t, i, si), j, sj * k), j)  # (k*sj, ...) with dim i padded
    out = _empty(src.shape, src.dtype, src.device)
    collective.alltoall_single(src, out, group=g)
    pieces = out.reshape((k, sj, *src.shape[1:]))
    # piece r holds rank r's chunk along i: join them along i (i's place once j is back)
    parts = [_back(pieces[r], j) for r in range(k)]
    joined = _shape.concat(parts, axis=i)
    a, b = chunk(nj, k, c)
    return _narrow(_narrow(joined, i, 0, ni), j, 0, b - a)


def _no_grad_of(x: Any, op: str) -> Tensor:
    raise OpArgumentError(
        f"[reshard] {label(x)}: no gradient through Partial({op!r}) -> Replicate; "
        "use Partial('sum') or Partial('avg') on tensors that need a gradient"
    )


def reshard_local(
    x: Any,
    t: Tensor,
    shape: tuple[int, ...],
    mesh: ProcessMesh,
    src: list[Placement],
    dst: list[Placement],
    why: str = "",
) -> Tensor:
    """This rank's shard of ``x`` laid out as ``dst`` (``src``: as it is), on the tape.

    Order: partial values are reduced first, then shards are gathered or exchanged (inner
    axes first), then replicated axes are sliced or made partial (outer axes first); an
    exchange to a dim another axis still shards goes through a gather. A dim sharded over
    several axes is cut in mesh order (the earlier axis outer), so an axis that nests inside
    another's chunk is gathered before the outer one changes and cut again after."""
    coord = mesh.coordinate(collective.get_rank())
    if coord is None:
        return t
    cur = list(src)

    def go(axis: int, to: Placement) -> None:
        nonlocal t
        # a dim that other axes shard too: this axis splits (or joins) their chunk of it
        eff = list(shape)
        for d in {p.dim for p in (cur[axis], to) if isinstance(p, Shard)}:
            for b, p in enumerate(cur):
                if b != axis and isinstance(p, Shard) and p.dim == d:
                    eff[d] //= mesh.shape[b]
        t = _Stepper(x, tuple(eff), mesh, coord, why).run(t, axis, cur[axis], to)
        cur[axis] = to

    def inner_first(axis: int) -> None:
        """Gather the axes after ``axis`` that shard its dim too (their chunks nest in its)."""
        d = cur[axis].dim
        for b in reversed(range(axis + 1, mesh.ndim)):
            if isinstance(cur[b], Shard) and cur[b].dim == d:
                go(b, Replicate())

    for a in range(mesh.ndim):  # reduce partial values
        if cur[a].is_partial() and cur[a] != dst[a]:
            if isinstance(dst[a], Shard) and any(isinstance(p, Shard) and p.dim == dst[a].dim for p in cur):
                go(a, Replicate())
            else:
                go(a, dst[a] if isinstance(dst[a], (Shard, Replicate)) else Replicate())
    for a in reversed(range(mesh.ndim)):  # gather or exchange shards, inner axes first
        if isinstance(cur[a], Shard) and cur[a] != dst[a]:
            inner_first(a)
            to = dst[a]
            if isinstance(to, Shard) and any(isinstance(p, Shard) and p.dim == to.dim for p in cur):
                to = Replicate()
            go(a, to if isinstance(to, Shard) else Replicate())
    for a in range(mesh.ndim):  # slice or split replicated axes, outer axes first
        if cur[a] != dst[a]:
            if isinstance(dst[a], Shard):  # an inner axis already cutting that dim: cut after
                for b in reversed(range(a + 1, mesh.ndim)):
                    if isinstance(cur[b], Shard) and cur[b].dim == dst[a].dim:
                        go(b, Replicate())
            go(a, dst[a])
    return t


class _Stepper:
    """One transition on one mesh axis, with its backward on the tape."""

    def __init__(self, x: Any, shape: tuple[int, ...], mesh: ProcessMesh, coord: list[int], why: str) -> None:
        self.x, self.shape, self.mesh, self.coord, self.why = x, shape, mesh, coord, why

    def run(self, t: Tensor, axis: int, src: Placement, dst: Placement) -> Tensor:
        mesh, shape = self.mesh, self.shape
        k, c = mesh.shape[axis], self.coord[axis]
        if k == 1:  # one rank on the axis: every layout is the whole tensor, nothing moves
            return t
        if _base.TRACER.get() is not None:  # a program is traced: the step becomes an op of it
            return traced_step(self.x, t, self.shape, mesh, axis, src, dst, self.why)
        g = mesh.get_group(axis) if k > 1 else None
        nbytes = t.numel() * t.dtype.itemsize
        note = lambda s, d, how, b: _note(self.x, mesh, axis, s, d, how, b, self.why)  # noqa: E731

        def gather(u: Tensor, d: int) -> Tensor:
            with autograd.no_grad():
                return u if g is None else _gather(u, d, shape[d], g, k)

        def mine(u: Tensor, d: int) -> Tensor:
            a, b = chunk(shape[d], k, c)
            with autograd.no_grad():
                return _narrow(u, d, a, b)

        def a2a(u: Tensor, i: int, j: int) -> Tensor:
            with autograd.no_grad():
                return u if g is None else _all_to_all(u, i, j, shape[i], shape[j], k, c, g)

        def scatter(u: Tensor, d: int, op: str) -> Tensor:
            with autograd.no_grad():
                return u if g is None else _reduce_scatter(u, d, k, c, op, g)

        def reduce(u: Tensor, op: str) -> Tensor:
            with autograd.no_grad():
                return u if g is None else _all_reduce(u, op, g)

        def scale(u: Tensor, op: str) -> Tensor:
            return u * (1.0 / k) if op == "avg" and k > 1 else u

        if isinstance(src, Shard) and isinstance(dst, Shard):
            i, j = src.dim, dst.dim
            note(src, dst, "all_to_all", nbytes)
            return _on_tape(t, a2a(t, i, j), lambda gr: a2a(gr, j, i))
        if isinstance(src, Shard):
            d = src.dim
            note(src, Replicate(), "all_gather", nbytes * k)
            out = _on_tape(t, gather(t, d), lambda gr: mine(gr, d))
            return self.run(out, axis, Replicate(), dst) if isinstance(dst, Partial) else out
        if isinstance(src, Partial):
            op = src.reduce_type
            if isinstance(dst, Shard):
                d = dst.dim
                note(src, dst, f"reduce_scatter({op})", nbytes)
                return _on_tape(t, scatter(t, d, op), lambda gr: scale(gather(gr, d), op))
            note(src, Replicate(), f"all_reduce({op})", nbytes)
            if op in ("max", "min"):
                out = _on_tape(t, reduce(t, op), lambda gr: _no_grad_of(self.x, op))
            else:
                out = _on_tape(t, reduce(t, op), lambda gr: scale(gr, op))
            return self.run(out, axis, Replicate(), dst) if isinstance(dst, Partial) else out
        if isinstance(dst, Shard):
            d = dst.dim
            note(src, dst, "slice", 0)
            return _on_tape(t, mine(t, d), lambda gr: gather(gr, d))
        if isinstance(dst, Partial):
            zero = dst.reduce_type == "sum" and c != 0
            note(src, dst, "zeros on the other ranks" if dst.reduce_type == "sum" else "keep", 0)
            with autograd.no_grad():
                out = t * 0 if zero else t.detach()
            # an avg part's gradient is the whole one over k (see the rule above)
            return _on_tape(t, out, lambda gr: gr * float(k) if dst.reduce_type == "avg" and k > 1 else gr)
        return t


def ensure_groups(mesh: ProcessMesh) -> None:
    """Create the groups of every axis of ``mesh`` now, on every rank of the world (ranks
    outside the mesh too: creating a group is a collective of the world)."""
    for a, k in enumerate(mesh.shape):
        if k > 1:
            mesh.get_group(a)


# -- the public call -------------------------------------------------------------------------
def reshard(x: DistTensor, mesh: ProcessMesh, placements: list[Placement], why: str = "") -> DistTensor:
    """``x`` laid out as ``placements`` over ``mesh`` (Paddle's ``dist.reshard``); gradients
    flow back through every step on the same mesh.

    >>> import numpy as np, framework.distributed as dist
    >>> m = dist.ProcessMesh([0], dim_names=["x"])
    >>> d = dist.shard_tensor(np.arange(4.0, dtype="float32"), m, [dist.Shard(0)])
    >>> dist.reshard(d, m, [dist.Replicate()]).placements
    [Replicate()]
    """
    if not isinstance(x, DistTensor):
        raise OpArgumentError(
            f"[reshard] expected a DistTensor (from dist.shard_tensor), got {type(x).__name__}"
        )
    dst = check_placements("reshard", x, x.shape, mesh, placements)
    ensure_groups(x.process_mesh)
    ensure_groups(mesh)
    if mesh != x.process_mesh:
        return _move(x, mesh, dst, why)
    local = x._local
    if local is not None:
        local = reshard_local(x, local, x.shape, mesh, x.placements, dst, why)
    return DistTensor(local, mesh, dst, x.shape, x.dtype, x.name)


def _move(x: DistTensor, mesh: ProcessMesh, dst: list[Placement], why: str) -> DistTensor:
    """Between meshes: replicate on the source mesh, send the whole tensor to each rank of the
    target mesh (from the source rank at the same position, modulo its size), then slice.

    Gradients come back the same way: with grad enabled, the source says (one flag) whether the
    tensor needs a gradient; the target's received tensor is then a leaf that keeps its
    gradient, and :func:`backward_across_meshes` (run by ``DistTensor.backward`` on every rank)
    sends it back to the source, which continues its own backward from the sent tensor."""
    if _base.TRACER.get() is not None:
        raise OpArgumentError(
            f"[reshard] {label(x)}: a move from {x.process_mesh} to {mesh} inside a traced program "
            "(dist.to_static) is not supported (send/recv are not program ops); keep the program on one "
            "mesh, or run it eagerly"
        )
    src_mesh = x.process_mesh
    me = collective.get_rank()
    full = None
    if x._local is not None:
        full = reshard_local(x, x._local, x.shape, src_mesh, x.placements, [Replicate()] * src_mesh.ndim, why)
    srcs, dsts = src_mesh.process_ids, mesh.process_ids
    graded = autograd.is_grad_enabled() and x.dtype.kind == "f"
    got, got_from, sent_to = None, None, []
    for n, d in enumerate(dsts):
        s = srcs[n % len(srcs)]
        if me == s == d:
            got = full  # the same rank: the tape goes straight through
        elif me == s:
            nbytes = full.numel() * full.dtype.itemsize
            _note(x, src_mesh, 0, x.placements[0], Replicate(), f"send to rank {d}", nbytes, why)
            collective.send(full.detach(), dst=d)
            if graded:
                collective.send(_to_tensor([0 if full.stop_gradient else 1], device=full.device), dst=d)
            sent_to.append(d)
        elif me == d:
            got = _empty(x.shape, x.dtype, _recv_device(x))
            collective.recv(got, src=s)
            if graded:
                flag = _empty((1,), _to_tensor([0]).dtype, got.device)
                collective.recv(flag, src=s)
                if int(flag.numpy()[0]):
                    got.stop_gradient = False  # a leaf: its gradient is sent back in backward
                    got_from = s
    if graded and sent_to and full is not None and not full.stop_gradient:
        PENDING.append(("source", full, sent_to, x))
    if got_from is not None:
        PENDING.append(("target", got, [got_from], x))
    local = None
    if got is not None:
        local = reshard_local(x, got, x.shape, mesh, [Replicate()] * mesh.ndim, dst, why)
    return DistTensor(local, mesh, dst, x.shape, x.dtype, x.name)


#: moves between meshes whose gradient is still to be exchanged: (role, tensor, peers, x)
PENDING: list[tuple[str, Tensor, list[int], Any]] = []


def backward_across_meshes() -> None:
    """Exchange the gradients of the moves between meshes, newest first (every rank calls it
    after its local backward): a target sends its received tensor's gradient (zeros when
    nothing used it) back to the source; a source adds what its targets send and continues
    its backward from the tensor it sent."""
    while PENDING:
        role, t, peers, x = PENDING.pop()
        if role == "target":
            g = t.grad if t.grad is not None else _creation.zeros(t.shape, dtype=t.dtype, device=t.device)
            _note(
                x,
                x.process_mesh,
                0,
                Replicate(),
                Replicate(),
                f"gradient send to rank {peers[0]}",
                g.numel() * g.dtype.itemsize,
                "backward",
            )
            collective.send(g.detach(), dst=peers[0])
            continue
        total = None
        for peer in peers:
            g = _empty(t.shape, t.dtype, t.device)
            collective.recv(g, src=peer)
            total = g if total is None else total + g
        autograd.backward(t, total, retain_graph=bool(PENDING))


def _recv_device(x: DistTensor) -> Any:
    return x.device if x.device is not None else _to_tensor([0.0]).device


def unshard_dtensor(x: DistTensor) -> Tensor:
    """The whole tensor, replicated on every rank of its mesh, as a plain tensor (Paddle's
    ``dist.unshard_dtensor``); ranks outside the mesh get None."""
    r = reshard(x, x.process_mesh, [Replicate()] * x.process_mesh.ndim, why="unshard_dtensor")
    return r._local


DistTensor.whole = staticmethod(
    lambda x, why: reshard(x, x.process_mesh, [Replicate()] * x.process_mesh.ndim, why=why)
)


# -- a reshard in a traced program (dist.to_static) --------------------------------------------
# While a program is traced, each transition above is recorded as one IR op, ``op.dist_reshard``
# (registered in the IR's op table only, as the fusion groups are: it never reaches the eager
# op table), on this rank's local value. Its attributes name the mesh, the mesh axis, the
# placements from and to, and the tensor's (effective) global shape; running it (the executor's
# eager step) is the transition above on concrete tensors, with the plugin's collectives. Its
# gradient rule records the reverse transition (the backward column of the table), so the
# backward program holds the reshards' backward. ``grad_reduce`` marks Megatron's ``f``: an
# identity whose gradient is all-reduced over the axis (``P(sum) -> R``).
def _enc(p: Placement) -> str:
    if isinstance(p, Shard):
        return f"S{p.dim}"
    if isinstance(p, Partial):
        return f"P{p.reduce_type}"
    return "R"


def _dec(s: str) -> Placement:
    if s.startswith("S"):
        return Shard(int(s[1:]))
    if s.startswith("P"):
        return Partial(s[1:])
    return Replicate()


_MESHES: dict[tuple[Any, ...], ProcessMesh] = {}


def _mesh_of(attrs: dict[str, Any]) -> ProcessMesh:
    key = (tuple(attrs["mesh"]), tuple(attrs["mesh_shape"]), tuple(attrs["dim_names"]))
    m = _MESHES.get(key)
    if m is None:
        import numpy as np

        m = ProcessMesh(np.asarray(key[0], dtype=np.int64).reshape(key[1]).tolist(), list(key[2]))
        ensure_groups(m)
        m = _MESHES.setdefault(key, m)
    return m


def _step_shape(ins: list[Tensor], attrs: dict[str, Any]) -> list[tuple[tuple[int, ...], Any]]:
    """The local shape after the transition (this rank's chunk where ``dst`` shards)."""
    x = ins[0]
    out = list(x.shape)
    src, dst, shape = _dec(attrs["src"]), _dec(attrs["dst"]), attrs["shape"]
    if isinstance(src, Shard):
        out[src.dim] = shape[src.dim]
    if isinstance(dst, Shard):
        m = _mesh_of(attrs)
        axis = attrs["axis"]
        a, b = chunk(shape[dst.dim], m.shape[axis], m.coordinate(collective.get_rank())[axis])
        out[dst.dim] = b - a
    return [(tuple(out), x.dtype)]


def _run_step(t: Tensor, **attrs: Any) -> Tensor:
    """``op.dist_reshard`` on a concrete local value: the transition, by the collectives."""
    if _base.TRACER.get() is not None:  # the compiler's kernel generator asks: not a fusible op
        raise OpArgumentError("[dist_reshard] a collective runs on concrete tensors only; it is not traced")
    if attrs.get("grad_reduce"):
        return _base.apply(_base.OPS["copy"], [t], {})[0]  # the forward of Megatron's f: identity
    m = _mesh_of(attrs)
    stepper = _Stepper(
        attrs["tensor"], tuple(attrs["shape"]), m, m.coordinate(collective.get_rank()), attrs["why"]
    )
    with autograd.no_grad():
        out = stepper.run(t, attrs["axis"], _dec(attrs["src"]), _dec(attrs["dst"]))
        if out._block is t._block:  # a slice (or nothing moved) is a view: the op's result is its own
            out = _base.apply(_base.OPS["copy"], [out], {})[0]
    return out


def _step_grad(node: autograd.Node, gouts: list[Tensor | None]) -> list[Tensor | None]:
    """The reverse transition of a recorded step (the table's backward column), recorded too."""
    g = gouts[0]
    if g is None:
        return [None]
    a = node.attrs
    src, dst = _dec(a["src"]), _dec(a["dst"])
    k = _mesh_of(a).shape[a["axis"]]

    def back(u: Tensor, s: Placement, d: Placement, **extra: Any) -> Tensor:
        return _base.apply(RESHARD_STEP, [u], {**a, "src": _enc(s), "dst": _enc(d), **extra})[0]

    if a.get("grad_reduce"):
        return [back(g, Partial("sum"), Replicate(), grad_reduce="")]
    if isinstance(dst, Partial):  # R -> P (after a gather when src shards): sum and max/min keep
        if dst.reduce_type == "avg":
            g = g * float(k)
    if isinstance(src, Shard) and isinstance(dst, Shard):
        return [back(g, dst, src)]
    if isinstance(src, Shard):  # gathered: this rank's chunk of the gradient
        return [back(g, Replicate(), src)]
    if isinstance(src, Partial):
        if src.reduce_type in ("max", "min"):
            _no_grad_of(a["tensor"], src.reduce_type)
        if isinstance(dst, Shard):  # reduce-scattered: the gradient gathered
            g = back(g, dst, Replicate())
        return [g * (1.0 / k) if src.reduce_type == "avg" else g]
    if isinstance(dst, Shard):  # sliced: the gradient gathered
        return [back(g, dst, Replicate())]
    return [g]


#: the IR op of one traced transition (``op.dist_reshard``; see above)
RESHARD_STEP = OpDef(
    "dist_reshard",
    "composite",
    _step_shape,
    _step_grad,
    decomposition=_run_step,
    doc="one reshard transition on one mesh axis, run with the plugin's collectives",
)


def _register() -> None:
    from ...ir import dialects

    dialects.register(
        dialects.OpInfo(
            "op.dist_reshard",
            frozenset({"composite", "side_effect_free", "infer_shape", "gradient"}),
            RESHARD_STEP,
            1,
            (
                "mesh",
                "mesh_shape",
                "dim_names",
                "axis",
                "src",
                "dst",
                "shape",
                "tensor",
                "why",
                "grad_reduce",
            ),
        )
    )


#: set by :mod:`.static` while ``dist.to_static`` traces a step: distributed tensors may meet
#: the tracer only then (``fw.jit.to_static`` alone would return bare local values)
SPMD_TRACING: contextvars.ContextVar[bool] = contextvars.ContextVar("oarlock_spmd_tracing", default=False)


def check_traceable(op: str) -> None:
    """Refuse a distributed tensor in a program traced by anything but ``dist.to_static``."""
    if _base.TRACER.get() is not None and not SPMD_TRACING.get():
        raise OpArgumentError(
            f"[{op}] a distributed tensor met a program being traced by fw.jit.to_static: outside "
            "dist.to_static distributed tensors run eagerly only; call the function without "
            "fw.jit.to_static, or trace the layer with dist.to_static(layer, loader, loss, optimizer)"
        )


def traced_step(
    x: Any,
    t: Tensor,
    shape: tuple[int, ...],
    mesh: ProcessMesh,
    axis: int,
    src: Placement,
    dst: Placement,
    why: str,
    grad_reduce: str = "",
) -> Tensor:
    """Record one transition of ``t`` (this rank's value) into the program being traced."""
    check_traceable("reshard")
    register_ir_op()
    attrs = {
        "mesh": tuple(mesh.process_ids),
        "mesh_shape": tuple(mesh.shape),
        "dim_names": tuple(mesh.dim_names),
        "axis": int(axis),
        "src": _enc(src),
        "dst": _enc(dst),
        "shape": tuple(int(n) for n in shape),
        "tensor": x if isinstance(x, str) else label(x),
        "why": why,
        "grad_reduce": grad_reduce,
    }
    _MESHES.setdefault((attrs["mesh"], attrs["mesh_shape"], attrs["dim_names"]), mesh)
    return _base.apply(RESHARD_STEP, [t], attrs)[0]


_REGISTERED: set[str] = set()


def register_ir_op() -> None:
    """Put ``op.dist_reshard`` in the IR's op table (once), so that programs holding it can be
    traced, parsed and rewritten."""
    if "op.dist_reshard" not in _REGISTERED:
        _register()
        _REGISTERED.add("op.dist_reshard")
