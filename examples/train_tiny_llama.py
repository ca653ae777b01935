"""Train a tiny Llama-style decoder (RMSNorm, rotary, causal attention, SwiGLU) on conformance/data/tiny_verse.txt, character by character.

    python examples/train_tiny_llama.py --device cpu
    python examples/train_tiny_llama.py --device opencl --steps 50
    python examples/train_tiny_llama.py --device opencl --static   # forward and backward as to_static programs

Prints a progress bar, then the final loss and ``fallbacks: {...}`` (ops that ran on the CPU
plugin because the device's plugin has no kernel for them). The model and the training loop
are in conformance/models.py (``train_steps("tiny_llama", ...)``).
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from examples.runner import main  # noqa: E402

if __name__ == "__main__":
    main("tiny_llama", __doc__.splitlines()[0])
