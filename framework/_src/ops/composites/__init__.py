"""Composite ops: each defined once by its decomposition into primitives (``@composite``),
with a shape rule so a plugin's fused kernel or a generated kernel can replace it.

Importing this package defines them all; the user-facing functions live in the submodules
and are re-exported by ``framework.nn.functional``.
"""

from . import (  # noqa: F401
    activation,
    arith,
    attention,
    bitwise,
    channel_norm,
    closeness,
    complex_parts,
    conv,
    conv_transpose,
    ctc_loss,
    diagonals,
    dropout,
    einsum,
    embedding,
    fake_quant,
    float8,
    float_bits,
    linear,
    loss,
    manipulation,
    margin_loss,
    norm,
    patches,
    pooling,
    products,
    quant,
    random_fills,
    resize,
    sampling,
    scatter_reduce,
    sorting,
    special,
    strided,
    tensor_array,
    window_pooling,
)
