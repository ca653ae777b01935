"""A small Vision Transformer image classifier, written as a Paddle user writes one:
Dataset -> DataLoader -> Model.prepare/fit, on synthetic images made here.

    python examples/train_vit.py                      # cpu, float32
    python examples/train_vit.py --amp bf16           # cpu, bfloat16 autocast (O1)
    OARLOCK_STRICT_KERNELS=1 python examples/train_vit.py --device opencl
    python examples/train_vit.py --device opencl --amp fp16

The task: 16x16 grey images of stripes in one of four orientations (horizontal, vertical,
diagonal, anti-diagonal; the class), at a random phase and contrast, under Gaussian noise.
The model: a Conv2D patch embedding (4x4 patches -> 16 tokens of width 32) plus a learned
position embedding, two pre-norm TransformerEncoderLayers (4 heads), LayerNorm, mean over
tokens, Linear(32, 4). Target: the mean training loss of the last epoch below TARGET_LOSS
(0.3; chance is ln 4 = 1.39) after the default 3 epochs of 768 images (36 steps); it gets
there in seconds on a cpu. The last line reports the final loss, the evaluation accuracy and the CPU
fallbacks (``{}``: every op ran on the device).
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

TARGET_LOSS = 0.3
SIZE, PATCH, CLASSES = 16, 4, 4
AMP = {"none": None, "bf16": "bfloat16", "fp16": "float16"}


class StripeImages(fw.io.Dataset):
    """``n`` synthetic images: (float32 [1, SIZE, SIZE], int64 label)."""

    def __init__(self, n: int, seed: int) -> None:
        rng = np.random.default_rng(seed)
        self.labels = rng.integers(0, CLASSES, n)
        yy, xx = np.mgrid[0:SIZE, 0:SIZE]
        coord = np.stack([yy, xx, yy + xx, yy - xx])[self.labels]  # the stripes run along this
        phase = rng.uniform(0, 2 * np.pi, (n, 1, 1))
        contrast = rng.uniform(0.5, 1.5, (n, 1, 1))
        img = contrast * np.sin(coord * (np.pi / 2) + phase) + rng.standard_normal((n, SIZE, SIZE))
        self.images = img[:, None].astype(np.float32)

    def __getitem__(self, i: int) -> tuple[np.ndarray, np.int64]:
        return self.images[i], np.int64(self.labels[i])

    def __len__(self) -> int:
        return len(self.labels)


class ViT(nn.Layer):
    def __init__(self, dim: int = 32, depth: int = 2, heads: int = 4, classes: int = CLASSES) -> None:
        super().__init__()
        self.patch_embed = nn.Conv2D(1, dim, kernel_size=PATCH, stride=PATCH)
        tokens = (SIZE // PATCH) ** 2
        self.pos_embed = self.create_parameter(
            [1, tokens, dim], default_initializer=nn.initializer.Normal(std=0.02)
        )
        self.blocks = nn.LayerList(
            [
                nn.TransformerEncoderLayer(
                    dim, heads, dim * 2, dropout=0.0, activation="gelu", normalize_before=True
                )
                for _ in range(depth)
            ]
        )
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, x: fw.Tensor) -> fw.Tensor:
        x = self.patch_embed(x).flatten(2).transpose([0, 2, 1]) + self.pos_embed  # [batch, tokens, dim]
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x).mean(axis=1))


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
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--samples", type=int, default=768, help="training images")
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
        StripeImages(args.samples, args.seed),
        batch_size=args.batch_size,
        shuffle=True,
        drop_last=True,
        num_workers=args.num_workers,
    )
    test = fw.io.DataLoader(StripeImages(256, args.seed + 1), batch_size=128, num_workers=0)

    model = fw.Model(ViT())
    optim = fw.optimizer.AdamW(learning_rate=3e-3, parameters=model.parameters(), weight_decay=0.01)
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
