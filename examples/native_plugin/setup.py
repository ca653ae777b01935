"""Builds the C library with the system compiler. It is an ordinary shared library loaded with
cffi (it defines no Python module), so setuptools' Extension only serves as the build driver."""

import os

from setuptools import Extension, setup

HERE = os.path.dirname(os.path.abspath(__file__))


def include_dir():
    """oarlock_device.h: $OARLOCK_INCLUDE, this checkout's adapter_api/include, or the installed oarlock's."""
    candidates = [
        os.environ.get("OARLOCK_INCLUDE", ""),
        os.path.join(HERE, "..", "..", "adapter_api", "include"),
    ]
    for c in candidates:
        if c and os.path.exists(os.path.join(c, "oarlock_device.h")):
            return os.path.abspath(c)
    from adapter_api.native import include_dir as installed  # pip install --no-build-isolation

    return installed()


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
