"""The interceptor: unmodified framework ops on distributed tensors (Paddle's dist-tensor
dispatch). The engine hands every op with a distributed input to :func:`intercept`
(``framework._src.dispatch.INTERCEPTORS``; registered when the first distributed tensor is
made); it reads the op's sharding rule (:data:`OP_RULES`, keyed by the OpDef's name, in the
notation of :mod:`.rules`), reshards the inputs as the plan asks (each reshard logged), runs
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
from dataclasses import dataclass
from typing import Any

from ..._src.opdef import OpDef
from ..._src.ops import base as _base
from ..._src.ops import math as _math
from ..._src.tensor import Tensor
from .dtensor import DistTensor, local_region
from .functional import _lift, _mesh_of, reshape, run
from .mesh import ProcessMesh
from .placement import Replicate, Shard, chunk
from .reshard import check_traceable, ensure_groups, reshard_local

_LOW = "abcdefghijklmnop"


@dataclass
class Rule:
    """One op's rule for these inputs and attrs: the notation, how partial values pass
    (``linear``), what a contracted letter reduces with, and -- when the op's attrs name
    global sizes -- ``local_attrs(global_attrs, local_inputs, out_shape_here)``."""

    rule: str
    linear: str = ""
    reduce: str = ""
    local_attrs: Callable[[dict[str, Any], list[Tensor], list[int]], dict[str, Any]] | None = None
    local: Callable[..., Tensor] | None = None  # a whole local function (gets the plan and the mesh)


def _elementwise(n: int, linear: str = "") -> Rule:
    return Rule(",".join(["*"] * n) + "->*", linear)


def _reduction(ndim: int, axes: Sequence[int], keepdim: bool, linear: str, reduce: str, kept: bool) -> Rule:
    inl = _LOW[:ndim]
    out = "".join(("Z" if keepdim else "") if i in axes else c for i, c in enumerate(inl))
    keep = "".join(inl[i] for i in axes) if kept else ""
    return Rule(f"{inl}->{out}" + (f" | {keep}" if keep else ""), linear, reduce)


def _axis_kept(ndim: int, axes: Sequence[int]) -> Rule:
    inl = _LOW[:ndim]
    return Rule(f"{inl}->{inl} | " + "".join(inl[a % ndim] for a in axes))


def _matmul_t(attrs: dict[str, Any], ins: list[Any]) -> Rule:
    x = "*km" if attrs["transpose_x"] else "*mk"
    y = "*nk" if attrs["transpose_y"] else "*kn"
    return Rule(f"{x},{y}->*mn", "one")


def _permute(attrs: dict[str, Any], ins: list[Any]) -> Rule:
    inl = _LOW[: ins[0].ndim]
    return Rule(f"{inl}->" + "".join(inl[p] for p in attrs["perm"]), "one")


def _out_here(shape: Sequence[int], mesh: ProcessMesh, placements: list[Any]) -> list[int]:
    coord = mesh.coordinate(_rank())
    return [b - a for a, b in local_region(shape, mesh, placements, coord)]


def _expand(attrs: dict[str, Any], ins: list[Any]) -> Rule:
    out = tuple(attrs["shape"])
    nd, nx = len(out), ins[0].ndim
    inl = _LOW[:nx]
    new = "QRSTUVWXY"[: nd - nx]
    return Rule(f"{inl}->{new}{inl}", "one", local_attrs=lambda a, ts, here: {**a, "shape": tuple(here)})


def _slice(attrs: dict[str, Any], ins: list[Any]) -> Rule:
    x = ins[0]
    inl = _LOW[: x.ndim]
    cut = [
        d
        for d, (s, e, st) in enumerate(zip(attrs["starts"], attrs["stops"], attrs["steps"]))
        if (s, e, st) != (0, x.shape[d], 1)
    ]

    def local_attrs(a: dict[str, Any], ts: list[Tensor], here: list[int]) -> dict[str, Any]:
        stops = [a["stops"][d] if d in cut else ts[0].shape[d] for d in range(x.ndim)]
        return {**a, "stops": tuple(stops)}

    kept = "".join(inl[d] for d in cut)
    return Rule(f"{inl}->{inl}" + (f" | {kept}" if kept else ""), "one", local_attrs=local_attrs)


def _pad(attrs: dict[str, Any], ins: list[Any]) -> Rule:
    inl = _LOW[: ins[0].ndim]
    kept = "".join(inl[d] for d, (b, e) in enumerate(attrs["pads"]) if b or e)
    return Rule(f"{inl}->{inl}" + (f" | {kept}" if kept else ""))


def _concat(attrs: dict[str, Any], ins: list[Any]) -> Rule:
    nd, axis = ins[0].ndim, attrs["axis"]
    inl, own = _LOW[:nd], "QRSTUVWXY"
    if len(ins) > len(own):
        return Rule("", "")  # too many inputs to spell: run replicated
    specs = [inl[:axis] + own[i] + inl[axis + 1 :] for i in range(len(ins))]
    out = inl[:axis] + "Z" + inl[axis + 1 :]
    return Rule(f"{','.join(specs)}->{out} | {own[: len(ins)]}", "all")


def _gather(attrs: dict[str, Any], ins: list[Any]) -> Rule:
    """``gather(x, index, axis)``: the rows of an axis-0 gather may stay sharded (Paddle's
    vocabulary-parallel embedding: each rank looks up the ids in its rows, zeros the others,
    the output is Partial(sum)); another gathered axis is made whole."""
    x, idx = ins
    axis = attrs["axis"]
    inl = _LOW[: x.ndim]
    out = inl[:axis] + "*" + inl[axis + 1 :]
    kept = "" if axis == 0 else f" | {inl[axis]}"
    return Rule(f"{inl},*->{out}{kept}", "", "sum", local=_rows_gather if axis == 0 else None)


def _rows_gather(p: Any, mesh: ProcessMesh, x: Tensor, idx: Tensor, attrs: dict[str, Any]) -> Tensor:
    for axis, pl in enumerate(p.inputs[0]):
        if isinstance(pl, Shard) and pl.dim == 0:  # this rank holds rows [a, b)
            a, b = chunk(p.shapes[0][0], mesh.shape[axis], mesh.coordinate(_rank())[axis])
            inside = _math.logical_and(idx >= a, idx < b)
            local_ids = _math.where(inside, idx - a, _math.zeros_like(idx))
            rows = _base.apply(_OP["gather"], [x, local_ids], attrs)[0]
            mask = inside.astype(rows.dtype).reshape(tuple(idx.shape) + (1,) * (x.ndim - 1))
            return rows * mask
    return _base.apply(_OP["gather"], [x, idx], attrs)[0]


def _norm(attrs: dict[str, Any], ins: list[Any]) -> Rule:
    return Rule("*a" + ",a" * (len(ins) - 1) + "->*a | a")


def _attention(attrs: dict[str, Any], ins: list[Any]) -> Rule:
    mask = ",*st" if len(ins) == 4 else ""
    return Rule(f"*sd,*td,*te{mask}->*se | s t d")


def _linear(attrs: dict[str, Any], ins: list[Any]) -> Rule | None:
    return Rule("*mk,kn->*mn", "one") if len(ins) == 2 else None  # with a bias: matmul, then add


_LINEAR_EW = {"add": "all", "sub": "all", "mul": "one", "div": "first", "neg": "one", "copy": "one"}
ACTIVATIONS = (
    "gelu silu sigmoid relu relu6 leaky_relu softplus hardtanh elu selu celu hardswish hardsigmoid "
    "mish softsign tanhshrink hardshrink softshrink thresholded_relu log_sigmoid atan lgamma digamma erfinv"
).split()

#: OpDef name -> ``fn(attrs, inputs) -> Rule | None`` (inputs: global shapes and dtypes)
OP_RULES: dict[str, Callable[[dict[str, Any], list[Any]], Rule | None]] = {
    "matmul": lambda a, ins: Rule("*mk,*kn->*mn", "one"),
    "matmul_t": _matmul_t,
    "linear": _linear,
    "permute": _permute,
    "expand": _expand,
    "slice": _slice,
    "pad": _pad,
    "concat": _concat,
    "gather": _gather,
    "cast": lambda a, ins: Rule("*->*", "one" if ins[0].dtype.kind == "f" and a["dtype"].kind == "f" else ""),
    "sum": lambda a, ins: _reduction(ins[0].ndim, a["axes"], a["keepdim"], "one", "sum", False),
    "max": lambda a, ins: _reduction(ins[0].ndim, a["axes"], a["keepdim"], "", "max", False),
    "min": lambda a, ins: _reduction(ins[0].ndim, a["axes"], a["keepdim"], "", "min", False),
    "prod": lambda a, ins: _reduction(ins[0].ndim, a["axes"], a["keepdim"], "", "", True),
    "argmax": lambda a, ins: _reduction(ins[0].ndim, [a["axis"]], a["keepdim"], "", "", True),
    "argmin": lambda a, ins: _reduction(ins[0].ndim, [a["axis"]], a["keepdim"], "", "", True),
    "softmax": lambda a, ins: _axis_kept(ins[0].ndim, [a["axis"]]),
    "log_softmax": lambda a, ins: _axis_kept(ins[0].ndim, [a["axis"]]),
    "logsumexp": lambda a, ins: _reduction(ins[0].ndim, a["axes"], a["keepdim"], "", "", True),
    "rms_norm": _norm,
    "layer_norm": _norm,
    "attention": _attention,
    "atan2": lambda a, ins: _elementwise(2),
    **{name: (lambda a, ins: _elementwise(1)) for name in ACTIVATIONS},
}


def rule_of(op: OpDef, attrs: dict[str, Any], ins: list[Any]) -> Rule | None:
    """The op's rule for these inputs (None: no rule)."""
    fn = OP_RULES.get(op.name)
    if fn is not None:
        return fn(attrs, ins)
    if op.elementwise:
        return _elementwise(len(ins), _LINEAR_EW.get(op.name, ""))
    if op.name == "copy":
        return _elementwise(1, "one")
    return None


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
    if rule.local is not None:
        local_fn = rule.local

        def local(p: Any, mesh: ProcessMesh, *ts: Tensor) -> Tensor:
            return local_fn(p, mesh, *ts, attrs)

    elif rule.local_attrs is not None:
        la = rule.local_attrs

        def local(p: Any, mesh: ProcessMesh, *ts: Tensor) -> Tensor:
            return go(list(ts), la(attrs, list(ts), _out_here(shape, mesh, p.output)))

    else:

        def local(p: Any, mesh: ProcessMesh, *ts: Tensor) -> Tensor:
            return go(list(ts), attrs)

    out = run(
        op.name,
        ins,
        local,
        rule=rule.rule,
        linear=rule.linear,
        reduce=rule.reduce,
        shape=shape,
        with_plan=True,
    )
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
