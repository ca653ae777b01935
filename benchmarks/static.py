"""Static programs against eager mode: per-op overhead and an MLP forward, side by side in one run.

    python benchmarks/static.py [--device cpu] [--repeat 7] [--number 300]

Cases (medians over repeats of the mean time per call):

- ``chain N``: N small elementwise ops (alternating exp/neg/mul/add on 16 floats); the
  per-op figure is the time per call divided by N. numpy's own calls on the same chain are
  the floor (what the kernels cost with no framework at all).
- ``mlp``: the forward of Linear(784, 1024) → ReLU → Linear(1024, 1024) → ReLU →
  Linear(1024, 10) at batch 128, eager vs ``fw.jit.to_static`` (both under ``fw.no_grad``).

torch eager is shown when importable (one thread, as the numpy kernels use).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import framework as fw
from framework.static import InputSpec

CHAIN = 32


def bench(fn, number: int, repeat: int) -> float:
    fn()
    fn()
    runs = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        runs.append((time.perf_counter() - t0) / number * 1e6)
    return statistics.median(runs)


def chain(x, c, exp, mul, add, neg):
    for k in range(CHAIN):
        x = (exp, neg, lambda v: mul(v, c), lambda v: add(v, c))[k % 4](x)
    return x


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--number", type=int, default=300)
    args = ap.parse_args()
    try:
        import torch

        torch.set_num_threads(1)
    except ImportError:
        torch = None
    dev = args.device
    rng = np.random.default_rng(0)
    a = (rng.random(16, dtype=np.float32) * 0.1).astype(np.float32)
    c = np.full(16, 0.5, np.float32)
    fa, fc = fw.to_tensor(a, device=dev), fw.to_tensor(c, device=dev)

    def eager_chain(x):
        return chain(x, fc, fw.exp, fw.multiply, fw.add, fw.neg)

    static_chain = fw.jit.to_static(eager_chain, input_spec=[InputSpec([16])])
    rows = []
    with fw.no_grad():
        np.testing.assert_allclose(static_chain(fa).numpy(), eager_chain(fa).numpy(), rtol=1e-5)
        t_eager = bench(lambda: eager_chain(fa), args.number, args.repeat)
        t_static = bench(lambda: static_chain(fa), args.number, args.repeat)
    out = np.empty_like(a)

    def np_chain():
        x = a
        for k in range(CHAIN):
            m = k % 4
            if m == 0:
                x = np.exp(x, out=out)
            elif m == 1:
                x = np.negative(x, out=out)
            elif m == 2:
                x = np.multiply(x, c, out=out)
            else:
                x = np.add(x, c, out=out)
        return x

    t_np = bench(np_chain, args.number, args.repeat)
    t_torch = None
    if torch is not None:
        ta, tc = torch.from_numpy(a), torch.from_numpy(c)
        t_torch = bench(
            lambda: chain(ta, tc, torch.exp, torch.mul, torch.add, torch.neg), args.number, args.repeat
        )
    rows.append(
        (
            f"chain {CHAIN}, per op",
            t_eager / CHAIN,
            t_static / CHAIN,
            t_np / CHAIN,
            None if t_torch is None else t_torch / CHAIN,
        )
    )

    fw.manual_seed(0)
    net = fw.nn.Sequential(
        fw.nn.Linear(784, 1024), fw.nn.ReLU(), fw.nn.Linear(1024, 1024), fw.nn.ReLU(), fw.nn.Linear(1024, 10)
    ).to(dev)
    x = fw.to_tensor(rng.standard_normal((128, 784)).astype(np.float32), device=dev)
    snet = fw.nn.Sequential(*[layer for layer in net.children()])  # the same parameters, converted below
    fw.jit.to_static(snet, input_spec=[InputSpec([None, 784])])
    n_mlp = max(args.number // 10, 10)
    with fw.no_grad():
        np.testing.assert_allclose(snet(x).numpy(), net(x).numpy(), rtol=1e-4, atol=1e-5)
        m_eager = bench(lambda: net(x), n_mlp, args.repeat)
        m_static = bench(lambda: snet(x), n_mlp, args.repeat)
    m_torch = None
    if torch is not None:
        ws = [torch.from_numpy(p.numpy()) for p in net.parameters()]
        tx = torch.from_numpy(x.numpy())

        def tmlp():
            h = torch.relu(tx @ ws[0] + ws[1])
            h = torch.relu(h @ ws[2] + ws[3])
            return h @ ws[4] + ws[5]

        with torch.no_grad():
            m_torch = bench(tmlp, n_mlp, args.repeat)
    rows.append(("mlp 784-1024-1024-10 b128 fwd", m_eager, m_static, None, m_torch))

    print(f"device {dev}; median of {args.repeat} repeats; microseconds")
    print(f"{'case':32s} {'eager':>9s} {'static':>9s} {'numpy':>9s} {'torch':>9s} {'eager/static':>13s}")
    for name, e, s, n, t in rows:
        fmt = lambda v: f"{v:9.2f}" if v is not None else f"{'-':>9s}"  # noqa: E731
        print(f"{name:32s} {fmt(e)} {fmt(s)} {fmt(n)} {fmt(t)} {e / s:13.2f}")


if __name__ == "__main__":
    main()
