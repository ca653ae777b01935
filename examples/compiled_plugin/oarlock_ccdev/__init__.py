"""oarlock-ccdev: a device whose plugin writes only a runtime, compile access (C through the
system compiler, loaded with cffi) and matmul, layout and index kernels. The core generates
every element-wise, comparison, cast, reduction and creation primitive in C for it.
"""

import os
import re
import subprocess
import tempfile
import time

import numpy as np

from adapter_api import CompileError, Compiler, DeviceProperties, DeviceRuntime, OpArgumentError, hookimpl

CONTRACT = (1, 0)
__version__ = "0.1.0"
DTYPES = ("float32", "float64", "float16", "bfloat16", "int8", "int16", "int32", "int64", "uint8", "bool")
NUMERIC = DTYPES[:-1]
MEMORY = 8 << 30


class CCRuntime(DeviceRuntime):
    """Memory is a host bytearray per allocation; work runs at once, in order."""

    def device_count(self):
        return 1

    def properties(self, index):
        return DeviceProperties(name="CCDev 1", vendor="Example Corp", total_memory=MEMORY, compute_units=os.cpu_count(),
                                dtypes=DTYPES, driver_version="cc 0.1", runtime_version="numpy " + np.__version__)

    def allocate(self, index, nbytes):
        return bytearray(nbytes)

    def free(self, index, buffer):
        pass

    def view(self, buffer, offset, shape, dtype):
        count = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
        return np.frombuffer(buffer, np.uint8, count, offset).view(dtype).reshape(shape)

    def memset(self, index, buffer, offset, value, nbytes, stream):
        buffer[offset:offset + nbytes] = bytes([value]) * nbytes

    def copy_h2d(self, index, dst, dst_offset, src, stream, blocking=True):
        dst[dst_offset:dst_offset + src.nbytes] = src.tobytes()

    def copy_d2h(self, index, dst, src, src_offset, stream, blocking=True):
        dst.reshape(-1).view(np.uint8)[:] = np.frombuffer(src, np.uint8, dst.nbytes, src_offset)

    def copy_d2d(self, index, dst, dst_offset, src, src_offset, nbytes, stream, blocking=True):
        dst[dst_offset:dst_offset + nbytes] = src[src_offset:src_offset + nbytes]

    def create_event(self, index):
        return [0.0]

    def record_event(self, event, stream):
        event[0] = time.perf_counter()

    def synchronize_event(self, event):
        pass

    def elapsed_ms(self, start, end):
        return (end[0] - start[0]) * 1000.0


class CCCompiler(Compiler):
    """C99 + OpenMP built by ``$CC`` (else cc) into a shared library; the binary is the
    entry's C declaration, a NUL, and the library's bytes."""

    language = "c"
    flags = ("-O2", "-std=gnu11", "-fPIC", "-shared", "-fopenmp", "-fno-math-errno", "-lm")

    def __init__(self, runtime=None, index=0):
        self.cc, self.libs = os.environ.get("CC", "cc"), []

    def identity(self):
        r = subprocess.run([self.cc, "--version"], capture_output=True, text=True)
        return f"{r.stdout.partition(chr(10))[0]} {' '.join(self.flags)}"

    def compile(self, source, entry, options=()):
        decl = re.search(r"void\s+" + entry + r"\s*\([^)]*\)", source)
        if decl is None:
            raise CompileError(f"[ccdev] no 'void {entry}(...)' in the source; define the entry point")
        with tempfile.TemporaryDirectory(prefix="ccdev-") as d:
            with open(f"{d}/k.c", "w") as f:
                f.write(source)
            r = subprocess.run([self.cc, f"{d}/k.c", *self.flags, *options, "-o", f"{d}/k.so"], capture_output=True, text=True)
            if r.returncode:
                raise CompileError(f"[ccdev] {self.cc} could not compile '{entry}' (exit {r.returncode})\n{r.stderr}")
            with open(f"{d}/k.so", "rb") as f:
                return re.sub(r"\brestrict\b", "", decl.group(0)).encode() + b"\0" + f.read()

    def load(self, binary, entry):
        import cffi

        decl, lib = binary.split(b"\0", 1)
        ffi = cffi.FFI()
        ffi.cdef(decl.decode() + ";")
        with tempfile.NamedTemporaryFile(suffix=".so") as f:
            f.write(lib)
            f.flush()
            handle = ffi.dlopen(f.name)
        self.libs.append((ffi, handle))
        return ffi, getattr(handle, entry)

    def launch(self, program, args, grid, local, stream):
        ffi, fn = program
        fn(*[ffi.cast("void *", a.ctypes.data) if isinstance(a, np.ndarray) else a.item() for a in args])


def matmul(ctx, outs, ins):
    a, b = ins
    wide = outs[0].dtype.kind not in "iu"  # halves accumulate wide and round once
    outs[0][...] = np.matmul(a.astype(np.float64), b.astype(np.float64)) if wide else np.matmul(a, b)


def checked(index, size):
    if index.size and (index.min() < 0 or index.max() >= size):
        raise OpArgumentError(f"[ccdev] index out of range [0, {size}): got {index.min()}..{index.max()}; check the indices")
    return index


def scatter(ctx, outs, ins, axis, add=False):
    x, index, src = ins
    outs[0][...] = x
    key = (slice(None),) * axis + (checked(index, x.shape[axis]),)
    np.add.at(outs[0], key, src) if add else outs[0].__setitem__(key, src)


def pad(ctx, outs, ins, pads, value):
    outs[0][...] = value
    outs[0][tuple(slice(b, b + s) for (b, _), s in zip(pads, ins[0].shape))] = ins[0]


def put(fn):
    return lambda ctx, outs, ins, **a: outs[0].__setitem__(..., fn(*ins, **a))


KERNELS = [
    ("matmul", NUMERIC, matmul),
    ("permute", DTYPES, put(lambda x, perm: x.transpose(perm))),
    ("expand", DTYPES, put(lambda x, shape: np.broadcast_to(x, shape))),
    ("slice", DTYPES, put(lambda x, starts, stops, steps: x[tuple(map(slice, starts, stops, steps))])),
    ("concat", DTYPES, put(lambda *xs, axis: np.concatenate(xs, axis))),
    ("pad", DTYPES, pad),
    ("gather", DTYPES, put(lambda x, i, axis: np.take(x, checked(i, x.shape[axis]), axis))),
    ("scatter_add", NUMERIC, lambda ctx, outs, ins, axis: scatter(ctx, outs, ins, axis, add=True)),
    ("scatter", DTYPES, scatter),
]


@hookimpl
def oarlock_register(registry):
    registry.add_runtime("ccdev", CCRuntime)
    registry.add_compiler("ccdev", CCCompiler)
    for op, dtypes, fn in KERNELS:
        registry.add_kernel(op, "ccdev", dtypes, fn)


@hookimpl
def oarlock_plugin_info():
    return {"version": __version__, "description": "host memory; C kernels generated by the core, built by cc"}
