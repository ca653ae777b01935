"""Callbacks for :class:`~framework.Model` (Paddle's ``paddle.callbacks``).

:class:`Callback` is the base class (override the hooks you need), :class:`ProgBarLogger`
prints progress and :class:`EarlyStopping` stops ``fit`` when a metric stops improving.

>>> import framework as fw
>>> class CountEpochs(fw.callbacks.Callback):
...     def __init__(self):
...         super().__init__()
...         self.epochs = 0
...     def on_epoch_end(self, epoch, logs=None):
...         self.epochs += 1
>>> x = fw.ones([8, 4])
>>> data = fw.io.TensorDataset([x, fw.zeros([8], dtype="int64")])
>>> model = fw.Model(fw.nn.Linear(4, 2))
>>> model.prepare(fw.optimizer.SGD(0.1, parameters=model.parameters()), fw.nn.CrossEntropyLoss())
>>> count = CountEpochs()
>>> model.fit(data, epochs=3, batch_size=4, verbose=0, callbacks=[count])
>>> count.epochs
3
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

from ..optimizer.lr import LRScheduler as _Schedule


class Callback:
    """Hooks called by ``Model.fit/evaluate/predict``; ``self.model`` and ``self.params`` are
    set before training starts. Override the ones you need."""

    def __init__(self) -> None:
        self.model: Any = None
        self.params: dict[str, Any] = {}

    def set_params(self, params: dict[str, Any]) -> None:
        self.params = params

    def set_model(self, model: Any) -> None:
        self.model = model

    def on_train_begin(self, logs: dict | None = None) -> None: ...
    def on_train_end(self, logs: dict | None = None) -> None: ...
    def on_eval_begin(self, logs: dict | None = None) -> None: ...
    def on_eval_end(self, logs: dict | None = None) -> None: ...
    def on_predict_begin(self, logs: dict | None = None) -> None: ...
    def on_predict_end(self, logs: dict | None = None) -> None: ...
    def on_epoch_begin(self, epoch: int, logs: dict | None = None) -> None: ...
    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None: ...
    def on_train_batch_begin(self, step: int, logs: dict | None = None) -> None: ...
    def on_train_batch_end(self, step: int, logs: dict | None = None) -> None: ...
    def on_eval_batch_begin(self, step: int, logs: dict | None = None) -> None: ...
    def on_eval_batch_end(self, step: int, logs: dict | None = None) -> None: ...
    def on_predict_batch_begin(self, step: int, logs: dict | None = None) -> None: ...
    def on_predict_batch_end(self, step: int, logs: dict | None = None) -> None: ...


def _fmt(logs: dict | None) -> str:
    out = []
    for k, v in (logs or {}).items():
        if k in ("batch_size", "step"):
            continue
        v = v[0] if isinstance(v, (list, tuple)) and len(v) == 1 else v
        out.append(f"{k}: {v:.4f}" if isinstance(v, float) else f"{k}: {v}")
    return " - ".join(out)


class ProgBarLogger(Callback):
    """A one-line progress bar per epoch (``verbose=1``) or a line every ``log_freq`` steps
    (``verbose=2``); ``verbose=0`` prints nothing."""

    def __init__(self, log_freq: int = 1, verbose: int = 2, file: Any = None) -> None:
        super().__init__()
        self.log_freq, self.verbose, self.file = max(1, int(log_freq)), verbose, file

    def _out(self, text: str, end: str = "\n") -> None:
        f = self.file or sys.stdout
        f.write(text + end)
        f.flush()

    def on_epoch_begin(self, epoch: int, logs: dict | None = None) -> None:
        self._t0, self._epoch = time.perf_counter(), epoch
        if self.verbose:
            self._out(f"Epoch {epoch + 1}/{self.params.get('epochs', '?')}")

    def _bar(self, step: int, total: Any, logs: dict | None, final: bool = False) -> None:
        if self.verbose == 1 and isinstance(total, int) and total > 0:
            done = int(30 * min(step, total) / total)
            self._out(
                f"\rstep {step}/{total} [{'=' * done}{'.' * (30 - done)}] {_fmt(logs)}",
                end="\n" if final else "",
            )
        elif self.verbose >= 2 and (final or step % self.log_freq == 0):
            self._out(f"step {step}/{total} - {_fmt(logs)}")

    def on_train_batch_end(self, step: int, logs: dict | None = None) -> None:
        self._bar(step + 1, self.params.get("steps"), logs)

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        if self.verbose:
            self._bar(self.params.get("steps") or 0, self.params.get("steps"), logs, final=True)
            self._out(f"epoch {epoch + 1} done in {time.perf_counter() - self._t0:.2f} s")

    def on_eval_end(self, logs: dict | None = None) -> None:
        if self.verbose:
            self._out(f"Eval - {_fmt(logs)}")


class EarlyStopping(Callback):
    """Stop ``fit`` when ``monitor`` (an eval metric, e.g. ``loss`` or ``acc``) has not
    improved by ``min_delta`` for ``patience`` evaluations."""

    def __init__(
        self,
        monitor: str = "loss",
        mode: str = "auto",
        patience: int = 0,
        verbose: int = 1,
        min_delta: float = 0.0,
        baseline: float | None = None,
        save_best_model: bool = False,
    ) -> None:
        super().__init__()
        self.monitor, self.patience, self.min_delta, self.baseline = (
            monitor,
            patience,
            abs(min_delta),
            baseline,
        )
        self.mode = mode if mode != "auto" else ("max" if "acc" in monitor else "min")
        self.wait, self.best = 0, None
        self.stopped_epoch = -1

    def on_train_begin(self, logs: dict | None = None) -> None:
        self.wait, self.best = 0, self.baseline

    def on_eval_end(self, logs: dict | None = None) -> None:
        if not logs or self.monitor not in logs:
            return
        v = logs[self.monitor]
        v = float(v[0] if isinstance(v, (list, tuple)) else v)
        better = self.best is None or (
            v < self.best - self.min_delta if self.mode == "min" else v > self.best + self.min_delta
        )
        if better:
            self.best, self.wait = v, 0
        else:
            self.wait += 1
            if self.wait > self.patience:
                self.model.stop_training = True


class ModelCheckpoint(Callback):
    """Save the model (``Model.save``: ``.pdparams`` and ``.pdopt``) to ``save_dir/<epoch>`` every
    ``save_freq`` epochs (epochs 0, save_freq, 2*save_freq...) and to ``save_dir/final`` at the end.

    ``Model.fit(save_dir=..., save_freq=...)`` adds one when none is passed; ``save_dir=None``
    saves nothing.

    Example:
        >>> import framework as fw, os, tempfile
        >>> folder = tempfile.TemporaryDirectory()
        >>> data = fw.io.TensorDataset([fw.ones([4, 2]), fw.zeros([4], dtype="int64")])
        >>> model = fw.Model(fw.nn.Linear(2, 2))
        >>> model.prepare(fw.optimizer.SGD(0.1, parameters=model.parameters()), fw.nn.CrossEntropyLoss())
        >>> ckpt = fw.callbacks.ModelCheckpoint(save_freq=2, save_dir=folder.name)
        >>> model.fit(data, epochs=3, batch_size=2, verbose=0, callbacks=[ckpt])
        >>> sorted(os.listdir(folder.name))
        ['0.pdopt', '0.pdparams', '2.pdopt', '2.pdparams', 'final.pdopt', 'final.pdparams']
        >>> folder.cleanup()
    """

    def __init__(self, save_freq: int = 1, save_dir: str | None = None) -> None:
        super().__init__()
        if not isinstance(save_freq, int) or isinstance(save_freq, bool) or save_freq < 1:
            raise ValueError(f"[ModelCheckpoint] save_freq must be a positive int, got {save_freq!r}")
        self.save_freq, self.save_dir = save_freq, save_dir

    def _save(self, name: str) -> None:
        if self.model is not None and self.save_dir:
            self.model.save(os.path.join(self.save_dir, name))

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        if epoch % self.save_freq == 0:
            self._save(str(epoch))

    def on_train_end(self, logs: dict | None = None) -> None:
        self._save("final")


class LRScheduler(Callback):
    """Step the optimizer's learning-rate scheduler after every batch (``by_step``, the default)
    or every epoch (``by_epoch``). ``Model.fit`` adds one (by step) when none is passed.

    Example:
        >>> import framework as fw
        >>> data = fw.io.TensorDataset([fw.ones([4, 2]), fw.zeros([4], dtype="int64")])
        >>> model = fw.Model(fw.nn.Linear(2, 2))
        >>> sched = fw.optimizer.lr.StepDecay(0.1, step_size=1, gamma=0.5)
        >>> model.prepare(fw.optimizer.SGD(sched, parameters=model.parameters()), fw.nn.CrossEntropyLoss())
        >>> model.fit(data, epochs=2, batch_size=2, verbose=0, callbacks=[fw.callbacks.LRScheduler(by_step=False, by_epoch=True)])
        >>> sched.last_lr
        0.025
    """

    def __init__(self, by_step: bool = True, by_epoch: bool = False) -> None:
        super().__init__()
        if by_step and by_epoch:
            raise ValueError("[LRScheduler] by_step and by_epoch are exclusive; pass one of them True")
        self.by_step, self.by_epoch = by_step, by_epoch

    def _step(self) -> None:
        opt = getattr(self.model, "_optimizer", None)
        sched = getattr(opt, "_learning_rate", None)
        if isinstance(sched, _Schedule):
            sched.step()

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        if self.by_epoch:
            self._step()

    def on_train_batch_end(self, step: int, logs: dict | None = None) -> None:
        if self.by_step:
            self._step()
