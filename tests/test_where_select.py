"""The cpu plugin's C ``where`` (plugins/cpu/index.c ``where_select``): the branchless select per
element (relu's gradient) and the whole-row copies, bit for bit numpy's ``where``."""

from __future__ import annotations

import numpy as np
import pytest

import framework as fw
from plugins.cpu import index

# (condition, x, y) shapes: every operand full, or broadcast along the row or the rows
SHAPES = [
    ((64, 40), (64, 40), (64, 40)),
    ((64, 40), (1, 1), (64, 40)),  # relu's gradient: where(out == 0, 0, g)
    ((64, 40), (64, 40), (1, 1)),
    ((64, 40), (1, 40), (64, 1)),
    ((4, 16, 33), (16, 33), (4, 1, 33)),
    ((64, 1), (64, 40), (1, 40)),  # a condition constant along the row: rows copied
]
DTYPES = ["float32", "float64", "int32", "int64", "bool", "uint8", "int16", "bfloat16"]


def _sample(rng, shape, dt):
    if dt == "bool":
        return rng.random(shape) < 0.5
    if dt == "bfloat16":
        return rng.standard_normal(shape).astype(fw.bfloat16)
    if np.dtype(dt).kind == "f":
        a = rng.standard_normal(shape).astype(dt)
        flat = a.reshape(-1)
        flat[::7] = np.nan
        flat[1::5] = -0.0
        if flat.size > 2:
            flat.view(np.uint32 if dt == "float32" else np.uint64)[2] |= 0x5  # a NaN payload
            flat[2] = flat[2] if np.isnan(flat[2]) else np.nan
        return a
    return rng.integers(-100, 100, shape).astype(dt)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("shapes", SHAPES)
def test_c_where_is_numpy_where_bit_for_bit(shapes, dt):
    rng = np.random.default_rng(len(shapes[0]) + DTYPES.index(dt))
    sc, sx, sy = shapes
    c = rng.random(sc) < 0.5
    x, y = _sample(rng, sx, dt), _sample(rng, sy, dt)
    want = np.where(c, x, y)
    z = np.empty(want.shape, want.dtype)
    ins = [a.reshape((1,) * (z.ndim - a.ndim) + a.shape) for a in (c, x, y)]
    call = index.where_call(z, *ins)
    if call is None:
        pytest.skip("no C compiler for the plugin's own C")
    call()
    assert z.tobytes() == want.tobytes(), (shapes, dt)


def test_where_through_the_op_on_cpu_keeps_bits():
    rng = np.random.default_rng(7)
    g = rng.standard_normal((128, 1024)).astype(np.float32)
    g[::3, ::5] = np.nan
    out = np.maximum(rng.standard_normal((128, 1024)).astype(np.float32), 0)
    c = fw.to_tensor(out, device="cpu") == 0
    got = fw.where(c, fw.to_tensor(np.zeros((1, 1), np.float32), device="cpu"), fw.to_tensor(g, device="cpu"))
    want = np.where(out == 0, np.float32(0), g)
    assert got.numpy().tobytes() == want.tobytes()


def test_short_rows_decline():
    z = np.empty((8, 4), np.float32)  # rows that do not merge (y broadcast over them): 4 long
    assert index.where_call(z, np.ones((8, 4), bool), z, np.zeros((1, 4), np.float32)) is None
