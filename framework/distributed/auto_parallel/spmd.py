"""The interceptor: unmodified framework ops on distributed tensors (Paddle's dist-tensor
dispatch). The engine hands every op with a distributed input to :func:`intercept`
(``framework._src.dispatch.INTERCEPTORS``; registered when the first distributed tensor is
made); it reads the op's sharding rule from its OpDef (``OpDef.sharding``, in the notation of
:mod:`.rules`), reshards the inputs as the plan asks (each reshard logged), runs
the same op on the local shards and wraps the result with the planned placements.

Ops without a rule:

- a *composite* runs its decomposition on the distributed inputs, so each primitive it is
  made of follows its own rule;
- a *primitive* runs replicated: every distributed input is gathered (or reduced) to
  ``Replicate`` -- each such reshard is logged with ``why`` = ``"<op>: no sharding rule"`` --
  and the output is replicated. Always correct, possibly slow; the log shows where.

>>> import numpy as np, framework as fw, framework.distributed as dist
>>> m = dist.ProcessMesh([0], dim_names=["mp"])
>>> w = dist.shard_tensor(np.ones((4, 6), "float32"), m, [dist.Shard(1)])
>>> y = fw.nn.functional.silu(fw.matmul(fw.ones((2, 4)), w))  # the framework's own ops
>>> y.placements, y.shape
([Shard(1)], (2, 6))
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..._src.opdef import OpDef, SpmdRule
from ..._src.ops import base as _base
from ..._src.ops import math as _math
from ..._src.tensor import Tensor
from .dtensor import DistTensor, local_region
from .functional import _lift, _mesh_of, reshape, run
from .mesh import ProcessMesh
from .placement import Replicate, Shard, chunk
from .reshard import check_traceable, ensure_groups, reshard_local


def _out_here(shape: Sequence[int], mesh: ProcessMesh, placements: list[Any]) -> list[int]:
    coord = mesh.coordinate(_rank())
    return [b - a for a, b in local_region(shape, mesh, placements, coord)]


def _rows_gather(p: Any, mesh: ProcessMesh, x: Tensor, idx: Tensor, attrs: dict[str, Any]) -> Tensor:
    """The ``"rows"`` strategy of an axis-0 gather over rows sharded on some mesh axis: each
    rank looks up the ids in its range of rows and zeros the others (a partial sum)."""
    for axis, pl in enumerate(p.inputs[0]):
        if isinstance(pl, Shard) and pl.dim == 0:  # this rank holds rows [a, b)
            a, b = chunk(p.shapes[0][0], mesh.shape[axis], mesh.coordinate(_rank())[axis])
            inside = _math.logical_and(idx >= a, idx < b)
            local_ids = _math.where(inside, idx - a, _math.zeros_like(idx))
            rows = _base.apply(_OP["gather"], [x, local_ids], attrs)[0]
            mask = inside.astype(rows.dtype).reshape(tuple(idx.shape) + (1,) * (x.ndim - 1))
            return rows * mask
    return _base.apply(_OP["gather"], [x, idx], attrs)[0]


#: the local strategies an :class:`SpmdRule` may name (``SpmdRule.local``)
LOCAL_STRATEGIES: dict[str, Callable[..., Tensor]] = {"rows": _rows_gather}


def rule_of(op: OpDef, attrs: dict[str, Any], ins: list[Any]) -> SpmdRule | None:
    """The op's rule for these inputs, from its OpDef (``OpDef.sharding``; None: no rule)."""
    return None if op.sharding is None else op.sharding(attrs, ins)


_OP = _base.OPS


def _runner(op: OpDef) -> Callable[[list[Tensor], dict[str, Any]], Tensor]:
    if op.kind == "primitive":
        return lambda ts, a: _base.apply(op, ts, a)[0]
    return lambda ts, a: _base.call(op, ts, a)


def intercept(op: OpDef, ins: list[Any], attrs: dict[str, Any]) -> Any:
    """Run ``op`` on inputs of which one at least is distributed (see the module docstring);
    a primitive's outputs come back as a list, a composite's as its value, None for a
    composite to decompose."""
    check_traceable(op.name)
    if op.kind == "view":
        return reshape(ins[0], attrs["shape"])
    rule = rule_of(op, attrs, ins)
    if rule is None or not rule.rule:
        if op.kind == "composite":
            return None
        return _replicated(op, ins, attrs)
    shape = None
    if op.infer is not None and op.kind == "primitive":
        metas = op.infer(ins, attrs)  # global shapes in, the global output shape out
        if len(metas) != 1:
            return _replicated(op, ins, attrs)
        shape = metas[0][0]
    go = _runner(op)
    if rule.local:
        local_fn = LOCAL_STRATEGIES[rule.local]

        def local(p: Any, mesh: ProcessMesh, *ts: Tensor) -> Tensor:
            return local_fn(p, mesh, *ts, attrs)

    elif rule.local_attrs is not None:
        la = rule.local_attrs

        def local(p: Any, mesh: ProcessMesh, *ts: Tensor) -> Tensor:
            return go(list(ts), la(attrs, list(ts), _out_here(shape, mesh, p.output)))

    else:

        def local(p: Any, mesh: ProcessMesh, *ts: Tensor) -> Tensor:
            return go(list(ts), attrs)

    out = run(op.name, ins, local, rule, shape=shape, with_plan=True)
    return [out] if op.kind == "primitive" else out


def _replicated(op: OpDef, ins: list[Any], attrs: dict[str, Any]) -> list[DistTensor]:
    """No rule: gather every input to Replicate (logged), run the op, replicate the outputs."""
    mesh = _mesh_of(op.name, ins)
    ensure_groups(mesh)
    whole = [Replicate()] * mesh.ndim
    locals_: list[Tensor] = []
    for x in ins:
        d = _lift(x, mesh)
        if d._local is None:
            return [DistTensor(None, mesh, whole, m[0], m[1]) for m in op.infer(ins, attrs)]
        t = d._local
        if d.placements != whole:
            t = reshard_local(d, t, d.shape, mesh, d.placements, whole, why=f"{op.name}: no sharding rule")
        locals_.append(t)
    outs = _base.apply(op, locals_, attrs)
    return [DistTensor(o, mesh, whole, o.shape, o.dtype) for o in outs]


def _rank() -> int:
    from .. import collective

    return collective.get_rank()


DistTensor.interceptor = staticmethod(intercept)
