"""Paddle's ``paddle.vision.transforms`` on numpy images.

HWC (or HW) arrays in, arrays out, until :class:`ToTensor` makes a CHW ``fw.Tensor``. No
OpenCV or Pillow is needed.

Random transforms draw from Python's ``random`` module, as Paddle's do in dynamic mode, so
``random.seed(s)`` gives the same crops and flips as Paddle with the same seed.

>>> import numpy as np
>>> import framework as fw
>>> T = fw.vision.transforms
>>> img = np.full((4, 6, 3), 255, dtype=np.uint8)
>>> t = T.Compose([T.CenterCrop(2), T.ToTensor(), T.Normalize(mean=0.5, std=0.5)])
>>> out = t(img)
>>> out.shape, float(out.max())
((3, 2, 2), 1.0)
"""

from __future__ import annotations

import numbers
import random
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from adapter_api import OpArgumentError

from .._src.tensor import Tensor, to_tensor

__all__ = [
    "CenterCrop",
    "Compose",
    "Normalize",
    "RandomCrop",
    "RandomHorizontalFlip",
    "RandomVerticalFlip",
    "Resize",
    "ToTensor",
    "Transpose",
]


def _hwc(name: str, img: Any) -> np.ndarray:
    if not isinstance(img, np.ndarray) or img.ndim not in (2, 3):
        got = f"array of shape {img.shape}" if isinstance(img, np.ndarray) else type(img).__name__
        raise OpArgumentError(f"[transforms.{name}] expects an HWC or HW numpy array, got {got}")
    return img


def _size2(name: str, size: Any) -> tuple[int, int]:
    if isinstance(size, numbers.Integral):
        return int(size), int(size)
    if isinstance(size, Sequence) and len(size) == 2 and all(isinstance(v, numbers.Integral) for v in size):
        return int(size[0]), int(size[1])
    raise OpArgumentError(f"[transforms.{name}] size must be an int or (height, width), got {size!r}")


class Compose:
    """Apply ``transforms`` in order.

    >>> import numpy as np
    >>> import framework as fw
    >>> T = fw.vision.transforms
    >>> T.Compose([T.Transpose(), T.Transpose((1, 2, 0))])(np.zeros((2, 3, 4))).shape
    (2, 3, 4)
    """

    def __init__(self, transforms: Sequence[Callable[[Any], Any]]) -> None:
        self.transforms = list(transforms)

    def __call__(self, data: Any) -> Any:
        for t in self.transforms:
            data = t(data)
        return data


class ToTensor:
    """An image array to a tensor.

    An HWC (or HW) array to a ``fw.Tensor`` in ``data_format`` ("CHW" by default); uint8
    images become float32 in [0, 1] (divided by 255), other dtypes keep their values.

    >>> import numpy as np
    >>> import framework as fw
    >>> t = fw.vision.transforms.ToTensor()(np.full((2, 2, 3), 51, dtype=np.uint8))
    >>> t.shape, round(float(t[0, 0, 0]), 6)
    ((3, 2, 2), 0.2)
    """

    def __init__(self, data_format: str = "CHW", keys: Any = None) -> None:
        if data_format not in ("CHW", "HWC"):
            raise OpArgumentError(
                f"[transforms.ToTensor] data_format must be 'CHW' or 'HWC', got {data_format!r}"
            )
        self.data_format = data_format

    def __call__(self, pic: Any) -> Tensor:
        pic = _hwc("ToTensor", np.asarray(pic) if not isinstance(pic, np.ndarray) else pic)
        if pic.ndim == 2:
            pic = pic[:, :, None]
        if self.data_format == "CHW":
            pic = pic.transpose((2, 0, 1))
        if pic.dtype == np.uint8:
            return to_tensor(np.ascontiguousarray(pic).astype(np.float32) / np.float32(255.0))
        return to_tensor(np.ascontiguousarray(pic))


class Normalize:
    """Subtract a per-channel mean, divide by a per-channel std.

    A number for ``mean`` or ``std`` applies to every channel.

    ``(img - mean) / std`` per channel, on an array or a tensor laid out as ``data_format``
    ("CHW" or "HWC"); ``to_rgb`` reverses the channels of an HWC array first.

    >>> import numpy as np
    >>> import framework as fw
    >>> fw.vision.transforms.Normalize([1.0, 2.0], [2.0, 4.0], "HWC")(np.ones((1, 1, 2), "float32")).tolist()
    [[[0.0, -0.25]]]
    """

    def __init__(
        self,
        mean: Any = 0.0,
        std: Any = 1.0,
        data_format: str = "CHW",
        to_rgb: bool = False,
        keys: Any = None,
    ) -> None:
        if data_format not in ("CHW", "HWC"):
            raise OpArgumentError(
                f"[transforms.Normalize] data_format must be 'CHW' or 'HWC', got {data_format!r}"
            )
        mean = [mean] if isinstance(mean, numbers.Number) else list(mean)
        std = [std] if isinstance(std, numbers.Number) else list(std)
        if any(s == 0 for s in std):
            raise OpArgumentError(f"[transforms.Normalize] std must have no zero, got {std}")
        self.mean, self.std, self.data_format, self.to_rgb = mean, std, data_format, to_rgb

    def __call__(self, img: Any) -> Any:
        shape = (-1, 1, 1) if self.data_format == "CHW" else (1, 1, -1)
        mean = np.float32(np.array(self.mean).reshape(shape))
        std = np.float32(np.array(self.std).reshape(shape))
        if isinstance(img, Tensor):
            m = to_tensor(mean, device=img.device).astype(img.dtype)
            return (img - m) / to_tensor(std, device=img.device).astype(img.dtype)
        img = _hwc("Normalize", img) if self.data_format == "HWC" else np.asarray(img)
        if self.to_rgb:
            img = img[..., ::-1]
        return (img - mean) / std


class Transpose:
    """Permute an image array's axes.

    Permute an HWC array's axes by ``order`` (HWC to CHW by default; an HW image gets a
    channel axis first).

    >>> import numpy as np
    >>> import framework as fw
    >>> fw.vision.transforms.Transpose()(np.zeros((4, 5, 3))).shape
    (3, 4, 5)
    """

    def __init__(self, order: Sequence[int] = (2, 0, 1), keys: Any = None) -> None:
        self.order = tuple(order)

    def __call__(self, img: Any) -> np.ndarray:
        img = _hwc("Transpose", img)
        if img.ndim == 2:
            img = img[..., None]
        return img.transpose(self.order)


def _bilinear_axis(n_in: int, n_out: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Source indices and weights of half-pixel bilinear sampling along one axis."""
    src = (np.arange(n_out, dtype=np.float64) + 0.5) * (n_in / n_out) - 0.5
    src = np.clip(src, 0.0, None)
    lo = np.minimum(np.floor(src).astype(np.int64), n_in - 1)
    hi = np.minimum(lo + 1, n_in - 1)
    return lo, hi, src - lo


class Resize:
    """Resize an image.

    Resize an HWC array to ``size`` ((h, w), or an int for the shorter side, the aspect
    kept) by ``interpolation`` "bilinear" (half-pixel centres, Paddle's tensor path and
    OpenCV's INTER_LINEAR) or "nearest"; uint8 images are rounded back to uint8.

    >>> import numpy as np
    >>> import framework as fw
    >>> fw.vision.transforms.Resize((2, 3))(np.zeros((4, 6, 3), "float32")).shape
    (2, 3, 3)
    >>> fw.vision.transforms.Resize(2)(np.zeros((4, 8), "float32")).shape
    (2, 4)
    """

    def __init__(self, size: Any, interpolation: str = "bilinear", keys: Any = None) -> None:
        if interpolation not in ("bilinear", "nearest"):
            raise OpArgumentError(
                f"[transforms.Resize] interpolation must be 'bilinear' or 'nearest', got {interpolation!r}"
            )
        if not isinstance(size, numbers.Integral):
            _size2("Resize", size)
        self.size, self.interpolation = size, interpolation

    def _target(self, h: int, w: int) -> tuple[int, int]:
        if not isinstance(self.size, numbers.Integral):
            return _size2("Resize", self.size)
        s = int(self.size)
        if (w <= h and w == s) or (h <= w and h == s):
            return h, w
        return (int(s * h / w), s) if w < h else (s, int(s * w / h))

    def __call__(self, img: Any) -> np.ndarray:
        img = _hwc("Resize", img)
        h, w = img.shape[:2]
        oh, ow = self._target(h, w)
        if (oh, ow) == (h, w):
            return img
        x = img.astype(np.float64)
        if self.interpolation == "nearest":
            rows = np.minimum(np.floor(np.arange(oh) * (h / oh)).astype(np.int64), h - 1)
            cols = np.minimum(np.floor(np.arange(ow) * (w / ow)).astype(np.int64), w - 1)
            out = x[rows][:, cols]
        else:
            r0, r1, fr = _bilinear_axis(h, oh)
            c0, c1, fc = _bilinear_axis(w, ow)
            fr = fr.reshape((-1, 1) + (1,) * (x.ndim - 2))
            fc = fc.reshape((1, -1) + (1,) * (x.ndim - 2))
            top = x[r0][:, c0] * (1 - fc) + x[r0][:, c1] * fc
            bottom = x[r1][:, c0] * (1 - fc) + x[r1][:, c1] * fc
            out = top * (1 - fr) + bottom * fr
        if img.dtype == np.uint8:
            return np.clip(np.rint(out), 0, 255).astype(np.uint8)
        return out.astype(img.dtype)


class CenterCrop:
    """Crop the centre of an image.

    The central ``size`` ((h, w) or an int) of an HWC array; the offset rounds as Paddle's
    ``round((h - th) / 2)``.

    >>> import numpy as np
    >>> import framework as fw
    >>> fw.vision.transforms.CenterCrop(2)(np.arange(16).reshape(4, 4)).tolist()
    [[5, 6], [9, 10]]
    """

    def __init__(self, size: Any, keys: Any = None) -> None:
        self.size = _size2("CenterCrop", size)

    def __call__(self, img: Any) -> np.ndarray:
        img = _hwc("CenterCrop", img)
        h, w = img.shape[:2]
        th, tw = self.size
        if th > h or tw > w:
            raise OpArgumentError(
                f"[transforms.CenterCrop] crop {self.size} is larger than the image ({h}, {w})"
            )
        i, j = int(round((h - th) / 2.0)), int(round((w - tw) / 2.0))
        return img[i : i + th, j : j + tw]


class RandomCrop:
    """Crop an image at a random place.

    A ``size`` crop at a random place (``random.randint`` for the top, then the left, as
    Paddle); ``padding`` (int, (lr, tb) or (l, t, r, b)) pads with ``fill`` first and
    ``pad_if_needed`` pads an image smaller than the crop.

    >>> import random
    >>> import numpy as np
    >>> import framework as fw
    >>> random.seed(0)
    >>> fw.vision.transforms.RandomCrop(2, padding=1)(np.ones((3, 3, 1))).shape
    (2, 2, 1)
    """

    def __init__(
        self,
        size: Any,
        padding: Any = None,
        pad_if_needed: bool = False,
        fill: float = 0,
        padding_mode: str = "constant",
        keys: Any = None,
    ) -> None:
        if padding_mode not in ("constant", "edge", "reflect", "symmetric"):
            raise OpArgumentError(
                f"[transforms.RandomCrop] padding_mode must be constant, edge, reflect or symmetric, got {padding_mode!r}"
            )
        self.size = _size2("RandomCrop", size)
        self.padding, self.pad_if_needed, self.fill, self.padding_mode = (
            padding,
            pad_if_needed,
            fill,
            padding_mode,
        )

    def _pad(self, img: np.ndarray, padding: Any) -> np.ndarray:
        if isinstance(padding, numbers.Integral):
            left = top = right = bottom = int(padding)
        elif len(padding) == 2:
            left, top = padding
            right, bottom = padding
        elif len(padding) == 4:
            left, top, right, bottom = padding
        else:
            raise OpArgumentError(
                f"[transforms.RandomCrop] padding must be an int, 2 or 4 ints, got {padding!r}"
            )
        pads = ((top, bottom), (left, right)) + ((0, 0),) * (img.ndim - 2)
        if self.padding_mode == "constant":
            return np.pad(img, pads, mode="constant", constant_values=self.fill)
        return np.pad(img, pads, mode=self.padding_mode)

    def __call__(self, img: Any) -> np.ndarray:
        img = _hwc("RandomCrop", img)
        if self.padding is not None:
            img = self._pad(img, self.padding)
        th, tw = self.size
        if self.pad_if_needed and img.shape[1] < tw:
            img = self._pad(img, (tw - img.shape[1], 0))
        if self.pad_if_needed and img.shape[0] < th:
            img = self._pad(img, (0, th - img.shape[0]))
        h, w = img.shape[:2]
        if th > h or tw > w:
            raise OpArgumentError(
                f"[transforms.RandomCrop] crop {self.size} is larger than the image ({h}, {w}); use pad_if_needed=True"
            )
        if (h, w) == (th, tw):
            return img
        i = random.randint(0, h - th)
        j = random.randint(0, w - tw)
        return img[i : i + th, j : j + tw]


class RandomHorizontalFlip:
    """Mirror left-right with probability ``prob`` (``random.random() < prob``).

    >>> import numpy as np
    >>> import framework as fw
    >>> fw.vision.transforms.RandomHorizontalFlip(1.0)(np.array([[1, 2, 3]])).tolist()
    [[3, 2, 1]]
    """

    def __init__(self, prob: float = 0.5, keys: Any = None) -> None:
        if not 0.0 <= prob <= 1.0:
            raise OpArgumentError(f"[transforms.RandomHorizontalFlip] prob must be in [0, 1], got {prob}")
        self.prob = prob

    def __call__(self, img: Any) -> np.ndarray:
        img = _hwc("RandomHorizontalFlip", img)
        return img[:, ::-1] if random.random() < self.prob else img


class RandomVerticalFlip:
    """Mirror top-bottom with probability ``prob`` (``random.random() < prob``).

    >>> import numpy as np
    >>> import framework as fw
    >>> fw.vision.transforms.RandomVerticalFlip(1.0)(np.array([[1], [2]])).tolist()
    [[2], [1]]
    """

    def __init__(self, prob: float = 0.5, keys: Any = None) -> None:
        if not 0.0 <= prob <= 1.0:
            raise OpArgumentError(f"[transforms.RandomVerticalFlip] prob must be in [0, 1], got {prob}")
        self.prob = prob

    def __call__(self, img: Any) -> np.ndarray:
        img = _hwc("RandomVerticalFlip", img)
        return img[::-1] if random.random() < self.prob else img
