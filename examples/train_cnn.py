"""Train a small CNN (2 conv layers, pooling) on synthetic 12x12 bar images (4 classes).

    python examples/train_cnn.py --device cpu
    python examples/train_cnn.py --device opencl --steps 50
    python examples/train_cnn.py --device opencl --static   # forward and backward as to_static programs

Prints a progress bar, then the final loss and ``fallbacks: {...}`` (ops that ran on the CPU
plugin because the device's plugin has no kernel for them). The model and the training loop
are in conformance/models.py (``train_steps("cnn", ...)``).
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from examples.runner import main  # noqa: E402

if __name__ == "__main__":
    main("cnn", __doc__.splitlines()[0])
