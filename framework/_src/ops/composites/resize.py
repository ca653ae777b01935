"""interpolate/upsample (nearest, linear, bilinear, trilinear, bicubic, area), affine_grid and
grid_sample (bilinear, nearest).

Resizing is linear along each spatial axis, so ``interpolate`` is one composite that applies a
small (out, in) interpolation matrix per axis with ``matmul``; its gradient is the transposed
matrix, by the decomposition. The matrices follow Paddle's index rules (``align_corners``,
``align_mode``).
"""

from __future__ import annotations

import math as _m
from typing import Any

import numpy as np

from adapter_api import OpArgumentError

from ...tensor import Tensor, to_tensor
from .. import math as M
from .. import shape as S
from ..base import OPS, call, composite
from ..indexing import take_along_axis
from ._common import float_arg, tensor_arg

_MODES = {"nearest": 0, "linear": 1, "bilinear": 2, "trilinear": 3, "bicubic": 2, "area": 0}


def _cubic(t: np.ndarray, a: float = -0.75) -> np.ndarray:
    t = np.abs(t)
    return np.where(
        t <= 1,
        ((a + 2) * t - (a + 3)) * t * t + 1,
        np.where(t < 2, ((a * t - 5 * a) * t + 8 * a) * t - 4 * a, 0.0),
    )


def interp_matrix(
    mode: str, n_in: int, n_out: int, ratio: float, align_corners: bool, align_mode: int
) -> np.ndarray:
    """The (n_out, n_in) matrix that resizes one axis (Paddle's index rules)."""
    a = np.zeros((n_out, n_in))
    i = np.arange(n_out, dtype=np.float64)
    if mode == "nearest":
        src = np.floor(i * ratio + 0.5) if align_corners else np.floor(i * ratio)
        a[np.arange(n_out), np.clip(src.astype(np.int64), 0, n_in - 1)] = 1.0
        return a
    if mode == "area":
        for o in range(n_out):
            lo, hi = (o * n_in) // n_out, -(-((o + 1) * n_in) // n_out)
            a[o, lo:hi] = 1.0 / (hi - lo)
        return a
    if align_corners:
        src = i * ratio
    elif mode == "bicubic" or align_mode == 0:
        src = (i + 0.5) * ratio - 0.5
    else:
        src = i * ratio
    if mode == "bicubic":
        f = np.floor(src)
        t = src - f
        for k in range(-1, 3):
            idx = np.clip(f + k, 0, n_in - 1).astype(np.int64)
            np.add.at(a, (np.arange(n_out), idx), _cubic(t - k))
        return a
    src = np.maximum(src, 0.0)
    lo = np.minimum(np.floor(src).astype(np.int64), n_in - 1)
    hi = np.minimum(lo + 1, n_in - 1)
    w = src - lo
    np.add.at(a, (np.arange(n_out), lo), 1.0 - w)
    np.add.at(a, (np.arange(n_out), hi), w)
    return a


def _interp_infer(ins: list[Tensor], attrs: dict[str, Any]) -> list:
    x = ins[0]
    return [(x.shape[:2] + tuple(attrs["size"]), x.dtype)]


@composite("interpolate", amp="deny", infer=_interp_infer)
def interpolate_decomposition(
    x: Tensor, *, mode: str, size: tuple, ratios: tuple, align_corners: bool, align_mode: int
) -> Tensor:
    """Channel-first x: per spatial axis, move it last and multiply by the axis's matrix."""
    nd = len(size)
    for k in range(nd):
        ax = 2 + k
        n_in, n_out = x.shape[ax], size[k]
        mat = interp_matrix(mode, n_in, n_out, ratios[k], align_corners, align_mode)
        at = to_tensor(mat.T.astype(x.dtype), device=x.device)
        xt = S.swapaxes(x, ax, -1)
        x = S.swapaxes(M.matmul(xt, at), ax, -1)
    return x


def interpolate(
    x: Tensor,
    size: Any = None,
    scale_factor: Any = None,
    mode: str = "nearest",
    align_corners: bool = False,
    align_mode: int = 0,
    data_format: str | None = None,
    name: str | None = None,
) -> Tensor:
    """Resize the spatial dims of a channel-first 3-d, 4-d or 5-d ``x`` to ``size`` (or by
    ``scale_factor``): ``nearest``, ``linear`` (3-d), ``bilinear``/``bicubic`` (4-d),
    ``trilinear`` (5-d), ``area``."""
    x = float_arg("interpolate", x)
    mode = mode.lower()
    if mode not in _MODES:
        raise OpArgumentError(f"[interpolate] mode must be one of {sorted(_MODES)}, got {mode!r}")
    if x.ndim not in (3, 4, 5):
        raise OpArgumentError(
            f"[interpolate] x must be 3-d, 4-d or 5-d (N, C, spatial...), got shape {x.shape}"
        )
    nd = x.ndim - 2
    if _MODES[mode] and _MODES[mode] != nd:
        raise OpArgumentError(
            f"[interpolate] mode {mode!r} needs a {_MODES[mode] + 2}-d input, got shape {x.shape}"
        )
    last = data_format is not None and data_format[-1] == "C" and data_format not in ("NC",)
    if last:
        x = x.transpose((0, x.ndim - 1) + tuple(range(1, x.ndim - 1)))
    if align_corners and mode in ("nearest", "area"):
        raise OpArgumentError(
            f"[interpolate] align_corners=True only applies to the linear modes, got mode {mode!r}"
        )
    spatial = x.shape[2:]
    if (size is None) == (scale_factor is None):
        raise OpArgumentError("[interpolate] pass exactly one of size and scale_factor")
    if size is not None:
        sz = [
            int(s.item()) if isinstance(s, Tensor) else int(s)
            for s in ([size] * nd if isinstance(size, int) else list(size))
        ]
        if len(sz) != nd or min(sz) < 1:
            raise OpArgumentError(
                f"[interpolate] size must be {nd} positive ints for x {x.shape}, got {size!r}"
            )
        scales = [0.0] * nd
    else:
        scales = (
            [float(scale_factor)] * nd
            if isinstance(scale_factor, (int, float))
            else [float(s) for s in scale_factor]
        )
        if len(scales) != nd or min(scales) <= 0:
            raise OpArgumentError(
                f"[interpolate] scale_factor must be positive, one per spatial dim ({nd}), got {scale_factor!r}"
            )
        sz = [int(_m.floor(n * s)) for n, s in zip(spatial, scales)]
    ratios = []
    for n_in, n_out, sc in zip(spatial, sz, scales):
        if align_corners:
            ratios.append((n_in - 1) / (n_out - 1) if n_out > 1 else 0.0)
        else:
            ratios.append(1.0 / sc if sc > 0 else n_in / n_out)
    attrs = {
        "mode": mode,
        "size": tuple(sz),
        "ratios": tuple(ratios),
        "align_corners": bool(align_corners),
        "align_mode": int(align_mode),
    }
    y = call(OPS["interpolate"], [x], attrs)
    return y.transpose((0,) + tuple(range(2, y.ndim)) + (1,)) if last else y


def upsample(
    x: Tensor,
    size: Any = None,
    scale_factor: Any = None,
    mode: str = "nearest",
    align_corners: bool = False,
    align_mode: int = 0,
    data_format: str | None = None,
    name: str | None = None,
) -> Tensor:
    """Paddle's ``F.upsample``: the same as :func:`interpolate`."""
    return interpolate(x, size, scale_factor, mode, align_corners, align_mode, data_format)


def _base_coords(n: int, align_corners: bool) -> np.ndarray:
    if align_corners:
        return np.linspace(-1.0, 1.0, n) if n > 1 else np.zeros(1)
    return (2 * np.arange(n) + 1) / n - 1.0


def affine_grid(theta: Tensor, out_shape: Any, align_corners: bool = True, name: str | None = None) -> Tensor:
    """Sampling grid (N, H, W, 2) of (x, y) in [-1, 1] for the affine maps ``theta`` (N, 2, 3)."""
    theta = float_arg("affine_grid", theta, "theta")
    shp = [int(s) for s in (out_shape.tolist() if isinstance(out_shape, Tensor) else out_shape)]
    if theta.ndim != 3 or theta.shape[1:] != (2, 3) or len(shp) != 4 or shp[0] != theta.shape[0]:
        raise OpArgumentError(
            f"[affine_grid] theta must be (N, 2, 3) and out_shape [N, C, H, W] with the same N, got {theta.shape} and {shp}"
        )
    h, w = shp[2], shp[3]
    xs, ys = _base_coords(w, align_corners), _base_coords(h, align_corners)
    base = np.stack([np.tile(xs, h), np.repeat(ys, w), np.ones(h * w)], axis=1)  # (H*W, 3)
    b = to_tensor(base.astype(theta.dtype), device=theta.device)
    grid = M.matmul(b.unsqueeze(0).expand((theta.shape[0], h * w, 3)), theta.transpose((0, 2, 1)))
    return grid.reshape((theta.shape[0], h, w, 2))


def grid_sample(
    x: Tensor,
    grid: Tensor,
    mode: str = "bilinear",
    padding_mode: str = "zeros",
    align_corners: bool = True,
    name: str | None = None,
) -> Tensor:
    """Sample NCHW ``x`` at the (x, y) locations in ``grid`` (N, Ho, Wo, 2), in [-1, 1];
    ``bilinear`` or ``nearest``, ``padding_mode`` ``zeros`` or ``border``. Gradients reach
    both ``x`` and ``grid``."""
    x = float_arg("grid_sample", x)
    grid = tensor_arg("grid_sample", grid, "grid").astype(x.dtype)
    if mode not in ("bilinear", "nearest") or padding_mode not in ("zeros", "border"):
        raise OpArgumentError(
            f"[grid_sample] mode must be 'bilinear' or 'nearest' and padding_mode 'zeros' or 'border', got {mode!r}, {padding_mode!r}"
        )
    if x.ndim != 4 or grid.ndim != 4 or grid.shape[-1] != 2 or grid.shape[0] != x.shape[0]:
        raise OpArgumentError(
            f"[grid_sample] x must be (N, C, H, W) and grid (N, Ho, Wo, 2) with the same N, got {x.shape} and {grid.shape}"
        )
    n, c, h, w = x.shape
    ho, wo = grid.shape[1:3]
    gx, gy = grid[..., 0], grid[..., 1]

    def unnorm(g: Tensor, size: int) -> Tensor:
        return (g + 1.0) * ((size - 1) * 0.5) if align_corners else ((g + 1.0) * size - 1.0) * 0.5

    ix, iy = unnorm(gx, w), unnorm(gy, h)
    if padding_mode == "border":
        ix, iy = M.clip(ix, 0.0, w - 1.0), M.clip(iy, 0.0, h - 1.0)
    flat = x.reshape((n, c, h * w))

    def tap(xi: Tensor, yi: Tensor) -> Tensor:
        inside = M.cast((xi >= 0) & (xi <= w - 1) & (yi >= 0) & (yi <= h - 1), x.dtype)
        idx = M.cast(M.clip(yi, 0, h - 1) * w + M.clip(xi, 0, w - 1), "int64").reshape((n, 1, ho * wo))
        vals = take_along_axis(flat, idx.expand((n, c, ho * wo)), 2).reshape((n, c, ho, wo))
        return vals * inside.unsqueeze(1)

    if mode == "nearest":
        return tap(M.round_half_away(ix).detach(), M.round_half_away(iy).detach())
    x0, y0 = M.floor(ix).detach(), M.floor(iy).detach()
    x1, y1 = x0 + 1.0, y0 + 1.0
    wx1, wy1 = ix - x0, iy - y0
    wx0, wy0 = 1.0 - wx1, 1.0 - wy1
    out = tap(x0, y0) * (wx0 * wy0).unsqueeze(1) + tap(x1, y0) * (wx1 * wy0).unsqueeze(1)
    return out + tap(x0, y1) * (wx0 * wy1).unsqueeze(1) + tap(x1, y1) * (wx1 * wy1).unsqueeze(1)
