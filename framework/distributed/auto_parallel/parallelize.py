"""``dist.parallelize``: Paddle 3's one-call hybrid parallelism. A model and its optimizer are
laid out over a :class:`ProcessMesh` with axes ``dp`` / ``mp`` / ``pp`` (any subset) from a
config, and the rest is the auto-parallel core (placements, sharding rules, reshard):

``mp_config = {"parallelize_plan": {pattern: plan}}``
    ``pattern`` is a sublayer name, with ``*`` for any one name part (``"layers.*.qkv"``).
    :class:`ColWiseParallel` (an ``nn.Linear``'s weight ``Shard(1)`` and bias ``Shard(0)``
    over ``mp``; an ``nn.Embedding``'s weight ``Shard(1)``; ``gather_output=True``
    replicates the output), :class:`RowWiseParallel` (the weight ``Shard(0)``, the bias
    replicated; the output's partial sums are all-reduced; ``is_input_parallel=False``
    shards the input's last dim first). Sequence parallelism keeps the activations sharded
    over ``mp`` along the sequence dim (dim 1 of ``[batch, seq, hidden]``; Paddle transposes it
    to the front, the values are the same): :class:`SequenceParallelBegin` shards the layer's
    output, :class:`SequenceParallelEnd` gathers the layer's input, :class:`SequenceParallelEnable`
    runs the layer on the sharded input, :class:`SequenceParallelDisable` gathers its input and
    shards its output again.
``pp_config = {"split_spec": ..., "global_spec": ...}``
    ``split_spec`` is the name of a layer list (``"layers"``: its layers cut evenly into the
    ``pp`` stages, the layers before it on the first stage, after it on the last) or
    ``{name: SplitPoint.END}`` (a stage ends after each named layer; ``SplitPoint.BEGINNING``: one
    begins at it). Each stage's parameters lie on its slice ``mesh.get_mesh_with_dim("pp", s)``;
    a layer's inputs from another stage move to its stage (point to point, gradients sent
    back). ``global_spec`` names a layer whose output every stage uses (a rotary table): it
    runs on the first stage and its outputs move where they are used.
    A parameter two stages use (an embedding tied to the head) gets a copy on each; the
    optimizer sums the copies' gradients over the stages before its step, so they stay equal.
    ``dist.to_static`` with ``strategy.pipeline`` runs an ``nn.Sequential`` laid out this way
    on the 1F1B / FThenB schedule.
``dp_config = {"sharding_level": 0 | 1 | 2 | 3}``
    The batch is split over ``dp`` (a plain tensor passed to the model is laid out
    ``Shard(0)`` over ``dp`` on the first stage; replicated gradients are all-reduced);
    level 1 shards the optimizer states over ``dp`` (:class:`ShardingStage1`), level 2 the
    gradients too (reduce-scattered in buckets during the backward, :class:`ShardingStage2`),
    level 3 the parameters too (each laid out ``Shard(d)`` over ``dp``, gathered for its
    layer's forward and again for its backward, :class:`ShardingStage3`). The training is the
    same at every level, and under ``dist.to_static`` too.

With ``pp`` stages, ``ClipGradByGlobalNorm`` takes its norm over every stage: each stage sums
the squares of its gradients, the sums are all-reduced over the stages, and every stage scales
by the one factor (a tied parameter counted once).

The mesh is ``mesh=`` or the one :func:`set_mesh` set. A layer that matches no plan keeps
replicated parameters. Returns ``(model, optimizer)`` (the same model object, laid out).

>>> import numpy as np, framework as fw, framework.distributed as dist
>>> dist.set_mesh(dist.ProcessMesh([[0]], dim_names=["dp", "mp"]))
>>> net = fw.nn.Sequential(fw.nn.Linear(4, 8), fw.nn.ReLU(), fw.nn.Linear(8, 2))
>>> opt = fw.optimizer.SGD(learning_rate=0.1, parameters=net.parameters())
>>> plan = {"0": dist.ColWiseParallel(), "2": dist.RowWiseParallel()}
>>> net, opt = dist.parallelize(net, opt, config={"mp_config": {"parallelize_plan": plan}})
>>> net[0].weight.placements
[Replicate(), Shard(1)]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adapter_api import OpArgumentError

from ..._src.tensor import Tensor
from .dtensor import DistTensor, shard_tensor
from .mesh import ProcessMesh
from .optimizer import ShardingStage1, ShardingStage2, shard_optimizer, zero_placements
from .placement import Placement, Replicate, Shard
from .plans import (
    ColWiseParallel,
    PlanBase,
    RowWiseParallel,
    _kind,
    _pattern,
)
from .reshard import ensure_groups
from .stages import (
    _boundaries,
    _coordinate_groups,
    _ParallelOptimizer,
    _StagesGlobalNorm,
    _Tie,
    _to_stage,
)
from .zero3 import gather_for_forward, release_after_forward

_MESH: list[ProcessMesh | None] = [None]


def set_mesh(mesh: ProcessMesh) -> None:
    """Paddle's ``dist.set_mesh``: the mesh :func:`parallelize` (and :func:`get_mesh`) use.

    >>> import framework.distributed as dist
    >>> dist.set_mesh(dist.ProcessMesh([0], dim_names=["dp"]))
    >>> dist.get_mesh().dim_names
    ['dp']
    """
    if not isinstance(mesh, ProcessMesh):
        raise OpArgumentError(f"[set_mesh] expected a dist.ProcessMesh, got {type(mesh).__name__}")
    _MESH[0] = mesh


def get_mesh() -> ProcessMesh | None:
    """Paddle's ``dist.get_mesh``: the mesh :func:`set_mesh` set (None before)."""
    return _MESH[0]


# -- parallelize ------------------------------------------------------------------------------------
_KEYS = {"dp_config", "mp_config", "pp_config"}


def parallelize(
    model: Any, optimizer: Any = None, mesh: ProcessMesh | None = None, config: dict | None = None
) -> tuple[Any, Any]:
    """Paddle 3's ``dist.parallelize``: lay ``model`` (and ``optimizer``) out over ``mesh`` as
    ``config`` says (``dp_config``, ``mp_config``, ``pp_config``; see the module docstring).
    Returns ``(model, optimizer)``.

    >>> import framework as fw, framework.distributed as dist
    >>> mesh = dist.ProcessMesh([0], dim_names=["dp"])
    >>> net = fw.nn.Linear(2, 2)
    >>> opt = fw.optimizer.Adam(parameters=net.parameters())
    >>> net, opt = dist.parallelize(net, opt, mesh, {"dp_config": {"sharding_level": 1}})
    >>> isinstance(net.weight, dist.DistTensor), net.weight.placements
    (True, [Replicate()])
    """
    mesh = mesh if mesh is not None else get_mesh()
    if not isinstance(mesh, ProcessMesh):
        raise OpArgumentError(
            f"[parallelize] needs a dist.ProcessMesh (mesh= or dist.set_mesh), got {type(mesh).__name__}"
        )
    if not hasattr(model, "named_sublayers"):
        raise OpArgumentError(f"[parallelize] expected an nn.Layer, got {type(model).__name__}")
    config = dict(config or {})
    bad = set(config) - _KEYS
    if bad:
        raise OpArgumentError(
            f"[parallelize] config keys are {sorted(_KEYS)}, got {sorted(bad)}; see dist.parallelize's docstring"
        )
    names = mesh.dim_names

    def axis_needed(key: str, axis: str) -> None:
        if config.get(key) is not None and axis not in names:
            raise OpArgumentError(
                f"[parallelize] {key} needs a '{axis}' axis in the mesh, which has {names}; "
                f"name the axis '{axis}' (dist.ProcessMesh(..., dim_names=[...]))"
            )

    for key, axis in (("mp_config", "mp"), ("pp_config", "pp")):
        axis_needed(key, axis)

    # the data-parallel level, checked before anything is laid out
    level = (config.get("dp_config") or {}).get("sharding_level", 0)
    if level not in (0, 1, 2, 3) or isinstance(level, bool):
        raise OpArgumentError(f"[parallelize] dp_config sharding_level must be 0, 1, 2 or 3, got {level!r}")
    if level:
        axis_needed("dp_config", "dp")

    # the stages
    order = [("", model), *model.named_sublayers()]
    layer_names = [n for n, _ in order]
    pp = mesh.get_dim_size("pp") if "pp" in names else 1
    if "pp" in names:
        stages = [mesh.get_mesh_with_dim("pp", s) for s in range(pp)]
    else:
        stages = [mesh]
    clip = getattr(optimizer, "grad_clip", None)
    if (
        len(stages) > 1
        and clip is not None
        and type(clip).__name__ not in ("ClipGradByValue", "ClipGradByGlobalNorm")
    ):
        raise OpArgumentError(
            f"[parallelize] grad_clip={type(clip).__name__} over {len(stages)} pipeline stages is not "
            "built (it needs each whole gradient on one rank); use ClipGradByGlobalNorm (its norm is "
            "taken over the stages) or ClipGradByValue"
        )
    pp_cfg = config.get("pp_config") or {}
    bounds = (
        _boundaries(layer_names, pp_cfg["split_spec"], pp) if pp_cfg.get("split_spec") is not None else []
    )
    if pp > 1 and not bounds:
        raise OpArgumentError(
            f"[parallelize] the mesh's 'pp' axis has {pp} ranks but pp_config has no split_spec; "
            "give pp_config={'split_spec': 'layers'} (the name of the layer list to cut)"
        )

    def stage_at(i: int) -> int:
        return sum(1 for b in bounds if b <= i)

    stage_of = {n: stage_at(i) for i, n in enumerate(layer_names)}
    gspec = pp_cfg.get("global_spec")
    for g in [gspec] if isinstance(gspec, str) else list(gspec or []):
        if g not in stage_of:
            raise OpArgumentError(
                f"[parallelize] pp_config global_spec names layer '{g}', which the model does not have"
            )
        for n in layer_names:
            if n == g or n.startswith(g + "."):
                stage_of[n] = 0

    # the tensor-parallel plans
    plans: dict[str, PlanBase] = {}
    for pat, plan in ((config.get("mp_config") or {}).get("parallelize_plan") or {}).items():
        plist = plan if isinstance(plan, (list, tuple)) else [plan]
        for p in plist:
            if not isinstance(p, PlanBase):
                raise OpArgumentError(
                    f"[parallelize] parallelize_plan['{pat}'] must be dist.ColWiseParallel(), RowWiseParallel() "
                    f"or a SequenceParallel* plan, got {p!r}"
                )
        rx = _pattern(pat)
        hits = [n for n in layer_names if n and rx.match(n)]
        if not hits:
            raise OpArgumentError(
                f"[parallelize] parallelize_plan pattern '{pat}' matches no layer of the model "
                f"(its layers: {[n for n in layer_names if n][:8]}...)"
            )
        subs = dict(order)
        for n in hits:
            for p in plist:
                if isinstance(p, (ColWiseParallel, RowWiseParallel)):
                    _kind(subs[n], type(p).__name__)  # a linear or an embedding, else the error
            plans[n] = plist  # type: ignore[assignment]

    # the parameters: each on its owner's stage (a copy per further stage that uses it)
    owners: dict[int, list[tuple[str, Any, str]]] = {}
    for name, sub in order:
        for attr, p in list(sub._parameters.items()):
            if p is not None:
                owners.setdefault(id(p), []).append((name, sub, attr))
    mp_axis = names.index("mp") if "mp" in names else None
    new_of: dict[int, list[DistTensor]] = {}
    ties: list[_Tie] = []
    for pid, uses in owners.items():
        name0, sub0, attr0 = uses[0]
        p = sub0._parameters[attr0]
        if isinstance(p, DistTensor):
            raise OpArgumentError(
                f"[parallelize] parameter '{name0}.{attr0}' is already distributed; parallelize a plain model"
            )
        ps: list[Placement] = [Replicate()] * stages[0].ndim
        plan = next(
            (
                pl
                for n, _, _ in uses
                for pl in plans.get(n, [])
                if type(pl).param_placement is not PlanBase.param_placement
            ),
            None,
        )
        if plan is not None and mp_axis is not None:
            n_plan, s_plan, a_plan = next((u for u in uses if plan in plans.get(u[0], [])), uses[0])
            stage_names = stages[0].dim_names
            ps[stage_names.index("mp")] = plan.param_placement(s_plan, a_plan)
        if level == 3:  # ZeRO 3: the parameter itself split over dp
            ps = zero_placements(tuple(p.shape), stages[0], ps, "dp")
        copies: dict[int, DistTensor] = {}
        for name, sub, attr in uses:
            s = stage_of[name]
            if s not in copies:
                d = shard_tensor(p, stages[s], ps)
                d.name = f"{name}.{attr}" if name else attr
                for a in ("optimize_attr", "regularizer", "need_clip"):
                    if hasattr(p, a):
                        setattr(d, a, getattr(p, a))
                copies[s] = d
            sub.add_parameter(attr, copies[s])
        new_of[pid] = list(copies.values())
        if len(copies) > 1:
            ties.append(_Tie(list(copies.values())))
    for m in stages:
        ensure_groups(m)

    # hooks: inputs moved to the layer's stage, the plans' reshards
    for name, sub in order:
        held = {stage_of[n] for n in layer_names if n == name or n.startswith(name + ".")} if name else set()
        if name and len(held) == 1 and len(stages) > 1:
            m = stages[stage_of[name]]
            sub.register_forward_pre_hook(lambda _l, args, m=m: _to_stage(tuple(args), m, stages))
        if level == 3 and any(_dp_sharded(q) for q in sub._parameters.values()):
            sub.register_forward_pre_hook(_gather_params)
            sub.register_forward_post_hook(_release_params)
        for plan in plans.get(name, []):
            if type(plan).on_input is not PlanBase.on_input:
                sub.register_forward_pre_hook(lambda _l, args, pl=plan: pl.on_input(tuple(args), "mp"))
            if type(plan).on_output is not PlanBase.on_output:
                sub.register_forward_post_hook(lambda _l, _a, out, pl=plan: pl.on_output(out, "mp"))

    first = stages[0]
    rows: list[Placement] = [Shard(0) if a == "dp" else Replicate() for a in first.dim_names]

    def lay_out_inputs(_layer: Any, args: tuple) -> tuple:
        return tuple(
            shard_tensor(a, first, rows)
            if isinstance(a, (Tensor, np.ndarray)) and not isinstance(a, DistTensor)
            else a
            for a in args
        )

    model.register_forward_pre_hook(lay_out_inputs)
    model.process_mesh, model.pipeline_stages = mesh, stages

    if optimizer is None:
        return model, None
    if not hasattr(optimizer, "param_groups"):
        raise OpArgumentError(
            f"[parallelize] expected a framework optimizer (fw.optimizer.*), got {type(optimizer).__name__}"
        )
    for group in optimizer.param_groups:
        params = []
        for p in group["params"]:
            if id(p) not in new_of:
                raise OpArgumentError(
                    f"[parallelize] the optimizer holds parameter '{getattr(p, 'name', None)}', which is not "
                    "the model's; build the optimizer with model.parameters()"
                )
            params.extend(new_of[id(p)])
        group["params"] = params
    if len(stages) > 1 and type(clip).__name__ == "ClipGradByGlobalNorm":
        skip = {id(c) for t in ties for c in t.copies[1:]}
        optimizer.grad_clip = _StagesGlobalNorm(clip, _coordinate_groups(stages), skip)
    stage_fn = {1: ShardingStage1, 2: ShardingStage2}.get(level)
    opt = shard_optimizer(optimizer, stage_fn("dp") if stage_fn else None)
    if len(stages) > 1 and type(clip).__name__ == "ClipGradByGlobalNorm":  # the copies' views too
        views = dict((id(p), v) for p, v in getattr(opt, "_views", []))
        optimizer.grad_clip.skip |= {id(views[i]) for i in list(optimizer.grad_clip.skip) if i in views}
    return model, _ParallelOptimizer(opt, ties) if ties else opt


# -- ZeRO 3: each layer's parameters gathered for its forward ---------------------------------------
def _dp_sharded(p: Any) -> bool:
    return (
        isinstance(p, DistTensor)
        and "dp" in p.process_mesh.dim_names
        and isinstance(p.placements[p.process_mesh.axis("dp")], Shard)
    )


def _gather_params(layer: Any, _args: tuple) -> None:
    """The layer's dp-sharded parameters, whole over dp, shadow them for its forward (an
    instance attribute is found before the layer's parameter table); their gradients flow
    back to the shards."""
    for attr, p in layer._parameters.items():
        if _dp_sharded(p):
            layer.__dict__[attr] = gather_for_forward(p, "dp")


def _release_params(layer: Any, _args: tuple, out: Any) -> None:
    """The shadows go; the whole values are dropped until the layer's backward gathers them
    again (:func:`.zero3.release_after_forward`)."""
    gathered = [layer.__dict__.pop(attr) for attr in layer._parameters if attr in layer.__dict__]
    release_after_forward([g for g in gathered if isinstance(g, DistTensor)], out)


__all__ = ["get_mesh", "parallelize", "set_mesh"]
