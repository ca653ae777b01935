"""Train, compress, infer: the tiny Llama in float32, bfloat16, int8 weight-only, int4
weight-only (group 64) and PTQ int8 (weights and activations), side by side in one run.

    python benchmarks/compression.py                 # 200 training steps, 48 tokens, 5 rounds
    python benchmarks/compression.py --steps 60 --tokens 24 --repeat 3
    python benchmarks/compression.py --dim 1024 --layers 6 --hidden 2816 --heads 16 --steps 0 \
        --variants float32,int8,int4 --repeat 9 --threads 1     # memory-bound decoding

The model trains ``--steps`` steps on windows of the first 80 % of
``conformance/data/tiny_verse.txt``; the held-out loss is the mean next-character cross
entropy on every window of the last 20 % (never trained on). Each variant is saved with
``fw.jit.save`` as one cached decoding step (``LlamaKVDecoder``) and served by the Predictor;
tokens/s is greedy generation at batch 1, medians of ``--repeat`` rounds taken in turns (one
run of every variant per round, after a warm-up run of each); "cpu ms/token" is the process's
CPU time per token (all its threads), steadier than wall time on a shared machine. Variants
(``--variants``): float32, bf16-rounded weights, int8 / fp8 weight-only (per channel), int4
group 64 (abs-max), int4 GPTQ group 32 (calibrated on training windows; the output head in
int8, as ``weight_only_quantize`` keeps it by default for int4), PTQ int8. Bytes are the saved weights
file (parameters, int8 / packed int4 weights and their scales; the embedding and norms stay
float in every variant). The last lines compare with the issue's goals: int8 loss within 1 %
of float32, int4 within 3 %, PTQ within 2 %; int8 tokens/s >= 1.5x float32 and bytes <= 0.3x.

``--dim/--layers/--hidden/--heads`` size the model (default: the tiny Llama, 0.43 MB of
weights, which sit in cache: its decoding is bound by dispatch, not by reading weights). A
larger model whose float32 weights are well above the last-level cache (``--dim 1024 --layers
6 --hidden 2816``: 0.3 GB) makes decoding bound by memory traffic, where weight-only int8
pays; with ``--steps 0`` it is not trained (random weights: the loss column then only says how
far quantisation moves an untrained model). ``--threads N`` sets ``OARLOCK_NUM_THREADS``.
"""

from __future__ import annotations

import argparse
import os
import sys

if __name__ == "__main__" and "--threads" in sys.argv[:-1]:  # before the cpu plugin reads it
    _n = sys.argv[sys.argv.index("--threads") + 1]
    if _n != "0":
        os.environ["OARLOCK_NUM_THREADS"] = _n
import tempfile
import time
from typing import Any

import numpy as np

os.environ.setdefault("OARLOCK_COMPILE_BACKGROUND", "0")  # time built kernels, not a cold cache's stand-ins
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import framework as fw  # noqa: E402
import framework.nn.functional as F  # noqa: E402
from conformance.models import TinyLlama, build, char_corpus  # noqa: E402
from examples.generate_tiny_llama import generate_cached, save_decoder  # noqa: E402
from framework.quantization import PTQ, QuantConfig, weight_only_quantize  # noqa: E402
from framework.quantization.observers import AbsmaxObserver, HistObserver  # noqa: E402

SEQ = 64


def windows(ids: np.ndarray, step: int) -> tuple[np.ndarray, np.ndarray]:
    starts = np.arange(0, len(ids) - SEQ - 1, step)
    x = np.stack([ids[s : s + SEQ] for s in starts])
    y = np.stack([ids[s + 1 : s + SEQ + 1] for s in starts])
    return x, y


def train(
    steps: int, seed: int, size: dict[str, int] | None = None
) -> tuple[fw.nn.Layer, np.ndarray, list[str]]:
    """The tiny Llama (or one of ``size``: TinyLlama's dim/heads/layers/hidden) trained on the
    first 80 % of the text; returns it and the held-out ids."""
    ids, vocab = char_corpus()
    cut = int(len(ids) * 0.8)
    train_ids, held = ids[:cut], ids[cut:]
    task = build("tiny_llama", seed=seed, device="cpu")
    if size:
        with fw.device("cpu"):
            fw.seed(seed)
            task.model = TinyLlama(len(vocab), max_seq=SEQ, **size)
            task.optimizer = fw.optim.AdamW(learning_rate=1e-3, parameters=task.model.parameters())
            task.info.pop("scheduler", None)
    rng = np.random.default_rng(seed)
    with fw.device("cpu"):
        for _ in range(steps):
            starts = rng.integers(0, len(train_ids) - SEQ - 1, 16)
            x = np.stack([train_ids[s : s + SEQ] for s in starts])
            y = np.stack([train_ids[s + 1 : s + SEQ + 1] for s in starts])
            loss = task.loss(task.model(fw.to_tensor(x)), fw.to_tensor(y))
            loss.backward()
            task.update()
    task.model.eval()
    return task.model, held, vocab


def held_out_loss(model: fw.nn.Layer, held: np.ndarray, dtype: str = "float32") -> float:
    x, y = windows(held, SEQ // 2)
    with fw.no_grad():
        logits = model(fw.to_tensor(x))
        flat = logits.reshape((-1, logits.shape[-1])).astype("float32")
        return float(F.cross_entropy(flat, fw.to_tensor(y.reshape(-1))).item())


#: the variants ``--variants`` picks from (by these short names)
VARIANTS = ("float32", "bf16", "int8", "fp8", "int4", "int4gptq", "ptq")


def variants(
    model: fw.nn.Layer, calib: np.ndarray, which: tuple[str, ...] = VARIANTS
) -> dict[str, fw.nn.Layer]:
    out = {"float32": model}
    if "bf16" in which:
        out["bf16-rounded weights"] = _bf16(model)
    if "int8" in which:
        out["int8 weight-only"] = weight_only_quantize(model, "int8")
    if "fp8" in which:
        out["fp8 weight-only"] = weight_only_quantize(model, "fp8")
    if "int4" in which:
        out["int4 weight-only g64"] = weight_only_quantize(model, "int4", group_size=64)
    if "int4gptq" in which:  # GPTQ on calibration windows of the training text, groups of 32
        batches = [fw.to_tensor(calib[k : k + 8]) for k in range(0, len(calib), 8)]
        out["int4 GPTQ g32"] = weight_only_quantize(
            model, "int4", group_size=32, method="gptq", calibration=batches
        )
    if "ptq" not in which:
        return out
    ptq = PTQ(QuantConfig(activation=HistObserver(percent=0.9999), weight=AbsmaxObserver(quant_axis=1)))
    observed = ptq.quantize(model)
    with fw.no_grad():
        for k in range(0, len(calib), 8):
            observed(fw.to_tensor(calib[k : k + 8]))
    out["PTQ int8 (w+a)"] = ptq.convert(observed)
    return out


def _bf16(model: fw.nn.Layer) -> fw.nn.Layer:
    """A copy whose Linear weights are bfloat16 (computed in float32: the weights round, the
    activations do not), so the rounding of the weights is what is measured."""
    import copy

    m = copy.deepcopy(model)
    for layer in m.sublayers():
        if isinstance(layer, fw.nn.Linear):
            layer.weight.set_value(layer.weight.astype("bfloat16").astype("float32"))
    return m


def file_bytes(path: str) -> int:
    return os.path.getsize(path + ".safetensors")


def gemv(size: int, repeat: int, total_mb: int = 256) -> dict[str, float]:
    """Microseconds of one batch-1 product ``[1, size] @ [size, size]`` in eager mode: float32
    ``F.linear`` against ``weight_only_linear`` with int8 and int4 (group 64) weights (the
    cpu plugin's fused kernel), medians of ``repeat`` rounds taken in turns. Each round runs
    over enough distinct weights for ``total_mb`` MB of float32 (a product reads its weight
    from memory, not from the cache, as in decoding a model larger than the cache)."""
    from framework.nn.quant import weight_only_linear, weight_quantize

    fw.seed(0)
    count = max(1, -(-total_mb * (1 << 20) // (4 * size * size)))
    ws = [fw.randn([size, size]) * 0.02 for _ in range(count)]
    x = fw.randn([1, size])
    q8 = [weight_quantize(w, "weight_only_int8") for w in ws]
    q4 = [weight_quantize(w, "weight_only_int4", group_size=64) for w in ws]
    runs = {
        "float32": lambda i: F.linear(x, ws[i]),
        "int8": lambda i: weight_only_linear(x, q8[i][0], weight_scale=q8[i][1]),
        "int4 g64": lambda i: weight_only_linear(
            x, q4[i][0], weight_scale=q4[i][1], weight_dtype="int4", group_size=64
        ),
    }
    times: dict[str, list[float]] = {k: [] for k in runs}
    with fw.no_grad():
        for f in runs.values():
            f(0).numpy()
        for _ in range(repeat):
            for k, f in runs.items():
                t = time.perf_counter()
                for i in range(count):
                    y = f(i)
                y.numpy()
                times[k].append((time.perf_counter() - t) / count * 1e6)
    return {k: float(np.median(v)) for k, v in times.items()}


def main(argv: list[str] | None = None) -> dict[str, dict[str, float]]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--tokens", type=int, default=48)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--gemv", type=int, default=2048, help="size of the batch-1 product timed alone (0: none)")
    p.add_argument("--dim", type=int, default=64, help="model width (64: the tiny Llama)")
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--hidden", type=int, default=172, help="SwiGLU hidden width")
    p.add_argument("--heads", type=int, default=4)
    p.add_argument(
        "--variants", default=",".join(VARIANTS), help=f"comma-separated, of {', '.join(VARIANTS)}"
    )
    p.add_argument("--threads", type=int, default=0, help="OARLOCK_NUM_THREADS (0: the plugin's default)")
    p.add_argument("--no-loss", action="store_true", help="skip the held-out loss (slow on a large model)")
    args = p.parse_args(argv)
    which = tuple(v.strip() for v in args.variants.split(",") if v.strip())
    bad = [v for v in which if v not in VARIANTS]
    if bad:
        p.error(f"--variants: unknown {bad}; choose from {', '.join(VARIANTS)}")
    from plugins.cpu import threads

    threads.apply()
    print(f"cpu threads: {threads.budget()}")
    if args.gemv:
        us = gemv(args.gemv, args.repeat)
        print(
            f"batch-1 product [1, {args.gemv}] @ [{args.gemv}, {args.gemv}], weights cycled past the cache "
            f"(us, medians): " + ", ".join(f"{k} {v:.0f} ({us['float32'] / v:.2f}x)" for k, v in us.items())
        )

    t0 = time.perf_counter()
    tiny = dict(dim=64, layers=2, hidden=172, heads=4)
    size = dict(dim=args.dim, layers=args.layers, hidden=args.hidden, heads=args.heads)
    model, held, vocab = train(args.steps, args.seed, None if size == tiny else size)
    n_lin = sum(
        int(np.prod(x.shape)) for n, x in model.named_parameters() if n.endswith("weight") and x.ndim == 2
    )
    print(
        f"model dim {args.dim}, {args.layers} layers, hidden {args.hidden}: {n_lin * 4 / 1e6:.1f} MB of "
        f"float32 2-d weights; trained {args.steps} steps in {time.perf_counter() - t0:.0f} s; "
        f"held-out text {len(held)} characters"
    )
    ids, _ = char_corpus()
    calib, _ = windows(ids[: int(len(ids) * 0.8)], 97)
    models = variants(model, calib[:32], which)
    prompt = [vocab.index(c) for c in "The river " if c in vocab]
    rows: dict[str, dict[str, Any]] = {}
    preds = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, m in models.items():
            path = os.path.join(
                tmp, name.replace(" ", "_").replace("(", "").replace(")", "").replace("+", "")
            )
            save_decoder(m, path)
            config = fw.inference.Config(path)
            preds[name] = fw.inference.create_predictor(config)
            rows[name] = {
                "loss": float("nan") if args.no_loss else held_out_loss(m, held),
                "bytes": file_bytes(path),
                "times": [],
            }
        for name, pr in preds.items():  # warm-up: lowering, kernels
            rows[name]["text"] = generate_cached(pr, prompt, args.tokens, args.seed, 0.0)[0]
        for _ in range(args.repeat):
            for name, pr in preds.items():
                t, c = time.perf_counter(), time.process_time()
                generate_cached(pr, prompt, args.tokens, args.seed, 0.0)
                rows[name]["times"].append(time.perf_counter() - t)
                rows[name].setdefault("cpu", []).append(time.process_time() - c)
    base = rows["float32"]
    print(
        f"{'variant':<22}{'held-out loss':>14}{'vs fp32':>9}{'tokens/s':>10}{'vs fp32':>9}{'bytes':>11}{'vs fp32':>9}"
        f"{'cpu ms/token':>14}{'vs fp32':>9}"
    )
    base_cpu = float(np.median(base["cpu"])) / args.tokens * 1e3
    result = {}
    for name, r in rows.items():
        rate = args.tokens / float(np.median(r["times"]))
        cpu = float(np.median(r["cpu"])) / args.tokens * 1e3  # CPU time (all threads): steadier under load
        r["rate"] = rate
        result[name] = {"loss": r["loss"], "tokens_per_s": rate, "bytes": r["bytes"], "cpu_ms": cpu}
        print(
            f"{name:<22}{r['loss']:>14.4f}{(r['loss'] / base['loss'] - 1) * 100:>+8.2f}%"
            f"{rate:>10.1f}{rate / (args.tokens / float(np.median(base['times']))):>8.2f}x"
            f"{r['bytes']:>11}{r['bytes'] / base['bytes']:>8.2f}x"
            f"{cpu:>14.2f}{base_cpu / cpu:>8.2f}x"
        )
    same = {n: r["text"] == base["text"] for n, r in rows.items()}
    print(f"same greedy text as float32 ({args.tokens} tokens): {same}")
    fp = result["float32"]
    checks = {
        "int8 weight-only": [
            ("int8 loss within 1 %", lambda r: r["loss"] <= fp["loss"] * 1.01),
            ("int8 tokens/s >= 1.5x", lambda r: r["tokens_per_s"] >= 1.5 * fp["tokens_per_s"]),
            ("int8 bytes <= 0.3x", lambda r: r["bytes"] <= 0.3 * fp["bytes"]),
        ],
        "int4 weight-only g64": [("int4 g64 loss within 3 %", lambda r: r["loss"] <= fp["loss"] * 1.03)],
        "int4 GPTQ g32": [("int4 GPTQ g32 loss within 3 %", lambda r: r["loss"] <= fp["loss"] * 1.03)],
        "PTQ int8 (w+a)": [("PTQ int8 loss within 2 %", lambda r: r["loss"] <= fp["loss"] * 1.02)],
    }
    goals = [
        (g, ok(result[v]))
        for v, cs in checks.items()
        if v in result
        for g, ok in cs
        if not (args.no_loss and "loss" in g)
    ]
    print("goals: " + "; ".join(f"{g}: {'met' if ok else 'NOT met'}" for g, ok in goals))
    return result


if __name__ == "__main__":
    main()
