"""Dropout: dropout (elementwise or along axes), dropout2d (whole channels) and alpha_dropout
(SELU's moments kept), from the Philox uniforms (the same mask on every device for the same
seed).
"""

from __future__ import annotations

from typing import Any

from adapter_api import OpArgumentError

from ... import dtypes as _dt
from ...tensor import Tensor
from .. import math as M
from .. import random as _rand
from ._common import float_arg, tensor_arg


def dropout(
    x: Tensor,
    p: float = 0.5,
    axis: Any = None,
    training: bool = True,
    mode: str = "upscale_in_train",
    name: str | None = None,
) -> Tensor:
    """Zero each element with probability ``p`` using a Philox mask (the same on every device
    for the same seed); ``upscale_in_train`` scales the kept ones by 1/(1-p)."""
    x = tensor_arg("dropout", x)
    if not 0.0 <= p <= 1.0:
        raise OpArgumentError(f"[dropout] p must be in [0, 1], got {p}")
    if mode not in ("upscale_in_train", "downscale_in_infer"):
        raise OpArgumentError(
            f"[dropout] mode must be 'upscale_in_train' or 'downscale_in_infer', got {mode!r}"
        )
    if not training:
        return x * (1.0 - p) if mode == "downscale_in_infer" and p > 0 else x
    if p == 0.0:
        return x
    if p == 1.0:
        return x * 0.0
    shape = x.shape
    if axis is not None:
        axes = M.normalize_axes("dropout", axis, x.ndim)
        shape = tuple(s if i in axes else 1 for i, s in enumerate(x.shape))
    u = _rand.rand(
        shape, dtype=x.dtype if x.dtype in (_dt.float32, _dt.float64) else _dt.float32, device=x.device
    )
    keep = M.cast(u >= p, x.dtype)
    scale = 1.0 / (1.0 - p) if mode == "upscale_in_train" else 1.0
    return x * (keep * scale)


_SELU_ALPHA_P = -1.0507009873554804934193349852946 * 1.6732632423543772848170429916717


def dropout2d(
    x: Tensor, p: float = 0.5, training: bool = True, data_format: str = "NCHW", name: str | None = None
) -> Tensor:
    """Zero whole channels of a 4-d ``x`` with probability ``p`` (kept ones scaled by 1/(1-p))."""
    x = tensor_arg("dropout2d", x)
    if x.ndim != 4 or data_format not in ("NCHW", "NHWC"):
        raise OpArgumentError(
            f"[dropout2d] x must be 4-d NCHW or NHWC, got shape {x.shape} and {data_format!r}"
        )
    return dropout(x, p, axis=[0, 1] if data_format == "NCHW" else [0, 3], training=training)


def dropout1d(
    x: Tensor, p: float = 0.5, training: bool = True, data_format: str = "NCL", name: str | None = None
) -> Tensor:
    """Zero whole channels of a 2-d or 3-d ``x`` with probability ``p`` (kept ones scaled by 1/(1-p))."""
    x = tensor_arg("dropout1d", x)
    if x.ndim not in (2, 3) or data_format not in ("NCL", "NLC"):
        raise OpArgumentError(
            f"[dropout1d] x must be 2-d or 3-d NCL or NLC, got shape {x.shape} and {data_format!r}"
        )
    if x.ndim == 2:  # (C, L): one sample
        return dropout(x, p, axis=[0] if data_format == "NCL" else [1], training=training)
    return dropout(x, p, axis=[0, 1] if data_format == "NCL" else [0, 2], training=training)


def dropout3d(
    x: Tensor, p: float = 0.5, training: bool = True, data_format: str = "NCDHW", name: str | None = None
) -> Tensor:
    """Zero whole channels of a 5-d ``x`` with probability ``p`` (kept ones scaled by 1/(1-p))."""
    x = tensor_arg("dropout3d", x)
    if x.ndim != 5 or data_format not in ("NCDHW", "NDHWC"):
        raise OpArgumentError(
            f"[dropout3d] x must be 5-d NCDHW or NDHWC, got shape {x.shape} and {data_format!r}"
        )
    return dropout(x, p, axis=[0, 1] if data_format == "NCDHW" else [0, 4], training=training)


def alpha_dropout(x: Tensor, p: float = 0.5, training: bool = True, name: str | None = None) -> Tensor:
    """Dropout that keeps SELU's zero mean and unit variance: dropped values become
    alpha' = -scale*alpha, then a * y + b restores the moments."""
    return _alpha_dropout("alpha_dropout", x, p, training, per_channel=False)


def feature_alpha_dropout(
    x: Tensor, p: float = 0.5, training: bool = True, name: str | None = None
) -> Tensor:
    """:func:`alpha_dropout` of whole channels (dim 1): each channel of each sample is kept or
    dropped as one."""
    return _alpha_dropout("feature_alpha_dropout", x, p, training, per_channel=True)


def _alpha_dropout(name: str, x: Tensor, p: float, training: bool, per_channel: bool) -> Tensor:
    x = float_arg(name, x)
    if not 0.0 <= p <= 1.0:
        raise OpArgumentError(f"[{name}] p must be in [0, 1], got {p}")
    if per_channel and x.ndim < 2:
        raise OpArgumentError(f"[{name}] x needs a channel dim (at least 2-d), got shape {x.shape}")
    if not training or p == 0.0:
        return x
    if p == 1.0:
        return x * 0.0
    shape = x.shape[:2] + (1,) * (x.ndim - 2) if per_channel else x.shape
    keep = M.cast(_rand.rand(shape, dtype=x.dtype, device=x.device) >= p, x.dtype)
    a = ((1.0 - p) * (1.0 + p * _SELU_ALPHA_P**2)) ** -0.5
    b = -a * _SELU_ALPHA_P * p
    return (x * keep + (1.0 - keep) * _SELU_ALPHA_P) * a + b
