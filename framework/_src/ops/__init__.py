"""Op definitions. Importing this package defines every op and attaches Tensor methods."""

# isort: off
from . import base, primitives  # noqa: F401  (primitives first: the others build on them)
from . import creation, math, shape, indexing  # noqa: F401
from . import primitive_grads  # noqa: F401  (the primitives' gradient rules, written with the ops above)
from . import methods  # noqa: F401
from . import composites  # noqa: F401  (softmax, norms, losses, conv, attention, ...)
from . import paddle_methods  # noqa: F401  (Paddle's Tensor methods and in-place variants)
# isort: on
