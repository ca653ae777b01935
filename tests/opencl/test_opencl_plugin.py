"""Registration: cheap import, every primitive registered, clear errors without pyopencl."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np

from adapter_api import PRIMITIVES, Registry, check_contract

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _python(code: str) -> str:
    env = dict(os.environ, PYTHONPATH=ROOT)
    res = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 0, res.stderr
    return res.stdout


def test_registers_every_primitive():
    import plugins.opencl as plugin

    check_contract("opencl", plugin.CONTRACT)
    reg = Registry(plugin="opencl")
    plugin.oarlock_register(reg)
    ops = {op for op, dev, _ in reg.kernels if dev == "opencl"}
    assert ops == set(PRIMITIVES) | {"matmul_t"}  # and one composite's kernel (static programs)
    assert "opencl" in reg.runtimes and "opencl" in reg.compilers and "opencl" in reg.communicators
    f32 = np.dtype(np.float32)
    assert all(
        (op, "opencl", f32) in reg.kernels
        for op in PRIMITIVES
        if op != "logical_not" and not op.startswith("logical")
    )
    assert reg.kernels[("add", "opencl", f32)].broadcast
    assert not reg.kernels[("exp", "opencl", f32)].broadcast


def test_import_and_register_touch_no_device_nor_pyopencl():
    out = _python("""
        import sys
        import plugins.opencl as p
        from adapter_api import Registry
        p.oarlock_register(Registry(plugin="opencl"))
        print("pyopencl" in sys.modules)
    """)
    assert out.strip() == "False"


def test_without_pyopencl_registration_works_and_runtime_explains():
    out = _python("""
        import sys
        sys.modules["pyopencl"] = None  # as if not installed
        import plugins.opencl as p
        from adapter_api import PluginError, Registry
        reg = Registry(plugin="opencl")
        p.oarlock_register(reg)
        try:
            reg.runtimes["opencl"][1]()
        except PluginError as e:
            print(e)
    """)
    assert "[opencl] pyopencl is not installed" in out and "pip install 'oarlock[opencl]'" in out


def test_no_platform_gives_zero_devices_with_a_reason():
    out = _python("""
        import pyopencl as cl
        def none():
            raise cl.LogicError("clGetPlatformIDs failed: PLATFORM_NOT_FOUND_KHR")
        cl.get_platforms = none
        from plugins.opencl.runtime import OpenCLRuntime
        rt = OpenCLRuntime()
        print(rt.device_count(), rt.reason)
    """)
    assert out.startswith("0 no OpenCL platform found")
