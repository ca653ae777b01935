"""The pipeline stages of :func:`dist.parallelize`: where a model is cut (``split_spec``,
:class:`SplitPoint`), the moves of a layer's inputs to its stage, the copies of a parameter
two stages use (their gradients summed over the stages) and ``ClipGradByGlobalNorm`` with its
norm taken over every stage.

>>> import framework.distributed as dist
>>> list(dist.SplitPoint.__members__)
['BEGINNING', 'END']
"""

from __future__ import annotations

import enum
from typing import Any

import numpy as np

from adapter_api import OpArgumentError

from ..._src.autograd import no_grad
from ..._src.ops import creation as _creation
from ..._src.ops import math as _math
from ..._src.tensor import Tensor
from .. import collective
from .dtensor import DistTensor
from .mesh import ProcessMesh
from .reshard import reshard


class SplitPoint(enum.Enum):
    """Where a pipeline stage is cut at a named layer (Paddle's ``dist.SplitPoint``)."""

    BEGINNING = 0
    END = 1


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


__all__ = ["SplitPoint"]
