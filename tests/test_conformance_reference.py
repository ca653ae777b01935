"""The conformance suite's own references and comparison, against published and hand-computed values."""

from __future__ import annotations

import numpy as np
import pytest

from conformance import reference as R
from conformance.checks import CheckFailure, assert_close
from conformance.opdb import ALL, OPDB, dtype_of

# Random123's kat_vectors for philox4x32_10: (counter, key, expected output)
KAT = [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF,) * 4, (0xFFFFFFFF, 0xFFFFFFFF), (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    (
        (0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344),
        (0xA4093822, 0x299F31D0),
        (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1),
    ),
]


@pytest.mark.parametrize("ctr,key,want", KAT)
def test_philox_matches_random123_vectors(ctr, key, want):
    got = R.philox4x32_10(np.array([ctr], np.uint64), key)[0]
    assert [int(v) for v in got] == list(want)


def test_philox_uniform_layout_by_hand():
    # seed 0, offset 0: element i is word i of counter (0, 0, 0, 0), then counter 1 from element 4
    u = R.philox_uniform((5,), 0, 0, np.float64)
    words = KAT[0][2]
    for i in range(4):
        assert u[i] == (words[i] >> 8) * 2.0**-24
    second = R.philox4x32_10(np.array([[1, 0, 0, 0]], np.uint64), (0, 0))[0]
    assert u[4] == (int(second[0]) >> 8) * 2.0**-24
    # the key is (seed mod 2**32, seed >> 32); the counter's second word is offset >> 32
    seed, off = (0xA4093822 | (0x299F31D0 << 32)), 0x85A308D3 << 32 | 0x243F6A88
    got = R.philox4x32_10(np.array([[0x243F6A88, 0x85A308D3, 0, 0]], np.uint64), (0xA4093822, 0x299F31D0))[0]
    u2 = R.philox_uniform((2,), seed, off, np.float32)
    assert u2[1] == np.float32((int(got[1]) >> 8) * 2.0**-24)


def test_reference_semantics_by_hand():
    i8 = np.array([-7, 7, -7, 7], np.int8)
    d8 = np.array([2, -2, -2, 2], np.int8)
    assert R.REFERENCES["floor_divide"](i8, d8).tolist() == [-4, -4, 3, 3]
    assert R.REFERENCES["remainder"](i8, d8).tolist() == [1, -1, -1, 1]
    assert R.cast(np.array([-2.7, 2.7, 0.0, -0.5], np.float32), np.int32).tolist() == [-2, 2, 0, 0]
    assert R.cast(np.array([0.0, -0.0, np.nan, 3.0]), np.bool_).tolist() == [False, False, True, True]
    assert R.REFERENCES["add"](np.array([127], np.int8), np.array([1], np.int8)).tolist() == [-128]
    y = R.scatter_add(np.zeros(4), np.array([1, 1, 3]), np.array([1.0, 2.0, 5.0]), 0)
    assert y.tolist() == [0.0, 3.0, 0.0, 5.0]
    g = R.gather(np.arange(6).reshape(2, 3), np.array([[2, 0]]), 1)
    assert g.tolist() == [[[2, 0]], [[5, 3]]]
    assert R.REFERENCES["argmax"](np.array([1, 3, 3, 0]), 0, False) == 1  # the first of ties
    assert R.REFERENCES["maximum"](np.array([np.nan, 1.0]), np.array([0.0, np.nan])).tolist().count(1.0) == 0
    assert R.arange(4, 1.5, -0.5, np.float32).tolist() == [1.5, 1.0, 0.5, 0.0]


def test_op_database_covers_every_primitive_and_edge_kind():
    from adapter_api import PRIMITIVES

    assert set(OPDB) == set(PRIMITIVES)
    rng = np.random.default_rng(0)
    for name, info in OPDB.items():
        assert set(info.dtypes) <= set(ALL), name
        for dt in info.dtypes:
            samples = list(info.samples(dtype_of(dt), rng))
            assert samples, (name, dt)
    labels = " ".join(s.label for s in OPDB["add"].samples(np.dtype("float32"), rng))
    assert "nan" in labels and "large" in labels and "()" in labels and "(0,)" in labels
    labels = " ".join(s.label for s in OPDB["mul"].samples(np.dtype("int16"), rng))
    assert "integer edge values" in labels


def test_assert_close_catches_what_it_should():
    a = np.array([1.0, np.nan, np.inf, 2.0], np.float32)
    assert_close(a.copy(), a, 1e-5, 1e-6, "same")
    assert_close(a + np.float32(1e-6) * np.array([1, 0, 0, 1], np.float32), a, 1e-5, 1e-6, "close")
    for bad, says in (
        (
            [1.0, 0.0, np.inf, 2.0],
            r"1 of 4 elements wrong; 1 NaN where a number was expected or a number where NaN was \(rtol",
        ),
        (
            [1.0, np.nan, -np.inf, 2.0],
            r"1 of 4 elements wrong; 1 infinity mismatched \(wrong sign, or infinite vs finite\) \(rtol",
        ),
        ([np.nan, np.nan, 5.0, 2.0], r"2 of 4 elements wrong; 1 NaN where .*; 1 infinity mismatched"),
        ([1.0, np.nan, np.inf, 2.01], r"1 of 4 elements wrong; 1 finite off by up to 0.01 \(rtol"),
    ):
        with pytest.raises(CheckFailure, match=says) as info:
            assert_close(np.array(bad, np.float32), a, 1e-5, 1e-6, "bad")
        assert info.value.expected is not None and info.value.got is not None
        assert (
            "max abs error 0" not in info.value.message
        )  # NaN/inf mismatches are never reported as no error
    with pytest.raises(CheckFailure, match="shape"):
        assert_close(np.zeros((2, 1)), np.zeros(2), 0, 0, "shape")
    with pytest.raises(CheckFailure, match="dtype"):
        assert_close(np.zeros(2, np.float64), np.zeros(2, np.float32), 0, 0, "dtype")
    with pytest.raises(CheckFailure, match="exact"):
        assert_close(np.array([1, 2]), np.array([1, 3]), 0, 0, "ints")
    # summation-sized bounds: the error may grow with the magnitude of what was summed
    assert_close(
        np.array([1e-3], np.float32),
        np.array([0.0], np.float32),
        1e-5,
        1e-6,
        "sum",
        magnitude=np.array([200.0]),
    )
