"""Top-level high-level API (issue 17): fw.Model over fw.io.DataLoader (fit, evaluate,
predict, save/load, callbacks, bf16 AMP), fw.summary, fw.flops and fw.metric.Accuracy,
checked against numpy and hand counts."""

from __future__ import annotations

import io

import numpy as np
import pytest

import framework as fw


def _data(n=128, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 4)).astype(np.float32)
    y = (x[:, 0] + x[:, 1] > 0).astype(np.int64)
    return x, y, fw.io.TensorDataset([fw.to_tensor(x), fw.to_tensor(y)])


def _net():
    return fw.nn.Sequential(fw.nn.Linear(4, 16), fw.nn.ReLU(), fw.nn.Linear(16, 2))


def test_model_fit_evaluate_predict_save_load(tmp_path):
    fw.seed(0)
    x, y, data = _data()
    model = fw.Model(_net())
    model.prepare(
        fw.optimizer.Adam(0.02, parameters=model.parameters()), fw.nn.CrossEntropyLoss(), fw.metric.Accuracy()
    )
    before = model.evaluate(data, batch_size=64, verbose=0)
    log = io.StringIO()
    model.fit(
        data,
        eval_data=data,
        epochs=8,
        batch_size=16,
        verbose=2,
        log_freq=4,
        callbacks=[fw.callbacks.ProgBarLogger(4, 2, file=log)],
    )
    assert "Epoch 8/8" in log.getvalue() and "loss:" in log.getvalue()
    after = model.evaluate(fw.io.DataLoader(data, batch_size=32), verbose=0)
    assert after["loss"][0] < 0.5 * before["loss"][0] and after["acc"] > 0.9
    # evaluate's numbers are the network's, recomputed here with numpy
    logits = model.predict(data, batch_size=50, stack_outputs=True)[0]
    assert logits.shape == (128, 2)
    ls = logits - logits.max(1, keepdims=True)
    ls = ls - np.log(np.exp(ls).sum(1, keepdims=True))
    np.testing.assert_allclose(after["loss"][0], -ls[np.arange(128), y].mean(), rtol=1e-5)
    np.testing.assert_allclose(after["acc"], (logits.argmax(1) == y).mean())
    batches = model.predict(data, batch_size=50)
    assert [b.shape[0] for b in batches[0]] == [50, 50, 28]
    model.save(str(tmp_path / "ckpt"))
    other = fw.Model(_net())
    other.prepare(fw.optimizer.Adam(0.02, parameters=other.parameters()), fw.nn.CrossEntropyLoss())
    other.load(str(tmp_path / "ckpt"))
    np.testing.assert_allclose(other.predict(data, batch_size=128, stack_outputs=True)[0], logits, rtol=1e-6)
    with pytest.raises(fw.OpArgumentError, match=r"\[Model.load\]"):
        other.load(str(tmp_path / "missing"))


def test_model_train_batch_and_errors():
    fw.seed(1)
    x, y, _ = _data(8)
    model = fw.Model(_net())
    with pytest.raises(fw.OpArgumentError, match=r"\[Model.train_batch\] no optimizer"):
        model.train_batch([fw.to_tensor(x)], [fw.to_tensor(y)])
    model.prepare(fw.optimizer.SGD(0.1, parameters=model.parameters()), fw.nn.CrossEntropyLoss())
    l0 = model.train_batch([fw.to_tensor(x)], [fw.to_tensor(y)])[0]
    l1 = model.eval_batch([fw.to_tensor(x)], [fw.to_tensor(y)])[0]
    assert l1 < l0
    with pytest.raises(fw.OpArgumentError, match=r"\[Model.prepare\] metrics"):
        model.prepare(metrics=["acc"])


def test_early_stopping_stops_fit():
    fw.seed(2)
    _, _, data = _data(32)

    class Counter(fw.callbacks.Callback):
        epochs = 0

        def on_epoch_end(self, epoch, logs=None):
            Counter.epochs += 1

    model = fw.Model(_net())
    model.prepare(
        fw.optimizer.SGD(0.0, parameters=model.parameters()), fw.nn.CrossEntropyLoss()
    )  # lr 0: no improvement
    model.fit(
        data,
        eval_data=data,
        epochs=20,
        batch_size=16,
        verbose=0,
        callbacks=[fw.callbacks.EarlyStopping("loss", patience=1), Counter()],
    )
    assert Counter.epochs == 3


def test_model_bf16_amp_trains():
    fw.seed(3)
    _, _, data = _data()
    model = fw.Model(_net())
    model.prepare(
        fw.optimizer.Adam(0.02, parameters=model.parameters()),
        fw.nn.CrossEntropyLoss(),
        fw.metric.Accuracy(),
        amp_configs={"level": "O1", "dtype": "bfloat16", "init_loss_scaling": 128.0},
    )
    model.fit(data, epochs=6, batch_size=16, verbose=0)
    assert model.evaluate(data, batch_size=64, verbose=0)["acc"] > 0.85
    assert str(model.network[0].weight.dtype) == "float32"


def test_accuracy_metric_against_numpy():
    rng = np.random.default_rng(4)
    p = rng.standard_normal((50, 6))
    y = rng.integers(0, 6, 50)
    m = fw.metric.Accuracy(topk=(1, 3))
    assert m.name() == ["acc_top1", "acc_top3"]
    top3 = np.argsort(-p, 1)[:, :3]
    want1, want3 = (top3[:, 0] == y).mean(), (top3 == y[:, None]).any(1).mean()
    got = m.update(m.compute(fw.to_tensor(p[:20]), fw.to_tensor(y[:20, None])))
    np.testing.assert_allclose(
        got, [(top3[:20, 0] == y[:20]).mean(), (top3[:20] == y[:20, None]).any(1).mean()]
    )
    m.update(m.compute(fw.to_tensor(p[20:]), fw.to_tensor(np.eye(6)[y[20:]])))  # one-hot labels
    np.testing.assert_allclose(m.accumulate(), [want1, want3])
    m.reset()
    assert m.accumulate() == [0.0, 0.0]
    assert float(fw.metric.accuracy(fw.to_tensor(p), fw.to_tensor(y))) == pytest.approx(want1)
    with pytest.raises(fw.OpArgumentError, match=r"\[Accuracy\] pred must have"):
        fw.metric.Accuracy(topk=7).compute(fw.to_tensor(p), fw.to_tensor(y))


def test_summary_table_and_counts(capsys):
    net = fw.nn.Sequential(
        fw.nn.Conv2D(3, 8, 3, padding=1),
        fw.nn.BatchNorm2D(8),
        fw.nn.ReLU(),
        fw.nn.Flatten(),
        fw.nn.Linear(8 * 5 * 5, 10),
    )
    info = fw.summary(net, (None, 3, 5, 5))
    want = (8 * 3 * 9 + 8) + (8 + 8) + (200 * 10 + 10)
    assert info == {"total_params": want, "trainable_params": want}
    out = capsys.readouterr().out
    assert "[1, 8, 5, 5]" in out and "[1, 10]" in out and "Linear" in out and f"Total params: {want:,}" in out
    spec = fw.static.InputSpec([None, 3, 5, 5], "float32", "x")
    assert fw.summary(net, [spec]) == info
    assert net.training  # summary leaves the mode as it found it


def test_flops_counts_linear_and_convolutions(capsys):
    net = fw.nn.Sequential(
        fw.nn.Conv2D(3, 8, 3, padding=1),
        fw.nn.ReLU(),
        fw.nn.Conv2D(8, 4, 3, stride=2, groups=2, bias_attr=False),
        fw.nn.Flatten(),
        fw.nn.Linear(4 * 2 * 2, 10),
    )
    conv1 = 8 * 5 * 5 * (3 * 9 + 1)  # outputs x (kernel volume x C_in/groups + bias)
    conv2 = 4 * 2 * 2 * (4 * 9)
    lin = 16 * 10
    assert fw.flops(net, [1, 3, 5, 5], print_detail=True) == conv1 + conv2 + lin
    assert "Conv2D" in capsys.readouterr().out
    assert fw.flops(fw.nn.Linear(4, 8), [2, 4]) == 2 * 4 * 8
    assert (
        fw.flops(net, [1, 3, 5, 5], custom_ops={fw.nn.ReLU: lambda layer, ins, out: out.numel()})
        == conv1 + conv2 + lin + 8 * 25
    )
    t = fw.nn.Conv2DTranspose(2, 3, 3, stride=2)
    assert fw.flops(t, [1, 2, 4, 4]) == 2 * 16 * (3 * 9) + 3 * 9 * 9
