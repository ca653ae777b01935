"""Converters of ONNX's neural-network ops: matmul, Gemm, convolutions, pooling, normalisation."""

from __future__ import annotations

import numpy as np

import framework as fw
from framework.nn import functional as F

from ._registry import Node, converter


@converter("MatMul")
def _matmul(n: Node) -> fw.Tensor:
    return fw.matmul(n.tensor(0), n.tensor(1))


@converter("Gemm")
def _gemm(n: Node) -> fw.Tensor:
    a, b = n.tensor(0), n.tensor(1)
    if n.attr("transA", 0):
        a = fw.transpose(a, [1, 0])
    if n.attr("transB", 0):
        b = fw.transpose(b, [1, 0])
    y = fw.matmul(a, b)
    alpha, beta = n.attr("alpha", 1.0), n.attr("beta", 1.0)
    if alpha != 1.0:
        y = fw.multiply(y, fw.full([], alpha, dtype=y.dtype, device=n.device))
    if n.has(2):
        c = n.tensor(2)
        if beta != 1.0:
            c = fw.multiply(c, fw.full([], beta, dtype=c.dtype, device=n.device))
        y = fw.add(y, c)
    return y


@converter("Einsum")
def _einsum(n: Node) -> fw.Tensor:
    return fw.einsum(n.attr("equation").replace(" ", ""), *n.all_tensors())


def _pads(n: Node, x: fw.Tensor, kernel: list[int], strides: list[int], dil: list[int]) -> list[int]:
    """ONNX pads ``[b1.., e1..]`` from ``pads`` or ``auto_pad``."""
    k = len(kernel)
    auto = n.attr("auto_pad", "NOTSET")
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        begin, end = [], []
        for i in range(k):
            size = x.shape[2 + i]
            out = -(-size // strides[i])
            total = max((out - 1) * strides[i] + (kernel[i] - 1) * dil[i] + 1 - size, 0)
            small, big = total // 2, total - total // 2
            begin.append(small if auto == "SAME_UPPER" else big)
            end.append(big if auto == "SAME_UPPER" else small)
        return begin + end
    if auto == "VALID":
        return [0] * (2 * k)
    return list(n.attr("pads", [0] * (2 * k)))


def _explicit_pad(x: fw.Tensor, pads: list[int], value: float = 0.0) -> fw.Tensor:
    k = len(pads) // 2
    if not any(pads):
        return x
    full = [0, 0, 0, 0] + [p for i in range(k) for p in (pads[i], pads[i + k])]
    return fw.pad(x, full, mode="constant", value=value)


def _conv_fn(rank: int, transpose: bool = False):  # type: ignore[no-untyped-def]
    fns = {
        (1, False): F.conv1d,
        (2, False): F.conv2d,
        (3, False): F.conv3d,
        (1, True): F.conv1d_transpose,
        (2, True): F.conv2d_transpose,
        (3, True): F.conv3d_transpose,
    }
    return fns.get((rank, transpose))


@converter("Conv")
def _conv(n: Node) -> fw.Tensor:
    x, w = n.tensor(0), n.tensor(1)
    b = n.tensor(2) if n.has(2) else None
    k = x.ndim - 2
    kernel = list(n.attr("kernel_shape", w.shape[2:]))
    strides = list(n.attr("strides", [1] * k))
    dil = list(n.attr("dilations", [1] * k))
    pads = _pads(n, x, kernel, strides, dil)
    fn = _conv_fn(k)
    if fn is None:
        raise n.error(f"a {k}-D convolution is not imported", "Conv imports 1-D, 2-D and 3-D")
    if pads[:k] == pads[k:]:
        padding = pads[:k]
    else:
        x, padding = _explicit_pad(x, pads), [0] * k
    return fn(x, w, b, stride=strides, padding=padding, dilation=dil, groups=n.attr("group", 1))


@converter("ConvTranspose")
def _conv_transpose(n: Node) -> fw.Tensor:
    x, w = n.tensor(0), n.tensor(1)
    b = n.tensor(2) if n.has(2) else None
    k = x.ndim - 2
    fn = _conv_fn(k, True)
    if fn is None:
        raise n.error(f"a {k}-D transposed convolution is not imported", "ConvTranspose imports 1-D to 3-D")
    kernel = list(n.attr("kernel_shape", w.shape[2:]))
    strides = list(n.attr("strides", [1] * k))
    dil = list(n.attr("dilations", [1] * k))
    outpad = list(n.attr("output_padding", [0] * k))
    group = n.attr("group", 1)
    full = [(x.shape[2 + i] - 1) * strides[i] + (kernel[i] - 1) * dil[i] + 1 + outpad[i] for i in range(k)]
    if "output_shape" in n.attrs:
        target = list(n.attrs["output_shape"])[-k:]
        total = [full[i] - target[i] for i in range(k)]
        # the spec's split (the larger half first unless SAME_UPPER); a target past the full
        # result extends it with zeros at the end, as ONNX Runtime does
        upper = n.attr("auto_pad", "NOTSET") == "SAME_UPPER"
        head = [0 if t < 0 else t // 2 if upper else t - t // 2 for t in total]
        pads = head + [t - h for h, t in zip(head, total)]
    elif n.attr("auto_pad", "NOTSET") in ("SAME_UPPER", "SAME_LOWER"):
        target = [x.shape[2 + i] * strides[i] for i in range(k)]
        total = [full[i] - target[i] for i in range(k)]
        upper = n.attr("auto_pad") == "SAME_UPPER"
        pads = [t // 2 if upper else t - t // 2 for t in total] + [
            t - t // 2 if upper else t // 2 for t in total
        ]
    else:
        pads = list(n.attr("pads", [0] * (2 * k)))
    y = fn(x, w, None, stride=strides, padding=0, output_padding=outpad, dilation=dil, groups=group)
    # the full result cropped by the pads (a crop, so asymmetric pads need nothing special);
    # a negative pad extends it with zeros
    if any(p < 0 for p in pads):
        y = _explicit_pad(y, [max(-p, 0) for p in pads])
        pads = [max(p, 0) for p in pads]
    ends = [y.shape[2 + i] - pads[k + i] for i in range(k)]
    if any(pads):
        y = fw.slice(y, list(range(2, 2 + k)), pads[:k], ends)
    if b is not None:
        y = fw.add(y, fw.reshape(b, [1, -1] + [1] * k))
    return y


def _pool_args(n: Node, x: fw.Tensor) -> tuple[list[int], list[int], list[int], list[int]]:
    k = x.ndim - 2
    kernel = list(n.attr("kernel_shape"))
    strides = list(n.attr("strides", [1] * k))
    dil = list(n.attr("dilations", [1] * k))
    return kernel, strides, _pads(n, x, kernel, strides, dil), dil


def _as_2d(x: fw.Tensor, kernel: list[int], strides: list[int], pads: list[int]):  # type: ignore[no-untyped-def]
    """1-D pooling as 2-D over a height of one."""
    if x.ndim == 3:
        return fw.unsqueeze(x, 2), [1, *kernel], [1, *strides], [0, pads[0], 0, pads[1]], True
    return x, kernel, strides, pads, False


def _window_pool(n: Node, x: fw.Tensor, kind: str, p: float = 2.0) -> tuple[fw.Tensor, fw.Tensor | None]:
    """Pooling of any rank, dilations, pads and ceil mode as the combination of one strided
    slice per kernel offset (``kind``: ``"max"``, ``"avg"`` or ``"lp"``); with ``"max"``
    also the flat indices of the maxima (the first one of a window, as ONNX Runtime)."""
    kernel, strides, pads, dil = _pool_args(n, x)
    k = len(kernel)
    ceil = bool(n.attr("ceil_mode", 0))
    spans = [(kernel[i] - 1) * dil[i] + 1 for i in range(k)]
    outs = []
    for i in range(k):
        size = x.shape[2 + i]
        span = size + pads[i] + pads[k + i] - spans[i]
        out = (-(-span // strides[i]) if ceil else span // strides[i]) + 1
        if ceil and (out - 1) * strides[i] >= size + pads[i]:
            out -= 1  # a last window that starts in the end padding is dropped
        outs.append(out)
    # the ceil mode's last windows may reach past the end padding: pad for them too
    extra = [
        max((outs[i] - 1) * strides[i] + spans[i] - (x.shape[2 + i] + pads[i] + pads[k + i]), 0)
        for i in range(k)
    ]
    ends_pad = [pads[k + i] + extra[i] for i in range(k)]
    dt = np.dtype(x.dtype)
    low = float(np.finfo(dt).min) if dt.kind == "f" else float(np.iinfo(dt).min)
    xp = _explicit_pad(x, pads[:k] + ends_pad, low if kind == "max" else 0.0)
    idx = None
    if kind == "max" and len(n.proto.output) > 1 and n.proto.output[1]:
        plane = int(np.prod(x.shape[2:]))
        spatial = np.arange(plane, dtype=np.int64).reshape(x.shape[2:])
        if n.attr("storage_order", 0):  # column-major within each plane
            spatial = np.arange(plane, dtype=np.int64).reshape(x.shape[2:][::-1]).T
        flat = (
            np.arange(x.shape[0] * x.shape[1], dtype=np.int64).reshape(x.shape[0], x.shape[1], *[1] * k)
            * plane
        )
        flat = flat + spatial
        idx = _explicit_pad(fw.to_tensor(flat, device=n.device), pads[:k] + ends_pad, -1.0)
    # the elements each window holds (the divisor of an average)
    if kind == "avg":
        inner = [0] * k + [0] * k if not n.attr("count_include_pad", 0) else pads[:k] + pads[k:]
        ones = _explicit_pad(fw.ones([1, 1, *x.shape[2:]], dtype=x.dtype, device=n.device), inner, 1.0)
        ones = _explicit_pad(
            ones, [pads[i] - inner[i] for i in range(k)] + [ends_pad[i] - inner[k + i] for i in range(k)]
        )
    acc = cnt = best_idx = None
    axes = list(range(2, 2 + k))
    for off in np.ndindex(*kernel):
        starts = [off[i] * dil[i] for i in range(k)]
        ends = [starts[i] + (outs[i] - 1) * strides[i] + 1 for i in range(k)]
        win = fw.strided_slice(xp, axes, starts, ends, strides)
        if kind == "max":
            if acc is None:
                acc = win
                best_idx = fw.strided_slice(idx, axes, starts, ends, strides) if idx is not None else None
            else:
                if idx is not None:
                    better = fw.greater_than(win, acc)
                    best_idx = fw.where(better, fw.strided_slice(idx, axes, starts, ends, strides), best_idx)
                acc = fw.maximum(acc, win)
        else:
            term = fw.pow(fw.abs(win), p) if kind == "lp" else win
            acc = term if acc is None else fw.add(acc, term)
            if kind == "avg":
                c = fw.strided_slice(ones, axes, starts, ends, strides)
                cnt = c if cnt is None else fw.add(cnt, c)
    if kind == "avg":
        acc = fw.divide(acc, cnt)
    elif kind == "lp":
        acc = fw.pow(acc, 1.0 / p)
    return acc, best_idx


def _simple_pool(n: Node, x: fw.Tensor) -> bool:
    """The pooling the plugins' 2-D kernels take: 1-D or 2-D, no dilations, no indices."""
    _, _, _, dil = _pool_args(n, x)
    wants_idx = len(n.proto.output) > 1 and bool(n.proto.output[1])
    return x.ndim in (3, 4) and all(d == 1 for d in dil) and not wants_idx


@converter("MaxPool")
def _maxpool(n: Node) -> object:
    x = n.tensor(0)
    if not _simple_pool(n, x):
        y, idx = _window_pool(n, x, "max")
        return [y, idx] if idx is not None else y
    kernel, strides, pads, dil = _pool_args(n, x)
    x, kernel, strides, pads, squeeze = _as_2d(x, kernel, strides, pads)
    neg = (
        float(np.finfo(np.dtype(x.dtype)).min)
        if np.dtype(x.dtype).kind == "f"
        else float(np.iinfo(x.dtype).min)
    )
    x = _explicit_pad(x, pads, neg)
    y = F.max_pool2d(x, kernel, strides, 0, ceil_mode=bool(n.attr("ceil_mode", 0)))
    y = _crop_ceil(n, y, x, kernel, strides, pads)
    return fw.squeeze(y, 2) if squeeze else y


@converter("AveragePool")
def _avgpool(n: Node) -> fw.Tensor:
    x = n.tensor(0)
    if not _simple_pool(n, x):
        return _window_pool(n, x, "avg")[0]
    kernel, strides, pads, dil = _pool_args(n, x)
    x, kernel, strides, pads, squeeze = _as_2d(x, kernel, strides, pads)
    ceil = bool(n.attr("ceil_mode", 0))
    xp = _explicit_pad(x, pads)
    y = F.avg_pool2d(xp, kernel, strides, 0, ceil_mode=ceil, exclusive=True)
    if any(pads) and not n.attr("count_include_pad", 0):
        ones = _explicit_pad(fw.ones([1, 1, *x.shape[2:]], dtype=x.dtype, device=n.device), pads)
        y = fw.divide(y, F.avg_pool2d(ones, kernel, strides, 0, ceil_mode=ceil, exclusive=True))
    y = _crop_ceil(n, y, xp, kernel, strides, pads)
    return fw.squeeze(y, 2) if squeeze else y


@converter("LpPool")
def _lppool(n: Node) -> fw.Tensor:
    return _window_pool(n, n.tensor(0), "lp", float(n.attr("p", 2)))[0]


def _crop_ceil(
    n: Node, y: fw.Tensor, xp: fw.Tensor, kernel: list[int], strides: list[int], pads: list[int]
) -> fw.Tensor:
    """With ceil_mode, ONNX drops a last window that starts in the end padding: crop to its sizes
    (``xp`` is the input with its pads already added)."""
    if not n.attr("ceil_mode", 0):
        return y
    k = len(kernel)
    ends = []
    for i in range(k):
        padded = xp.shape[2 + i]
        size = padded - pads[i] - pads[k + i]
        out = -(-(padded - kernel[i]) // strides[i]) + 1
        if (out - 1) * strides[i] >= size + pads[i]:
            out -= 1
        ends.append(out)
    if tuple(ends) == tuple(y.shape[2:]):
        return y
    return fw.slice(y, list(range(2, 2 + k)), [0] * k, ends)


@converter("GlobalAveragePool")
def _gap(n: Node) -> fw.Tensor:
    x = n.tensor(0)
    return fw.mean(x, axis=list(range(2, x.ndim)), keepdim=True)


@converter("GlobalMaxPool")
def _gmp(n: Node) -> fw.Tensor:
    x = n.tensor(0)
    return fw.amax(x, axis=list(range(2, x.ndim)), keepdim=True)


def _channel(t: fw.Tensor, rank: int) -> fw.Tensor:
    return fw.reshape(t, [1, -1] + [1] * (rank - 2))


@converter("BatchNormalization")
def _batchnorm(n: Node) -> object:
    x, scale, b, mean, var = (n.tensor(i) for i in range(5))
    r = x.ndim
    if n.attr("training_mode", 0):
        # the batch's statistics (the population variance), and the running ones updated
        axes = [0, *range(2, r)]
        bm = fw.mean(x, axis=axes)
        bv = fw.mean(fw.square(fw.subtract(x, _channel(bm, r))), axis=axes)
        eps = fw.full([], n.attr("epsilon", 1e-5), dtype=x.dtype, device=n.device)
        y = fw.add(
            fw.multiply(
                fw.subtract(x, _channel(bm, r)), _channel(fw.multiply(scale, fw.rsqrt(fw.add(bv, eps))), r)
            ),
            _channel(b, r),
        )
        mom = n.attr("momentum", 0.9)
        keep = fw.full([], mom, dtype=mean.dtype, device=n.device)
        new = fw.full([], 1.0 - mom, dtype=mean.dtype, device=n.device)
        run_mean = fw.add(fw.multiply(mean, keep), fw.multiply(bm.astype(mean.dtype), new))
        run_var = fw.add(fw.multiply(var, keep), fw.multiply(bv.astype(var.dtype), new))
        return [y, run_mean, run_var][: max(len(n.proto.output), 1)]
    eps = fw.full([], n.attr("epsilon", 1e-5), dtype=var.dtype, device=n.device)
    inv = fw.multiply(scale, fw.rsqrt(fw.add(var, eps)))
    return fw.add(fw.multiply(fw.subtract(x, _channel(mean, r)), _channel(inv, r)), _channel(b, r))


def _normalize(
    x: fw.Tensor, axes: list[int], eps: float, device: object
) -> tuple[fw.Tensor, fw.Tensor, fw.Tensor]:
    mean = fw.mean(x, axis=axes, keepdim=True)
    d = fw.subtract(x, mean)
    var = fw.mean(fw.multiply(d, d), axis=axes, keepdim=True)
    inv = fw.rsqrt(fw.add(var, fw.full([], eps, dtype=x.dtype, device=device)))
    return fw.multiply(d, inv), mean, inv


@converter("InstanceNormalization")
def _instancenorm(n: Node) -> fw.Tensor:
    x, scale, b = n.tensor(0), n.tensor(1), n.tensor(2)
    y, _, _ = _normalize(x, list(range(2, x.ndim)), n.attr("epsilon", 1e-5), n.device)
    return fw.add(fw.multiply(y, _channel(scale, x.ndim)), _channel(b, x.ndim))


@converter("LayerNormalization")
def _layernorm(n: Node) -> list[fw.Tensor]:
    x = n.tensor(0)
    ax = n.attr("axis", -1)
    ax = ax + x.ndim if ax < 0 else ax
    xs = x.astype("float32") if n.attr("stash_type", 1) == 1 and x.dtype != np.float32 else x
    y, mean, inv = _normalize(xs, list(range(ax, x.ndim)), n.attr("epsilon", 1e-5), n.device)
    y = y.astype(x.dtype) if y.dtype != x.dtype else y
    y = fw.multiply(y, n.tensor(1))
    if n.has(2):
        y = fw.add(y, n.tensor(2))
    return [y, mean, inv]


@converter("GroupNormalization")
def _groupnorm(n: Node) -> fw.Tensor:
    x, scale, b = n.tensor(0), n.tensor(1), n.tensor(2)
    g = n.attr("num_groups")
    shape = list(x.shape)
    xg = fw.reshape(x, [shape[0], g, -1])
    y, _, _ = _normalize(xg, [2], n.attr("epsilon", 1e-5), n.device)
    y = fw.reshape(y, shape)
    if n.opset < 21:  # scale and bias per group
        c = shape[1] // g
        scale = fw.reshape(fw.expand(fw.reshape(scale, [g, 1]), [g, c]), [-1])
        b = fw.reshape(fw.expand(fw.reshape(b, [g, 1]), [g, c]), [-1])
    return fw.add(fw.multiply(y, _channel(scale, x.ndim)), _channel(b, x.ndim))


@converter("MeanVarianceNormalization")
def _mvn(n: Node) -> fw.Tensor:
    x = n.tensor(0)
    y, _, _ = _normalize(x, list(n.attr("axes", [0, 2, 3])), 1e-9, n.device)
    return y


@converter("LpNormalization")
def _lpnorm(n: Node) -> fw.Tensor:
    x = n.tensor(0)
    ax, p = n.attr("axis", -1), n.attr("p", 2)
    if p == 1:
        nrm = fw.sum(fw.abs(x), axis=ax, keepdim=True)
    else:
        nrm = fw.sqrt(fw.sum(fw.multiply(x, x), axis=ax, keepdim=True))
    # a zero norm divides by one (the zero vector stays zero), as ONNX's reference does
    return fw.divide(x, fw.where(fw.equal(nrm, fw.zeros_like(nrm)), fw.ones_like(nrm), nrm))


@converter("LRN")
def _lrn(n: Node) -> fw.Tensor:
    x = n.tensor(0)
    size = n.attr("size")
    alpha, beta, bias = n.attr("alpha", 1e-4), n.attr("beta", 0.75), n.attr("bias", 1.0)
    sq = fw.multiply(x, x)
    lo, hi = (size - 1) // 2, size - 1 - (size - 1) // 2
    c = x.shape[1]
    sqp = fw.pad(sq, [0, 0, lo, hi] + [0, 0] * (x.ndim - 2), mode="constant", value=0.0)
    total = fw.add_n([fw.slice(sqp, [1], [i], [i + c]) for i in range(size)])
    den = fw.pow(
        fw.add(
            fw.multiply(total, fw.full([], alpha / size, dtype=x.dtype, device=n.device)),
            fw.full([], bias, dtype=x.dtype, device=n.device),
        ),
        fw.full([], beta, dtype=x.dtype, device=n.device),
    )
    return fw.divide(x, den)


@converter("Dropout", consts=(1, 2))
def _dropout(n: Node) -> list[object]:
    x = n.tensor(0)
    training = n.const(2)
    ratio = n.const(1)
    ratio = float(ratio.reshape(())) if ratio is not None else float(n.attr("ratio", 0.5))
    if training is not None and bool(training.reshape(())) and ratio != 0.0:
        raise n.error(
            f"training_mode=True with ratio {ratio} is not imported (a random mask)",
            "export the model for inference",
        )
    return [x, fw.ones(x.shape, dtype="bool", device=n.device)]
