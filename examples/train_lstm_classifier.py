"""An LSTM text classifier, written as a Paddle user writes one: Dataset -> DataLoader ->
Model.prepare/fit, on synthetic token sequences made here.

    python examples/train_lstm_classifier.py                     # cpu, float32
    python examples/train_lstm_classifier.py --amp bf16          # cpu, bfloat16 autocast (O1)
    OARLOCK_STRICT_KERNELS=1 python examples/train_lstm_classifier.py --device opencl
    python examples/train_lstm_classifier.py --device opencl --amp fp16

The task: each sequence of 16 tokens (vocabulary 64) belongs to one of 4 classes; half of its
tokens come from its class's band of 16 tokens, the rest are noise from the whole vocabulary.
Embedding(64, 32) -> LSTM(32, 64) -> mean over time -> Linear(64, 4). Target: the mean training
loss of the last epoch below TARGET_LOSS (0.25; chance is ln 4 = 1.39) after the default 4
epochs of 1,024 sequences; it gets there in a few seconds on a cpu. The last line reports the
final loss, the evaluation accuracy and the CPU fallbacks (``{}``: every op ran on the device).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import framework as fw  # noqa: E402
from framework import nn  # noqa: E402

TARGET_LOSS = 0.25
VOCAB, SEQ_LEN, CLASSES, BAND = 64, 16, 4, 16
AMP = {"none": None, "bf16": "bfloat16", "fp16": "float16"}


class TokenSequences(fw.io.Dataset):
    """``n`` synthetic sequences: (int64 tokens [SEQ_LEN], int64 label)."""

    def __init__(self, n: int, seed: int) -> None:
        rng = np.random.default_rng(seed)
        self.labels = rng.integers(0, CLASSES, n)
        band = rng.integers(0, BAND, (n, SEQ_LEN)) + self.labels[:, None] * BAND
        noise = rng.integers(0, VOCAB, (n, SEQ_LEN))
        self.tokens = np.where(rng.random((n, SEQ_LEN)) < 0.5, band, noise).astype(np.int64)

    def __getitem__(self, i: int) -> tuple[np.ndarray, np.int64]:
        return self.tokens[i], np.int64(self.labels[i])

    def __len__(self) -> int:
        return len(self.labels)


class LSTMClassifier(nn.Layer):
    def __init__(self, vocab: int = VOCAB, embed: int = 32, hidden: int = 64, classes: int = CLASSES) -> None:
        super().__init__()
        self.embedding = nn.Embedding(vocab, embed)
        self.lstm = nn.LSTM(embed, hidden, num_layers=1, direction="forward")
        self.fc = nn.Linear(hidden, classes)

    def forward(self, tokens: fw.Tensor) -> fw.Tensor:
        out, _ = self.lstm(self.embedding(tokens))  # [batch, time, hidden]
        return self.fc(out.mean(axis=1))


class LossHistory(fw.callbacks.Callback):
    """Records the training loss of every step (what the tests compare between runs)."""

    def __init__(self) -> None:
        super().__init__()
        self.losses: list[float] = []
        self.epoch_losses: list[list[float]] = []

    def on_epoch_begin(self, epoch: int, logs: dict | None = None) -> None:
        self.epoch_losses.append([])

    def on_train_batch_end(self, step: int, logs: dict | None = None) -> None:
        loss = float(logs["loss"])
        self.losses.append(loss)
        self.epoch_losses[-1].append(loss)


def run(argv: list[str] | None = None) -> dict:
    """Train as the command line says; return the per-step losses, the last epoch's mean
    loss, the evaluation accuracy and the fallbacks."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cpu", help="cpu, opencl, opencl:1, ...")
    p.add_argument("--amp", default="none", choices=sorted(AMP), help="autocast dtype (O1)")
    p.add_argument("--epochs", type=int, default=4)
    p.add_argument("--samples", type=int, default=1024, help="training sequences")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument(
        "--num-workers", type=int, default=2, help="DataLoader worker processes (0: load in this process)"
    )
    p.add_argument("--steps", type=int, default=None, help="stop after this many steps (num_iters)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--verbose", type=int, default=1)
    args = p.parse_args(argv)

    fw.set_device(args.device)
    fw.seed(args.seed)
    fw.reset_fallback_stats()
    train = fw.io.DataLoader(
        TokenSequences(args.samples, args.seed),
        batch_size=args.batch_size,
        shuffle=True,
        drop_last=True,
        num_workers=args.num_workers,
    )
    test = fw.io.DataLoader(TokenSequences(256, args.seed + 1), batch_size=128, num_workers=0)

    model = fw.Model(LSTMClassifier())
    optim = fw.optimizer.Adam(learning_rate=0.01, parameters=model.parameters())
    amp = (
        None
        if AMP[args.amp] is None
        else {"level": "O1", "dtype": AMP[args.amp], "init_loss_scaling": 1024.0}
    )
    model.prepare(optim, nn.CrossEntropyLoss(), fw.metric.Accuracy(), amp_configs=amp)
    history = LossHistory()
    t0 = time.perf_counter()
    model.fit(train, epochs=args.epochs, callbacks=[history], verbose=args.verbose, num_iters=args.steps)
    elapsed = time.perf_counter() - t0
    acc = model.evaluate(test, verbose=0)["acc"]
    final = float(np.mean(history.epoch_losses[-1]))
    result = {
        "losses": history.losses,
        "final_loss": final,
        "acc": acc,
        "fallbacks": fw.fallback_stats(),
        "seconds": elapsed,
    }
    verdict = "reached" if final < TARGET_LOSS else "NOT reached"
    print(
        f"final loss {final:.4f} (target < {TARGET_LOSS}: {verdict}), eval accuracy {acc:.3f}, {len(history.losses)} steps in "
        f"{elapsed:.1f}s on {args.device} amp={args.amp}; fallbacks: {result['fallbacks']}"
    )
    return result


if __name__ == "__main__":
    run()
