"""One symbolic program for ``None`` dims against a static program per size, side by side.

    python benchmarks/dynamic_dims.py [--device cpu] [--repeat 7] [--number 50]

A TransformerEncoderLayer(64, 4, 128) in eval mode under ``to_static`` with
``InputSpec([None, None, 64])`` (dynamic batch and length: one program, the dims ``b*t`` of
its reshapes symbolic) and with ``InputSpec([8, 32, 64])`` (what a specialised size runs),
both called on ``[8, 32, 64]``: medians of ``--repeat`` runs of ``--number`` calls, the two
taking turns within each repeat, and the first call (tracing at the probe sizes, compiling).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
import warnings

os.environ.setdefault("OARLOCK_COMPILE_BACKGROUND", "0")  # time built kernels, not a cold cache's stand-ins

import numpy as np  # noqa: E402

import framework as fw  # noqa: E402
from framework.static import InputSpec  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--number", type=int, default=50)
    a = ap.parse_args()
    warnings.simplefilter("ignore")
    fw.seed(0)
    layer = fw.nn.TransformerEncoderLayer(64, 4, 128, dropout=0.0).to(a.device)
    layer.eval()
    fns = {
        "symbolic [None, None, 64]": fw.jit.to_static(
            layer.forward, input_spec=[InputSpec([None, None, 64])]
        ),
        "static [8, 32, 64]": fw.jit.to_static(layer.forward, input_spec=[InputSpec([8, 32, 64])]),
    }
    x = fw.to_tensor(np.random.default_rng(0).random((8, 32, 64), np.float32), device=a.device)
    first, runs = {}, {k: [] for k in fns}
    with fw.no_grad():
        for k, f in fns.items():
            t0 = time.perf_counter()
            f(x).numpy()
            first[k] = time.perf_counter() - t0
        for _ in range(a.repeat):
            for k, f in fns.items():
                t0 = time.perf_counter()
                for _ in range(a.number):
                    out = f(x)
                out.numpy()
                runs[k].append((time.perf_counter() - t0) / a.number)
    base = statistics.median(runs["static [8, 32, 64]"])
    print(f"TransformerEncoderLayer(64, 4, 128) on [8, 32, 64], {a.device}")
    for k in fns:
        m = statistics.median(runs[k])
        print(f"  {k:26s} {m * 1e3:8.3f} ms/call  {m / base:5.2f}x static   first call {first[k]:.2f} s")


if __name__ == "__main__":
    main()
