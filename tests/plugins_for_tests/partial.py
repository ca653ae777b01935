"""A deliberately partial plugin: device type "partial" with host memory in bytearrays and
only a few float32 kernels. Everything else must fall back to the cpu plugin."""

from __future__ import annotations

import time

import numpy as np

from adapter_api import DeviceProperties, DeviceRuntime, hookimpl

CONTRACT = (1, 0)


class PartialRuntime(DeviceRuntime):
    def __init__(self) -> None:
        self.live = 0

    def device_count(self) -> int:
        return 2

    def properties(self, index: int) -> DeviceProperties:
        return DeviceProperties(
            name=f"partial-{index}", vendor="tests", total_memory=1 << 30, compute_units=1
        )

    def allocate(self, index: int, nbytes: int) -> bytearray:
        if nbytes > (1 << 30):
            from adapter_api import OutOfMemoryError

            raise OutOfMemoryError(f"[partial] {nbytes} bytes do not fit")
        self.live += 1
        return bytearray(max(nbytes, 1))

    def free(self, index: int, buffer: bytearray) -> None:
        self.live -= 1

    def view(self, buffer, offset, shape, dtype):
        n = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        return np.frombuffer(buffer, np.uint8, n, offset).view(dtype).reshape(shape)

    def memset(self, index, buffer, offset, value, nbytes, stream):
        buffer[offset : offset + nbytes] = bytes([value]) * nbytes

    def copy_h2d(self, index, dst, dst_offset, src, stream, blocking=True):
        b = src.tobytes()
        dst[dst_offset : dst_offset + len(b)] = b

    def copy_d2h(self, index, dst, src, src_offset, stream, blocking=True):
        dst.reshape(-1).view(np.uint8)[:] = np.frombuffer(src, np.uint8, dst.nbytes, src_offset)

    def copy_d2d(self, index, dst, dst_offset, src, src_offset, nbytes, stream, blocking=True):
        dst[dst_offset : dst_offset + nbytes] = src[src_offset : src_offset + nbytes]

    def create_event(self, index):
        return [0.0]

    def record_event(self, event, stream):
        event[0] = time.perf_counter()

    def synchronize_event(self, event):
        pass

    def elapsed_ms(self, start, end):
        return (end[0] - start[0]) * 1000.0


def _add(ctx, outs, ins):
    np.add(ins[0], ins[1], out=outs[0])


def _mul(ctx, outs, ins):
    np.multiply(ins[0], ins[1], out=outs[0])


def _full(ctx, outs, ins, shape, value, dtype):
    outs[0].fill(value)


def _copy(ctx, outs, ins):
    np.copyto(outs[0], ins[0])


@hookimpl
def oarlock_register(registry):
    registry.add_runtime("partial", PartialRuntime)
    registry.add_kernel("add", "partial", ["float32"], _add)  # broadcast=False: the core expands
    registry.add_kernel("mul", "partial", ["float32"], _mul, broadcast=True)
    registry.add_kernel("full", "partial", ["float32", "int64", "bool"], _full)
    registry.add_kernel("copy", "partial", ["float32"], _copy)
