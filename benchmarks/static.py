"""Static programs against eager mode and torch eager, side by side in one run.

    python benchmarks/static.py [--device cpu] [--threads 1] [--repeat 7] [--number 300]

Cases (medians over repeats, the variants of a case taking turns within each repeat; the
chain in microseconds per op, the rest in milliseconds):

- ``chain 32``: 32 small elementwise ops (alternating exp/neg/mul/add on 16 floats), per op.
  The program is traced op by op (no fusion: the executor's own overhead per instruction);
  ``chain 32, fused`` is the same function with the compiler's fusion on (one kernel).
  numpy's own calls with ``out=`` on the same chain are the floor.
- ``mlp fwd``: Linear(784, 1024) → ReLU → Linear(1024, 1024) → ReLU → Linear(1024, 10) at
  batch 128, forward only (``fw.no_grad``).
- ``mlp SGD step``: the same MLP's whole training step (cross-entropy, backward, SGD step,
  clear_grad); under ``to_static`` the step is one traced function with ``loss.backward()``
  and ``opt.step()`` inside (framework/jit/train_step.py).
- ``llama block fwd+bwd``: one Llama block (dim 256, 4 heads, seq 128, batch 8, SwiGLU
  hidden 688), forward and backward (``loss.backward()`` inside the static function).

Columns: eager; static (graph replay where the device runtime offers capture, as the
executor does by default); static with replay off (the bound instruction list); numpy;
torch eager (``--threads`` sets torch's and the BLAS threads; one by default). Peak memory of
the MLP step and the Llama block, static against eager, comes from ``fw.jit.memory_report``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

_THREADS = sys.argv[sys.argv.index("--threads") + 1] if "--threads" in sys.argv else "1"
os.environ.update(
    OPENBLAS_NUM_THREADS=_THREADS,
    OMP_NUM_THREADS=_THREADS,
    MKL_NUM_THREADS=_THREADS,
    OARLOCK_NUM_THREADS=_THREADS,
)  # OARLOCK_NUM_THREADS: the cpu plugin's thread budget (BLAS and generated kernels)

import numpy as np  # noqa: E402

os.environ.setdefault("OARLOCK_COMPILE_BACKGROUND", "0")  # time built kernels, not a cold cache's stand-ins
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import framework as fw  # noqa: E402
import framework.nn.functional as F  # noqa: E402
from benchmarks.train_step import B_MLP, DIMS, HID, B, D, H, S, torch_llama, torch_mlp  # noqa: E402
from conformance.models import LlamaBlock  # noqa: E402
from framework.static import InputSpec  # noqa: E402

CHAIN = 32


def side_by_side(fns, number: int, repeat: int) -> list[float | None]:
    """Median microseconds per call of each function (None stays None). The functions take
    turns within every repeat, so all of them see the same machine load."""
    live = [f for f in fns if f is not None]
    for f in live:
        f()
        f()
    runs: dict[int, list[float]] = {id(f): [] for f in live}
    for _ in range(repeat):
        for f in live:
            t0 = time.perf_counter()
            for _ in range(number):
                f()
            runs[id(f)].append((time.perf_counter() - t0) / number * 1e6)
    return [statistics.median(runs[id(f)]) if f is not None else None for f in fns]


def chain(x, c, exp, mul, add, neg):
    for k in range(CHAIN):
        x = (exp, neg, lambda v: mul(v, c), lambda v: add(v, c))[k % 4](x)
    return x


def replay_off(sf) -> None:
    """Run every program of a traced static function as its bound instruction list."""
    for cp in sf.programs:
        cp.executor.graphs = False
        if cp.backward is not None:
            cp.backward.executor.graphs = False


def traced_unfused(fn, *args):
    """``fn`` under to_static, traced with the compiler's fusion off (op by op)."""
    sf = fw.jit.to_static(fn)
    old = os.environ.get("OARLOCK_COMPILE")
    os.environ["OARLOCK_COMPILE"] = "0"
    try:
        sf(*args)
    finally:
        if old is None:
            del os.environ["OARLOCK_COMPILE"]
        else:
            os.environ["OARLOCK_COMPILE"] = old
    return sf


def chain_rows(dev: str, number: int, repeat: int, torch) -> list[tuple]:
    rng = np.random.default_rng(0)
    a = (rng.random(16, dtype=np.float32) * 0.1).astype(np.float32)
    c = np.full(16, 0.5, np.float32)
    fa, fc = fw.to_tensor(a, device=dev), fw.to_tensor(c, device=dev)

    def eager_chain(x):
        return chain(x, fc, fw.exp, fw.multiply, fw.add, fw.neg)

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

    t_chain = None
    if torch is not None:
        ta, tc = torch.from_numpy(a), torch.from_numpy(c)

        def t_chain():
            return chain(ta, tc, torch.exp, torch.mul, torch.add, torch.neg)

    statics = []
    with fw.no_grad():
        for make in (
            lambda: traced_unfused(eager_chain, fa),
            lambda: fw.jit.to_static(eager_chain, input_spec=[InputSpec([16])]),
        ):
            sg, sl = make(), make()
            sg(fa), sl(fa)
            replay_off(sl)
            for f in (sg, sl):
                np.testing.assert_allclose(f(fa).numpy(), eager_chain(fa).numpy(), rtol=1e-5, atol=1e-6)
            statics += [lambda sg=sg: sg(fa), lambda sl=sl: sl(fa)]
        e, g, ll, gf, lf, n, t = side_by_side(
            [lambda: eager_chain(fa), *statics, np_chain, t_chain], number, repeat
        )
    per = lambda v: None if v is None else v / CHAIN  # noqa: E731
    return [
        ("chain 32, per op (us)", per(e), per(g), per(ll), per(n), per(t)),
        ("chain 32 fused, per op (us)", per(e), per(gf), per(lf), per(n), per(t)),
    ]


def _mlp(dev: str):
    fw.manual_seed(0)
    return fw.nn.Sequential(
        fw.nn.Linear(784, 1024), fw.nn.ReLU(), fw.nn.Linear(1024, 1024), fw.nn.ReLU(), fw.nn.Linear(1024, 10)
    ).to(dev)


def mlp_rows(dev: str, number: int, repeat: int, torch) -> tuple[list[tuple], list[tuple]]:
    rng = np.random.default_rng(0)
    x = fw.to_tensor(rng.standard_normal((B_MLP, DIMS[0])).astype(np.float32), device=dev)
    y = fw.to_tensor(rng.integers(0, 10, B_MLP), device=dev)
    rows, mem = [], []
    # forward only
    net, sg, sl = _mlp(dev), _mlp(dev), _mlp(dev)
    fw.jit.to_static(sg, input_spec=[InputSpec([None, 784])])
    fw.jit.to_static(sl, input_spec=[InputSpec([None, 784])])
    with fw.no_grad():
        sg(x), sl(x)
        replay_off(sl.forward)
        np.testing.assert_allclose(sg(x).numpy(), net(x).numpy(), rtol=1e-4, atol=1e-5)
    tmlp = None
    if torch is not None:
        ws = [torch.from_numpy(p.numpy()) for p in net.parameters()]
        tx = torch.from_numpy(x.numpy())

        def tmlp():
            with torch.no_grad():
                h = torch.relu(tx @ ws[0] + ws[1])
                h = torch.relu(h @ ws[2] + ws[3])
                return h @ ws[4] + ws[5]

    with fw.no_grad():
        e, g, ll, t = (
            v / 1e3 if v is not None else None
            for v in side_by_side([lambda: net(x), lambda: sg(x), lambda: sl(x), tmlp], number, repeat)
        )
    rows.append(("mlp 784-1024-1024-10 b128 fwd (ms)", e, g, ll, None, t))

    # the whole SGD step
    def make_step(static: bool, replay: bool = True):
        m = _mlp(dev)
        opt = fw.optim.SGD(learning_rate=0.01, parameters=m.parameters())

        def step(x, y):
            loss = F.cross_entropy(m(x), y)
            loss.backward()
            opt.step()
            opt.clear_grad()
            return loss

        if not static:
            return step
        sf = fw.jit.to_static(step)
        sf(x, y)
        if not replay:
            replay_off(sf)
        return sf

    fe, fg, fl = make_step(False), make_step(True), make_step(True, False)
    for f in (fe, fg, fl):
        f(x, y)
    e, g, ll, t = (
        v / 1e3 if v is not None else None
        for v in side_by_side(
            [
                lambda: fe(x, y).numpy(),
                lambda: fg(x, y).numpy(),
                lambda: fl(x, y).numpy(),
                torch_mlp() if torch is not None else None,
            ],
            number,
            repeat,
        )
    )
    rows.append(("mlp b128 SGD step (ms)", e, g, ll, None, t))
    mem.append(("mlp b128 SGD step", fw.jit.memory_report(make_step(True), x, y)))
    return rows, mem


def llama_rows(dev: str, number: int, repeat: int, torch) -> tuple[list[tuple], list[tuple]]:
    x = fw.to_tensor(np.random.default_rng(0).standard_normal((B, S, D)).astype(np.float32), device=dev)
    cos, sin = F.rotary_cos_sin(S, D // H, dtype="float32", device=dev)

    def make(static: bool, replay: bool = True):
        fw.seed(0)
        with fw.device(dev):
            blk = LlamaBlock(D, H, HID)

        def fwd_bwd(x):
            loss = blk(x, cos, sin).sum()
            loss.backward()
            return loss

        def step():
            loss = f(x)
            blk.clear_gradients()
            return loss.numpy()

        f = fwd_bwd
        if static:
            f = fw.jit.to_static(fwd_bwd)
            f(x)
            if not replay:
                replay_off(f)
        return step, f, blk

    (se, _, _), (sg, fg, bg), (sl, _, _) = make(False), make(True), make(True, False)
    np.testing.assert_allclose(sg(), se(), rtol=1e-4)
    e, g, ll, t = (
        v / 1e3 if v is not None else None
        for v in side_by_side([se, sg, sl, torch_llama() if torch is not None else None], number, repeat)
    )
    mem = [("llama block fwd+bwd", fw.jit.memory_report(fg, x))]
    bg.clear_gradients()
    return [("llama block d256 s128 b8 fwd+bwd (ms)", e, g, ll, None, t)], mem


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--threads", type=int, default=1, help="torch and BLAS threads (default 1)")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--number", type=int, default=300, help="calls per repeat for the chain")
    ap.add_argument("--steps", type=int, default=5, help="calls per repeat for the MLP and Llama cases")
    args = ap.parse_args()
    try:
        import torch

        torch.set_num_threads(args.threads)
    except ImportError:
        torch = None
    dev = args.device
    rows = chain_rows(dev, args.number, args.repeat, torch)
    r, mem = mlp_rows(dev, args.steps, args.repeat, torch)
    rows += r
    r, m = llama_rows(dev, args.steps, args.repeat, torch)
    rows += r
    mem += m

    print(
        f"device {dev} ({fw.get_device_properties(dev).name}); {args.threads} thread(s) for torch and BLAS; "
        f"torch {'eager ' + torch.__version__ if torch is not None else 'not installed'}; median of {args.repeat} repeats"
    )
    print(
        f"{'case':40s} {'eager':>9s} {'static':>9s} {'no replay':>9s} {'numpy':>9s} {'torch':>9s} "
        f"{'eager/static':>12s} {'static/torch':>12s}"
    )
    fmt = lambda v: f"{v:9.3f}" if v is not None else f"{'-':>9s}"  # noqa: E731
    for name, e, s, sl, n, t in rows:
        ratio_t = f"{s / t:12.2f}" if t else f"{'-':>12s}"
        print(f"{name:40s} {fmt(e)} {fmt(s)} {fmt(sl)} {fmt(n)} {fmt(t)} {e / s:12.2f} {ratio_t}")
    print()
    print(
        f"{'peak memory (MiB, allocator)':40s} {'eager':>9s} {'static':>9s} {'held':>9s} {'static/eager':>12s}"
    )
    for name, rep in mem:
        e, s, h = (rep[k] / 2**20 for k in ("eager_peak_bytes", "static_peak_bytes", "static_held_bytes"))
        print(f"{name:40s} {e:9.2f} {s:9.2f} {h:9.2f} {s / e:12.2f}")


if __name__ == "__main__":
    main()
