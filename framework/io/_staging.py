"""Host-to-device staging: a worker's numpy batch becomes tensors through a copy stream.

Where the device's runtime has streams (``create_stream`` returns a handle), each array is
copied asynchronously on a copy stream (one per device, shared by the process's loaders), an event is recorded behind the
copies, and the compute stream waits on that event only when the batch is handed to the user.
The DataLoader submits batch k+1 before it hands out batch k, so the copy of the next batch
runs while the model computes on this one. The host arrays stay referenced until their copy
has completed. Where the runtime has no streams (``create_stream`` returns ``None``), copies
are plain synchronous ``to_tensor`` copies: nothing to overlap, same result.

NOTE: the runtime contract has no page-locked host allocator, so the host side is the
worker's array itself, not a pinned buffer; a plugin whose DMA needs pinned memory stages
inside its ``copy_h2d(blocking=False)`` (the cuda plugin does).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from typing import Any

import numpy as np

from .._src import device as _dev
from .._src.tensor import Tensor, _as_numpy, empty, from_numpy_copy
from ._worker import HostTensor

#: batches whose copies may still be in flight before the oldest is waited for
_MAX_IN_FLIGHT = 4
#: one copy stream per device, shared by every loader of the process (a stream may own a
#: thread or a queue: one per loader or per epoch would pile them up)
_COPY_STREAMS: dict[_dev.Device, Any] = {}


class HostToDeviceStager:
    """Turns the :class:`HostTensor` leaves of a batch into tensors on ``device``."""

    def __init__(self, device: _dev.Device) -> None:
        self.device = device
        self._type = _dev.device_type(device.type)
        self._rt = self._type.runtime
        if device not in _COPY_STREAMS:
            _COPY_STREAMS[device] = self._rt.create_stream(device.index)
        self.copy_stream = _COPY_STREAMS[device]
        self._held: deque[tuple[Any, list[np.ndarray]]] = deque()

    @property
    def asynchronous(self) -> bool:
        """True when copies run on a stream of their own."""
        return self.copy_stream is not None

    def submit(self, obj: Any) -> tuple[Any, Any]:
        """Start the copies of ``obj``'s arrays; return the batch of tensors and the event
        :meth:`ready` waits on (``None`` when nothing is in flight)."""
        arrays: list[np.ndarray] = []
        if self.asynchronous:
            # NOTE: a block the compute stream freed may still be read by queued kernels; the
            # copy stream waits for the compute stream before it writes into new blocks.
            before = self._rt.create_event(self.device.index)
            self._rt.record_event(before, self._type.stream(self.device.index))
            self._rt.stream_wait_event(self.copy_stream, before)
        out = self._convert(obj, arrays)
        if not arrays:
            return out, None
        event = self._rt.create_event(self.device.index)
        self._rt.record_event(event, self.copy_stream)
        self._held.append((event, arrays))
        return out, event

    def ready(self, event: Any) -> None:
        """Make the compute stream wait for a submitted batch's copies; release host arrays
        whose copies have completed."""
        if event is not None:
            self._rt.stream_wait_event(self._type.stream(self.device.index), event)
        while self._held and (len(self._held) > _MAX_IN_FLIGHT or self._rt.query_event(self._held[0][0])):
            ev, _ = self._held.popleft()
            self._rt.synchronize_event(ev)

    def close(self) -> None:
        while self._held:
            self._rt.synchronize_event(self._held.popleft()[0])

    def _convert(self, obj: Any, arrays: list[np.ndarray]) -> Any:
        if isinstance(obj, HostTensor):
            return self._tensor(obj.array, arrays)
        if isinstance(obj, Mapping):
            return {k: self._convert(v, arrays) for k, v in obj.items()}
        if isinstance(obj, (list, tuple)):
            out = [self._convert(v, arrays) for v in obj]
            return out if isinstance(obj, list) else tuple(out)
        return obj

    def _tensor(self, array: np.ndarray, arrays: list[np.ndarray]) -> Tensor:
        arr = _as_numpy(array, None)
        if not self.asynchronous:
            return from_numpy_copy(arr, self.device)
        if not arr.flags.c_contiguous:
            arr = np.ascontiguousarray(arr)
        t = empty(arr.shape, arr.dtype, self.device)
        if arr.nbytes:
            self._rt.copy_h2d(self.device.index, t._block.handle, 0, arr, self.copy_stream, False)
            arrays.append(arr)
        return t
