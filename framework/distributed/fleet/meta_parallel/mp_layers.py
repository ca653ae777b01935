"""Tensor-parallel layers (Paddle's ``fleet.meta_parallel`` Column/Row/Vocab layers) on the
auto-parallel core: each layer's weight is a distributed parameter on the hybrid mesh,
sharded over its ``mp`` axis and replicated over the others, and the forward is the
framework's own op on distributed tensors, whose sharding rule inserts the communication
(the all-reduce of the input's gradient of a column-parallel layer, the all-reduce of a
row-parallel output, the all-gather of ``gather_output``). The inputs and outputs are plain
tensors, as in Paddle: a column-parallel layer with ``gather_output=False`` returns this
rank's columns, which a row-parallel layer with ``input_is_parallel=True`` takes.

The full weight is drawn on every rank with the same random state (as a plain ``Linear`` or
``Embedding`` of the whole size would be) and each rank keeps its chunk, so a model built
with the same seed equals its one-process twin. ``layer.weight.shape`` is the whole shape;
``layer.weight._local_value()`` is this rank's shard (Paddle's ``layer.weight``).
"""

from __future__ import annotations

from typing import Any

from adapter_api import OpArgumentError

from ...._src.autograd import no_grad
from ....nn import Layer, Parameter
from ....nn import functional as F
from ... import collective
from ...auto_parallel import functional as D
from ...auto_parallel.dtensor import DistTensor, dist_parameter
from ...auto_parallel.placement import Placement, Replicate, Shard, chunk
from ...auto_parallel.reshard import reshard
from ..topology import current_hcg as _hcg


def _mp() -> tuple[Any, int, int]:
    """(the hybrid mesh, its mp axis, the mp degree)."""
    hcg = _hcg()
    mesh = hcg.mesh
    axis = mesh.dim_names.index("mp")
    return mesh, axis, mesh.shape[axis]


def _placements(axis: int, ndim: int, dim: int | None) -> list[Placement]:
    out: list[Placement] = [Replicate()] * ndim
    if dim is not None:
        out[axis] = Shard(dim)
    return out


def _distribute(layer: Layer, name: str, full: Parameter | None, dim: int | None) -> None:
    """Replace ``layer.<name>`` by a distributed parameter holding this rank's chunk of
    ``full`` along ``dim`` (None: replicated)."""
    if full is None:
        setattr(layer, name, None)
        return
    mesh, axis, k = _mp()
    local = full
    if dim is not None:
        n = full.shape[dim]
        if n % k:
            raise OpArgumentError(
                f"[{type(layer).__name__}] {name} dim {dim} of size {n} does not split over mp degree {k}; "
                "make it a multiple of the degree"
            )
        a, b = chunk(n, k, mesh.coordinate(collective.get_rank())[axis])
        index = tuple(slice(None) for _ in range(dim)) + (slice(a, b),)
        local = Parameter.from_tensor(full.detach()[index].clone(), trainable=full.trainable)
    d = DistTensor(local, mesh, _placements(axis, mesh.ndim, dim), full.shape, full.dtype)
    p = dist_parameter(Parameter, d, full.trainable, full.name)
    p.is_distributed = dim is not None
    setattr(layer, name, p)


def _lift(x: Any, dim: int | None = None) -> DistTensor:
    """A plain tensor as a distributed one: replicated, or this rank's chunk along ``dim``."""
    if isinstance(x, DistTensor):
        return x
    mesh, axis, k = _mp()
    shape = list(x.shape)
    if dim is not None:
        shape[dim] *= k
    return DistTensor(x, mesh, _placements(axis, mesh.ndim, dim), shape, x.dtype)


def _whole(y: DistTensor, why: str) -> Any:
    """``y`` replicated, as this rank's plain tensor (on the tape)."""
    mesh = y.process_mesh
    return reshard(y, mesh, [Replicate()] * mesh.ndim, why=why)._local_value()


class ColumnParallelLinear(Layer):
    """``x @ W + b`` with ``W``'s columns split over the mp group.

    >>> # under fleet.init with mp_degree=2: each rank holds 8 of the 16 columns
    >>> # fc = ColumnParallelLinear(4, 16, gather_output=False)  # output [..., 8] on each rank
    """

    def __init__(
        self,
        in_features: int,
        out_features: int,
        weight_attr: Any = None,
        has_bias: bool | None = None,
        gather_output: bool = True,
        fuse_matmul_bias: bool = False,
        mp_group: Any = None,
        name: str | None = None,
    ) -> None:
        super().__init__()
        self.in_features, self.out_features, self.gather_output = in_features, out_features, gather_output
        full = self.create_parameter((in_features, out_features), weight_attr)
        bias = self.create_parameter((out_features,), None, is_bias=True) if has_bias is not False else None
        _distribute(self, "weight", full, 1)
        _distribute(self, "bias", bias, 0)

    def forward(self, x: Any) -> Any:
        y = F.linear(_lift(x), self.weight, self.bias)
        return _whole(y, "ColumnParallelLinear gather_output") if self.gather_output else y._local_value()

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, gather_output={self.gather_output}"


class RowParallelLinear(Layer):
    """``x @ W + b`` with ``W``'s rows split over the mp group; the partial products are
    all-reduced, then the (replicated) bias is added.

    >>> # under fleet.init with mp_degree=2, after ColumnParallelLinear(..., gather_output=False):
    >>> # fc = RowParallelLinear(16, 4, input_is_parallel=True)  # takes the [..., 8] shard
    """

    def __init__(
        self,
        in_features: int,
        out_features: int,
        weight_attr: Any = None,
        has_bias: bool = True,
        input_is_parallel: bool = False,
        fuse_matmul_bias: bool = False,
        mp_group: Any = None,
        name: str | None = None,
    ) -> None:
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        self.input_is_parallel = input_is_parallel
        full = self.create_parameter((in_features, out_features), weight_attr)
        bias = self.create_parameter((out_features,), None, is_bias=True) if has_bias else None
        _distribute(self, "weight", full, 0)
        _distribute(self, "bias", bias, None)

    def forward(self, x: Any) -> Any:
        xd = _lift(x, x.ndim - 1 if self.input_is_parallel else None)
        y = _whole(F.linear(xd, self.weight), "RowParallelLinear all-reduce")
        return y if self.bias is None else y + self.bias._local_value()

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, input_is_parallel={self.input_is_parallel}"


class VocabParallelEmbedding(Layer):
    """An embedding table whose rows (the vocabulary) are split over the mp group: each rank
    looks up the ids in its rows, and the results are all-reduced.

    >>> # under fleet.init with mp_degree=2: VocabParallelEmbedding(1000, 64) holds 500 rows a rank
    """

    def __init__(
        self,
        num_embeddings: int,
        embedding_dim: int,
        weight_attr: Any = None,
        mp_group: Any = None,
        name: str | None = None,
    ) -> None:
        super().__init__()
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        _distribute(self, "weight", self.create_parameter((num_embeddings, embedding_dim), weight_attr), 0)

    def forward(self, x: Any) -> Any:
        return _whole(F.embedding(_lift(x), self.weight), "VocabParallelEmbedding all-reduce")

    def extra_repr(self) -> str:
        return f"{self.num_embeddings}, {self.embedding_dim}"


class ParallelCrossEntropy(Layer):
    """Softmax cross-entropy of logits whose classes are split over the mp group (the output
    of a ``ColumnParallelLinear`` with ``gather_output=False``), without gathering them: the
    row max, the sum of exponentials and the target logit are all-reduced (one value per row).
    ``label`` holds class ids (a trailing dim of 1 allowed); the loss has the label's shape
    with a trailing 1, as in Paddle; a label equal to ``ignore_index`` gives 0.

    >>> # under fleet.init with mp_degree=2, logits [..., vocab / 2] on each rank:
    >>> # loss = ParallelCrossEntropy()(logits, labels).mean()
    """

    def __init__(self, mp_group: Any = None, name: str | None = None, ignore_index: int = -100) -> None:
        super().__init__()
        self.ignore_index = ignore_index

    def forward(self, input: Any, label: Any) -> Any:  # noqa: A002 - Paddle's name
        if label.ndim == input.ndim:
            label = label.squeeze(-1)
        keep = label != self.ignore_index
        safe = label * keep.astype(label.dtype)  # an ignored row looks up class 0, then counts 0
        loss = D.cross_entropy(_lift(input, input.ndim - 1), _lift(safe), reduction="none")
        loss = _whole(loss, "ParallelCrossEntropy") * keep.astype(input.dtype)
        return loss.unsqueeze(-1)


class TensorParallel:
    """What ``fleet.distributed_model`` returns for ``mp_degree > 1``: the model, with its
    replicated parameters made equal over the mp group and every parameter over the dp group
    (broadcast from each group's first rank). Gradients over dp are averaged by the optimizer
    ``fleet.distributed_optimizer`` returns."""

    def __init__(self, layers: Any, hcg: Any, strategy: Any) -> None:
        self.__dict__["_layers"] = layers
        mp, dp = hcg.get_model_parallel_group(), hcg.get_data_parallel_group()
        with no_grad():
            for p in layers.parameters():
                local = p._local_value() if isinstance(p, DistTensor) else p
                if mp.nranks > 1 and not getattr(p, "is_distributed", False):
                    collective.broadcast(local, src=mp.ranks[0], group=mp)
                if dp.nranks > 1:
                    collective.broadcast(local, src=dp.ranks[0], group=dp)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.__dict__["_layers"], name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._layers(*args, **kwargs)
