"""Eager generated kernels with broadcast inputs and constants (framework.compiler.capture):
rotary embedding as one kernel forward and one backward, its (seq, dim) tables read through
an index expression under (batch, heads, seq, dim) rows, its sign a constant the kernel
reads; a broadcast value read at another shape is refused (the composite decomposes); and
split's eager parts as views of their input."""

from __future__ import annotations

import numpy as np
import pytest

import framework as fw
import framework.nn.functional as F
from framework import compiler
from framework.compiler import eager
from framework.compiler.capture import NotFusible, trace

from .test_compiler import _cache_dir  # noqa: F401 — the module's own kernel cache folder


def _tables(seq: int, d: int, dtype: str) -> tuple[np.ndarray, np.ndarray]:
    inv = 10000.0 ** (-np.arange(0, d, 2, dtype=np.float64) / d)
    fr = np.arange(seq, dtype=np.float64)[:, None] * inv[None]
    emb = np.concatenate([fr, fr], -1)
    return np.cos(emb).astype(dtype), np.sin(emb).astype(dtype)


def _ref(x: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> np.ndarray:
    h = x.shape[-1] // 2
    return x * cos + np.concatenate([-x[..., h:], x[..., :h]], -1) * sin


def _ref_grad(g: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> np.ndarray:
    """d/dx sum(g * rotary(x)): g cos + the rotation's transpose of g sin."""
    gs = np.broadcast_to(g * sin, g.shape)
    h = g.shape[-1] // 2
    return g * cos + np.concatenate([gs[..., h:], -gs[..., :h]], -1)


def _paths(op: str, device: str) -> dict[str, int]:
    return dict(fw.op_path_stats().get(f"{op}@{device.split(':')[0]}", {}))


@pytest.mark.parametrize("dtype,tol", [("float32", 1e-6), ("float64", 1e-14)])
@pytest.mark.parametrize("table", ["seq_dim", "leading_ones", "per_batch"])
def test_rotary_is_one_generated_kernel_forward_and_backward(dev, dtype, tol, table):
    r = np.random.default_rng(0)
    b, heads, seq, d = 2, 3, 5, 8
    x = r.standard_normal((b, heads, seq, d)).astype(dtype)
    cos, sin = _tables(seq, d, dtype)
    if table == "leading_ones":
        cos, sin = cos[None, None], sin[None, None]
    elif table == "per_batch":  # one table per batch element, shared by the heads
        cos = np.stack([cos, cos[::-1]])[:, None]
        sin = np.stack([sin, -sin])[:, None]
    xt = fw.to_tensor(x, device=dev)
    xt.stop_gradient = False
    ct, st = fw.to_tensor(cos, device=dev), fw.to_tensor(sin, device=dev)
    before = _paths("rotary_embedding", dev).get("generated", 0)
    key = f"rotary_embedding@{dev.split(':')[0]}"
    bw_before = eager.BACKWARD_PATHS.get(key, {"generated": 0})["generated"]
    y = F.rotary_embedding(xt, ct, st)
    assert _paths("rotary_embedding", dev)["generated"] == before + 1
    np.testing.assert_allclose(y.numpy(), _ref(x, cos, sin), rtol=tol, atol=tol)
    g = r.standard_normal(x.shape).astype(dtype)
    (gx,) = fw.grad([y], [xt], [fw.to_tensor(g, device=dev)])
    assert eager.BACKWARD_PATHS[key]["generated"] == bw_before + 1
    np.testing.assert_allclose(gx.numpy(), _ref_grad(g, cos, sin), rtol=tol, atol=tol)


def test_rotary_gradient_matches_finite_differences(dev):
    r = np.random.default_rng(1)
    x = r.standard_normal((1, 2, 3, 4))
    cos, sin = _tables(3, 4, "float64")
    g = r.standard_normal(x.shape)
    xt = fw.to_tensor(x, device=dev)
    xt.stop_gradient = False
    y = F.rotary_embedding(xt, fw.to_tensor(cos, device=dev), fw.to_tensor(sin, device=dev))
    (gx,) = fw.grad([y], [xt], [fw.to_tensor(g, device=dev)])
    eps, num = 1e-6, np.zeros_like(x)
    for i in np.ndindex(x.shape):
        hi, lo = x.copy(), x.copy()
        hi[i] += eps
        lo[i] -= eps
        num[i] = ((_ref(hi, cos, sin) - _ref(lo, cos, sin)) * g).sum() / (2 * eps)
    np.testing.assert_allclose(gx.numpy(), num, rtol=1e-7, atol=1e-8)


def test_one_rotary_kernel_serves_every_batch(dev):
    cos, sin = (fw.to_tensor(t, device=dev) for t in _tables(6, 8, "float32"))
    F.rotary_embedding(fw.to_tensor(np.ones((1, 2, 6, 8), np.float32), device=dev), cos, sin)
    compiles = compiler.cache_stats()["compiles"]
    for batch in (3, 7):
        x = np.random.default_rng(batch).standard_normal((batch, 2, 6, 8)).astype(np.float32)
        y = F.rotary_embedding(fw.to_tensor(x, device=dev), cos, sin)
        np.testing.assert_allclose(y.numpy(), _ref(x, cos.numpy(), sin.numpy()), rtol=1e-6, atol=1e-6)
    assert compiler.cache_stats()["compiles"] == compiles


def test_rotary_tables_larger_than_x_decompose_with_the_broadcast_shape():
    """x broadcast up to the tables' shape: no kernel has rows of the output; the
    decomposition gives numpy's broadcast result."""
    x = np.random.default_rng(2).standard_normal((5, 8)).astype(np.float32)
    cos, sin = _tables(5, 8, "float32")
    cos3, sin3 = np.stack([cos, 2 * cos]), np.stack([sin, sin])
    y = F.rotary_embedding(fw.to_tensor(x), fw.to_tensor(cos3), fw.to_tensor(sin3))
    assert y.shape == (2, 5, 8)
    np.testing.assert_allclose(y.numpy(), _ref(x, cos3, sin3), rtol=1e-6, atol=1e-6)


def test_rotary_bad_input_is_named():
    with pytest.raises(fw.OpArgumentError, match=r"\[rotary_embedding\] the last dim of x must be even"):
        F.rotary_embedding(fw.ones([2, 5]), fw.ones([2, 5]), fw.ones([2, 5]))
    with pytest.raises(fw.OpArgumentError, match=r"\[rotary_embedding\] cos must be a Tensor, got ndarray"):
        F.rotary_embedding(fw.ones([2, 4]), np.ones((2, 4)), fw.ones([2, 4]))
    with pytest.raises(fw.OpArgumentError, match="rotary_embedding"):
        F.rotary_embedding(fw.ones([2, 4]), fw.ones([3, 4]), fw.ones([2, 4]))


# -- the tracer's broadcast rule ------------------------------------------------------------
def _sym_trace(fn, shapes):
    ins = [fw.ones(list(s)) for s in shapes]
    return trace("t", fn, ins, {}, consts=[])


def test_a_broadcast_input_is_read_through_its_index_expression():
    prog, metas = _sym_trace(lambda x, t: x * (t * 2.0), [(2, 3, 4, 8), (4, 8)])
    assert metas == [((2, 3, 4, 8), np.dtype(np.float32))]
    assert prog.loads == {1: "((r / 1) % 4) * 8 + j"}
    # expanded to the rows first, the same value
    prog2, _ = _sym_trace(lambda x, t: x * t.expand([2, 3, 4, 8]), [(2, 3, 4, 8), (4, 8)])
    assert prog2.loads == prog.loads


def test_a_broadcast_value_read_at_another_shape_is_refused():
    """(4, 8) under (2, 4, 4, 8) rows is read along axis 2; reshaped to (4, 1, 8) it would
    broadcast along axis 1, other elements: the tracer refuses, the composite decomposes."""
    with pytest.raises(NotFusible, match=r"broadcast value of shape \(1, 1, 4, 8\) is used as \(4, 1, 8\)"):
        _sym_trace(lambda x, t: x * t.reshape([4, 1, 8]), [(2, 4, 4, 8), (4, 8)])
    with pytest.raises(NotFusible, match="broadcast value"):
        _sym_trace(lambda x, t: x + (t * 3.0).reshape([4, 1, 8]), [(2, 4, 4, 8), (4, 8)])


def test_a_value_of_a_kind_reshaped_across_axes_is_refused():
    """A ``(C,)`` input is read along the row under ``(N, C, H, W)`` rows when ``C == W``;
    reshaped to ``(1, C, 1, 1)`` it broadcasts along the channels: read at the column it
    would give the wrong elements (it did: a to_static BatchNorm with C == W was 10 off)."""
    with pytest.raises(NotFusible, match=r"shape \(1, 4, 1, 1\) does not fit"):
        trace(
            "t",
            lambda x, s: x * s.reshape([1, 4, 1, 1]),
            [fw.ones([2, 4, 4, 4]), fw.ones([4])],
            {},
            group=True,
        )


@pytest.mark.parametrize("shape", [(2, 4, 4, 4), (2, 16, 16, 16), (2, 16, 8, 8), (3, 5, 2, 5)])
def test_a_per_channel_affine_under_to_static_equals_numpy_and_fuses(dev, shape):
    r = np.random.default_rng(0)
    x = r.standard_normal(shape).astype(np.float32)
    s, b = r.standard_normal((2, shape[1])).astype(np.float32)

    @fw.jit.to_static
    def f(x, s, b):
        return (x - b.reshape([1, -1, 1, 1])) * s.reshape([1, -1, 1, 1]) + b.reshape([1, -1, 1, 1])

    from framework.ir import passes

    before = passes.fusion_stats()["groups"]
    got = f(*(fw.to_tensor(a, device=dev) for a in (x, s, b))).numpy()
    want = (x - b.reshape(1, -1, 1, 1)) * s.reshape(1, -1, 1, 1) + b.reshape(1, -1, 1, 1)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    assert passes.fusion_stats()["groups"] == before + 1


def test_a_sum_over_rows_of_a_broadcast_value_is_refused():
    """A weight-gradient sum over leading axes only applies to full rows."""
    with pytest.raises(NotFusible):
        _sym_trace(lambda x, t: (x * t).sum(axis=[0, 1]) + t.sum(axis=[0]), [(2, 4, 8), (4, 8)])


def test_a_concrete_constant_becomes_a_further_input():
    c = fw.to_tensor(np.arange(8, dtype=np.float32))
    consts: list = []
    prog, _ = trace("t", lambda x: x * c, [fw.ones([3, 8])], {}, consts=consts)
    assert consts == [c] and len(prog.inputs) == 2
    with pytest.raises(NotFusible, match="concrete tensor"):
        trace("t", lambda x: x * c, [fw.ones([3, 8])], {})


# -- split's views --------------------------------------------------------------------------
@pytest.mark.parametrize("shape,axis", [((6, 4, 3), 0), ((1, 6, 5), 1), ((2, 6, 3), 1)])
def test_split_parts_values_gradients_and_independence(device, shape, axis):
    """Parts of a contiguous range are views in eager mode; every part has its values and
    gradient, and rebinding the input in place later leaves the parts as they were."""
    r = np.random.default_rng(3)
    xn = r.standard_normal(shape).astype(np.float32)
    x = fw.to_tensor(xn, device=device)
    x.stop_gradient = False
    y = x * 1.0
    parts = fw.split(y, [1, 3, 2], axis=axis)
    for p, want in zip(parts, np.split(xn, [1, 4], axis=axis)):
        np.testing.assert_array_equal(p.numpy(), want)
    gs = [r.standard_normal(p.shape).astype(np.float32) for p in parts]
    loss = sum(
        ((p * fw.to_tensor(g, device=device)).sum() for p, g in zip(parts, gs)), fw.zeros([]).to(device)
    )
    loss.backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.concatenate(gs, axis=axis))
    with fw.no_grad():
        y[...] = 7.0
    for p, want in zip(parts, np.split(xn, [1, 4], axis=axis)):
        np.testing.assert_array_equal(p.numpy(), want)


def test_rotary_programs_emit_for_every_language(tmp_path):
    """The forward and backward programs of rotary (broadcast loads, the sign as a further
    input, rotated reads) emit C, OpenCL C and CUDA; the CUDA source passes a C++ syntax check
    under the test shim (no GPU here)."""
    import shutil
    import subprocess

    from framework._src.ops.base import OPS

    from .test_compiler import _CUDA_SHIM

    make_kernel = eager.make_kernel
    x = fw.ones([2, 3, 5, 8])
    cos, sin = (fw.to_tensor(t) for t in _tables(5, 8, "float32"))
    op = OPS["rotary_embedding"]
    consts: list = []
    prog, _ = trace(op.name, op.decomposition, [x, cos, sin], {}, consts=consts)
    assert len(consts) == 1 and len(prog.inputs) == 4 and sorted(prog.loads) == [1, 2]
    for lang in ("c", "opencl-c", "opencl-c/cpu", "cuda"):
        src = make_kernel(prog, lang).source
        assert "% 5) * 8 + j" in src, lang
    cxx = shutil.which("g++") or shutil.which("clang++")
    if cxx is None:
        pytest.skip("no C++ compiler")
    f = tmp_path / "k.cpp"
    f.write_text(_CUDA_SHIM + make_kernel(prog, "cuda").source)
    r = subprocess.run([cxx, "-fsyntax-only", "-std=c++17", str(f)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
