"""Serving a saved program with no Python model code (Paddle's ``paddle.inference``).

>>> import framework as fw
>>> config = fw.inference.Config("model")          # what fw.jit.save(layer, "model", ...) wrote
>>> config.set_device("opencl")                      # or enable_use_gpu(100, 0), enable_custom_device("opencl", 0)
>>> predictor = fw.inference.create_predictor(config)
>>> name = predictor.get_input_names()[0]
>>> predictor.get_input_handle(name).copy_from_cpu(ids)                 # doctest: +SKIP
>>> predictor.run()                                                     # doctest: +SKIP
>>> logits = predictor.get_output_handle(predictor.get_output_names()[0]).copy_to_cpu()  # doctest: +SKIP
"""

from __future__ import annotations

from .predictor import Config, InferTensor, Predictor, create_predictor

__all__ = ["Config", "InferTensor", "Predictor", "create_predictor"]
