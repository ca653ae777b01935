"""Builds the C library with the system compiler. It is an ordinary shared library loaded with
cffi (it defines no Python module), so setuptools' Extension only serves as the build driver."""

import importlib.util
import os

from setuptools import Extension, setup

HERE = os.path.dirname(os.path.abspath(__file__))


def include_dir():
    """oarlock_device.h: $OARLOCK_INCLUDE, this checkout's adapter_api/include, or the one of an
    oarlock visible to the build. The last is found without importing adapter_api (it imports
    numpy and pluggy, which an isolated build environment does not have)."""
    candidates = [
        os.environ.get("OARLOCK_INCLUDE", ""),
        os.path.join(HERE, "..", "..", "adapter_api", "include"),
    ]
    spec = importlib.util.find_spec("adapter_api")  # locates the package, runs none of it
    if spec is not None and spec.submodule_search_locations:
        candidates += [os.path.join(p, "include") for p in spec.submodule_search_locations]
    for c in candidates:
        if c and os.path.exists(os.path.join(c, "oarlock_device.h")):
            return os.path.abspath(c)
    raise SystemExit(
        "[oarlock-nativedev] cannot find oarlock_device.h: pip builds in an isolated environment "
        "without oarlock. Build with `pip install --no-build-isolation .` (oarlock installed), or "
        "point OARLOCK_INCLUDE at the header's folder: "
        "OARLOCK_INCLUDE=\"$(python -c 'import adapter_api.native as n; print(n.include_dir())')\" pip install ."
    )


setup(
    ext_modules=[
        Extension(
            "oarlock_nativedev._nativedev",
            sources=[
                "oarlock_nativedev/nativedev.c",
                "oarlock_nativedev/collectives.c",
                "oarlock_nativedev/compiler.c",
            ],
            include_dirs=[include_dir()],
            extra_compile_args=["-std=c11", "-O2", "-pthread"],
            extra_link_args=["-pthread"],
            libraries=["m", "rt", "dl"],  # shm_open and dlopen live in libc from glibc 2.34 on
        )
    ]
)
