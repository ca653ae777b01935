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
from adapter_api.native import NativeLibrary, NativePlugin, NativeStagedCommunicator, NativeView, include_dir
from framework.testing import parse_device

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
    src.write_text(
        f'#define oarlock_plugin_init example_init\n#include "{SOURCE}"\n#undef oarlock_plugin_init\n'
        f"int oarlock_plugin_init(oarlock_plugin *p) {{\n  int s = example_init(p);\n  {after_init}\n"
        f"  return s;\n}}\n"
    )
    lib = tmp_path / f"{name}.so"
    subprocess.run(
        [
            CC,
            "-std=c11",
            "-O1",
            "-fPIC",
            "-shared",
            "-pthread",
            f"-I{include_dir()}",
            f"-I{FOLDER}",
            str(src),
            *GROUPS,
            "-o",
            str(lib),
            "-lm",
            "-lrt",
            "-ldl",
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    return str(lib)


def test_example_plugin_computes_through_the_public_api():
    _installed()
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((5, 70)).astype(np.float32), rng.standard_normal((70, 300)).astype(np.float32)
    x, y = fw.to_tensor(a, device="nativedev"), fw.to_tensor(b, device="nativedev")
    np.testing.assert_allclose(
        (x @ y).numpy(), a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5
    )  # threaded rows
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
    with pytest.raises(
        KernelNotFoundError, match=r"\[nativedev_t\] cast: cast to dtype code 1 is not supported"
    ):
        entry.fn(dispatch.context(x.device), [out], [x.native()], dtype=np.dtype("int8"))
    fw.reset_fallback_stats()
    with pytest.warns(UserWarning, match="cast"):
        h = x.astype("int8")
    np.testing.assert_array_equal(h.numpy(), np.arange(6, dtype=np.int8).reshape(2, 3))
    assert fw.fallback_stats() == {"cast@nativedev_t": 1}


# -- ABI 1.1: the optional groups --------------------------------------------------------------
@needs_cc
def test_a_partly_filled_optional_group_is_refused_naming_the_missing_entry(tmp_path):
    with pytest.raises(PluginError, match=r"fills 12 of the 13 collective entries .* leaves 'barrier' NULL"):
        NativeLibrary(_build(tmp_path, "no_barrier", "p->barrier = 0;"))
    with pytest.raises(PluginError, match=r"fills 6 of the 7 compile entries .* leaves 'free_program' NULL"):
        NativeLibrary(_build(tmp_path, "no_free_program", "p->free_program = 0;"))
    lib = NativeLibrary(
        _build(
            tmp_path,
            "neither",
            "p->comm_unique_id = 0; p->comm_create = 0; p->comm_destroy = 0; "
            "p->comm_set_timeout = 0; p->all_reduce = 0; p->reduce = 0; p->broadcast = 0; "
            "p->all_gather = 0; p->reduce_scatter = 0; p->all_to_all = 0; p->send = 0; "
            "p->recv = 0; p->barrier = 0; p->kernel_language = 0; p->compile = 0;"
            "p->compiler_identity = 0; p->free_binary = 0; p->load = 0; p->launch = 0; "
            "p->free_program = 0;",
        )
    )
    assert not lib.has_collectives and not lib.has_compiler


@needs_cc
def test_an_abi_1_0_library_still_loads_with_staged_collectives_and_no_compiler(tmp_path):
    """A 1.0 library knows nothing of the 1.1 entries: the loader reads them as NULL."""
    lib = _build(tmp_path, "abi10", 'p->abi_minor = 0; p->device_type = "nativedev_10";')
    plugin = NativePlugin(lib, name="nativedev_10")
    assert not plugin.library.has_collectives and not plugin.library.has_compiler
    assert plugin.oarlock_plugin_info()["native_abi"] == "1.0"
    fw.register_plugin(plugin, name="nativedev_10")
    from framework import compiler
    from framework._src.plugins import host

    reg = host().registry
    assert reg.communicators["nativedev_10"][1] is NativeStagedCommunicator
    assert "nativedev_10" not in reg.compilers and not compiler.has_compile_access("nativedev_10")
    x = fw.to_tensor(np.arange(4, dtype=np.float32), device="nativedev_10")
    np.testing.assert_array_equal((x * 2).numpy(), [0, 2, 4, 6])


def test_compile_access_builds_and_launches_c_on_offset_views():
    _installed()
    from framework import compiler

    assert compiler.has_compile_access("nativedev")
    comp = compiler.compiler_for(parse_device("nativedev"))
    assert comp.language == "c" and comp.identity().startswith("nativedev 0.1.0 | ")
    rng = np.random.default_rng(1)
    a = rng.standard_normal(70001).astype(np.float32)
    x = fw.to_tensor(a, device="nativedev")[1:]  # element 0 at byte offset 4
    y = compiler.run_trivial_kernel(x, 2.5, entry="oarlock_native_axpb")
    np.testing.assert_array_equal(y.numpy(), np.float32(2.5) * a[1:] + np.float32(1.0))
    src = (
        "#include <stdint.h>\nvoid twice(const double* restrict in0, double* restrict out0, int64_t rows) {\n"
        "    for (int64_t r = 0; r < rows; ++r) out0[r] = 2.0 * in0[r];\n}\n"
    )
    prog = compiler.compile_source(src, "twice", "nativedev")
    h = np.arange(10, dtype=np.float64)
    t, out = fw.to_tensor(h, device="nativedev"), fw.zeros((10,), dtype="float64", device="nativedev")
    compiler.launch(prog, [t, out, np.int64(6)], (6,), None, "nativedev")
    np.testing.assert_array_equal(out.numpy(), np.concatenate([2 * h[:6], np.zeros(4)]))
    with pytest.raises(OpArgumentError, match=r"\[nativedev\] launch: 'twice' takes 3 arguments .*got 2"):
        compiler.launch(prog, [t, out], (6,), None, "nativedev")


def test_a_compile_error_returns_the_compilers_log():
    _installed()
    from adapter_api import CompileError
    from framework import compiler

    src = "#include <stdint.h>\nvoid broken(float* y, int64_t rows) {\n    y[0] = oops_undeclared;\n}\n"
    with pytest.raises(CompileError) as info:
        compiler.compile_source(src, "broken", "nativedev")
    msg = str(info.value)
    assert "[nativedev] compile(broken): " in msg and "could not compile 'broken'" in msg
    assert "kernel.c:3:" in msg and "oops_undeclared" in msg and "error" in msg  # the compiler's own log
    assert "at line 3" in msg and ">> 3 |     y[0] = oops_undeclared;" in msg  # the core's excerpt from it
    with pytest.raises(CompileError, match=r"the source has no definition of 'absent'"):
        compiler.compile_source("void present(float* y) { }\n", "absent", "nativedev")


# -- collectives over shared memory, under 2 ranks ------------------------------------------------
def _mpi_or_skip() -> None:
    from tests.conftest import MPI_INSTALLED

    if not MPI_INSTALLED:
        pytest.skip("no MPI (pip install 'oarlock[dist]'): the host communicator carries the unique id")


def test_the_collectives_tier_passes_under_2_ranks():
    _installed()
    _mpi_or_skip()
    from framework.distributed.selfcheck import run_tier

    records = run_tier("nativedev", (2,), timeout=300)
    bad = [f"rank {r['rank']} {r['name']}: {r.get('detail', '')}" for r in records if not r["ok"]]
    assert not bad, "\n".join(bad[:10])
    names = {r["name"].split("/")[0] for r in records}
    assert {
        "all_reduce",
        "reduce",
        "reduce_scatter",
        "all_gather",
        "broadcast",
        "alltoall",
        "send_recv",
        "new_group",
        "reshard",
    } <= names


RANK_SCRIPT = """
import json, sys
import numpy as np
import framework as fw
import framework.distributed as dist
from adapter_api import CommunicationError

# debug=False: the last call below is made by rank 0 alone, on purpose; the default shape and
# dtype check (a host all-gather) would meet the missing peer first, and this tests the plugin's own
dist.init_parallel_env(debug=False)
rank, n = dist.get_rank(), dist.get_world_size()
out = {}
T = lambda a: fw.to_tensor(a, device="nativedev")
data = lambda r, k, dt=np.float32: (np.arange(k) % 97 + r).astype(dt)
big = 300_001  # 1.2 MB of float32: several 256 KiB slots, and 64 KiB mailboxes
x = T(data(rank, big))
dist.all_reduce(x)
out["all_reduce"] = bool(np.array_equal(x.numpy(), sum(data(r, big) for r in range(n))))
y = T(data(rank, big, np.int64))
dist.all_reduce(y, op="max")
out["all_reduce_max"] = bool(np.array_equal(y.numpy(), data(n - 1, big, np.int64)))
b = T(data(rank, big, np.float64))
dist.broadcast(b, src=1)
out["broadcast"] = bool(np.array_equal(b.numpy(), data(1, big, np.float64)))
got = []
dist.all_gather(got, T(data(rank, 100_003)))
out["all_gather"] = all(np.array_equal(got[r].numpy(), data(r, 100_003)) for r in range(n))
rs = T(np.zeros(100_003, np.float32))
dist.reduce_scatter(rs, T(data(rank, 100_003 * n)), op="avg")
want = sum(data(r, 100_003 * n).astype(np.float64) for r in range(n)) / n
out["reduce_scatter"] = bool(np.array_equal(rs.numpy(), want[rank * 100_003:(rank + 1) * 100_003].astype(np.float32)))
s_in = T(np.concatenate([data(rank * n + j, 90_001) for j in range(n)]))
s_out = T(np.zeros(90_001 * n, np.float32))
dist.alltoall_single(s_in, s_out)
out["alltoall"] = bool(np.array_equal(s_out.numpy(), np.concatenate([data(i * n + rank, 90_001) for i in range(n)])))
msg = T(data(rank, 50_000, np.float64))
box = T(np.zeros(50_000, np.float64))
if rank == 0:
    dist.send(msg, dst=1)
    dist.recv(box, src=1)
else:
    dist.recv(box, src=0)
    dist.send(msg, dst=0)
out["send_recv"] = bool(np.array_equal(box.numpy(), data(1 - rank, 50_000, np.float64)))
# a peer that never comes: rank 0 waits 2 s on a fresh group's communicator, then is told who is missing
g = dist.new_group([0, 1])
z = T(np.ones(3, np.float32))
dist.all_reduce(z, group=g)
out["comm"] = type(g.communicator(z.device)).__name__
g.communicator(z.device).timeout = 2.0
if rank == 0:
    try:
        dist.all_reduce(z, group=g)
        out["timeout"] = "no error"
    except CommunicationError as exc:
        out["timeout"] = str(exc)
dist.barrier()  # the host (MPI) communicator: rank 1 stays until rank 0 has given up
with open(f"{sys.argv[1]}/rank{rank}.json", "w") as f:
    json.dump(out, f)
"""


def test_large_collectives_run_on_the_plugins_own_communicator_and_a_missing_peer_is_named(tmp_path):
    """Sizes past one shared-memory slot and one mailbox (the chunked paths), on the plugin's
    NativeCommunicator (not host-staged), and a timeout naming the rank that never came."""
    _installed()
    _mpi_or_skip()
    import json

    from framework.distributed import launch

    script = tmp_path / "ranks.py"
    script.write_text(RANK_SCRIPT)
    proc = launch.run([str(script), str(tmp_path)], 2, timeout=240, collective_timeout=60, cwd=str(tmp_path))
    results = []
    for r in range(2):
        path = tmp_path / f"rank{r}.json"
        assert path.exists(), f"rank {r} wrote no result (exit {proc.returncode}):\n{proc.stdout[-3000:]}"
        results.append(json.loads(path.read_text()))
    for r, res in enumerate(results):
        assert res["comm"] == "NativeCommunicator", res
        failed = [k for k, v in res.items() if v is False]
        assert not failed, f"rank {r}: {failed}"
    assert (
        "[nativedev] all_reduce(sum): rank(s) 1 did not arrive within 2 s (rank 0 waited)"
        in results[0]["timeout"]
    )


def test_the_compile_tier_runs_on_the_plugins_own_compiler(tmp_path):
    """The compile tier is not "not run" for nativedev: its compile entries are the compiler."""
    _installed()
    import json
    import sys

    report = tmp_path / "compile.json"
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "framework.cli",
            "conformance",
            "--device",
            "nativedev",
            "--strict",
            "--tier",
            "compile",
            "--json",
            str(report),
            "-q",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    data = json.loads(report.read_text())
    assert data["unavailable_tiers"] == {} and data["failed_tiers"] == []
    outcomes = {r["id"]: r["outcome"] for r in data["results"]}
    assert (
        outcomes["compile/compile_error"] == "passed" and outcomes["compile/generated[softmax]"] == "passed"
    )
    assert len(outcomes) >= 10 and set(outcomes.values()) == {"passed"}


def test_a_native_plugin_gathers_negative_indices_through_contract_1_1(tmp_path):
    """The C ABI's gather takes no ``wrap`` (contract 1.2): a native plugin declares 1.1, so
    fw.gather wraps a negative index before calling it (numpy's take, Paddle's rule)."""
    lib = _build(tmp_path, "wrapnative", 'p->device_type = "nativedev_w";')
    fw.register_plugin(NativePlugin(lib, name="nativedev_w"), name="nativedev_w")
    assert fw.plugins()["nativedev_w"].contract == (1, 1)
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    idx = np.array([-1, 0, -4, 3])
    got = fw.gather(fw.to_tensor(x, device="nativedev_w"), fw.to_tensor(idx, device="nativedev_w"))
    np.testing.assert_array_equal(got.numpy(), np.take(x, idx, 0))
    with pytest.raises(IndexError, match=r"^\[gather\] index -5 is out of range .*\[-4, 4\)"):
        fw.gather(fw.to_tensor(x, device="nativedev_w"), fw.to_tensor([0, -5], device="nativedev_w")).numpy()
