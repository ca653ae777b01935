"""Wide unsigned integers (uint16/32/64) and float8 storage dtypes: exact against numpy and
ml_dtypes, on every device; float8 arithmetic refused with the op and the dtype named."""

from __future__ import annotations

import warnings

import ml_dtypes
import numpy as np
import pytest

import framework as fw

UINTS = (np.uint16, np.uint32, np.uint64)


def _pair(dt: type) -> tuple[np.ndarray, np.ndarray]:
    info = np.iinfo(dt)
    rng = np.random.default_rng(np.dtype(dt).itemsize)
    a = rng.integers(0, info.max, 29, dtype=dt, endpoint=True)
    b = rng.integers(1, info.max, 29, dtype=dt, endpoint=True)
    a[:4] = [0, info.max, 1, info.max - 1]  # the edges: wrap-around on add, sub, mul
    b[:4] = [info.max, info.max, 1, 2]
    return a, b


@pytest.mark.parametrize("dt", UINTS, ids=lambda d: np.dtype(d).name)
def test_wide_uints_are_exact_like_numpy(device, dt):
    a, b = _pair(dt)
    x, y = fw.to_tensor(a, device=device), fw.to_tensor(b, device=device)
    with warnings.catch_warnings():
        warnings.simplefilter("error", fw.FallbackWarning)  # the device runs them itself
        got = {
            "add": (x + y, a + b),
            "sub": (x - y, a - b),
            "mul": (x * y, a * b),
            "floor_divide": (x // y, a // b),
            "remainder": (x % y, a % b),
            "bitwise_and": (x & y, a & b),
            "bitwise_or": (x | y, a | b),
            "bitwise_xor": (x ^ y, a ^ b),
            "bitwise_not": (~x, ~a),
            "maximum": (fw.maximum(x, y), np.maximum(a, b)),
            "lt": (x < y, a < b),
            "eq": (x == y, a == b),
            "scalar": (x + 3, a + dt(3)),
            "sum": (x.sum(), a.sum(dtype=np.uint64)),  # numpy's rule: uint64
            "max": (x.max(), a.max()),
            "min": (x.min(), a.min()),
            "argmax": (x.argmax(), a.argmax()),
            "sort": (fw.sort(x), np.sort(a)),
            "matmul": (
                fw.matmul(x[:25].reshape([5, 5]), y[:25].reshape([5, 5])),
                a[:25].reshape(5, 5) @ b[:25].reshape(5, 5),
            ),
            "to_float64": (x.astype("float64"), a.astype(np.float64)),
            "to_int64": (x.astype("int64"), a.astype(np.int64)),
            "to_uint8": (x.astype("uint8"), a.astype(np.uint8)),
        }
    for op, (t, want) in got.items():
        assert t.dtype == want.dtype, f"{op}: dtype {t.dtype}, numpy {want.dtype}"
        np.testing.assert_array_equal(t.numpy(), want, err_msg=f"{op} on {np.dtype(dt).name}")


def test_wide_uints_keep_their_dtype_and_promote_like_numpy():
    assert fw.to_tensor(np.array([2**64 - 1], np.uint64)).numpy().tolist() == [2**64 - 1]
    assert fw.to_tensor([2**64 - 1], dtype="uint64").dtype == fw.uint64
    assert fw.to_tensor(np.uint16(65535)).dtype == fw.uint16
    for a, b in [("uint16", "int8"), ("uint32", "int32"), ("uint8", "uint32"), ("uint16", "uint64")]:
        got = (fw.ones([1], dtype=a) + fw.ones([1], dtype=b)).dtype
        assert got == np.promote_types(a, b), (a, b, got)
    assert (fw.ones([1], dtype="uint32") + fw.ones([1], dtype="float16")).dtype == fw.float16
    with pytest.raises(fw.OpArgumentError, match=r"\[add\] no integer dtype holds both uint64 and int64"):
        fw.ones([1], dtype="uint64") + fw.ones([1], dtype="int64")
    with pytest.raises(fw.OpArgumentError, match=r"value -1 does not fit in uint32"):
        fw.ones([1], dtype="uint32") + (-1)  # numpy 2 refuses it too; never a silent wrap
    f = fw.to_tensor([-1.0, 3e9, 7e4, 2.5, float("nan")])
    assert f.astype("uint16").tolist() == [0, 65535, 65535, 2, 0]  # the contract's saturating cast
    assert f.astype("uint64").tolist() == [0, 3000000000, 70000, 2, 0]


# -- float8 -------------------------------------------------------------------------------------
FLOAT8 = ("float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz")


def _all_float8(name: str) -> np.ndarray:
    """Every bit pattern of the float8 dtype (NaNs, infinities where the dtype has them)."""
    return np.arange(256, dtype=np.uint8).view(getattr(ml_dtypes, name))


def _float32_probes(name: str) -> np.ndarray:
    """float32 values around every float8 value: the values, the midpoints between neighbours
    (ties to even), just off them, beyond the largest finite value, tiny, inf and NaN."""
    v = np.unique(_all_float8(name).astype(np.float32))
    v = v[np.isfinite(v)]
    mid = (v[:-1] + v[1:]) / 2
    big = float(ml_dtypes.finfo(getattr(ml_dtypes, name)).max)
    extra = np.array([big * 1.01, big * 1.2, -big * 1.3, 1e-9, -1e-9, np.inf, -np.inf, np.nan], np.float32)
    return np.concatenate([v, mid, np.nextafter(mid, np.inf), np.nextafter(mid, -np.inf), extra])


def _same_bits(got: np.ndarray, want: np.ndarray, what: str) -> None:
    assert got.dtype == want.dtype, (what, got.dtype, want.dtype)
    g, w = got.view(np.uint8), want.view(np.uint8)
    nan = np.isnan(want.astype(np.float32))
    assert np.array_equal(np.isnan(got.astype(np.float32)), nan), what  # any NaN is NaN
    bad = np.flatnonzero((g != w) & ~nan)
    assert not bad.size, f"{what}: at {bad[:5]} got {got[bad[:5]]}, ml_dtypes {want[bad[:5]]}"


@pytest.mark.parametrize("name", FLOAT8)
def test_float8_casts_match_ml_dtypes(device, name):
    d = getattr(fw, name)
    src = _float32_probes(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fw.FallbackWarning)  # a plugin without float8 casts
        x = fw.to_tensor(src, device=device)
        for frm in ("float32", "float16", "bfloat16", "float64"):
            s = src.astype(getattr(ml_dtypes, frm, None) or frm)
            got = fw.to_tensor(s, device=device).astype(d).numpy()
            _same_bits(got, s.astype(d), f"{frm} -> {name}")
        every = _all_float8(name)
        t = fw.to_tensor(every, device=device)
        assert t.dtype == d and np.array_equal(t.numpy().view(np.uint8), every.view(np.uint8))
        for to in ("float32", "float16", "bfloat16", "float64"):
            got, want = t.astype(to).numpy(), every.astype(getattr(ml_dtypes, to, None) or to)
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want, err_msg=f"{name} -> {to}")  # exact
        # float8 -> integers: the contract's float->int rule (truncate, saturate, NaN -> 0)
        f32 = every.astype(np.float32)
        want = np.where(np.isnan(f32), 0, np.clip(np.trunc(f32), 0, 255)).astype(np.uint8)
        np.testing.assert_array_equal(t.astype("uint8").numpy(), want)
        # data movement keeps the bits
        moved = fw.concat([t[::2], t[1::2]]).reshape([2, 128]).transpose([1, 0]).numpy()
        want = np.concatenate([every[::2], every[1::2]]).reshape(2, 128).T
        assert np.array_equal(moved.view(np.uint8), want.view(np.uint8))
        assert x.astype(d).dtype == d


def test_float8_saturating_conversion_is_the_ocp_one():
    from framework.nn.quant import float8_saturate

    for name in FLOAT8:
        d = getattr(ml_dtypes, name)
        src = _float32_probes(name)
        big = np.float32(ml_dtypes.finfo(d).max)
        want = np.where(np.isnan(src), src, np.clip(src, -big, big)).astype(d)
        _same_bits(float8_saturate(fw.to_tensor(src), name).numpy(), want, name)


@pytest.mark.parametrize("op", ["add", "mul", "exp", "sum", "matmul", "mean", "relu", "gt", "mixed"])
def test_float8_arithmetic_is_refused_naming_op_and_dtype(op):
    f = fw.to_tensor([[1.0, 2.0], [3.0, 4.0]]).astype(fw.float8_e4m3fn)
    call = {
        "add": lambda: f + f,
        "mul": lambda: f * 2.0,
        "exp": lambda: fw.exp(f),
        "sum": lambda: f.sum(),
        "matmul": lambda: fw.matmul(f, f),
        "mean": lambda: f.mean(),
        "relu": lambda: fw.nn.functional.relu(f),
        "gt": lambda: f > 0,
        "mixed": lambda: f + fw.ones([2, 2]),
    }[op]
    with pytest.raises(fw.OarlockError, match=r"^\[\w+\] float8_e4m3fn is a storage dtype"):
        call()


def test_scaled_matmul_is_dequantise_then_float32_product():
    from framework.nn.quant import scaled_matmul

    rng = np.random.default_rng(0)
    a = (rng.standard_normal((5, 16)) * 4).astype(ml_dtypes.float8_e4m3fn)
    b = (rng.standard_normal((16, 3)) * 4).astype(ml_dtypes.float8_e5m2)
    sa, sb = np.float32(0.25), (rng.random((1, 3)) + 0.5).astype(np.float32)
    want = (a.astype(np.float64) * sa) @ (b.astype(np.float64) * sb)
    for out in ("float32", "bfloat16"):
        got = scaled_matmul(fw.to_tensor(a), fw.to_tensor(b), fw.to_tensor(sa), fw.to_tensor(sb), out)
        assert got.dtype == fw.dtype(out) and got.shape == (5, 3)
        np.testing.assert_allclose(
            got.numpy().astype(np.float64), want, rtol=1e-2 if out == "bfloat16" else 1e-5
        )
    rows = (rng.random((5, 1)) + 0.5).astype(np.float32)
    got = scaled_matmul(fw.to_tensor(a), fw.to_tensor(b), fw.to_tensor(rows), fw.to_tensor(sb))
    np.testing.assert_allclose(
        got.numpy(), (a.astype(np.float64) * rows) @ (b.astype(np.float64) * sb), rtol=1e-5
    )
    with pytest.raises(fw.OpArgumentError, match=r"\[scaled_matmul\] a must be a 2-d float8 tensor"):
        scaled_matmul(fw.ones([2, 2]), fw.to_tensor(b), fw.to_tensor(sa), fw.to_tensor(sa))
    with pytest.raises(fw.OpArgumentError, match=r"\[scaled_matmul\] scale_b must be a float32 tensor"):
        scaled_matmul(fw.to_tensor(a), fw.to_tensor(b), fw.to_tensor(sa), fw.ones([5]))


# -- the conformance tier ------------------------------------------------------------------------
def test_lowp_tier_lists_every_declared_dtype_and_runs_its_checks():
    from adapter_api.primitives import LOWP
    from conformance.cases import Target
    from conformance.checks import CheckFailure
    from conformance.tiers import lowp

    declared = Target("cpu:0", "cpu", "cpu", {"add": {"uint32"}, "cast": {"float8_e5m2", "uint64"}}, {})
    got = {c.id: c for c in lowp.cases(declared)}
    assert len(got) == sum(map(len, LOWP.values())) + len(LOWP["cast"])  # + cast_into per dtype
    assert got["lowp/add[uint32]"].fn is not None and got["lowp/cast[float8_e5m2]"].fn is not None
    none = got["lowp/add[uint64]"]
    assert none.preset == "not_supported" and "declares no wide unsigned integer kernel" in none.reason
    assert "declares no float8 kernel" in got["lowp/copy[float8_e4m3fn]"].reason
    # the checks themselves, on the cpu plugin: they pass, and a wrong conversion fails them
    assert lowp.float8_cast("float8_e4m3fnuz", "cpu")["casts"] == 11
    assert lowp.cast_into("float8_e5m2", "cpu")["casts"] == 4
    assert lowp.cast_into("uint64", "cpu")["casts"] == 8
    x = np.array([1.0, 500.0], np.float32)
    with pytest.raises(
        CheckFailure, match="differ from the reference"
    ):  # a saturating cast is not the contract's
        lowp._same_bits(
            np.array([1.0, 448.0], np.float32).astype(ml_dtypes.float8_e4m3fn),
            x.astype(ml_dtypes.float8_e4m3fn),
            "cast",
        )


def test_int4_and_uint4_pack_two_a_byte_as_weight_quantize_does():
    from framework.nn.quant import pack_int4, unpack_int4, weight_quantize

    rng = np.random.default_rng(3)
    for signed, lo, hi, byte in ((True, -8, 8, np.int8), (False, 0, 16, np.uint8)):
        q = rng.integers(lo, hi, (6, 5))
        p = pack_int4(fw.to_tensor(q), signed=signed)
        want = ((q[0::2] & 0xF) | ((q[1::2] & 0xF) << 4)).astype(np.uint8).view(byte)  # numpy's packing
        assert p.dtype == byte and np.array_equal(p.numpy(), want)
        assert np.array_equal(unpack_int4(p, signed=signed).numpy(), q)
    w = fw.to_tensor(rng.standard_normal((8, 4)).astype(np.float32))
    q4, _ = weight_quantize(w, algo="weight_only_int4")
    assert np.array_equal(pack_int4(unpack_int4(q4)).numpy(), q4.numpy())  # the weights' own layout
    with pytest.raises(fw.OpArgumentError, match=r"\[pack_int4\] expects a 2-d integer tensor"):
        pack_int4(fw.ones([3, 2], dtype="int32"))
