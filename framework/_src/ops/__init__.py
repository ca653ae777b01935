"""Op definitions. Importing this package defines every op and attaches Tensor methods."""

from . import base, creation, indexing, math, methods, primitives, shape  # noqa: F401  (primitives first: others build on them)  # noqa: F401,E402
