"""Placements: how a tensor lies along one axis of a :class:`ProcessMesh` (Paddle's names).

``Shard(d)``: tensor dim ``d`` is split over the mesh axis in contiguous chunks of
``ceil(n / k)`` (the last ranks may hold less, or nothing: uneven shards are allowed).
``Replicate()``: every rank of the axis holds the whole tensor. ``Partial(op)``: every rank
holds a part; the value is their reduction (``sum``, ``avg``, ``max`` or ``min``).
"""

from __future__ import annotations

from adapter_api import OpArgumentError


class Placement:
    def is_shard(self, dim: int | None = None) -> bool:
        return False

    def is_replicated(self) -> bool:
        return False

    def is_partial(self) -> bool:
        return False


class Replicate(Placement):
    """The whole tensor on every rank of the mesh axis."""

    def is_replicated(self) -> bool:
        return True

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Replicate)

    def __hash__(self) -> int:
        return hash("R")

    def __repr__(self) -> str:
        return "Replicate()"


class Shard(Placement):
    """Tensor dim ``dim`` split over the mesh axis (chunks of ``ceil(n / k)``)."""

    def __init__(self, dim: int) -> None:
        if not isinstance(dim, int):
            raise OpArgumentError(f"[Shard] dim must be an int, got {dim!r}")
        self.dim = dim

    def get_dim(self) -> int:
        return self.dim

    def is_shard(self, dim: int | None = None) -> bool:
        return dim is None or dim == self.dim

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Shard) and other.dim == self.dim

    def __hash__(self) -> int:
        return hash(("S", self.dim))

    def __repr__(self) -> str:
        return f"Shard({self.dim})"


_REDUCE = {"sum": "sum", "avg": "avg", "mean": "avg", "max": "max", "min": "min"}


class Partial(Placement):
    """Each rank holds a part; the tensor is their ``reduce_type`` (sum, avg, max, min)."""

    def __init__(self, reduce_type: str = "sum") -> None:
        name = _REDUCE.get(str(reduce_type).lower().rsplit(".", 1)[-1])
        if name is None:
            raise OpArgumentError(
                f"[Partial] unknown reduce_type {reduce_type!r}; use 'sum', 'avg', 'max' or 'min'"
            )
        self.reduce_type = name

    def is_partial(self) -> bool:
        return True

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Partial) and other.reduce_type == self.reduce_type

    def __hash__(self) -> int:
        return hash(("P", self.reduce_type))

    def __repr__(self) -> str:
        return "Partial()" if self.reduce_type == "sum" else f"Partial({self.reduce_type!r})"


def chunk(n: int, k: int, c: int) -> tuple[int, int]:
    """``[start, end)`` of chunk ``c`` of ``k`` over a dim of size ``n`` (ceil-sized chunks)."""
    size = -(-n // k) if k else n
    start = min(c * size, n)
    return start, min(start + size, n)


def short(placements: list[Placement]) -> str:
    """``[S(0), R, P(sum)]`` -- how placements read in logs."""
    out = []
    for p in placements:
        if isinstance(p, Shard):
            out.append(f"S({p.dim})")
        elif isinstance(p, Partial):
            out.append(f"P({p.reduce_type})")
        else:
            out.append("R")
    return "[" + ", ".join(out) + "]"
