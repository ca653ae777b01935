"""A model as a list of layer descriptions, cut into pipeline stages (Paddle's
``LayerDesc`` and ``PipelineLayer``). Each rank builds only its stage's layers; layer ``i``
is built right after ``fw.seed(1234 + i)`` (Paddle's rule), so its first weights do not
depend on the number of stages, and it is registered under the name ``str(i)``: a stage's
``state_dict()`` holds the same keys as the whole model's.

>>> import framework as fw
>>> from framework.distributed.fleet.meta_parallel import LayerDesc, PipelineLayer
>>> net = PipelineLayer([LayerDesc(fw.nn.Linear, 4, 8), fw.tanh, LayerDesc(fw.nn.Linear, 8, 2)],
...                     num_stages=1, loss_fn=fw.nn.MSELoss())
>>> sorted(net.state_dict())
['0.bias', '0.weight', '2.bias', '2.weight']
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from typing import Any

from adapter_api import OpArgumentError

from ...._src.autograd import no_grad
from ...._src.ops import creation as _creation
from ...._src.ops import random as _random
from ....nn import Layer, LayerDict
from ... import collective
from ..recompute import recompute
from ..topology import CommunicateTopology

_BASE_SEED = 1234


class LayerDesc:
    """A layer to build later, on the stage that holds it: ``LayerDesc(cls, *args, **kwargs)``.

    >>> import framework as fw
    >>> LayerDesc(fw.nn.Linear, 2, 3).build_layer().weight.shape
    (2, 3)
    """

    def __init__(self, layer_func_or_spec: type, *inputs: Any, **kwargs: Any) -> None:
        if not (isinstance(layer_func_or_spec, type) and issubclass(layer_func_or_spec, Layer)):
            raise TypeError(
                f"[LayerDesc] layer_func must be a subclass of nn.Layer, got {layer_func_or_spec!r}; "
                "put plain functions in the list directly (Paddle's LayerSpec is not supported)"
            )
        self.layer_func, self.inputs, self.kwargs = layer_func_or_spec, inputs, kwargs

    def build_layer(self, **extra_kwargs: Any) -> Layer:
        return self.layer_func(*self.inputs, **{**self.kwargs, **extra_kwargs})

    def __repr__(self) -> str:
        args = [repr(a) for a in self.inputs] + [f"{k}={v!r}" for k, v in self.kwargs.items()]
        return f"{self.layer_func.__name__}({', '.join(args)})"


class SharedLayerDesc(LayerDesc):
    """A layer used at several places of the pipeline with the same weights (tied input and
    output embeddings): every entry with the same ``key`` is one layer on a stage; its
    ``shared_weight_attr`` parameters start as the first stage's and their gradients are
    summed over the stages that hold it after each batch. ``forward_func(layer, x)``, when
    given, is what this entry runs instead of ``layer(x)``.

    >>> import framework as fw
    >>> d = SharedLayerDesc("tie", fw.nn.Linear, None, "weight", 4, 4)
    >>> d.layer_name, d.shared_weight_attr
    ('tie', ['weight'])
    """

    def __init__(
        self,
        key: str,
        layer_func: type,
        forward_func: Callable[..., Any] | None = None,
        shared_weight_attr: str | list[str] = "weight",
        *inputs: Any,
        **kwargs: Any,
    ) -> None:
        super().__init__(layer_func, *inputs, **kwargs)
        self.layer_name, self.forward_func = key, forward_func
        attrs = [shared_weight_attr] if isinstance(shared_weight_attr, str) else list(shared_weight_attr)
        if not attrs or not all(isinstance(a, str) for a in attrs):
            raise OpArgumentError(
                f"[SharedLayerDesc] shared_weight_attr must name parameters, got {shared_weight_attr!r}"
            )
        self.shared_weight_attr = attrs


def segment(descs: Sequence[Any], num_parts: int, method: Any = "uniform") -> list[int]:
    """Boundaries ``[0, b1, ..., len(descs)]`` of ``num_parts`` stages (Paddle's
    ``SegmentLayers``): ``"uniform"`` (the later stages take the extra layers), ``"layer:Name"``
    (as many layers whose class name matches ``Name`` on every stage) or a list of boundaries.

    >>> segment(list(range(10)), 4)
    [0, 2, 4, 7, 10]
    """
    n = len(descs)
    if n < num_parts:
        raise OpArgumentError(f"[PipelineLayer] {n} layers cannot fill {num_parts} stages; give more layers")
    if isinstance(method, (list, tuple)):
        parts = [int(p) for p in method]
        if len(parts) == num_parts:
            parts = [*parts, n]
        ok = len(parts) == num_parts + 1 and parts[0] == 0 and parts[-1] == n
        if not ok or any(b < a for a, b in zip(parts, parts[1:])):
            raise OpArgumentError(
                f"[PipelineLayer] seg_method {list(method)} must be {num_parts + 1} rising boundaries "
                f"from 0 to {n}"
            )
        return parts
    if method == "uniform":
        size, extra = divmod(n, num_parts)
        out = [0]
        for i in range(1, num_parts + 1):
            out.append(out[-1] + size + (1 if i > num_parts - extra else 0))
        return out
    if isinstance(method, str) and method.startswith("layer:"):
        pattern = re.compile(method.split(":", 1)[1], re.IGNORECASE)
        marks = [i for i, d in enumerate(descs) if pattern.search(_name_of(d))]
        if not marks or len(marks) % num_parts:
            raise OpArgumentError(
                f"[PipelineLayer] seg_method {method!r} matches {len(marks)} layers, which "
                f"{num_parts} stages cannot share evenly"
            )
        per = len(marks) // num_parts
        return [0] + [marks[k * per] for k in range(1, num_parts)] + [n]
    raise OpArgumentError(
        f"[PipelineLayer] seg_method {method!r} is unknown; use 'uniform', 'layer:<ClassName>' or a list"
    )


def _name_of(d: Any) -> str:
    if isinstance(d, LayerDesc):
        return d.layer_func.__name__
    return type(d).__name__ if isinstance(d, Layer) else getattr(d, "__name__", "")


class PipelineLayer(Layer):
    """The stage of a pipeline this rank runs (Paddle's ``PipelineLayer``).

    ``layers``: ``LayerDesc``, built layers and plain callables, in order. The stage comes from
    ``topology`` (``fleet.get_hybrid_communicate_group().topology()``) or, with only
    ``num_stages``, from a data x pipe layout of the world. ``loss_fn(output, label)`` runs on
    the last stage. ``recompute_interval=k`` recomputes each run of ``k`` layers in backward
    (``fleet.utils.recompute``).

    >>> import framework as fw
    >>> net = PipelineLayer([LayerDesc(fw.nn.Linear, 2, 2)], num_stages=1)
    >>> net(fw.ones([1, 2])).shape
    (1, 2)
    """

    def __init__(
        self,
        layers: Sequence[Any],
        num_stages: int | None = None,
        topology: CommunicateTopology | None = None,
        loss_fn: Callable[..., Any] | None = None,
        seg_method: Any = "uniform",
        recompute_interval: int = 0,
        recompute_ctx: dict[str, Any] | None = None,
        num_virtual_pipeline_stages: int | None = None,
    ) -> None:
        super().__init__()
        if num_stages is None and topology is None:
            raise OpArgumentError("[PipelineLayer] give num_stages or topology")
        if num_virtual_pipeline_stages not in (None, 1):
            raise OpArgumentError(
                "[PipelineLayer] virtual pipeline stages (the interleaved schedule) are not built; "
                "use num_virtual_pipeline_stages=None"
            )
        rank = collective.get_rank()
        if topology is None:
            world = collective.get_world_size()
            if world % int(num_stages):  # type: ignore[arg-type]
                raise OpArgumentError(
                    f"[PipelineLayer] num_stages={num_stages} does not divide the {world} ranks of the job"
                )
            topology = CommunicateTopology(["data", "pipe", "model"], [world // num_stages, num_stages, 1])  # type: ignore[operator]
        self._topo = topology
        self._num_stages = topology.get_dim("pipe")
        if num_stages is not None and num_stages != self._num_stages:
            raise OpArgumentError(
                f"[PipelineLayer] num_stages={num_stages} but the topology has {self._num_stages} pipe stages"
            )
        self._stage_id = topology.get_coord(rank).pipe if topology.world_size() > 1 else 0
        self._loss_fn = [loss_fn]  # a list: not registered as a sublayer (as in Paddle)
        self._recompute_interval = int(recompute_interval)
        self.recompute_ctx = recompute_ctx
        self._layers_desc = list(layers)
        self._num_layers = len(self._layers_desc)
        self.segment_parts = segment(self._layers_desc, self._num_stages, seg_method)
        self._start_pos = self.segment_parts[self._stage_id]
        self._end_pos = self.segment_parts[self._stage_id + 1]
        self.run_function: list[Callable[..., Any]] = []
        self.shared_layers = LayerDict()  # Paddle's: its weights are 'shared_layers.<key>.<name>'
        for i in range(self._start_pos, self._end_pos):
            d = self._layers_desc[i]
            _random.seed(_BASE_SEED + i)
            if isinstance(d, SharedLayerDesc):
                if d.layer_name not in self.shared_layers:
                    self.shared_layers[d.layer_name] = d.build_layer()
                layer = self.shared_layers[d.layer_name]
                self.run_function.append(
                    layer if d.forward_func is None else functools.partial(d.forward_func, layer)
                )
                continue
            if isinstance(d, LayerDesc):
                d = d.build_layer()
            if isinstance(d, Layer):
                self.add_sublayer(str(i), d)
            elif not callable(d):
                raise OpArgumentError(
                    f"[PipelineLayer] layer {i} is {type(d).__name__}; give a LayerDesc, a Layer or a function"
                )
            self.run_function.append(d)

        self.shared_comm = self._construct_shared_comm()

    def _construct_shared_comm(self) -> dict[str, tuple[collective.Group, Layer | None, list[str]]]:
        """For each key held by several stages: the group of those stages' ranks on this
        rank's pipe line (made on every rank, in the same order: a collective of the world);
        the shared weights start as the first stage's."""
        stages: dict[str, list[int]] = {}
        attrs: dict[str, list[str]] = {}
        for i, d in enumerate(self._layers_desc):
            if isinstance(d, SharedLayerDesc):
                stages.setdefault(d.layer_name, [])
                s = self.get_stage_from_index(i)
                if s not in stages[d.layer_name]:
                    stages[d.layer_name].append(s)
                attrs.setdefault(d.layer_name, d.shared_weight_attr)
        out = {}
        me = collective.get_rank()
        for key, held in stages.items():
            if len(held) < 2:
                continue
            mine = None
            for line in self._topo.get_comm_list("pipe"):
                g = collective.new_group([line[s] for s in sorted(held)])
                if g.is_member() and me in g.ranks:
                    mine = g
            if mine is None:
                continue
            layer = self.shared_layers[key]
            out[key] = (mine, layer, attrs[key])
            with no_grad():
                for a in attrs[key]:
                    collective.broadcast(getattr(layer, a), src=mine.ranks[0], group=mine)
        return out

    def allreduce_shared_weight_gradients(self) -> None:
        """Sum the gradients of the shared weights over the stages that hold them (Paddle's
        name): each copy then has the gradient of the one tied weight."""
        with no_grad():
            for group, layer, attrs in self.shared_comm.values():
                for a in attrs:
                    p = getattr(layer, a)
                    if p.grad is None:
                        p.grad = _creation.zeros_like(p)
                    collective.all_reduce(p.grad, op="sum", group=group)

    # -- Paddle's accessors ---------------------------------------------------------------
    def get_stage_from_index(self, layer_idx: int) -> int:
        return next(s for s in range(self._num_stages) if layer_idx < self.segment_parts[s + 1])

    def get_num_virtual_stages(self) -> int:
        return 1

    @property
    def stage_id(self) -> int:
        return self._stage_id

    @property
    def num_stages(self) -> int:
        return self._num_stages

    def loss(self, output: Any, label: Any) -> Any:
        if self._loss_fn[0] is None:
            raise OpArgumentError("[PipelineLayer] the last stage needs loss_fn to train; pass loss_fn=")
        return self._loss_fn[0](output, label)

    def _run(self, start: int, end: int) -> Callable[..., Any]:
        def execute(*x: Any) -> Any:
            out: Any = x[0] if len(x) == 1 else x
            for f in self.run_function[start:end]:
                out = f(*out) if isinstance(out, tuple) else f(out)
            return out

        return execute

    def forward(self, input: Any) -> Any:  # noqa: A002 - Paddle's name
        n = len(self.run_function)
        k = self._recompute_interval
        if k <= 0:
            return self._run(0, n)(input)
        for start in range(0, n, k):
            end = min(start + k, n)
            args = input if isinstance(input, tuple) else (input,)
            input = recompute(self._run(start, end), *args)
        return input

    def extra_repr(self) -> str:
        return f"stage={self._stage_id}/{self._num_stages}, layers=[{self._start_pos}, {self._end_pos})"
