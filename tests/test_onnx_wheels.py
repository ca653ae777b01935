"""Models no one here wrote: the ``.onnx`` files inside published wheels, imported and run
against onnxruntime.

The wheels are not installed nor downloaded by the tests: ``OARLOCK_ONNX_WHEELS`` names a
folder holding them (``pip download --no-deps rapidocr-onnxruntime silero-vad -d DIR``); each
model is read from its wheel with ``zipfile``. Without the variable (or the wheel) a case is
skipped and says why.

- silero-vad (6.x): a voice-activity detector; ``If`` on the sample rate, ``LSTM``, STFT as a
  convolution; fed 16 kHz and 8 kHz chunks.
- rapidocr-onnxruntime (1.4.x): PaddleOCR's text detector, recogniser and direction classifier
  (``Resize``, ``ConvTranspose``, ``HardSigmoid``, attention blocks) at small image sizes.
"""

from __future__ import annotations

import glob
import os
import zipfile
from collections.abc import Callable

import numpy as np
import pytest

import framework as fw

WHEELS = os.environ.get("OARLOCK_ONNX_WHEELS")

Feed = Callable[[np.random.Generator], dict[str, np.ndarray]]


def _vad(samples: int, sr: int | None, state: str = "state", batch: int = 2) -> Feed:
    def feed(rng: np.random.Generator) -> dict[str, np.ndarray]:
        f = {"input": (0.1 * rng.standard_normal((batch, samples))).astype(np.float32)}
        if state == "state":
            f["state"] = (0.1 * rng.standard_normal((2, batch, 128))).astype(np.float32)
        else:
            f["h"] = f["c"] = np.zeros((1, 1, 128), np.float32)
        if sr is not None:
            f["sr"] = np.array(sr, np.int64)
        return f

    return feed


def _image(h: int, w: int) -> Feed:
    return lambda rng: {"x": rng.standard_normal((1, 3, h, w)).astype(np.float32)}


#: (wheel name, path inside) -> feed
MODELS: dict[tuple[str, str], Feed] = {
    ("silero_vad", "silero_vad/data/silero_vad.onnx"): _vad(512, 16000),
    ("silero_vad", "silero_vad/data/silero_vad.onnx#8k"): _vad(256, 8000),
    ("silero_vad", "silero_vad/data/silero_vad_16k_op15.onnx"): _vad(512, 16000),
    ("silero_vad", "silero_vad/data/silero_vad_op18_ifless.onnx"): _vad(512, 16000),
    ("silero_vad", "silero_vad/data/silero_vad_half.onnx"): _vad(512, None),
    ("silero_vad", "silero_vad/data/silero_vad_16k_sequence.onnx"): _vad(576, None, "hc", batch=3),
    ("silero_vad", "silero_vad/data/silero_vad_openvino_16k.onnx"): _vad(576, None, batch=1),
    ("rapidocr_onnxruntime", "rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx"): _image(64, 64),
    ("rapidocr_onnxruntime", "rapidocr_onnxruntime/models/ch_PP-OCRv4_rec_infer.onnx"): _image(48, 64),
    ("rapidocr_onnxruntime", "rapidocr_onnxruntime/models/ch_ppocr_mobile_v2.0_cls_infer.onnx"): _image(
        48, 192
    ),
}


def _read(wheel: str, path: str) -> bytes:
    if not WHEELS:
        pytest.skip(
            "OARLOCK_ONNX_WHEELS is not set: name a folder holding the wheels "
            "(pip download --no-deps rapidocr-onnxruntime silero-vad -d DIR)"
        )
    found = sorted(glob.glob(os.path.join(WHEELS, f"{wheel}-*.whl")))
    if not found:
        pytest.skip(f"no {wheel}-*.whl in {WHEELS}")
    with zipfile.ZipFile(found[-1]) as z:
        return z.read(path)


@pytest.mark.parametrize("wheel,path", list(MODELS), ids=[p.split("/")[-1] for _, p in MODELS])
def test_published_model_matches_onnxruntime(device: str, wheel: str, path: str) -> None:
    ort = pytest.importorskip("onnxruntime")
    data = _read(wheel, path.split("#")[0])
    feed = MODELS[(wheel, path)](np.random.default_rng(0))
    want = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, feed)
    got = fw.onnx.InferenceSession(data, device=device, compile=False).run(None, feed)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5 * max(1.0, float(np.abs(w).max())))
