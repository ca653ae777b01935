"""OpenCL C programs: which source and build options each (family, key) gets, and the build.

Families: ``math`` (key: dtype name; math.cl), ``move`` (key: itemsize; move.cl, one build
serves every dtype of that size) and ``cast`` (key: "all"; generated, one kernel per pair).
Each program is built once per context; pyopencl and PoCL also keep built binaries on disk.
"""

from __future__ import annotations

import warnings
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING

import pyopencl as cl

from adapter_api import DeviceError, KernelError

from .errors import build_error

if TYPE_CHECKING:
    from .runtime import OpenCLDevice

#: dtype name -> build defines (see common.h.cl)
TYPES: dict[str, dict[str, str]] = {
    "bool": dict(
        T="uchar", UT="uchar", ACC="uchar", T_BITS="uchar", T_SIZE="1", IS_BOOL="1", T_MIN="0", T_MAX="1"
    ),
    "uint8": dict(T="uchar", UT="uchar", ACC="uchar", T_BITS="uchar", T_SIZE="1", T_MIN="0", T_MAX="255"),
    "int32": dict(
        T="int",
        UT="uint",
        ACC="int",
        T_BITS="uint",
        T_SIZE="4",
        IS_SIGNED="1",
        T_MIN="(-2147483647-1)",
        T_MAX="2147483647",
    ),
    "int64": dict(
        T="long",
        UT="ulong",
        ACC="long",
        T_BITS="ulong",
        T_SIZE="8",
        IS_SIGNED="1",
        T_MIN="(-9223372036854775807L-1)",
        T_MAX="9223372036854775807L",
    ),
    "float16": dict(
        T="half",
        UT="ushort",
        ACC="float",
        T_BITS="ushort",
        T_SIZE="2",
        IS_FLOAT="1",
        IS_SIGNED="1",
        IS_HALF="1",
        T_MIN="(-INFINITY)",
        T_MAX="INFINITY",
    ),
    "float32": dict(
        T="float",
        UT="uint",
        ACC="float",
        T_BITS="uint",
        T_SIZE="4",
        IS_FLOAT="1",
        IS_SIGNED="1",
        T_MIN="(-INFINITY)",
        T_MAX="INFINITY",
    ),
    "float64": dict(
        T="double",
        UT="ulong",
        ACC="double",
        T_BITS="ulong",
        T_SIZE="8",
        IS_FLOAT="1",
        IS_SIGNED="1",
        IS_DOUBLE="1",
        T_MIN="(-INFINITY)",
        T_MAX="INFINITY",
    ),
}
# wide unsigned integers: the integer kernels of math.cl read them unsigned (IS_SIGNED unset)
TYPES.update(
    uint16=dict(T="ushort", UT="ushort", ACC="ushort", T_BITS="ushort", T_SIZE="2", T_MIN="0", T_MAX="65535"),
    uint32=dict(T="uint", UT="uint", ACC="uint", T_BITS="uint", T_SIZE="4", T_MIN="0", T_MAX="4294967295u"),
    uint64=dict(
        T="ulong",
        UT="ulong",
        ACC="ulong",
        T_BITS="ulong",
        T_SIZE="8",
        T_MIN="0",
        T_MAX="18446744073709551615ul",
    ),
)
_FLAGS = ("IS_FLOAT", "IS_SIGNED", "IS_BOOL", "IS_HALF", "IS_DOUBLE")
_MOVE_TYPES = {"1": "uchar", "2": "ushort", "4": "uint", "8": "ulong"}


@cache
def _read(name: str) -> str:
    return resources.files(__package__).joinpath(name).read_text()


def require_fp64(dev: OpenCLDevice) -> None:
    if not dev.has_fp64:
        raise DeviceError(
            f"[opencl] float64 needs the cl_khr_fp64 extension, which device '{dev.name}' "
            f"(opencl:{dev.index}) does not have; use float32, or a device with fp64"
        )


def cast_source(has_fp64: bool) -> str:
    """One kernel ``cast_<from>_<to>`` per pair of dtypes (numpy's astype rules)."""
    names = [n for n in TYPES if n != "float64" or has_fp64]
    out = []
    for s in names:
        for d in names:
            st, dt = TYPES[s]["T"], TYPES[d]["T"]
            v = "vload_half(xo + i, x)" if s == "float16" else "x[xo + i]"
            s_float = "IS_FLOAT" in TYPES[s]
            if d == "bool":
                expr = f"(uchar)({v} != 0)"
            elif d in ("float16", "float32", "float64"):
                expr = f"({'double' if s == 'float64' or d == 'float64' else 'float'})({v})"
            elif s_float:  # NOTE: truncates toward zero, saturates to the target's range, NaN -> 0
                # (tested apart: PoCL's convert_int_sat_rtz(NaN) gives INT_MIN, not the spec's 0)
                expr = f"(isnan({v}) ? ({dt})0 : convert_{dt}_sat_rtz({v}))"
            else:
                expr = f"({dt})({v})"
            store = f"y[yo + i] = {expr}"
            if d == "float16":  # a NaN as numpy narrows it (PoCL's vstore_half_rte: 0x7fff)
                t = "double" if s == "float64" else "float"
                store = (
                    f"{{ {t} v = {expr}; if (isnan(v)) {{ uint u = as_uint((float)v), m = (u & 0x7fffffu) >> 13; "
                    f"((__global ushort*)y)[yo + i] = (ushort)(((u >> 16) & 0x8000u) | 0x7c00u | (m ? m : 1u)); }} "
                    f"else vstore_half_rte(v, yo + i, y); }}"
                )
            out.append(
                f"__kernel void cast_{s}_{d}(__global {dt}* y, long yo, __global const {st}* x, "
                f"long xo, long n) {{ long i0 = get_global_id(0) * PER, i1 = min(n, i0 + PER); "
                f"for (long i = i0; i < i1; ++i) {store}; }}"
            )
    pragma = "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n" if has_fp64 else ""
    return pragma + "\n".join(out) + "\n"


def source_and_options(dev: OpenCLDevice, family: str, key: str) -> tuple[str, list[str]]:
    # PER: consecutive elements per work item of elementwise kernels (dev.per_item)
    opts = [
        f"-DLS={dev.local_size}",
        f"-DPER={dev.per_item}",
        f"-DHAS_FP64={int(dev.has_fp64)}",
        f"-DHAS_I64_ATOMICS={int(dev.has_int64_atomics)}",
    ]
    if family == "math":
        if key == "float64":
            require_fp64(dev)
        defs = {f: "0" for f in _FLAGS} | TYPES[key]
        opts += [f"-D{k}={v}" for k, v in defs.items()]
        return _read("common.h.cl") + _read("math.cl"), opts
    if family == "move":
        opts += [f"-DE={_MOVE_TYPES[key]}", "-DT=uchar", "-DACC=uchar", "-DIS_HALF=0", "-DIS_DOUBLE=0"]
        return _read("common.h.cl") + _read("move.cl"), opts
    if family == "cast":
        return cast_source(dev.has_fp64), opts
    raise KernelError(f"[opencl] unknown program family {family!r}; this is a bug in the plugin")


def build(dev: OpenCLDevice, family: str, key: str) -> cl.Program:
    """Build program (family, key) for ``dev``; raise KernelError with the build log."""
    source, options = source_and_options(dev, family, key)
    prg = cl.Program(dev.context, source)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", cl.CompilerWarning)
            prg.build(options=options, devices=[dev.device])
    except cl.Error as exc:
        raise build_error(exc, prg, f"program '{family}/{key}'", dev.device, KernelError) from exc
    return prg
