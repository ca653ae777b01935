"""``ProcessMesh``: an n-d array of world ranks with a name per axis (Paddle's class)."""

from __future__ import annotations

from typing import Any

import numpy as np

from adapter_api import OpArgumentError

from .. import collective


class ProcessMesh:
    """An n-d grid of world ranks; ``dim_names`` names its axes.

    ``mesh["dp"]`` (or ``mesh.get_mesh_with_dim("dp", index)``) is a sub-mesh; ``mesh[i]``
    indexes the first axis, as with numpy.

    >>> import framework.distributed as dist
    >>> m = dist.ProcessMesh([[0, 1], [2, 3]], dim_names=["dp", "mp"])
    >>> m.shape, m.get_dim_size("mp"), m[1].process_ids
    ([2, 2], 2, [2, 3])
    """

    def __init__(self, mesh: Any, dim_names: list[str] | None = None) -> None:
        arr = np.asarray(mesh.mesh if isinstance(mesh, ProcessMesh) else mesh)
        if arr.ndim == 0 or arr.size == 0 or arr.dtype.kind not in "iu":
            raise OpArgumentError(f"[ProcessMesh] mesh must be a non-empty n-d list of ranks, got {mesh!r}")
        ids = arr.reshape(-1).tolist()
        if len(set(ids)) != len(ids) or min(ids) < 0:
            raise OpArgumentError(f"[ProcessMesh] ranks must be distinct and >= 0, got {ids}")
        names = [f"d{i}" for i in range(arr.ndim)] if dim_names is None else [str(n) for n in dim_names]
        if len(names) != arr.ndim or len(set(names)) != len(names):
            raise OpArgumentError(
                f"[ProcessMesh] dim_names must name each of the {arr.ndim} mesh axes once, got {dim_names}"
            )
        self._mesh = arr.astype(np.int64)
        self.dim_names = names

    # -- shape and ranks --------------------------------------------------------------
    @property
    def mesh(self) -> np.ndarray:
        return self._mesh

    @property
    def shape(self) -> list[int]:
        return list(self._mesh.shape)

    @property
    def ndim(self) -> int:
        return self._mesh.ndim

    @property
    def process_ids(self) -> list[int]:
        return self._mesh.reshape(-1).tolist()

    def __contains__(self, rank: int) -> bool:
        return rank in self.process_ids

    def axis(self, dim: int | str) -> int:
        """The index of mesh axis ``dim`` (a name or an index)."""
        if isinstance(dim, str):
            if dim not in self.dim_names:
                raise OpArgumentError(
                    f"[ProcessMesh] {self} has no axis named {dim!r}; its axes are {self.dim_names}"
                )
            return self.dim_names.index(dim)
        if not -self.ndim <= dim < self.ndim:
            raise OpArgumentError(f"[ProcessMesh] {self} has no axis {dim}; it has {self.ndim}")
        return dim % self.ndim

    def get_dim_size(self, dim: int | str) -> int:
        return self.shape[self.axis(dim)]

    def coordinate(self, rank: int) -> list[int] | None:
        """The coordinate of world ``rank`` in the mesh, or None when it is not in it."""
        hit = np.argwhere(self._mesh == rank)
        return None if len(hit) == 0 else [int(c) for c in hit[0]]

    # -- sub-meshes -------------------------------------------------------------------
    def get_mesh_with_dim(self, dim: int | str, index: int | None = None) -> ProcessMesh:
        """This mesh with axis ``dim`` moved first (``index``: only that slice of it)."""
        a = self.axis(dim)
        order = [a] + [i for i in range(self.ndim) if i != a]
        arr = self._mesh.transpose(order)
        names = [self.dim_names[i] for i in order]
        if index is None:
            return ProcessMesh(arr, names)
        return ProcessMesh(arr[index], names[1:]) if arr.ndim > 1 else ProcessMesh([int(arr[index])], names)

    def __getitem__(self, key: Any) -> ProcessMesh:
        if isinstance(key, str):
            return self.get_mesh_with_dim(key)
        arr = self._mesh[key]
        if isinstance(key, tuple):
            kept = [n for n, k in zip(self.dim_names, key) if not isinstance(k, (int, np.integer))]
            kept += self.dim_names[len(key) :]
        else:
            kept = self.dim_names[1:] if isinstance(key, (int, np.integer)) else list(self.dim_names)
        if arr.ndim == 0:
            return ProcessMesh([int(arr)], [kept[0] if kept else self.dim_names[-1]])
        return ProcessMesh(arr, kept)

    # -- groups -----------------------------------------------------------------------
    def get_group(self, dim: int | str) -> collective.Group | None:
        """The group of this rank along mesh axis ``dim`` (None when the rank is outside the
        mesh). The first call creates the groups of every line along the axis, on every rank
        of the world: every rank must reach it, as with :func:`new_group`."""
        a = self.axis(dim)
        key = (tuple(self.shape), tuple(self.process_ids), a)
        groups = _GROUPS.get(key)
        if groups is None:
            lines = np.moveaxis(self._mesh, a, -1).reshape(-1, self.shape[a]).tolist()
            groups = _GROUPS[key] = [collective.new_group(line) for line in lines]
        me = collective.get_rank()
        return next((g for g in groups if g.is_member() and me in g.ranks), None)

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, ProcessMesh)
            and self.shape == other.shape
            and self.process_ids == other.process_ids
            and self.dim_names == other.dim_names
        )

    def __hash__(self) -> int:
        return hash((tuple(self.shape), tuple(self.process_ids), tuple(self.dim_names)))

    def __repr__(self) -> str:
        return f"ProcessMesh(shape={self.shape}, process_ids={self.process_ids}, dim_names={self.dim_names})"


_GROUPS: dict[tuple[Any, ...], list[collective.Group]] = {}
