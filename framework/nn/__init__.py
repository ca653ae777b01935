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
from .activation import (
    CELU,
    ELU,
    GELU,
    GLU,
    SELU,
    Hardsigmoid,
    Hardswish,
    Hardtanh,
    LeakyReLU,
    LogSoftmax,
    Mish,
    PReLU,
    ReLU,
    ReLU6,
    Sigmoid,
    SiLU,
    Softmax,
    Softplus,
    Softsign,
    Swish,
    Tanh,
)
from .common import (
    Bilinear,
    Dropout,
    Dropout2D,
    Embedding,
    Flatten,
    Identity,
    Linear,
    Pad2D,
    PixelShuffle,
    Unflatten,
    Upsample,
)
from .container import LayerDict, LayerList, ModuleList, ParameterList, Sequential
from .conv import Conv1D, Conv1DTranspose, Conv2D, Conv2DTranspose, Conv3D
from .layer import Layer, Parameter
from .loss import (
    BCELoss,
    BCEWithLogitsLoss,
    CrossEntropyLoss,
    CTCLoss,
    KLDivLoss,
    L1Loss,
    MarginRankingLoss,
    MSELoss,
    NLLLoss,
    SmoothL1Loss,
)
from .norm import (
    BatchNorm,
    BatchNorm1D,
    BatchNorm2D,
    GroupNorm,
    InstanceNorm2D,
    LayerNorm,
    LocalResponseNorm,
    RMSNorm,
    SyncBatchNorm,
)
from .pooling import (
    AdaptiveAvgPool1D,
    AdaptiveAvgPool2D,
    AdaptiveMaxPool2D,
    AvgPool1D,
    AvgPool2D,
    LPPool1D,
    LPPool2D,
    MaxPool1D,
    MaxPool2D,
    MaxUnPool1D,
    MaxUnPool2D,
    MaxUnPool3D,
)
from .rnn import GRU, LSTM, GRUCell, LSTMCell, SimpleRNN, SimpleRNNCell
from .transformer import (
    MultiHeadAttention,
    Transformer,
    TransformerDecoder,
    TransformerDecoderLayer,
    TransformerEncoder,
    TransformerEncoderLayer,
)

Module = Layer
Silu = SiLU

#: every layer, ``functional`` and ``initializer`` (and the modules ``layer``, ``rnn`` and
#: ``transformer``, exported before the layers were grouped); the modules that group the layers
#: (``conv``, ``norm``, ``loss``...) are where they live, not names to import with ``*``
__all__ = [
    n
    for n in dir()
    if not n.startswith("_")
    and n not in {"annotations", "activation", "common", "container", "conv", "loss", "norm", "pooling"}
]
