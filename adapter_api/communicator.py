"""Communication: the third interface, collectives in the style of NCCL/xccl.

A plugin registers a :class:`Communicator` subclass with
``registry.add_communicator("mydev", MyCommunicator)``. The core bootstraps it: rank 0 calls
``MyCommunicator.unique_id()``, the bytes are broadcast to every rank over the host transport
(MPI), then every rank constructs ``MyCommunicator(runtime, device_index, rank, size, uid)``.

Buffers are native views (see ``DeviceRuntime.view``) of contiguous device memory, all of
one dtype; ``op`` is one of ``"sum" "avg" "max" "min" "prod"``. Calls are enqueued on
``stream``; the core synchronizes when the user waits on the returned task.
"""

from __future__ import annotations

from typing import Any

REDUCE_OPS = ("sum", "avg", "max", "min", "prod")


class Communicator:
    """Collectives across ``size`` processes for one device type."""

    def __init__(self, runtime: Any, device_index: int, rank: int, size: int, uid: bytes) -> None:
        self.runtime = runtime
        self.device_index = device_index
        self.rank = rank
        self.size = size

    @classmethod
    def unique_id(cls) -> bytes:
        """Bytes that identify a new communicator (called on rank 0 only)."""
        return b""

    def all_reduce(self, send: Any, recv: Any, op: str, stream: Any) -> None:
        """``recv`` = reduction of every rank's ``send`` (may be the same buffer)."""
        raise NotImplementedError("need all_reduce")

    def broadcast(self, buf: Any, root: int, stream: Any) -> None:
        """Copy ``buf`` from ``root`` to every rank, in place."""
        raise NotImplementedError("need broadcast")

    def reduce(self, send: Any, recv: Any, op: str, root: int, stream: Any) -> None:
        """Like all_reduce, but only ``root``'s ``recv`` receives the result."""
        raise NotImplementedError("need reduce")

    def all_gather(self, send: Any, recv: Any, stream: Any) -> None:
        """``recv`` (``size`` times larger, rank-major) = every rank's ``send``."""
        raise NotImplementedError("need all_gather")

    def reduce_scatter(self, send: Any, recv: Any, op: str, stream: Any) -> None:
        """``recv`` = this rank's chunk of the reduction of every rank's ``send``."""
        raise NotImplementedError("need reduce_scatter")

    def all_to_all(self, send: Any, recv: Any, stream: Any) -> None:
        """Chunk ``j`` of ``send`` goes to rank ``j``; chunk ``i`` of ``recv`` comes from rank ``i``."""
        raise NotImplementedError("need all_to_all")

    def send(self, buf: Any, peer: int, stream: Any) -> None:
        """Send ``buf`` to rank ``peer``."""
        raise NotImplementedError("need send")

    def recv(self, buf: Any, peer: int, stream: Any) -> None:
        """Receive into ``buf`` from rank ``peer``."""
        raise NotImplementedError("need recv")

    def barrier(self) -> None:
        """Block until every rank has reached the barrier."""
        raise NotImplementedError("need barrier")

    def group_start(self) -> None:
        """Start batching point-to-point calls (optional)."""

    def group_end(self) -> None:
        """Issue the batched calls (optional)."""

    def destroy(self) -> None:
        """Release resources."""
