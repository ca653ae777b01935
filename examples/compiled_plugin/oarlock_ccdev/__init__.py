"""oarlock-ccdev: only a runtime, compile access (C by cc, loaded with cffi) and matmul, layout and
index kernels; the core generates every element-wise, cast, reduction and creation primitive."""

import os
import re
import subprocess
import tempfile
import time

import numpy as np

import adapter_api as api

CONTRACT = (1, 2)  # the adapter contract it was written for (1.1: argsort; 1.2: gather takes wrap)
__version__ = "0.1.0"
DTYPES = ("float32", "float64", "float16", "bfloat16", "int8", "int16", "int32", "int64", "uint8", "bool")
NUMERIC = DTYPES[:-1]
MEMORY = 8 << 30


class CCRuntime(api.DeviceRuntime):
    """Memory is a host bytearray per allocation; work runs at once, in order."""

    def device_count(self):
        return 1

    def properties(self, index):
        return api.DeviceProperties(
            name="CCDev 1",
            vendor="Example Corp",
            total_memory=MEMORY,
            compute_units=os.cpu_count(),
            dtypes=DTYPES,
            driver_version="cc 0.1",
            runtime_version="numpy " + np.__version__,
        )

    def allocate(self, index, nbytes):
        if nbytes > MEMORY:
            raise api.OutOfMemoryError(f"[ccdev] cannot allocate {nbytes} bytes: the device has {MEMORY}")
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
        return [0.0]

    def record_event(self, event, stream):
        event[0] = time.perf_counter()

    def synchronize_event(self, event):
        pass  # work is finished when it returns

    def elapsed_ms(self, start, end):
        return (end[0] - start[0]) * 1000.0


class CCCompiler(api.Compiler):
    """C99 + OpenMP built by ``$CC`` (else cc) into a shared library; the binary is the
    entry's C declaration, a NUL, and the library's bytes."""

    language = "c"
    flags = ("-O2", "-std=gnu11", "-fPIC", "-shared", "-fopenmp", "-fno-math-errno", "-lm")

    def __init__(self, runtime=None, index=0):
        self.cc, self.libs = os.environ.get("CC", "cc"), []

    def identity(self):  # changes with the compiler's version and the flags
        return subprocess.run([self.cc, "--version"], capture_output=True, text=True).stdout + " ".join(
            self.flags
        )

    def compile(self, source, entry, options=()):
        decl = re.search(r"void\s+" + entry + r"\s*\([^)]*\)", source)
        if decl is None:
            raise api.CompileError(f"[ccdev] no 'void {entry}(...)' in the source; define the entry point")
        with tempfile.TemporaryDirectory(prefix="ccdev-") as d:
            with open(f"{d}/k.c", "w") as f:
                f.write(source)
            r = subprocess.run(
                [self.cc, f"{d}/k.c", *self.flags, *options, "-o", f"{d}/k.so"],
                capture_output=True,
                text=True,
            )
            if r.returncode:
                raise api.CompileError(
                    f"[ccdev] {self.cc} could not compile '{entry}' (exit {r.returncode})\n{r.stderr}"
                )
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


def matmul(a, b):  # integers stay exact; floats accumulate in float64 and round once
    return np.matmul(a, b) if a.dtype.kind in "iu" else np.matmul(a.astype(np.float64), b.astype(np.float64))


def checked(index, size, wrap=False):
    """``index`` checked against ``[0, size)``; with ``wrap`` (a gather of a user's index)
    against ``[-size, size)``, negative ones counted from the end."""
    low = -size if wrap else 0
    if index.size and (index.min() < low or index.max() >= size):
        raise api.OpArgumentError(
            f"[ccdev] index out of range [{low}, {size}): got {index.min()}..{index.max()}; check the indices"
        )
    return np.where(index < 0, index + size, index) if wrap else index


def scatter(ctx, outs, ins, axis, add=False):
    outs[0][...] = ins[0]
    key = (slice(None),) * axis + (checked(ins[1], ins[0].shape[axis]),)
    np.add.at(outs[0], key, ins[2]) if add else outs[0].__setitem__(key, ins[2])


def argsort(x, descending):  # stable; NaN last, and first descending (a reversed row, reversed)
    if x.ndim == 0:
        return np.zeros((), np.int64)
    if descending:
        return x.shape[-1] - 1 - np.argsort(x[..., ::-1], axis=-1, kind="stable")[..., ::-1]
    return np.argsort(x, axis=-1, kind="stable")


def put(fn):
    return lambda ctx, outs, ins, **a: outs[0].__setitem__(..., fn(*ins, **a))


KERNELS = [
    ("matmul", NUMERIC, put(matmul)),
    ("permute", DTYPES, put(lambda x, perm: x.transpose(perm))),
    ("expand", DTYPES, put(lambda x, shape: np.broadcast_to(x, shape))),
    ("slice", DTYPES, put(lambda x, starts, stops, steps: x[tuple(map(slice, starts, stops, steps))])),
    ("concat", DTYPES, put(lambda *xs, axis: np.concatenate(xs, axis))),
    ("pad", DTYPES, put(lambda x, pads, value: np.pad(x, pads or 0, constant_values=value))),
    ("gather", DTYPES, put(lambda x, i, axis, wrap=False: np.take(x, checked(i, x.shape[axis], wrap), axis))),
    ("scatter_add", NUMERIC, lambda ctx, outs, ins, axis: scatter(ctx, outs, ins, axis, add=True)),
    ("scatter", DTYPES, scatter),
    ("argsort", DTYPES, put(argsort)),
]


@api.hookimpl
def oarlock_register(registry):
    registry.add_runtime("ccdev", CCRuntime)
    registry.add_compiler("ccdev", CCCompiler)
    for op, dtypes, fn in KERNELS:
        registry.add_kernel(op, "ccdev", dtypes, fn)
