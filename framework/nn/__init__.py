"""``fw.nn``: :class:`Layer`, the built-in layers, ``functional`` and ``initializer`` (Paddle's names).

>>> import framework as fw
>>> _ = fw.seed(0)
>>> net = fw.nn.Sequential(fw.nn.Linear(4, 8), fw.nn.ReLU(), fw.nn.Linear(8, 2))
>>> net(fw.ones([3, 4])).shape
(3, 2)
"""

# ruff: noqa: F401  (re-exports)
from __future__ import annotations

from . import functional, initializer
from .layer import Layer, Parameter
from .layers import (
    GELU,
    AdaptiveAvgPool2D,
    AvgPool2D,
    BCEWithLogitsLoss,
    Conv2D,
    CrossEntropyLoss,
    Dropout,
    Embedding,
    Flatten,
    Identity,
    L1Loss,
    LayerList,
    LayerNorm,
    LeakyReLU,
    Linear,
    MaxPool2D,
    ModuleList,
    MSELoss,
    MultiHeadAttention,
    ParameterList,
    ReLU,
    RMSNorm,
    Sequential,
    Sigmoid,
    SiLU,
    Softmax,
    Swish,
    Tanh,
)
from .layers_extra import (
    CELU,
    ELU,
    GLU,
    SELU,
    AdaptiveAvgPool1D,
    AdaptiveMaxPool2D,
    AvgPool1D,
    BatchNorm1D,
    BatchNorm2D,
    BCELoss,
    Bilinear,
    Conv1D,
    Conv1DTranspose,
    Conv2DTranspose,
    Conv3D,
    CTCLoss,
    Dropout2D,
    GroupNorm,
    Hardsigmoid,
    Hardswish,
    Hardtanh,
    InstanceNorm2D,
    KLDivLoss,
    LayerDict,
    LocalResponseNorm,
    LogSoftmax,
    MarginRankingLoss,
    MaxPool1D,
    Mish,
    NLLLoss,
    Pad2D,
    PixelShuffle,
    PReLU,
    ReLU6,
    SmoothL1Loss,
    Softplus,
    Softsign,
    SyncBatchNorm,
    Unflatten,
    Upsample,
)
from .rnn import GRU, LSTM, GRUCell, LSTMCell, SimpleRNN, SimpleRNNCell
from .transformer import (
    Transformer,
    TransformerDecoder,
    TransformerDecoderLayer,
    TransformerEncoder,
    TransformerEncoderLayer,
)

Module = Layer
Silu = SiLU

__all__ = [n for n in dir() if not n.startswith("_") and n != "annotations"]
