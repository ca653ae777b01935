"""An imported ONNX model on Oarlock's cpu against ONNX Runtime, one thread each.

    python benchmarks/onnx_import.py [--batch 8] [--image 32] [--repeat 7] [--number 20] [--threads 1]
        [--passes O2,inference]

The ResNet-style model of ``tests/onnx_models.py`` (stem, three basic blocks, GAP, Gemm) is
imported with ``fw.onnx.load`` (a traced program, passes, the compiler's fused kernels) and
run by the executor, once per level in ``--passes`` (``O2``, the importer's default;
``inference`` also folds each BatchNormalization into its Conv); ONNX Runtime runs the same file with
``intra_op_num_threads``. Timed side by side in one process, taking turns; medians of
``--repeat`` rounds of ``--number`` calls, of wall time and of the process's CPU time (all its
threads: on a loaded machine the wall time also counts the time the OS ran others).
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
)

import numpy as np  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--image", type=int, default=32)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--number", type=int, default=20)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--passes", default="O2,inference", help="comma-separated levels of fw.onnx.load")
    args = ap.parse_args()

    import onnxruntime as ort
    from onnx_models import resnet

    import framework as fw

    model = resnet(image=args.image)
    x = np.random.default_rng(0).standard_normal((args.batch, 3, args.image, args.image)).astype(np.float32)
    so = ort.SessionOptions()
    so.intra_op_num_threads = args.threads
    so.inter_op_num_threads = 1
    theirs = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    levels = [p.strip() for p in args.passes.split(",") if p.strip()]
    models = {p: fw.onnx.load(model, device="cpu", passes=p) for p in levels}
    ours = models[levels[0]]
    xt = fw.to_tensor(x)
    runs = {f"oarlock fw.onnx.load passes={p}": (lambda m=m: m(xt).numpy()) for p, m in models.items()}
    runs["onnxruntime"] = lambda: theirs.run(None, {"x": x})[0]
    with fw.no_grad():
        want = theirs.run(None, {"x": x})[0]
        err = max(float(np.max(np.abs(m(xt).numpy() - want))) for m in models.values())
        times: dict[str, list[float]] = {k: [] for k in runs}
        cpu: dict[str, list[float]] = {k: [] for k in runs}
        for f in runs.values():
            f()  # warm: trace, compile, plan
        for _ in range(args.repeat):
            for k, f in runs.items():
                t0, c0 = time.perf_counter(), time.process_time()
                for _ in range(args.number):
                    f()
                times[k].append((time.perf_counter() - t0) / args.number * 1e3)
                cpu[k].append((time.process_time() - c0) / args.number * 1e3)
    med = {k: statistics.median(v) for k, v in times.items()}
    med_cpu = {k: statistics.median(v) for k, v in cpu.items()}
    print(
        f"ResNet-style ({args.image}x{args.image}, batch {args.batch}, {sum(p.size for p in ours.parameters())} "
        f"parameters), {args.threads} thread(s); max |oarlock - onnxruntime| = {err:.2e}"
    )
    for k, v in med.items():
        c = med_cpu[k]
        print(
            f"  {k:40s} median {v:8.3f} ms/call ({v / med['onnxruntime']:.2f}x onnxruntime), "
            f"CPU {c:8.3f} ms/call ({c / med_cpu['onnxruntime']:.2f}x)"
        )


if __name__ == "__main__":
    main()
