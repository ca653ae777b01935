"""Composite ops: each defined once by its decomposition into primitives (``@composite``),
with a shape rule so a plugin's fused kernel or a generated kernel can replace it.

Importing this package defines them all; the user-facing functions live in the submodules
and are re-exported by ``framework.nn.functional``.
"""

from . import (  # noqa: F401  # noqa: F401  (Paddle's tensor functions, issue 17)
    activation,
    activation_extra,
    arith,
    attention,
    conv,
    conv_extra,
    loss,
    loss_extra,
    manipulation,
    misc,
    norm,
    norm_extra,
    resize,
    sampling,
    sorting,
    special,
)
