"""Composite ops: each defined once by its decomposition into primitives (``@composite``),
with a shape rule so a plugin's fused kernel or a generated kernel can replace it.

Importing this package defines them all; the user-facing functions live in the submodules
and are re-exported by ``framework.nn.functional``.
"""

from . import activation, attention, conv, loss, misc, norm  # noqa: F401
