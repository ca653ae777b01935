"""``fleet.meta_parallel``: pipeline stages (``LayerDesc``, ``SharedLayerDesc``, ``PipelineLayer``,
``PipelineParallel``) and tensor-parallel layers (``ColumnParallelLinear``,
``RowParallelLinear``, ``VocabParallelEmbedding``, ``ParallelCrossEntropy``).

>>> import framework as fw
>>> from framework.distributed.fleet.meta_parallel import LayerDesc
>>> LayerDesc(fw.nn.Linear, 2, 3)
Linear(2, 3)
"""

from __future__ import annotations

from .mp_layers import (
    ColumnParallelLinear,
    ParallelCrossEntropy,
    RowParallelLinear,
    TensorParallel,
    VocabParallelEmbedding,
)
from .pipeline_parallel import PipelineParallel
from .pp_layers import LayerDesc, PipelineLayer, SharedLayerDesc, segment

__all__ = [
    "ColumnParallelLinear",
    "LayerDesc",
    "ParallelCrossEntropy",
    "PipelineLayer",
    "PipelineParallel",
    "RowParallelLinear",
    "SharedLayerDesc",
    "TensorParallel",
    "VocabParallelEmbedding",
    "segment",
]
