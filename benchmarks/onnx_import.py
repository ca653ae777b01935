"""An imported ONNX model on Oarlock's cpu against ONNX Runtime, one thread each.

    python benchmarks/onnx_import.py [--batch 8] [--image 32] [--repeat 7] [--number 20] [--threads 1]
        [--passes O2,inference] [--model resnet|resnet18] [--without-pool]

The ResNet-style model of ``tests/onnx_models.py`` (stem, three basic blocks, GAP, Gemm) is
imported with ``fw.onnx.load`` (a traced program, passes, the compiler's fused kernels) and
run by the executor, once per level in ``--passes`` (``O2``, the importer's default;
``inference`` also folds each BatchNormalization into its Conv); ONNX Runtime runs the same file with
``intra_op_num_threads``. Timed side by side in one process, taking turns; medians of
``--repeat`` rounds of ``--number`` calls, of wall time and of the process's CPU time (all its
threads: on a loaded machine the wall time also counts the time the OS ran others).

``--model resnet18``: ResNet-18's shapes instead (``tests/onnx_models.py``'s ``resnet18``: 7x7
stride 2 stem, 3x3 stride 2 max pool, 2 basic blocks x 64/128/256/512 channels; ``--image 224
--batch 1`` is the usual input). ``--without-pool``: also each level loaded with the
``conv_nchwc`` pass's max pool rewrites off (the pool after the stem leaves the blocked layout
and comes back: the program before ``max_pool2d_nchwc``), side by side.

``--pool``: ResNet-18's max pool alone (3x3 stride 2 pad 1 of a 64 x 112 x 112 relu output,
``--batch`` images): ``max_pool2d_nchwc`` on the blocked value against ``from_nchwc`` +
``max_pool2d`` + ``to_nchwc`` and ``max_pool2d`` on NCHW, eager, CPU time per call.

``--layers``: each convolution of the model alone instead, the cpu plugin's ``conv2d`` kernel
(plugins/cpu/conv.c) against ONNX Runtime's Conv + bias + Relu node of the same shape (what it
runs after folding the BatchNormalization), CPU time per call; ``--against OLD.c`` adds the
kernel built from another conv.c (``git show main:plugins/cpu/conv.c > /tmp/old.c``) side by
side (without ``--layers``: the whole model again with that kernel), and ``--tiles`` other register tiles (``-DCONV_VEC=64``, ``-DCONV_MR=8 -DCONV_NV=2``...:
plugins/cpu/conv.py's ``TILE_OPTIONS``).

``--profile``: where one call's time goes, per instruction of the executor (CPU time of the
thread, median of ``--repeat`` x ``--number`` calls, graph replay off so each kernel is timed
alone), for each level in ``--passes``.
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
if "--profile" in sys.argv:  # each instruction timed alone: no replay of a captured run
    os.environ["OARLOCK_GRAPHS"] = "0"

import numpy as np  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("OARLOCK_COMPILE_BACKGROUND", "0")  # time built kernels, not a cold cache's stand-ins
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
    ap.add_argument("--model", default="resnet", choices=("resnet", "resnet18"), help="see above")
    ap.add_argument("--without-pool", action="store_true", help="also without the max pool rewrite")
    ap.add_argument("--pool", action="store_true", help="ResNet-18's max pool alone (see above)")
    ap.add_argument("--layers", action="store_true", help="each conv of the model alone (see above)")
    ap.add_argument("--against", default="", help="another conv.c built beside this one (model or --layers)")
    ap.add_argument("--tiles", default="", help="with --layers: ';'-separated option sets of conv.c's tiles")
    ap.add_argument("--profile", action="store_true", help="CPU time per instruction of one call (see above)")
    args = ap.parse_args()
    if args.layers:
        layers(args)
        return
    if args.pool:
        pool(args)
        return
    if args.profile:
        profile(args)
        return

    import onnx_models
    import onnxruntime as ort

    import framework as fw

    model = getattr(onnx_models, args.model)(image=args.image)
    x = np.random.default_rng(0).standard_normal((args.batch, 3, args.image, args.image)).astype(np.float32)
    so = ort.SessionOptions()
    so.intra_op_num_threads = args.threads
    so.inter_op_num_threads = 1
    theirs = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    levels = [p.strip() for p in args.passes.split(",") if p.strip()]
    models = {p: fw.onnx.load(model, device="cpu", passes=p) for p in levels}
    ours = models[levels[0]]
    xt = fw.to_tensor(x)
    if args.against:  # the same levels with the conv kernel built from another conv.c
        from plugins.cpu import conv
        from plugins.cpu.compiler import own_program

        other, orig = own_program(args.against, "conv2d_fwd", (), "conv2d"), conv._program
        conv._program = lambda dt: other
        try:
            with fw.no_grad():
                for p in levels:
                    m = models[f"{p}, conv.c from {os.path.basename(args.against)}"] = fw.onnx.load(
                        model, device="cpu", passes=p
                    )
                    m(xt).numpy()  # traced and bound now: its convs keep the other kernel
        finally:
            conv._program = orig
    if args.without_pool:  # the same levels with the max pool left plain (the pass's rewrite off)
        from framework.ir.passes import conv_fusion

        saved = conv_fusion.BlockedMaxPool.match_and_rewrite, conv_fusion.BlockedMaxPoolOp.match_and_rewrite
        conv_fusion.BlockedMaxPool.match_and_rewrite = conv_fusion.BlockedMaxPoolOp.match_and_rewrite = (
            lambda self, op, rewriter: False
        )
        try:
            with fw.no_grad():
                for p in levels:
                    m = models[f"{p}, pool not blocked"] = fw.onnx.load(model, device="cpu", passes=p)
                    m(xt).numpy()  # traced and optimized now, without the rewrite
        finally:
            conv_fusion.BlockedMaxPool.match_and_rewrite, conv_fusion.BlockedMaxPoolOp.match_and_rewrite = (
                saved
            )
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
        f"{'ResNet-18' if args.model == 'resnet18' else 'ResNet-style'} ({args.image}x{args.image}, batch {args.batch}, {sum(p.size for p in ours.parameters())} "
        f"parameters), {args.threads} thread(s); max |oarlock - onnxruntime| = {err:.2e}"
    )
    for k, v in med.items():
        c = med_cpu[k]
        print(
            f"  {k:40s} median {v:8.3f} ms/call ({v / med['onnxruntime']:.2f}x onnxruntime), "
            f"CPU {c:8.3f} ms/call ({c / med_cpu['onnxruntime']:.2f}x)"
        )


def pool(args: argparse.Namespace) -> None:
    import framework as fw
    from framework.incubate.nn import functional as IF
    from framework.nn import functional as F

    rng = np.random.default_rng(0)
    x = np.maximum(rng.standard_normal((args.batch, 64, 112, 112)).astype(np.float32), 0)
    xt = fw.to_tensor(x)
    xb = IF.to_nchwc(xt)
    runs = {
        "max_pool2d_nchwc (blocked in and out)": lambda: IF.max_pool2d_nchwc(xb, 64, 3, 2, 1).numpy(),
        "from_nchwc + max_pool2d + to_nchwc": lambda: IF.to_nchwc(
            F.max_pool2d(IF.from_nchwc(xb, 64), 3, 2, 1)
        ).numpy(),
        "max_pool2d (NCHW)": lambda: F.max_pool2d(xt, 3, 2, 1).numpy(),
    }
    cpu: dict[str, list[float]] = {k: [] for k in runs}
    with fw.no_grad():
        for f in runs.values():
            f()
        for _ in range(args.repeat):
            for k, f in runs.items():
                c0 = time.process_time()
                for _ in range(args.number):
                    f()
                cpu[k].append((time.process_time() - c0) / args.number * 1e3)
    base = statistics.median(cpu["from_nchwc + max_pool2d + to_nchwc"])
    print(f"ResNet-18's max pool, batch {args.batch}, {args.threads} thread(s), eager, CPU time per call:")
    for k, v in cpu.items():
        m = statistics.median(v)
        print(f"  {k:40s} {m:8.3f} ms ({m / base:.2f}x the layout round trip)")


def profile(args: argparse.Namespace) -> None:
    from onnx_models import resnet

    import framework as fw
    from framework.ir import memory_plan

    model = resnet(image=args.image)
    xt = fw.to_tensor(
        np.random.default_rng(0).standard_normal((args.batch, 3, args.image, args.image)).astype(np.float32)
    )
    for level in [p.strip() for p in args.passes.split(",") if p.strip()]:
        m = fw.onnx.load(model, device="cpu", passes=level)
        times: dict[tuple[int, str], list[float]] = {}

        def timed(plan: object, start: int = 0, times: dict = times) -> None:
            for k, f in enumerate(plan.bound):  # type: ignore[attr-defined]
                t0 = time.thread_time()
                f()
                times.setdefault((k, plan.names[k]), []).append(time.thread_time() - t0)  # type: ignore[attr-defined]

        orig = memory_plan._Plan._launch
        with fw.no_grad():
            m(xt).numpy()  # trace, compile, plan
            memory_plan._Plan._launch = timed
            try:
                for _ in range(args.repeat * args.number):
                    m(xt).numpy()
            finally:
                memory_plan._Plan._launch = orig
        med = {k: statistics.median(v) * 1e6 for k, v in times.items()}
        by_op: dict[str, float] = {}
        for (_, name), v in med.items():
            key = "fused (generated kernels)" if name.startswith("fused.") else name
            by_op[key] = by_op.get(key, 0.0) + v
        total = sum(med.values())
        print(f"passes={level}: {total:.0f} us CPU per call in {len(med)} instructions")
        for name, v in sorted(by_op.items(), key=lambda kv: -kv[1]):
            print(f"  {name:32s} {v:8.0f} us {100 * v / total:5.1f} %")
        for (k, name), v in med.items():
            print(f"    {k:3d} {name[:40]:40s} {v:8.0f}")


def _conv_shapes(model: object, batch: int, image: int) -> list[tuple]:
    """(x shape, w shape, stride, pad) of each Conv of ``model``, by ONNX shape inference."""
    import onnx

    inferred = onnx.shape_inference.infer_shapes(model)
    shapes = {
        v.name: [d.dim_value for d in v.type.tensor_type.shape.dim]
        for v in list(inferred.graph.value_info) + list(inferred.graph.input)
    }
    inits = {t.name: tuple(t.dims) for t in model.graph.initializer}
    out = []
    for node in model.graph.node:
        if node.op_type == "Conv":
            attrs = {a.name: list(a.ints) for a in node.attribute}
            xs = (
                [batch, *shapes[node.input[0]][1:3], image] if node.input[0] == "x" else shapes[node.input[0]]
            )
            xs[0] = batch
            out.append((tuple(xs), inits[node.input[1]], attrs["strides"][0], attrs["pads"][0]))
    return out


def layers(args: argparse.Namespace) -> None:
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper
    from onnx_models import resnet

    import framework as fw
    from plugins.cpu import conv
    from plugins.cpu.compiler import own_program

    fw.ones([1]).numpy()  # the plugin loads: its thread policy applies
    builds = {"conv.c": (conv._SOURCE, ())}
    if args.against:
        builds["against"] = (args.against, ())
    for t in filter(None, (t.strip() for t in args.tiles.split(";"))):
        builds[t] = (conv._SOURCE, tuple(t.split()))
    progs = {k: own_program(path, "conv2d_fwd", opts, "conv2d") for k, (path, opts) in builds.items()}
    so = ort.SessionOptions()
    so.intra_op_num_threads, so.inter_op_num_threads = args.threads, 1
    rng = np.random.default_rng(0)
    orig = conv._program
    totals = dict.fromkeys([*progs, "onnxruntime"], 0.0)
    print(
        f"conv layers of the ResNet-style model, batch {args.batch}, {args.threads} thread(s): CPU us per call"
    )
    print(f"{'x -> w, stride':<36}" + "".join(f"{k[:14]:>16}" for k in totals) + "  (ratio to onnxruntime)")
    for xs, ws, stride, pad in _conv_shapes(resnet(image=args.image), args.batch, args.image):
        x = rng.standard_normal(xs).astype(np.float32)
        w = rng.standard_normal(ws).astype(np.float32)
        b = rng.standard_normal(ws[0]).astype(np.float32)
        oh = (xs[2] + 2 * pad - ws[2]) // stride + 1
        calls = {}
        for k, prog in progs.items():
            conv._program = lambda dt, p=prog: p
            y = np.empty((xs[0], ws[0], oh, oh), np.float32)
            calls[k] = conv.conv2d_call(x, w, y, (stride,) * 2, ((pad, pad),) * 2, (1, 1), 1)
        conv._program = orig
        graph = helper.make_graph(
            [
                helper.make_node("Conv", ["x", "w", "b"], ["c"], strides=[stride] * 2, pads=[pad] * 4),
                helper.make_node("Relu", ["c"], ["y"]),
            ],
            "conv",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, xs)],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
            [onnx.numpy_helper.from_array(w, "w"), onnx.numpy_helper.from_array(b, "b")],
        )
        sess = ort.InferenceSession(
            helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString(),
            so,
            providers=["CPUExecutionProvider"],
        )
        calls["onnxruntime"] = lambda s=sess, x=x: s.run(None, {"x": x})
        reps = max(3, min(200, int(3e7 / (np.prod(ws) * oh * oh * xs[0]))))
        cpu: dict[str, list[float]] = {k: [] for k in calls}
        for f in calls.values():
            f()
        for _ in range(args.repeat):
            for k, f in calls.items():
                c0 = time.process_time()
                for _ in range(reps):
                    f()
                cpu[k].append((time.process_time() - c0) / reps * 1e6)
        med = {k: statistics.median(v) for k, v in cpu.items()}
        for k in med:
            totals[k] += med[k]
        name = f"{xs} -> {ws}, s{stride}"
        print(f"{name:<36}" + "".join(f"{med[k]:9.0f} {med[k] / med['onnxruntime']:5.2f}x" for k in med))
    t = totals["onnxruntime"]
    print(f"{'total':<36}" + "".join(f"{v:9.0f} {v / t:5.2f}x" for v in totals.values()))


if __name__ == "__main__":
    main()
