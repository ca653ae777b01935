"""Model regression: train the models a few steps and compare with golden curves.

The models are those of :mod:`conformance.models` (MLP, small CNN, tiny Llama; the examples
train them too). Each starts from Philox-initialised weights (``fw.seed``), so every device
starts from identical weights and sees identical batches; the loss after each step must stay
within the tolerance of the golden curve recorded on the reference (the cpu plugin). After
training, the model is saved with ``fw.save``, loaded into a freshly built model and run on a
fixed input: those inference outputs must equal the trained model's exactly and the golden
ones within tolerance.

Record the goldens (then review the diff of conformance/golden/ like code)::

    oarlock conformance --record-goldens
"""

from __future__ import annotations

import json
import os
import tempfile
from types import ModuleType
from typing import Any

import numpy as np

GOLDEN_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden")
SEED = 0

#: model -> steps trained (small enough for CI on two cores)
STEPS = {"mlp": 20, "cnn": 12, "tiny_llama": 6}

#: Allowed difference from the golden values: |got - golden| <= atol + rtol * |golden|.
#: float32 kernels that round differently from numpy (fused multiply-add, another summation
#: order) move the losses by about 1e-6 over these steps; a wrong kernel moves them by far more.
LOSS_TOL = {"rtol": 2e-3, "atol": 2e-3}
OUTPUT_TOL = {"rtol": 1e-2, "atol": 2e-3}


def _probe_input(models: ModuleType, name: str) -> np.ndarray:
    rng = np.random.default_rng(1234)
    if name == "mlp":
        return models.blobs(rng, 8)[0]
    if name == "cnn":
        return models.bar_images(rng, 4)[0]
    ids, _ = models.char_corpus()
    return ids[None, :32]


def _probe_output(models: ModuleType, name: str, out: Any) -> np.ndarray:
    a = out.numpy()
    return a[0, -4:, :] if name == "tiny_llama" else a


def run_model(name: str, device: str, steps: int | None = None) -> dict[str, Any]:
    """Train ``name`` on ``device``; returns losses and the saved model's inference outputs."""
    import framework as fw

    from . import models  # imports framework: not before a run needs it

    n = STEPS[name] if steps is None else steps
    task = models.build(name, SEED, device)
    losses = []
    with fw.device(device):
        for step in range(n):  # as models.train_steps, keeping the model
            losses.append(float(task.train_step(step).item()))
        probe = fw.to_tensor(_probe_input(models, name), device=device)
        with fw.no_grad():
            task.model.eval()
            direct = _probe_output(models, name, task.model(probe))
            with tempfile.TemporaryDirectory(prefix="oarlock-conformance-") as d:
                path = os.path.join(d, f"{name}.safetensors")
                fw.save(task.model.state_dict(), path)
                fresh = models.build(name, SEED + 1, device).model
                fresh.set_state_dict(fw.load(path, device=device))
                fresh.eval()
                loaded = _probe_output(models, name, fresh(probe))
    return {"loss": losses, "output": direct, "output_loaded": loaded}


def golden_path(name: str) -> str:
    return os.path.join(GOLDEN_DIR, f"{name}.json")


def load_golden(name: str) -> dict[str, Any] | None:
    try:
        with open(golden_path(name), encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        return None


def record_all(device: str = "cpu", names: tuple[str, ...] | None = None) -> list[str]:
    """Re-record the goldens on ``device`` (the cpu reference); returns the files written."""
    import platform

    import framework as fw

    written = []
    for name in names or tuple(STEPS):
        r = run_model(name, device)
        doc = {
            "model": name,
            "seed": SEED,
            "steps": STEPS[name],
            "recorded_on": device,
            "command": "oarlock conformance --record-goldens",
            "oarlock": fw.__version__,
            "numpy": np.__version__,
            "python": platform.python_version(),
            "loss_tolerance": LOSS_TOL,
            "output_tolerance": OUTPUT_TOL,
            "loss": r["loss"],
            "output_shape": list(r["output"].shape),
            "output": [float(v) for v in r["output"].reshape(-1)],
        }
        path = golden_path(name)
        tmp = path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")
        os.replace(tmp, path)
        written.append(path)
        print(f"recorded {path}: {len(doc['loss'])} losses, final {doc['loss'][-1]:.6f}")
    return written
