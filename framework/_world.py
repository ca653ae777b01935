"""The process world as seen from below :mod:`framework.distributed`.

``fw.io.DistributedBatchSampler`` (its default rank and number of replicas) and
``fw.nn.SyncBatchNorm`` (whether more than one process trains) need the world, but sit below
the distributed package, which imports them (``fw.distributed`` re-exports the sampler; its
``to_static`` builds on ``fw.jit``, which reads ``fw.nn``). They ask here;
:mod:`framework.distributed.collective` registers its answers when it is imported (always,
by ``import framework``). Before that: one process, rank 0, not initialised.

>>> from framework import _world
>>> _world.get_world_size() >= 1
True
"""

from __future__ import annotations

from collections.abc import Callable

#: the answers; :func:`register` replaces them
_QUERIES: dict[str, Callable[[], int]] = {
    "rank": lambda: 0,
    "world_size": lambda: 1,
    "is_initialized": lambda: 0,
}


def register(
    rank: Callable[[], int], world_size: Callable[[], int], is_initialized: Callable[[], bool]
) -> None:
    """Answer :func:`get_rank`, :func:`get_world_size` and :func:`is_initialized` with these
    (``framework.distributed.collective`` registers its functions of the same names)."""
    _QUERIES.update(rank=rank, world_size=world_size, is_initialized=is_initialized)


def get_rank() -> int:
    """This process's rank in the world (``fw.distributed.get_rank()``)."""
    return _QUERIES["rank"]()


def get_world_size() -> int:
    """The number of processes in the world (``fw.distributed.get_world_size()``)."""
    return _QUERIES["world_size"]()


def is_initialized() -> bool:
    """Whether ``fw.distributed.init_parallel_env`` has joined the world."""
    return bool(_QUERIES["is_initialized"]())
