"""Training-step benchmark on the CPU plugin, side by side with torch eager (when importable)
in one run: median milliseconds per step and the ratio.

    python benchmarks/train_step.py [--repeats 30] [--device cpu] [--threads N]

- MLP 784-1024-1024-10, batch 128, SGD, float32: forward, cross-entropy, backward, step.
- One Llama block (dim 256, 4 heads, seq 128, batch 8, SwiGLU hidden 688): forward + backward.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

if "--threads" in sys.argv:  # must be set before numpy/torch load their BLAS
    _n = sys.argv[sys.argv.index("--threads") + 1]
    # OARLOCK_NUM_THREADS: the cpu plugin's budget (it then owns BLAS's threads, plugins/cpu/threads.py)
    os.environ.update(OPENBLAS_NUM_THREADS=_n, OMP_NUM_THREADS=_n, MKL_NUM_THREADS=_n, OARLOCK_NUM_THREADS=_n)

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import framework as fw  # noqa: E402
import framework.nn.functional as F  # noqa: E402
from conformance.models import LlamaBlock  # noqa: E402

B_MLP, DIMS = 128, (784, 1024, 1024, 10)
B, S, D, H, HID = 8, 128, 256, 4, 688


def timed(fn, repeats: int, warmup: int = 3) -> tuple[float, float]:
    """Median wall-clock ms and median process CPU ms per call (CPU time is steadier on a
    loaded machine; with one BLAS thread it is the work done)."""
    for _ in range(warmup):
        fn()
    wall, cpu = [], []
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        wall.append((time.perf_counter() - t0) * 1e3)
        cpu.append((time.process_time() - c0) * 1e3)
    return statistics.median(wall), statistics.median(cpu)


# -- oarlock --------------------------------------------------------------------------------
def oarlock_mlp(device: str):
    fw.seed(0)
    with fw.device(device):
        layers = [fw.nn.Linear(a, b) for a, b in zip(DIMS[:-1], DIMS[1:])]
        params = [p for layer in layers for p in layer.parameters()]
        opt = fw.optim.SGD(learning_rate=0.01, parameters=params)
        rng = np.random.default_rng(0)
        x = fw.to_tensor(rng.standard_normal((B_MLP, DIMS[0])).astype(np.float32), device=device)
        y = fw.to_tensor(rng.integers(0, 10, B_MLP), device=device)

    def step() -> None:
        h = x
        for i, layer in enumerate(layers):
            h = layer(h)
            if i < len(layers) - 1:
                h = F.relu(h)
        loss = F.cross_entropy(h, y)
        loss.backward()
        opt.step()
        opt.clear_grad()
        loss.item()

    return step


def oarlock_llama(device: str):
    fw.seed(0)
    with fw.device(device):
        blk = LlamaBlock(D, H, HID)
        cos, sin = F.rotary_cos_sin(S, D // H, dtype="float32", device=device)
        x = fw.to_tensor(
            np.random.default_rng(0).standard_normal((B, S, D)).astype(np.float32), device=device
        )
        params = blk.parameters()

    def step() -> None:
        out = blk(x, cos, sin)
        out.sum().backward()
        params[0].grad.numpy()
        blk.clear_gradients()

    return step


# -- torch ----------------------------------------------------------------------------------
def torch_mlp():
    import torch

    torch.manual_seed(0)
    layers = [torch.nn.Linear(a, b) for a, b in zip(DIMS[:-1], DIMS[1:])]
    params = [p for layer in layers for p in layer.parameters()]
    opt = torch.optim.SGD(params, lr=0.01)
    rng = np.random.default_rng(0)
    x = torch.from_numpy(rng.standard_normal((B_MLP, DIMS[0])).astype(np.float32))
    y = torch.from_numpy(rng.integers(0, 10, B_MLP))

    def step() -> None:
        h = x
        for i, layer in enumerate(layers):
            h = layer(h)
            if i < len(layers) - 1:
                h = torch.relu(h)
        loss = torch.nn.functional.cross_entropy(h, y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        loss.item()

    return step


def torch_llama():
    import torch

    torch.manual_seed(0)
    hd = D // H
    lin = lambda a, b: torch.nn.Linear(a, b, bias=False)  # noqa: E731
    qkv, proj, gate, up, down = lin(D, 3 * D), lin(D, D), lin(D, HID), lin(D, HID), lin(HID, D)
    w1, w2 = torch.ones(D, requires_grad=True), torch.ones(D, requires_grad=True)
    inv = 10000.0 ** (-torch.arange(0, hd, 2, dtype=torch.float64) / hd)
    fr = torch.arange(S, dtype=torch.float64)[:, None] * inv[None]
    emb = torch.cat([fr, fr], -1)
    cos, sin = emb.cos().float(), emb.sin().float()
    x = torch.from_numpy(np.random.default_rng(0).standard_normal((B, S, D)).astype(np.float32))
    params = [p for m in (qkv, proj, gate, up, down) for p in m.parameters()] + [w1, w2]

    def rms(t, w):
        return t * torch.rsqrt(t.pow(2).mean(-1, keepdim=True) + 1e-6) * w

    def rope(t):
        t1, t2 = t.chunk(2, -1)
        return t * cos + torch.cat([-t2, t1], -1) * sin

    def step() -> None:
        q, k, v = qkv(rms(x, w1)).reshape(B, S, 3, H, hd).permute(2, 0, 3, 1, 4)
        a = torch.nn.functional.scaled_dot_product_attention(rope(q), rope(k), v, is_causal=True)
        h = x + proj(a.transpose(1, 2).reshape(B, S, D))
        m = rms(h, w2)
        out = h + down(torch.nn.functional.silu(gate(m)) * up(m))
        out.sum().backward()
        params[0].grad.numpy()
        for p in params:
            p.grad = None

    return step


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--device", default="cpu")
    ap.add_argument(
        "--threads",
        type=int,
        default=None,
        help="threads for both: torch's, Oarlock's budget (default: their own)",
    )
    args = ap.parse_args()
    try:
        import torch

        if args.threads:
            torch.set_num_threads(args.threads)
        torch_ok = True
        threads = torch.get_num_threads()
    except ImportError:
        torch_ok, threads = False, 0
    print(
        f"oarlock on {args.device}; torch {'eager, ' + str(threads) + ' threads' if torch_ok else 'not installed'}; "
        f"median of {args.repeats} steps; OARLOCK_COMPILE={os.environ.get('OARLOCK_COMPILE', '1')}"
    )
    print(
        f"{'benchmark':<38}{'oarlock ms':>11}{'torch ms':>10}{'ratio':>7}{'oarlock cpu ms':>16}{'torch cpu ms':>14}{'cpu ratio':>10}"
    )
    for name, ours, theirs in (
        ("MLP 784-1024-1024-10 b128 SGD step", oarlock_mlp, torch_mlp),
        ("Llama block d256 h4 s128 b8 fwd+bwd", oarlock_llama, torch_llama),
    ):
        o_fn = ours(args.device)
        t_fn = theirs() if torch_ok else None
        o_runs, t_runs = [], []
        # interleave the two so both see the same machine load
        for _ in range(3):
            o_runs.append(timed(o_fn, max(1, args.repeats // 3)))
            if t_fn is not None:
                t_runs.append(timed(t_fn, max(1, args.repeats // 3)))
        ow, oc = (statistics.median(r[i] for r in o_runs) for i in (0, 1))
        tw, tc = (
            (statistics.median(r[i] for r in t_runs) for i in (0, 1))
            if t_runs
            else (float("nan"), float("nan"))
        )
        print(f"{name:<38}{ow:>11.2f}{tw:>10.2f}{ow / tw:>7.2f}{oc:>16.2f}{tc:>14.2f}{oc / tc:>10.2f}")


if __name__ == "__main__":
    main()
