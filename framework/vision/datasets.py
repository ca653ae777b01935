"""Paddle's ``paddle.vision.datasets``, read from local files.

MNIST and FashionMNIST (the idx ``.gz`` files), Cifar10 and Cifar100 (the python ``.tar.gz``
archives), DatasetFolder and ImageFolder (a directory tree of images).

Nothing is downloaded: ``download=True`` without the file's path raises an error that names
the file to fetch and the argument to pass it with. Images come back as numpy arrays (Paddle's
``backend="cv2"``: MNIST ``(28, 28)`` float, Cifar ``(32, 32, 3)`` HWC); ``backend="pil"``
gives PIL images where Pillow is installed.

>>> import framework as fw
>>> try:
...     fw.vision.datasets.MNIST(mode="test")
... except fw.OpArgumentError as e:
...     print(str(e).split(";")[0])
[vision.datasets] MNIST(mode='test') needs image_path: Oarlock downloads nothing
"""

from __future__ import annotations

import gzip
import os
import pickle
import struct
import tarfile
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from adapter_api import OpArgumentError

from .._src.dtypes import get_default_dtype
from ..io import Dataset

try:  # optional: only backend="pil" and the default image loader need Pillow
    from PIL import Image as _PILImage
except ImportError:  # pragma: no cover - depends on the environment
    _PILImage = None

__all__ = ["Cifar10", "Cifar100", "DatasetFolder", "FashionMNIST", "ImageFolder", "MNIST"]

IMG_EXTENSIONS = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp", ".npy")


def _need(cls: str, mode: str, arg: str, filename: str, url: str) -> OpArgumentError:
    return OpArgumentError(
        f"[vision.datasets] {cls}(mode={mode!r}) needs {arg}: Oarlock downloads nothing; fetch {filename} "
        f"(Paddle's copy: {url}) and pass {arg}='/path/to/{filename}'"
    )


def _mode(cls: str, mode: str) -> str:
    if not isinstance(mode, str) or mode.lower() not in ("train", "test"):
        raise OpArgumentError(f"[vision.datasets] {cls} mode must be 'train' or 'test', got {mode!r}")
    return mode.lower()


def _backend(cls: str, backend: str | None) -> str:
    backend = backend or "cv2"
    if backend not in ("cv2", "pil"):
        raise OpArgumentError(
            f"[vision.datasets] {cls} backend must be 'cv2' (numpy) or 'pil', got {backend!r}"
        )
    return backend


def _to_pil(image: np.ndarray, mode: str | None = None) -> Any:
    try:
        from PIL import Image  # noqa: PLC0415  (optional dependency, only for backend="pil")
    except ImportError:
        raise OpArgumentError(
            "[vision.datasets] backend='pil' needs Pillow (pip install pillow); backend='cv2' gives numpy arrays"
        ) from None
    return (
        Image.fromarray(image.astype("uint8"), mode=mode) if mode else Image.fromarray(image.astype("uint8"))
    )


def _read_idx(path: str, what: str, cls: str) -> np.ndarray:
    """An idx file (gzip-compressed or not): big-endian magic, dims, then uint8 data."""
    opener = gzip.open if path.endswith(".gz") else open
    try:
        with opener(path, "rb") as f:
            buf = f.read()
    except FileNotFoundError:
        raise OpArgumentError(f"[vision.datasets] {cls} {what} {path!r} does not exist") from None
    except OSError as exc:
        raise OpArgumentError(f"[vision.datasets] {cls} cannot read {what} {path!r}: {exc}") from None
    if len(buf) < 8:
        raise OpArgumentError(
            f"[vision.datasets] {cls} {what} {path!r} is not an idx file ({len(buf)} bytes)"
        )
    magic, count = struct.unpack_from(">II", buf, 0)
    ndim = magic & 0xFF
    if magic >> 8 != 0x08 or ndim not in (1, 3):
        raise OpArgumentError(
            f"[vision.datasets] {cls} {what} {path!r} is not an idx file of uint8 (magic {magic:#010x})"
        )
    dims = struct.unpack_from(">" + "I" * ndim, buf, 4)
    start = 4 + 4 * ndim
    need = int(np.prod(dims))
    if len(buf) - start < need:
        raise OpArgumentError(
            f"[vision.datasets] {cls} {what} {path!r} is truncated: {len(buf) - start} bytes for {dims}"
        )
    return np.frombuffer(buf, dtype=np.uint8, count=need, offset=start).reshape(dims)


class MNIST(Dataset):
    """MNIST read from its idx files.

    MNIST from its idx files: ``(image, label)`` with ``image`` a (28, 28) array in the
    default float dtype (0..255, as Paddle) and ``label`` an int64 array of shape (1,).

    ``image_path``/``label_path`` are the ``*-images-idx3-ubyte.gz`` / ``*-labels-idx1-ubyte.gz``
    files of ``mode``; without them the error names the file (nothing is downloaded).

    >>> import gzip, os, struct, tempfile
    >>> import numpy as np
    >>> import framework as fw
    >>> d = tempfile.mkdtemp()
    >>> with gzip.open(os.path.join(d, "img.gz"), "wb") as f:
    ...     _ = f.write(struct.pack(">IIII", 2051, 1, 28, 28) + bytes(range(28)) * 28)
    >>> with gzip.open(os.path.join(d, "lbl.gz"), "wb") as f:
    ...     _ = f.write(struct.pack(">II", 2049, 1) + bytes([7]))
    >>> image, label = fw.vision.datasets.MNIST(os.path.join(d, "img.gz"), os.path.join(d, "lbl.gz"))[0]
    >>> image.shape, float(image[0, 3]), label
    ((28, 28), 3.0, array([7]))
    """

    NAME = "mnist"
    URL_PREFIX = "https://dataset.bj.bcebos.com/mnist/"
    FILES = {
        "train": ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"),
        "test": ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"),
    }

    def __init__(
        self,
        image_path: str | None = None,
        label_path: str | None = None,
        mode: str = "train",
        transform: Callable[[Any], Any] | None = None,
        download: bool = True,
        backend: str | None = None,
    ) -> None:
        cls = type(self).__name__
        self.mode = _mode(cls, mode)
        self.backend = _backend(cls, backend)
        img_file, lbl_file = self.FILES[self.mode]
        if image_path is None:
            raise _need(cls, self.mode, "image_path", img_file, self.URL_PREFIX + img_file)
        if label_path is None:
            raise _need(cls, self.mode, "label_path", lbl_file, self.URL_PREFIX + lbl_file)
        self.image_path, self.label_path, self.transform = image_path, label_path, transform
        images = _read_idx(image_path, "image_path", cls)
        labels = _read_idx(label_path, "label_path", cls)
        if images.ndim != 3 or labels.ndim != 1 or len(images) != len(labels):
            raise OpArgumentError(
                f"[vision.datasets] {cls} images {images.shape} and labels {labels.shape} do not match: "
                "expected (N, rows, cols) images and N labels"
            )
        self.images, self.labels = images, labels.astype("int64").reshape(-1, 1)
        self.dtype = str(get_default_dtype())

    def __getitem__(self, idx: int) -> tuple[Any, np.ndarray]:
        image, label = self.images[idx], self.labels[idx]
        if self.backend == "pil":
            image = _to_pil(image, "L")
            return (self.transform(image) if self.transform else image), label
        image = image.astype("float32")
        if self.transform is not None:
            image = self.transform(image)
        return np.asarray(image).astype(self.dtype) if isinstance(image, np.ndarray) else image, label

    def __len__(self) -> int:
        return len(self.labels)


class FashionMNIST(MNIST):
    """Fashion-MNIST: MNIST's file format and item layout.

    >>> import framework as fw
    >>> fw.vision.datasets.FashionMNIST.FILES["test"][0]
    't10k-images-idx3-ubyte.gz'
    """

    NAME = "fashion-mnist"
    URL_PREFIX = "https://dataset.bj.bcebos.com/fashion_mnist/"


class Cifar10(Dataset):
    """CIFAR-10 read from its python archive.

    CIFAR-10 from ``cifar-10-python.tar.gz``: ``(image, label)`` with ``image`` a
    (32, 32, 3) HWC array in the default float dtype (0..255) and ``label`` an int64 scalar.

    >>> import io, os, pickle, tarfile, tempfile
    >>> import numpy as np
    >>> import framework as fw
    >>> path = os.path.join(tempfile.mkdtemp(), "cifar.tar.gz")
    >>> blob = pickle.dumps({b"data": (np.arange(3072) % 256).astype(np.uint8)[None], b"labels": [4]})
    >>> with tarfile.open(path, "w:gz") as t:
    ...     info = tarfile.TarInfo("cifar-10-batches-py/test_batch"); info.size = len(blob)
    ...     t.addfile(info, io.BytesIO(blob))
    >>> image, label = fw.vision.datasets.Cifar10(path, mode="test")[0]
    >>> image.shape, float(image[0, 1, 0]), int(label)
    ((32, 32, 3), 1.0, 4)
    """

    URL = "https://dataset.bj.bcebos.com/cifar/cifar-10-python.tar.gz"
    FLAGS = {"train": "data_batch", "test": "test_batch"}

    def __init__(
        self,
        data_file: str | None = None,
        mode: str = "train",
        transform: Callable[[Any], Any] | None = None,
        download: bool = True,
        backend: str | None = None,
    ) -> None:
        cls = type(self).__name__
        self.mode = _mode(cls, mode)
        self.backend = _backend(cls, backend)
        if data_file is None:
            raise _need(cls, self.mode, "data_file", os.path.basename(self.URL), self.URL)
        self.data_file, self.transform, self.flag = data_file, transform, self.FLAGS[self.mode]
        self.data: list[tuple[np.ndarray, int]] = []
        try:
            with tarfile.open(data_file, mode="r") as tar:
                names = sorted(m.name for m in tar if self.flag in m.name)
                for name in names:
                    f = tar.extractfile(name)
                    batch = pickle.load(f, encoding="bytes") if f is not None else {}
                    labels = batch.get(b"labels", batch.get(b"fine_labels"))
                    if b"data" not in batch or labels is None:
                        raise OpArgumentError(
                            f"[vision.datasets] {cls} {data_file!r}: member {name!r} has no data/labels"
                        )
                    self.data.extend(zip(batch[b"data"], labels))
        except (OSError, tarfile.TarError, pickle.UnpicklingError) as exc:
            raise OpArgumentError(
                f"[vision.datasets] {cls} cannot read data_file {data_file!r}: {exc}"
            ) from None
        if not self.data:
            raise OpArgumentError(
                f"[vision.datasets] {cls} {data_file!r} holds no '{self.flag}' batches for mode={self.mode!r}"
            )
        self.dtype = str(get_default_dtype())

    def __getitem__(self, idx: int) -> tuple[Any, np.ndarray]:
        sample, label = self.data[idx]
        image = np.reshape(sample, [3, 32, 32]).transpose([1, 2, 0])
        if self.backend == "pil":
            image = _to_pil(image)
            return (self.transform(image) if self.transform else image), np.array(label).astype("int64")
        if self.transform is not None:
            image = self.transform(image)
        image = np.asarray(image).astype(self.dtype) if isinstance(image, np.ndarray) else image
        return image, np.array(label).astype("int64")

    def __len__(self) -> int:
        return len(self.data)


class Cifar100(Cifar10):
    """CIFAR-100 from ``cifar-100-python.tar.gz`` (the 100 fine labels).

    >>> import framework as fw
    >>> fw.vision.datasets.Cifar100.FLAGS
    {'train': 'train', 'test': 'test'}
    """

    URL = "https://dataset.bj.bcebos.com/cifar/cifar-100-python.tar.gz"
    FLAGS = {"train": "train", "test": "test"}


def default_loader(path: str) -> Any:
    """An image file as an RGB HWC uint8 array (Pillow decodes it; ``.npy`` files need none)."""
    if path.lower().endswith(".npy"):
        return np.load(path)
    if _PILImage is None:
        raise OpArgumentError(
            f"[vision.datasets] reading {path!r} needs Pillow (pip install pillow), or pass loader="
        )
    with open(path, "rb") as f:
        return np.asarray(_PILImage.open(f).convert("RGB"))


def _valid(
    extensions: Sequence[str] | None, is_valid_file: Callable[[str], bool] | None
) -> Callable[[str], bool]:
    if is_valid_file is not None:
        return is_valid_file
    exts = tuple(e.lower() for e in (extensions or IMG_EXTENSIONS))
    return lambda p: p.lower().endswith(exts)


class DatasetFolder(Dataset):
    """Samples in ``root/<class>/**/<file>``: ``(sample, class_index)``, classes sorted by name.

    ``loader`` reads a path (default: Pillow to an RGB array; ``.npy`` files with numpy);
    ``extensions`` or ``is_valid_file`` choose the files.

    >>> import os, tempfile
    >>> import numpy as np
    >>> import framework as fw
    >>> root = tempfile.mkdtemp()
    >>> for c in ("cat", "dog"):
    ...     os.mkdir(os.path.join(root, c)); np.save(os.path.join(root, c, "a.npy"), np.zeros((2, 2, 3)))
    >>> ds = fw.vision.datasets.DatasetFolder(root)
    >>> ds.classes, len(ds), ds[1][1]
    (['cat', 'dog'], 2, 1)
    """

    def __init__(
        self,
        root: str,
        loader: Callable[[str], Any] | None = None,
        extensions: Sequence[str] | None = None,
        transform: Callable[[Any], Any] | None = None,
        is_valid_file: Callable[[str], bool] | None = None,
    ) -> None:
        if not os.path.isdir(root):
            raise OpArgumentError(f"[vision.datasets] DatasetFolder root {root!r} is not a directory")
        self.root, self.transform = root, transform
        self.classes = sorted(d.name for d in os.scandir(root) if d.is_dir())
        self.class_to_idx = {c: i for i, c in enumerate(self.classes)}
        ok = _valid(extensions, is_valid_file)
        self.samples = []
        for c in self.classes:
            for d, _, files in sorted(os.walk(os.path.join(root, c), followlinks=True)):
                self.samples += [(os.path.join(d, f), self.class_to_idx[c]) for f in sorted(files) if ok(f)]
        if not self.samples:
            raise OpArgumentError(
                f"[vision.datasets] DatasetFolder found no files in the class folders of {root!r} "
                f"(extensions {', '.join(extensions or IMG_EXTENSIONS)})"
            )
        self.loader = loader or default_loader
        self.extensions = extensions or IMG_EXTENSIONS
        self.targets = [t for _, t in self.samples]

    def __getitem__(self, index: int) -> tuple[Any, int]:
        path, target = self.samples[index]
        sample = self.loader(path)
        return (self.transform(sample) if self.transform else sample), target

    def __len__(self) -> int:
        return len(self.samples)


class ImageFolder(Dataset):
    """Every image under ``root`` (no classes): item ``[sample]``, as Paddle.

    >>> import os, tempfile
    >>> import numpy as np
    >>> import framework as fw
    >>> root = tempfile.mkdtemp(); np.save(os.path.join(root, "x.npy"), np.ones((2, 2, 3)))
    >>> fw.vision.datasets.ImageFolder(root)[0][0].shape
    (2, 2, 3)
    """

    def __init__(
        self,
        root: str,
        loader: Callable[[str], Any] | None = None,
        extensions: Sequence[str] | None = None,
        transform: Callable[[Any], Any] | None = None,
        is_valid_file: Callable[[str], bool] | None = None,
    ) -> None:
        if not os.path.isdir(root):
            raise OpArgumentError(f"[vision.datasets] ImageFolder root {root!r} is not a directory")
        self.root, self.transform = root, transform
        ok = _valid(extensions, is_valid_file)
        self.samples = [
            os.path.join(d, f)
            for d, _, files in sorted(os.walk(root, followlinks=True))
            for f in sorted(files)
            if ok(f)
        ]
        if not self.samples:
            raise OpArgumentError(
                f"[vision.datasets] ImageFolder found no files under {root!r} "
                f"(extensions {', '.join(extensions or IMG_EXTENSIONS)})"
            )
        self.loader = loader or default_loader
        self.extensions = extensions or IMG_EXTENSIONS

    def __getitem__(self, index: int) -> list[Any]:
        sample = self.loader(self.samples[index])
        return [self.transform(sample) if self.transform else sample]

    def __len__(self) -> int:
        return len(self.samples)
