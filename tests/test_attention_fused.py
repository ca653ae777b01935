"""The cpu plugin's fused attention (``attention`` and its gradient ``attention_grad`` in C,
plugins/cpu/attention.c) against float64 numpy references: outputs, first and second
gradients, the shapes the kernel pads (head dims off the vector width, more or fewer keys than
queries), the inputs it hands to its numpy path (masks, heads that broadcast, strided views),
and the same step under to_static."""

from __future__ import annotations

import numpy as np
import pytest

import framework as fw
import framework.nn.functional as F
from framework import testing

pytestmark = pytest.mark.skipif(
    testing.find_kernel("attention", "cpu", "float32") is None,
    reason="no C compiler: the cpu plugin registers no fused attention",
)


def ref(q, k, v, do, scale, causal, mask=None):
    """(o, dq, dk, dv) in float64: softmax(q k^T * scale [mask] [causal]) v and its gradients."""
    q, k, v, do = (np.asarray(a, np.float64) for a in (q, k, v, do))
    s = (q * scale) @ np.swapaxes(k, -1, -2)
    if mask is not None:
        s = np.where(mask, s, -np.inf) if mask.dtype == np.bool_ else s + mask
    lq, lk = s.shape[-2:]
    if causal:
        s = np.where(np.arange(lk)[None, :] <= np.arange(lq)[:, None] + (lk - lq), s, -np.inf)
    with np.errstate(invalid="ignore"):
        e = np.exp(s - s.max(-1, keepdims=True))
        p = e / e.sum(-1, keepdims=True)
        o = p @ v
        dp = do @ np.swapaxes(v, -1, -2)
        ds = p * (dp - (p * dp).sum(-1, keepdims=True))
    dq = ds @ k * scale
    dk = np.swapaxes(ds, -1, -2) @ (q * scale)
    dv = np.swapaxes(p, -1, -2) @ do

    def to(g, shape):  # summed back over broadcast heads
        lead = g.ndim - len(shape)
        axes = tuple(range(lead)) + tuple(
            i + lead for i, n in enumerate(shape) if n == 1 and g.shape[i + lead] != 1
        )
        return g.sum(axis=axes, keepdims=True).reshape(shape) if axes else g

    return o, to(dq, q.shape), to(dk, k.shape), to(dv, v.shape)


def run(q, k, v, do, causal, mask=None, view=None):
    ts = [fw.to_tensor(a, stop_gradient=False) for a in (q, k, v)]
    ins = [t if view is None else view(t) for t in ts]
    m = None if mask is None else fw.to_tensor(mask)
    o = F.attention(*ins, attn_mask=m, is_causal=causal)
    grads = fw.grad([o], ts, grad_outputs=[fw.to_tensor(do)])
    return [o.numpy(), *(g.numpy() for g in grads)]


def check(got, want, dtype):
    tol = {"float32": 2e-5, "float64": 1e-12}[np.dtype(dtype).name]
    for g, w, name in zip(got, want, ("o", "dq", "dk", "dv")):
        assert g.shape == w.shape, name
        np.testing.assert_array_equal(np.isnan(g), np.isnan(w), err_msg=f"NaN pattern of {name}")
        scale = max(1.0, float(np.nanmax(np.abs(w)))) if np.isfinite(w).any() else 1.0
        np.testing.assert_allclose(
            np.nan_to_num(g), np.nan_to_num(w), rtol=tol, atol=tol * scale, err_msg=name
        )


SHAPES = [
    # (q shape, lk, dv, causal)
    ((2, 3, 5, 4), 5, 4, True),
    ((2, 3, 7, 3), 9, 5, True),  # head dims off the vector width, more keys than queries
    ((2, 2, 33, 16), 33, 16, False),
    ((1, 1, 70, 24), 70, 20, True),  # several blocks of rows, a partial last one
    ((16, 4, 64, 16), 64, 16, True),  # the tiny Llama's heads
    ((3, 6, 8), 6, 8, False),  # one batch axis
    ((2, 1, 2, 5, 8), 5, 8, True),  # three batch axes
    ((2, 2, 128, 64), 128, 64, False),  # a TransformerEncoderLayer's heads (d 256, 4 heads)
    ((1, 2, 37, 40), 45, 72, True),  # 4-vector column blocks and a remainder, ragged rows
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(
    "shape", SHAPES, ids=lambda s: "x".join(map(str, s[0])) + f"-k{s[1]}v{s[2]}{'c' if s[3] else ''}"
)
def test_fused_attention_and_its_gradients_match_numpy(shape, dtype):
    qs, lk, dv, causal = shape
    rng = np.random.default_rng(len(qs) * 100 + qs[-1])
    q = rng.standard_normal(qs).astype(dtype)
    k = rng.standard_normal((*qs[:-2], lk, qs[-1])).astype(dtype)
    v = rng.standard_normal((*qs[:-2], lk, dv)).astype(dtype)
    do = rng.standard_normal((*qs[:-1], dv)).astype(dtype)
    check(run(q, k, v, do, causal), ref(q, k, v, do, 1 / np.sqrt(qs[-1]), causal), dtype)


def test_queries_that_see_no_key_give_nan_as_the_decomposition():
    # causal with more queries than keys: the first two queries see no key (softmax of
    # nothing); their outputs and query gradients are NaN, the others are finite
    rng = np.random.default_rng(3)
    q, do = (rng.standard_normal((1, 2, 6, 8)) for _ in range(2))
    k, v = (rng.standard_normal((1, 2, 4, 8)) for _ in range(2))
    o, dq, dk, dv = run(q, k, v, do, True)
    want = ref(q, k, v, do, 1 / np.sqrt(8), True)
    assert np.isnan(o[..., :2, :]).all() and np.isfinite(o[..., 2:, :]).all()
    assert np.isnan(dq[..., :2, :]).all()
    np.testing.assert_allclose(o[..., 2:, :], want[0][..., 2:, :], rtol=1e-12)
    np.testing.assert_allclose(dq[..., 2:, :], want[1][..., 2:, :], rtol=1e-12)


def test_attention_over_no_keys_is_an_error_naming_the_op():
    q = fw.to_tensor(np.ones((2, 3, 4, 8), np.float32))
    k = fw.to_tensor(np.ones((2, 3, 0, 8), np.float32))
    with pytest.raises(fw.OpArgumentError, match=r"\[attention\] key \(2, 3, 0, 8\) has no positions"):
        F.attention(q, k, k, is_causal=True)
    with pytest.raises(fw.OpArgumentError, match=r"\[scaled_dot_product_attention\] key"):
        F.scaled_dot_product_attention(q, k.transpose((0, 2, 1, 3)), k.transpose((0, 2, 1, 3)))


@pytest.mark.parametrize("kind", ["bool mask", "additive mask", "broadcast heads", "strided views"])
def test_inputs_the_kernel_hands_to_numpy(kind):
    rng = np.random.default_rng(7)
    q, do = (rng.standard_normal((2, 3, 5, 8)).astype(np.float32) for _ in range(2))
    k, v = (rng.standard_normal((2, 3, 6, 8)).astype(np.float32) for _ in range(2))
    mask = view = None
    if kind == "bool mask":
        mask = rng.random((2, 1, 5, 6)) < 0.7
        mask[..., 0] = True  # every query sees a key
    elif kind == "additive mask":
        mask = rng.standard_normal((5, 6)).astype(np.float32)
    elif kind == "broadcast heads":
        k, v = k[:, :1], v[:, :1]  # one key/value head for three query heads
    else:

        def view(t):  # the same values through a transposed view: not contiguous
            return t.transpose((0, 2, 1, 3)).transpose((0, 2, 1, 3))

    check(run(q, k, v, do, False, mask, view), ref(q, k, v, do, 1 / np.sqrt(8), False, mask), "float32")


def test_an_additive_mask_that_learns_gets_its_gradient():
    # the fused gradient covers q, k and v; a float mask that needs a gradient (a learned
    # position bias) is differentiated through the decomposition: d mask = ds
    rng = np.random.default_rng(9)
    q, k, v, do = (rng.standard_normal((2, 2, 5, 4)) for _ in range(4))
    bias = rng.standard_normal((5, 5))
    ts = [fw.to_tensor(a, stop_gradient=False) for a in (q, k, v, bias)]
    o = F.attention(*ts[:3], attn_mask=ts[3])
    got = [t.numpy() for t in fw.grad([o], ts, grad_outputs=[fw.to_tensor(do)])]

    def out(bias_):
        return ref(q, k, v, do, 0.5, False, bias_)[0]

    want = ref(q, k, v, do, 0.5, False, bias)[1:]
    for g, w in zip(got[:3], want):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(got[3], testing.finite_difference(out, [bias], 0, do), rtol=1e-6, atol=1e-8)


def test_the_gradient_composite_decomposes_to_what_the_kernel_computes():
    # attention_grad run as its decomposition (the kernels off) and as the fused kernel
    rng = np.random.default_rng(11)
    q, k, v, do = (fw.to_tensor(rng.standard_normal((2, 2, 7, 5))) for _ in range(4))
    attrs = {"causal": True, "scale": 0.4}
    fused = [t.numpy() for t in testing.run_op("attention_grad", [q, k, v, do], attrs)]
    with testing.kernels_removed("attention", "attention_grad"):
        assert testing.find_kernel("attention_grad", "cpu", "float64") is None
        dec = [t.numpy() for t in testing.run_op("attention_grad", [q, k, v, do], attrs)]
    want = ref(q.numpy(), k.numpy(), v.numpy(), do.numpy(), 0.4, True)[1:]
    for a, b, w in zip(fused, dec, want):
        np.testing.assert_allclose(a, w, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(b, w, rtol=1e-12, atol=1e-12)


def test_second_derivatives_through_the_fused_gradient():
    # d/dq of sum(dL/dv * w2), L = sum(attention(q, k, v) * w1): the fused gradient's own
    # gradient (its decomposition re-run under autograd) against finite differences
    rng = np.random.default_rng(5)
    q, k, v = (rng.standard_normal((1, 2, 4, 3)) for _ in range(3))
    w1, w2 = rng.standard_normal((1, 2, 4, 3)), rng.standard_normal((1, 2, 4, 3))

    def dv_of(qa):
        qt, kt, vt = (fw.to_tensor(a, stop_gradient=False) for a in (qa, k, v))
        o = F.attention(qt, kt, vt, is_causal=True)
        (gv,) = fw.grad([o], [vt], grad_outputs=[fw.to_tensor(w1)], create_graph=True)
        return qt, gv

    qt, gv = dv_of(q)
    (gq,) = fw.grad([gv], [qt], grad_outputs=[fw.to_tensor(w2)])
    num = testing.finite_difference(lambda qa: dv_of(qa)[1].numpy(), [q], 0, w2)
    np.testing.assert_allclose(gq.numpy(), num, rtol=1e-6, atol=1e-8)


def test_a_static_training_step_runs_the_fused_ops_and_matches_eager():
    rng = np.random.default_rng(2)
    data = [rng.standard_normal((2, 2, 8, 4)).astype(np.float32) for _ in range(3)]
    w = fw.to_tensor(rng.standard_normal((2, 2, 8, 4)).astype(np.float32))

    def loss_and_grads(q, k, v):
        ts = [fw.to_tensor(a, stop_gradient=False) for a in (q, k, v)]
        loss = (F.attention(*ts, is_causal=True) * w).sum()
        return [loss, *fw.grad([loss], ts)]

    eager = [t.numpy() for t in loss_and_grads(*data)]
    static = fw.jit.to_static(lambda q, k, v: loss_and_grads(q, k, v))
    got = [t.numpy() for t in static(*(fw.to_tensor(a) for a in data))]
    for g, e in zip(got, eager):
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)
    cp = static.programs[0]
    text = str(cp.program) + (str(cp.backward.program) if cp.backward is not None else "")
    assert "op.attention(" in text and "op.attention_grad(" in text, text


_ASAN_CHILD = r"""
import itertools, sys
import numpy as np, cffi
ffi = cffi.FFI()
fwd = "(const void*, const void*, const void*, void*, int64_t, int64_t, int64_t, int64_t, int64_t, double, int);"
bwd = "(const void*, const void*, const void*, const void*, void*, void*, void*, int64_t, int64_t, int64_t, int64_t, int64_t, double, int);"
ffi.cdef("".join(f"int attn_{w}{s}{sig}" for w, sig in (("fwd", fwd), ("bwd", bwd)) for s in ("", "_wide")))
# one library per element type holds both vector widths: the AVX2 entries and the AVX-512 ones (_wide)
libs = {np.float32: ffi.dlopen(sys.argv[1]), np.float64: ffi.dlopen(sys.argv[2])}
rng = np.random.default_rng(0)
n = 0
for dt, bh, lq, lk, d, dv, causal in itertools.product(
    (np.float32, np.float64), (1, 3), (1, 4, 5, 17), (1, 7, 16, 17, 40), (1, 3, 8, 16, 20, 36), (1, 5, 16), (0, 1)
):
    q, do = rng.standard_normal((bh, lq, d)).astype(dt), rng.standard_normal((bh, lq, dv)).astype(dt)
    k, v = rng.standard_normal((bh, lk, d)).astype(dt), rng.standard_normal((bh, lk, dv)).astype(dt)
    b = ffi.from_buffer
    got = []
    for wide in (0, 1):
        o, dq, dk, dvv = np.empty_like(do), np.empty_like(q), np.empty_like(k), np.empty_like(v)
        lib = libs[dt]
        f, g = (lib.attn_fwd_wide, lib.attn_bwd_wide) if wide else (lib.attn_fwd, lib.attn_bwd)
        assert f(b(q), b(k), b(v), b(o), bh, lq, lk, d, dv, 0.3, causal) == 0
        assert g(b(q), b(k), b(v), b(do), b(dq), b(dk), b(dvv), bh, lq, lk, d, dv, 0.3, causal) == 0
        got.append((o, dq, dk, dvv))
    tol = 1e-4 if dt == np.float32 else 1e-10
    for x, y in zip(*got):  # the two vector widths compute the same sums in another order
        np.testing.assert_allclose(x, y, rtol=tol, atol=tol, equal_nan=True)
    n += 1
print("ok", n)
"""


def test_the_c_kernels_stay_in_bounds_under_address_sanitizer(tmp_path):
    # the plugin's C built with -fsanitize=address and run over ragged shapes (rows, keys and
    # head dims off every block and vector width, causal and not, two OpenMP threads): an
    # access outside a buffer aborts the child with ASan's report. Both vector widths (one
    # library: the AVX-512 entries as generic vectors where the compiler targets none) agree.
    import os
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    asan = subprocess.run([cc, "-print-file-name=libasan.so"], capture_output=True, text=True).stdout.strip()
    if not os.path.isabs(asan) or not os.path.exists(asan):
        pytest.skip("no libasan for this compiler")
    src = Path(testing.__file__).resolve().parents[1] / "plugins" / "cpu" / "attention.c"
    libs = []
    for name, extra in (("f", []), ("d", ["-DT_DOUBLE"])):
        so = tmp_path / f"attn_{name}.so"
        flags = ["-O1", "-g", "-std=gnu11", "-fPIC", "-shared", "-fopenmp", "-fsanitize=address", *extra]
        r = subprocess.run([cc, *flags, str(src), "-o", str(so), "-lm"], capture_output=True, text=True)
        if r.returncode != 0:
            pytest.skip(f"cannot build with -fsanitize=address: {r.stderr[-300:]}")
        libs.append(str(so))
    env = {**os.environ, "LD_PRELOAD": asan, "ASAN_OPTIONS": "detect_leaks=0", "OMP_NUM_THREADS": "2"}
    r = subprocess.run(
        [sys.executable, "-c", _ASAN_CHILD, *libs], capture_output=True, text=True, env=env, timeout=300
    )
    assert r.returncode == 0 and r.stdout.startswith("ok"), r.stderr[-3000:]


def _bf16(a):
    import ml_dtypes

    return np.asarray(a, np.float32).astype(ml_dtypes.bfloat16)


@pytest.mark.parametrize("shape", [((2, 2, 128, 64), 128, 64, False), ((1, 3, 37, 40), 45, 24, True)])
def test_bfloat16_attention_is_the_float32_kernel_rounded_once(shape):
    # bfloat16 q, k, v (AMP's dtype) run the fused kernel in float32: the output and the
    # gradients are the float32 results on the same (exactly widened) values, rounded once to
    # bfloat16, bit for bit, and within a bfloat16 rounding of the float64 reference
    assert testing.find_kernel("attention_grad", "cpu", "bfloat16") is not None
    qs, lk, dv, causal = shape
    rng = np.random.default_rng(qs[-2])
    q = _bf16(rng.standard_normal(qs))
    k = _bf16(rng.standard_normal((*qs[:-2], lk, qs[-1])))
    v = _bf16(rng.standard_normal((*qs[:-2], lk, dv)))
    do = _bf16(rng.standard_normal((*qs[:-1], dv)))
    got = run(q, k, v, do, causal)
    wide = run(*(a.astype(np.float32) for a in (q, k, v, do)), causal)
    want = ref(q, k, v, do, 1 / np.sqrt(qs[-1]), causal)
    for g, f32, w, name in zip(got, wide, want, ("o", "dq", "dk", "dv")):
        assert g.dtype == q.dtype, name
        np.testing.assert_array_equal(g.view(np.uint16), _bf16(f32).view(np.uint16), err_msg=name)
        np.testing.assert_allclose(
            g.astype(np.float64), w, rtol=2**-7, atol=2**-7 * np.abs(w).max(), err_msg=name
        )


def test_bfloat16_attention_without_the_c_kernel_computes_the_same_in_numpy(monkeypatch):
    # the plugin's numpy path (no C compiler) on bfloat16: float32 numpy, rounded once
    from plugins.cpu import attention as A

    rng = np.random.default_rng(4)
    q, k, v, do = (_bf16(rng.standard_normal((2, 3, 9, 8))) for _ in range(4))
    fused = run(q, k, v, do, True)
    monkeypatch.setattr(A, "_programs", lambda dtype: None)
    plain = run(q, k, v, do, True)
    want = ref(q, k, v, do, 1 / np.sqrt(8), True)
    for a, b, w in zip(fused, plain, want):
        assert b.dtype == q.dtype
        for x in (a, b):
            np.testing.assert_allclose(x.astype(np.float64), w, rtol=2**-7, atol=2**-7 * np.abs(w).max())


def test_amp_bfloat16_runs_attention_on_the_fused_kernel():
    # under auto_cast(bfloat16) attention (AMP class "allow") takes bfloat16 inputs: the fused
    # kernel runs them (no decomposition), giving the float32 kernel's result on the rounded inputs
    rng = np.random.default_rng(8)
    q, k, v = (rng.standard_normal((2, 4, 32, 16)).astype(np.float32) for _ in range(3))
    ts = [fw.to_tensor(a, stop_gradient=False) for a in (q, k, v)]
    with fw.amp.auto_cast(dtype="bfloat16"):
        o = F.attention(*ts, is_causal=True)
    assert o.dtype == fw.bfloat16
    want = run(*(_bf16(a).astype(np.float32) for a in (q, k, v)), np.zeros((2, 4, 32, 16), np.float32), True)[
        0
    ]
    np.testing.assert_array_equal(o.numpy().view(np.uint16), _bf16(want).view(np.uint16))
    o.astype("float32").sum().backward()
    for t in ts:
        assert t.grad is not None and np.isfinite(t.grad.numpy()).all()
