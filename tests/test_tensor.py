"""Tensors: creation, dtypes, promotion, views, indexing and assignment, DLPack."""

from __future__ import annotations

import numpy as np
import pytest

import framework as fw
from tests.conftest import assert_close


def test_quick_start_example():
    x = fw.to_tensor([[1.0, 2.0], [3.0, 4.0]])
    assert (x @ x).numpy().tolist() == [[7.0, 10.0], [15.0, 22.0]]


@pytest.mark.parametrize(
    "dtype", ["float32", "float64", "float16", "bfloat16", "int8", "int16", "int32", "int64", "uint8", "bool"]
)
def test_every_dtype_round_trips(device, dtype):
    x = np.arange(6).reshape(2, 3).astype(fw._src.dtypes.as_dtype(dtype))
    t = fw.to_tensor(x, device=device)
    assert t.dtype == x.dtype and t.shape == (2, 3) and t.ndim == 2 and t.size == 6
    np.testing.assert_array_equal(t.numpy(), x)
    assert t.tolist() == x.tolist()


def test_python_data_and_defaults(device):
    assert fw.to_tensor(1.5, device=device).dtype == np.float32
    assert fw.to_tensor(3, device=device).dtype == np.int64
    assert fw.to_tensor(True, device=device).dtype == np.bool_
    assert fw.to_tensor([[1, 2]], device=device).dtype == np.int64
    assert fw.to_tensor(np.float64(2.0), device=device).dtype == np.float64
    assert fw.to_tensor(2.5, device=device).item() == 2.5
    t = fw.to_tensor(np.arange(12.0).reshape(3, 4)[:, ::2])  # non-contiguous numpy is copied
    np.testing.assert_array_equal(t.numpy(), np.arange(12.0).reshape(3, 4)[:, ::2])


def test_creation_functions(device):
    assert_close(fw.zeros([2, 3], device=device), np.zeros((2, 3), np.float32))
    assert_close(fw.ones([2], dtype="int32", device=device), np.ones(2, np.int32))
    assert_close(fw.full([2, 2], 7, device=device), np.full((2, 2), 7))
    assert_close(fw.arange(5, device=device), np.arange(5))
    assert_close(fw.eye(3, device=device), np.eye(3, dtype=np.float32))
    assert_close(fw.linspace(0, 1, 5, device=device), np.linspace(0, 1, 5).astype(np.float32))
    x = fw.ones([2, 3], dtype="float64", device=device)
    assert fw.zeros_like(x).dtype == np.float64 and fw.full_like(x, 2).numpy().sum() == 12
    assert fw.empty([3, 0], device=device).shape == (3, 0)
    assert fw.empty_like(x).shape == (2, 3)


def test_type_promotion_rules(device):
    f32 = fw.ones([2], dtype="float32", device=device)
    f16 = fw.ones([2], dtype="float16", device=device)
    bf16 = fw.ones([2], dtype="bfloat16", device=device)
    i8 = fw.ones([2], dtype="int8", device=device)
    i32 = fw.ones([2], dtype="int32", device=device)
    u8 = fw.ones([2], dtype="uint8", device=device)
    b = fw.ones([2], dtype="bool", device=device)
    assert (f32 * 2.0).dtype == np.float32  # weak Python scalars
    assert (i8 + 1).dtype == np.int8
    assert (i32 * 1.5).dtype == np.float32
    assert (b + 1).dtype == np.int64
    assert (i32 + f16).dtype == np.float16
    assert (f16 + bf16).dtype == np.float32
    assert (u8 + i8).dtype == np.int16
    assert (i32 / i32).dtype == np.float32
    assert (f32 + fw.ones([2], dtype="float64", device=device)).dtype == np.float64
    assert (i32 > 0).dtype == np.bool_


def test_operators_match_numpy(device):
    a = np.array([[1.5, -2.0, 3.0], [0.5, 4.0, -1.0]], np.float32)
    b = np.array([2.0, 0.5, -3.0], np.float32)
    x, y = fw.to_tensor(a, device=device), fw.to_tensor(b, device=device)
    for got, want in [
        (x + y, a + b),
        (x - y, a - b),
        (x * y, a * b),
        (x / y, a / b),
        (-x, -a),
        (abs(x), np.abs(a)),
        (x**2, a**2),
        (2**y, 2**b),
        (1 - x, 1 - a),
        (x // y, a // b),
        (x % y, a % b),
        (x @ y, a @ b),
        (x.T, a.T),
        (x.mean(), a.mean()),
        (x.sum(axis=0), a.sum(0)),
        (x.max(axis=1, keepdim=True), a.max(1, keepdims=True)),
    ]:
        assert_close(got, want, rtol=1e-6)
    assert_close((x > 1) & (x < 3.5), (a > 1) & (a < 3.5))
    assert_close(~(x > 1) | (x == 3), ~(a > 1) | (a == 3))


def test_reshape_family_shares_storage(device):
    x = fw.arange(24, device=device).reshape([2, 3, 4])
    v = x.reshape([6, -1])
    assert v.shape == (6, 4) and v._block is x._block
    assert x.flatten().shape == (24,) and x.flatten(1).shape == (2, 12)
    assert x.unsqueeze(0).shape == (1, 2, 3, 4) and x.unsqueeze([0, -1]).shape == (1, 2, 3, 4, 1)
    assert fw.ones([1, 3, 1]).squeeze().shape == (3,) and fw.ones([1, 3, 1]).squeeze(0).shape == (3, 1)
    assert_close(x.transpose([2, 0, 1]), np.arange(24).reshape(2, 3, 4).transpose(2, 0, 1))
    assert_close(x.permute(1, 0, 2), np.arange(24).reshape(2, 3, 4).transpose(1, 0, 2))
    parts = fw.split(x, [1, -1], axis=2)
    assert [p.shape for p in parts] == [(2, 3, 1), (2, 3, 3)]
    assert_close(
        fw.stack([x[0], x[1]], axis=1),
        np.stack([np.arange(12).reshape(3, 4), np.arange(12, 24).reshape(3, 4)], 1),
    )
    assert_close(fw.tile(fw.to_tensor([1, 2], device=device), [2, 2]), np.tile([1, 2], (2, 2)))
    assert_close(fw.flip(x, [0, 2]), np.flip(np.arange(24).reshape(2, 3, 4), (0, 2)))


def test_indexing_like_numpy(device):
    a = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    x = fw.to_tensor(a, device=device)
    keys = [
        1,
        -1,
        (1, 2),
        (slice(None), 1),
        (Ellipsis, 2),
        (None, 1),
        (slice(1, None), None, slice(None, None, 2)),
        (slice(None, None, -1),),
        (0, slice(3, 0, -2)),
        ([0, 2],),
        (slice(None), [3, 0, 3]),
        ([0, 1], [1, 2]),
        (a[:, 0, 0] > 10,),
        (a > 30,),
        (Ellipsis, [4, 0]),
        (slice(5, 10),),
    ]
    for k in keys:
        tk = tuple(
            fw.to_tensor(i, device=device) if isinstance(i, np.ndarray) else i
            for i in (k if isinstance(k, tuple) else (k,))
        )
        assert_close(x[tk], a[k])
    assert x[1, 2, 3].item() == a[1, 2, 3]
    idx = fw.to_tensor([2, 0], device=device)
    assert_close(x[idx], a[[2, 0]])
    rows = [r.numpy() for r in x]  # iteration stops at IndexError
    assert len(rows) == 3


def test_setitem_like_numpy(device):
    a = np.zeros((4, 5), np.float32)
    x = fw.to_tensor(a, device=device)
    for k, v in [
        ((1, 2), 7.0),
        ((slice(None), 0), np.arange(4)),
        ((slice(2, None), slice(None, None, 2)), -1.0),
        (([0, 3], [4, 4]), [5.0, 6.0]),
        ((a == 0) & (np.arange(5) == 1), 9.0),
    ]:
        a[k] = v
        x[k if not isinstance(k, np.ndarray) else fw.to_tensor(k, device=device)] = v
        assert_close(x, a)
    x[0] = fw.to_tensor([1, 2, 3, 4, 5], device=device)
    a[0] = [1, 2, 3, 4, 5]
    assert_close(x, a)


def test_setitem_gradient_and_inplace(device):
    w = fw.ones([3], device=device)
    w.stop_gradient = False
    y = w * 2.0
    y[1] = 0.0
    y.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), [2, 0, 2])
    z = fw.ones([2], device=device)
    z += 1
    z *= 3
    np.testing.assert_array_equal(z.numpy(), [6, 6])


def test_dlpack_in_and_out_on_cpu():
    with fw.device("cpu"):  # whatever OARLOCK_DEVICE makes the default
        a = np.arange(6, dtype=np.float32).reshape(2, 3)
        t = fw.from_dlpack(a)
        np.testing.assert_array_equal(t.numpy(), a)
        back = np.from_dlpack(t)
        np.testing.assert_array_equal(back, a)


def test_dlpack_with_torch():
    torch = pytest.importorskip(
        "torch", reason="torch is not installed: the DLPack exchange with torch is not tested"
    )
    with fw.device("cpu"):
        t = fw.from_dlpack(np.arange(6, dtype=np.float32).reshape(2, 3))
        tt = torch.from_dlpack(t)
        assert tuple(tt.shape) == (2, 3) and float(tt.sum()) == 15.0
        np.testing.assert_array_equal(fw.from_dlpack(torch.arange(4)).numpy(), np.arange(4))


def test_repr_and_scalars(device):
    x = fw.to_tensor([1.0, 2.0], device=device)
    assert "Tensor(shape=[2], dtype=float32" in repr(x)
    assert float(x[0]) == 1.0 and int(x[1]) == 2 and bool(x[1] > 1)
    assert len(x) == 2
