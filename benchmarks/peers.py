"""Oarlock against its peers on the same CPU, in one run: PyTorch eager, PaddlePaddle eager and
``to_static``, Oarlock eager and ``to_static``; one and two threads.

    python benchmarks/peers.py [--rounds 3] [--threads 1,2] [--cases add,mlp,tfm] [--repeats 7] [--cpu-clock]
                               [--variant NAME:VAR=VALUE[,VAR=VALUE...]]...

Cases (issue 38's table):

- ``add 16``: ``x + y`` of two float32[16] tensors, microseconds per op (the eager dispatch);
- ``mlp``: MLP 784-1024-1024-10 (ReLU), batch 128, cross-entropy, backward, SGD step, ms;
- ``tfm``: ``TransformerEncoderLayer(d_model=256, nhead=4, dim_feedforward=1024, dropout=0)``
  on [8, 128, 256] (batch, sequence, features), forward + ``sum().backward()``, ms;
- ``bf16``: ``a @ b`` of two bfloat16[2048, 2048] tensors (float32 accumulation, a bfloat16
  result), ms per product; Paddle's column where its CPU build runs bf16 products;
- ``amp``: the examples' tiny Llama training step (forward and loss under
  ``auto_cast(dtype="bfloat16")``, backward, AdamW) against the same step in float32, ms
  (Oarlock only: the goal is a ratio of Oarlock's own two steps); the float32 step has its own
  row, ``tiny Llama step, float32``. Its to_static column traces the whole step (auto_cast
  inside, backward and the AdamW update), as benchmarks/bf16.py does.

``to_static`` is used as Paddle's users use it: the model (a Layer) is converted, the loss,
``backward()`` and the optimizer step stay eager (Oarlock runs the forward and its backward
as programs). The same builder code runs Paddle and Oarlock (Oarlock has Paddle's API); torch
has its own. A peer that is not installed gets "not installed" in its column.

Every (library, thread count) runs in its own interpreter (thread pools are sized when their
library loads: ``OMP_NUM_THREADS``, ``MKL_NUM_THREADS``, ``OPENBLAS_NUM_THREADS`` and
``OARLOCK_NUM_THREADS`` are set for it, ``torch.set_num_threads`` too), the interpreters taking
turns round by round so all see the same machine load. Each figure is the median over rounds
of each interpreter's median; ratios are Oarlock's time over the peer's (below 1: faster).
``--cpu-clock`` times on the process's CPU clock instead of the wall clock: the time other
processes take from it is not counted (on a loaded machine), but its threads' CPU times add
up, so only the 1-thread figures compare with wall times. After the table, each of issue 38's
goals is printed as met or missed by how much. ``--variant numpy-blas:OARLOCK_BLAS=numpy`` adds
Oarlock columns run with those environment variables (a before and after in one run), taking
turns with the others; the ratios and goals are the plain Oarlock's. The peers install with
``pip install -r benchmarks/requirements-peers.txt``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import time

os.environ.setdefault("OARLOCK_COMPILE_BACKGROUND", "0")  # time built kernels, not a cold cache's stand-ins

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIBS = ("torch", "paddle", "oarlock")
CASES = {
    "add": "add 16, per op (us)",
    "mlp": "MLP 784-1024-1024-10 b128 SGD step (ms)",
    "tfm": "TransformerEncoderLayer d256 h4 ff1024 s128 b8 fwd+bwd (ms)",
    "bf16": "matmul 2048x2048 bf16 (ms)",
    "amp": "tiny Llama step, bf16 AMP (ms)",
    "amp32": "tiny Llama step, float32 (ms)",
}
N_BF16 = 2048
B_MLP, DIMS = 128, (784, 1024, 1024, 10)
B, S, D, H, FF = 8, 128, 256, 4, 1024


def median_time(fn, repeats: int, number: int = 1, warmup: int = 2, clock=time.perf_counter) -> float:
    """Median over ``repeats`` of the mean seconds per call of ``number`` calls."""
    for _ in range(warmup):
        fn()
    runs = []
    for _ in range(repeats):
        t0 = clock()
        for _ in range(number):
            fn()
        runs.append((clock() - t0) / number)
    return statistics.median(runs)


# -- Paddle and Oarlock: one builder for both (Oarlock has Paddle's API) -----------------------
def pd_like_cases(fw, static: bool) -> dict[str, object]:
    import numpy as np

    F = fw.nn.functional
    rng = np.random.default_rng(0)
    fw.seed(0)
    mlp = fw.nn.Sequential(
        fw.nn.Linear(DIMS[0], DIMS[1]),
        fw.nn.ReLU(),
        fw.nn.Linear(DIMS[1], DIMS[2]),
        fw.nn.ReLU(),
        fw.nn.Linear(DIMS[2], DIMS[3]),
    )
    opt = fw.optimizer.SGD(learning_rate=0.01, parameters=mlp.parameters())
    x = fw.to_tensor(rng.standard_normal((B_MLP, DIMS[0])).astype(np.float32))
    y = fw.to_tensor(rng.integers(0, 10, B_MLP).astype(np.int64))
    tfm = fw.nn.TransformerEncoderLayer(D, H, FF, dropout=0.0)
    t = fw.to_tensor(rng.standard_normal((B, S, D)).astype(np.float32))
    if static:
        mlp, tfm = fw.jit.to_static(mlp), fw.jit.to_static(tfm)

    def mlp_step() -> None:
        loss = F.cross_entropy(mlp(x), y)
        loss.backward()
        opt.step()
        opt.clear_grad()
        float(loss)

    params = tfm.parameters()

    def tfm_step() -> None:
        tfm(t).sum().backward()
        params[0].grad.numpy()
        tfm.clear_gradients()

    cases: dict[str, object] = {"mlp": mlp_step, "tfm": tfm_step}
    if not static:
        a = fw.to_tensor(np.ones(16, np.float32))
        b = fw.to_tensor(np.ones(16, np.float32))
        cases["add"] = lambda: a + b
        cases["bf16"] = bf16_product(fw, np)
    if fw.__name__ == "framework":  # benchmarks/bf16.py's whole tiny Llama step, O1 and float32
        from benchmarks.bf16 import tiny_llama_step

        cases["amp"] = tiny_llama_step("O1", static)
        cases["amp32"] = tiny_llama_step("float32", static)
    return cases


def bf16_product(fw, np):
    """``a @ b`` of bfloat16[2048, 2048] tensors, or None where the library's CPU build refuses."""
    rng = np.random.default_rng(1)
    try:
        a = fw.to_tensor(rng.standard_normal((N_BF16, N_BF16)).astype(np.float32)).astype("bfloat16")
        b = fw.to_tensor(rng.standard_normal((N_BF16, N_BF16)).astype(np.float32)).astype("bfloat16")
        fw.matmul(a, b).numpy()
    except Exception:  # noqa: BLE001 - a peer without bf16 products gets an empty cell
        return None
    return lambda: fw.matmul(a, b).numpy()


def torch_cases() -> dict[str, object]:
    import numpy as np
    import torch

    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    mlp = torch.nn.Sequential(
        torch.nn.Linear(DIMS[0], DIMS[1]),
        torch.nn.ReLU(),
        torch.nn.Linear(DIMS[1], DIMS[2]),
        torch.nn.ReLU(),
        torch.nn.Linear(DIMS[2], DIMS[3]),
    )
    opt = torch.optim.SGD(mlp.parameters(), lr=0.01)
    x = torch.from_numpy(rng.standard_normal((B_MLP, DIMS[0])).astype(np.float32))
    y = torch.from_numpy(rng.integers(0, 10, B_MLP))
    tfm = torch.nn.TransformerEncoderLayer(D, H, FF, dropout=0.0, batch_first=True)
    t = torch.from_numpy(rng.standard_normal((B, S, D)).astype(np.float32))

    def mlp_step() -> None:
        loss = torch.nn.functional.cross_entropy(mlp(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        loss.item()

    def tfm_step() -> None:
        tfm(t).sum().backward()
        next(tfm.parameters()).grad.numpy()
        tfm.zero_grad(set_to_none=True)

    a, b = torch.ones(16), torch.ones(16)
    g = torch.Generator().manual_seed(1)
    p = torch.randn(N_BF16, N_BF16, generator=g).to(torch.bfloat16)
    q = torch.randn(N_BF16, N_BF16, generator=g).to(torch.bfloat16)
    return {"add": lambda: a + b, "mlp": mlp_step, "tfm": tfm_step, "bf16": lambda: p @ q}


def child(
    lib: str, threads: int, cases: list[str], repeats: int, cpu_clock: bool = False
) -> dict[str, float]:
    """Run in a fresh interpreter: ``{"eager/add": us, "eager/mlp": ms, "static/mlp": ms, ...}``."""
    out: dict[str, float | str] = {}
    if lib == "torch":
        import torch

        torch.set_num_threads(threads)
        modes = {"eager": torch_cases()}
        out["version"] = (
            f"torch {torch.__version__} ({torch.backends.cpu.get_cpu_capability()} kernels, BLAS: {torch_blas(torch)})"
        )
    else:
        if lib == "paddle":
            import paddle as fw

            fw.set_device("cpu")
            out["version"] = f"Paddle {fw.__version__}"
        else:
            sys.path.insert(0, ROOT)
            import framework as fw

            out["version"] = "Oarlock (this tree)"
        modes = {"eager": pd_like_cases(fw, False), "static": pd_like_cases(fw, True)}
    for case in cases:  # the modes of a case take turns
        for mode, fns in modes.items():
            fn = fns.get(case)
            if fn is None:
                continue
            clock = time.process_time if cpu_clock else time.perf_counter
            if case == "add":
                out[f"{mode}/{case}"] = median_time(fn, repeats, 2000, warmup=1, clock=clock) * 1e6
            else:
                out[f"{mode}/{case}"] = median_time(fn, repeats, 1, warmup=3, clock=clock) * 1e3
    return out


def torch_blas(torch) -> str:
    """The BLAS torch's CPU build links (from its build configuration)."""
    cfg = torch.__config__.show()
    for ln in cfg.splitlines():
        if "BLAS_INFO=" in ln:
            return ln.split("BLAS_INFO=", 1)[1].split(",")[0]
    return "MKL" if "Intel(R) oneAPI Math Kernel Library" in cfg or "MKL" in cfg else "unknown"


# -- the parent -----------------------------------------------------------------------------
def cpu_flags() -> str:
    """The CPU's vector and matrix flags that decide products (from /proc/cpuinfo)."""
    want = (
        "avx2",
        "fma",
        "avx512f",
        "avx512_vnni",
        "avx512_bf16",
        "avx_vnni",
        "amx_tile",
        "amx_bf16",
        "amx_int8",
    )
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((ln.split(":", 1)[1].split() for ln in f if ln.startswith("flags")), [])
    except OSError:
        return "unknown"
    return " ".join(w for w in want if w in flags) or "none of " + " ".join(want)


def _ratio(med: dict, a: tuple[str, str], b: tuple[str, str]) -> str:
    x, y = med.get(a), med.get(b)
    return f"{x / y:.2f}x" if x and y else "-"


# Issue 38's goals: (case, Oarlock's mode, peer column, the most Oarlock's time may be of it)
GOALS = (
    ("add", "eager", ("torch", "eager"), 1.5),
    ("mlp", "eager", ("torch", "eager"), 1.0),
    ("mlp", "static", ("torch", "eager"), 0.8),
    ("tfm", "eager", ("torch", "eager"), 1.0),
    ("tfm", "static", ("torch", "eager"), 0.85),
    ("add", "eager", ("paddle", "eager"), 1.0),
    ("mlp", "eager", ("paddle", "eager"), 1.0),
    ("mlp", "static", ("paddle", "static"), 1.0),
    ("tfm", "eager", ("paddle", "eager"), 1.0),
    ("tfm", "static", ("paddle", "static"), 1.0),
    ("bf16", "eager", ("torch", "eager"), 1 / 0.9),
    ("amp", "eager", ("oarlock", "fp32"), 1 / 1.5),
    ("amp", "static", ("oarlock", "fp32"), 1 / 1.5),
)


def goal_lines(meds: dict[tuple[str, int], dict[tuple[str, str], float | None]]) -> list[str]:
    """One line per goal and thread count: met, or by how much it is missed."""
    lines = []
    for case, mode, peer, most in GOALS:
        for (c, n), med in meds.items():
            if c != case:
                continue
            ours, theirs = med.get(("oarlock", mode)), med.get(peer)
            if peer == ("oarlock", "fp32"):  # the AMP goal: Oarlock's own float32 step, same mode
                theirs = meds.get(("amp32", n), {}).get(("oarlock", mode))
            what = f"{CASES[case]}, {n} thr: Oarlock {mode} <= {most:.3g}x {peer[0]} {peer[1]}"
            if not ours or not theirs:
                lines.append(f"{what}: not measured ({peer[0]} not installed or case not run)")
                continue
            ratio = ours / theirs
            verdict = (
                "met"
                if ratio <= most
                else f"MISSED by {ratio / most:.2f}x ({ours - most * theirs:+.2f} over)"
            )
            lines.append(f"{what}: {ratio:.2f}x, {verdict}")
    return lines


def _variant(spec: str) -> tuple[str, dict[str, str]]:
    """``NAME:VAR=VALUE[,VAR=VALUE]`` as ("oarlock NAME", {VAR: VALUE})."""
    name, _, assigns = spec.partition(":")
    env = dict(a.split("=", 1) for a in assigns.split(",") if "=" in a)
    if not name or not env:
        sys.exit(f"[benchmarks] --variant wants NAME:VAR=VALUE[,VAR=VALUE], got {spec!r}")
    return f"oarlock {name}", env


def load_average() -> str:
    try:
        return " ".join(f"{v:.1f}" for v in os.getloadavg())
    except OSError:
        return "unknown"


def installed(lib: str) -> bool:
    return lib == "oarlock" or importlib.util.find_spec(lib) is not None


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--cases", default="add,mlp,tfm,bf16,amp")
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument(
        "--cpu-clock",
        action="store_true",
        help="time on the process's CPU clock (the machine's other load not counted; all of the "
        "process's threads summed, so compare 1-thread figures only)",
    )
    ap.add_argument(
        "--variant",
        action="append",
        default=[],
        metavar="NAME:VAR=VALUE[,VAR=VALUE]",
        help="another Oarlock column, run with these environment variables (repeatable)",
    )
    ap.add_argument("--child", nargs=2, metavar=("LIB", "THREADS"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    cases = args.cases.split(",")
    if "amp" in cases and "amp32" not in cases:
        cases.insert(cases.index("amp"), "amp32")
    if args.child:
        print(json.dumps(child(args.child[0], int(args.child[1]), cases, args.repeats, args.cpu_clock)))
        return
    sys.path.insert(0, ROOT)
    from benchmarks import cpu_description

    threads = [int(n) for n in args.threads.split(",")]
    variants = dict(_variant(v) for v in args.variant)  # "oarlock NAME" -> its environment
    libs = [lib for lib in LIBS if installed(lib)] + list(variants)
    got: dict[tuple[str, int], list[dict[str, float]]] = {(lib, n): [] for lib in libs for n in threads}
    load0 = load_average()
    for r in range(args.rounds):
        for n in threads:
            k = r % len(libs)  # each round starts with the next library: no one always goes first
            for lib in libs[k:] + libs[:k]:
                env = dict(os.environ)
                env.pop("PYTHONPATH", None)
                for var in (
                    "OMP_NUM_THREADS",
                    "MKL_NUM_THREADS",
                    "OPENBLAS_NUM_THREADS",
                    "OARLOCK_NUM_THREADS",
                ):
                    env[var] = str(n)
                env.setdefault("GLOG_minloglevel", "2")  # Paddle's start-up log lines
                env.update(variants.get(lib, {}))
                cmd = [
                    sys.executable,
                    os.path.abspath(__file__),
                    "--child",
                    "oarlock" if lib in variants else lib,
                    str(n),
                    "--cases",
                    ",".join(cases),
                    "--repeats",
                    str(args.repeats),
                ] + (["--cpu-clock"] if args.cpu_clock else [])
                run = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)
                if run.returncode:
                    sys.exit(f"[benchmarks] {lib} with {n} threads failed:\n{run.stderr[-3000:]}")
                got[(lib, n)].append(json.loads(run.stdout.strip().splitlines()[-1]))
    print(f"CPU: {cpu_description()}")
    print(f"flags: {cpu_flags()}")
    print("peers: " + "; ".join(str(got[(lib, threads[0])][0].get("version")) for lib in libs if lib in LIBS))
    for name, env in variants.items():
        print(f"{name}: Oarlock (this tree) with " + " ".join(f"{k}={v}" for k, v in env.items()))
    print(f"load average (1, 5, 15 min) at start: {load0}; at end: {load_average()}")
    clock = "process CPU time (all threads summed)" if args.cpu_clock else "wall clock"
    print(
        f"{clock}; medians of {args.rounds} rounds (each the median of {args.repeats} repeats); "
        "ratio = Oarlock / peer"
    )
    cols = [
        ("torch", "eager"),
        ("paddle", "eager"),
        ("paddle", "static"),
        ("oarlock", "eager"),
        ("oarlock", "static"),
    ]
    head = ["torch eager", "Paddle eager", "Paddle to_static", "Oarlock eager", "Oarlock to_static"]
    for name in variants:
        cols += [(name, "eager"), (name, "static")]
        head += [f"{name} eager", f"{name} to_static"]
    print(
        "| case | threads | "
        + " | ".join(head)
        + " | Oarlock eager / torch, / Paddle | Oarlock static / torch, / Paddle static |"
    )
    print("|---|---|" + "---|" * (len(head) + 2))
    meds: dict[tuple[str, int], dict[tuple[str, str], float | None]] = {}
    for case in cases:
        for n in threads:
            med: dict[tuple[str, str], float | None] = meds.setdefault((case, n), {})
            cells = []
            for lib, mode in cols:
                if lib not in libs:
                    cells.append("not installed")
                    continue
                vals = [r[f"{mode}/{case}"] for r in got[(lib, n)] if f"{mode}/{case}" in r]
                med[(lib, mode)] = statistics.median(vals) if vals else None
                cells.append(f"{med[(lib, mode)]:.2f}" if vals else "")

            r1 = f"{_ratio(med, ('oarlock', 'eager'), ('torch', 'eager'))}, {_ratio(med, ('oarlock', 'eager'), ('paddle', 'eager'))}"
            r2 = f"{_ratio(med, ('oarlock', 'static'), ('torch', 'eager'))}, {_ratio(med, ('oarlock', 'static'), ('paddle', 'static'))}"
            print(f"| {CASES[case]} | {n} | " + " | ".join(cells) + f" | {r1} | {r2} |")
    print("\nissue 38's goals (Oarlock's time / the peer's):")
    for ln in goal_lines(meds):
        print("- " + ln)


if __name__ == "__main__":
    main()
