"""Tier ``models``: MLP, small CNN and tiny Llama train from identical Philox-initialised
weights; each step's loss must follow the golden curve (conformance/golden/), and the saved
model, loaded back, must reproduce its inference outputs (see conformance/regression.py)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import regression as RG
from ..cases import Case, Target
from ..checks import CheckFailure, assert_close

TIMEOUT = 900.0


def check_model(name: str, device: str) -> dict[str, Any]:
    golden = RG.load_golden(name)
    if golden is None:
        raise CheckFailure(
            f"no golden curve for {name}; record it with `oarlock conformance --record-goldens`"
        )
    r = RG.run_model(name, device, steps=golden["steps"])
    lt, ot = golden["loss_tolerance"], golden["output_tolerance"]
    data = {"loss": r["loss"], "golden": golden["loss"], "rtol": lt["rtol"], "atol": lt["atol"]}
    got, want = np.array(r["loss"]), np.array(golden["loss"])
    try:
        assert_close(got, want, lt["rtol"], lt["atol"], f"{name}: loss per step against the golden curve")
        assert_close(
            r["output_loaded"],
            r["output"],
            0,
            0,
            f"{name}: outputs of the saved and re-loaded model vs the trained one",
        )
        ref = np.array(golden["output"], np.float32).reshape(golden["output_shape"])
        assert_close(
            r["output"].astype(np.float32),
            ref,
            ot["rtol"],
            ot["atol"],
            f"{name}: inference outputs against the golden ones",
        )
    except CheckFailure as exc:
        exc.data = data  # type: ignore[attr-defined]
        raise
    data["max_loss_deviation"] = float(np.max(np.abs(got - want)))
    return data


def cases(target: Target) -> list[Case]:
    return [
        Case(
            f"models/{name}",
            "models",
            (lambda name=name: check_model(name, target.device)),
            op=name,
            timeout=TIMEOUT,
        )
        for name in RG.STEPS
    ]
