"""fw.jit.save(..., format="paddle") of the ops whose export needs the shape at run time or a
form of op Paddle writes in its own way: ``prod``, in-place ops (traced to their out-of-place
forms), ``full`` of a dynamic shape, reshapes with two dynamic dims, item assignment, and
causal / boolean-masked attention over dynamic lengths. Each file is run by real Paddle
(jit.load and the Predictor, in a child process) and by Oarlock's own import, and compared
with Oarlock's eager outputs (rtol 1e-5). The ``pd_op`` spellings are the ones real Paddle
3.3.1's own jit.save writes for the same Python code (checked here on the written JSON)."""

from __future__ import annotations

import json
from collections import Counter

import framework as fw
from framework.static import InputSpec
from tests.test_paddle_format_export import needs_paddle, rand, roundtrip, roundtrip_many

F = fw.nn.functional


def op_counts(prefix: str) -> Counter:
    """How many times each op occurs in the written program (regions included)."""
    with open(prefix + ".json") as f:
        doc = json.load(f)
    seen: Counter = Counter()

    def walk(ops):
        for op in ops:
            seen[op["#"]] += 1
            for r in op.get("regions", []):
                for b in r["blocks"]:
                    walk(b["ops"])

    walk(doc["program"]["regions"][0]["blocks"][0]["ops"])
    return seen


class Prod(fw.nn.Layer):
    def forward(self, x):
        return fw.prod(x, axis=1, keepdim=True) + fw.prod(x, axis=[0, 1])


@needs_paddle
def test_prod(tmp_path):
    """``pd_op.prod(x, full_int_array axes)`` with keepdim and reduce_all, as Paddle writes it;
    a program without weights has no .pdiparams (as Paddle's own files)."""
    prefix = roundtrip(Prod(), [InputSpec([None, 3], "float32", "x")], [rand(4, 3) + 0.5], tmp_path)
    assert op_counts(prefix)["1.prod"] == 2


class InPlace(fw.nn.Layer):
    def forward(self, x):
        y = x * 2
        y.add_(x)
        y.exp_()
        y.scale_(0.5)
        z = (x * 1).zero_() + 1.5  # zero_/fill_ of a dynamic shape: full_with_tensor
        w = (x * 1).fill_(3.0)
        return y.clip_(0.0, 4.0) + z * w


@needs_paddle
def test_in_place_ops(tmp_path):
    prefix = roundtrip(InPlace(), [InputSpec([None, 3], "float32", "x")], [rand(5, 3)], tmp_path)
    assert op_counts(prefix)["1.full_with_tensor"] == 2


class SetItem(fw.nn.Layer):
    def forward(self, x):
        y = x * 2
        y[:, 1] = 0.0
        y[1:3, 0:2] = x[0:2, 1:3]
        return y


@needs_paddle
def test_item_assignment(tmp_path):
    """``y[i] = v`` (traced to a scatter over the flattened tensor): ``pd_op.scatter``."""
    prefix = roundtrip(SetItem(), [InputSpec([4, 3], "float32", "x")], [rand(4, 3)], tmp_path)
    assert op_counts(prefix)["1.scatter"] == 2


class ScatterAdd(fw.nn.Layer):
    def forward(self, x):  # x [B, 4]
        rows = fw.scatter_add(x * 1, fw.to_tensor([0, 0, 1]), x[1:4] * 2)  # repeated row 0
        cols = fw.scatter_add(
            x * 1, fw.to_tensor([[3, 1], [3, 0]]), x[:, :1].unsqueeze(-1).expand([x.shape[0], 2, 2]), axis=1
        )
        return rows, cols


@needs_paddle
def test_scatter_add(tmp_path):
    """``pd_op.index_add`` (repeated indices accumulate), along axis 0 and 1, a 2-D index."""
    cases = [[rand(n, 4, seed=n)] for n in (4, 6)]
    prefix = roundtrip_many(ScatterAdd(), [InputSpec([None, 4], "float32", "x")], cases, tmp_path)
    assert op_counts(prefix)["1.index_add"] == 2


class Full(fw.nn.Layer):
    def forward(self, x):
        return x + fw.full([x.shape[0], 4], 3.0) + fw.ones_like(x) + fw.zeros_like(x).fill_(2.0)


@needs_paddle
def test_full_of_a_dynamic_shape(tmp_path):
    """``pd_op.full_with_tensor(value, stack([shape64(x)[0], 4]))``: Paddle's own spelling of
    ``paddle.full([paddle.shape(x)[0], 4], v)``; several batch sizes through one file."""
    cases = [[rand(n, 4, seed=n)] for n in (1, 3, 7)]
    prefix = roundtrip_many(Full(), [InputSpec([None, 4], "float32", "x")], cases, tmp_path)
    ops = op_counts(prefix)
    assert ops["1.full_with_tensor"] == 3 and ops["1.shape64"] >= 1 and ops["1.stack"] == 3


class Reshape2(fw.nn.Layer):
    """Reshapes whose target holds two dynamic dims that are not the input's at the same place."""

    def forward(self, x):  # [B, T, 8]
        b, t = x.shape[0], x.shape[1]
        y = x.reshape([t, b * 8]) * 2  # the same memory read as [T, 8B]
        z = x.transpose([1, 0, 2]).reshape([t, b, 2, 4])  # dims at their places: 0 in Paddle's shape
        return y.reshape([b, t * 2, 4]) + 1, z


@needs_paddle
def test_reshape_with_two_dynamic_dims(tmp_path):
    cases = [[rand(2, 3, 8)], [rand(5, 1, 8, seed=1)], [rand(1, 6, 8, seed=2)]]
    prefix = roundtrip_many(Reshape2(), [InputSpec([None, None, 8], "float32", "x")], cases, tmp_path)
    assert op_counts(prefix)["1.stack"] == 2  # the two shapes computed at run time


class Attention(fw.nn.Layer):
    """Causal attention and attention under a boolean key mask (made from the input, so that
    its dims are the input's), over a dynamic batch and a dynamic length."""

    def __init__(self) -> None:
        super().__init__()
        self.w = self.create_parameter([16, 48])

    def forward(self, x):
        b, t = x.shape[0], x.shape[1]
        keep = (x[:, :, 0] > -0.5).unsqueeze(1).unsqueeze(1)  # [B, 1, 1, T]
        q, k, v = (z.reshape([b, t, 2, 8]) for z in fw.split(fw.matmul(x, self.w), 3, axis=-1))
        causal = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        masked = F.scaled_dot_product_attention(q, k, v, attn_mask=keep)
        return causal.reshape([b, t, 16]), masked


@needs_paddle
def test_causal_and_boolean_masked_attention_dynamic(tmp_path):
    fw.seed(7)
    cases = []
    for n, (b, t) in enumerate([(2, 5), (1, 9), (3, 2)]):
        x = rand(b, t, 16, seed=10 + n)
        x[:, 0, 0] = 1.0  # every row keeps at least one key
        cases.append([x])
    prefix = roundtrip_many(Attention(), [InputSpec([None, None, 16], "float32", "x")], cases, tmp_path)
    ops = op_counts(prefix)
    assert ops["1.tril"] == 1 and ops["1.where"] == 2 and ops["1.full_like"] >= 2


class ProductDims(fw.nn.Layer):
    """A dim that is a product of two dynamic dims (``b*t``) in a run-time shape."""

    def forward(self, x):
        b, t = x.shape[0], x.shape[1]
        flat = x.reshape([b * t, 4])
        ones = fw.full([b * t, 1], 2.0)
        return flat * ones


@needs_paddle
def test_a_product_of_dynamic_dims_in_a_run_time_shape(tmp_path):
    """``full([b*t, 1])`` with b and t both dynamic: the shape is b's and t's run-time scalars
    multiplied (``pd_op.multiply``), at several sizes of both."""
    prefix = roundtrip_many(
        ProductDims(),
        [InputSpec([None, None, 4], "float32", "x")],
        [[rand(2, 3, 4)], [rand(5, 1, 4)], [rand(1, 7, 4)]],
        tmp_path,
    )
    assert op_counts(prefix)["1.multiply"] >= 1
