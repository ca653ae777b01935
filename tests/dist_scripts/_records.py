"""What the parallelize job scripts write per configuration: the losses and every parameter
(the whole of those this rank's stage holds) next to the one-process values."""

from __future__ import annotations

from typing import Any

import numpy as np


def every_param(model: Any) -> dict:
    """name -> parameter, a tied one under each layer that holds it."""
    return {
        (f"{n}.{a}" if n else a): p
        for n, sub in [("", model), *model.named_sublayers()]
        for a, p in sub._parameters.items()
        if p is not None
    }


def record(res: dict, tag: str, losses: list, model: Any, ref_losses: list, ref_model: Any) -> None:
    """``res[tag/loss]``, ``res[tag/ref_loss]``, ``res[tag/param/<name>]`` (None elsewhere than
    on its stage: not written) and ``res[tag/ref/<name>]``."""
    res[f"{tag}/loss"] = np.array(losses, "float32")
    res[f"{tag}/ref_loss"] = np.array(ref_losses, "float32")
    refs = every_param(ref_model)
    for name, p in every_param(model).items():
        v = p.numpy()
        if v is not None:
            res[f"{tag}/param/{name}"] = v
            res[f"{tag}/ref/{name}"] = refs[name].numpy()
