"""SimRuntime: device memory is a bytearray per allocation; work runs at once (one in-order
queue), so streams need no state and events only remember when they were recorded."""

import time

import numpy as np

from adapter_api import DeviceProperties, DeviceRuntime, OutOfMemoryError

DTYPES = ("float32", "float64", "int32", "int64", "bool")
MEMORY = 8 << 30  # what the simulated device claims to have


class SimEvent:
    def __init__(self):
        self.time = None


class SimRuntime(DeviceRuntime):
    def device_count(self):
        return 1

    def properties(self, index):
        return DeviceProperties(
            name="SimDev 1",
            vendor="Example Corp",
            total_memory=MEMORY,
            compute_units=1,
            dtypes=DTYPES,
            driver_version="sim 0.1",
            runtime_version="numpy " + np.__version__,
        )

    def allocate(self, index, nbytes):
        if nbytes > MEMORY:
            raise OutOfMemoryError(f"[simdev] cannot allocate {nbytes} bytes: the device has {MEMORY}")
        return bytearray(nbytes)

    def free(self, index, buffer):
        pass  # the bytearray goes with its last reference

    def view(self, buffer, offset, shape, dtype):
        count = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
        return np.frombuffer(buffer, np.uint8, count, offset).view(dtype).reshape(shape)

    def memset(self, index, buffer, offset, value, nbytes, stream):
        buffer[offset : offset + nbytes] = bytes([value]) * nbytes

    def copy_h2d(self, index, dst, dst_offset, src, stream, blocking=True):
        dst[dst_offset : dst_offset + src.nbytes] = src.tobytes()

    def copy_d2h(self, index, dst, src, src_offset, stream, blocking=True):
        dst.reshape(-1).view(np.uint8)[:] = np.frombuffer(src, np.uint8, dst.nbytes, src_offset)

    def copy_d2d(self, index, dst, dst_offset, src, src_offset, nbytes, stream, blocking=True):
        dst[dst_offset : dst_offset + nbytes] = src[src_offset : src_offset + nbytes]

    def create_event(self, index):
        return SimEvent()

    def record_event(self, event, stream):
        event.time = time.perf_counter()

    def synchronize_event(self, event):
        pass  # work is finished when it returns

    def elapsed_ms(self, start, end):
        return (end.time - start.time) * 1000.0
