"""Training a :class:`PipelineLayer` stage by stage over micro-batches (Paddle's
``PipelineParallel``): ``train_batch([inputs, labels], optimizer)`` splits the batch into
``accumulate_steps`` micro-batches of ``micro_batch_size`` and runs the schedule of
``pipeline_configs["schedule_mode"]``:

``"1F1B"``   each stage runs ``num_stages - stage - 1`` forwards (warm-up), then alternates
             one forward and one backward, then the remaining backwards: at most
             ``num_stages`` micro-batches' activations are alive on a stage.
``"FThenB"`` every forward, then every backward (GPipe): all the micro-batches' activations
             are alive at once.

Each micro-batch's loss is divided by ``accumulate_steps`` before its backward, so the
gradients are those of the mean loss over the whole batch, as in one process. With data
parallelism the gradients are then averaged over the data-parallel group, and the optimizer
steps. The loss is broadcast from the last stage, so every rank returns the same value.

``timeline`` holds ``(kind, micro_batch, start, end)`` (``time.perf_counter``) of each forward
and backward of the last batch: the busy time of the stage, from which the bubble follows.
"""

from __future__ import annotations

import time
from typing import Any

from adapter_api import OpArgumentError

from .... import autograd as _public_autograd
from ...._src.autograd import no_grad
from ...._src.ops import creation as _creation
from ...._src.tensor import Tensor
from ....nn.clip import ClipGradByGlobalNorm
from ... import collective
from ...auto_parallel.dtensor import DistTensor
from ...parallel import _Reducer
from .p2p import P2P, as_list, wants_grad
from .pp_layers import PipelineLayer


class PipelineParallel:
    """A :class:`PipelineLayer` trained with micro-batches over the pipe group of ``hcg``
    (what ``fleet.distributed_model`` returns for ``pp_degree > 1``). Attributes and methods
    it lacks are the stage layer's.

    >>> # under oarlock launch -n 2, with hybrid_configs {"pp_degree": 2}:
    >>> # model = fleet.distributed_model(PipelineLayer(descs, topology=hcg.topology(), loss_fn=loss))
    >>> # loss = model.train_batch([x, y], optimizer)
    """

    def __init__(self, layers: PipelineLayer, hcg: Any, strategy: Any) -> None:
        if not isinstance(layers, PipelineLayer):
            raise TypeError(
                f"[PipelineParallel] the model must be a PipelineLayer, got {type(layers).__name__}"
            )
        cfg = strategy.pipeline_configs
        self.__dict__["_hcg"], self.__dict__["_strategy"] = hcg, strategy
        self._setup(
            layers,
            cfg["micro_batch_size"],
            cfg["accumulate_steps"],
            cfg["schedule_mode"],
            hcg.get_pipe_parallel_group(),
            hcg.get_stage_id(),
            hcg.get_data_parallel_group(),
        )
        if layers.num_stages != self.num_stages or layers.stage_id != self.stage_id:
            raise OpArgumentError(
                f"[PipelineParallel] the PipelineLayer is stage {layers.stage_id} of {layers.num_stages}, "
                f"the hybrid group says stage {self.stage_id} of {self.num_stages}; build it with "
                "topology=fleet.get_hybrid_communicate_group().topology()"
            )

    def _setup(
        self,
        layers: Any,
        micro_batch_size: int,
        accumulate_steps: int,
        schedule_mode: str,
        pp_group: collective.Group,
        stage_id: int,
        dp_group: collective.Group | None,
    ) -> None:
        """The schedule's state: ``layers`` is this stage (``forward``, ``loss``,
        ``parameters``); ``dp_group`` (None: no data parallelism here) averages the gradients
        of the stage's replicas after the schedule. Shared with the auto-parallel pipeline
        (:mod:`framework.distributed.auto_parallel.pipeline`)."""
        d = self.__dict__
        d["_layers"] = layers
        d["micro_batch_size"] = int(micro_batch_size)
        d["accumulate_steps"] = int(accumulate_steps)
        d["schedule_mode"] = schedule_mode
        d["num_stages"] = pp_group.nranks
        d["stage_id"] = stage_id
        if schedule_mode not in ("1F1B", "FThenB"):
            raise OpArgumentError(
                f"[PipelineParallel] schedule_mode {schedule_mode!r} is unknown; use '1F1B' or 'FThenB'"
            )
        if self.micro_batch_size < 1 or self.accumulate_steps < 1:
            raise OpArgumentError(
                f"[PipelineParallel] micro_batch_size and accumulate_steps must be at least 1, got "
                f"{self.micro_batch_size} and {self.accumulate_steps}"
            )
        d["pp_group"] = pp_group
        d["dp_group"] = dp_group
        big = dp_group is not None and dp_group.nranks > 1
        d["_dp"] = _Reducer(dp_group, 25 * 1024 * 1024, False) if big else None
        d["timeline"] = []
        d["_p2p"] = None
        if self._dp is not None:  # the replicas of a stage start equal
            with no_grad():
                for p in layers.parameters():
                    local = p._local_value() if isinstance(p, DistTensor) else p
                    collective.broadcast(local, src=self.dp_group.ranks[0], group=self.dp_group)

    # -- delegation -----------------------------------------------------------------------
    def __getattr__(self, name: str) -> Any:
        return getattr(self.__dict__["_layers"], name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._layers(*args, **kwargs)

    def is_pipeline_first_stage(self) -> bool:
        return self.stage_id == 0

    def is_pipeline_last_stage(self) -> bool:
        return self.stage_id == self.num_stages - 1

    # -- the batch --------------------------------------------------------------------------
    def _micro_batches(self, data: Any) -> tuple[list[Any], list[Any]]:
        if not isinstance(data, (list, tuple)) or len(data) != 2:
            raise OpArgumentError(
                "[PipelineParallel] data must be [inputs, labels] (each a tensor or a tuple of tensors)"
            )
        m, k = self.micro_batch_size, self.accumulate_steps

        def cut(x: Any, what: str) -> list[Any]:
            if x is None:
                return [None] * k
            if isinstance(x, (tuple, list)):
                parts = [cut(t, what) for t in x]
                return [tuple(p[i] for p in parts) for i in range(k)]
            if not isinstance(x, Tensor):
                raise OpArgumentError(f"[PipelineParallel] {what} must be tensors, got {type(x).__name__}")
            if x.shape[0] != m * k:
                raise OpArgumentError(
                    f"[PipelineParallel] the {what} batch has {x.shape[0]} rows, micro_batch_size x "
                    f"accumulate_steps is {m} x {k} = {m * k}; set pipeline_configs to match the batch"
                )
            return [x[i * m : (i + 1) * m] for i in range(k)]

        return cut(data[0], "input"), cut(data[1], "label")

    def _forward_step(
        self, xs: list[Tensor] | None, i: int, inputs: list[Any], labels: list[Any]
    ) -> list[Tensor]:
        t0 = time.perf_counter()
        if xs is None:
            arg = inputs[i]
        else:
            for x in xs:
                if wants_grad(x):
                    x.stop_gradient = False
            arg = xs[0] if len(xs) == 1 else tuple(xs)
        out = self._layers(arg)
        if self.is_pipeline_last_stage() and self._with_loss:
            loss = self._layers.loss(out, labels[i])
            if self.accumulate_steps > 1:
                loss = loss / self.accumulate_steps
            self._losses.append(loss.detach())
            ys = [loss]
        else:
            ys = as_list(out)
            if self.is_pipeline_last_stage():
                self._outputs.append(out)
        self.timeline.append(("F", i, t0, time.perf_counter()))
        return ys

    def _backward_step(
        self, i: int, xs: list[Tensor] | None, ys: list[Tensor], gs: list[Tensor] | None
    ) -> list[Tensor]:
        t0 = time.perf_counter()
        if gs is None:  # the last stage: ys is the loss
            _public_autograd.backward(ys)
        else:
            pairs = [(y, g) for y, g in zip([y for y in ys if wants_grad(y)], gs) if not y.stop_gradient]
            if pairs:
                _public_autograd.backward([y for y, _ in pairs], [g for _, g in pairs])
        grads = []
        for x in xs or []:
            if wants_grad(x):
                grads.append(x.grad if x.grad is not None else _creation.zeros_like(x))
        self.timeline.append(("B", i, t0, time.perf_counter()))
        return grads

    def _schedule(self, inputs: list[Any], labels: list[Any]) -> None:
        """The 1F1B (or FThenB) schedule of this stage over the micro-batches."""
        if self._p2p is None:
            self._schedule_setup()
        p2p = self._p2p
        p2p.new_batch()
        k = self.accumulate_steps
        warmup = k if self.schedule_mode == "FThenB" else min(self.num_stages - self.stage_id - 1, k)
        steady = k - warmup
        live: list[tuple[int, list[Tensor] | None, list[Tensor]]] = []
        for i in range(warmup):
            xs = p2p.recv_forward()
            ys = self._forward_step(xs, i, inputs, labels)
            p2p.send_forward(ys)
            live.append((i, xs, ys))
        xs = p2p.recv_forward() if steady else None
        for j in range(steady):
            i = warmup + j
            ys = self._forward_step(xs, i, inputs, labels)
            gs = p2p.send_forward_recv_backward(ys)
            live.append((i, xs, ys))
            b, bxs, bys = live.pop(0)
            grads = self._backward_step(b, bxs, bys, gs)
            if j == steady - 1:
                p2p.send_backward(grads)
            else:
                xs = p2p.send_backward_recv_forward(grads)
        while live:
            b, bxs, bys = live.pop(0)
            gs = p2p.recv_backward()
            p2p.send_backward(self._backward_step(b, bxs, bys, gs))

    def _schedule_setup(self) -> None:
        first = next(iter(self._layers.parameters()), None)
        device = first.device if first is not None else None
        self.__dict__["_p2p"] = P2P(self.pp_group, self.stage_id, self.num_stages, device)

    def _final_loss(self) -> Tensor:
        """The mean loss of the batch, from the last stage to every stage."""
        if self.is_pipeline_last_stage():
            total = self._losses[0]
            for loss in self._losses[1:]:
                total = total + loss
            out = total.astype("float32").reshape([])
        else:
            out = _creation.zeros([], dtype="float32", device=self._p2p.device)
        collective.broadcast(out, src=self.pp_group.ranks[-1], group=self.pp_group)
        return out

    def forward_backward_pipeline(self, data: Any, scaler: Any = None) -> Tensor:
        """Forward and backward of every micro-batch (no optimizer step); returns the loss."""
        if scaler is not None:
            raise OpArgumentError("[PipelineParallel] a loss scaler is not supported in the pipeline yet")
        inputs, labels = self._micro_batches(data)
        d = self.__dict__
        d["timeline"], d["_losses"], d["_outputs"], d["_with_loss"] = [], [], [], True
        self._layers.train()
        d["_t0"] = time.perf_counter()
        self._schedule(inputs, labels)
        self._reduce_grads()
        loss = self._final_loss()
        d["_losses"], d["_t1"] = [], time.perf_counter()
        return loss

    def _reduce_grads(self) -> None:
        """After the schedule: the tied weights' gradients over their stages, then the
        replicas of this stage average theirs."""
        self._layers.allreduce_shared_weight_gradients()
        if self._dp is not None:
            local = [p._local_value() if isinstance(p, DistTensor) else p for p in self._layers.parameters()]
            self._dp.reduce_all([p for p in local if p.grad is not None])

    def train_batch(self, data: Any, optimizer: Any, lr_scheduler: Any = None, scaler: Any = None) -> Tensor:
        """One optimizer step over ``data = [inputs, labels]`` (``micro_batch_size x
        accumulate_steps`` rows); returns the batch's mean loss on every rank."""
        loss = self.forward_backward_pipeline(data, scaler)
        self._step(optimizer)
        optimizer.clear_grad()
        if lr_scheduler is not None:
            lr_scheduler.step()
        return loss

    def _step(self, optimizer: Any) -> None:
        """The optimizer's step; a global-norm clip takes the norm over every stage's gradients
        (each stage's optimizer sees only its own: the squares are summed over the pipe group)."""
        clip = getattr(optimizer, "grad_clip", None)
        if not isinstance(clip, ClipGradByGlobalNorm) or self.num_stages == 1:
            optimizer.step()
            return
        params = [
            p for p in self._layers.parameters() if p.grad is not None and getattr(p, "need_clip", True)
        ]
        if any(isinstance(p, DistTensor) for p in params):
            raise OpArgumentError(
                "[PipelineParallel] a global-norm clip over tensor-parallel parameters across stages is "
                "not built; leave grad_clip unset or use ClipGradByValue"
            )
        with no_grad():
            sq = _creation.zeros([], dtype="float32", device=self._p2p.device)
            for p in params:
                g = p.grad.astype("float32")
                sq = sq + (g * g).sum()
            collective.all_reduce(sq, op="sum", group=self.pp_group)
            norm = float(sq.numpy()) ** 0.5
            scale = clip.clip_norm / max(norm, clip.clip_norm)
            for p in params:
                p.grad = p.grad * scale
        optimizer.grad_clip = None  # already clipped by the norm of the whole model
        try:
            optimizer.step()
        finally:
            optimizer.grad_clip = clip

    def eval_batch(self, data: Any, compute_loss: bool = False) -> Any:
        """Forwards only: the mean loss (``compute_loss=True``) or, on the last stage, the
        micro-batches' outputs (a list; None on the other stages)."""
        inputs, labels = self._micro_batches(data)
        d = self.__dict__
        d["timeline"], d["_losses"], d["_outputs"], d["_with_loss"] = [], [], [], compute_loss
        if self._p2p is None:
            self._schedule_setup()
        self._layers.eval()
        self._p2p.new_batch()
        with no_grad():
            for i in range(self.accumulate_steps):
                xs = self._p2p.recv_forward()
                self._p2p.send_forward(self._forward_step(xs, i, inputs, labels))
        if compute_loss:
            return self._final_loss()
        return self._outputs if self.is_pipeline_last_stage() else None

    def bubble(self) -> float:
        """The fraction of the last ``forward_backward_pipeline`` (from its start to the loss on
        every stage) this stage spent outside its forwards and backwards: waiting for its
        neighbours, or sending."""
        span = self.__dict__.get("_t1", 0.0) - self.__dict__.get("_t0", 0.0)
        busy = sum(e - s for _, _, s, e in self.timeline)
        return max(0.0, 1.0 - busy / span) if span > 0 else 0.0
