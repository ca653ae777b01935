"""Normalisation layers (Paddle names): LayerNorm, RMSNorm, BatchNorm1D/2D (running statistics
in buffers), SyncBatchNorm, GroupNorm, InstanceNorm2D and LocalResponseNorm."""

from __future__ import annotations

from typing import Any

from adapter_api import OpArgumentError

from .. import _world
from .._src.ops import creation as _C
from .._src.tensor import Tensor
from . import functional as F
from . import initializer as I
from .layer import Layer


def _shape(normalized_shape: Any) -> tuple[int, ...]:
    return (
        (int(normalized_shape),)
        if isinstance(normalized_shape, int)
        else tuple(int(s) for s in normalized_shape)
    )


class LayerNorm(Layer):
    def __init__(
        self,
        normalized_shape: Any,
        epsilon: float = 1e-5,
        weight_attr: Any = None,
        bias_attr: Any = None,
        name: str | None = None,
    ) -> None:
        super().__init__()
        self.normalized_shape, self.epsilon = _shape(normalized_shape), epsilon
        self.weight = self.create_parameter(
            self.normalized_shape, weight_attr, default_initializer=I.Constant(1.0)
        )
        self.bias = self.create_parameter(self.normalized_shape, bias_attr, is_bias=True)

    def forward(self, x: Tensor) -> Tensor:
        return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.epsilon)


class RMSNorm(Layer):
    """Root-mean-square norm over the trailing ``normalized_shape`` dims, with a learned scale."""

    def __init__(
        self, normalized_shape: Any, epsilon: float = 1e-6, weight_attr: Any = None, name: str | None = None
    ) -> None:
        super().__init__()
        self.normalized_shape, self.epsilon = _shape(normalized_shape), epsilon
        self.weight = self.create_parameter(
            self.normalized_shape, weight_attr, default_initializer=I.Constant(1.0)
        )

    def forward(self, x: Tensor) -> Tensor:
        return F.rms_norm(x, self.normalized_shape, self.weight, self.epsilon)


class _BatchNormBase(Layer):
    _formats: tuple[str, ...] = ("NCHW", "NHWC")

    def __init__(
        self,
        num_features: int,
        momentum: float = 0.9,
        epsilon: float = 1e-5,
        weight_attr: Any = None,
        bias_attr: Any = None,
        data_format: str | None = None,
        use_global_stats: bool | None = None,
        name: str | None = None,
    ) -> None:
        super().__init__()
        fmt = data_format or self._formats[0]
        if fmt not in self._formats:
            raise OpArgumentError(
                f"[{type(self).__name__}] data_format must be one of {self._formats}, got {fmt!r}"
            )
        self.num_features, self.momentum, self.epsilon, self.data_format, self.use_global_stats = (
            num_features,
            momentum,
            epsilon,
            fmt,
            use_global_stats,
        )
        self.weight = self.create_parameter((num_features,), weight_attr, default_initializer=I.Constant(1.0))
        self.bias = self.create_parameter((num_features,), bias_attr, is_bias=True)
        self.register_buffer("_mean", _C.zeros((num_features,)))
        self.register_buffer("_variance", _C.ones((num_features,)))

    def forward(self, x: Tensor) -> Tensor:
        return F.batch_norm(
            x,
            self._mean,
            self._variance,
            self.weight,
            self.bias,
            self.training,
            self.momentum,
            self.epsilon,
            self.data_format,
            self.use_global_stats,
        )

    def extra_repr(self) -> str:
        fmt = "" if self.data_format == "NCHW" else f", data_format={self.data_format}"
        return f"num_features={self.num_features}, momentum={self.momentum}, epsilon={self.epsilon}{fmt}"


class BatchNorm1D(_BatchNormBase):
    """Batch norm of (N, C) or (N, C, L) input; running statistics in ``_mean``/``_variance``."""

    _formats = ("NCL", "NC", "NLC")


class BatchNorm2D(_BatchNormBase):
    """Batch norm of NCHW input; running statistics in ``_mean``/``_variance``."""

    _formats = ("NCHW", "NHWC")


class BatchNorm3D(_BatchNormBase):
    """Batch norm of NCDHW input; running statistics in ``_mean``/``_variance``."""

    _formats = ("NCDHW", "NDHWC")


class BatchNorm(_BatchNormBase):
    """Paddle's older ``paddle.nn.BatchNorm``: batch norm over axis 1 of input of any rank,
    followed by the activation named by ``act`` (``"relu"``, ``"sigmoid"``...); the same
    parameters and statistics as :class:`BatchNorm2D`.

    >>> import framework as fw
    >>> bn = fw.nn.BatchNorm(4, act="relu")
    >>> float(bn(fw.randn([2, 4, 3, 3])).min()) >= 0.0
    True
    """

    _formats = ("NCHW", "NHWC", "NCL", "NC", "NCDHW")

    def __init__(
        self,
        num_channels: int,
        act: str | None = None,
        is_test: bool = False,
        momentum: float = 0.9,
        epsilon: float = 1e-5,
        param_attr: Any = None,
        bias_attr: Any = None,
        dtype: Any = "float32",
        data_layout: str = "NCHW",
        in_place: bool = False,
        moving_mean_name: str | None = None,
        moving_variance_name: str | None = None,
        do_model_average_for_mean_and_var: bool = True,
        use_global_stats: bool = False,
        trainable_statistics: bool = False,
    ) -> None:
        super().__init__(
            num_channels, momentum, epsilon, param_attr, bias_attr, data_layout, use_global_stats or None
        )
        if act is not None and not callable(getattr(F, act, None)):
            raise OpArgumentError(f"[BatchNorm] act must name an activation of nn.functional, got {act!r}")
        self.act, self.is_test = act, is_test

    def forward(self, x: Tensor) -> Tensor:
        if self.data_format == "NCHW" and x.ndim != 4:  # Paddle's layout name, any rank
            fmt, self.data_format = (
                self.data_format,
                ("NC", "NCL", "NCHW", "NCDHW")[min(max(x.ndim, 2), 5) - 2],
            )
            try:
                y = super().forward(x)
            finally:
                self.data_format = fmt
        else:
            y = super().forward(x)
        return getattr(F, self.act)(y) if self.act else y


class SyncBatchNorm(BatchNorm2D):
    """Paddle's SyncBatchNorm in one process: the statistics of the local batch (BatchNorm2D).

    Across processes the statistics are not synchronised; construct it only where the world
    has one process (``convert_sync_batchnorm`` returns the layer unchanged).
    """

    _formats = ("NCHW", "NHWC", "NCL", "NC", "NCDHW")

    def forward(self, x: Tensor) -> Tensor:
        if _world.is_initialized() and _world.get_world_size() > 1:
            raise OpArgumentError(
                f"[SyncBatchNorm] statistics are not synchronised across the {_world.get_world_size()} processes; "
                "use BatchNorm2D (per-process statistics) instead"
            )
        return super().forward(x)

    @classmethod
    def convert_sync_batchnorm(cls, layer: Layer) -> Layer:
        """``layer`` with every batch norm in it (itself included) replaced by a SyncBatchNorm
        holding the same parameters and running statistics, as Paddle.

        >>> import framework as fw
        >>> m = fw.nn.SyncBatchNorm.convert_sync_batchnorm(fw.nn.Sequential(fw.nn.BatchNorm2D(4)))
        >>> type(m[0]).__name__
        'SyncBatchNorm'
        """
        if isinstance(layer, _BatchNormBase) and not isinstance(layer, SyncBatchNorm):
            sync = cls(layer.num_features, layer.momentum, layer.epsilon, data_format=layer.data_format)
            sync.use_global_stats = layer.use_global_stats
            sync.weight, sync.bias = layer.weight, layer.bias
            sync._mean, sync._variance = layer._mean, layer._variance
            sync.training = layer.training
            return sync
        for name, sub in list(layer.named_children()):
            layer._sub_layers[name] = cls.convert_sync_batchnorm(sub)
        return layer


class GroupNorm(Layer):
    def __init__(
        self,
        num_groups: int,
        num_channels: int,
        epsilon: float = 1e-5,
        weight_attr: Any = None,
        bias_attr: Any = None,
        data_format: str = "NCHW",
        name: str | None = None,
    ) -> None:
        super().__init__()
        if num_channels % num_groups:
            raise OpArgumentError(
                f"[GroupNorm] num_groups={num_groups} must divide num_channels={num_channels}"
            )
        self.num_groups, self.epsilon, self.data_format = num_groups, epsilon, data_format
        self.weight = self.create_parameter((num_channels,), weight_attr, default_initializer=I.Constant(1.0))
        self.bias = self.create_parameter((num_channels,), bias_attr, is_bias=True)

    def forward(self, x: Tensor) -> Tensor:
        return F.group_norm(x, self.num_groups, self.epsilon, self.weight, self.bias, self.data_format)


class InstanceNorm2D(Layer):
    def __init__(
        self,
        num_features: int,
        epsilon: float = 1e-5,
        momentum: float = 0.9,
        weight_attr: Any = None,
        bias_attr: Any = None,
        data_format: str = "NCHW",
        name: str | None = None,
    ) -> None:
        super().__init__()
        self.epsilon, self.momentum, self.data_format = epsilon, momentum, data_format
        # Paddle's name for the affine weight (its state dict says "scale")
        self.scale = self.create_parameter((num_features,), weight_attr, default_initializer=I.Constant(1.0))
        self.bias = self.create_parameter((num_features,), bias_attr, is_bias=True)

    @property
    def weight(self) -> Tensor | None:
        """The affine weight (``scale``, Paddle's name)."""
        return self.scale

    def forward(self, x: Tensor) -> Tensor:
        return F.instance_norm(
            x,
            weight=self.scale,
            bias=self.bias,
            momentum=self.momentum,
            eps=self.epsilon,
            data_format=self.data_format,
        )


class LocalResponseNorm(Layer):
    def __init__(
        self,
        size: int,
        alpha: float = 1e-4,
        beta: float = 0.75,
        k: float = 1.0,
        data_format: str = "NCHW",
        name: str | None = None,
    ) -> None:
        super().__init__()
        self.size, self.alpha, self.beta, self.k, self.data_format = size, alpha, beta, k, data_format

    def forward(self, x: Tensor) -> Tensor:
        return F.local_response_norm(x, self.size, self.alpha, self.beta, self.k, self.data_format)


class InstanceNorm1D(InstanceNorm2D):
    """Instance norm of (N, C, L) input: each channel of each sample over its length."""

    def __init__(
        self,
        num_features: int,
        epsilon: float = 1e-5,
        momentum: float = 0.9,
        weight_attr: Any = None,
        bias_attr: Any = None,
        data_format: str = "NCL",
        name: str | None = None,
    ) -> None:
        super().__init__(num_features, epsilon, momentum, weight_attr, bias_attr, data_format)


class InstanceNorm3D(InstanceNorm2D):
    """Instance norm of NCDHW input: each channel of each sample over its volume."""

    def __init__(
        self,
        num_features: int,
        epsilon: float = 1e-5,
        momentum: float = 0.9,
        weight_attr: Any = None,
        bias_attr: Any = None,
        data_format: str = "NCDHW",
        name: str | None = None,
    ) -> None:
        super().__init__(num_features, epsilon, momentum, weight_attr, bias_attr, data_format)


class SpectralNorm(Layer):
    """Spectral normalisation of a weight, as Paddle's ``nn.SpectralNorm``: ``weight / sigma``
    with sigma its largest singular value, estimated by ``power_iters`` rounds of power
    iteration from the vectors ``weight_u`` and ``weight_v`` (N(0, 1) at construction, not
    trained and, as Paddle, not updated by a call). ``dim`` is the weight's output axis: the
    weight is read as a matrix of ``weight_shape[dim]`` rows. The gradient holds the power
    iteration's vectors constant (as PyTorch's ``spectral_norm``); Paddle's own backward
    differs from that by a few percent.

    >>> import framework as fw
    >>> sn = fw.nn.SpectralNorm([4, 3, 2, 2], dim=1, power_iters=2)
    >>> sn(fw.rand([4, 3, 2, 2])).shape
    (4, 3, 2, 2)
    """

    def __init__(
        self,
        weight_shape: Any,
        dim: int = 0,
        power_iters: int = 1,
        epsilon: float = 1e-12,
        dtype: str = "float32",
    ) -> None:
        super().__init__()
        shape = tuple(int(s) for s in weight_shape)
        if not -len(shape) <= dim < len(shape):
            raise OpArgumentError(f"[SpectralNorm] dim must index weight_shape {shape}, got {dim}")
        if not isinstance(power_iters, int) or power_iters < 1:
            raise OpArgumentError(f"[SpectralNorm] power_iters must be a positive int, got {power_iters!r}")
        self.weight_shape, self.dim = shape, dim % len(shape)
        self.power_iters, self.epsilon = power_iters, epsilon
        h = shape[self.dim]
        w = 1
        for i, s in enumerate(shape):
            w *= 1 if i == self.dim else s
        for name, n in (("weight_u", h), ("weight_v", w)):
            p = self.create_parameter((n,), dtype=dtype, default_initializer=I.Normal(0.0, 1.0))
            p.stop_gradient = True
            setattr(self, name, p)

    def forward(self, weight: Tensor) -> Tensor:
        if tuple(weight.shape) != self.weight_shape:
            raise OpArgumentError(
                f"[SpectralNorm] weight has shape {tuple(weight.shape)}, the layer was built for {self.weight_shape}"
            )
        perm = (self.dim,) + tuple(i for i in range(len(self.weight_shape)) if i != self.dim)
        mat = weight.transpose(perm).reshape((self.weight_shape[self.dim], -1))
        m = mat.detach()
        u, v = self.weight_u.detach(), self.weight_v.detach()
        for _ in range(self.power_iters):
            v = m.t().matmul(u)
            v = v / (v.square().sum().sqrt() + self.epsilon)
            u = m.matmul(v)
            u = u / (u.square().sum().sqrt() + self.epsilon)
        sigma = (u * mat.matmul(v)).sum()
        return weight / sigma
