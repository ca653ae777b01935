"""``dist.to_static``: a distributed layer traced into each rank's SPMD program (Paddle's
``paddle.distributed.to_static``, which returns a ``DistModel``).

Tracing runs the layer as eagerly: every op on a distributed tensor goes through the
interceptor of :mod:`.spmd`, which now records the *local* op on the shards' traced values
(local shapes) and each reshard as one ``op.dist_reshard`` op (:mod:`.reshard`: mesh, mesh
axis, placements from and to). The program is this rank's: its parameters are this rank's
shards. For training the step ``loss = loss_fn(layer(*inputs), label); loss.backward()`` is
traced into one program (forward, loss and the gradient rules, the reshards' backward among
them: a ``P(sum) -> R`` all_reduce where the forward had Megatron's identity, a gather where it
sliced...) by :mod:`framework.jit.train_step`; the optimizer step (``dist.shard_optimizer``:
states laid out like the parameters) runs after it, eagerly, on the distributed parameters.
At ZeRO stage 2 the step slices each gradient in the program as the optimizer's states lie
(the parameter's ``_traced_grad_sink``), which the pass ``dist_reduce_scatter`` makes one
reduce-scatter; the program returns this rank's slices and the optimizer keeps them.

>>> import framework.distributed as dist
>>> dist.DistModel.__name__
'DistModel'
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from adapter_api import OpArgumentError

from ..._src import autograd
from ..._src.tensor import Tensor
from ...jit import StaticFunction
from .dtensor import DistTensor
from .placement import Replicate
from .program_passes import PIPELINE
from .reshard import SPMD_TRACING, reshard
from .strategy import Strategy


def _whole_local(x: Any) -> Tensor:
    """``x`` replicated over its mesh: the local value (the whole tensor) on every rank."""
    if not isinstance(x, DistTensor):
        return x
    mesh = x.process_mesh
    if any(p != Replicate() for p in x.placements):
        x = reshard(x, mesh, [Replicate()] * mesh.ndim, why="dist.to_static output")
    return x._local


class DistModel:
    """A layer run as its traced SPMD program (see the module docstring), in one of Paddle's
    three modes: ``train()`` (``model(*inputs, label)`` runs forward, loss, backward and the
    optimizer step, returns the loss), ``eval()`` (the loss, no gradients) and ``predict()``
    (``model(*inputs)`` returns the layer's output, whole on every rank). The mode starts as
    train when a loss and an optimizer are given, eval with a loss only, else predict.

    With a pipeline strategy (``strategy.pipeline.enable``) the layer is cut into stages by
    its parameters' meshes and runs eagerly on the micro-batch schedule instead of a traced
    program; ``pipeline`` is then the scheduler (its ``timeline`` and ``bubble()``), and
    predict returns the last stage's outputs per micro-batch (None on the other stages)."""

    #: ``pipeline_builder(layer, loss, strategy)``: the micro-batch scheduler over the stages
    #: of ``layer`` (``framework.distributed`` sets it: the fleet pipeline's schedule)
    pipeline_builder: ClassVar[Any] = None

    def __init__(
        self, layer: Any, loss: Callable[..., Any] | None = None, optimizer: Any = None, strategy: Any = None
    ) -> None:
        self.network = layer
        self._loss = loss
        self._optimizer = optimizer
        self.pipeline = None
        if strategy is not None and strategy.pipeline.enable:
            self.pipeline = DistModel.pipeline_builder(layer, loss, strategy)
        self._programs: dict[Any, Any] = {}
        self._mode = "predict"
        if loss is not None and optimizer is not None:
            self.train()
        elif loss is not None:
            self.eval()
        else:
            self.predict()

    # -- modes ----------------------------------------------------------------------------
    def train(self) -> DistModel:
        if self._loss is None or self._optimizer is None:
            raise OpArgumentError(
                "[DistModel.train] training needs a loss and an optimizer: pass loss= and optimizer= "
                "to dist.to_static"
            )
        self._mode = "train"
        self.network.train()
        return self

    def eval(self) -> DistModel:
        if self._loss is None:
            raise OpArgumentError(
                "[DistModel.eval] evaluation computes the loss: pass loss= to dist.to_static"
            )
        self._mode = "eval"
        self.network.eval()
        return self

    def predict(self) -> DistModel:
        self._mode = "predict"
        self.network.eval()
        return self

    # -- the programs ---------------------------------------------------------------------
    def _params(self) -> dict[int, tuple[str, Tensor]]:
        """This rank's shards (and whole tensors), by the parameter's name."""
        out: dict[int, tuple[str, Tensor]] = {}
        items = list(self.network.named_parameters()) + list(self.network.named_buffers())
        for n, p in items:
            t = p._local if isinstance(p, DistTensor) else p
            if t is not None and id(t) not in out:
                out[id(t)] = (n, t)
        return out

    def _static(self, layouts: tuple[Any, ...], n_in: int) -> Any:
        key = (self._mode, layouts, n_in)
        sf = self._programs.get(key)
        if sf is not None:
            return sf
        mode, net, loss_fn = self._mode, self.network, self._loss

        def step(*ts: Tensor) -> Any:
            token = SPMD_TRACING.set(True)
            try:
                return traced(*ts)
            finally:
                SPMD_TRACING.reset(token)

        def traced(*ts: Tensor) -> Any:
            args = [
                t if lay is None else DistTensor(t, lay[0], list(lay[1]), lay[2], t.dtype)
                for t, lay in zip(ts, layouts)
            ]
            out = net(*args[:n_in])
            if mode == "predict":
                return _whole_local(out)
            loss = _whole_local(loss_fn(out, *args[n_in:]))
            if mode == "train":
                loss.backward()
            return loss.detach()

        step.__name__ = f"dist_{mode}_step"
        sf = StaticFunction(step, passes=PIPELINE)
        sf._params = self._params  # type: ignore[method-assign]
        self._programs[key] = sf
        return sf

    def __call__(self, *args: Any) -> Any:
        n_in = len(args) if self._mode == "predict" else len(args) - 1
        if n_in < 1:
            raise OpArgumentError(
                f"[DistModel] in {self._mode} mode the call takes the layer's inputs"
                + (" and then the label" if self._mode != "predict" else "")
                + f", got {len(args)} arguments"
            )
        layouts, locals_ = [], []
        for a in args:
            if not isinstance(a, Tensor):
                raise OpArgumentError(f"[DistModel] arguments are tensors, got {type(a).__name__}")
            if isinstance(a, DistTensor):
                layouts.append((a.process_mesh, tuple(a.placements), tuple(a.shape)))
                locals_.append(a._local)
            else:
                layouts.append(None)
                locals_.append(a)
        if self.pipeline is not None:
            return self._pipelined(args, n_in)
        sf = self._static(tuple(layouts), n_in)
        if self._mode == "train":
            loss = sf(*locals_)
            self._optimizer.step()
            self._optimizer.clear_grad()
            return loss
        with autograd.no_grad():
            return sf(*locals_)

    def _pipelined(self, args: tuple[Any, ...], n_in: int) -> Any:
        inputs = args[0] if n_in == 1 else tuple(args[:n_in])
        if self._mode == "train":
            return self.pipeline.train_batch([inputs, args[-1]], self._optimizer)
        if self._mode == "eval":
            return self.pipeline.eval_batch([inputs, args[-1]], compute_loss=True)
        return self.pipeline.eval_batch([inputs, None])

    def dist_main_program(self, mode: str | None = None) -> Any:
        """The program this rank traced for ``mode`` (the current one by default): a
        :class:`framework.ir.Program` (None before the first call in that mode)."""
        mode = mode or self._mode
        for (m, _, _), sf in self._programs.items():
            if m == mode and sf.programs:
                return sf.programs[-1].program
        return None


def to_static(
    layer: Any,
    loader: Any = None,
    loss: Callable[..., Any] | None = None,
    optimizer: Any = None,
    strategy: Any = None,
) -> DistModel:
    """``paddle.distributed.to_static``: ``layer`` (annotated with ``dist.shard_layer`` /
    ``dist.shard_tensor``) as a :class:`DistModel` that runs each rank's traced program.
    ``loader`` is accepted for Paddle's signature and not read (batches are passed to the
    call). ``strategy`` (a :class:`dist.Strategy`): with ``pipeline.enable`` the layer (an
    ``nn.Sequential`` whose layers sit on the slices of a mesh's ``pp`` axis) trains on the
    1F1B or FThenB micro-batch schedule, eagerly (see
    :mod:`framework.distributed.fleet.meta_parallel.mesh_pipeline`); ``recompute.enable``
    recomputes each stage's activations in backward."""
    if strategy is not None and not isinstance(strategy, Strategy):
        raise OpArgumentError(
            f"[dist.to_static] strategy={strategy!r} is a {type(strategy).__name__}; pass a dist.Strategy or None"
        )
    if strategy is not None and strategy.recompute.enable and not strategy.pipeline.enable:
        raise OpArgumentError(
            "[dist.to_static] strategy.recompute is read by the pipeline (each stage recomputes); "
            "enable strategy.pipeline too, or call fleet.utils.recompute in the layer"
        )
    if not hasattr(layer, "named_parameters"):
        raise OpArgumentError(f"[dist.to_static] expected a fw.nn.Layer, got {type(layer).__name__}")
    return DistModel(layer, loss, optimizer, strategy)
