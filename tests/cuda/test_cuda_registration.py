"""The CUDA plugin registers everything without touching cupy or a device."""

from __future__ import annotations

import subprocess
import sys

import numpy as np

import plugins.cuda as cuda_plugin
from adapter_api import CONTRACT_VERSION, PRIMITIVES, Registry, check_contract
from plugins.cuda.kernels import BF16, KERNELS


def _registry() -> Registry:
    registry = Registry(plugin="cuda")
    cuda_plugin.oarlock_register(registry)
    return registry


def test_contract_matches():
    assert check_contract("cuda", cuda_plugin.CONTRACT) == CONTRACT_VERSION


def test_registers_runtime_compiler_communicator():
    registry = _registry()
    assert registry.runtimes["cuda"] == ("cuda", cuda_plugin.CUDARuntime)
    assert registry.compilers["cuda"][1] is cuda_plugin.CUDACompiler
    assert registry.communicators["cuda"][1] is cuda_plugin.NCCLCommunicator


def test_every_primitive_registered_for_the_dtypes_claimed():
    registry = _registry()
    claimed = {(s.op, np.dtype(d)) for s in KERNELS for d in s.dtypes}
    registered = {(op, dt) for (op, dev, dt) in registry.kernels if dev == "cuda"}
    assert claimed == registered
    ops = {op for op, _ in registered}
    assert ops == set(PRIMITIVES), f"missing {set(PRIMITIVES) - ops}, unknown {ops - set(PRIMITIVES)}"
    # float32 runs every primitive except the bool-only ones.
    bool_only = {"logical_not", "logical_and", "logical_or"}
    for op in set(PRIMITIVES) - bool_only:
        assert (op, np.dtype("float32")) in registered, op
    for op in bool_only:
        assert (op, np.dtype(bool)) in registered, op


def test_core_dtypes_covered():
    registry = _registry()
    for name in ("float32", "float64", "float16", "int32", "int64", "uint8", "bool"):
        dt = np.dtype(name)
        for op in (
            "copy",
            "where",
            "cast",
            "permute",
            "expand",
            "slice",
            "concat",
            "gather",
            "scatter",
            "full",
        ):
            assert ("" + op, "cuda", dt) in registry.kernels, (op, name)
    # bfloat16: registered where the float32 detour is exact to the spec
    for op in ("add", "matmul", "exp", "sum", "cast", "gather", "copy"):
        assert (op, "cuda", BF16) in registry.kernels
    assert ("philox_uniform", "cuda", BF16) not in registry.kernels


def test_elementwise_kernels_broadcast():
    registry = _registry()
    for (op, _, _), entry in registry.kernels.items():
        family = PRIMITIVES[op].family
        assert entry.broadcast == (family in ("unary", "binary", "compare", "logical", "select")), op
        assert entry.plugin == "cuda"


def test_import_and_register_do_not_import_cupy():
    code = (
        "import sys\n"
        "import plugins.cuda as c\n"
        "from adapter_api import Registry\n"
        "c.oarlock_register(Registry())\n"
        "c.oarlock_plugin_info()\n"
        "assert not any(m == 'cupy' or m.startswith(('cupy.', 'cupyx')) for m in sys.modules), 'cupy imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_core_caching_allocator_pools_cuda_memory():
    """The core's cache, not a pass-through, sits over CUDARuntime: a freed tensor's block is
    served again without a second cudaMalloc. The runtime's raw allocate/free need a GPU, so
    here they are host bytearrays (the caching decision under test is the core's)."""
    from framework._src.allocator import CachingAllocator
    from plugins.cuda import CUDARuntime

    class HostBackedCUDARuntime(CUDARuntime):
        raw = 0

        def allocate(self, index, nbytes):
            self.raw += 1
            return bytearray(nbytes)

        def free(self, index, buffer):
            self.raw -= 1

    rt = HostBackedCUDARuntime()
    cache = CachingAllocator(rt, 0, "cuda:0")
    assert not cache.passthrough
    block = cache.malloc(1 << 20)
    handle = block.handle
    del block
    stats = cache.stats()
    assert stats["allocated_bytes"] == 0 and stats["reserved_bytes"] == 1 << 20
    again = cache.malloc(1 << 20)
    assert again.handle is handle and rt.raw == 1 and cache.stats()["num_cache_hits"] == 1
    del again
    cache.empty_cache()
    assert rt.raw == 0 and cache.stats()["reserved_bytes"] == 0
