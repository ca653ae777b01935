"""Paddle's checkpoint files and parameter names, checked against real Paddle (the oracle).

A state dict saved by real ``paddle.save`` loads with ``fw.load`` and ``set_state_dict`` into the
same model built with Oarlock and gives Paddle's outputs; ``fw.save`` to ``.pdparams`` writes a
file real ``paddle.load`` reads; a pickle asking for any other global is refused by name.
"""

from __future__ import annotations

import os
import pickle

import numpy as np
import pytest

import framework as fw

paddle = pytest.importorskip(
    "paddle", reason="real Paddle is the oracle for these tests (pip install paddlepaddle)"
)


def _models():
    """(name, build(nn), input array, call) for each model built the same way in both frameworks."""
    rng = np.random.default_rng(0)
    return [
        ("linear", lambda nn: nn.Linear(4, 3), rng.standard_normal((2, 4)).astype("float32")),
        (
            "conv2d",
            lambda nn: nn.Conv2D(2, 3, 3, padding=1),
            rng.standard_normal((1, 2, 5, 5)).astype("float32"),
        ),
        ("batchnorm2d", lambda nn: nn.BatchNorm2D(3), rng.standard_normal((2, 3, 4, 4)).astype("float32")),
        ("lstm", lambda nn: nn.LSTM(4, 5, num_layers=2), rng.standard_normal((2, 3, 4)).astype("float32")),
        (
            "gru_bidirect",
            lambda nn: nn.GRU(4, 5, direction="bidirect"),
            rng.standard_normal((2, 3, 4)).astype("float32"),
        ),
        ("simple_rnn", lambda nn: nn.SimpleRNN(4, 5), rng.standard_normal((2, 3, 4)).astype("float32")),
        ("embedding", lambda nn: nn.Embedding(10, 3), np.array([[1, 4, 9], [0, 2, 2]], dtype="int64")),
        ("layernorm", lambda nn: nn.LayerNorm(4), rng.standard_normal((2, 4)).astype("float32")),
        (
            "instancenorm2d",
            lambda nn: nn.InstanceNorm2D(3),
            rng.standard_normal((2, 3, 4, 4)).astype("float32"),
        ),
        ("groupnorm", lambda nn: nn.GroupNorm(2, 4), rng.standard_normal((2, 4, 3, 3)).astype("float32")),
        ("prelu", lambda nn: nn.PReLU(3, init=0.1), rng.standard_normal((2, 3, 4)).astype("float32")),
    ]


def _first(out):
    return out[0] if isinstance(out, (tuple, list)) else out


@pytest.mark.parametrize("name,build,x", _models(), ids=[m[0] for m in _models()])
def test_paddle_state_dict_loads_and_gives_paddles_outputs(tmp_path, name, build, x):
    paddle.seed(1)
    ref = build(paddle.nn)
    noise = np.random.default_rng(7)
    for p in ref.parameters():  # away from the default initial values (ones, zeros, init=0.1)
        p.set_value((p.numpy() + noise.uniform(0.5, 1.5, p.shape)).astype(p.numpy().dtype))
    if name == "batchnorm2d":  # non-trivial running statistics
        ref(paddle.to_tensor(x * 3 + 1))
    ref.eval()
    path = os.path.join(tmp_path, "model.pdparams")
    paddle.save(ref.state_dict(), path)
    want = _first(ref(paddle.to_tensor(x))).numpy()

    ours = build(fw.nn)
    assert list(ours.state_dict()) == list(ref.state_dict())  # Paddle's names, in Paddle's order
    missing, unexpected = ours.set_state_dict(fw.load(path))
    assert (missing, unexpected) == ([], [])
    ours.eval()
    got = _first(ours(fw.to_tensor(x))).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_lstm_aliases_share_one_parameter():
    lstm = fw.nn.LSTM(3, 4, direction="bidirect")
    sd = lstm.state_dict()
    assert sd["weight_ih_l0"] is sd["0.cell_fw.weight_ih"]
    assert sd["weight_hh_l0_reverse"] is sd["0.cell_bw.weight_hh"]
    assert len(lstm.parameters()) == 8  # each parameter once, for the optimizer


def test_fw_save_pdparams_is_read_by_real_paddle(tmp_path):
    net = fw.nn.Linear(3, 2)
    path = str(tmp_path / "ours.pdparams")
    fw.save({**net.state_dict(), "step": 7, "nested": [fw.to_tensor([1.5, 2.5])]}, path)
    got = paddle.load(path)
    assert got["step"] == 7
    np.testing.assert_array_equal(got["weight"].numpy(), net.weight.numpy())
    np.testing.assert_array_equal(got["nested"][0].numpy(), [1.5, 2.5])
    ref = paddle.nn.Linear(3, 2)
    ref.set_state_dict({k: got[k] for k in ("weight", "bias")})
    x = np.ones((1, 3), "float32")
    np.testing.assert_allclose(ref(paddle.to_tensor(x)).numpy(), net(fw.to_tensor(x)).numpy(), rtol=1e-6)


def test_paddle_nested_and_optimizer_files(tmp_path):
    p = str(tmp_path / "nest.pdparams")
    paddle.save({"a": paddle.to_tensor([1.0, 2.0]), "n": 3, "l": [paddle.zeros([2], dtype="int64")]}, p)
    got = fw.load(p)
    assert got["n"] == 3
    np.testing.assert_array_equal(got["a"].numpy(), [1.0, 2.0])
    assert got["l"][0].dtype == fw.int64
    assert isinstance(fw.load(p, return_numpy=True)["a"], np.ndarray)

    net = paddle.nn.Linear(2, 2)
    opt = paddle.optimizer.Adam(parameters=net.parameters())
    net(paddle.ones([1, 2])).sum().backward()
    opt.step()
    q = str(tmp_path / "adam.pdopt")
    paddle.save(opt.state_dict(), q)
    state = fw.load(q, return_numpy=True)
    assert "StructuredToParameterName@@" not in state  # dropped as paddle.load drops it
    want = {k: v.numpy() for k, v in opt.state_dict().items() if hasattr(v, "numpy")}
    assert set(want) <= set(state)
    for k, v in want.items():
        np.testing.assert_array_equal(state[k], v)


class _Evil:
    def __reduce__(self):
        return (os.system, ("echo should-never-run",))


def test_pickle_with_a_foreign_global_is_refused_by_name(tmp_path):
    p = str(tmp_path / "evil.pdparams")
    with open(p, "wb") as f:
        pickle.dump({"w": np.ones(2), "x": _Evil()}, f, protocol=4)
    with pytest.raises(fw.CheckpointError, match=r"global '(posix|nt)\.system'.*refused"):
        fw.load(p)


def test_truncated_pickle_is_a_checkpoint_error(tmp_path):
    p = str(tmp_path / "cut.pdparams")
    data = pickle.dumps({"w": np.ones((4, 4), "float32")}, protocol=4)
    with open(p, "wb") as f:
        f.write(data[: len(data) // 2])
    with pytest.raises(fw.CheckpointError, match="damaged or truncated"):
        fw.load(p)


def test_save_refuses_objects_paddle_cannot_read(tmp_path):
    with pytest.raises(fw.CheckpointError, match=r"cannot write a object"):
        fw.save({"x": object()}, str(tmp_path / "bad.pdparams"))


def test_bfloat16_travels_as_paddles_raw_bits(tmp_path):
    p = str(tmp_path / "bf.pdparams")
    paddle.save({"w": paddle.to_tensor([1.5, -2.0, 3.0], dtype="bfloat16")}, p)
    got = fw.load(p)["w"]
    assert got.dtype == fw.bfloat16 and got.astype("float32").tolist() == [1.5, -2.0, 3.0]
    q = str(tmp_path / "ours.pdparams")
    fw.save({"w": fw.to_tensor([0.5, 4.0]).astype("bfloat16")}, q)
    back = paddle.load(q)["w"]
    ref = paddle.nn.Linear(2, 1)
    ref.to(dtype="bfloat16")
    ref.set_state_dict({"weight": back.reshape([2, 1]), "bias": ref.bias})
    np.testing.assert_array_equal(ref.weight.astype("float32").numpy().ravel(), [0.5, 4.0])


def test_paddles_pdopt_is_refused_by_the_optimizer_not_ignored(tmp_path):
    net = paddle.nn.Linear(2, 2)
    opt = paddle.optimizer.Adam(parameters=net.parameters())
    net(paddle.ones([1, 2])).sum().backward()
    opt.step()
    q = str(tmp_path / "adam.pdopt")
    paddle.save(opt.state_dict(), q)
    ours = fw.optimizer.Adam(parameters=fw.nn.Linear(2, 2).parameters())
    with pytest.raises(fw.OpArgumentError, match=r"unexpected key.*Paddle's internal parameter names"):
        ours.set_state_dict(fw.load(q))


def test_a_whole_paddle_model_loads_by_name(tmp_path):
    def build(lib):
        class Net(lib.nn.Layer):
            def __init__(self):
                super().__init__()
                self.features = lib.nn.Sequential(
                    lib.nn.Conv2D(1, 4, 3, padding=1),
                    lib.nn.BatchNorm2D(4),
                    lib.nn.ReLU(),
                    lib.nn.MaxPool2D(2),
                )
                self.embed = lib.nn.Embedding(10, 6)
                self.rnn = lib.nn.LSTM(6, 5, direction="bidirect")
                self.norm = lib.nn.LayerNorm(10)
                self.head = lib.nn.Linear(4 * 2 * 2 + 10, 3)

            def forward(self, img, ids):
                a = lib.flatten(self.features(img), 1)
                seq, _ = self.rnn(self.embed(ids))
                return self.head(lib.concat([a, self.norm(seq[:, -1])], axis=1))

        return Net()

    paddle.seed(3)
    ref = build(paddle)
    ref(paddle.randn([2, 1, 4, 4]), paddle.to_tensor([[1, 2, 3], [4, 5, 6]]))  # BatchNorm statistics
    ref.eval()
    path = str(tmp_path / "net.pdparams")
    paddle.save(ref.state_dict(), path)
    ours = build(fw)
    assert ours.set_state_dict(fw.load(path)) == ([], [])
    ours.eval()
    img = np.random.default_rng(4).standard_normal((2, 1, 4, 4)).astype("float32")
    ids = np.array([[7, 0, 2], [9, 9, 1]], "int64")
    want = ref(paddle.to_tensor(img), paddle.to_tensor(ids)).numpy()
    got = ours(fw.to_tensor(img), fw.to_tensor(ids)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
