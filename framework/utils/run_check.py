"""``run_check``: check that every device trains a small model correctly (Paddle's ``paddle.utils.run_check``)."""

from __future__ import annotations

import numpy as np

from adapter_api import OarlockError

from .._src import device as _d
from .._src.ops import math as M
from .._src.tensor import to_tensor


def _check_one(dev: _d.Device) -> str | None:
    """None when a matmul, its gradient and an SGD-like update on ``dev`` match numpy; else what differs."""
    rng = np.random.default_rng(0)
    xv = rng.standard_normal((4, 3)).astype("float32")
    wv = rng.standard_normal((3, 2)).astype("float32")
    x = to_tensor(xv, device=dev)
    w = to_tensor(wv, device=dev, stop_gradient=False)
    y = M.matmul(x, w)
    loss = M.sum(y * y)
    loss.backward()
    want_y = xv @ wv
    want_g = xv.T @ (2 * want_y)
    got_y, got_g = y.numpy(), w.grad.numpy()
    if not np.allclose(got_y, want_y, rtol=1e-4, atol=1e-4):
        return f"matmul differs from numpy by {np.abs(got_y - want_y).max():.3g}"
    if not np.allclose(got_g, want_g, rtol=1e-4, atol=1e-4):
        return f"its gradient differs from numpy by {np.abs(got_g - want_g).max():.3g}"
    return None


def run_check() -> None:
    """Run a matmul, its gradient and a loss on every available device and compare with numpy.

    Prints one line per device and a summary, as Paddle's does.

    Raises:
        OarlockError: some device computed a wrong value or raised; the message names each.

    Example:
        >>> import framework as fw
        >>> fw.utils.run_check()  # doctest: +ELLIPSIS
        Running verify Oarlock program ...
        cpu:0: OK
        ...
        Oarlock works well on ... device(s).
    """
    print("Running verify Oarlock program ...")
    failed: list[str] = []
    devs = _d.devices()
    for dev in devs:
        try:
            problem = _check_one(dev)
        except Exception as exc:  # noqa: BLE001 — reported per device, then raised together
            problem = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        print(f"{dev}: {'OK' if problem is None else 'FAILED: ' + problem}")
        if problem is not None:
            failed.append(f"{dev}: {problem}")
    if failed:
        raise OarlockError(
            f"[run_check] {len(failed)} of {len(devs)} device(s) failed: "
            + "; ".join(failed)
            + "; run `oarlock devices` for the plugins' status"
        )
    print(f"Oarlock works well on {len(devs)} device(s).")
