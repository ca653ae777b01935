"""bfloat16 products side by side in one run: the libraries that could run them on the CPU's
bf16 units, the plain path (float32 products), Oarlock's ``fw.matmul`` and torch.

    python benchmarks/bf16.py --threads 2 [--reps 7] [--sizes 2048,1024x256x688] [--amp-reps 10]
    python benchmarks/bf16.py --threads 1 --amp-only [--amp-modes eager,static]

Every variant computes ``c = a @ b`` of bfloat16 ``a``, ``b`` with float32 accumulation and a
bfloat16 ``c`` (the float32 result rounded to nearest-even, ml_dtypes), so the rounding is in
each time; one call of each variant per round, medians of ``--reps`` rounds, GFLOP/s and the
ratio to torch's bf16 ``matmul`` (or, without torch, to numpy's float32 product):

- ``plain path``: both operands to float32, numpy's BLAS (``np.matmul``), rounded;
- ``MKL cblas_gemm_bf16bf16f32``: the ``mkl`` wheel, sequential layer, rows split over the
  threads (as the cpu plugin runs MKL);
- ``OpenBLAS sbgemm``: numpy's bundled OpenBLAS, where it exports ``sbgemm``;
- ``oneDNN dnnl_gemm_bf16bf16f32``: the ``onednn-cpu-gomp`` wheel, its OpenMP threads;
- ``fw.matmul``: Oarlock's eager op on the cpu plugin (whatever ``bf16_gemm`` says it runs);
- ``numpy float32 sgemm``: the float32 product alone (no conversion), for scale.

Then bfloat16's casts and an element-wise product on 2^20 elements, ml_dtypes/numpy against
the cpu plugin's C (elementwise.c: plain, and on vcvtneps2bf16 where the CPU has it); then
training steps, float32 against ``fw.amp.auto_cast(dtype="bfloat16")`` at O1 and at O2
(``fw.amp.decorate``: bf16 parameters, float32 master weights), forward and loss under it,
backward and the optimizer step after, eagerly and traced whole by ``fw.jit.to_static``,
taking turns: the examples' tiny Llama (conformance/models.py: dim 64, 2 layers, batch 16 x 64
tokens, AdamW) and train_step.py's Llama block (dim 256, 4 heads, seq 128, batch 8, SwiGLU
688; forward + backward). Ratio: float32 step time (same mode) / AMP step time (higher: AMP
faster), and the eager float32 step's CPU time / time.
"""

from __future__ import annotations

import argparse
import ctypes
import importlib.metadata
import os
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

if "--threads" in sys.argv:  # before numpy, torch and OpenMP load
    _n = sys.argv[sys.argv.index("--threads") + 1]
    os.environ.update(OPENBLAS_NUM_THREADS=_n, OMP_NUM_THREADS=_n, MKL_NUM_THREADS=_n, OARLOCK_NUM_THREADS=_n)

import ml_dtypes  # noqa: E402
import numpy as np  # noqa: E402

os.environ.setdefault("OARLOCK_COMPILE_BACKGROUND", "0")  # time built kernels, not a cold cache's stand-ins
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import framework as fw  # noqa: E402
from benchmarks import cpu_description  # noqa: E402
from benchmarks.compiler import interleaved_cpu  # noqa: E402

BF16 = np.dtype(ml_dtypes.bfloat16)
_D = ctypes.c_int64


def _dist_lib(dist: str, prefix: str) -> ctypes.CDLL | None:
    try:
        d = importlib.metadata.distribution(dist)
    except importlib.metadata.PackageNotFoundError:
        return None
    for f in sorted(d.files or (), key=str):
        if f.name.startswith(prefix):
            try:
                return ctypes.CDLL(str(d.locate_file(f)))
            except OSError:
                continue
    return None


def onednn(a: np.ndarray, b: np.ndarray) -> Callable[[], np.ndarray] | str:
    lib = _dist_lib("onednn-cpu-gomp", "libdnnl.so")
    if lib is None:
        return "not installed (pip install onednn-cpu-gomp)"
    fn = lib.dnnl_gemm_bf16bf16f32
    fn.argtypes = [ctypes.c_char, ctypes.c_char, _D, _D, _D, ctypes.c_float, ctypes.c_void_p, _D]
    fn.argtypes += [ctypes.c_void_p, _D, ctypes.c_float, ctypes.c_void_p, _D]
    (m, k), n = a.shape, b.shape[1]

    def run() -> np.ndarray:
        out = np.empty((m, n), np.float32)
        fn(b"N", b"N", m, n, k, 1.0, a.ctypes.data, k, b.ctypes.data, n, 0.0, out.ctypes.data, n)
        return out.astype(BF16)

    return run


def mkl(a: np.ndarray, b: np.ndarray, nt: int) -> Callable[[], np.ndarray] | str:
    lib = _dist_lib("mkl", "libmkl_rt.so")
    if lib is None:
        return "not installed (pip install mkl)"
    lib.MKL_Set_Threading_Layer(1)  # sequential: the rows are split over the threads here
    lib.MKL_Set_Interface_Layer(0)
    fn = lib.cblas_gemm_bf16bf16f32
    i = ctypes.c_int
    fn.argtypes = [i, i, i, i, i, i, ctypes.c_float, ctypes.c_void_p, i, ctypes.c_void_p, i]
    fn.argtypes += [ctypes.c_float, ctypes.c_void_p, i]
    (m, k), n = a.shape, b.shape[1]
    cuts = [m * t // nt for t in range(nt + 1)]
    pool = ThreadPoolExecutor(nt) if nt > 1 else None

    def rows(out: np.ndarray, lo: int, hi: int) -> None:
        pa, pc = a.ctypes.data + lo * k * 2, out.ctypes.data + lo * n * 4
        fn(101, 111, 111, hi - lo, n, k, 1.0, pa, k, b.ctypes.data, n, 0.0, pc, n)

    def run() -> np.ndarray:
        out = np.empty((m, n), np.float32)
        if pool is None:
            rows(out, 0, m)
        else:
            list(pool.map(lambda t: rows(out, cuts[t], cuts[t + 1]), range(nt)))
        return out.astype(BF16)

    return run


def openblas_sbgemm() -> str:
    """Whether numpy's OpenBLAS exports a bf16 GEMM (it would be called like MKL's)."""
    from threadpoolctl import threadpool_info

    pools = sorted(threadpool_info(), key=lambda p: "numpy" not in p.get("filepath", ""))  # numpy's first
    for p in pools:
        if p.get("internal_api") == "openblas":
            lib = ctypes.CDLL(p["filepath"])
            names = ("scipy_cblas_sbgemm64_", "scipy_cblas_sbgemm", "cblas_sbgemm64_", "cblas_sbgemm")
            found = [s for s in names if hasattr(lib, s)]
            if found:
                return f"exports {found[0]} (not timed here)"
            return f"not exported by numpy's OpenBLAS {p.get('version')} ({os.path.basename(p['filepath'])})"
    return "numpy's BLAS is not OpenBLAS"


def torch_bf16(a: np.ndarray, b: np.ndarray) -> Callable[[], Any] | str:
    try:
        import torch
    except ImportError:
        return "torch not importable"
    ta = torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
    tb = torch.from_numpy(b.view(np.int16)).view(torch.bfloat16)
    return lambda: torch.matmul(ta, tb)


def round_robin(fns: dict[str, Callable[[], Any]], reps: int) -> dict[str, tuple[float, float]]:
    """Median wall ms and median process CPU ms of each function, one call of each per round
    (load changes hit all alike; CPU time is steadier on a loaded machine, and counts every
    thread of a call): benchmarks/compiler.py's :func:`interleaved_cpu` after one warm-up call."""
    return interleaved_cpu(fns, reps, warmup=1)


def case(m: int, k: int, n: int, nt: int, reps: int) -> None:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((m, k)).astype(BF16)
    b = rng.standard_normal((k, n)).astype(BF16)
    a32, b32 = a.astype(np.float32), b.astype(np.float32)
    ta, tb = fw.to_tensor(a), fw.to_tensor(b)
    fns: dict[str, Callable[[], Any]] = {}
    absent: dict[str, str] = {}
    cands: dict[str, Any] = {
        "torch bf16 matmul": torch_bf16(a, b),
        "oneDNN dnnl_gemm_bf16bf16f32": onednn(a, b),
        "MKL cblas_gemm_bf16bf16f32": mkl(a, b, nt),
        "OpenBLAS sbgemm": openblas_sbgemm(),
        "fw.matmul (eager, cpu plugin)": lambda: fw.matmul(ta, tb).numpy(),
        "plain path (fp32 sgemm, rounded)": lambda: np.matmul(
            a.astype(np.float32), b.astype(np.float32)
        ).astype(BF16),
        "numpy float32 sgemm (no casts)": lambda: np.matmul(a32, b32),
    }
    for name, c in cands.items():
        (absent.__setitem__(name, c) if isinstance(c, str) else fns.__setitem__(name, c))
    ref = a32.astype(np.float64) @ b32.astype(np.float64)
    for name, fn in fns.items():  # every variant computes the product (bf16 rounding apart)
        got = fn()
        got = got.float().numpy() if hasattr(got, "float") else np.asarray(got, np.float32)
        err = np.abs(got - ref).max() / np.abs(ref).max()
        assert err < 2e-2, f"{name}: relative error {err}"
    ms = round_robin(fns, reps)
    base = "torch bf16 matmul" if "torch bf16 matmul" in ms else "numpy float32 sgemm (no casts)"
    flop = 2.0 * m * k * n
    print(f"\n== {m}x{k} @ {k}x{n}, {nt} thread(s); ratio: time of '{base}' / time (higher is faster)")
    print(f"  {'variant':<36} {'ms':>9} {'GFLOP/s':>9} {'ratio':>7} {'cpu ms':>9} {'ratio':>7}")
    bw, bc = ms[base]
    for name, (w, c) in ms.items():
        print(f"  {name:<36} {w:9.2f} {flop / w / 1e6:9.1f} {bw / w:6.2f}x {c:9.2f} {bc / c:6.2f}x")
    for name, why in absent.items():
        print(f"  {name:<36} {why}")


#: the precision variants of a training step: no AMP, ``auto_cast`` O1, ``decorate`` + O2
LEVELS = ("float32", "O1", "O2")
#: ops kept in float32 under AMP (``--amp-black-list``: ``auto_cast``'s ``custom_black_list``)
BLACK_LIST: list[str] = []


def _cast_block(level: str) -> Any:
    """The ``auto_cast`` of ``level`` (off for float32)."""
    return fw.amp.auto_cast(
        enable=level != "float32",
        level="O2" if level == "O2" else "O1",
        dtype="bfloat16",
        custom_black_list=BLACK_LIST,
    )


def tiny_llama_step(level: str, static: bool = False) -> Callable[[], float]:
    """The examples' tiny Llama's whole training step (forward and loss under ``auto_cast``,
    backward, AdamW step, clear_grad, the LR schedule), eagerly or traced whole by
    ``fw.jit.to_static`` (its optimizer update one fused program)."""
    from conformance.models import build

    task = build("tiny_llama", 0, "cpu")
    model, opt = task.model, task.optimizer
    if level == "O2":
        model, opt = fw.amp.decorate(model, opt, level="O2", dtype="bfloat16")
    x, y = task.batch(0)
    sched = task.info["scheduler"]

    def body(x: fw.Tensor, y: fw.Tensor) -> fw.Tensor:
        with _cast_block(level):
            loss = task.loss(model(x), y)
        loss.backward()
        opt.step()
        opt.clear_grad()
        return loss

    fn = fw.jit.to_static(body) if static else body

    def step() -> float:
        loss = float(fn(x, y).numpy())
        sched.step()
        return loss

    return step


def llama_block_step(level: str, static: bool = False) -> Callable[[], Any]:
    """train_step.py's Llama block, forward under ``auto_cast`` and backward (no optimizer),
    eagerly or under ``fw.jit.to_static``."""
    import framework.nn.functional as F
    from conformance.models import LlamaBlock

    b, s, d, h, hid = 8, 128, 256, 4, 688
    fw.seed(0)
    blk = LlamaBlock(d, h, hid)
    if level == "O2":
        blk = fw.amp.decorate(blk, level="O2", dtype="bfloat16")
    cos, sin = F.rotary_cos_sin(s, d // h, dtype="float32", device="cpu")
    x = fw.to_tensor(np.random.default_rng(0).standard_normal((b, s, d)).astype(np.float32))
    params = blk.parameters()

    def body(x: fw.Tensor) -> fw.Tensor:
        with _cast_block(level):
            out = blk(x, cos, sin)
        loss = out.astype("float32").sum()
        loss.backward()
        return loss

    fn = fw.jit.to_static(body) if static else body

    def step() -> None:
        fn(x)
        params[0].grad.numpy()
        blk.clear_gradients()

    return step


def amp_steps(reps: int, modes: str = "eager,static") -> None:
    """Each step at each precision (and mode), taking turns; ratios to the float32 step of
    the same mode and to the eager float32 step."""
    for title, make in (
        ("tiny Llama training step", tiny_llama_step),
        ("Llama block fwd+bwd", llama_block_step),
    ):
        fns = {
            f"{level} {mode}": make(level, mode == "static") for mode in modes.split(",") for level in LEVELS
        }
        ms = round_robin(fns, reps)
        print(f"\n== {title}; ratio: float32 time (same mode; eager) / time (higher is faster)")
        print(
            f"  {'variant':<16} {'ms':>9} {'ratio':>7} {'cpu ms':>9} {'ratio':>7} {'vs eager fp32 cpu':>18}"
        )
        for name, (w, c) in ms.items():
            bw, bc = ms["float32 " + name.split()[1]]
            ec = ms.get("float32 eager", (w, c))[1]
            print(f"  {name:<16} {w:9.2f} {bw / w:6.2f}x {c:9.2f} {bc / c:6.2f}x {ec / c:17.2f}x")


def cast_kernels(reps: int, n: int = 1 << 20) -> None:
    """bfloat16 casts and a product element-wise, n elements, one thread: ml_dtypes/numpy (the
    kernels before elementwise.c's bf16 entries) against those entries, each path."""
    from plugins.cpu import elementwise as E

    rng = np.random.default_rng(0)
    x = rng.standard_normal(n).astype(np.float32)
    h, g = x.astype(BF16), rng.standard_normal(n).astype(BF16)
    y, w, z = np.empty(n, BF16), np.empty(n, np.float32), np.empty(n, BF16)
    units = "avx512_bf16" in open("/proc/cpuinfo").read().split("\n\n")[0].split()

    def mul() -> Any:
        return E.bf16_binary_call(2, h, g, z, 1)()

    def env(v: str, fn: Callable[[], Any]) -> Callable[[], Any]:
        def run() -> Any:
            os.environ["OARLOCK_BF16_CAST"] = v
            return fn()

        return run

    fns = {
        "f32->bf16 ml_dtypes astype": lambda: x.astype(BF16),
        "f32->bf16 C, plain (default)": env("plain", lambda: E.bf16_cast(x, y)),
        "bf16->f32 ml_dtypes astype": lambda: h.astype(np.float32),
        "bf16->f32 C": lambda: E.bf16_cast(h, w),
        "bf16 mul, numpy f32 round trip": lambda: (h.astype(np.float32) * g.astype(np.float32)).astype(BF16),
        "bf16 mul, C (plain)": env("plain", mul),
    }
    if units:  # OARLOCK_BF16_CAST=units: the rounding on vcvtneps2bf16
        fns["f32->bf16 C, vcvtneps2bf16 (units)"] = env("units", lambda: E.bf16_cast(x, y))
        fns["bf16 mul, C (units)"] = env("units", mul)
    ms = round_robin(fns, reps)
    os.environ.pop("OARLOCK_BF16_CAST", None)
    print(f"\n== bfloat16 casts and mul, {n} elements, 1 thread (C: elementwise.c's bf16_* entries)")
    print(f"  {'variant':<36} {'ms':>9} {'cpu ms':>9}")
    for name, (wall, cpu) in ms.items():
        print(f"  {name:<36} {wall:9.3f} {cpu:9.3f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--amp-reps", type=int, default=10, help="rounds of the training steps (0: none)")
    ap.add_argument("--amp-modes", default="eager,static", help="eager and/or static (fw.jit.to_static)")
    ap.add_argument("--amp-only", action="store_true", help="only the training steps")
    ap.add_argument("--amp-black-list", default="", help="ops kept float32 under AMP, e.g. attention")
    ap.add_argument(
        "--sizes", default="2048,1024x256x688", help="N (N x N @ N x N) or MxKxN, comma-separated"
    )
    args = ap.parse_args()
    flags = [
        f
        for f in open("/proc/cpuinfo").read().split("\n\n")[0].split()
        if "bf16" in f or "amx" in f or "vnni" in f
    ]
    print(f"{cpu_description()}; flags: {' '.join(sorted(set(flags))) or 'no bf16/amx/vnni'}")
    print(f"cpu plugin's bf16_gemm: {fw.get_device_properties('cpu').extra.get('bf16_gemm', '-')}")
    if not args.amp_only:
        for s in args.sizes.split(","):
            dims = [int(x) for x in s.split("x")]
            m, k, n = dims * 3 if len(dims) == 1 else dims
            case(m, k, n, args.threads, args.reps)
        if args.amp_reps:
            cast_kernels(args.reps)
    if args.amp_reps:
        BLACK_LIST.extend(x for x in args.amp_black_list.split(",") if x)
        amp_steps(args.amp_reps, args.amp_modes)


if __name__ == "__main__":
    main()
