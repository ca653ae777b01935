"""``fw.nn.utils`` (Paddle's ``paddle.nn.utils``): weight/spectral norm, gradient clipping, flattening.

>>> import framework as fw
>>> lin = fw.nn.Linear(2, 2)
>>> fw.nn.utils.parameters_to_vector(lin.parameters()).shape
(6,)
"""

from __future__ import annotations

from .parameters import clip_grad_norm_, clip_grad_value_, parameters_to_vector, vector_to_parameters
from .weight_hooks import remove_weight_norm, spectral_norm, weight_norm

__all__ = [
    "clip_grad_norm_",
    "clip_grad_value_",
    "parameters_to_vector",
    "remove_weight_norm",
    "spectral_norm",
    "vector_to_parameters",
    "weight_norm",
]
