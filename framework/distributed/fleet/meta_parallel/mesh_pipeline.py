"""Pipeline parallelism from placements (Paddle 3's auto-parallel pipeline): the stages of a
model are the meshes its layers' parameters were placed on, and the micro-batches run on the
:class:`PipelineParallel` schedule (1F1B or FThenB), the one the fleet pipeline runs.

The model is an ``nn.Sequential`` (or ``nn.LayerList``) whose layers are laid out with
``dist.shard_layer(layer, mesh.get_mesh_with_dim("pp", i), shard_fn)``: the distinct meshes, in
the order of the layers, are the stages (they have the same shape and axis names; a layer
without parameters runs on the stage before it). Inside a stage the layers run as any
auto-parallel code does: the ops follow their sharding rules on the stage's mesh (tensor
parallel over ``mp``, the batch split over ``dp``, the replicated weights' gradients
all-reduced after the backward). Between stages an activation keeps its placements and moves
to the next stage's mesh (Paddle's split-point rule: ``reshard(out, next_mesh,
out.placements)``): each rank sends its shard to the rank at the same mesh coordinate in the
next stage, point to point over the plugins' communicator; the placements and the global
shape travel in the transfer's header.

``dist.to_static(model, loss=..., optimizer=..., strategy=s)`` with ``s.pipeline.enable``
builds it; ``s.recompute.enable`` recomputes each stage's activations in backward (a stage
whose input needs no gradient, the first, keeps them, as ``fleet.utils.recompute`` does).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from adapter_api import OpArgumentError

from ....nn.container import LayerList, Sequential
from ....nn.layer import Layer
from ... import collective
from ...auto_parallel.dtensor import DistTensor
from ...auto_parallel.grad_buckets import flush_grads, hold
from ...auto_parallel.mesh import ProcessMesh
from ...auto_parallel.placement import Partial, Placement, Replicate, Shard
from ...auto_parallel.reshard import ensure_groups
from ...auto_parallel.static import _whole_local
from ..recompute import recompute
from .pipeline_parallel import PipelineParallel

_REDUCE = ["sum", "avg", "max", "min"]


# -- a layout as the words of a transfer header ---------------------------------------------
def layout_words(x: DistTensor) -> list[int]:
    """``x``'s placements and global shape as ints: per mesh axis 0 (Replicate), 1 + d
    (Shard(d)) or -1 - i (Partial of the i-th reduce type), then the global dims."""
    words = []
    for p in x.placements:
        if isinstance(p, Shard):
            words.append(1 + p.dim)
        elif isinstance(p, Partial):
            words.append(-1 - _REDUCE.index(p.reduce_type))
        else:
            words.append(0)
    return [len(words), *words, *x.shape]


def from_words(local: Any, words: list[int], mesh: ProcessMesh) -> DistTensor:
    """The distributed tensor on ``mesh`` whose shard is ``local``, laid out as ``words`` say."""
    n = words[0]
    placements: list[Placement] = []
    for w in words[1 : 1 + n]:
        placements.append(Shard(w - 1) if w > 0 else Partial(_REDUCE[-1 - w]) if w < 0 else Replicate())
    return DistTensor(local, mesh, placements, words[1 + n :], local.dtype)


# -- the stages from the placements -----------------------------------------------------------
def split_by_placement(model: Any) -> tuple[list[ProcessMesh], list[int]]:
    """(the stage meshes in order, the stage of each of the model's layers)."""
    if not isinstance(model, (Sequential, LayerList)):
        raise OpArgumentError(
            f"[dist.to_static] the pipeline cuts an nn.Sequential (or nn.LayerList) into stages by its "
            f"layers' meshes; got {type(model).__name__}: list the model's pieces in an nn.Sequential"
        )
    meshes: list[ProcessMesh] = []
    stages: list[int] = []
    for i, (name, layer) in enumerate(model._sub_layers.items()):
        held = {p.process_mesh for p in layer.parameters() if isinstance(p, DistTensor)}
        plain = [n for n, p in layer.named_parameters() if not isinstance(p, DistTensor)]
        if plain or len(held) > 1:
            raise OpArgumentError(
                f"[dist.to_static] layer {i} ('{name}', {type(layer).__name__}) has "
                + (f"parameters on no mesh ({plain[:3]})" if plain else f"parameters on {len(held)} meshes")
                + "; place each pipeline layer on one stage mesh: "
                "dist.shard_layer(layer, mesh.get_mesh_with_dim('pp', stage), shard_fn)"
            )
        if not held:  # no parameters: the stage before it (the first for a leading one)
            stages.append(stages[-1] if stages else 0)
            continue
        (mesh,) = held
        if mesh not in meshes:
            if meshes and (mesh.shape != meshes[0].shape or mesh.dim_names != meshes[0].dim_names):
                raise OpArgumentError(
                    f"[dist.to_static] layer {i} ('{name}') is on {mesh}, the first stage on {meshes[0]}: "
                    "the stage meshes must have the same shape and axes (slices of one mesh's 'pp' axis)"
                )
            if meshes and set(mesh.process_ids) & {r for m in meshes for r in m.process_ids}:
                raise OpArgumentError(
                    f"[dist.to_static] layer {i} ('{name}') is on {mesh}, which shares ranks with an "
                    "earlier stage; the stage meshes are disjoint slices of the 'pp' axis"
                )
            meshes.append(mesh)
        s = meshes.index(mesh)
        if stages and s < max(stages):
            raise OpArgumentError(
                f"[dist.to_static] layer {i} ('{name}') is on stage {s} after a layer on stage {max(stages)}: "
                "the layers of a pipeline run stage after stage"
            )
        stages.append(s)
    if not meshes:
        raise OpArgumentError("[dist.to_static] the model has no distributed parameters to cut into stages")
    return meshes, stages


_LINES: dict[tuple[Any, ...], list[collective.Group]] = {}


def pipe_group(meshes: list[ProcessMesh]) -> tuple[int, collective.Group]:
    """(this rank's stage, the group of the ranks at its mesh coordinate in every stage).
    The groups of every coordinate are made on every rank (a collective of the world)."""
    key = tuple((tuple(m.shape), tuple(m.process_ids)) for m in meshes)
    if key not in _LINES:
        _LINES[key] = [
            collective.new_group([int(m.mesh[c]) for m in meshes]) for c in np.ndindex(*meshes[0].shape)
        ]
        for m in meshes:  # the stages' own groups too: a stage alone never reaches a world collective
            ensure_groups(m)
    me = collective.get_rank()
    stage = next((s for s, m in enumerate(meshes) if me in m), None)
    if stage is None:
        raise OpArgumentError(
            f"[dist.to_static] rank {me} is on none of the pipeline's stage meshes {meshes}; "
            "the stages must cover every rank of the job"
        )
    group = next(g for g in _LINES[key] if g.is_member() and me in g.ranks)
    return stage, group


class MeshStage(Layer):
    """This rank's stage of a model cut by placement: its layers (named by their index in
    the whole model, so its ``state_dict`` keys are the model's), run on local shards. The
    input is a micro-batch (a distributed tensor of the first stage's mesh, or a plain
    tensor) or what the previous stage sent (a shard with its layout words); the output is
    sent on as this rank's shard with its layout words, or, on the last stage, kept
    distributed for the loss."""

    def __init__(
        self,
        layers: list[tuple[str, Layer]],
        mesh: ProcessMesh,
        stage_id: int,
        num_stages: int,
        loss_fn: Callable[..., Any] | None,
        recompute_stage: bool,
    ) -> None:
        super().__init__()
        for name, layer in layers:
            self.add_sublayer(name, layer)
        self.run_function = [layer for _, layer in layers]
        self.mesh, self.stage_id, self.num_stages = mesh, stage_id, num_stages
        self._loss_fn = [loss_fn]  # a list: not a sublayer
        self._recompute = recompute_stage

    def loss(self, output: Any, label: Any) -> Any:
        """The micro-batch's loss as this rank's plain scalar (the whole value)."""
        if self._loss_fn[0] is None:
            raise OpArgumentError("[dist.to_static] the pipeline trains with a loss: pass loss=")
        return _whole_local(self._loss_fn[0](output, label))

    def allreduce_shared_weight_gradients(self) -> None:
        """No tied weights across stages here (the fleet pipeline's hook)."""

    def forward(self, x: Any) -> Any:  # noqa: D102 - the class says it
        xs = list(x) if isinstance(x, tuple) else [x]
        shards = [t._local if isinstance(t, DistTensor) else t for t in xs]
        layouts = [
            layout_words(t) if isinstance(t, DistTensor) else getattr(t, "layout_words", None) for t in xs
        ]
        if any(s is None for s in shards):
            raise OpArgumentError(
                f"[dist.to_static] stage {self.stage_id} got a micro-batch on another mesh than its "
                f"{self.mesh}; lay the inputs out on the first stage's mesh and the labels on the last's"
            )
        out_layouts: list[list[int] | None] = []

        def run(*locals_: Any) -> Any:
            args = [from_words(t, w, self.mesh) if w else t for t, w in zip(locals_, layouts)]
            out: Any = args[0] if len(args) == 1 else tuple(args)
            for f in self.run_function:
                out = f(*out) if isinstance(out, tuple) else f(out)
            outs = list(out) if isinstance(out, tuple) else [out]
            out_layouts[:] = [layout_words(o) if isinstance(o, DistTensor) else None for o in outs]
            got = [o._local if isinstance(o, DistTensor) else o for o in outs]
            return got[0] if len(got) == 1 else tuple(got)

        out = recompute(run, *shards) if self._recompute and self.training else run(*shards)
        outs = list(out) if isinstance(out, tuple) else [out]
        last = self.stage_id == self.num_stages - 1
        for i, (o, w) in enumerate(zip(outs, out_layouts)):
            if w is None:
                continue
            if last:
                outs[i] = from_words(o, w, self.mesh)
            else:
                o.layout_words = w
        return outs[0] if len(outs) == 1 else tuple(outs)


class MeshPipeline(PipelineParallel):
    """The schedule of :class:`PipelineParallel` over the stages a model's placements make
    (see the module docstring): ``train_batch([inputs, labels], optimizer)``,
    ``eval_batch``, ``timeline`` and ``bubble()`` as there. ``micro_batch_size`` is a
    micro-batch's rows on one data-parallel replica (Paddle's): a distributed input's shard
    has ``micro_batch_size x accumulate_steps`` rows.

    >>> import framework as fw, framework.distributed as dist
    >>> mesh = dist.ProcessMesh([[0]], dim_names=["pp", "dp"])
    >>> net = fw.nn.Sequential(fw.nn.Linear(2, 2), fw.nn.Linear(2, 1))
    >>> for layer in net:
    ...     _ = dist.shard_layer(layer, mesh.get_mesh_with_dim("pp", 0))
    >>> s = dist.Strategy({"pipeline": {"enable": True, "accumulate_steps": 2}})
    >>> pipe = MeshPipeline(net, fw.nn.MSELoss(), s)
    >>> pipe.num_stages, pipe.accumulate_steps
    (1, 2)
    """

    def __init__(self, model: Any, loss_fn: Callable[..., Any] | None, strategy: Any) -> None:
        meshes, stages = split_by_placement(model)
        stage, group = pipe_group(meshes)
        mine = [
            (str(i), layer)
            for i, ((_, layer), s) in enumerate(zip(model._sub_layers.items(), stages))
            if s == stage
        ]
        layers = MeshStage(mine, meshes[stage], stage, len(meshes), loss_fn, bool(strategy.recompute.enable))
        cfg = strategy.pipeline
        self.__dict__["meshes"] = meshes
        self._setup(layers, cfg.micro_batch_size, cfg.accumulate_steps, cfg.schedule_mode, group, stage, None)

    def forward_backward_pipeline(self, data: Any, scaler: Any = None) -> Any:
        with hold():  # the micro-batches' partial gradients add up; _reduce_grads sends them
            return super().forward_backward_pipeline(data, scaler)

    def _reduce_grads(self) -> None:
        """The replicated parameters' gradients, kept over the micro-batches, all-reduced over
        their data-parallel axis once."""
        flush_grads(held=True)

    def _micro_batches(self, data: Any) -> tuple[list[Any], list[Any]]:
        if not isinstance(data, (list, tuple)) or len(data) != 2:
            raise OpArgumentError("[dist.to_static] a pipeline step takes [inputs, labels]")
        m, k = self.micro_batch_size, self.accumulate_steps

        def cut(x: Any, what: str, mesh: ProcessMesh) -> list[Any]:
            if x is None:
                return [None] * k
            if isinstance(x, (tuple, list)):
                parts = [cut(t, what, mesh) for t in x]
                return [tuple(p[i] for p in parts) for i in range(k)]
            if not isinstance(x, DistTensor):
                if x.shape[0] != m * k:
                    raise OpArgumentError(
                        f"[dist.to_static] the {what} batch has {x.shape[0]} rows, micro_batch_size x "
                        f"accumulate_steps is {m} x {k} = {m * k}; set strategy.pipeline to match the batch"
                    )
                return [x[i * m : (i + 1) * m] for i in range(k)]
            if x.process_mesh != mesh:
                raise OpArgumentError(
                    f"[dist.to_static] the {what} batch is on {x.process_mesh}; lay it out on the "
                    f"{'first' if what == 'input' else 'last'} stage's mesh {mesh}"
                )
            split = int(
                np.prod([x.process_mesh.shape[a] for a, p in enumerate(x.placements) if p.is_shard(0)])
            )
            if x.shape[0] != m * k * split:
                raise OpArgumentError(
                    f"[dist.to_static] the {what} batch has {x.shape[0]} rows over {split} replicas, "
                    f"micro_batch_size x accumulate_steps is {m} x {k} = {m * k} per replica; set "
                    "strategy.pipeline to match the batch"
                )
            shape = (m * split, *x.shape[1:])
            local = x._local
            return [
                DistTensor(
                    None if local is None else local[i * m : (i + 1) * m], mesh, x.placements, shape, x.dtype
                )
                for i in range(k)
            ]

        return cut(data[0], "input", self.meshes[0]), cut(data[1], "label", self.meshes[-1])
