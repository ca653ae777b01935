"""Dtypes (numpy dtypes; bfloat16 from ml_dtypes) and the type-promotion rules.

Promotion (written out in docs/user-guide.md):
- bool < integers < floating point. Two tensors of one category promote within it
  (int8 + int32 -> int32, uint8 + int8 -> int16, float16 + bfloat16 -> float32,
  float32 + float64 -> float64); across categories the higher category's dtype wins
  (int64 + float16 -> float16).
- A Python scalar is "weak": it never widens a tensor of its category or higher
  (float32 * 2.0 -> float32, int8 + 1 -> int8); a float scalar with an integer or bool tensor
  gives the default float dtype (float32); an int scalar with a bool tensor gives int64.
- Complex (complex64, complex128) is above floating point, and as wide as the widest float part:
  float32 + complex64 -> complex64, float64 + complex64 -> complex128 (Paddle's rule); a Python
  complex next to a real tensor gives the complex dtype of its float width (complex64 for
  float32 and every integer, complex128 for float64).

Wide unsigned integers (uint16, uint32, uint64; ``UINT_WIDE``) are exact: a tensor keeps its
dtype through creation, arithmetic (wrapping modulo 2**bits, as numpy), reductions and casts.
With another integer they promote as numpy does (uint16 + int8 -> int32, uint32 + int32 ->
int64, uint8 + uint32 -> uint32), except uint64 with a signed integer: numpy gives float64,
which is not exact past 2**53, so that pair raises (cast one operand first). An int scalar
next to a uint tensor is weak as above (uint32 + 1 -> uint32); one that does not fit
the tensor's dtype (uint32 + -1) raises. ``sum`` and ``prod`` of uint16/32/64 give uint64
(numpy's rule; other integers give int64, Paddle's).

Float8 (float8_e4m3fn, float8_e5m2, float8_e4m3fnuz, float8_e5m2fnuz; ``FLOAT8_DTYPES``, from
ml_dtypes) are storage dtypes: tensors hold them, ``cast`` converts to and from them
(round to nearest even, as ml_dtypes; not saturating: beyond the largest finite value the
fn/fnuz types give NaN and e5m2 gives inf, as ml_dtypes and torch do;
``fw.nn.quant.float8_saturate``
clips first, the OCP spec's saturating mode), data-movement ops move them and
``fw.nn.quant.scaled_matmul`` multiplies them. Arithmetic on them raises an error naming the op and
the dtype, and they promote with no other dtype.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from adapter_api import OpArgumentError

bfloat16 = np.dtype(ml_dtypes.bfloat16)
float16 = np.dtype(np.float16)
float32 = np.dtype(np.float32)
float64 = np.dtype(np.float64)
int8 = np.dtype(np.int8)
int16 = np.dtype(np.int16)
int32 = np.dtype(np.int32)
int64 = np.dtype(np.int64)
uint8 = np.dtype(np.uint8)
bool_ = np.dtype(np.bool_)
# wide unsigned integers and float8 (see the module docstring)
uint16 = np.dtype(np.uint16)
uint32 = np.dtype(np.uint32)
uint64 = np.dtype(np.uint64)
float8_e4m3fn = np.dtype(ml_dtypes.float8_e4m3fn)
float8_e5m2 = np.dtype(ml_dtypes.float8_e5m2)
float8_e4m3fnuz = np.dtype(ml_dtypes.float8_e4m3fnuz)
float8_e5m2fnuz = np.dtype(ml_dtypes.float8_e5m2fnuz)

ALL_DTYPES = (float32, float64, float16, bfloat16, int8, int16, int32, int64, uint8, bool_)
FLOAT_DTYPES = (float16, bfloat16, float32, float64)
INT_DTYPES = (int8, int16, int32, int64, uint8)
UINT_WIDE = (uint16, uint32, uint64)
FLOAT8_DTYPES = (float8_e4m3fn, float8_e5m2, float8_e4m3fnuz, float8_e5m2fnuz)
LOWP_DTYPES = (*UINT_WIDE, *FLOAT8_DTYPES)

_BY_NAME = {str(d): d for d in ALL_DTYPES}
_BY_NAME.update({str(d): d for d in LOWP_DTYPES})
_BY_NAME.update(
    {"bool": bool_, "float": float32, "double": float64, "half": float16, "long": int64, "int": int32}
)

_DEFAULT_FLOAT = [float32]


def get_default_dtype() -> np.dtype:
    """The float dtype that tensors get by default (float32 unless :func:`set_default_dtype` changed it).

    Returns:
        numpy.dtype: the default float dtype.

    Example:
        >>> import framework as fw
        >>> fw.get_default_dtype()
        dtype('float32')
    """
    return _DEFAULT_FLOAT[0]


def set_default_dtype(dtype: object) -> None:
    """Set the float dtype tensors get by default (creation functions, Python floats, int-to-float casts).

    Args:
        dtype (str | numpy.dtype): float16, bfloat16, float32 or float64.

    Example:
        >>> import framework as fw
        >>> fw.set_default_dtype("float64")
        >>> fw.ones([1]).dtype, fw.to_tensor([0.5]).dtype
        (dtype('float64'), dtype('float64'))
        >>> fw.set_default_dtype("float32")
    """
    d = as_dtype(dtype)
    if d not in FLOAT_DTYPES:
        raise OpArgumentError(f"[set_default_dtype] expected a floating dtype, got {d}")
    _DEFAULT_FLOAT[0] = d


def as_dtype(dtype: object, api: str = "dtype") -> np.dtype:
    """Turn a name, numpy dtype or type into a supported numpy dtype."""
    if isinstance(dtype, np.dtype) and dtype in _SUPPORTED:
        return dtype
    if isinstance(dtype, str) and dtype in _BY_NAME:
        return _BY_NAME[dtype]
    try:
        d = np.dtype(dtype)  # type: ignore[call-overload]
    except TypeError:
        d = None
    if d is None or d not in _SUPPORTED:
        names = ", ".join(sorted(_BY_NAME))
        raise OpArgumentError(f"[{api}] unsupported dtype {dtype!r}; expected one of: {names}")
    return d


_SUPPORTED = set(ALL_DTYPES)
_SUPPORTED.update(LOWP_DTYPES)

# -- complex dtypes (issue 40): kept in their own block -------------------------------------------
complex64 = np.dtype(np.complex64)
complex128 = np.dtype(np.complex128)
#: the complex dtypes: a pair of float32 (float64) per element, real part first
COMPLEX_DTYPES = (complex64, complex128)
_SUPPORTED.update(COMPLEX_DTYPES)
_BY_NAME.update({"complex64": complex64, "complex128": complex128})


def complex_of(d: np.dtype) -> np.dtype:
    """The complex dtype holding values of ``d``: complex128 for float64 and complex128, else complex64."""
    return complex128 if d in (float64, complex128) else complex64


def real_of(d: np.dtype) -> np.dtype:
    """The dtype of a complex dtype's parts (float32 for complex64, float64 for complex128); ``d`` otherwise."""
    return float64 if d == complex128 else float32 if d == complex64 else d


class _DTypeMeta(type):
    def __instancecheck__(cls, obj: object) -> bool:
        return isinstance(obj, np.dtype) and obj in _SUPPORTED


class DType(metaclass=_DTypeMeta):
    """The type of Oarlock's dtypes (``fw.dtype``): every supported numpy dtype is an instance.

    ``fw.dtype(spec)`` turns a name or numpy type into the dtype, as every ``dtype=`` argument does.

    Example:
        >>> import framework as fw
        >>> isinstance(fw.int64, fw.dtype), isinstance(fw.bfloat16, fw.dtype), isinstance("int64", fw.dtype)
        (True, True, False)
        >>> fw.dtype("float16")
        dtype('float16')
    """

    def __new__(cls, spec: object) -> np.dtype:  # type: ignore[misc]
        return as_dtype(spec)


def category(d: np.dtype) -> int:
    """0 bool, 1 integer, 2 floating, 3 complex."""
    if d.kind == "c":
        return 3
    if d == bool_:
        return 0
    if d.kind in "iu":
        return 1
    return 2


def is_float8(d: np.dtype) -> bool:
    """Whether ``d`` is one of the float8 storage dtypes."""
    return d in _FLOAT8


_FLOAT8 = frozenset(FLOAT8_DTYPES)


def storage_only_error(op: str, d: np.dtype) -> str:
    """The message of an op asked to compute on a float8 (storage-only) dtype."""
    return (
        f"[{op}] {d} is a storage dtype: only cast, data movement (reshape, transpose, concat, "
        f"slice, gather, ...) and fw.nn.quant.scaled_matmul take it, not {op}; cast it to float32 "
        f"first (x.astype('float32'))"
    )


def is_floating(d: np.dtype) -> bool:
    return d.kind == "f" or d == bfloat16 or d in _FLOAT8


def promote(a: np.dtype, b: np.dtype, op: str = "promote") -> np.dtype:
    """Result dtype of a binary op ``op`` on two tensors."""
    if a == b:
        return a
    if a in _FLOAT8 or b in _FLOAT8:
        raise OpArgumentError(
            storage_only_error(op, a if a in _FLOAT8 else b) + f" (other operand {b if a in _FLOAT8 else a})"
        )
    ca, cb = category(a), category(b)
    if ca == 3 or cb == 3:  # complex: as wide as the widest float part (float64 + complex64 -> complex128)
        return complex128 if complex128 in (a, b) or float64 in (a, b) else complex64
    if ca != cb:
        return a if ca > cb else b
    if ca == 2:
        if float64 in (a, b):
            return float64
        return float32  # {float16, bfloat16, float32} mixed
    if uint64 in (a, b) and (a.kind == "i" or b.kind == "i"):
        raise OpArgumentError(
            f"[{op}] no integer dtype holds both {a} and {b} (numpy gives float64, which is not "
            f"exact past 2**53); cast one operand first, e.g. x.astype('int64') or x.astype('float64')"
        )
    return np.promote_types(a, b)


def scalar_dtype(value: object, other: np.dtype) -> np.dtype:
    """Dtype a Python scalar takes next to a tensor of dtype ``other``."""
    if other in _FLOAT8:  # weak: the op then refuses the float8 tensor itself
        return other
    if isinstance(value, (complex, np.complexfloating)):
        return complex_of(other)
    if other.kind == "c" and isinstance(value, (bool, int, float, np.number, np.bool_)):
        return other
    if type(value) is float:
        return other if other.kind == "f" or other is bfloat16 else get_default_dtype()
    if isinstance(value, (bool, np.bool_)):
        return other
    if isinstance(value, (int, np.integer)):
        return other if category(other) >= 1 else int64
    if isinstance(value, (float, np.floating)):
        return other if category(other) == 2 else get_default_dtype()
    raise OpArgumentError(f"[promote] cannot combine a tensor with {type(value).__name__} {value!r}")


def infer_dtype(value: object) -> np.dtype:
    """Default dtype of Python data given to ``to_tensor``."""
    if isinstance(value, (bool, np.bool_)):
        return bool_
    if isinstance(value, (int, np.integer)):
        return int64
    if isinstance(value, (float, np.floating)):
        return get_default_dtype()
    if isinstance(value, (complex, np.complexfloating)):
        return complex_of(get_default_dtype())
    raise OpArgumentError(f"[to_tensor] cannot make a tensor from {type(value).__name__} {value!r}")
