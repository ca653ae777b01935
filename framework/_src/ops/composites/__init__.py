"""Composite ops: each defined once by its decomposition into primitives (``@composite``),
with a shape rule so a plugin's fused kernel or a generated kernel can replace it.

Importing this package defines them all; the user-facing functions live in the submodules
and are re-exported by ``framework.nn.functional``.
"""

from . import (  # noqa: F401
    activation,
    arith,
    attention,
    channel_norm,
    conv,
    conv_transpose,
    ctc_loss,
    dropout,
    embedding,
    fake_quant,
    linear,
    loss,
    manipulation,
    margin_loss,
    norm,
    patches,
    pooling,
    quant,
    resize,
    sampling,
    sorting,
    special,
)
