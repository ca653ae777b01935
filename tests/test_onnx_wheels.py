"""Models no one here wrote: the ``.onnx`` files inside published wheels, imported and run
against onnxruntime.

The wheels are never installed (silero-vad requires torch, rapidocr OpenCV): the test fetches
the pinned versions with ``pip download --no-deps`` into a session folder once, or reads them
from the folder ``OARLOCK_ONNX_WHEELS`` names; each model is read from its wheel with
``zipfile``. Where pip cannot fetch them (no network) a case is skipped and says why. The
default run takes three models on cpu (an ``If`` on the sample rate at both rates, and an
OCR classifier); every model on every device is in the nightly set (``OARLOCK_NIGHTLY=1``).

- silero-vad (6.x): a voice-activity detector; ``If`` on the sample rate, ``LSTM``, STFT as a
  convolution; fed 16 kHz and 8 kHz chunks.
- rapidocr-onnxruntime (1.4.x): PaddleOCR's text detector, recogniser and direction classifier
  (``Resize``, ``ConvTranspose``, ``HardSigmoid``, attention blocks) at small image sizes.
"""

from __future__ import annotations

import glob
import os
import subprocess
import sys
import zipfile
from collections.abc import Callable

import numpy as np
import pytest

import framework as fw

NIGHTLY = os.environ.get("OARLOCK_NIGHTLY") == "1"
PINNED = {"silero_vad": "silero-vad==6.2.3", "rapidocr_onnxruntime": "rapidocr-onnxruntime==1.4.4"}
#: the default run's models (on cpu); the rest are nightly
DEFAULT = {
    "silero_vad/data/silero_vad.onnx",
    "silero_vad/data/silero_vad.onnx#8k",
    "rapidocr_onnxruntime/models/ch_ppocr_mobile_v2.0_cls_infer.onnx",
}

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


@pytest.fixture(scope="session")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The folder holding the wheels: ``OARLOCK_ONNX_WHEELS``, or the pinned ones fetched now."""
    given = os.environ.get("OARLOCK_ONNX_WHEELS")
    if given:
        return given
    folder = tmp_path_factory.mktemp("wheels")
    cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", str(folder), *PINNED.values()]
    try:
        run = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
    except subprocess.TimeoutExpired:
        pytest.skip("pip download of the published wheels took over 240 s (no network?)")
    if run.returncode != 0:
        pytest.skip(f"pip could not fetch {', '.join(PINNED.values())}: {run.stderr.strip()[-300:]}")
    return str(folder)


def _read(wheels: str, wheel: str, path: str) -> bytes:
    found = sorted(glob.glob(os.path.join(wheels, f"{wheel}-*.whl")))
    if not found:
        pytest.skip(f"no {wheel}-*.whl in {wheels}")
    with zipfile.ZipFile(found[-1]) as z:
        return z.read(path)


@pytest.mark.parametrize("wheel,path", list(MODELS), ids=[p.split("/")[-1] for _, p in MODELS])
def test_published_model_matches_onnxruntime(
    device: str, wheel: str, path: str, request: pytest.FixtureRequest
) -> None:
    if not NIGHTLY and (path not in DEFAULT or not device.startswith("cpu")):
        pytest.skip("in the nightly set (OARLOCK_NIGHTLY=1): the default run takes three models on cpu")
    ort = pytest.importorskip("onnxruntime")
    data = _read(request.getfixturevalue("wheels"), wheel, path.split("#")[0])
    feed = MODELS[(wheel, path)](np.random.default_rng(0))
    want = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, feed)
    got = fw.onnx.InferenceSession(data, device=device, compile=False).run(None, feed)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5 * max(1.0, float(np.abs(w).max())))
