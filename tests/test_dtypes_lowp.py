"""Wide unsigned integers (uint16/32/64) and float8 storage dtypes: exact against numpy and
ml_dtypes, on every device; float8 arithmetic refused with the op and the dtype named."""

from __future__ import annotations

import warnings

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
