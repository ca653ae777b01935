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
    gradients too (reduce-scattered when the backward ends, :class:`ShardingStage2`), level 3
    the parameters too (each laid out ``Shard(d)`` over ``dp``, gathered before its layer's
    forward, :class:`ShardingStage3`). The training is the same at every level.

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

import enum
import re
from typing import Any

import numpy as np

from adapter_api import OpArgumentError

from ..._src.autograd import no_grad
from ..._src.ops import creation as _creation
from ..._src.ops import math as _math
from ..._src.tensor import Tensor
from .. import collective
from .dtensor import DistTensor, shard_tensor
from .mesh import ProcessMesh
from .optimizer import ShardingStage1, ShardingStage2, shard_optimizer, zero_placements
from .placement import Partial, Placement, Replicate, Shard
from .reshard import ensure_groups, reshard

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


class SplitPoint(enum.Enum):
    """Where a pipeline stage is cut at a named layer (Paddle's ``dist.SplitPoint``)."""

    BEGINNING = 0
    END = 1


# -- the tensor-parallel plans ----------------------------------------------------------------
def _axis_set(x: Any, axis: str, to: Placement, why: str) -> Any:
    """``x`` with its placement on mesh axis ``axis`` changed to ``to`` (anything else as it is)."""
    if isinstance(x, (tuple, list)):
        return type(x)(_axis_set(t, axis, to, why) for t in x)
    if not isinstance(x, DistTensor) or axis not in x.process_mesh.dim_names:
        return x
    a = x.process_mesh.axis(axis)
    if isinstance(to, Shard) and to.dim < 0:
        to = Shard(to.dim + len(x.shape))
    if x.placements[a] == to:
        return x
    ps = list(x.placements)
    ps[a] = to
    return reshard(x, x.process_mesh, ps, why=why)


def _partial_to_replicate(x: Any, axis: str, why: str) -> Any:
    if isinstance(x, (tuple, list)):
        return type(x)(_partial_to_replicate(t, axis, why) for t in x)
    if isinstance(x, DistTensor) and axis in x.process_mesh.dim_names:
        if isinstance(x.placements[x.process_mesh.axis(axis)], Partial):
            return _axis_set(x, axis, Replicate(), why)
    return x


class PlanBase:
    """A tensor-parallel plan for one layer: the placements of its parameters over ``mp``
    (:meth:`param_placement`) and hooks on its input and output."""

    def param_placement(self, layer: Any, attr: str) -> Placement:
        return Replicate()

    def on_input(self, args: tuple, axis: str) -> tuple:
        return args

    def on_output(self, out: Any, axis: str) -> Any:
        return out

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


def _kind(layer: Any, plan: str) -> str:
    from ...nn import Embedding, Linear

    if isinstance(layer, Linear):
        return "linear"
    if isinstance(layer, Embedding):
        return "embedding"
    raise OpArgumentError(
        f"[parallelize] {plan} applies to nn.Linear or nn.Embedding, the plan's pattern matched a "
        f"{type(layer).__name__}; point the pattern at the linear or embedding layers"
    )


class ColWiseParallel(PlanBase):
    """Column-parallel (Paddle's ``dist.ColWiseParallel``): a linear's weight ``Shard(1)``
    and bias ``Shard(0)`` over ``mp``, an embedding's weight ``Shard(1)``; the output is
    sharded on its last dim, or replicated with ``gather_output=True``.

    >>> import framework.distributed as dist
    >>> dist.ColWiseParallel(gather_output=True).gather_output
    True
    """

    def __init__(self, gather_output: bool = False) -> None:
        self.gather_output = gather_output

    def param_placement(self, layer: Any, attr: str) -> Placement:
        kind = _kind(layer, "ColWiseParallel")
        return Shard(0) if (kind == "linear" and attr == "bias") else Shard(1)

    def on_output(self, out: Any, axis: str) -> Any:
        return (
            _axis_set(out, axis, Replicate(), "ColWiseParallel gather_output") if self.gather_output else out
        )


class RowWiseParallel(PlanBase):
    """Row-parallel (Paddle's ``dist.RowWiseParallel``): a linear's weight ``Shard(0)`` (the
    bias replicated), an embedding's weight ``Shard(0)`` (the vocabulary); the output's
    partial sums are all-reduced. ``is_input_parallel=False`` shards the input's last dim
    over ``mp`` first.

    >>> import framework.distributed as dist
    >>> dist.RowWiseParallel().is_input_parallel
    True
    """

    def __init__(self, is_input_parallel: bool = True) -> None:
        self.is_input_parallel = is_input_parallel

    def param_placement(self, layer: Any, attr: str) -> Placement:
        kind = _kind(layer, "RowWiseParallel")
        return Replicate() if (kind == "linear" and attr == "bias") else Shard(0)

    def on_input(self, args: tuple, axis: str) -> tuple:
        if self.is_input_parallel:
            return args
        return (_axis_set(args[0], axis, Shard(-1), "RowWiseParallel input"), *args[1:])

    def on_output(self, out: Any, axis: str) -> Any:
        return _partial_to_replicate(out, axis, "RowWiseParallel output")


class SequenceParallelBegin(PlanBase):
    """Sequence parallelism starts after this layer: its output sharded over ``mp`` along the
    sequence dim (dim 1). Paddle's ``dist.SequenceParallelBegin``; ``need_transpose`` is
    accepted (the values are the same without the transpose)."""

    def __init__(self, need_transpose: bool = True) -> None:
        self.need_transpose = need_transpose

    def on_output(self, out: Any, axis: str) -> Any:
        return _axis_set(out, axis, Shard(1), "SequenceParallelBegin")


class SequenceParallelEnd(PlanBase):
    """Sequence parallelism ends before this layer: its input gathered along the sequence."""

    def __init__(self, need_transpose: bool = True) -> None:
        self.need_transpose = need_transpose

    def on_input(self, args: tuple, axis: str) -> tuple:
        return (_axis_set(args[0], axis, Replicate(), "SequenceParallelEnd"), *args[1:])


class SequenceParallelEnable(PlanBase):
    """This layer (a norm, a dropout) runs on the sequence-sharded input."""

    def on_input(self, args: tuple, axis: str) -> tuple:
        return (_axis_set(args[0], axis, Shard(1), "SequenceParallelEnable"), *args[1:])


class SequenceParallelDisable(PlanBase):
    """This layer needs the whole sequence: its input gathered, its output sharded again
    along the sequence (a reduce-scatter of partial sums)."""

    def __init__(self, need_transpose: bool = True) -> None:
        self.need_transpose = need_transpose

    def on_input(self, args: tuple, axis: str) -> tuple:
        return (_axis_set(args[0], axis, Replicate(), "SequenceParallelDisable"), *args[1:])

    def on_output(self, out: Any, axis: str) -> Any:
        return _axis_set(out, axis, Shard(1), "SequenceParallelDisable")


def _pattern(p: str) -> re.Pattern[str]:
    return re.compile("^" + re.escape(p).replace(r"\*", r"[^.]+") + "$")


# -- the pipeline stages ------------------------------------------------------------------------
def _boundaries(names: list[str], spec: Any, pp: int) -> list[int]:
    """The pre-order indices where a new stage begins (``pp - 1`` of them)."""

    def span(name: str) -> tuple[int, int]:
        idx = [i for i, n in enumerate(names) if n == name or n.startswith(name + ".")]
        if not idx:
            raise OpArgumentError(
                f"[parallelize] pp_config split_spec names layer '{name}', which the model does not "
                f"have (its layers: {[n for n in names if n][:8]}...)"
            )
        return idx[0], idx[-1] + 1

    out: list[int] = []
    if isinstance(spec, str):
        span(spec)  # the layer exists
        children = [n for n in names if n.startswith(spec + ".") and "." not in n[len(spec) + 1 :]]
        if len(children) < pp:
            raise OpArgumentError(
                f"[parallelize] pp_config split_spec '{spec}' has {len(children)} layers for {pp} stages; "
                "name a layer list with at least as many layers as the 'pp' axis has ranks"
            )
        k = len(children)
        for s in range(1, pp):
            out.append(span(children[s * k // pp])[0])
    elif isinstance(spec, dict):
        for name, where in spec.items():
            if where not in (SplitPoint.END, SplitPoint.BEGINNING):
                raise OpArgumentError(
                    f"[parallelize] pp_config split_spec['{name}'] must be dist.SplitPoint.END or "
                    f"BEGINNING, got {where!r}"
                )
            first, end = span(name)
            out.append(end if where is SplitPoint.END else first)
        out.sort()
        if len(out) != pp - 1:
            raise OpArgumentError(
                f"[parallelize] pp_config split_spec has {len(out)} split points, the 'pp' axis "
                f"{pp} stages: give {pp - 1}"
            )
    else:
        raise OpArgumentError(
            "[parallelize] pp_config split_spec must be a layer list's name (str) or "
            f"{{name: dist.SplitPoint.END}}, got {type(spec).__name__}"
        )
    return out


def _to_stage(x: Any, mesh: ProcessMesh, stages: list[ProcessMesh]) -> Any:
    """A distributed tensor of another stage moved to ``mesh``, its placements kept."""
    if isinstance(x, (tuple, list)):
        return type(x)(_to_stage(t, mesh, stages) for t in x)
    if isinstance(x, DistTensor) and x.process_mesh != mesh and x.process_mesh in stages:
        return reshard(x, mesh, list(x.placements), why="pipeline stage")
    return x


# -- tied parameters over stages ------------------------------------------------------------------
class _Tie:
    """Copies of one parameter, one per stage (the same placements): their gradients are
    summed over the ranks at the same mesh coordinate of those stages."""

    def __init__(self, copies: list[DistTensor]) -> None:
        self.copies = copies
        meshes = [c.process_mesh for c in copies]
        me = collective.get_rank()
        self.group = None
        for c in np.ndindex(*meshes[0].shape):  # made on every rank: new_group is collective
            g = collective.new_group([int(m.mesh[c]) for m in meshes])
            if me in g.ranks:
                self.group = g
        self.mine = next((c for c in copies if me in c.process_mesh), None)

    @no_grad()
    def sync(self, opt: Any) -> None:
        """Sum the copies' local gradients (as ``opt`` keeps them: a ZeRO-2 optimizer keeps
        slices) over the stages."""
        if self.mine is None or self.group is None:
            return
        local = self.mine._local_value()
        get = getattr(opt, "local_grad", None)
        g = get(self.mine) if get is not None else local.grad
        if g is None:
            shape = opt.local_grad_shape(self.mine) if get is not None else local.shape
            g = _creation.zeros(shape, dtype=local.dtype, device=local.device)
        collective.all_reduce(g, group=self.group)
        if get is not None:
            opt.set_local_grad(self.mine, g)
        else:
            local.grad = g


def _coordinate_groups(stages: list[ProcessMesh]) -> collective.Group | None:
    """This rank's group of the ranks at its mesh coordinate on every stage (made on every
    rank, in the same order: ``new_group`` is collective)."""
    me, mine = collective.get_rank(), None
    for c in np.ndindex(*stages[0].shape):
        g = collective.new_group([int(m.mesh[c]) for m in stages])
        if me in g.ranks:
            mine = g
    return mine


class _StagesGlobalNorm:
    """``ClipGradByGlobalNorm`` over pipeline stages: the squares of this stage's gradients
    (each gradient's whole, summed over its stage's shards), all-reduced over the stages,
    one scale for every gradient. A tied parameter's later copies are not counted."""

    def __init__(self, clip: Any, group: collective.Group | None, skip: set[int]) -> None:
        self.clip, self.clip_norm, self.group, self.skip = clip, clip.clip_norm, group, skip

    def __call__(self, params_grads: list[tuple[Any, Tensor]]) -> list[tuple[Any, Tensor]]:
        use = [
            isinstance(g, DistTensor) and g._local_value() is not None and getattr(p, "need_clip", True)
            for p, g in params_grads
        ]
        sq = None
        for (p, g), u in zip(params_grads, use):
            if not u or id(p) in self.skip:
                continue
            g32 = g if g.dtype.itemsize >= 4 else _math.cast(g, "float32")
            s = _math.sum(g32 * g32)
            s = DistTensor.whole(s, "ClipGradByGlobalNorm over stages")._local_value()  # this stage's sum
            sq = s if sq is None else sq + _math.cast(s, sq.dtype)
        if sq is None:  # this rank's stage has no gradient: it still joins the all-reduce
            sq = _creation.zeros([], dtype="float32")
        sq = sq.reshape([1])
        if self.group is not None:
            collective.all_reduce(sq, group=self.group)
        scale = self.clip_norm / _math.maximum(_math.sqrt(sq), self.clip_norm)
        return [
            (p, g * _math.cast(scale.reshape([]), g.dtype) if u else g)
            for (p, g), u in zip(params_grads, use)
        ]


class _ParallelOptimizer:
    """The optimizer :func:`parallelize` returns: before each step the gradients of tied
    parameter copies are summed over their stages. Other attributes are the wrapped one's."""

    def __init__(self, optimizer: Any, ties: list[_Tie]) -> None:
        self.__dict__["_inner"], self.__dict__["_ties"] = optimizer, ties

    def __getattr__(self, name: str) -> Any:
        return getattr(self.__dict__["_inner"], name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self.__dict__["_inner"], name, value)

    def step(self) -> None:
        for t in self._ties:
            t.sync(self._inner)
        self._inner.step()

    def clear_grad(self, set_to_zero: bool = False) -> None:
        self._inner.clear_grad(set_to_zero)

    clear_gradients = clear_grad
    zero_grad = clear_grad


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
            layer.__dict__[attr] = _axis_set(p, "dp", Replicate(), f"ShardingStage3 gather {p.name}")


def _release_params(layer: Any, _args: tuple, _out: Any) -> None:
    for attr in layer._parameters:
        layer.__dict__.pop(attr, None)


__all__ = [
    "ColWiseParallel",
    "PlanBase",
    "RowWiseParallel",
    "SequenceParallelBegin",
    "SequenceParallelDisable",
    "SequenceParallelEnable",
    "SequenceParallelEnd",
    "SplitPoint",
    "get_mesh",
    "parallelize",
    "set_mesh",
]
