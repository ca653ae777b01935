"""Tier ``composites``: ops defined by their decomposition into primitives (softmax, norms,
activations, conv2d, pooling, attention, losses, ...), through the public API.

Each runs whichever path the core picks on the device (a fused kernel the plugin registered, a
generated kernel through compile access, or the decomposition); the path taken is recorded.
Forward values are compared with numpy references written here from the ops' definitions;
gradients with central finite differences of those references in float64.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from framework.testing import gradient_tolerance, tolerance

from ..cases import Case, Target
from ..checks import CheckFailure, assert_close, finite_difference, put

_erf = np.vectorize(math.erf, otypes=[np.float64])


# -- numpy references (float64) ------------------------------------------------------------
def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def log_softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    m = x.max(axis=axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=axis, keepdims=True))


def logsumexp(x: np.ndarray, axis: int = -1) -> np.ndarray:
    m = x.max(axis=axis, keepdims=True)
    return (m + np.log(np.exp(x - m).sum(axis=axis, keepdims=True))).squeeze(axis)


def layer_norm(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float = 1e-5) -> np.ndarray:
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def rms_norm(x: np.ndarray, w: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w


def sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def conv2d(x: np.ndarray, w: np.ndarray, b: np.ndarray | None, stride: int, padding: int, dilation: int, groups: int) -> np.ndarray:
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    oh = (h + 2 * padding - dilation * (kh - 1) - 1) // stride + 1
    ow = (wd + 2 * padding - dilation * (kw - 1) - 1) // stride + 1
    out = np.zeros((n, o, oh, ow))
    per = o // groups
    for oc in range(o):
        g = oc // per
        for i in range(oh):
            for j in range(ow):
                patch = xp[:, g * cg : (g + 1) * cg, i * stride : i * stride + dilation * (kh - 1) + 1 : dilation,
                           j * stride : j * stride + dilation * (kw - 1) + 1 : dilation]
                out[:, oc, i, j] = (patch * w[oc]).sum(axis=(1, 2, 3))
    return out if b is None else out + b.reshape(1, -1, 1, 1)


def pool2d(x: np.ndarray, k: int, stride: int, padding: int, kind: str) -> np.ndarray:
    n, c, h, w = x.shape
    fill = -np.inf if kind == "max" else np.nan
    xp = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)), constant_values=fill)
    oh, ow = (h + 2 * padding - k) // stride + 1, (w + 2 * padding - k) // stride + 1
    out = np.zeros((n, c, oh, ow))
    for i in range(oh):
        for j in range(ow):
            win = xp[:, :, i * stride : i * stride + k, j * stride : j * stride + k]
            out[:, :, i, j] = win.max(axis=(2, 3)) if kind == "max" else np.nanmean(win, axis=(2, 3))
    return out


def attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool) -> np.ndarray:
    s = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
    if causal:
        lq, lk = s.shape[-2:]
        s = np.where(np.tril(np.ones((lq, lk), bool)), s, -np.inf)
    return softmax(s) @ v


def rotary(x: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> np.ndarray:
    h = x.shape[-1] // 2
    rot = np.concatenate([-x[..., h:], x[..., :h]], axis=-1)
    return x * cos + rot * sin


def cross_entropy(logits: np.ndarray, labels: np.ndarray, smoothing: float = 0.0, ignore: int = -100) -> np.ndarray:
    lp = log_softmax(logits)
    keep = labels != ignore
    safe = np.where(keep, labels, 0)
    nll = -np.take_along_axis(lp, safe[:, None], axis=1)[:, 0]
    per = (1 - smoothing) * nll + smoothing * (-lp.mean(-1)) if smoothing else nll
    return np.asarray((per * keep).sum() / keep.sum())


def bce_logits(z: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.asarray(np.mean(np.maximum(z, 0) - z * y + np.log1p(np.exp(-np.abs(z)))))


def softplus(x: np.ndarray) -> np.ndarray:
    return np.where(x > 20, x, np.log1p(np.exp(x)))


# -- the database ------------------------------------------------------------------------------
@dataclass
class CompositeInfo:
    name: str
    run: Callable[..., Any]  #: (*tensors) -> Tensor, through the public API
    ref: Callable[..., np.ndarray]  #: (*float64 arrays) -> array
    inputs: Callable[[np.random.Generator], list[np.ndarray]]  #: float64 inputs (ints stay ints)
    grad: tuple[int, ...] = ()
    tol_scale: float = 10.0  #: decompositions round several times: 10x the primitive tolerance


def _u(rng: np.random.Generator, *shape: int, lo: float = -2.0, hi: float = 2.0) -> np.ndarray:
    return rng.uniform(lo, hi, shape)


def _db() -> list[CompositeInfo]:
    import framework as fw
    import framework.nn.functional as F

    cos_sin = lambda: np.random.default_rng(7).uniform(-1, 1, (2, 5, 6, 4))  # noqa: E731
    return [
        CompositeInfo("softmax", lambda x: F.softmax(x, axis=-1), softmax, lambda r: [_u(r, 3, 7) * 3], (0,)),
        CompositeInfo("softmax_axis0", lambda x: F.softmax(x, axis=0), lambda x: softmax(x, 0), lambda r: [_u(r, 4, 3)], (0,)),
        CompositeInfo("log_softmax", lambda x: F.log_softmax(x), log_softmax, lambda r: [_u(r, 3, 7) * 3], (0,)),
        CompositeInfo("logsumexp", lambda x: F.logsumexp(x, axis=-1), logsumexp, lambda r: [_u(r, 4, 6) * 5], (0,)),
        CompositeInfo("layer_norm", lambda x, w, b: F.layer_norm(x, x.shape[-1], w, b), layer_norm,
                      lambda r: [_u(r, 3, 8), _u(r, 8), _u(r, 8)], (0, 1, 2)),
        CompositeInfo("rms_norm", lambda x, w: F.rms_norm(x, None, w), rms_norm, lambda r: [_u(r, 2, 3, 8), _u(r, 8)], (0, 1)),
        CompositeInfo("gelu", lambda x: F.gelu(x), lambda x: 0.5 * x * (1 + _erf(x / math.sqrt(2))), lambda r: [_u(r, 4, 5, lo=-4, hi=4)], (0,)),
        CompositeInfo("gelu_tanh", lambda x: F.gelu(x, approximate=True),
                      lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3))),
                      lambda r: [_u(r, 4, 5, lo=-4, hi=4)], (0,)),
        CompositeInfo("silu", lambda x: F.silu(x), lambda x: x * sigmoid(x), lambda r: [_u(r, 4, 5, lo=-6, hi=6)], (0,)),
        CompositeInfo("sigmoid", lambda x: F.sigmoid(x), sigmoid, lambda r: [_u(r, 4, 5, lo=-8, hi=8)], (0,)),
        CompositeInfo("relu", lambda x: F.relu(x), lambda x: np.maximum(x, 0), lambda r: [_u(r, 4, 5) + 0.05], (0,)),
        CompositeInfo("leaky_relu", lambda x: F.leaky_relu(x, 0.1), lambda x: np.where(x > 0, x, 0.1 * x), lambda r: [_u(r, 4, 5) + 0.05], (0,)),
        CompositeInfo("softplus", lambda x: F.softplus(x), softplus, lambda r: [_u(r, 4, 5, lo=-10, hi=10)], (0,)),
        CompositeInfo("linear", lambda x, w, b: F.linear(x, w, b), lambda x, w, b: x @ w + b,
                      lambda r: [_u(r, 2, 3, 5), _u(r, 5, 4), _u(r, 4)], (0, 1, 2)),
        CompositeInfo("conv2d", lambda x, w, b: F.conv2d(x, w, b, stride=1, padding=1),
                      lambda x, w, b: conv2d(x, w, b, 1, 1, 1, 1), lambda r: [_u(r, 2, 2, 5, 5), _u(r, 3, 2, 3, 3), _u(r, 3)], (0, 1, 2)),
        CompositeInfo("conv2d_strided_dilated_groups", lambda x, w: F.conv2d(x, w, None, stride=2, padding=2, dilation=2, groups=2),
                      lambda x, w: conv2d(x, w, None, 2, 2, 2, 2), lambda r: [_u(r, 1, 4, 7, 6), _u(r, 4, 2, 3, 3)], (0, 1)),
        CompositeInfo("max_pool2d", lambda x: F.max_pool2d(x, 2, 2), lambda x: pool2d(x, 2, 2, 0, "max"),
                      lambda r: [r.permutation(2 * 3 * 6 * 6).reshape(2, 3, 6, 6) * 0.1], (0,)),
        CompositeInfo("avg_pool2d_padded", lambda x: F.avg_pool2d(x, 3, 2, padding=1), lambda x: pool2d(x, 3, 2, 1, "avg"),
                      lambda r: [_u(r, 1, 2, 7, 7)], (0,)),
        CompositeInfo("adaptive_avg_pool2d", lambda x: F.adaptive_avg_pool2d(x, 1), lambda x: x.mean(axis=(2, 3), keepdims=True),
                      lambda r: [_u(r, 2, 3, 4, 5)], (0,)),
        CompositeInfo("attention_causal", lambda q, k, v: F.attention(q, k, v, is_causal=True), lambda q, k, v: attention(q, k, v, True),
                      lambda r: [_u(r, 2, 2, 5, 4), _u(r, 2, 2, 5, 4), _u(r, 2, 2, 5, 4)], (0, 1, 2)),
        CompositeInfo("attention", lambda q, k, v: F.attention(q, k, v), lambda q, k, v: attention(q, k, v, False),
                      lambda r: [_u(r, 1, 3, 4, 8), _u(r, 1, 3, 6, 8), _u(r, 1, 3, 6, 8)], (0, 1, 2)),
        CompositeInfo("rotary_embedding", lambda x, c, s: F.rotary_embedding(x, c, s), rotary,
                      lambda r: [_u(r, 2, 5, 6, 4), cos_sin()[0], cos_sin()[1]], (0,)),
        CompositeInfo("embedding", lambda ids, w: F.embedding(ids, w), lambda ids, w: w[ids],
                      lambda r: [np.array([[0, 3, 3], [5, 1, 0]], np.int64), _u(r, 6, 4)], (1,)),
        CompositeInfo("cross_entropy", lambda z, y: F.cross_entropy(z, y), cross_entropy,
                      lambda r: [_u(r, 6, 5) * 3, np.array([0, 4, 2, 2, 1, 3], np.int64)], (0,)),
        CompositeInfo("cross_entropy_smoothing_ignore", lambda z, y: F.cross_entropy(z, y, ignore_index=2, label_smoothing=0.1),
                      lambda z, y: cross_entropy(z, y, 0.1, 2), lambda r: [_u(r, 6, 5) * 3, np.array([0, 4, 2, 2, 1, 3], np.int64)], (0,)),
        CompositeInfo("mse_loss", lambda a, b: F.mse_loss(a, b), lambda a, b: np.asarray(np.mean((a - b) ** 2)),
                      lambda r: [_u(r, 4, 3), _u(r, 4, 3)], (0, 1)),
        CompositeInfo("l1_loss", lambda a, b: F.l1_loss(a, b), lambda a, b: np.asarray(np.mean(np.abs(a - b))),
                      lambda r: [_u(r, 4, 3), _u(r, 4, 3) + 5.0], (0, 1)),
        CompositeInfo("bce_with_logits", lambda z, y: F.binary_cross_entropy_with_logits(z, y), bce_logits,
                      lambda r: [_u(r, 8, lo=-6, hi=6), (r.random(8) < 0.5).astype(np.float64)], (0,)),
        CompositeInfo("var", lambda x: F.var(x, axis=1), lambda x: x.var(axis=1, ddof=1), lambda r: [_u(r, 3, 6)], (0,)),
        CompositeInfo("std", lambda x: F.std(x, axis=0), lambda x: x.std(axis=0, ddof=1), lambda r: [_u(r, 5, 3)], (0,)),
        CompositeInfo("cumsum", lambda x: F.cumsum(x, axis=1), lambda x: np.cumsum(x, axis=1), lambda r: [_u(r, 3, 9)], (0,)),
        CompositeInfo("topk_values", lambda x: F.topk(x, 3)[0], lambda x: -np.sort(-x, axis=-1)[..., :3],
                      lambda r: [r.permutation(24).reshape(3, 8) * 0.5], (0,)),
        CompositeInfo("topk_indices", lambda x: F.topk(x, 3)[1], lambda x: np.argsort(-x, axis=-1, kind="stable")[..., :3],
                      lambda r: [r.permutation(24).reshape(3, 8) * 0.5]),
        CompositeInfo("one_hot", lambda y: F.one_hot(y, 5), lambda y: np.eye(5, dtype=np.float32)[y],
                      lambda r: [np.array([0, 4, 2, 2], np.int64)]),
        CompositeInfo("mean", lambda x: fw.mean(x, axis=(0, 2)), lambda x: x.mean(axis=(0, 2)), lambda r: [_u(r, 2, 3, 4)], (0,)),
        CompositeInfo("clip", lambda x: fw.clip(x, -0.5, 0.7), lambda x: np.clip(x, -0.5, 0.7), lambda r: [_u(r, 4, 5)], (0,)),
        CompositeInfo("log1p", lambda x: fw.log1p(x), np.log1p, lambda r: [_u(r, 4, 5, lo=-0.5, hi=3)], (0,)),
        CompositeInfo("expm1", lambda x: fw.expm1(x), np.expm1, lambda r: [_u(r, 4, 5)], (0,)),
    ]


def _dtype_inputs(arrays: list[np.ndarray], dtype: str) -> list[np.ndarray]:
    return [a.astype(dtype) if a.dtype == np.float64 else a for a in arrays]


def forward(info: CompositeInfo, dtype: str, device: str) -> dict[str, Any]:
    import framework as fw

    rng = np.random.default_rng(0)
    xs = info.inputs(rng)
    ins = _dtype_inputs(xs, dtype)
    got = info.run(*[put(a, device) for a in ins])
    want = np.asarray(info.ref(*[a.astype(np.float64) if a.dtype.kind == "f" else a for a in ins]))
    g = got.numpy()
    if g.dtype.kind == "f":
        want = want.astype(g.dtype)
        tol = tolerance(g.dtype, info.tol_scale)
        assert_close(g, want, tol.rtol, tol.atol, f"{info.name} {dtype}")
    else:
        assert_close(g, want.astype(g.dtype), 0, 0, f"{info.name} {dtype}")
    return {"paths": {k: v for k, v in fw.op_path_stats().items() if k.endswith("@" + device.split(":")[0])}}


def gradient(info: CompositeInfo, dtype: str, device: str) -> None:
    import framework as fw

    rng = np.random.default_rng(0)
    xs = info.inputs(rng)
    ins = [put(a, device) for a in _dtype_inputs(xs, dtype)]
    for i in info.grad:
        ins[i].stop_gradient = False
    out = info.run(*ins)
    w = np.random.default_rng(1).standard_normal(out.shape)
    grads = fw.grad([out], [ins[i] for i in info.grad], grad_outputs=[put(w.astype(dtype), device)], allow_unused=True)
    tol = gradient_tolerance(dtype, 1.5)  # decompositions round more than one primitive
    for i, g in zip(info.grad, grads):
        num = finite_difference(info.ref, xs, i, w)
        if g is None:
            raise CheckFailure(f"{info.name}: no gradient for input {i}", num, None)
        assert_close(g.numpy().astype(np.float64), num, tol.rtol, tol.atol, f"d/d(input {i}) of sum({info.name}(...) * w), {dtype}")


def cases(target: Target) -> list[Case]:
    out = []
    f64 = target.registers("matmul", "float64") and target.registers("exp", "float64")
    for info in _db():
        for dt in ("float32", "float64"):
            out.append(Case(f"composites/{info.name}[{dt}]", "composites",
                            (lambda info=info, dt=dt: forward(info, dt, target.device)), op=info.name, dtype=dt))
        if info.grad:
            gdt = "float64" if f64 else "float32"
            out.append(Case(f"composites/{info.name}[{gdt}]:grad", "composites",
                            (lambda info=info, gdt=gdt: gradient(info, gdt, target.device)), op=f"{info.name} (grad)", dtype=gdt))
    return out
