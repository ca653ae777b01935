"""Independent numpy references of the composite ops (the ``composites`` tier's expected values).

Nothing here imports the framework or a plugin: each reference is written from the op's
definition (Paddle's documented formula, or scipy's special functions) in float64, with plain
loops over kernel offsets and output positions for the convolutions, pooling, unfold and
interpolation rather than the im2col / interpolation-matrix forms the decompositions use, so a
shared mistake is unlikely. Finite differences of these functions are the gradient references.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.special as sp

erf = np.vectorize(math.erf, otypes=[np.float64])


# -- reductions along an axis -----------------------------------------------------------------
def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def log_softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    m = x.max(axis=axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=axis, keepdims=True))


def logsumexp(x: np.ndarray, axis: int = -1) -> np.ndarray:
    m = x.max(axis=axis, keepdims=True)
    return (m + np.log(np.exp(x - m).sum(axis=axis, keepdims=True))).squeeze(axis)


# -- normalisation ------------------------------------------------------------------------------
def layer_norm(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float = 1e-5) -> np.ndarray:
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def rms_norm(x: np.ndarray, w: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w


def _channel(v: np.ndarray | None, ndim: int, axis: int = 1) -> np.ndarray | float:
    """A per-channel vector shaped to broadcast along ``axis`` of an ``ndim``-d array."""
    if v is None:
        return 1.0
    shp = [1] * ndim
    shp[axis] = v.size
    return v.reshape(shp)


def batch_norm_eval(
    x: np.ndarray, mean: np.ndarray, var: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float = 1e-5
) -> np.ndarray:
    """(x - running_mean) / sqrt(running_var + eps) * weight + bias, per channel (axis 1)."""
    c = lambda v: _channel(v, x.ndim)  # noqa: E731
    return (x - c(mean)) / np.sqrt(c(var) + eps) * c(w) + c(b)


def batch_norm_train(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float = 1e-5) -> np.ndarray:
    """Normalised by the batch's mean and biased variance over every axis but 1."""
    axes = tuple(i for i in range(x.ndim) if i != 1)
    mu = x.mean(axis=axes, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=axes, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * _channel(w, x.ndim) + _channel(b, x.ndim)


def instance_norm(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float = 1e-5) -> np.ndarray:
    """Each (sample, channel) normalised over its positions, then a per-channel affine."""
    axes = tuple(range(2, x.ndim))
    mu = x.mean(axis=axes, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=axes, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * _channel(w, x.ndim) + _channel(b, x.ndim)


def group_norm(
    x: np.ndarray, groups: int, w: np.ndarray | None, b: np.ndarray | None, eps: float = 1e-5
) -> np.ndarray:
    """Channel-first ``x``: each sample's channels in ``groups`` consecutive blocks, each block
    normalised over its channels and positions, then a per-channel affine."""
    out = np.empty_like(x)
    per = x.shape[1] // groups
    for n in range(x.shape[0]):
        for g in range(groups):
            blk = x[n, g * per : (g + 1) * per]
            out[n, g * per : (g + 1) * per] = (blk - blk.mean()) / np.sqrt(blk.var() + eps)
    return out * _channel(w, x.ndim) + (0.0 if b is None else _channel(b, x.ndim))


# -- activations ---------------------------------------------------------------------------------
def sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def softplus(x: np.ndarray) -> np.ndarray:
    return np.where(x > 20, x, np.log1p(np.exp(x)))


def elu(x: np.ndarray, alpha: float) -> np.ndarray:
    with np.errstate(over="ignore"):
        return np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0)))


SELU_SCALE = 1.0507009873554804934193349852946
SELU_ALPHA = 1.6732632423543772848170429916717


def selu(x: np.ndarray) -> np.ndarray:
    return SELU_SCALE * elu(x, SELU_ALPHA)


def celu(x: np.ndarray, alpha: float) -> np.ndarray:
    """max(0, x) + min(0, alpha (exp(x / alpha) - 1)), as written (alpha of either sign)."""
    with np.errstate(over="ignore", invalid="ignore"):
        return np.maximum(0.0, x) + np.minimum(0.0, alpha * np.expm1(x / alpha))


def log_sigmoid(x: np.ndarray) -> np.ndarray:
    return -np.logaddexp(0.0, -x)


def mish(x: np.ndarray) -> np.ndarray:
    return x * np.tanh(np.logaddexp(0.0, x))


def hardswish(x: np.ndarray) -> np.ndarray:
    return x * np.minimum(np.maximum(x + 3.0, 0.0), 6.0) / 6.0


def relu6(x: np.ndarray) -> np.ndarray:
    return np.minimum(np.maximum(x, 0.0), 6.0)  # NaN propagates through both


def hardtanh(x: np.ndarray, lo: float, hi: float) -> np.ndarray:
    return np.minimum(np.maximum(x, lo), hi)


def hardsigmoid(x: np.ndarray, slope: float, offset: float) -> np.ndarray:
    return hardtanh(slope * x + offset, 0.0, 1.0)


def hardshrink(x: np.ndarray, t: float) -> np.ndarray:
    return np.where((x > t) | (x < -t), x, 0.0)


def softshrink(x: np.ndarray, t: float) -> np.ndarray:
    return np.where(x > t, x - t, np.where(x < -t, x + t, 0.0))


def thresholded_relu(x: np.ndarray, t: float, value: float) -> np.ndarray:
    return np.where(x > t, x, value)


def prelu(x: np.ndarray, w: np.ndarray, axis: int) -> np.ndarray:
    return np.where(x > 0, x, x * (w.reshape(()) if w.size == 1 else _channel(w, x.ndim, axis)))


# -- special functions ---------------------------------------------------------------------------
def lgamma(x: np.ndarray) -> np.ndarray:
    return sp.gammaln(x)


def digamma(x: np.ndarray) -> np.ndarray:
    return sp.psi(x)


def erfinv(x: np.ndarray) -> np.ndarray:
    return sp.erfinv(x)


# -- convolution, pooling, unfold ------------------------------------------------------------
def conv2d(
    x: np.ndarray, w: np.ndarray, b: np.ndarray | None, stride: int, padding: int, dilation: int, groups: int
) -> np.ndarray:
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
                patch = xp[
                    :,
                    g * cg : (g + 1) * cg,
                    i * stride : i * stride + dilation * (kh - 1) + 1 : dilation,
                    j * stride : j * stride + dilation * (kw - 1) + 1 : dilation,
                ]
                out[:, oc, i, j] = (patch * w[oc]).sum(axis=(1, 2, 3))
    return out if b is None else out + b.reshape(1, -1, 1, 1)


def conv3d(
    x: np.ndarray,
    w: np.ndarray,
    b: np.ndarray | None,
    stride: tuple,
    padding: tuple,
    dilation: tuple,
    groups: int,
) -> np.ndarray:
    """NCDHW cross-correlation, one output position at a time."""
    n = x.shape[0]
    o, cg = w.shape[:2]
    k = w.shape[2:]
    xp = np.pad(x, ((0, 0), (0, 0)) + tuple((p, p) for p in padding))
    osz = tuple(
        (x.shape[2 + i] + 2 * padding[i] - dilation[i] * (k[i] - 1) - 1) // stride[i] + 1 for i in range(3)
    )
    out = np.zeros((n, o) + osz)
    per = o // groups
    for oc in range(o):
        g = oc // per
        for pos in np.ndindex(*osz):
            sl = tuple(
                slice(pos[i] * stride[i], pos[i] * stride[i] + dilation[i] * (k[i] - 1) + 1, dilation[i])
                for i in range(3)
            )
            patch = xp[(slice(None), slice(g * cg, (g + 1) * cg)) + sl]
            out[(slice(None), oc) + pos] = (patch * w[oc]).sum(axis=(1, 2, 3, 4))
    return out if b is None else out + b.reshape(1, -1, 1, 1, 1)


def conv2d_transpose(
    x: np.ndarray,
    w: np.ndarray,
    b: np.ndarray | None,
    stride: tuple,
    padding: tuple,
    output_padding: tuple,
    dilation: tuple,
    groups: int,
) -> np.ndarray:
    """Scatter form: input pixel (i, j) of channel ci adds x * w[ci, :, a, b] at output
    (i*s + a*d - p, j*s + b*d - p) of its group's output channels."""
    n, cin, h, wd = x.shape
    _, cog, kh, kw = w.shape
    (sh, sw), (ph, pw), (oph, opw), (dh, dw) = stride, padding, output_padding, dilation
    oh = (h - 1) * sh - 2 * ph + dh * (kh - 1) + oph + 1
    ow = (wd - 1) * sw - 2 * pw + dw * (kw - 1) + opw + 1
    full = np.zeros(
        (n, cog * groups, (h - 1) * sh + dh * (kh - 1) + 1 + oph, (wd - 1) * sw + dw * (kw - 1) + 1 + opw)
    )
    per = cin // groups
    for ci in range(cin):
        g = ci // per
        for i in range(h):
            for j in range(wd):
                for a in range(kh):
                    for bb in range(kw):
                        full[:, g * cog : (g + 1) * cog, i * sh + a * dh, j * sw + bb * dw] += (
                            x[:, ci, i, j, None] * w[ci, :, a, bb]
                        )
    out = full[:, :, ph : ph + oh, pw : pw + ow]
    return out if b is None else out + b.reshape(1, -1, 1, 1)


def conv3d_transpose(
    x: np.ndarray, w: np.ndarray, stride: tuple, padding: tuple, output_padding: tuple, groups: int
) -> np.ndarray:
    """Scatter form in 3-d (no dilation): input element p of channel ci adds x * w[ci, :, k]
    at output ``p * s + k - pad`` of its group's output channels."""
    n, cin = x.shape[:2]
    cog, ks = w.shape[1], w.shape[2:]
    size = x.shape[2:]
    full_shape = [(size[a] - 1) * stride[a] + ks[a] + output_padding[a] for a in range(3)]
    full = np.zeros((n, cog * groups, *full_shape))
    per = cin // groups
    for ci in range(cin):
        g = ci // per
        for pos in np.ndindex(*size):
            for off in np.ndindex(*ks):
                at = tuple(pos[a] * stride[a] + off[a] for a in range(3))
                full[(slice(None), slice(g * cog, (g + 1) * cog), *at)] += (
                    x[(slice(None), ci, *pos)][:, None] * w[(ci, slice(None), *off)]
                )
    outs = [full_shape[a] - 2 * padding[a] for a in range(3)]
    return full[(slice(None), slice(None), *(slice(padding[a], padding[a] + outs[a]) for a in range(3)))]


def pool2d(x: np.ndarray, k: tuple, stride: tuple, padding: tuple, kind: str) -> np.ndarray:
    """``max``, ``avg`` (padding left out of the count) or ``avg_inclusive`` (counted) over
    KH x KW windows, one output position at a time."""
    n, c, h, w = x.shape
    (kh, kw), (sh, sw), (ph, pw) = k, stride, padding
    fill = -np.inf if kind == "max" else np.nan
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)), constant_values=fill)
    oh, ow = (h + 2 * ph - kh) // sh + 1, (w + 2 * pw - kw) // sw + 1
    out = np.zeros((n, c, oh, ow))
    for i in range(oh):
        for j in range(ow):
            win = xp[:, :, i * sh : i * sh + kh, j * sw : j * sw + kw]
            if kind == "max":
                out[:, :, i, j] = win.max(axis=(2, 3))
            elif kind == "avg":
                out[:, :, i, j] = np.nanmean(win, axis=(2, 3))
            else:
                out[:, :, i, j] = np.nansum(win, axis=(2, 3)) / (kh * kw)
    return out


def pool2d_paddle(
    x: np.ndarray, k: tuple, stride: tuple, padding: tuple, ceil_mode: bool, kind: str, divisor: float = 0.0
) -> np.ndarray:
    """Paddle's 2-d pooling, one window at a time: ``max``, ``mask`` (the max's ``h * W + w``,
    first in row-major order), ``avg`` (exclusive: in-image elements counted), ``avg_inclusive``
    (window clipped to the padded image ``[-p, H + p)``, the ceil overhang not counted).
    ``ceil_mode``: output ``ceil((H + 2p - k) / s) + 1``; ``divisor`` scales by ``k*k / divisor``."""
    n, c, h, w = x.shape
    (kh, kw), (sh, sw), (ph, pw) = k, stride, padding

    def size(n_in: int, kk: int, ss: int, pp: int) -> int:
        span = n_in + 2 * pp - kk
        return (-(-span // ss) if ceil_mode else span // ss) + 1

    oh, ow = size(h, kh, sh, ph), size(w, kw, sw, pw)
    out = np.zeros((n, c, oh, ow))
    for i in range(oh):
        for j in range(ow):
            r0, c0 = i * sh - ph, j * sw - pw
            r1, c1 = min(r0 + kh, h + ph), min(c0 + kw, w + pw)
            a, b = max(r0, 0), max(c0, 0)
            win = x[:, :, a : min(r1, h), b : min(c1, w)]
            if kind == "max":
                out[:, :, i, j] = win.max(axis=(2, 3))
            elif kind == "mask":
                flat = win.reshape(n, c, -1).argmax(axis=2)
                out[:, :, i, j] = (a + flat // win.shape[3]) * w + b + flat % win.shape[3]
            elif kind == "avg":
                out[:, :, i, j] = win.mean(axis=(2, 3))
            else:
                out[:, :, i, j] = win.sum(axis=(2, 3)) / ((r1 - r0) * (c1 - c0))
    return out * (kh * kw / divisor) if divisor else out


def pool3d_paddle(x: np.ndarray, k: tuple, stride: tuple, padding: tuple, kind: str) -> np.ndarray:
    """Paddle's 3-d pooling (floor mode), one window at a time: ``max``, ``mask`` (the max's
    ``(d * H + h) * W + w``, first in row-major order), ``avg`` (in-image elements counted)
    or ``avg_inclusive`` (the whole k^3 window counted)."""
    n, c = x.shape[:2]
    size = x.shape[2:]
    outs = [(size[a] + 2 * padding[a] - k[a]) // stride[a] + 1 for a in range(3)]
    out = np.zeros((n, c, *outs))
    for pos in np.ndindex(*outs):
        lo = [pos[a] * stride[a] - padding[a] for a in range(3)]
        a0 = [max(v, 0) for v in lo]
        a1 = [min(lo[a] + k[a], size[a]) for a in range(3)]
        win = x[:, :, a0[0] : a1[0], a0[1] : a1[1], a0[2] : a1[2]]
        if kind == "max":
            out[(slice(None), slice(None), *pos)] = win.max(axis=(2, 3, 4))
        elif kind == "mask":
            d, h, w = np.unravel_index(win.reshape(n, c, -1).argmax(axis=2), win.shape[2:])
            out[(slice(None), slice(None), *pos)] = ((a0[0] + d) * size[1] + a0[1] + h) * size[2] + a0[2] + w
        elif kind == "avg":
            out[(slice(None), slice(None), *pos)] = win.mean(axis=(2, 3, 4))
        else:
            out[(slice(None), slice(None), *pos)] = win.sum(axis=(2, 3, 4)) / math.prod(k)
    return out


def window_max(x: np.ndarray, bounds: list, kind: str = "max") -> np.ndarray:
    """The max (``max``) or its flat spatial position (``mask``) over the windows
    ``bounds[a][i] = (start, end)`` per spatial axis a (adaptive and fractional pools)."""
    n, c = x.shape[:2]
    size = x.shape[2:]
    out = np.zeros((n, c, *[len(b) for b in bounds]))
    for pos in np.ndindex(*out.shape[2:]):
        sl = tuple(slice(*bounds[a][i]) for a, i in enumerate(pos))
        win = x[(slice(None), slice(None), *sl)].reshape(n, c, -1)
        if kind == "max":
            out[(slice(None), slice(None), *pos)] = win.max(axis=2)
        else:
            local = np.unravel_index(win.argmax(axis=2), [s.stop - s.start for s in sl])
            out[(slice(None), slice(None), *pos)] = np.ravel_multi_index(
                tuple(li + s.start for li, s in zip(local, sl)), size
            )
    return out


def adaptive_bounds(size: int, out: int) -> list:
    """Adaptive window i of an axis: ``[floor(i * L / O), ceil((i + 1) * L / O))``."""
    return [(i * size // out, -(-(i + 1) * size // out)) for i in range(out)]


def unfold(x: np.ndarray, k: tuple, stride: tuple, padding: tuple, dilation: tuple) -> np.ndarray:
    """im2col: row c*KH*KW + a*KW + b, column i*OW + j holds x[c, i*s + a*d - p, j*s + b*d - p]."""
    n, c, h, w = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (padding[0], padding[0]), (padding[1], padding[1])))
    oh = (h + 2 * padding[0] - dilation[0] * (k[0] - 1) - 1) // stride[0] + 1
    ow = (w + 2 * padding[1] - dilation[1] * (k[1] - 1) - 1) // stride[1] + 1
    out = np.zeros((n, c * k[0] * k[1], oh * ow))
    for ch in range(c):
        for a in range(k[0]):
            for b in range(k[1]):
                for i in range(oh):
                    for j in range(ow):
                        out[:, ch * k[0] * k[1] + a * k[1] + b, i * ow + j] = xp[
                            :, ch, i * stride[0] + a * dilation[0], j * stride[1] + b * dilation[1]
                        ]
    return out


# -- interpolation (Paddle's index rules) -----------------------------------------------------
def _cubic_weight(t: float, a: float = -0.75) -> float:
    t = abs(t)
    if t <= 1:
        return ((a + 2) * t - (a + 3)) * t * t + 1
    if t < 2:
        return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a
    return 0.0


def _taps(
    mode: str, o: int, n_in: int, n_out: int, scale: float | None, align_corners: bool, align_mode: int
) -> list[tuple[int, float]]:
    """The (input index, weight) pairs that make output position ``o`` along one axis.

    ``scale`` is the user's scale_factor (None when a size was given): the source step is
    1/scale then, in/out otherwise, and (in-1)/(out-1) with ``align_corners``.
    """
    if mode == "area":  # adaptive average: [floor(o*in/out), ceil((o+1)*in/out))
        lo, hi = math.floor(o * n_in / n_out), math.ceil((o + 1) * n_in / n_out)
        return [(i, 1.0 / (hi - lo)) for i in range(lo, hi)]
    if align_corners:
        step = (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
    else:
        step = 1.0 / scale if scale else n_in / n_out
    if mode == "nearest":
        return [(min(int(math.floor(o * step)), n_in - 1), 1.0)]
    half_pixel = not align_corners and (mode == "bicubic" or align_mode == 0)
    src = (o + 0.5) * step - 0.5 if half_pixel else o * step
    if mode == "bicubic":
        f = math.floor(src)
        return [(min(max(f + d, 0), n_in - 1), _cubic_weight(src - f - d)) for d in (-1, 0, 1, 2)]
    src = max(src, 0.0)
    lo = min(int(math.floor(src)), n_in - 1)
    frac = src - lo
    return [(lo, 1.0 - frac), (min(lo + 1, n_in - 1), frac)]


def interpolate(
    x: np.ndarray,
    size: tuple,
    mode: str,
    align_corners: bool = False,
    align_mode: int = 0,
    scale: tuple | None = None,
) -> np.ndarray:
    """Resize the spatial axes of channel-first ``x`` one axis at a time (every mode is
    separable), each output position a weighted sum of its taps."""
    for ax in range(2, x.ndim):
        k = ax - 2
        n_in, n_out = x.shape[ax], size[k]
        out = np.zeros(x.shape[:ax] + (n_out,) + x.shape[ax + 1 :])
        for o in range(n_out):
            for i, wt in _taps(
                mode, o, n_in, n_out, None if scale is None else scale[k], align_corners, align_mode
            ):
                idx_out = (slice(None),) * ax + (o,)
                idx_in = (slice(None),) * ax + (i,)
                out[idx_out] += wt * x[idx_in]
        x = out
    return x


# -- attention, losses ---------------------------------------------------------------------------
def attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool) -> np.ndarray:
    s = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
    if causal:
        lq, lk = s.shape[-2:]
        s = np.where(np.tril(np.ones((lq, lk), bool)), s, -np.inf)
    return softmax(s) @ v


def attention_grads(
    q: np.ndarray, k: np.ndarray, v: np.ndarray, do: np.ndarray, causal: bool, scale: float
) -> np.ndarray:
    """dq, dk and dv of attention (scale given) for the output gradient ``do``, flattened and
    concatenated: dp = do v^T, ds = p (dp - rowsum(p dp)), dq = ds k scale, dk = ds^T q scale,
    dv = p^T do."""
    s = q @ np.swapaxes(k, -1, -2) * scale
    if causal:
        lq, lk = s.shape[-2:]
        s = np.where(np.tril(np.ones((lq, lk), bool)), s, -np.inf)
    p = softmax(s)
    dp = do @ np.swapaxes(v, -1, -2)
    ds = p * (dp - (p * dp).sum(-1, keepdims=True))
    grads = (ds @ k * scale, np.swapaxes(ds, -1, -2) @ q * scale, np.swapaxes(p, -1, -2) @ do)
    return np.concatenate([g.reshape(-1) for g in grads])


def rotary(x: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> np.ndarray:
    h = x.shape[-1] // 2
    rot = np.concatenate([-x[..., h:], x[..., :h]], axis=-1)
    return x * cos + rot * sin


def cross_entropy(
    logits: np.ndarray, labels: np.ndarray, smoothing: float = 0.0, ignore: int = -100
) -> np.ndarray:
    lp = log_softmax(logits)
    keep = labels != ignore
    safe = np.where(keep, labels, 0)
    nll = -np.take_along_axis(lp, safe[:, None], axis=1)[:, 0]
    per = (1 - smoothing) * nll + smoothing * (-lp.mean(-1)) if smoothing else nll
    return np.asarray((per * keep).sum() / keep.sum())


def bce_logits(z: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.asarray(np.mean(np.maximum(z, 0) - z * y + np.log1p(np.exp(-np.abs(z)))))


# -- quantisation (framework.nn.quant, framework.quantization) ---------------------------------
def round_half_away(v: np.ndarray) -> np.ndarray:
    return np.sign(v) * np.floor(np.abs(v) + 0.5)


def weight_quantize_int8(w: np.ndarray) -> np.ndarray:
    """Per-channel int8 levels ``[n, k]`` of a ``[k, n]`` weight."""
    s = np.abs(w).max(0) / 127
    return np.clip(round_half_away(w / np.where(s == 0, 1, s)), -127, 127).T


def weight_dequantize_int8(q: np.ndarray, s: np.ndarray) -> np.ndarray:
    return q.T.astype(np.float64) * s


def quantize_linear(x: np.ndarray, s: np.ndarray, bits: int = 8, low: int = 1) -> np.ndarray:
    """Paddle's quantize_linear (``low=1``: down to -qmax - 1); ``low=0``: symmetric."""
    n = 2 ** (bits - 1) - 1
    return np.clip(round_half_away(x / s * n), -n - low, n)
