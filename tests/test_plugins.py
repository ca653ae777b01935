"""Plugin discovery, contract versions, broken plugins, fallback and strict mode."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from importlib.metadata import EntryPoint

import numpy as np
import pytest

import framework as fw
from framework._src.plugins import PluginHost

GROUP = "oarlock.plugins"


def ep(name: str, module: str) -> EntryPoint:
    return EntryPoint(name=name, value=module, group=GROUP)


@pytest.fixture(autouse=True)
def _own_plugin_selection(monkeypatch):
    """These tests choose their plugins themselves: the caller's OARLOCK_PLUGINS must not
    leave plugins out (or in)."""
    monkeypatch.delenv("OARLOCK_PLUGINS", raising=False)


def test_cpu_plugin_found_through_entry_point():
    h = PluginHost()  # a fresh host: the process-wide one may have been loaded under OARLOCK_PLUGINS
    h.load_entry_points()
    rec = h.records["cpu"]
    assert rec.module == "plugins.cpu" and rec.error is None
    assert rec.contract == fw.CONTRACT_VERSION
    assert "cpu" in rec.device_types and rec.kernel_count >= 52


def test_discovery_with_fake_entry_points():
    h = PluginHost()
    h.load_entry_points(
        [
            ep("partial", "tests.plugins_for_tests.partial"),
            ep("broken", "tests.plugins_for_tests.broken_import"),
        ]
    )
    assert h.records["partial"].error is None
    assert h.records["partial"].device_types == ["partial"]
    assert ("add", "partial", np.dtype("float32")) in h.registry.kernels
    err = h.records["broken"].error
    assert "broken" in err and "libvendor.so.3" in err and "import" in err and "OARLOCK_PLUGINS" in err


def test_broken_hook_is_rolled_back():
    h = PluginHost()
    h.load_entry_points([ep("brokenhook", "tests.plugins_for_tests.broken_hook")])
    assert "brokenhook" not in h.registry.runtimes  # half a plugin is never used
    assert "firmware version 0.9" in h.records["brokenhook"].error
    assert "oarlock_register" in h.records["brokenhook"].error


def test_contract_mismatch_names_plugin_versions_and_fix():
    h = PluginHost()
    h.load_entry_points([ep("future", "tests.plugins_for_tests.future_contract")])
    err = h.records["future"].error
    cmaj, cmin = fw.CONTRACT_VERSION
    assert (
        "'future'" in err and "2.0" in err and f"implements {cmaj}.{cmin}" in err and "upgrade oarlock" in err
    )
    assert "future" not in h.registry.runtimes


def test_oarlock_plugins_env_limits_loading(monkeypatch):
    monkeypatch.setenv("OARLOCK_PLUGINS", "partial")
    h = PluginHost()
    h.load_entry_points(
        [
            ep("partial", "tests.plugins_for_tests.partial"),
            ep("broken", "tests.plugins_for_tests.broken_import"),
        ]
    )
    assert set(h.records) == {"partial"}


@pytest.fixture(scope="module")
def partial():
    fw.register_plugin("plugins.cpu", name="cpu")  # the fallback target, even under OARLOCK_PLUGINS=opencl
    fw.register_plugin("tests.plugins_for_tests.partial", name="partial")
    return "partial"


def test_partial_plugin_runs_its_kernels_and_falls_back(partial):
    fw.reset_fallback_stats()
    a = fw.to_tensor([[1.0, 2.0], [3.0, 4.0]], device="partial:1")
    b = fw.to_tensor([10.0, 20.0], device="partial:1")
    c = a + b  # registered without broadcast: the core expands b first (expand falls back)
    assert c.device == "partial:1"
    np.testing.assert_array_equal(c.numpy(), [[11, 22], [13, 24]])
    with pytest.warns(fw.FallbackWarning, match=r"\[exp\] no kernel on 'partial'"):
        e = fw.exp(a)
    np.testing.assert_allclose(e.numpy(), np.exp([[1, 2], [3, 4]]), rtol=1e-6)
    assert e.device == "partial:1"
    stats = fw.fallback_stats()
    assert stats["exp@partial"] == 1 and stats["expand@partial"] >= 1
    fw.exp(a)  # counted again, warned once only
    assert fw.fallback_stats()["exp@partial"] == 2


def test_strict_mode_turns_fallback_into_error(partial):
    a = fw.to_tensor([1.0, 2.0], device="partial")
    fw.set_strict_kernels(True)
    try:
        with pytest.raises(fw.KernelNotFoundError, match=r"\[tanh\].*strict mode"):
            fw.tanh(a)
    finally:
        fw.set_strict_kernels(False)


def test_strict_mode_from_environment():
    code = textwrap.dedent(
        """
        import framework as fw
        fw.register_plugin("tests.plugins_for_tests.partial", name="partial")
        try:
            fw.tanh(fw.ones([2], device="partial"))
        except fw.KernelNotFoundError as e:
            print("STRICT", e)
        """
    )
    env = dict(os.environ, OARLOCK_STRICT_KERNELS="1")
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd=_root(), timeout=120
    )
    assert "STRICT [tanh]" in out.stdout, out.stderr


def test_partial_plugin_memory_stats_and_training_step(partial):
    fw.empty_cache("partial:0")
    before = fw.memory_stats("partial:0")
    w = fw.ones([4], device="partial:0")
    w.stop_gradient = False
    loss = (w * w).sum()  # mul on the device, sum falls back
    loss.backward()
    np.testing.assert_allclose(w.grad.numpy(), [2, 2, 2, 2])
    after = fw.memory_stats("partial:0")
    assert after["num_alloc_requests"] > before["num_alloc_requests"]
    assert after["peak_allocated_bytes"] >= 16


def _root() -> str:
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _oarlock_devices(env: dict, timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "framework.cli", "devices"],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=_root(),
    )


def _fake_install(tmp_path, name: str, module: str) -> dict:
    """Make an entry point visible to importlib.metadata without pip: a dist-info folder."""
    dist = tmp_path / f"oarlock_test_{name}-0.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: oarlock-test-{name}\nVersion: 0.0\n")
    (dist / "entry_points.txt").write_text(f"[{GROUP}]\n{name} = {module}\n")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), _root(), env.get("PYTHONPATH", "")])
    env.pop("OARLOCK_PLUGINS", None)
    return env


def test_oarlock_devices_lists_cpu_and_a_broken_plugin(tmp_path):
    env = _fake_install(tmp_path, "vendorx", "tests.plugins_for_tests.broken_import")
    out = _oarlock_devices(env, timeout=120)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "plugin cpu (plugins.cpu)" in text and "cpu:0" in text and "kernels: 53 ops" in text
    assert "plugin vendorx" in text and "FAILED TO LOAD" in text and "libvendor.so.3" in text


def test_asking_for_a_broken_plugins_device_raises_its_error(tmp_path):
    env = _fake_install(tmp_path, "vendorx", "tests.plugins_for_tests.broken_import")
    code = "import framework as fw\ntry:\n    fw.set_device('vendorx')\nexcept fw.DeviceError as e:\n    print('ERR', e)\nprint('OK', fw.ones([1], device='cpu').device)"
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120, cwd=_root()
    )
    assert "ERR [device] device 'vendorx' is unavailable because its plugin failed to load" in out.stdout, (
        out.stdout + out.stderr
    )
    assert "libvendor.so.3" in out.stdout
    assert "OK cpu:0" in out.stdout  # import framework was not broken


def test_oarlock_devices_survives_a_plugin_that_segfaults_while_registering(tmp_path):
    env = _fake_install(tmp_path, "vendorsegv", "tests.plugins_for_tests.segv_register")
    out = _oarlock_devices(env, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    text = out.stdout
    assert "plugin cpu (plugins.cpu)" in text and "cpu:0" in text
    assert "plugin vendorsegv (tests.plugins_for_tests.segv_register)" in text and "FAILED TO LOAD" in text
    assert "plugin 'vendorsegv' killed the process while loading" in text and "died with SIGSEGV" in text
    assert "OARLOCK_PLUGINS" in text


def test_a_plugin_that_segfaults_at_run_time_is_named_on_stderr(tmp_path):
    env = _fake_install(tmp_path, "vendorsegv", "tests.plugins_for_tests.segv_register")
    code = "import framework as fw\nprint('before', flush=True)\nfw.ones([1])\nprint('after')"
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120, cwd=_root()
    )
    assert out.returncode == -11 and "before" in out.stdout and "after" not in out.stdout, out.stderr
    assert "Segmentation fault" in out.stderr
    assert (
        "<oarlock: registering plugin 'vendorsegv' (tests.plugins_for_tests.segv_register); if the process died here, leave the plugin out with OARLOCK_PLUGINS"
        in out.stderr
    )
    # leaving it out works
    out = subprocess.run(
        [sys.executable, "-c", code],
        env={**env, "OARLOCK_PLUGINS": "cpu"},
        capture_output=True,
        text=True,
        timeout=120,
        cwd=_root(),
    )
    assert out.returncode == 0 and "after" in out.stdout, out.stderr


def test_plugins_get_the_core_kernel_cache_through_the_registry():
    """The contract hands every plugin the core's kernel cache (``registry.program_cache``):
    the cpu plugin builds its own C through it, importing nothing of the core."""
    from adapter_api import ProgramCache
    from framework._src.plugins import host
    from plugins.cpu import compiler as cpu_compiler

    cache = PluginHost().registry.program_cache
    assert isinstance(cache, ProgramCache)
    assert cache is host().registry.program_cache
    assert cache is not fw.compiler.CACHE  # the generated kernels' statistics stay their own
    assert cpu_compiler._PROGRAM_CACHE is cache


# -- who may register what ---------------------------------------------------------------------
F32, F64 = np.dtype("float32"), np.dtype("float64")


def test_a_plugin_cannot_register_a_kernel_for_another_plugins_device():
    """A third plugin's add_kernel("exp", "cpu", ...) once made fw.exp return 42s unseen."""
    h = PluginHost()
    h.load_entry_points([ep("cpu", "plugins.cpu"), ep("hijack", "tests.plugins_for_tests.hijack")])
    err = h.records["hijack"].error
    assert "plugin 'hijack' registers kernel 'exp' (float32, float64) for device type 'cpu'" in err
    assert "owned by plugin 'cpu'" in err and "override=True" in err
    assert h.registry.kernels[("exp", "cpu", F32)].plugin == "cpu"
    assert h.registry.kernels[("exp", "cpu", F64)].plugin == "cpu"


def test_a_plugin_cannot_register_for_a_device_type_nobody_owns():
    from adapter_api import Registry

    reg = Registry()
    reg.plugin = "stray"
    with pytest.raises(ValueError, match=r"'stray' registers kernel 'add' .* 'ghost', which no plugin"):
        reg.add_kernel("add", "ghost", ["float32"], lambda ctx, outs, ins: None)
    with pytest.raises(ValueError, match=r"'stray' registers a compiler for device type 'ghost'"):
        reg.add_compiler("ghost", object)
    with pytest.raises(ValueError, match=r"'stray' registers a communicator for device type 'ghost'"):
        reg.add_communicator("ghost", object)
    assert not reg.kernels and not reg.compilers and not reg.communicators


@pytest.mark.parametrize("owner_first", [True, False])
def test_a_declared_override_wins_and_is_listed(owner_first):
    eps = [ep("cpu", "plugins.cpu"), ep("declared", "tests.plugins_for_tests.declared_override")]
    h = PluginHost()
    h.load_entry_points(eps if owner_first else eps[::-1])
    rec = h.records["declared"]
    assert rec.error is None
    assert rec.overrides == ["kernel 'exp' (float64) on cpu, owned by plugin 'cpu'"]
    assert h.registry.kernels[("exp", "cpu", F64)].plugin == "declared"  # whichever loaded first
    assert h.registry.kernels[("exp", "cpu", F32)].plugin == "cpu"
    assert h.records["cpu"].overrides == []


def _fake_install_many(tmp_path, plugins: dict[str, str]) -> dict:
    dist = tmp_path / "oarlock_test_many-0.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: oarlock-test-many\nVersion: 0.0\n")
    lines = "".join(f"{n} = {m}\n" for n, m in plugins.items())
    (dist / "entry_points.txt").write_text(f"[{GROUP}]\n{lines}")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), _root(), env.get("PYTHONPATH", "")])
    env.pop("OARLOCK_PLUGINS", None)
    env["OARLOCK_PLUGIN_IMPORT_TIMEOUT"] = "3"
    return env


def test_oarlock_devices_lists_overrides_and_a_plugin_whose_import_blocks(tmp_path):
    env = _fake_install_many(
        tmp_path,
        {
            "declared": "tests.plugins_for_tests.declared_override",
            "stuck": "tests.plugins_for_tests.blocking_import",
        },
    )
    out = _oarlock_devices(env, timeout=200)
    assert out.returncode == 0, out.stdout + out.stderr
    text = out.stdout
    # no version: no stray blanks, no "None"
    assert "plugin declared (tests.plugins_for_tests.declared_override), contract 1.0\n" in text, text
    assert "  overrides: kernel 'exp' (float64) on cpu, owned by plugin 'cpu'" in text
    stuck = text[text.index("plugin stuck") :]
    assert "FAILED TO LOAD" in stuck and "did not finish within 3 s" in stuck, stuck
    assert "OARLOCK_PLUGIN_IMPORT_TIMEOUT" in stuck


def test_fw_devices_does_not_hang_on_a_plugin_whose_import_blocks(tmp_path):
    env = _fake_install_many(tmp_path, {"stuck": "tests.plugins_for_tests.blocking_import"})
    code = (
        "import framework as fw\nprint('DEVICES', fw.devices())\n"
        "print('ERROR', fw.plugins()['stuck'].error.splitlines()[2])"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120, cwd=_root()
    )
    assert out.returncode == 0, out.stderr
    assert "DEVICES [Device('cpu:0')" in out.stdout
    assert "importing it did not finish within 3 s" in out.stdout, out.stdout


# -- outputs a kernel leaves unwritten ---------------------------------------------------------
def test_poisoned_outputs_show_the_elements_a_kernel_never_writes():
    from framework import testing

    fw.register_plugin("tests.plugins_for_tests.partial_writer", name="partial_writer")
    x = fw.to_tensor(np.linspace(-1, 1, 7, dtype=np.float32), device="halfw")
    testing.poison_outputs(True)
    try:
        got = fw.exp(x).numpy()
        ints = fw.cast(x, "int32").numpy()
    finally:
        testing.poison_outputs(False)
    np.testing.assert_allclose(got[:3], np.exp(np.linspace(-1, 1, 7, dtype=np.float32))[:3], rtol=1e-6)
    assert np.isnan(got[3:]).all()  # NaN, not whatever the memory held
    assert testing.unwritten(got).tolist() == [False] * 3 + [True] * 4
    assert (ints[3:] == np.int32(-1515870811)).all() and testing.unwritten(ints).sum() == 4
    # a NaN the kernel did write is not reported as unwritten
    assert not testing.unwritten(np.float32([np.nan]), np.float32([np.nan])).any()


def test_poisoned_outputs_from_the_environment():
    code = textwrap.dedent(
        """
        import numpy as np
        import framework as fw
        fw.register_plugin("tests.plugins_for_tests.partial_writer", name="partial_writer")
        print("GOT", np.isnan(fw.exp(fw.ones([4], device="halfw")).numpy()).tolist())
        """
    )
    env = dict(os.environ, OARLOCK_POISON_OUTPUTS="1")
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd=_root(), timeout=120
    )
    assert "GOT [False, False, True, True]" in out.stdout, out.stderr


def test_plugins_from_source_load_after_the_installed_ones(monkeypatch):
    """``OARLOCK_PLUGIN_PATHS`` (what ``oarlock conformance --plugin`` sets for every process of
    a run): a ``.py`` file loads as if installed, after the installed plugins it may build on."""
    path = os.path.join(_root(), "tests", "plugins_for_tests", "partial_writer.py")
    monkeypatch.setenv("OARLOCK_PLUGINS", "cpu")
    monkeypatch.setenv("OARLOCK_PLUGIN_PATHS", path)
    h = PluginHost()
    h.load_entry_points()
    rec = h.records["partial_writer"]
    assert rec.error is None and rec.loaded_from == path and rec.device_types == ["halfw"]
    assert list(h.records) == ["cpu", "partial_writer"]
    assert h.registry.kernels[("exp", "halfw", F32)].plugin == "partial_writer"
    monkeypatch.setenv("OARLOCK_PLUGIN_PATHS", os.path.join(_root(), "no_such_plugin.py"))
    h = PluginHost()
    h.load_entry_points()
    assert "no Python module at" in h.records["no_such_plugin"].error
