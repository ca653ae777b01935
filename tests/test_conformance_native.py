"""The native C ABI (adapter_api/include/oarlock_device.h, adapter_api.native): the example C
plugin through the public API, and what the loader says about libraries that get the table
wrong. Broken variants are the example's own source with one entry changed after its init,
built here with the system C compiler."""

from __future__ import annotations

import os
import shutil
import subprocess
from importlib.metadata import entry_points

import numpy as np
import pytest

import framework as fw
from adapter_api import KernelNotFoundError, OpArgumentError, OutOfMemoryError, PluginError
from adapter_api.native import NativeLibrary, NativePlugin, NativeView, include_dir

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FOLDER = os.path.join(ROOT, "examples", "native_plugin", "oarlock_nativedev")
SOURCE = os.path.join(FOLDER, "nativedev.c")
GROUPS = [os.path.join(FOLDER, f) for f in ("collectives.c", "compiler.c")]  # the ABI 1.1 entries
CC = shutil.which("cc") or shutil.which("gcc")
needs_cc = pytest.mark.skipif(CC is None, reason="no C compiler")


def _installed() -> None:
    if not any(e.name == "nativedev" for e in entry_points(group="oarlock.plugins")):
        pytest.fail("the example native plugin is not installed: pip install ./examples/native_plugin")


def _build(tmp_path, name: str, after_init: str) -> str:
    """The example plugin with ``after_init`` (C statements on ``p``) run after its init."""
    src = tmp_path / f"{name}.c"
    src.write_text(f'#define oarlock_plugin_init example_init\n#include "{SOURCE}"\n#undef oarlock_plugin_init\n'
                   f"int oarlock_plugin_init(oarlock_plugin *p) {{\n  int s = example_init(p);\n  {after_init}\n"
                   f"  return s;\n}}\n")
    lib = tmp_path / f"{name}.so"
    subprocess.run([CC, "-std=c11", "-O1", "-fPIC", "-shared", "-pthread", f"-I{include_dir()}", f"-I{FOLDER}", str(src),
                    *GROUPS, "-o", str(lib), "-lm", "-lrt", "-ldl"], check=True, capture_output=True, text=True)
    return str(lib)


def test_example_plugin_computes_through_the_public_api():
    _installed()
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((5, 70)).astype(np.float32), rng.standard_normal((70, 300)).astype(np.float32)
    x, y = fw.to_tensor(a, device="nativedev"), fw.to_tensor(b, device="nativedev")
    np.testing.assert_allclose((x @ y).numpy(), a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)  # threaded rows
    np.testing.assert_allclose(fw.exp(x[:, 3:9]).numpy(), np.exp(a[:, 3:9].astype(np.float64)), rtol=1e-6)
    np.testing.assert_array_equal(fw.where(x > 0, x, 0.0).numpy(), np.where(a > 0, a, 0).astype(np.float32))
    p = fw.get_device_properties("nativedev")
    assert p.name == "NativeDev 1" and set(p.dtypes) == {"bool", "int32", "int64", "float32", "float64"}


def test_kernel_status_codes_become_oarlock_errors():
    _installed()
    from framework._src import dispatch
    from framework._src.ops.base import OPS

    x = fw.to_tensor(np.zeros((5, 2), np.float32), device="nativedev")
    idx = fw.to_tensor(np.array([0, 5], np.int64), device="nativedev")
    with pytest.raises(OpArgumentError, match=r"\[nativedev\] gather: index 5 is out of range \[0, 5\)"):
        dispatch.run(OPS["gather"], [x, idx], {"axis": 0})
    with pytest.raises(OutOfMemoryError, match="out of memory on nativedev") as info:
        fw.empty((1 << 40,), dtype="uint8", device="nativedev")
    assert "[nativedev] allocate(1099511627776 bytes): out of memory" in str(info.value.__cause__)


@needs_cc
def test_a_missing_mandatory_entry_is_named_at_load(tmp_path):
    lib = _build(tmp_path, "no_elapsed", "p->elapsed_ms = 0;")
    with pytest.raises(PluginError, match="mandatory entry 'elapsed_ms'"):
        NativeLibrary(lib)
    lib = _build(tmp_path, "half_streams", "p->create_stream = (void *)p->create_event;")
    with pytest.raises(PluginError, match="stream entries"):
        NativeLibrary(lib)


@needs_cc
def test_abi_versions_and_a_failing_init_are_refused(tmp_path):
    with pytest.raises(PluginError, match="native ABI 2.1, but this oarlock implements 1.1; upgrade oarlock"):
        NativeLibrary(_build(tmp_path, "abi2", "p->abi_major = 2;"))
    with pytest.raises(PluginError, match="native ABI 1.99"):
        NativeLibrary(_build(tmp_path, "abi199", "p->abi_minor = 99;"))
    with pytest.raises(PluginError, match="returned status 1"):
        NativeLibrary(_build(tmp_path, "failing", "s = 1;"))
    with pytest.raises(PluginError, match="does not exist; build the plugin"):
        NativePlugin(str(tmp_path / "absent.so")).library  # noqa: B018


@needs_cc
def test_a_second_native_plugin_registers_by_hand_and_declines_to_the_cpu(tmp_path):
    """fw.register_plugin takes a NativePlugin like a module; a kernel returning
    OARLOCK_NOT_SUPPORTED becomes KernelNotFoundError, and the core runs the op on the cpu."""
    lib = _build(tmp_path, "renamed", 'p->device_type = "nativedev_t";')
    fw.register_plugin(NativePlugin(lib, name="nativedev_t"), name="nativedev_t")
    x = fw.to_tensor(np.arange(6, dtype=np.float32).reshape(2, 3), device="nativedev_t")
    np.testing.assert_array_equal(x.sum(axis=1).numpy(), [3.0, 12.0])
    assert fw.get_device_properties("nativedev_t").extra["library"] == lib
    from framework._src import dispatch
    from framework._src.plugins import host

    entry = host().registry.kernels[("cast", "nativedev_t", np.dtype("float32"))]
    out = NativeView(x.native().buffer, 0, (2, 3), np.int8)
    with pytest.raises(KernelNotFoundError, match=r"\[nativedev_t\] cast: cast to dtype code 1 is not supported"):
        entry.fn(dispatch.context(x.device), [out], [x.native()], dtype=np.dtype("int8"))
    fw.reset_fallback_stats()
    with pytest.warns(UserWarning, match="cast"):
        h = x.astype("int8")
    np.testing.assert_array_equal(h.numpy(), np.arange(6, dtype=np.int8).reshape(2, 3))
    assert fw.fallback_stats() == {"cast@nativedev_t": 1}
