"""``Resize`` and ``Upsample``: separable resampling, one axis at a time.

Every ONNX coordinate transform, nearest rounding and the linear and cubic kernels come down
to, per resized axis, a few source indices and weights for each output position. They depend
only on the sizes, so they are computed when the program is built (numpy) and the program
holds gathers and a weighted sum: exact for every mode, with gradients for free.
"""

from __future__ import annotations

import numpy as np

import framework as fw

from ._registry import Node, converter


def _coords(n: Node, out: int, size: int, scale: float, roi: tuple[float, float]) -> np.ndarray:
    x = np.arange(out, dtype=np.float64)
    mode = n.attr("coordinate_transformation_mode", "half_pixel")
    if mode == "half_pixel":
        return (x + 0.5) / scale - 0.5
    if mode == "half_pixel_symmetric":
        adj = out / (scale * size)
        center = size / 2
        return center * (1 - adj) + (x + 0.5) / scale - 0.5
    if mode == "pytorch_half_pixel":
        return (x + 0.5) / scale - 0.5 if out > 1 else np.zeros_like(x)
    if mode == "align_corners":
        # the resized length as ONNX computes it: size * scale, before flooring
        return x * (size - 1) / (size * scale - 1) if out > 1 else np.zeros_like(x)
    if mode == "asymmetric":
        return x / scale
    if mode == "tf_crop_and_resize":
        s, e = roi
        if out > 1:
            return s * (size - 1) + x * (e - s) * (size - 1) / (out - 1)
        return 0.5 * (s + e) * (size - 1) + np.zeros_like(x)
    raise n.error(f"coordinate_transformation_mode={mode!r} is not known")


def _cubic(t: np.ndarray, a: float) -> np.ndarray:
    t = np.abs(t)
    return np.where(
        t <= 1,
        ((a + 2) * t - (a + 3)) * t * t + 1,
        np.where(t < 2, ((a * t - 5 * a) * t + 8 * a) * t - 4 * a, 0.0),
    )


def _taps(n: Node, mode: str, out: int, size: int, scale: float, roi: tuple[float, float]):  # type: ignore[no-untyped-def]
    """(indices [taps, out], weights [taps, out], outside mask [out] or None) for one axis."""
    x = _coords(n, out, size, scale, roi)
    outside = None
    if n.attr("coordinate_transformation_mode", "half_pixel") == "tf_crop_and_resize":
        outside = (x < 0) | (x > size - 1)
    if mode == "nearest":
        nm = n.attr("nearest_mode", "round_prefer_floor")
        if nm == "round_prefer_floor":
            i = np.ceil(x - 0.5)
        elif nm == "round_prefer_ceil":
            i = np.floor(x + 0.5)
        elif nm == "floor":
            i = np.floor(x)
        else:
            i = np.ceil(x)
        return np.clip(i, 0, size - 1).astype(np.int64)[None], np.ones((1, out)), outside
    if n.attr("antialias", 0) and scale < 1:
        # the kernel stretched by 1/scale (downsampling): 2 * ceil-ish(1/scale) taps around x,
        # from the one just left of x (a ratio in (0, 1]), weights normalised to sum 1
        x0 = np.ceil(x) - 1
        r = x - x0
        reach = 1.0 if mode == "linear" else 2.0
        start = int(np.floor(-reach / scale) + 1)
        offs = np.arange(start, 2 - start)
        args = (offs[:, None] - r[None]) * scale
        if mode == "linear":
            w = np.clip(1 - np.abs(args), 0, 1)
        else:
            w = _cubic(args, n.attr("cubic_coeff_a", -0.75))
        w = w / w.sum(0, keepdims=True)
        idx = x0[None] + offs[:, None]
        if n.attr("exclude_outside", 0):
            w = np.where((idx < 0) | (idx > size - 1), 0.0, w)
            w = w / w.sum(0, keepdims=True)
        return np.clip(idx, 0, size - 1).astype(np.int64), w, outside
    x0 = np.floor(x)
    r = x - x0
    if mode == "linear":
        offs, w = np.array([0, 1]), np.stack([1 - r, r])
    else:
        a = n.attr("cubic_coeff_a", -0.75)
        offs = np.array([-1, 0, 1, 2])
        w = np.stack([_cubic(r + 1, a), _cubic(r, a), _cubic(1 - r, a), _cubic(2 - r, a)])
    idx = x0[None] + offs[:, None]
    if mode == "cubic" and n.attr("exclude_outside", 0):
        w = np.where((idx < 0) | (idx > size - 1), 0.0, w)
        w = w / w.sum(0, keepdims=True)
    return np.clip(idx, 0, size - 1).astype(np.int64), w, outside


def _resize_axis(
    n: Node, x: fw.Tensor, axis: int, out: int, scale: float, roi: tuple[float, float], mode: str
) -> fw.Tensor:
    idx, w, outside = _taps(n, mode, out, x.shape[axis], scale, roi)
    shape = [1] * x.ndim
    shape[axis] = out
    y = None
    for k in range(idx.shape[0]):
        g = fw.gather(x, fw.to_tensor(idx[k], device=n.device), axis=axis)
        if mode != "nearest":
            g = fw.multiply(g, fw.to_tensor(w[k].reshape(shape).astype(x.dtype), device=n.device))
        y = g if y is None else fw.add(y, g)
    if outside is not None and outside.any():
        fill = np.full(shape, n.attr("extrapolation_value", 0.0), dtype=x.dtype)
        y = fw.where(
            fw.to_tensor(outside.reshape(shape), device=n.device), fw.to_tensor(fill, device=n.device), y
        )
    return y


@converter("Resize", consts=(1, 2, 3))
def _resize(n: Node) -> fw.Tensor:
    x = n.tensor(0)
    r = x.ndim
    if n.attr("antialias", 0) and n.attr("mode", "nearest") == "nearest":
        raise n.error("antialias=1 with mode 'nearest' is not imported", "use mode 'linear' or 'cubic'")
    axes = [a + r if a < 0 else a for a in n.attr("axes", list(range(r)))]
    roi = n.const(1) if n.has(1) and n.const(1).size else None
    scales = n.const(2) if n.has(2) and n.const(2).size else None
    sizes = n.const(3) if n.has(3) and n.const(3).size else None
    if scales is not None:
        sc = [float(s) for s in scales]
        outs = [int(np.floor(x.shape[a] * s)) for a, s in zip(axes, sc)]
    else:
        outs = [int(s) for s in sizes]
        sc = [o / x.shape[a] for a, o in zip(axes, outs)]
        policy = n.attr("keep_aspect_ratio_policy", "stretch")
        if policy != "stretch":
            s = min(sc) if policy == "not_larger" else max(sc)
            sc = [s] * len(axes)
            outs = [int(np.floor(x.shape[a] * s + 0.5)) for a in axes]
    mode = n.attr("mode", "nearest")
    y = x
    for j, (a, o, s) in enumerate(zip(axes, outs, sc)):
        box = (0.0, 1.0) if roi is None else (float(roi[j]), float(roi[j + len(axes)]))
        if o == x.shape[a] and s == 1.0 and n.attr("coordinate_transformation_mode") != "tf_crop_and_resize":
            continue
        y = _resize_axis(n, y, a, o, s, box, mode)
    return y


@converter("Upsample", consts=(1,))
def _upsample(n: Node) -> fw.Tensor:
    x = n.tensor(0)
    scales = n.const(1) if n.has(1) else np.asarray(n.attr("scales"))
    y = x
    mode = n.attr("mode", "nearest")
    n.attrs.setdefault("coordinate_transformation_mode", "asymmetric")
    n.attrs.setdefault("nearest_mode", "floor")
    for a, s in enumerate(scales):
        if float(s) != 1.0:
            y = _resize_axis(n, y, a, int(np.floor(x.shape[a] * float(s))), float(s), (0.0, 1.0), mode)
    return y


def _reflect(v: fw.Tensor, lo: float, hi: float) -> fw.Tensor:
    """``v`` reflected into [lo, hi] as often as it takes (a triangle wave of period 2(hi-lo))."""
    span = hi - lo
    if span <= 0:
        return fw.full_like(v, lo)
    t = fw.remainder(fw.subtract(v, fw.full_like(v, lo)), fw.full_like(v, 2 * span))
    back = fw.subtract(fw.full_like(t, 2 * span), t)
    return fw.add(fw.where(fw.greater_than(t, fw.full_like(t, span)), back, t), fw.full_like(t, lo))


def _rint(v: fw.Tensor) -> fw.Tensor:
    """Round half to even (``fw.round`` rounds halves away from zero)."""
    r = fw.round(v)
    half = fw.equal(fw.abs(fw.subtract(v, fw.trunc(v))), fw.full_like(v, 0.5))
    return fw.where(half, fw.multiply(fw.round(fw.divide(v, fw.full_like(v, 2.0))), fw.full_like(v, 2.0)), r)


@converter("GridSample")
def _grid_sample(n: Node) -> fw.Tensor:
    """Sampling on a grid. 2-D bilinear or nearest run ``F.grid_sample``: ``reflection``
    reflects the grid's locations into the image, then samples as ``border``; ``nearest``
    snaps them to the pixel ONNX picks (halves to even). Cubic and 3-D sampling gather
    their taps (:func:`_sample_taps`)."""
    from framework.nn import functional as F

    x, grid = n.tensor(0), n.tensor(1)
    kind = {
        "linear": "linear",
        "bilinear": "linear",
        "nearest": "nearest",
        "cubic": "cubic",
        "bicubic": "cubic",
    }
    mode = kind.get(n.attr("mode", "bilinear"))
    if mode is None:
        raise n.error(f"mode={n.attr('mode')!r} is not imported", "use 'linear', 'nearest' or 'cubic'")
    pad = n.attr("padding_mode", "zeros")
    if pad not in ("zeros", "border", "reflection"):
        raise n.error(f"padding_mode={pad!r} is not imported", "use 'zeros', 'border' or 'reflection'")
    if mode == "cubic" or x.ndim != 4:
        return _sample_taps(n, x, grid, mode, pad, bool(n.attr("align_corners", 0)))
    mode = "bilinear" if mode == "linear" else mode
    align = bool(n.attr("align_corners", 0))
    if pad == "reflection" or mode == "nearest":
        cols = []
        for i, size in enumerate((x.shape[3], x.shape[2])):  # grid holds (x, y)
            g = grid[..., i]
            one = fw.ones_like(g)
            # to pixels: align_corners maps [-1, 1] to the centres of the edge pixels, else to their outer edges
            scale = (size - 1) / 2 if align else size / 2
            shift = 0.0 if align else 0.5
            pix = fw.subtract(fw.multiply(fw.add(g, one), fw.full_like(g, scale)), fw.full_like(g, shift))
            if pad == "reflection":
                pix = _reflect(pix, 0.0, size - 1.0) if align else _reflect(pix, -0.5, size - 0.5)
            if mode == "nearest":
                pix = _rint(pix)
            if scale == 0:  # one pixel with align_corners: every location is its centre
                g = fw.zeros_like(pix)
            else:
                g = fw.subtract(
                    fw.divide(fw.add(pix, fw.full_like(pix, shift)), fw.full_like(pix, scale)), one
                )
            cols.append(fw.unsqueeze(g, -1))
        grid = fw.concat(cols, axis=-1)
        pad = "border" if pad == "reflection" else pad
    return F.grid_sample(x, grid, mode=mode, padding_mode=pad, align_corners=align)


def _cubic_coeffs(t: fw.Tensor) -> list[fw.Tensor]:
    """Keys' cubic convolution weights (a = -0.75) of the taps at -1, 0, 1, 2 from ``floor``."""
    a = -0.75

    def far(d: fw.Tensor) -> fw.Tensor:  # 1 < |d| < 2
        return ((d * a - 5 * a) * d + 8 * a) * d - 4 * a

    def near(d: fw.Tensor) -> fw.Tensor:  # |d| <= 1
        return ((d * (a + 2)) - (a + 3)) * d * d + 1

    one = fw.ones_like(t)
    return [far(t + one), near(t), near(one - t), far(one * 2 - t)]


def _sample_taps(n: Node, x: fw.Tensor, grid: fw.Tensor, mode: str, pad: str, align: bool) -> fw.Tensor:
    """Grid sampling of any rank and mode as ONNX's reference computes it: per axis, the
    location in pixels (border or reflection applied to it), the taps around it and their
    weights; each combination of taps one gather from the flattened input."""
    import itertools

    dims = [int(d) for d in x.shape[2:]]
    k = len(dims)
    if grid.shape[-1] != k:
        raise n.error(
            f"a grid of {grid.shape[-1]} coordinates for a {k}-D input", "give one coordinate per spatial dim"
        )
    nb, ch = int(x.shape[0]), int(x.shape[1])
    out_shape = [int(d) for d in grid.shape[1:-1]]
    q = int(np.prod(out_shape))
    axes_taps = []
    for i, size in enumerate(dims):
        g = grid[..., k - 1 - i].reshape([nb, 1, q])  # the grid holds (x, y, z): the last dim first
        one = fw.ones_like(g)
        scale, shift = ((size - 1) / 2, 0.0) if align else (size / 2, 0.5)
        lo, hi = (0.0, size - 1.0) if align else (-0.5, size - 0.5)
        c = fw.subtract(fw.multiply(fw.add(g, one), fw.full_like(g, scale)), fw.full_like(g, shift))
        if mode == "nearest":
            c = _rint(c)
        outside = fw.logical_or(fw.less_than(c, fw.full_like(c, lo)), fw.greater_than(c, fw.full_like(c, hi)))
        if pad == "border":
            c = fw.where(outside, fw.clip(c, 0.0, size - 1.0), c)
        elif pad == "reflection":
            c = _reflect(c, lo, hi)
        if mode == "nearest":
            taps = [(c, one)]
        else:
            c0 = fw.floor(c)
            t = fw.subtract(c, c0)
            if mode == "linear":
                taps = [(c0, fw.subtract(one, t)), (fw.add(c0, one), t)]
            else:
                taps = [
                    (fw.add(c0, fw.full_like(c0, float(j))), w)
                    for j, w in zip(range(-1, 3), _cubic_coeffs(t))
                ]
        fixed = []
        for pos, w in taps:  # where each tap reads, and whether it reads the image at all
            if pad == "zeros":
                inside = fw.logical_and(
                    fw.greater_equal(pos, fw.zeros_like(pos)),
                    fw.less_equal(pos, fw.full_like(pos, size - 1.0)),
                )
                w = fw.where(inside, w, fw.zeros_like(w))
            elif pad == "reflection":
                pos = _reflect(pos, lo, hi)
            fixed.append((fw.clip(fw.round(pos), 0.0, size - 1.0).astype("int64"), w))
        axes_taps.append(fixed)
    strides = np.cumprod([1, *dims[::-1]])[::-1][1:]
    flat = x.reshape([nb, ch, int(np.prod(dims))])
    out = None
    for combo in itertools.product(*axes_taps):
        idx = combo[0][0] * int(strides[0])
        w = combo[0][1]
        for j, (pi, wi) in enumerate(combo[1:], start=1):
            idx = fw.add(idx, pi * int(strides[j]))
            w = fw.multiply(w, wi)
        vals = fw.take_along_axis(flat, fw.expand(idx, [nb, ch, q]), 2)
        term = fw.multiply(vals, w.astype(x.dtype))
        out = term if out is None else fw.add(out, term)
    return out.reshape([nb, ch, *out_shape])
