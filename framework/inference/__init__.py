"""Serving a saved program with no Python model code (Paddle's ``paddle.inference``).

>>> import framework as fw, numpy as np, os, tempfile
>>> folder = tempfile.TemporaryDirectory()
>>> path = os.path.join(folder.name, "model")
>>> net = fw.nn.Linear(4, 2)
>>> fw.jit.save(net, path, input_spec=[fw.static.InputSpec([None, 4])])
>>> config = fw.inference.Config(path)  # what fw.jit.save(layer, path, ...) wrote
>>> config.set_device("cpu")  # or enable_use_gpu(100, 0), enable_custom_device("opencl", 0)
>>> predictor = fw.inference.create_predictor(config)
>>> name = predictor.get_input_names()[0]
>>> predictor.get_input_handle(name).copy_from_cpu(np.ones((3, 4), "float32"))
>>> predictor.run()
>>> out = predictor.get_output_handle(predictor.get_output_names()[0]).copy_to_cpu()
>>> out.shape, bool(np.allclose(out, net(fw.ones([3, 4])).numpy(), atol=1e-6))
((3, 2), True)
>>> folder.cleanup()
"""

from __future__ import annotations

from .config import Config
from .predictor import InferTensor, Predictor, create_predictor

__all__ = ["Config", "InferTensor", "Predictor", "create_predictor"]
