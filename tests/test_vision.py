"""``fw.vision`` against real Paddle (issue 40): pooling's Paddle semantics (ceil_mode,
return_mask, NHWC, divisor_override), the convolution's default initialisation, the
cross-entropy bound, ConvNormActivation, transforms and datasets; and every example in the
vision docstrings runs. Paddle-dependent cases skip without Paddle.
"""

from __future__ import annotations

import doctest
import gzip
import importlib.util
import inspect
import io
import os
import pickle
import random
import struct
import tarfile

import numpy as np
import pytest

import framework as fw
import framework.nn.functional as F
from framework.vision import datasets, models, ops, transforms

from .conftest import assert_close
from .gradcheck import check_grad

HAVE_PADDLE = importlib.util.find_spec("paddle") is not None
needs_paddle = pytest.mark.skipif(not HAVE_PADDLE, reason="real Paddle is not installed (the oracle)")


def _paddle():  # type: ignore[no-untyped-def]
    import paddle

    return paddle


# -- docstrings ------------------------------------------------------------------------------
def _public(module):  # type: ignore[no-untyped-def]
    for name in getattr(module, "__all__", []):
        obj = getattr(module, name)
        if inspect.ismodule(obj):
            continue
        yield f"{module.__name__}.{name}", obj


_MODULES = [fw.vision, models, ops, transforms, datasets]
_DOCS = [(f"{m.__name__}", m) for m in _MODULES] + [p for m in _MODULES[1:] for p in _public(m)]


@pytest.mark.parametrize("name,obj", _DOCS, ids=[n for n, _ in _DOCS])
def test_vision_docstring_has_summary_and_runs(name: str, obj: object) -> None:
    doc = inspect.getdoc(obj) or ""
    lines = doc.splitlines()
    assert lines and lines[0].strip() and (len(lines) == 1 or not lines[1].strip()), (
        f"{name}: no one-line summary"
    )
    assert ">>>" in doc, f"{name}: no >>> example"
    finder = doctest.DocTestFinder(recurse=False)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for test in finder.find(obj, name, globs={}):
        runner.run(test)
    assert runner.failures == 0, f"{name}: {runner.failures} example(s) failed"


# -- pooling ---------------------------------------------------------------------------------
_POOLS = [
    ("max", dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
    ("max", dict(kernel_size=(3, 2), stride=(2, 3), padding=0, ceil_mode=True)),
    ("max", dict(kernel_size=2, stride=2, data_format="NHWC")),
    ("avg", dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
    ("avg", dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, exclusive=False)),
    ("avg", dict(kernel_size=2, stride=3, ceil_mode=True, exclusive=False)),
    ("avg", dict(kernel_size=2, stride=2, padding=1, divisor_override=3)),
    ("avg", dict(kernel_size=2, stride=2, padding=1, divisor_override=3, exclusive=False)),
    ("avg", dict(kernel_size=3, stride=1, padding=1, data_format="NHWC", exclusive=False)),
]


@needs_paddle
@pytest.mark.parametrize("kind,kw", _POOLS, ids=[f"{k}-{i}" for i, (k, _) in enumerate(_POOLS)])
def test_pool2d_matches_paddle(kind: str, kw: dict, device: str) -> None:
    paddle = _paddle()
    x = np.random.default_rng(0).standard_normal((2, 3, 7, 8)).astype("float32")
    fn = {"max": "max_pool2d", "avg": "avg_pool2d"}[kind]
    want = getattr(paddle.nn.functional, fn)(paddle.to_tensor(x), **kw).numpy()
    got = getattr(F, fn)(fw.to_tensor(x, device=device), **kw).numpy()
    assert got.shape == want.shape
    assert_close(got, want)


@needs_paddle
def test_max_pool2d_return_mask_matches_paddle(device: str) -> None:
    paddle = _paddle()
    x = np.random.default_rng(1).permutation(2 * 3 * 7 * 8).reshape(2, 3, 7, 8).astype("float32")
    for kw in (
        dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
        dict(kernel_size=(2, 3), stride=(3, 2)),
    ):
        xs = x.transpose(0, 2, 3, 1).copy() if kw.get("data_format") == "NHWC" else x
        po, pm = paddle.nn.functional.max_pool2d(paddle.to_tensor(xs), return_mask=True, **kw)
        fo, fm = F.max_pool2d(fw.to_tensor(xs, device=device), return_mask=True, **kw)
        np.testing.assert_array_equal(fo.numpy(), po.numpy())
        np.testing.assert_array_equal(fm.numpy(), pm.numpy())
        assert fm.dtype == fw.int32
    with pytest.raises(fw.OpArgumentError, match=r"return_mask=True needs data_format='NCHW'"):
        F.max_pool2d(fw.to_tensor(x), 2, return_mask=True, data_format="NHWC")


def test_max_pool2d_mask_gradient_flows_through_the_values() -> None:
    x = fw.to_tensor(np.random.default_rng(2).permutation(36).reshape(1, 1, 6, 6).astype("float64"))
    x.stop_gradient = False
    out, mask = F.max_pool2d(x, 2, return_mask=True)
    out.sum().backward()
    g = x.grad.numpy().ravel()
    assert g.sum() == 9 and set(np.flatnonzero(g)) == set(mask.numpy().ravel())


@needs_paddle
@pytest.mark.parametrize(
    "p,kw",
    [
        (2.0, dict(kernel_size=2, stride=2, ceil_mode=True)),
        (3.0, dict(kernel_size=3, stride=1, padding=1)),
        (float("inf"), dict(kernel_size=2)),
        (2.0, dict(kernel_size=(2, 3), data_format="NHWC")),
    ],
)
def test_lp_pool_matches_paddle(p: float, kw: dict, device: str) -> None:
    paddle = _paddle()
    x = np.abs(np.random.default_rng(9).standard_normal((2, 3, 5, 6))).astype("float32")
    want = paddle.nn.functional.lp_pool2d(paddle.to_tensor(x), p, **kw).numpy()
    assert_close(F.lp_pool2d(fw.to_tensor(x, device=device), p, **kw).numpy(), want)
    x1 = x[:, :, 0]
    kw1 = {"kernel_size": 2, "stride": 1, "ceil_mode": kw.get("ceil_mode", False)}
    want = paddle.nn.LPPool1D(p, **kw1)(paddle.to_tensor(x1)).numpy()
    assert_close(fw.nn.LPPool1D(p, **kw1)(fw.to_tensor(x1, device=device)).numpy(), want)


def test_lp_pool_gradient_matches_finite_differences() -> None:
    x = np.abs(np.random.default_rng(10).standard_normal((1, 2, 4, 5))) + 0.1
    check_grad(lambda t: F.lp_pool2d(t, 3.0, 2, 2, ceil_mode=True), x)


@needs_paddle
def test_adaptive_pools_with_uneven_windows_match_paddle(device: str) -> None:
    paddle = _paddle()
    x = np.random.default_rng(11).standard_normal((2, 3, 7, 10)).astype("float32")
    for fn, size in (("adaptive_avg_pool2d", (3, 4)), ("adaptive_max_pool2d", (4, 3))):
        want = getattr(paddle.nn.functional, fn)(paddle.to_tensor(x), size).numpy()
        assert_close(getattr(F, fn)(fw.to_tensor(x, device=device), size).numpy(), want)
    want = paddle.nn.functional.adaptive_avg_pool1d(paddle.to_tensor(x[:, :, 0]), 4).numpy()
    assert_close(F.adaptive_avg_pool1d(fw.to_tensor(x[:, :, 0], device=device), 4).numpy(), want)


@needs_paddle
def test_max_unpool_matches_paddle(device: str) -> None:
    paddle = _paddle()
    PF = paddle.nn.functional
    rng = np.random.default_rng(12)
    x2 = rng.permutation(2 * 3 * 6 * 8).reshape(2, 3, 6, 8).astype("float32")
    y, m = PF.max_pool2d(paddle.to_tensor(x2), 2, 2, return_mask=True)
    for kw in ({}, {"output_size": [7, 9]}):
        want = PF.max_unpool2d(y, m, 2, **kw).numpy()
        got = F.max_unpool2d(
            fw.to_tensor(y.numpy(), device=device), fw.to_tensor(m.numpy(), device=device), 2, **kw
        )
        np.testing.assert_array_equal(got.numpy(), want)
    x1 = x2[:, :, 0]
    y1, m1 = PF.max_pool1d(paddle.to_tensor(x1), 2, return_mask=True)
    got = fw.nn.MaxUnPool1D(2)(
        fw.to_tensor(y1.numpy(), device=device), fw.to_tensor(m1.numpy(), device=device)
    )
    np.testing.assert_array_equal(got.numpy(), PF.max_unpool1d(y1, m1, 2).numpy())
    x3 = rng.permutation(1 * 2 * 4 * 4 * 6).reshape(1, 2, 4, 4, 6).astype("float32")
    y3, m3 = PF.max_pool3d(paddle.to_tensor(x3), 2, return_mask=True)
    got = F.max_unpool3d(fw.to_tensor(y3.numpy(), device=device), fw.to_tensor(m3.numpy(), device=device), 2)
    np.testing.assert_array_equal(got.numpy(), PF.max_unpool3d(y3, m3, 2).numpy())


def test_max_unpool_gradient_and_errors() -> None:
    x = np.random.default_rng(13).permutation(40).reshape(1, 2, 4, 5).astype("float64")
    _, mask = F.max_pool2d(fw.to_tensor(x), 2, 2, return_mask=True)
    vals = np.random.default_rng(14).standard_normal(tuple(mask.shape))
    check_grad(lambda t: F.max_unpool2d(t, mask, 2, 2, output_size=[4, 5]), vals)
    with pytest.raises(fw.OpArgumentError, match=r"\[max_unpool2d\] indices must be integers"):
        F.max_unpool2d(fw.ones([1, 1, 2, 2]), fw.ones([1, 1, 2, 2]), 2)


def test_pool_errors_name_the_argument() -> None:
    x = fw.ones([1, 1, 4, 4])
    with pytest.raises(fw.OpArgumentError, match=r"\[avg_pool2d\] divisor_override"):
        F.avg_pool2d(x, 2, divisor_override=0)
    with pytest.raises(fw.OpArgumentError, match=r"\[max_pool2d\] data_format"):
        F.max_pool2d(x, 2, data_format="NCDHW")


@needs_paddle
def test_pool_layers_take_paddle_arguments() -> None:
    paddle = _paddle()
    x = np.random.default_rng(3).standard_normal((1, 2, 7, 7)).astype("float32")
    for cls, kw in (
        ("MaxPool2D", dict(kernel_size=3, stride=2, ceil_mode=True)),
        ("AvgPool2D", dict(kernel_size=3, stride=2, ceil_mode=True, exclusive=False)),
    ):
        want = getattr(paddle.nn, cls)(**kw)(paddle.to_tensor(x)).numpy()
        assert_close(getattr(fw.nn, cls)(**kw)(fw.to_tensor(x)).numpy(), want)


# -- convolution init ------------------------------------------------------------------------
@needs_paddle
@pytest.mark.parametrize("cin,cout,k,groups", [(8, 64, 3, 1), (8, 64, 3, 4), (16, 32, (1, 5), 16)])
def test_conv2d_default_init_is_paddles(cin: int, cout: int, k, groups: int) -> None:  # type: ignore[no-untyped-def]
    """Weights N(0, sqrt(2 / (in_channels * kh * kw))) whatever ``groups``, biases zero."""
    paddle = _paddle()
    paddle.seed(0)
    pc = paddle.nn.Conv2D(cin, cout, k, groups=groups)
    fw.seed(0)
    fc = fw.nn.Conv2D(cin, cout, k, groups=groups)
    assert tuple(fc.weight.shape) == tuple(pc.weight.shape)
    np.testing.assert_array_equal(fc.bias.numpy(), pc.bias.numpy())
    kh, kw = (k, k) if isinstance(k, int) else k
    want_std = np.sqrt(2.0 / (cin * kh * kw))
    for w in (fc.weight.numpy(), pc.weight.numpy()):
        assert abs(w.std() / want_std - 1) < 0.15 and abs(w.mean()) < 4 * want_std / np.sqrt(w.size)


def test_conv_bias_attr_true_is_the_default_bias() -> None:
    conv = fw.nn.Conv2D(2, 3, 1, bias_attr=True)
    assert tuple(conv.bias.shape) == (3,)
    assert fw.nn.Conv2D(2, 3, 1, bias_attr=False).bias is None


# -- cross-entropy ---------------------------------------------------------------------------
@needs_paddle
def test_cross_entropy_bounds_a_sample_as_paddle(device: str) -> None:
    """Paddle clips the logits minus their max at -64 before the softmax: [1000, -1000] with
    label 1 costs 64; the gradient stays softmax - one_hot."""
    paddle = _paddle()
    rng = np.random.default_rng(4)
    x = np.concatenate([[[1000.0, -1000.0, 3.0, 0.0]], rng.standard_normal((3, 4)) * 40]).astype("float32")
    y = np.array([[1], [0], [2], [3]])
    soft = rng.dirichlet(np.ones(4), size=4).astype("float32")
    for label, kw in ((y, {}), (soft, {"soft_label": True})):
        pt = paddle.to_tensor(x, stop_gradient=False)
        pl = paddle.nn.functional.cross_entropy(pt, paddle.to_tensor(label), reduction="none", **kw)
        pl.sum().backward()
        ft = fw.to_tensor(x, device=device, stop_gradient=False)
        fl = F.cross_entropy(ft, fw.to_tensor(label, device=device), reduction="none", **kw)
        fl.sum().backward()
        assert_close(fl.numpy(), pl.numpy())
        assert_close(ft.grad.numpy(), pt.grad.numpy(), atol=1e-6)
    assert float(F.cross_entropy(fw.to_tensor(x[:1]), fw.to_tensor(y[:1]))) == 64.0


# -- ConvNormActivation ----------------------------------------------------------------------
@needs_paddle
def test_conv_norm_activation_matches_paddle(device: str) -> None:
    paddle = _paddle()
    x = np.random.default_rng(5).standard_normal((2, 4, 6, 6)).astype("float32")
    for kw in (
        dict(kernel_size=3, stride=2),
        dict(kernel_size=1, norm_layer=None, activation_layer=None),
        dict(groups=4, dilation=2),
    ):
        pk = dict(kw)
        fk = dict(kw)
        for key, _pv, _fv in (("norm_layer", paddle.nn.BatchNorm2D, fw.nn.BatchNorm2D),):
            if key in kw and kw[key] is None:
                pk[key] = fk[key] = None
        paddle.seed(0)
        pb = paddle.vision.ops.ConvNormActivation(4, 8 if kw.get("groups") is None else 4, **pk)
        fb = ops.ConvNormActivation(4, 8 if kw.get("groups") is None else 4, **fk)
        state = {k: v.numpy() for k, v in pb.state_dict().items()}
        assert sorted(fb.state_dict()) == sorted(state)
        fb.set_state_dict({k: fw.to_tensor(v) for k, v in state.items()})
        fb.to(device)
        assert_close(fb(fw.to_tensor(x, device=device)).numpy(), pb(paddle.to_tensor(x)).numpy(), atol=1e-5)


# -- transforms ------------------------------------------------------------------------------
@needs_paddle
def test_transforms_match_paddle() -> None:
    paddle = _paddle()
    PT, T = paddle.vision.transforms, transforms
    rng = np.random.default_rng(6)
    img = rng.integers(0, 256, (9, 12, 3), dtype=np.uint8)
    pt = PT.ToTensor()(img)
    ft = T.ToTensor()(img)
    assert_close(ft.numpy(), pt.numpy())
    norm = dict(mean=[0.4, 0.5, 0.6], std=[0.2, 0.3, 0.4])
    assert_close(T.Normalize(**norm)(ft).numpy(), PT.Normalize(**norm)(pt).numpy())
    f = img.astype("float32")
    assert_close(T.Normalize(data_format="HWC", **norm)(f), PT.Normalize(data_format="HWC", **norm)(f))
    np.testing.assert_array_equal(T.Transpose()(img), PT.Transpose()(img))
    np.testing.assert_array_equal(T.CenterCrop((4, 7))(img), PT.CenterCrop((4, 7))(img))
    # padded crops, flips and resize: Paddle's numpy path needs OpenCV; its tensor path (CHW) is
    # the reference
    chw = paddle.to_tensor(f.transpose(2, 0, 1))
    for seed in range(3):
        random.seed(seed)
        want = PT.RandomCrop((5, 6), padding=1)(chw).numpy().transpose(1, 2, 0)
        random.seed(seed)
        np.testing.assert_array_equal(T.RandomCrop((5, 6), padding=1)(f), want)
    for seed in range(4):
        random.seed(seed)
        want = PT.RandomHorizontalFlip()(chw).numpy().transpose(1, 2, 0)
        random.seed(seed)
        np.testing.assert_array_equal(T.RandomHorizontalFlip()(f), want)
        random.seed(seed)
        want = PT.RandomVerticalFlip()(chw).numpy().transpose(1, 2, 0)
        random.seed(seed)
        np.testing.assert_array_equal(T.RandomVerticalFlip()(f), want)
    for size in ((5, 7), 6, (14, 20)):
        want = PT.Resize(size)(chw).numpy().transpose(1, 2, 0)
        got = T.Resize(size)(f)
        assert got.shape == want.shape
        assert_close(got, want, atol=1e-3)


def test_transforms_refuse_what_they_cannot_read() -> None:
    with pytest.raises(fw.OpArgumentError, match=r"\[transforms.CenterCrop\] expects an HWC"):
        transforms.CenterCrop(2)([1, 2, 3])
    with pytest.raises(fw.OpArgumentError, match=r"larger than the image"):
        transforms.RandomCrop(5)(np.zeros((3, 3)))


# -- datasets --------------------------------------------------------------------------------
def _write_mnist(d: str, n: int = 5) -> tuple[str, str, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    imgs = rng.integers(0, 256, (n, 28, 28), dtype=np.uint8)
    labels = rng.integers(0, 10, n, dtype=np.uint8)
    ip, lp = os.path.join(d, "img.gz"), os.path.join(d, "lbl.gz")
    with gzip.open(ip, "wb") as f:
        f.write(struct.pack(">IIII", 2051, n, 28, 28) + imgs.tobytes())
    with gzip.open(lp, "wb") as f:
        f.write(struct.pack(">II", 2049, n) + labels.tobytes())
    return ip, lp, imgs, labels


def test_mnist_reads_idx_files(tmp_path) -> None:  # type: ignore[no-untyped-def]
    ip, lp, imgs, labels = _write_mnist(str(tmp_path))
    ds = datasets.FashionMNIST(ip, lp, mode="test")
    assert len(ds) == 5
    image, label = ds[3]
    np.testing.assert_array_equal(image, imgs[3].astype("float32"))
    assert label.dtype == np.int64 and label.tolist() == [labels[3]]


@needs_paddle
def test_mnist_items_equal_paddles(tmp_path) -> None:  # type: ignore[no-untyped-def]
    paddle = _paddle()
    ip, lp, _, _ = _write_mnist(str(tmp_path), 100)  # Paddle reads 100 at a time
    ours = datasets.MNIST(ip, lp, transform=lambda im: (im - 127.5) / 127.5)
    theirs = paddle.vision.datasets.MNIST(ip, lp, backend="cv2", download=False)
    for i in (0, 57, 99):
        np.testing.assert_array_equal(ours[i][1], theirs[i][1])
        assert_close(ours[i][0], (theirs[i][0] - 127.5) / 127.5)


def test_datasets_say_nothing_is_downloaded(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(fw.OpArgumentError, match=r"downloads nothing; fetch train-images-idx3-ubyte.gz"):
        datasets.MNIST(download=True)
    with pytest.raises(fw.OpArgumentError, match=r"cifar-100-python.tar.gz.*data_file="):
        datasets.Cifar100(mode="test")
    bad = tmp_path / "bad.gz"
    bad.write_bytes(gzip.compress(b"\x00\x00\x00\x01abcd"))
    with pytest.raises(fw.OpArgumentError, match=r"is not an idx file"):
        datasets.MNIST(str(bad), str(bad))


def _write_cifar(path: str, flag: str, key: bytes, n: int = 4) -> np.ndarray:
    data = np.random.default_rng(8).integers(0, 256, (n, 3072), dtype=np.uint8)
    blob = pickle.dumps({b"data": data, key: list(range(n))})
    with tarfile.open(path, "w:gz") as t:
        info = tarfile.TarInfo(f"cifar/{flag}")
        info.size = len(blob)
        t.addfile(info, io.BytesIO(blob))
    return data


@pytest.mark.parametrize(
    "cls,flag,key", [("Cifar10", "data_batch_1", b"labels"), ("Cifar100", "train", b"fine_labels")]
)
def test_cifar_reads_the_python_archive(tmp_path, cls: str, flag: str, key: bytes) -> None:  # type: ignore[no-untyped-def]
    path = str(tmp_path / "c.tar.gz")
    data = _write_cifar(path, flag, key)
    ds = getattr(datasets, cls)(path, mode="train")
    image, label = ds[2]
    np.testing.assert_array_equal(image, data[2].reshape(3, 32, 32).transpose(1, 2, 0).astype("float32"))
    assert int(label) == 2 and len(ds) == 4
    if HAVE_PADDLE:
        theirs = getattr(_paddle().vision.datasets, cls)(path, mode="train", backend="cv2", download=False)
        np.testing.assert_array_equal(image, theirs[2][0])


def test_dataset_and_image_folders(tmp_path) -> None:  # type: ignore[no-untyped-def]
    for c in ("b", "a"):
        (tmp_path / c).mkdir()
        for i in range(2):
            np.save(tmp_path / c / f"{i}.npy", np.full((2, 2, 3), i, dtype=np.uint8))
    (tmp_path / "a" / "skip.txt").write_text("not an image")
    ds = datasets.DatasetFolder(str(tmp_path), transform=transforms.ToTensor())
    assert ds.classes == ["a", "b"] and ds.targets == [0, 0, 1, 1]
    assert tuple(ds[1][0].shape) == (3, 2, 2)
    assert len(datasets.ImageFolder(str(tmp_path))) == 4
    with pytest.raises(fw.OpArgumentError, match=r"found no files"):
        datasets.DatasetFolder(str(tmp_path), extensions=(".png",))


def test_pretrained_weights_are_refused() -> None:
    with pytest.raises(fw.OpArgumentError, match=r"downloads no weights"):
        models.resnet18(pretrained=True)
