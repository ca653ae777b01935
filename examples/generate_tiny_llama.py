"""Train the tiny Llama, save one decoding step with a KV cache as a program, and sample text
from it through the Predictor; eager generation without a cache runs beside it.

    python examples/generate_tiny_llama.py --device cpu
    python examples/generate_tiny_llama.py --device opencl --steps 100 --static --greedy
    python examples/generate_tiny_llama.py --quant int8      # or int4 (group-wise scales, --group-size), fp8

The model trains ``--steps`` steps on cpu (``--static``: under ``fw.jit.to_static``), then
``fw.jit.save`` writes ``conformance.models.LlamaKVDecoder`` (one token in, next-token logits
and the updated caches out; the batch is the only dynamic dim) and
``fw.inference.create_predictor`` serves it on ``--device`` with no Python model code.
The same prompt is continued twice: by the program with its cache (one token per run), and
by the eager model re-reading the whole sequence for every token (no cache). Both sample
with the same seed from their logits, so the two texts agree; the last line gives tokens/s
of each and the speed-up: medians of ``--repeat`` runs taken in turns, after a first run of
each (it builds kernels; eager mode builds generated kernels for every sequence length it
meets). ``--quant int8|int4|fp8`` quantises the trained model's linear layers and its token
embedding weight-only (``fw.quantization.weight_only_quantize(..., embedding=True)``) before it
is saved: the program then holds int8 (packed int4, or float8_e4m3fn) weights with
``weight_only_linear`` and ``weight_only_embedding`` ops. It then also reports the weights'
bytes against float32, the mean loss and perplexity of both models on the same ``--eval-batches``
held-out batches, and the float32 program's cached tokens/s timed in turns with the quantised
one (their ratio).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import framework as fw  # noqa: E402
from conformance.models import LlamaKVDecoder, build  # noqa: E402
from framework.static import InputSpec  # noqa: E402


def save_decoder(model: fw.nn.Layer, path: str) -> None:
    """Save one cached decoding step of ``model`` (a TinyLlama) at ``path``."""
    dec = LlamaKVDecoder(model)
    _, heads, t, d = dec.cache_shape(1)
    cache = InputSpec(["batch", heads, t, d], "float32")
    spec = [InputSpec(["batch", 1], "int64", name="ids"), InputSpec(["batch"], "int64", name="pos")]
    for i in range(len(model.blocks)):
        spec += [
            InputSpec(cache.shape, "float32", name=f"k{i}"),
            InputSpec(cache.shape, "float32", name=f"v{i}"),
        ]
    fw.jit.save(dec, path, input_spec=spec)


def _pick(logits: np.ndarray, rng: np.random.Generator, temperature: float) -> int:
    if temperature <= 0:
        return int(np.argmax(logits))
    z = logits.astype(np.float64) / temperature
    p = np.exp(z - z.max())
    return int(rng.choice(len(p), p=p / p.sum()))


def generate_cached(
    predictor: fw.inference.Predictor, prompt: list[int], n: int, seed: int, temperature: float
) -> tuple[list[int], list[np.ndarray]]:
    """Prompt then ``n`` sampled tokens through the saved program, one token per run; the
    caches stay on the predictor's device (``run(inputs)`` with tensors shares them)."""
    rng = np.random.default_rng(seed)
    names = predictor.get_input_names()
    shape = predictor.get_input_handle(names[2]).shape()
    dev = predictor.device
    caches = [fw.zeros([1, *shape[1:]], dtype="float32", device=dev) for _ in names[2:]]
    tokens, logits = list(prompt), []
    for pos in range(len(prompt) + n - 1):
        outs = predictor.run([np.array([[tokens[pos]]], np.int64), np.array([pos], np.int64), *caches])
        caches = outs[1:]
        if pos >= len(prompt) - 1:
            row = outs[0].numpy()[0]
            logits.append(row)
            tokens.append(_pick(row, rng, temperature))
    return tokens, logits


def generate_eager(
    model: fw.nn.Layer, prompt: list[int], n: int, seed: int, temperature: float, device: str
) -> tuple[list[int], list[np.ndarray]]:
    """The same sampling with the eager model re-reading the whole sequence per token."""
    rng = np.random.default_rng(seed)
    tokens, logits = list(prompt), []
    with fw.no_grad(), fw.device(device):
        for _ in range(n):
            row = model(fw.to_tensor(np.array([tokens], np.int64), device=device)).numpy()[0, -1]
            logits.append(row)
            tokens.append(_pick(row, rng, temperature))
    return tokens, logits


def weight_bytes(model: fw.nn.Layer) -> int:
    """Bytes of the model's weights as stored: parameters and persistent buffers (the rotary
    tables included), each at its own dtype."""
    return sum(int(np.prod(t.shape)) * np.dtype(t.dtype).itemsize for t in model.state_dict().values())


def compare_quantised(task, float_model: fw.nn.Layer, quant: fw.nn.Layer, batches: list) -> dict[str, float]:
    """Weight bytes and mean loss of both models on the same ``batches`` (drawn after
    training, before any calibration batch, so seen by neither)."""
    losses: dict[str, list[float]] = {"float": [], "quant": []}
    with fw.no_grad(), fw.device("cpu"):
        for x, y in batches:
            losses["float"].append(float(task.loss(float_model(x), y).item()))
            losses["quant"].append(float(task.loss(quant(x), y).item()))
    return {
        "bytes": weight_bytes(quant),
        "float_bytes": weight_bytes(float_model),
        "loss": float(np.mean(losses["quant"])),
        "float_loss": float(np.mean(losses["float"])),
    }


def ptq_int8(model: fw.nn.Layer, calibration: list) -> fw.nn.Layer:
    """Post-training int8 of weights and activations: per-channel abs-max weight scales, a
    histogram (99.99th percentile) activation scale per layer from the calibration batches."""
    from framework.quantization import PTQ, QuantConfig
    from framework.quantization.observers import AbsmaxObserver, HistObserver

    ptq = PTQ(QuantConfig(activation=HistObserver(percent=0.9999), weight=AbsmaxObserver(quant_axis=1)))
    observed = ptq.quantize(model)
    with fw.no_grad(), fw.device("cpu"):
        for x in calibration:
            observed(x)
    return ptq.convert(observed)


def main(argv: list[str] | None = None) -> dict[str, float]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--device",
        default=os.environ.get("OARLOCK_DEVICE", "cpu"),
        help="where the Predictor and eager generation run",
    )
    p.add_argument("--steps", type=int, default=200, help="training steps first (on cpu)")
    p.add_argument("--static", action="store_true", help="train under fw.jit.to_static")
    p.add_argument("--prompt", default="The river ")
    p.add_argument(
        "--tokens", type=int, default=48, help="new tokens (prompt + tokens <= 64, the model's context)"
    )
    p.add_argument("--temperature", type=float, default=0.8)
    p.add_argument("--greedy", action="store_true", help="argmax instead of sampling")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--repeat", type=int, default=3, help="timed runs of each (medians are reported)")
    p.add_argument("--save", default=None, help="where to save the program (default: a temporary folder)")
    p.add_argument(
        "--quant",
        choices=("none", "int8", "int4", "fp8", "ptq"),
        default="none",
        help="weight-only quantisation before saving (ptq: int8 weights and activations, calibrated)",
    )
    p.add_argument(
        "--group-size", type=int, default=64, help="input rows per int4 scale (-1: one per channel)"
    )
    p.add_argument("--eval-batches", type=int, default=8, help="batches the loss change is measured on")
    p.add_argument(
        "--method",
        choices=("absmax", "search", "gptq"),
        default="absmax",
        help="int8/int4 quantiser: abs-max scales, clip search, or GPTQ (uses --calib-batches)",
    )
    p.add_argument("--asymmetric", action="store_true", help="a zero point per group (int8/int4)")
    p.add_argument(
        "--sensitive-dtype",
        default=None,
        choices=("int8", "int4", "fp8"),
        help="dtype of the embedding and output head (default: int8 for --quant int4, else --quant)",
    )
    p.add_argument(
        "--calib-batches", type=int, default=16, help="training-text batches GPTQ / search calibrate on"
    )
    args = p.parse_args(argv)
    temperature = 0.0 if args.greedy else args.temperature

    task = build("tiny_llama", seed=args.seed, device="cpu", static=args.static)
    with fw.device("cpu"):
        for step in range(args.steps):
            loss = task.train_step(step)
    if args.steps:
        print(
            f"trained {args.steps} steps on cpu{' under to_static' if args.static else ''}: loss {float(loss.item()):.4f}"
        )
    model = task.model
    if isinstance(model.forward, fw.jit.StaticFunction):
        model.forward = model.forward._fn  # eager generation reads the model as written
    model.eval()
    float_model, report = model, {}
    if args.quant != "none":
        group = args.group_size if args.quant == "int4" else -1
        held_out = [task.batch(10_000 + i) for i in range(args.eval_batches)]
        calib = None
        if (args.method != "absmax" and args.quant != "fp8" or args.quant == "ptq") and args.calib_batches:
            calib = [task.batch(20_000 + i)[0] for i in range(args.calib_batches)]
        model = (
            ptq_int8(model, calib or [])
            if args.quant == "ptq"
            else fw.quantization.weight_only_quantize(
                model,
                args.quant,
                group_size=group,
                embedding=True,
                method=args.method if args.quant != "fp8" else "absmax",
                asymmetric=args.asymmetric and args.quant != "fp8",
                calibration=calib,
                sensitive_dtype=args.sensitive_dtype,
            )
        )
        report = compare_quantised(task, float_model, model, held_out)
        print(
            f"{args.quant} weights: {report['bytes']} bytes vs float32 {report['float_bytes']} "
            f"({report['bytes'] / report['float_bytes']:.2f}x); loss {report['loss']:.4f} vs "
            f"{report['float_loss']:.4f} ({100 * (report['loss'] / report['float_loss'] - 1):+.2f} %), "
            f"perplexity {np.exp(report['loss']):.3f} vs {np.exp(report['float_loss']):.3f} "
            f"(mean of {args.eval_batches} held-out batches)"
        )
    vocab = task.info["vocab"]
    lookup = {c: i for i, c in enumerate(vocab)}
    prompt = [lookup[c] for c in args.prompt if c in lookup]
    if not prompt or len(prompt) + args.tokens > model.rope_cos.shape[0]:
        p.error(
            f"the prompt ({len(prompt)} known characters) plus --tokens must fit in {model.rope_cos.shape[0]}"
        )

    with tempfile.TemporaryDirectory() as tmp:
        path = args.save or os.path.join(tmp, "tiny_llama_decode")
        save_decoder(model, path)
        print(
            f"saved ({args.quant if args.quant != 'none' else 'float32'} weights): "
            f"{os.path.getsize(path + '.safetensors')} bytes"
        )
        config = fw.inference.Config(path)
        config.set_device(args.device)
        predictor = fw.inference.create_predictor(config)
        float_predictor = None
        if args.quant != "none":  # the float32 program, timed in turns with the quantised one
            save_decoder(float_model, os.path.join(tmp, "float_decode"))
            fconfig = fw.inference.Config(os.path.join(tmp, "float_decode"))
            fconfig.set_device(args.device)
            float_predictor = fw.inference.create_predictor(fconfig)
            generate_cached(float_predictor, prompt, args.tokens, args.seed, temperature)
    generate_cached(predictor, prompt, args.tokens, args.seed, temperature)  # warm up: lowering, kernels
    eager_model = model.to(args.device)
    # warm up every sequence length once: generated kernels are built per row length
    generate_eager(eager_model, prompt, args.tokens, args.seed, temperature, args.device)
    # timed in turns, so a load change on a shared machine hits both alike; medians
    times: dict[str, list[float]] = {"cached": [], "eager": [], "float": []}
    for _ in range(args.repeat):
        if float_predictor is not None:
            t0 = time.perf_counter()
            generate_cached(float_predictor, prompt, args.tokens, args.seed, temperature)
            times["float"].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        cached, lc = generate_cached(predictor, prompt, args.tokens, args.seed, temperature)
        times["cached"].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        eager, le = generate_eager(eager_model, prompt, args.tokens, args.seed, temperature, args.device)
        times["eager"].append(time.perf_counter() - t0)
    t_cached, t_eager = (float(np.median(times[k])) for k in ("cached", "eager"))
    diff = max(float(np.abs(a - b).max()) for a, b in zip(lc, le))
    text = "".join(vocab[i] for i in cached)
    print(f"program + KV cache on {args.device}: {text!r}")
    if eager != cached:
        print(f"eager, no cache:      {''.join(vocab[i] for i in eager)!r}")
    rates = {"cached": args.tokens / t_cached, "eager": args.tokens / t_eager}
    print(f"same tokens: {eager == cached}; largest logit difference {diff:.2e}")
    print(
        f"tokens/s on {args.device}: saved program with KV cache {rates['cached']:.1f}, eager without cache "
        f"{rates['eager']:.1f} ({rates['cached'] / rates['eager']:.2f}x; medians of {args.repeat})"
    )
    if float_predictor is not None:
        rates["float"] = args.tokens / float(np.median(times["float"]))
        print(
            f"tokens/s on {args.device}, saved program with KV cache: {args.quant} {rates['cached']:.1f}, "
            f"float32 {rates['float']:.1f} ({rates['cached'] / rates['float']:.2f}x; medians of {args.repeat})"
        )
    rates.update(report)
    return rates


if __name__ == "__main__":
    main()
