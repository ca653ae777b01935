"""The common layers (Paddle's ``nn/layer/common.py``): Linear, Bilinear, Embedding, Dropout and
Dropout2D, Flatten and Unflatten, Identity, and the resizing and padding layers Upsample,
PixelShuffle and Pad2D."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from adapter_api import OpArgumentError

from .._src.ops.indexing import index_select
from .._src.tensor import Tensor, to_tensor
from . import functional as F
from . import initializer as I
from .layer import Layer


class Linear(Layer):
    """``y = x @ weight + bias`` with ``weight`` of shape ``[in_features, out_features]``."""

    def __init__(
        self,
        in_features: int,
        out_features: int,
        weight_attr: Any = None,
        bias_attr: Any = None,
        name: str | None = None,
    ) -> None:
        super().__init__()
        for what, v in (("in_features", in_features), ("out_features", out_features)):
            if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
                raise OpArgumentError(f"[Linear] {what} must be a positive int, got {v!r}")
        self.in_features, self.out_features = in_features, out_features
        self.weight = self.create_parameter((in_features, out_features), weight_attr)
        self.bias = self.create_parameter((out_features,), bias_attr, is_bias=True)

    def forward(self, x: Tensor) -> Tensor:
        return F.linear(x, self.weight, self.bias)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}"


class Bilinear(Layer):
    """y[k] = x1 @ weight[k] @ x2 + bias[k]; weight (out_features, in1_features, in2_features)."""

    def __init__(
        self,
        in1_features: int,
        in2_features: int,
        out_features: int,
        weight_attr: Any = None,
        bias_attr: Any = None,
        name: str | None = None,
    ) -> None:
        super().__init__()
        bound = 1.0 / math.sqrt(in1_features)
        self.weight = self.create_parameter(
            (out_features, in1_features, in2_features),
            weight_attr,
            default_initializer=I.Uniform(-bound, bound),
        )
        self.bias = self.create_parameter(
            (1, out_features), bias_attr, is_bias=True, default_initializer=I.Uniform(-bound, bound)
        )

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        # (N, 1, 1, in1) @ (1, out, in1, in2) -> (N, out, 1, in2); times x2 and summed over in2
        t = x1.unsqueeze(1).unsqueeze(1).matmul(self.weight.unsqueeze(0)).squeeze(2)
        y = (t * x2.unsqueeze(1)).sum(-1)
        return y + self.bias if self.bias is not None else y


class Embedding(Layer):
    def __init__(
        self,
        num_embeddings: int,
        embedding_dim: int,
        padding_idx: int | None = None,
        sparse: bool = False,
        weight_attr: Any = None,
        name: str | None = None,
    ) -> None:
        super().__init__()
        self.num_embeddings, self.embedding_dim, self.padding_idx = num_embeddings, embedding_dim, padding_idx
        self.weight = self.create_parameter((num_embeddings, embedding_dim), weight_attr)

    def forward(self, x: Tensor) -> Tensor:
        return F.embedding(x, self.weight, padding_idx=self.padding_idx)

    def extra_repr(self) -> str:
        return f"{self.num_embeddings}, {self.embedding_dim}"


class Dropout(Layer):
    def __init__(
        self, p: float = 0.5, axis: Any = None, mode: str = "upscale_in_train", name: str | None = None
    ) -> None:
        super().__init__()
        self.p, self.axis, self.mode = p, axis, mode

    def forward(self, x: Tensor) -> Tensor:
        return F.dropout(x, self.p, axis=self.axis, training=self.training, mode=self.mode)


class Dropout2D(Layer):
    def __init__(self, p: float = 0.5, data_format: str = "NCHW", name: str | None = None) -> None:
        super().__init__()
        self.p, self.data_format = p, data_format

    def forward(self, x: Tensor) -> Tensor:
        return F.dropout2d(x, self.p, self.training, self.data_format)


class Flatten(Layer):
    def __init__(self, start_axis: int = 1, stop_axis: int = -1) -> None:
        super().__init__()
        self.start_axis, self.stop_axis = start_axis, stop_axis

    def forward(self, x: Tensor) -> Tensor:
        return x.flatten(self.start_axis, self.stop_axis)


class Unflatten(Layer):
    """Split ``axis`` into ``shape``."""

    def __init__(self, axis: int, shape: Any, name: str | None = None) -> None:
        super().__init__()
        self.axis, self.shape = axis, tuple(int(s) for s in shape)

    def forward(self, x: Tensor) -> Tensor:
        ax = self.axis % x.ndim
        return x.reshape(x.shape[:ax] + self.shape + x.shape[ax + 1 :])


class Identity(Layer):
    def forward(self, x: Tensor) -> Tensor:
        return x


class Upsample(Layer):
    """:func:`~framework.nn.functional.interpolate` as a layer."""

    def __init__(
        self,
        size: Any = None,
        scale_factor: Any = None,
        mode: str = "nearest",
        align_corners: bool = False,
        align_mode: int = 0,
        data_format: str = "NCHW",
        name: str | None = None,
    ) -> None:
        super().__init__()
        self.size, self.scale_factor, self.mode, self.align_corners, self.align_mode, self.data_format = (
            size,
            scale_factor,
            mode,
            align_corners,
            align_mode,
            data_format,
        )

    def forward(self, x: Tensor) -> Tensor:
        return F.interpolate(
            x, self.size, self.scale_factor, self.mode, self.align_corners, self.align_mode, self.data_format
        )


class PixelShuffle(Layer):
    def __init__(self, upscale_factor: int, data_format: str = "NCHW", name: str | None = None) -> None:
        super().__init__()
        self.upscale_factor, self.data_format = upscale_factor, data_format

    def forward(self, x: Tensor) -> Tensor:
        return F.pixel_shuffle(x, self.upscale_factor, self.data_format)


def _pad_index(n: int, before: int, after: int, mode: str) -> np.ndarray:
    """Source index for each padded position of an axis of size n."""
    i = np.arange(-before, n + after)
    if mode == "replicate":
        return np.clip(i, 0, n - 1)
    if mode == "circular":
        return i % n
    period = 2 * (n - 1)  # reflect: mirror without repeating the edge
    j = np.abs(i) % period if period else np.zeros_like(i)
    return np.where(j >= n, period - j, j)


class Pad2D(Layer):
    """Pad the last two dims of NCHW ``x``: ``padding`` is an int or [left, right, top,
    bottom]; ``mode`` is constant, reflect, replicate or circular."""

    def __init__(
        self,
        padding: Any,
        mode: str = "constant",
        value: float = 0.0,
        data_format: str = "NCHW",
        name: str | None = None,
    ) -> None:
        super().__init__()
        p = [int(padding)] * 4 if isinstance(padding, int) else [int(v) for v in padding]
        if len(p) != 4 or min(p) < 0:
            raise OpArgumentError(
                f"[Pad2D] padding must be an int or 4 non-negative ints [left, right, top, bottom], got {padding!r}"
            )
        if mode not in ("constant", "reflect", "replicate", "circular"):
            raise OpArgumentError(
                f"[Pad2D] mode must be constant, reflect, replicate or circular, got {mode!r}"
            )
        if data_format not in ("NCHW", "NHWC"):
            raise OpArgumentError(f"[Pad2D] data_format must be NCHW or NHWC, got {data_format!r}")
        self.padding, self.mode, self.value, self.data_format = p, mode, value, data_format

    def forward(self, x: Tensor) -> Tensor:
        if x.ndim != 4:
            raise OpArgumentError(f"[Pad2D] x must be 4-d, got shape {x.shape}")
        if self.data_format == "NHWC":
            x = x.transpose((0, 3, 1, 2))
        left, right, top, bottom = self.padding
        if self.mode == "constant":
            y = F.pad(x, [left, right, top, bottom], value=self.value)
        else:
            y = x
            for ax, (b, a) in ((2, (top, bottom)), (3, (left, right))):
                n = x.shape[ax]
                if self.mode == "reflect" and max(a, b) >= n:
                    raise OpArgumentError(
                        f"[Pad2D] reflect padding {max(a, b)} must be smaller than the size {n} of axis {ax}"
                    )
                idx = to_tensor(_pad_index(n, b, a, self.mode), dtype="int64", device=x.device)
                y = index_select(y, idx, axis=ax)
        return y.transpose((0, 2, 3, 1)) if self.data_format == "NHWC" else y


class CosineSimilarity(Layer):
    """The cosine similarity of ``x1`` and ``x2`` along ``axis`` (:func:`F.cosine_similarity`)."""

    def __init__(self, axis: int = 1, eps: float = 1e-8) -> None:
        super().__init__()
        self.axis, self.eps = axis, eps

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        return F.cosine_similarity(x1, x2, self.axis, self.eps)


class AlphaDropout(Layer):
    """Dropout that keeps SELU's mean and variance (:func:`F.alpha_dropout`)."""

    def __init__(self, p: float = 0.5, name: str | None = None) -> None:
        super().__init__()
        self.p = p

    def forward(self, x: Tensor) -> Tensor:
        return F.alpha_dropout(x, self.p, self.training)


class UpsamplingNearest2D(Upsample):
    """Nearest-neighbour upsampling of NCHW (or NHWC) ``x`` to ``size`` or by ``scale_factor``."""

    def __init__(
        self, size: Any = None, scale_factor: Any = None, data_format: str = "NCHW", name: str | None = None
    ) -> None:
        super().__init__(size, scale_factor, "nearest", False, 0, data_format)


class UpsamplingBilinear2D(Upsample):
    """Bilinear upsampling (corners aligned) of NCHW (or NHWC) ``x`` to ``size`` or by ``scale_factor``."""

    def __init__(
        self, size: Any = None, scale_factor: Any = None, data_format: str = "NCHW", name: str | None = None
    ) -> None:
        super().__init__(size, scale_factor, "bilinear", True, 0, data_format)


class Unfold(Layer):
    """Sliding blocks of NCHW ``x`` as columns (:func:`F.unfold`)."""

    def __init__(
        self,
        kernel_sizes: Any,
        dilations: Any = 1,
        paddings: Any = 0,
        strides: Any = 1,
        name: str | None = None,
    ) -> None:
        super().__init__()
        self.kernel_sizes, self.dilations, self.paddings, self.strides = (
            kernel_sizes,
            dilations,
            paddings,
            strides,
        )

    def forward(self, x: Tensor) -> Tensor:
        return F.unfold(x, self.kernel_sizes, self.strides, self.paddings, self.dilations)


class Fold(Layer):
    """Columns of sliding blocks summed back into an NCHW image (:func:`F.fold`)."""

    def __init__(
        self,
        output_sizes: Any,
        kernel_sizes: Any,
        dilations: Any = 1,
        paddings: Any = 0,
        strides: Any = 1,
        name: str | None = None,
    ) -> None:
        super().__init__()
        self.output_sizes, self.kernel_sizes = output_sizes, kernel_sizes
        self.dilations, self.paddings, self.strides = dilations, paddings, strides

    def forward(self, x: Tensor) -> Tensor:
        return F.fold(x, self.output_sizes, self.kernel_sizes, self.strides, self.paddings, self.dilations)


class Dropout3D(Layer):
    """Zero whole channels of NCDHW (or NDHWC) ``x`` in training (:func:`F.dropout3d`)."""

    def __init__(self, p: float = 0.5, data_format: str = "NCDHW", name: str | None = None) -> None:
        super().__init__()
        self.p, self.data_format = p, data_format

    def forward(self, x: Tensor) -> Tensor:
        return F.dropout3d(x, self.p, self.training, self.data_format)

    def extra_repr(self) -> str:
        return f"p={self.p}, data_format={self.data_format}"


class FeatureAlphaDropout(Layer):
    """Alpha dropout of whole channels in training (:func:`F.feature_alpha_dropout`)."""

    def __init__(self, p: float = 0.5, name: str | None = None) -> None:
        super().__init__()
        self.p = p

    def forward(self, x: Tensor) -> Tensor:
        return F.feature_alpha_dropout(x, self.p, self.training)
