"""``Model``: Paddle's high-level training API (``paddle.Model``) over :mod:`framework.io`.

>>> import numpy as np, framework as fw
>>> _ = fw.seed(0)
>>> x = np.random.default_rng(0).standard_normal((64, 4)).astype("float32")
>>> y = (x.sum(1) > 0).astype("int64")
>>> data = fw.io.TensorDataset([fw.to_tensor(x), fw.to_tensor(y)])
>>> model = fw.Model(fw.nn.Sequential(fw.nn.Linear(4, 16), fw.nn.ReLU(), fw.nn.Linear(16, 2)))
>>> model.prepare(fw.optimizer.Adam(0.01, parameters=model.parameters()), fw.nn.CrossEntropyLoss(), fw.metric.Accuracy())
>>> model.fit(data, epochs=5, batch_size=16, verbose=0)
>>> model.evaluate(data, batch_size=32, verbose=0)["acc"] > 0.8
True
"""

from __future__ import annotations

import os
import warnings
from typing import Any

import numpy as np

from adapter_api import OpArgumentError

from .._src.autograd import no_grad
from .._src.io import load as _load
from .._src.io import save as _save
from .._src.tensor import Tensor, to_tensor
from ..jit import save as _jit_save
from ..jit.paddle_format.export import PaddleExportError
from ..static import InputSpec
from .callbacks import Callback, LRScheduler, ModelCheckpoint, ProgBarLogger


def _as_list(x: Any) -> list:
    if x is None:
        return []
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _tensors(x: Any) -> list[Tensor]:
    """A batch's fields as tensors: numpy arrays (what Paddle's ``train_batch`` takes) are converted."""
    return [v if isinstance(v, Tensor) else to_tensor(v) for v in _as_list(x)]


class Model:
    """A network wrapped for training: ``prepare``, ``fit``, ``evaluate``, ``predict``, ``save``, ``load``.

    Args:
        network (Layer): the network.
        inputs (list[InputSpec] | int, optional): the specs (or the count) of the fields of a
            batch that feed the network.
        labels (list[InputSpec] | int, optional): likewise for the labels; by default the last
            field of a batch is the label.

    Example:
        >>> import framework as fw, numpy as np
        >>> _ = fw.seed(0)
        >>> x = fw.to_tensor(np.random.default_rng(0).standard_normal((32, 4)).astype("float32"))
        >>> data = fw.io.TensorDataset([x, (x.sum(axis=1) > 0).astype("int64")])
        >>> model = fw.Model(fw.nn.Linear(4, 2))
        >>> opt = fw.optimizer.SGD(0.1, parameters=model.parameters())
        >>> model.prepare(opt, fw.nn.CrossEntropyLoss(), fw.metric.Accuracy())
        >>> model.fit(data, epochs=2, batch_size=16, verbose=0)
        >>> sorted(model.evaluate(data, batch_size=32, verbose=0))
        ['acc', 'loss']
        >>> model.predict(data, batch_size=32, verbose=0)[0][0].shape
        (32, 2)
    """

    def __init__(self, network: Any, inputs: Any = None, labels: Any = None) -> None:
        self.network = network
        self._inputs, self._labels = _as_list(inputs), _as_list(labels)
        self._optimizer: Any = None
        self._loss: Any = None
        self._metrics: list[Any] = []
        self._amp: dict[str, Any] | None = None
        self._scaler: Any = None
        self.stop_training = False

    # -- setup ------------------------------------------------------------------------------
    def prepare(
        self, optimizer: Any = None, loss: Any = None, metrics: Any = None, amp_configs: Any = None
    ) -> None:
        """Set the optimizer, the loss (a Layer or callable of (outputs, labels)), metrics and
        mixed precision (``"O1"``, ``"O2"`` or ``{"level": ..., "dtype": ..., "init_loss_scaling": ...}``)."""
        from ..metric import Metric

        self._optimizer, self._loss = optimizer, loss
        self._metrics = _as_list(metrics)
        for m in self._metrics:
            if not isinstance(m, Metric):
                raise OpArgumentError(
                    f"[Model.prepare] metrics must be fw.metric.Metric instances, got {type(m).__name__}"
                )
        self._amp = None
        if amp_configs is not None:
            from .. import amp

            cfg = {"level": amp_configs} if isinstance(amp_configs, str) else dict(amp_configs)
            level = cfg.pop("level", "O1")
            dtype = cfg.pop("dtype", "bfloat16")
            if level != "O0":
                if level == "O2":
                    self.network, self._optimizer = amp.decorate(
                        self.network, self._optimizer, level="O2", dtype=dtype
                    )
                scaler_keys = {
                    "init_loss_scaling",
                    "incr_ratio",
                    "decr_ratio",
                    "incr_every_n_steps",
                    "decr_every_n_nan_or_inf",
                    "use_dynamic_loss_scaling",
                }
                self._scaler = amp.GradScaler(**{k: v for k, v in cfg.items() if k in scaler_keys})
                self._amp = {
                    "level": level,
                    "dtype": dtype,
                    **{k: v for k, v in cfg.items() if k in ("custom_white_list", "custom_black_list")},
                }

    def parameters(self, *args: Any, **kwargs: Any) -> list[Tensor]:
        return self.network.parameters(*args, **kwargs)

    # -- batches ----------------------------------------------------------------------------
    def _split(self, batch: Any, with_labels: bool) -> tuple[list[Tensor], list[Tensor]]:
        fields = [b if isinstance(b, Tensor) else to_tensor(b) for b in _as_list(batch)]
        if self._inputs:
            n_in = len(self._inputs)
        elif not with_labels:
            n_in = len(fields) if len(fields) == 1 else len(fields) - max(len(self._labels), 1)
        else:
            n_in = len(fields) - max(len(self._labels), 1)
        if n_in < 1 or (with_labels and n_in >= len(fields)):
            raise OpArgumentError(
                f"[Model] a batch has {len(fields)} fields; cannot split it into inputs and labels (pass Model(net, inputs=..., labels=...))"
            )
        return fields[:n_in], fields[n_in:]

    def _forward(self, ins: list[Tensor]) -> list[Tensor]:
        if self._amp is not None:
            from .. import amp

            with amp.auto_cast(
                level=self._amp["level"],
                dtype=self._amp["dtype"],
                custom_white_list=self._amp.get("custom_white_list"),
                custom_black_list=self._amp.get("custom_black_list"),
            ):
                out = self.network(*ins)
        else:
            out = self.network(*ins)
        return _as_list(out)

    def _compute_loss(self, outs: list[Tensor], labels: list[Tensor]) -> Tensor:
        if self._loss is None:
            raise OpArgumentError("[Model] no loss: call prepare(optimizer, loss=...) before fit/evaluate")
        loss = self._loss(*(outs + labels))
        loss = loss if isinstance(loss, Tensor) else sum(_as_list(loss))
        if loss.dtype != np.float32 and loss.dtype != np.float64:
            loss = loss.astype("float32")
        return loss

    def _update_metrics(self, outs: list[Tensor], labels: list[Tensor]) -> dict[str, Any]:
        logs: dict[str, Any] = {}
        for m in self._metrics:
            res = m.update(m.compute(*(outs + labels)))
            for n, v in zip(m.name(), _as_list(res)):
                logs[n] = float(v)
        return logs

    def train_batch(self, inputs: Any, labels: Any = None, update: bool = True) -> Any:
        """One optimisation step on a batch (tensors or numpy arrays); returns ``[loss]`` as a 0-d
        numpy array, and with metrics ``([loss], [their batch values])``, as Paddle does."""
        if self._optimizer is None:
            raise OpArgumentError("[Model.train_batch] no optimizer: call prepare(optimizer, loss) first")
        self.network.train()
        ins, labs = _tensors(inputs), _tensors(labels)
        outs = self._forward(ins)
        loss = self._compute_loss(outs, labs)
        if self._scaler is not None:
            self._scaler.scale(loss).backward()
            if update:
                self._scaler.step(self._optimizer)
                self._scaler.update()
        else:
            loss.backward()
            if update:
                self._optimizer.step()
        if update:
            self._optimizer.clear_grad()
        metrics = self._update_metrics(outs, labs)
        value = [np.asarray(loss.item(), dtype=np.float32)]  # Paddle's: a 0-d array per loss
        return value if not metrics else (value, list(metrics.values()))

    @no_grad()
    def eval_batch(self, inputs: Any, labels: Any = None) -> Any:
        """The loss (a 0-d float32 numpy array in a list, as Paddle's) and, with metrics, their
        batch values, of a batch (tensors or numpy arrays) in eval mode.

        >>> import numpy as np, framework as fw
        >>> m = fw.Model(fw.nn.Linear(2, 3))
        >>> m.prepare(loss=fw.nn.CrossEntropyLoss())
        >>> loss = m.eval_batch([np.ones((4, 2), "float32")], [np.zeros((4, 1), "int64")])
        >>> type(loss[0]).__name__, loss[0].dtype, loss[0].shape
        ('ndarray', dtype('float32'), ())
        """
        self.network.eval()
        ins, labs = _tensors(inputs), _tensors(labels)
        outs = self._forward(ins)
        loss = (
            [np.asarray(self._compute_loss(outs, labs).item(), dtype=np.float32)]
            if self._loss is not None
            else []
        )
        metrics = self._update_metrics(outs, labs)
        return loss if not metrics else (loss, list(metrics.values()))

    @no_grad()
    def predict_batch(self, inputs: Any) -> list[np.ndarray]:
        self.network.eval()
        return [o.numpy() for o in self._forward(_tensors(inputs))]

    # -- loops ------------------------------------------------------------------------------
    def _loader(self, data: Any, batch_size: int, shuffle: bool, drop_last: bool, num_workers: int) -> Any:
        from ..io import DataLoader, Dataset, IterableDataset

        if data is None:
            return None
        if isinstance(data, (Dataset, IterableDataset)):
            return DataLoader(
                data,
                batch_size=batch_size,
                shuffle=shuffle and not isinstance(data, IterableDataset),
                drop_last=drop_last,
                num_workers=num_workers,
            )
        return data  # a DataLoader or any iterable of batches

    def _callbacks(
        self,
        callbacks: Any,
        verbose: int,
        log_freq: int,
        params: dict[str, Any],
        train: tuple[int, str | None] | None = None,
    ) -> list[Callback]:
        cbs = _as_list(callbacks)
        if verbose and not any(isinstance(c, ProgBarLogger) for c in cbs):
            cbs = [ProgBarLogger(log_freq, verbose)] + cbs
        if train is not None:  # fit: Paddle's defaults, checkpoints and the scheduler stepped per batch
            if not any(isinstance(c, ModelCheckpoint) for c in cbs):
                cbs = cbs + [ModelCheckpoint(*train)]
            if not any(isinstance(c, LRScheduler) for c in cbs):
                cbs = cbs + [LRScheduler()]
        for c in cbs:
            c.set_model(self)
            c.set_params(params)
        return cbs

    def fit(
        self,
        train_data: Any = None,
        eval_data: Any = None,
        batch_size: int = 1,
        epochs: int = 1,
        eval_freq: int = 1,
        log_freq: int = 10,
        save_dir: str | None = None,
        save_freq: int = 1,
        verbose: int = 2,
        drop_last: bool = False,
        shuffle: bool = True,
        num_workers: int = 0,
        callbacks: Any = None,
        accumulate_grad_batches: int = 1,
        num_iters: int | None = None,
    ) -> None:
        """Train for ``epochs`` over ``train_data`` (a Dataset or DataLoader), evaluating on
        ``eval_data`` every ``eval_freq`` epochs and saving to ``save_dir`` every ``save_freq``."""
        if train_data is None:
            raise OpArgumentError("[Model.fit] train_data is required")
        loader = self._loader(train_data, batch_size, shuffle, drop_last, num_workers)
        steps = len(loader) if hasattr(loader, "__len__") else None
        cbs = self._callbacks(
            callbacks,
            verbose,
            log_freq,
            {"epochs": epochs, "steps": steps, "batch_size": batch_size, "verbose": verbose},
            train=(save_freq, save_dir),
        )
        self.stop_training = False
        for c in cbs:
            c.on_train_begin()
        it = 0
        logs: dict[str, Any] = {}
        for epoch in range(epochs):
            for m in self._metrics:
                m.reset()
            for c in cbs:
                c.on_epoch_begin(epoch)
            for step, batch in enumerate(loader):
                for c in cbs:
                    c.on_train_batch_begin(step)
                ins, labs = self._split(batch, True)
                update = (step + 1) % max(1, accumulate_grad_batches) == 0 or (
                    steps is not None and step + 1 == steps
                )
                res = self.train_batch(ins, labs, update=update)
                loss = res[0] if isinstance(res, tuple) else res
                logs = {"loss": float(loss[0]), "step": step, "batch_size": batch_size}
                for m in self._metrics:
                    for n, v in zip(m.name(), _as_list(m.accumulate())):
                        logs[n] = float(v)
                for c in cbs:
                    c.on_train_batch_end(step, logs)
                it += 1
                if num_iters is not None and it >= num_iters:
                    break
            for c in cbs:
                c.on_epoch_end(epoch, logs)
            if eval_data is not None and (epoch + 1) % eval_freq == 0:
                self.evaluate(eval_data, batch_size, log_freq, verbose, num_workers, cbs)
            if self.stop_training or (num_iters is not None and it >= num_iters):
                break
        for c in cbs:
            c.on_train_end(logs)

    def evaluate(
        self,
        eval_data: Any,
        batch_size: int = 1,
        log_freq: int = 10,
        verbose: int = 2,
        num_workers: int = 0,
        callbacks: Any = None,
        num_samples: int | None = None,
    ) -> dict[str, Any]:
        """Mean loss (weighted by batch size) and the metrics over ``eval_data``: ``{"loss": [x], "acc": y, ...}``."""
        loader = self._loader(eval_data, batch_size, False, False, num_workers)
        cbs = (
            callbacks
            if isinstance(callbacks, list)
            and all(isinstance(c, Callback) for c in callbacks)
            and callbacks
            and callbacks[0].model is self
            else self._callbacks(
                callbacks, verbose, log_freq, {"steps": len(loader) if hasattr(loader, "__len__") else None}
            )
        )
        for m in self._metrics:
            m.reset()
        for c in cbs:
            c.on_eval_begin()
        total, count, seen = 0.0, 0, 0
        for step, batch in enumerate(loader):
            ins, labs = self._split(batch, True)
            res = self.eval_batch(ins, labs)
            loss = res[0] if isinstance(res, tuple) else res
            n = ins[0].shape[0] if ins[0].ndim else 1
            if loss:
                total += float(loss[0]) * n
                count += n
            seen += n
            for c in cbs:
                c.on_eval_batch_end(step, {"loss": loss})
            if num_samples is not None and seen >= num_samples:
                break
        logs: dict[str, Any] = {}
        if count:
            logs["loss"] = [total / count]
        for m in self._metrics:
            for n_, v in zip(m.name(), _as_list(m.accumulate())):
                logs[n_] = float(v)
        for c in cbs:
            c.on_eval_end(logs)
        return logs

    def predict(
        self,
        test_data: Any,
        batch_size: int = 1,
        num_workers: int = 0,
        stack_outputs: bool = False,
        verbose: int = 1,
        callbacks: Any = None,
    ) -> list[Any]:
        """The network's outputs over ``test_data``: one list per output, of per-batch arrays
        (``stack_outputs=True``: one array per output, batches concatenated)."""
        loader = self._loader(test_data, batch_size, False, False, num_workers)
        outs: list[list[np.ndarray]] = []
        for batch in loader:
            ins, _ = self._split(batch, False)
            res = self.predict_batch(ins)
            if not outs:
                outs = [[] for _ in res]
            for lst, r in zip(outs, res):
                lst.append(r)
        return [np.concatenate(o, axis=0) for o in outs] if stack_outputs else outs

    # -- persistence ------------------------------------------------------------------------
    def save(self, path: str, training: bool = True) -> None:
        """Save for training or for inference.

        ``training=True``: ``path.pdparams`` (the network's state, in Paddle's pickle format) and
        ``path.pdopt`` (the optimizer's). ``training=False``: an inference program with
        ``fw.jit.save(network, path, input_spec=inputs)``, which needs ``Model(net, inputs=[InputSpec...])``;
        ``fw.jit.load`` and ``fw.inference.Config(path)`` read it. Paddle 3's inference files
        ``path.json`` and ``path.pdiparams`` are written beside it (``format="paddle"``; a
        warning names the op when the network holds one Paddle's format cannot take).

        Example:
            >>> import framework as fw, os, tempfile
            >>> folder = tempfile.TemporaryDirectory()
            >>> model = fw.Model(fw.nn.Linear(2, 1), inputs=[fw.static.InputSpec([None, 2], "float32", "x")])
            >>> model.save(os.path.join(folder.name, "infer"), training=False)
            >>> fw.jit.load(os.path.join(folder.name, "infer"))(fw.ones([3, 2])).shape
            (3, 1)
            >>> folder.cleanup()
        """
        d = os.path.dirname(path)
        if d:
            os.makedirs(d, exist_ok=True)
        if not training:
            specs = [s for s in self._inputs if isinstance(s, InputSpec)]
            if not specs or len(specs) != len(self._inputs):
                raise OpArgumentError(
                    "[Model.save] training=False saves an inference program, which needs the inputs' specs: "
                    "build the model as fw.Model(net, inputs=[fw.static.InputSpec([None, ...], 'float32', 'x')])"
                )
            _jit_save(self.network, path, input_spec=specs)
            try:  # Paddle 3's inference files beside Oarlock's, for real Paddle's Predictor
                _jit_save(self.network, path, input_spec=specs, format="paddle")
            except PaddleExportError as exc:
                warnings.warn(
                    f"[Model.save] wrote {path}.oarlock only, not Paddle's files: {exc}", stacklevel=2
                )
            return
        _save(self.network.state_dict(), path + ".pdparams")
        if training and self._optimizer is not None:
            _save(self._optimizer.state_dict(), path + ".pdopt")

    def load(self, path: str, skip_mismatch: bool = False, reset_optimizer: bool = False) -> None:
        if not os.path.exists(path + ".pdparams"):
            raise OpArgumentError(
                f"[Model.load] {path}.pdparams does not exist; pass the path given to Model.save (without the suffix)"
            )
        self.network.set_state_dict(_load(path + ".pdparams"))
        if not reset_optimizer and self._optimizer is not None and os.path.exists(path + ".pdopt"):
            self._optimizer.set_state_dict(_load(path + ".pdopt"))

    def summary(self, input_size: Any = None, dtype: Any = None) -> dict[str, int]:
        from .summary import summary

        return summary(self.network, input_size or [s for s in self._inputs] or None, dtype)
