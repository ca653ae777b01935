"""Eager execution on distributed tensors: each op reads its sharding rule (its OpDef's
``sharding``, in the notation of :mod:`.rules`; a function made of several ops states the
rule of the whole where it calls :func:`run`), reshards its
inputs as the plan asks (each reshard logged), runs the framework's op on the local shards and
wraps the result with the planned placements. Gradients flow through the local ops and the
reshards on the tape. With plain tensors only, each function is the framework's op.

>>> import numpy as np, framework.distributed as dist
>>> from framework.distributed.auto_parallel import functional as D
>>> m = dist.ProcessMesh([0], dim_names=["mp"])
>>> x = dist.shard_tensor(np.ones((2, 4), "float32"), m, [dist.Replicate()])
>>> w = dist.shard_tensor(np.ones((4, 6), "float32"), m, [dist.Shard(1)])
>>> D.matmul(x, w).placements
[Shard(1)]
"""

from __future__ import annotations

import builtins
import functools
import math
from collections.abc import Callable, Sequence
from typing import Any

from adapter_api import OpArgumentError

from ..._src import autograd
from ..._src.opdef import SpmdRule
from ..._src.ops import base as _base
from ..._src.ops import creation as _creation
from ..._src.ops import math as _math
from ..._src.ops import shape as _shape
from ..._src.ops.composites import activation as _act
from ..._src.ops.composites import embedding as _embedding
from ..._src.ops.composites import loss as _loss
from ..._src.ops.composites import norm as _norm
from ..._src.tensor import Tensor
from .dtensor import DistTensor, label, local_region
from .grad_buckets import is_partial_leaf, partial_leaf
from .mesh import ProcessMesh
from .placement import Placement, Replicate, Shard, chunk
from .reshard import (
    _all_reduce,
    _note,
    _on_tape,
    ensure_groups,
    reshard,
    reshard_local,
    traced_step,
)
from .rules import expand, plan


# -- the executor ----------------------------------------------------------------------------
def _mesh_of(op: str, xs: Sequence[Any]) -> ProcessMesh:
    dts = [x for x in xs if isinstance(x, DistTensor)]
    mesh = dts[0].process_mesh
    for d in dts[1:]:
        if d.process_mesh != mesh:
            raise OpArgumentError(
                f"[{op}] {label(dts[0])} is on {mesh} with placements {dts[0].placements}, but "
                f"{label(d)} is on {d.process_mesh} with placements {d.placements}; move one with "
                "dist.reshard(x, mesh, placements) first"
            )
    return mesh


def _lift(x: Any, mesh: ProcessMesh) -> DistTensor:
    """A plain tensor (the same on every rank) is replicated over the mesh."""
    if isinstance(x, DistTensor):
        return x
    return DistTensor(x, mesh, [Replicate()] * mesh.ndim, x.shape, x.dtype, getattr(x, "name", None))


def _grad_all_reduce(x: DistTensor, t: Tensor, mesh: ProcessMesh, axis: int, op: str) -> Tensor:
    """Identity forward; backward all-reduces the gradient over ``axis`` (Megatron's ``f``).
    For a leaf (a parameter replicated over a data-parallel axis) the op reads an alias whose
    complete partial gradient is reduced with others in a bucket while the backward goes on
    (:mod:`.grad_buckets`), as ``DataParallel`` does; partial over a second axis too (a norm's
    weight under sequence parallelism), it is all-reduced over that one first, on the tape."""
    if t.stop_gradient or mesh.shape[axis] == 1 or t.dtype.kind != "f":
        return t
    g = mesh.get_group(axis)
    _note(
        x,
        mesh,
        axis,
        Replicate(),
        Replicate(),
        "all_reduce(sum) of the gradient, in backward",
        t.numel() * t.dtype.itemsize,
        op,
    )
    if _base.TRACER.get() is not None:  # a traced program: an op whose gradient all-reduces
        return traced_step(x, t, x.shape, mesh, axis, Replicate(), Replicate(), op, grad_reduce="sum")
    if t._node is None and not is_partial_leaf(t):  # a parameter: reduced in buckets in backward
        return partial_leaf(t, g, mesh, axis)
    return _on_tape(t, t.detach(), lambda gr: _all_reduce(gr, "sum", g))


def op_rule(name: str, xs: Sequence[Any], attrs: dict[str, Any] | None = None) -> SpmdRule:
    """OpDef ``name``'s sharding rule for inputs ``xs`` (global shapes) and ``attrs``."""
    rule = _base.OPS[name].sharding
    got = None if rule is None else rule(attrs or {}, list(xs))
    if got is None:
        raise OpArgumentError(f"[{name}] has no sharding rule for these inputs")
    return got


def run(
    op: str,
    xs: Sequence[Any],
    local: Callable[..., Tensor],
    spec: SpmdRule,
    shape: Sequence[int] | None = None,
    with_plan: bool = False,
) -> DistTensor:
    """Run ``local`` (the framework op on local shards) under the sharding rule ``spec``
    (``op`` names it in the log and errors; ``shape``: the global output shape, when the
    rule's letters do not give it; ``with_plan``: ``local`` also gets the plan and the mesh,
    first)."""
    rule, linear, reduce = spec.rule, spec.linear, spec.reduce
    mesh = _mesh_of(op, xs)
    ensure_groups(mesh)
    dts = [_lift(x, mesh) for x in xs]
    p, shape_of_letters = _planned(
        op,
        rule,
        linear,
        reduce,
        tuple(tuple(d.placements) for d in dts),
        tuple(d.shape for d in dts),
        tuple(d.dtype.itemsize for d in dts),
        tuple(mesh.shape),
    )
    shape = shape_of_letters if shape is None else tuple(shape)
    locals_: list[Tensor] = []
    for i, (d, need) in enumerate(zip(dts, p.inputs)):
        t = d._local
        if t is None:
            return DistTensor(None, mesh, p.output, shape, dts[0].dtype)
        if need != d.placements:
            t = reshard_local(d, t, d.shape, mesh, d.placements, need, why=op)
        for j, axis in p.grad_all_reduce:
            if j == i:
                t = _grad_all_reduce(d, t, mesh, axis, op)
        locals_.append(t)
    y = local(p, mesh, *locals_) if with_plan else local(*locals_)
    return DistTensor(y, mesh, p.output, shape, y.dtype)


@functools.lru_cache(maxsize=8192)
def _planned(
    op: str,
    rule: str,
    linear: str,
    reduce: str,
    placements: tuple[tuple[Placement, ...], ...],
    shapes: tuple[tuple[int, ...], ...],
    itemsizes: tuple[int, ...],
    mesh_shape: tuple[int, ...],
) -> tuple[Any, tuple[int, ...]]:
    """The plan of an op for these layouts and shapes, and the output shape its letters give
    (a training step asks the same questions every step: planned once; never mutated)."""
    letters, out, kept = expand(rule, list(shapes))
    p = plan(
        op,
        rule,
        linear,
        reduce,
        letters,
        out,
        kept,
        [list(x) for x in placements],
        list(shapes),
        list(itemsizes),
        list(mesh_shape),
    )
    p.shapes = list(shapes)
    sizes: dict[str, int] = {}
    for lt, sh in zip(letters, shapes):
        for c, n in zip(lt, sh):
            if c != "_":
                sizes[c] = n
    return p, tuple(sizes.get(c, 1) for c in out)


def _dist(*xs: Any) -> bool:
    return any(isinstance(x, DistTensor) for x in xs)


builtins_sum = builtins.sum


# -- ops ------------------------------------------------------------------------------------
def matmul(x: Any, y: Any) -> Any:
    """``x @ y`` (rule ``*mk,*kn->*mn``): a contracted ``k`` sharded gives a Partial output."""
    if not _dist(x, y):
        return _math.matmul(x, y)
    if x.ndim < 2 or y.ndim < 2:
        raise OpArgumentError(
            f"[matmul] distributed operands need 2 or more dims, got {list(x.shape)} and {list(y.shape)}"
        )
    return run("matmul", [x, y], _math.matmul, op_rule("matmul", [x, y]))


def linear(x: Any, weight: Any, bias: Any = None) -> Any:
    """``x @ weight + bias`` (Paddle's layout: weight is ``[in, out]``)."""
    y = matmul(x, weight)
    return y if bias is None else add(y, bias)


def _binary(op: str, opdef: str, fn: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    def f(x: Any, y: Any) -> Any:
        if not _dist(x, y):
            return fn(x, y)
        if not isinstance(y, (Tensor, DistTensor)) or not isinstance(x, (Tensor, DistTensor)):
            a, s = (x, y) if isinstance(x, DistTensor) else (y, x)
            lin = "one" if op in ("multiply",) or (op == "divide" and a is x) else ""
            return run(op, [a], lambda t: fn(t, s) if a is x else fn(s, t), SpmdRule("*->*", lin))
        return run(op, [x, y], fn, op_rule(opdef, [x, y]))

    f.__name__ = op
    f.__doc__ = f"Element-wise {op} with numpy broadcasting (rule ``*,*->*``)."
    return f


add = _binary("add", "add", lambda a, b: a + b)
subtract = _binary("subtract", "sub", lambda a, b: a - b)
multiply = _binary("multiply", "mul", lambda a, b: a * b)
divide = _binary("divide", "div", lambda a, b: a / b)


def _unary(name: str, fn: Callable[[Tensor], Tensor]) -> Callable[[Any], Any]:
    def f(x: Any) -> Any:
        return run(name, [x], fn, op_rule(name, [x])) if isinstance(x, DistTensor) else fn(x)

    f.__name__ = name
    f.__doc__ = f"Element-wise {name} (rule ``*->*``; a Partial input is reduced first)."
    return f


silu = _unary("silu", _act.silu)
relu = _unary("relu", _act.relu)
gelu = _unary("gelu", _act.gelu)
tanh = _unary("tanh", _math.tanh)
exp = _unary("exp", _math.exp)
log = _unary("log", _math.log)


def _axes(x: Any, axis: Any) -> list[int]:
    if axis is None:
        return list(range(x.ndim))
    axes = [axis] if isinstance(axis, int) else list(axis)
    return sorted(a % x.ndim for a in axes)


def _reduction(
    op: str, opdef: str, x: Any, axis: Any, keepdim: bool, local: Callable[[Tensor, list[int]], Tensor]
) -> DistTensor:
    axes = _axes(x, axis)
    spec = op_rule(opdef, [x], {"axes": axes, "keepdim": keepdim})
    return run(op, [x], lambda t: local(t, axes), spec)


def sum(x: Any, axis: Any = None, keepdim: bool = False) -> Any:  # noqa: A001 - Paddle's name
    """Sum over ``axis``: a sharded axis gives a Partial(sum) output."""
    if not isinstance(x, DistTensor):
        return _math.sum(x, axis=axis, keepdim=keepdim)
    return _reduction("sum", "sum", x, axis, keepdim, lambda t, a: _math.sum(t, axis=a, keepdim=keepdim))


def mean(x: Any, axis: Any = None, keepdim: bool = False) -> Any:
    """Mean over ``axis``: each rank sums its shard over the global count (exact for uneven
    shards); a sharded axis gives a Partial(sum) output."""
    if not isinstance(x, DistTensor):
        return _math.mean(x, axis=axis, keepdim=keepdim)
    count = math.prod(x.shape[a] for a in _axes(x, axis))
    return _reduction(  # a sum, scaled
        "mean", "sum", x, axis, keepdim, lambda t, a: _math.sum(t, axis=a, keepdim=keepdim) * (1.0 / count)
    )


def max(x: Any, axis: Any = None, keepdim: bool = False) -> Any:  # noqa: A001 - Paddle's name
    """Max over ``axis``: a sharded axis gives a Partial(max) output."""
    if not isinstance(x, DistTensor):
        return _math.max(x, axis=axis, keepdim=keepdim)
    return _reduction("max", "max", x, axis, keepdim, lambda t, a: _local_max(t, a, keepdim))


def _local_max(t: Tensor, axes: list[int], keepdim: bool) -> Tensor:
    """The max of a shard; an empty shard (uneven sharding) gives -inf, the identity of max."""
    if builtins.any(t.shape[a] == 0 for a in axes):
        shape = [1 if i in axes else n for i, n in enumerate(t.shape) if keepdim or i not in axes]
        return _creation.full(shape, float("-inf"), dtype=t.dtype, device=t.device)
    return _math.max(t, axis=axes, keepdim=keepdim)


def _last_axis(op: str, x: Any, axis: int) -> None:
    if axis % x.ndim != x.ndim - 1:
        raise OpArgumentError(f"[{op}] distributed tensors: only the last axis is supported, got axis={axis}")


def softmax(x: Any, axis: int = -1) -> Any:
    """Softmax over the last axis (rule ``*a->*a | a``: the axis is gathered when sharded)."""
    if not isinstance(x, DistTensor):
        return _norm.softmax(x, axis=axis)
    _last_axis("softmax", x, axis)
    return run("softmax", [x], lambda t: _norm.softmax(t, axis=-1), op_rule("softmax", [x], {"axis": -1}))


def log_softmax(x: Any, axis: int = -1) -> Any:
    if not isinstance(x, DistTensor):
        return _norm.log_softmax(x, axis=axis)
    _last_axis("log_softmax", x, axis)
    spec = op_rule("log_softmax", [x], {"axis": -1})
    return run("log_softmax", [x], lambda t: _norm.log_softmax(t, axis=-1), spec)


def rms_norm(x: Any, weight: Any, epsilon: float = 1e-6) -> Any:
    """RMS norm over the last axis (rule ``*a,a->*a | a``)."""
    n = x.shape[-1]
    if not _dist(x, weight):
        return _norm.rms_norm(x, n, weight, epsilon)
    spec = op_rule("rms_norm", [x, weight])
    return run("rms_norm", [x, weight], lambda t, w: _norm.rms_norm(t, n, w, epsilon), spec)


def layer_norm(x: Any, weight: Any, bias: Any, epsilon: float = 1e-5) -> Any:
    """Layer norm over the last axis (rule ``*a,a,a->*a | a``)."""
    n = x.shape[-1]
    if not _dist(x, weight, bias):
        return _norm.layer_norm(x, n, weight, bias, epsilon)
    spec = op_rule("layer_norm", [x, weight, bias])
    return run("layer_norm", [x, weight, bias], lambda t, w, b: _norm.layer_norm(t, n, w, b, epsilon), spec)


def embedding(ids: Any, weight: Any) -> Any:
    """Rows of ``weight`` (rule ``*,vd->*d``). A vocabulary-sharded table (``Shard(0)``) stays
    sharded: each rank looks up the ids in its range of rows, zeros the others, and the output
    is ``Partial(sum)`` (Paddle's vocabulary-parallel embedding)."""
    if not _dist(ids, weight):
        return _embedding.embedding(ids, weight)
    return run("embedding", [ids, weight], _vocab_embedding, SpmdRule("*,vd->*d"), with_plan=True)


def _vocab_embedding(p: Any, mesh: ProcessMesh, ids: Tensor, w: Tensor) -> Tensor:
    for axis, pl in enumerate(p.inputs[1]):
        if isinstance(pl, Shard) and pl.dim == 0:  # this rank holds rows [a, b)
            a, b = chunk(p.shapes[1][0], mesh.shape[axis], mesh.coordinate(_rank())[axis])
            inside = _math.logical_and(ids >= a, ids < b)
            local_ids = _math.where(inside, ids - a, _math.zeros_like(ids))
            rows = _embedding.embedding(local_ids, w)
            return rows * _shape.unsqueeze(inside.astype(rows.dtype), -1)
    return _embedding.embedding(ids, w)


def cross_entropy(logits: Any, label: Any, reduction: str = "mean") -> Any:
    """Softmax cross-entropy over the last axis (rule ``*c,*->* | c``); ``mean`` and ``sum``
    reduce over every other dim (a sharded batch gives a Partial(sum) loss)."""
    if not _dist(logits, label):
        return _loss.cross_entropy(logits, label, reduction=reduction)
    logits = _lift(logits, _mesh_of("cross_entropy", [logits, label]))
    if any(isinstance(p, Shard) and p.dim == logits.ndim - 1 for p in logits.placements):
        return _vocab_cross_entropy(logits, label, reduction)
    if reduction == "none":
        return run(
            "cross_entropy",
            [logits, label],
            lambda a, b: _loss.cross_entropy(a, b, reduction="none"),
            SpmdRule("*c,*->* | c", "", "sum"),
        )
    scale = 1.0 / math.prod(label.shape) if reduction == "mean" else 1.0
    return run(
        "cross_entropy",
        [logits, label],
        lambda a, b: _loss.cross_entropy(a, b, reduction="sum") * scale,
        SpmdRule("*c,*-> | c", "", "sum"),
    )


def _vocab_cross_entropy(logits: DistTensor, label: Any, reduction: str) -> Any:
    """Classes sharded (Paddle's vocabulary-parallel cross-entropy): the logits are never
    gathered; the row max, the sum of exponentials and the target logit are reduced over the
    class shards (all-reduces of one value per row), each from the rules of the ops below."""
    mesh = logits.process_mesh
    nclass = logits.shape[-1]
    stop = DistTensor(
        logits._local.detach() if logits._local is not None else None,
        mesh,
        logits.placements,
        logits.shape,
        logits.dtype,
        logits.name,
    )
    row_max = max(stop, axis=-1, keepdim=True)  # Partial(max) over the class shards; no gradient needed
    row_max = reshard(
        row_max, mesh, [Replicate() if p.is_partial() else p for p in row_max.placements], why="cross_entropy"
    )
    shifted = subtract(logits, row_max)
    lse = log(sum(exp(shifted), axis=-1))  # the sum is Partial: log all-reduces it
    target = sum(multiply(shifted, one_hot(label, nclass)), axis=-1)  # Partial: reduced by subtract
    loss = subtract(lse, target)
    if reduction == "none":
        return loss
    return mean(loss) if reduction == "mean" else sum(loss)


def one_hot(x: Any, num_classes: int) -> Any:
    """One-hot rows of ``num_classes`` (rule ``*->*c``: the new class dim is replicated)."""
    if not isinstance(x, DistTensor):
        return _embedding.one_hot(x, num_classes)
    inl = "abcdefghijklmnop"[: x.ndim]
    return run(
        "one_hot",
        [x],
        lambda t: _embedding.one_hot(t, num_classes),
        SpmdRule(f"{inl}->{inl}Z"),
        shape=(*x.shape, num_classes),
    )


def concat(xs: Sequence[Any], axis: int = 0) -> Any:
    """Join along ``axis`` (rule ``*a,*b->*c | a b``: the joined axis is whole on each rank,
    the other dims keep their shards)."""
    xs = list(xs)
    if not _dist(*xs):
        return _shape.concat(list(xs), axis=axis)
    nd = xs[0].ndim
    axis %= nd
    inl = "abcdefghijklmnop"[:nd]
    own = "QRSTUVWXYZ"
    if len(xs) > len(own) - 1:
        raise OpArgumentError(f"[concat] distributed tensors: at most {len(own) - 1} inputs, got {len(xs)}")
    ins = [inl[:axis] + own[i] + inl[axis + 1 :] for i in range(len(xs))]
    out = inl[:axis] + "P" + inl[axis + 1 :]
    shape = list(xs[0].shape)
    shape[axis] = builtins_sum(x.shape[axis] for x in xs)
    rule = f"{','.join(ins)}->{out} | {''.join(own[: len(xs)])}"
    return run(
        "concat",
        list(xs),
        lambda *ts: _shape.concat(list(ts), axis=axis),
        SpmdRule(rule, "all"),
        shape=shape,
    )


def split(x: Any, num_or_sections: Any, axis: int = 0) -> list[Any]:
    """Split along ``axis`` (the axis is made whole first, when sharded; the other dims keep
    their shards). ``num_or_sections``: a count of equal parts or a list of sizes."""
    if not isinstance(x, DistTensor):
        return _shape.split(x, num_or_sections, axis=axis)
    axis %= x.ndim
    n = x.shape[axis]
    sizes = (
        [n // num_or_sections] * num_or_sections
        if isinstance(num_or_sections, int)
        else list(num_or_sections)
    )
    if builtins_sum(sizes) != n:
        raise OpArgumentError(
            f"[split] sections {sizes} do not add up to dim {axis} of size {n} of {label(x)}"
        )
    if any(isinstance(p, Shard) and p.dim == axis for p in x.placements):
        x = reshard(
            x,
            x.process_mesh,
            [Replicate() if isinstance(p, Shard) and p.dim == axis else p for p in x.placements],
            why="split",
        )
    inl = "abcdefghijklmnop"[: x.ndim]
    rule = f"{inl}->{inl[:axis]}Z{inl[axis + 1 :]} | {inl[axis]}"
    outs, start = [], 0
    for size in sizes:
        shape = list(x.shape)
        shape[axis] = size
        idx = tuple(slice(None) for _ in range(axis)) + (slice(start, start + size),)
        outs.append(run("split", [x], lambda t, idx=idx: t[idx], SpmdRule(rule, "one"), shape=shape))
        start += size
    return outs


def transpose(x: Any, perm: Sequence[int]) -> Any:
    """Permute dims (placements follow their dims)."""
    if not isinstance(x, DistTensor):
        return _shape.transpose(x, perm)
    spec = op_rule("permute", [x], {"perm": [p % x.ndim for p in perm]})
    return run("transpose", [x], lambda t: _shape.transpose(t, list(perm)), spec)


def _blocks(a: Sequence[int], b: Sequence[int]) -> list[tuple[list[int], list[int]]]:
    """Group the dims of two shapes with the same count into runs of equal product."""
    out, i, j = [], 0, 0
    while i < len(a) or j < len(b):
        bi, bj = [i], [j]
        pa, pb = a[i] if i < len(a) else 1, b[j] if j < len(b) else 1
        i, j = i + 1, j + 1
        while pa != pb:
            if pa < pb:
                bi.append(i)
                pa *= a[i]
                i += 1
            else:
                bj.append(j)
                pb *= b[j]
                j += 1
        out.append(([d for d in bi if d < len(a)], [d for d in bj if d < len(b)]))
    return out


def reshape(x: Any, shape: Sequence[int]) -> Any:
    """Reshape; a sharded dim stays sharded when it is the leading dim of the group of dims it
    splits into or merges with and its size and the new leading size are divisible by the
    ranks of the mesh axis; otherwise it is gathered first (logged with the reason: a fused
    ``[q k v]`` projection split into heads, for one)."""
    if not isinstance(x, DistTensor):
        return _shape.reshape(x, shape)
    shape = list(shape)
    if -1 in shape:
        known = math.prod(s for s in shape if s != -1)
        shape[shape.index(-1)] = x.numel() // known
    mesh = x.process_mesh
    ensure_groups(mesh)
    blocks = _blocks(x.shape, shape)
    need: list[Placement] = list(x.placements)
    outp: list[Placement] = []
    why = "reshape"
    for axis, p in enumerate(x.placements):
        if not isinstance(p, Shard):
            outp.append(p)
            continue
        k = mesh.shape[axis]
        if any(isinstance(q, Shard) and q.dim == p.dim for q in x.placements[:axis]):
            need[axis] = Replicate()  # a dim sharded over several axes: the inner ones gathered
            outp.append(Replicate())
            continue
        ins, outs = next(bl for bl in blocks if p.dim in bl[0])
        ins = [d for d in ins if x.shape[d] != 1] or ins  # dims of size 1 do not move the layout
        outs = [d for d in outs if shape[d] != 1] or outs
        o0 = outs[0] if outs else None
        whole = p.dim != ins[0] or o0 is None
        if not whole and (len(ins), len(outs)) != (1, 1) and (x.shape[p.dim] % k or shape[o0] % k):
            whole = True
            why = (
                f"reshape: dim {p.dim} of size {x.shape[p.dim]} becomes dims {outs} of sizes "
                f"{[shape[o] for o in outs]}, not divisible by the {k} ranks of mesh axis '{mesh.dim_names[axis]}'"
            )
        if whole:
            need[axis] = Replicate()
            outp.append(Replicate())
            continue
        outp.append(Shard(o0))
    t = x._local
    if t is None:
        return DistTensor(None, mesh, outp, shape, x.dtype)
    if need != x.placements:
        t = reshard_local(x, t, x.shape, mesh, x.placements, need, why=why)
    region = local_region(shape, mesh, outp, mesh.coordinate(_rank()))
    local_shape = [b - a for a, b in region]
    return DistTensor(_shape.reshape(t, local_shape), mesh, outp, shape, x.dtype)


def _rank() -> int:
    from .. import collective

    return collective.get_rank()


def backward(x: DistTensor, grad_tensor: Any = None) -> None:
    """Backward from a distributed scalar: a Partial loss is all-reduced first (on the tape)."""
    if not isinstance(x, DistTensor):
        raise OpArgumentError(f"[backward] expected a DistTensor, got {type(x).__name__}")
    r = x
    if any(p.is_partial() for p in x.placements):
        r = reshard(x, x.process_mesh, [Replicate()] * x.process_mesh.ndim, why="backward")
    if r._local is not None:
        autograd.backward(r._local, grad_tensor)


def numpy(x: DistTensor) -> Any:
    """The whole tensor as a numpy array (gathered; None outside the mesh)."""
    r = (
        reshard(x, x.process_mesh, [Replicate()] * x.process_mesh.ndim, why="numpy")
        if any(not p.is_replicated() for p in x.placements)
        else x
    )
    return None if r._local is None else r._local.numpy()


__all__ = [
    "add",
    "backward",
    "concat",
    "cross_entropy",
    "divide",
    "embedding",
    "exp",
    "gelu",
    "layer_norm",
    "linear",
    "log",
    "log_softmax",
    "matmul",
    "max",
    "mean",
    "multiply",
    "numpy",
    "one_hot",
    "relu",
    "reshape",
    "rms_norm",
    "run",
    "silu",
    "softmax",
    "split",
    "subtract",
    "sum",
    "tanh",
    "transpose",
]
