"""The tensor-parallel plans of :func:`dist.parallelize` (Paddle's ``ColWiseParallel``,
``RowWiseParallel`` and the ``SequenceParallel*`` plans): the placements a plan gives a
layer's parameters over ``mp`` and the reshards it hooks on the layer's input and output.

>>> import framework.distributed as dist
>>> dist.ColWiseParallel().gather_output, dist.RowWiseParallel().is_input_parallel
(False, True)
"""

from __future__ import annotations

import re
from typing import Any

from adapter_api import OpArgumentError

from .dtensor import DistTensor
from .placement import Partial, Placement, Replicate, Shard
from .reshard import reshard


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


__all__ = [
    "ColWiseParallel",
    "PlanBase",
    "RowWiseParallel",
    "SequenceParallelBegin",
    "SequenceParallelDisable",
    "SequenceParallelEnable",
    "SequenceParallelEnd",
]
