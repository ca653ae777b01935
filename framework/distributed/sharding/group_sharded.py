"""ZeRO over a data-parallel group (Paddle's ``paddle.distributed.sharding``). Every
parameter is cut into ``nranks`` equal flat slices (padded with zeros to a multiple of
``nranks``); rank ``r`` owns slice ``r`` of each, and the wrapped optimizer updates only its
slices, so it makes states for ``1 / nranks`` of the elements. The level says what else is
kept by the owner alone:

``"os"``     (stage 1) the optimizer states. The gradients are averaged over the group in
             backward (as data parallel does); each rank steps its slices and the slices are
             all-gathered back into the parameters.
``"os_g"``   (stage 2) also the gradients: as backward completes a gradient it is
             reduce-scattered (averaged), each rank keeps its slice and the whole gradient is
             dropped; several backwards before a step add up in the kept slices.
``"p_g_os"`` (stage 3) also the parameters: between steps a rank stores only its slices; the
             forward all-gathers the parameters first, and the step releases them again.

The training is data parallel's (the same averaged gradients, the same elementwise update).
``ClipGradByGlobalNorm`` is computed sharded: each rank sums the squares of its slices, the
sums are all-reduced over the group and every slice is scaled by the one global factor (the
unsharded result). ``ClipGradByValue`` is elementwise and runs on the slices. A clip that
needs each whole gradient (``ClipGradByNorm``, a custom one) is refused.

>>> import framework as fw, framework.distributed as dist
>>> from framework.distributed.sharding import group_sharded_parallel
>>> _ = dist.init_parallel_env()
>>> model = fw.nn.Linear(4, 2)
>>> opt = fw.optimizer.Adam(parameters=model.parameters())
>>> model, opt, _ = group_sharded_parallel(model, opt, level="os_g")
>>> model(fw.ones([3, 4])).sum().backward(); opt.step(); opt.clear_grad()
"""

from __future__ import annotations

import os
from typing import Any

from adapter_api import OpArgumentError

from ..._src.autograd import no_grad
from ..._src.io import save
from ..._src.ops import creation as _creation
from ..._src.ops import math as _math
from ..._src.ops import shape as _shape
from ..._src.tensor import Tensor
from ..._src.tensor import empty as _empty
from ...nn import Parameter
from ...nn.clip import ClipGradByGlobalNorm, ClipGradByValue
from .. import collective

LEVELS = {"os": 1, "os_g": 2, "p_g_os": 3}


def _padded(t: Tensor, k: int) -> Tensor:
    """``t`` flattened and padded with zeros to a multiple of ``k`` elements."""
    flat = t.reshape([-1])
    n = flat.shape[0]
    extra = -n % k
    if extra:
        flat = _shape.concat([flat, _creation.zeros([extra], dtype=t.dtype, device=t.device)], axis=0)
    return flat


def _rebind(p: Tensor, value: Tensor) -> None:
    """Point ``p`` at ``value``'s storage (the same object: the layer and the tape keep it)."""
    p._block, p._offset, p._nv = value._block, value._offset, None
    p._bump_version("sharding")


class ShardedOptimizer:
    """``optimizer`` stepping this rank's slice of every parameter (see the module). Other
    attributes are the wrapped optimizer's.

    >>> import framework as fw, framework.distributed as dist
    >>> _ = dist.init_parallel_env()
    >>> lin = fw.nn.Linear(2, 3)
    >>> opt = ShardedOptimizer(fw.optimizer.SGD(parameters=lin.parameters()), dist.new_group(), 1)
    >>> [tuple(s.shape) for s in opt.slices]    # one rank: the whole of each, flat
    [(6,), (3,)]
    """

    def __init__(self, optimizer: Any, group: collective.Group, stage: int) -> None:
        if not hasattr(optimizer, "param_groups"):
            raise OpArgumentError(
                f"[sharding] expected a framework optimizer (fw.optimizer.*), got {type(optimizer).__name__}"
            )
        clip = getattr(optimizer, "grad_clip", None)
        d = self.__dict__
        d["_clip"] = None
        if isinstance(clip, ClipGradByGlobalNorm):
            d["_clip"], optimizer.grad_clip = clip, None  # applied in step(), over every slice
        elif clip is not None and not isinstance(clip, ClipGradByValue):
            raise OpArgumentError(
                f"[sharding] grad_clip={type(clip).__name__} cannot be computed on sharded gradients "
                "(it needs each whole gradient, a rank holds a slice); use "
                "fw.nn.ClipGradByGlobalNorm or ClipGradByValue, or clip before opt.step()"
            )
        d["_inner"], d["_group"], d["stage"] = optimizer, group, stage
        d["_params"] = optimizer._all_params()
        d["_slice"] = {}  # id(param) -> this rank's slice (a flat Parameter the optimizer steps)
        d["_kept"] = {}  # stages 2, 3: id(param) -> this rank's slice of the averaged gradient
        d["_release"] = None  # stage 3: the model's call that drops the whole parameters
        with no_grad():
            for p in self._params:
                s = Parameter.from_tensor(self._mine(_padded(p.detach(), group.nranks)).clone())
                for attr in ("optimize_attr", "regularizer", "need_clip", "name"):
                    if hasattr(p, attr):
                        setattr(s, attr, getattr(p, attr))
                self._slice[id(p)] = s
        for g in optimizer.param_groups:
            g["params"] = [self._slice[id(p)] for p in g["params"]]
        d["slices"] = [self._slice[id(p)] for p in self._params]

    def __getattr__(self, name: str) -> Any:
        return getattr(self.__dict__["_inner"], name)

    def _mine(self, flat: Tensor) -> Tensor:
        size = flat.shape[0] // self._group.nranks
        r = self._group.rank
        return flat[r * size : (r + 1) * size]

    def keep(self, p: Tensor, part: Tensor) -> None:
        """Stages 2 and 3: add ``part`` (this rank's slice of an averaged gradient)."""
        old = self._kept.get(id(p))
        self._kept[id(p)] = part if old is None else old + part

    def whole(self, p: Tensor) -> Tensor:
        """``p`` from every rank's slice (an all-gather)."""
        s = self._slice[id(p)]
        out = _empty((self._group.nranks, *s.shape), s.dtype, s.device)
        collective.all_gather(out, s.detach(), group=self._group)
        return out.reshape([-1])[: p.numel()].reshape(list(p.shape))

    @no_grad()
    def step(self) -> None:
        for p in self._params:
            s = self._slice[id(p)]
            if self.stage == 1:
                s.grad = None if p.grad is None else self._mine(_padded(p.grad, self._group.nranks)).clone()
            else:
                s.grad = self._kept.pop(id(p), None)
        if self._clip is not None:
            self._clip_global_norm()
        self._inner.step()
        if self.stage == 3:
            if self._release is not None:
                self._release()
            return
        for p in self._params:
            _rebind(p, self.whole(p))

    def _clip_global_norm(self) -> None:
        """ClipGradByGlobalNorm over the whole gradients: the squares of this rank's slices
        (the zero padding adds nothing), summed over the group, one scale for every slice."""
        sq = None
        for s in self.slices:
            if s.grad is None or not getattr(s, "need_clip", True):
                continue
            g = s.grad if s.grad.dtype.itemsize >= 4 else _math.cast(s.grad, "float32")
            part = _math.sum(g * g).reshape([1])
            sq = part if sq is None else sq + _math.cast(part, sq.dtype)
        if sq is None:  # this rank holds no gradient: it still joins the all-reduce
            sq = _creation.zeros([1], dtype="float32", device=self.slices[0].device if self.slices else None)
        collective.all_reduce(sq, group=self._group)
        clip_norm = self._clip.clip_norm
        scale = clip_norm / _math.maximum(_math.sqrt(sq), clip_norm)
        for s in self.slices:
            if s.grad is not None and getattr(s, "need_clip", True):
                s.grad = s.grad * _math.cast(scale, s.grad.dtype)

    def clear_grad(self, set_to_zero: bool = False) -> None:
        self._kept.clear()
        for p in self._params:
            p.clear_grad(set_to_zero)
        for s in self.slices:
            s.clear_grad(set_to_zero)

    clear_gradients = clear_grad
    zero_grad = clear_grad


class GroupShardedModel:
    """The model of a sharded group: its parameters start equal (broadcast from the group's
    first rank); in backward each gradient is averaged over the group (stage 1) or
    reduce-scattered into the optimizer's kept slices (stages 2, 3); under stage 3 the whole
    parameters exist only from a forward to the next step. Other attributes are the model's."""

    def __init__(
        self, layers: Any, group: collective.Group, stage: int, optimizer: ShardedOptimizer | None = None
    ) -> None:
        if stage > 1 and optimizer is None:
            raise OpArgumentError(
                f"[sharding] stage {stage} needs the sharded optimizer (it keeps the gradients)"
            )
        d = self.__dict__
        d["_layers"], d["_opt"], d["stage"], d["_group"] = layers, optimizer, stage, group
        d["_released"] = False
        params = list(layers.parameters())
        with no_grad():
            for p in params:
                collective.broadcast(p, src=group.ranks[0], group=group)
        if optimizer is not None:  # the slices were cut before the broadcast: cut them again
            with no_grad():
                for p in params:
                    s = optimizer._slice.get(id(p))
                    if s is not None:
                        _rebind(s, optimizer._mine(_padded(p.detach(), group.nranks)).clone())
        d["_params"] = params
        d["_hooks"] = [
            p.register_post_accumulate_grad_hook(self._on_grad) for p in params if not p.stop_gradient
        ]
        if stage == 3:
            assert optimizer is not None
            optimizer.__dict__["_release"] = self.release
            self.release()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.__dict__["_layers"], name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.forward(*args, **kwargs)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        if self._released:
            self.gather()
        return self._layers(*args, **kwargs)

    def _on_grad(self, p: Tensor) -> None:
        g = p.grad
        if g is None:
            return
        with no_grad():
            if self.stage == 1:
                collective.all_reduce(g, op="avg", group=self._group)
                return
            k = self._group.nranks
            flat = _padded(g, k)
            part = _empty((flat.shape[0] // k,), g.dtype, g.device)
            collective.reduce_scatter(part, flat, op="avg", group=self._group)
            self._opt.keep(p, part)  # type: ignore[union-attr]
            p.grad = None  # the whole gradient is not kept

    # -- stage 3 --------------------------------------------------------------------------
    def release(self) -> None:
        """Drop the whole parameters (each rank keeps its slices, in the optimizer)."""
        for p in self._params:
            _rebind(p, _empty((0,), p.dtype, p.device))
        self.__dict__["_released"] = True

    @no_grad()
    def gather(self) -> None:
        """Make the whole parameters again from every rank's slices."""
        for p in self._params:
            _rebind(p, self._opt.whole(p))  # type: ignore[union-attr]
        self.__dict__["_released"] = False

    get_all_parameters = gather

    def state_dict(self, *args: Any, **kwargs: Any) -> Any:
        if self._released:
            self.gather()
        return self._layers.state_dict(*args, **kwargs)


def group_sharded_parallel(
    model: Any,
    optimizer: Any,
    level: str,
    scaler: Any = None,
    group: collective.Group | None = None,
    offload: bool = False,
    sync_buffers: bool = False,
    buffer_max_size: int = 2**23,
    segment_size: int = 2**20,
    sync_comm: bool = False,
    dp_group: collective.Group | None = None,
    exclude_layer: Any = None,
) -> tuple[Any, Any, Any]:
    """``(model, optimizer, scaler)`` sharded over ``group`` (default: the world) at ``level``
    ``"os"``, ``"os_g"`` or ``"p_g_os"`` (ZeRO stages 1, 2, 3; see the module). Paddle's
    buffer and segment sizes are accepted and not used (no fused buffers); ``offload``,
    ``dp_group`` and ``exclude_layer`` are refused."""
    if level not in LEVELS:
        raise OpArgumentError(
            f"[group_sharded_parallel] level must be 'os', 'os_g' or 'p_g_os', got {level!r}"
        )
    for what, v in (("offload", offload), ("dp_group", dp_group), ("exclude_layer", exclude_layer)):
        if v:
            raise OpArgumentError(f"[group_sharded_parallel] {what} is not supported; leave it unset")
    g = collective._group(group)
    trainable = {id(p) for p in model.parameters() if not p.stop_gradient}
    if {id(p) for p in optimizer._all_params()} != trainable:
        raise OpArgumentError(
            "[group_sharded_parallel] the optimizer must hold exactly the model's trainable parameters"
        )
    opt = ShardedOptimizer(optimizer, g, LEVELS[level])
    return GroupShardedModel(model, g, LEVELS[level], opt), opt, scaler


def ShardingParallel(layers: Any, hcg: Any, strategy: Any) -> GroupShardedModel:  # noqa: N802 - Paddle's name
    """What ``fleet.distributed_model`` returns for ``sharding_degree > 1``: the model with its
    gradients averaged over the sharding group in backward (stage 1; the optimizer from
    ``fleet.distributed_optimizer`` steps this rank's slices)."""
    if hcg.get_data_parallel_world_size() > 1:
        raise OpArgumentError(
            "[fleet] sharding_degree > 1 together with dp_degree > 1 is not built; put the ranks in sharding_degree"
        )
    return GroupShardedModel(layers, hcg.get_sharding_parallel_group(), 1)


def save_group_sharded_model(model: Any, output: str, optimizer: Any = None) -> None:
    """Save the whole model to ``output/model.pdmodel`` from rank 0 (and, given ``optimizer``,
    rank 0's slice states to ``output/model.pdopt``), Paddle's layout."""
    state = model.state_dict()
    if collective.get_rank() == 0:
        os.makedirs(output, exist_ok=True)
        save(state, os.path.join(output, "model.pdmodel"))
        if optimizer is not None:
            save(optimizer.state_dict(), os.path.join(output, "model.pdopt"))
