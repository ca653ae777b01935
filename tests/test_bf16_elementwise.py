"""bfloat16 casts and element-wise ops on the cpu plugin (elementwise.c's bf16_* kernels):
bit for bit against ml_dtypes' conversions and numpy's float32 ops on the widened operands,
rounded once (round to nearest even; NaN to the quiet NaN of its sign), on the AVX512-BF16
path where the CPU has it (``OARLOCK_BF16_CAST=units``) and on the plain path (the default)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import framework as fw
from plugins.cpu import elementwise

BF16 = np.dtype(ml_dtypes.bfloat16)
_UNITS = "avx512_bf16" in open("/proc/cpuinfo").read().split("\n\n")[0].split()
PATHS = ["plain", pytest.param("units", marks=pytest.mark.skipif(not _UNITS, reason="no avx512_bf16"))]


def _bits(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x).view(np.uint16 if x.dtype.itemsize == 2 else np.uint32)


def _special_f32(n: int, seed: int) -> np.ndarray:
    """Normal values of every scale, ties, denormals, zeros, infinities and NaNs (payloads,
    both signs), shuffled into an array of ``n``."""
    rng = np.random.default_rng(seed)
    bits = rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)
    x = bits.view(np.float32).copy()
    specials = np.array(
        [
            0x00000001,
            0x00400000,
            0x007FFFFF,
            0x80000001,
            0x00008000,
            0x00018000,
            0x3F808000,
            0x3F818000,
            0x3F807FFF,
            0x7F7FFFFF,
            0x7F7F8000,
            0x7F800000,
            0xFF800000,
            0x7F800001,
            0x7FC00000,
            0xFFC12345,
            0x7FBFFFFF,
            0x00000000,
            0x80000000,
            0x00800000,
        ],
        dtype=np.uint32,
    ).view(np.float32)
    x[rng.choice(n, min(n, specials.size), replace=False)] = specials[: min(n, specials.size)]
    return x


@pytest.mark.parametrize("path", PATHS)
def test_round_every_bit_pattern_sweep(path, monkeypatch):
    # every 97th float32 bit pattern (44 million): all exponents, both signs, NaN payloads
    monkeypatch.setenv("OARLOCK_BF16_CAST", path)
    x = np.arange(0, 1 << 32, 97, dtype=np.uint64).astype(np.uint32).view(np.float32)
    y = np.empty(x.size, BF16)
    assert elementwise.bf16_cast(x, y)
    with np.errstate(invalid="ignore"):
        ref = x.astype(BF16)
    bad = _bits(y) != _bits(ref)
    assert not bad.any(), (
        f"{bad.sum()} differ, e.g. {_bits(x)[bad][:4]}: {_bits(y)[bad][:4]} want {_bits(ref)[bad][:4]}"
    )


def test_widen_every_bfloat16():
    h = np.arange(1 << 16, dtype=np.uint16).view(BF16)
    y = np.empty(h.size, np.float32)
    assert elementwise.bf16_cast(h, y)
    assert (_bits(y) == _bits(h.astype(np.float32))).all()


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("n", [1, 63, 64, 65, 1023, 4097, 70001])
def test_astype_both_ways(path, n, monkeypatch):
    monkeypatch.setenv("OARLOCK_BF16_CAST", path)
    x = _special_f32(n, n)
    with np.errstate(invalid="ignore"):
        ref = x.astype(BF16)
    got = fw.to_tensor(x).astype("bfloat16").numpy()
    assert got.dtype == BF16 and (_bits(got) == _bits(ref)).all()
    back = fw.to_tensor(ref).astype("float32").numpy()
    assert (_bits(back) == _bits(ref.astype(np.float32))).all()


def _bf16_operands(shape, seed):
    with np.errstate(invalid="ignore"):
        return _special_f32(int(np.prod(shape)), seed).reshape(shape).astype(BF16)


BINARY = [(fw.add, np.add), (fw.subtract, np.subtract), (fw.multiply, np.multiply), (fw.divide, np.divide)]


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("op,ref_op", BINARY)
@pytest.mark.parametrize(
    "sa,sb",
    [
        ((7, 13), (7, 13)),  # small: the round trip
        ((3, 67, 129), (3, 67, 129)),  # odd, past the C threshold
        ((5, 300), (1, 300)),  # a trailing block repeated
        ((2, 3, 4099), (1, 1, 4099)),
        ((1, 1), (33, 65)),  # a single element
        ((600,), (600,)),
        ((300, 257), (300, 1)),  # other broadcasting: the round trip
    ],
)
def test_binary_bit_exact(path, op, ref_op, sa, sb, monkeypatch):
    monkeypatch.setenv("OARLOCK_BF16_CAST", path)
    a, b = _bf16_operands(sa, 1), _bf16_operands(sb, 2)
    with np.errstate(all="ignore"):
        ref = ref_op(a.astype(np.float32), b.astype(np.float32)).astype(BF16)
    got = op(fw.to_tensor(a), fw.to_tensor(b)).numpy()
    assert got.dtype == BF16 and got.shape == ref.shape
    bad = _bits(got) != _bits(ref)
    assert not bad.any(), f"{bad.sum()} differ"


def test_binary_in_place_and_denormals():
    # denormal bf16 operands and results (2^-133 .. 2^-127) keep their bits
    a = (np.arange(1, 5001, dtype=np.float32) * np.float32(2.0**-133)).astype(BF16)
    b = np.full(5000, 0.5, dtype=BF16)
    with np.errstate(all="ignore"):
        ref = (a.astype(np.float32) * b.astype(np.float32)).astype(BF16)
    t = fw.to_tensor(a)
    got = (t * fw.to_tensor(b)).numpy()
    assert (_bits(got) == _bits(ref)).all() and (got != 0).sum() > 1000


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize(
    "op,ref_op", [(fw.exp, np.exp), (fw.neg, np.negative), (fw.tanh, np.tanh), (fw.sqrt, np.sqrt)]
)
@pytest.mark.parametrize("shape", [(5,), (3, 1001)])
def test_unary_bit_exact(path, op, ref_op, shape, monkeypatch):
    monkeypatch.setenv("OARLOCK_BF16_CAST", path)
    a = _bf16_operands(shape, 3)
    with np.errstate(all="ignore"):
        ref = ref_op(a.astype(np.float32)).astype(BF16)
    got = op(fw.to_tensor(a)).numpy()
    assert (_bits(got) == _bits(ref)).all()


def test_bad_choice_is_named(monkeypatch):
    monkeypatch.setenv("OARLOCK_BF16_CAST", "fast")
    with pytest.raises(Exception, match="OARLOCK_BF16_CAST must be plain or units, got 'fast'"):
        fw.to_tensor(np.ones(1000, np.float32)).astype("bfloat16").numpy()


@pytest.mark.parametrize("nt", [2, 3])
def test_split_over_threads_same_bits(nt):
    # the team's parts (cut at multiples of 64) give the bits of one thread, odd sizes included
    x = _special_f32(100_003, 7)
    y1, yn = np.empty(x.size, BF16), np.empty(x.size, BF16)
    assert elementwise.bf16_cast(x, y1, 1) and elementwise.bf16_cast(x, yn, nt)
    assert (_bits(y1) == _bits(yn)).all()
    w1, wn = np.empty(x.size, np.float32), np.empty(x.size, np.float32)
    assert elementwise.bf16_cast(y1, w1, 1) and elementwise.bf16_cast(y1, wn, nt)
    assert (_bits(w1) == _bits(wn)).all() and (_bits(wn) == _bits(y1.astype(np.float32))).all()
    a, b = _bf16_operands((3, 33_335), 8), _bf16_operands((1, 33_335), 9)
    out = np.empty(a.shape, BF16)
    elementwise.bf16_binary_call(3, a, b, out, nt)()
    with np.errstate(all="ignore"):
        ref = (a.astype(np.float32) / b.astype(np.float32)).astype(BF16)
    assert (_bits(out) == _bits(ref)).all()


@pytest.mark.skipif(_UNITS, reason="the CPU has avx512_bf16")
def test_units_without_the_instruction_is_named(monkeypatch):
    monkeypatch.setenv("OARLOCK_BF16_CAST", "units")
    with pytest.raises(Exception, match="does not list avx512_bf16"):
        fw.to_tensor(np.ones(1000, np.float32)).astype("bfloat16").numpy()
