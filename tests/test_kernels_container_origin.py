"""A kernel's outcome depends on the operands' types and values only, never
on how their containers were made (serial).

Every library kernel (UNARY, BINARY, COMPARE) x every dtype (x every dtype
of the second operand) runs on the same 2 x 4 values in six forms:

- ``xnd``: ``xnd(values.tolist(), type="2 * 4 * T")`` (xnd's own memory),
- ``xnd-view``: a reversed view ``[::-1, ::-1]`` of an xnd container (not
  one strided run: the fast path refuses it and the operand is copied),
- ``numpy-container``: ``to_container(array)`` (a zero-copy view made by
  ``xdap._xndbuf.from_buffers``),
- ``numpy``: the NumPy array itself passed to the kernel,
- ``numpy-view``: a reversed NumPy view (copied as well),
- ``list``: nested Python lists passed to the kernel (xdap infers the
  dtype; only where that inference yields T, i.e. bool, int64, float64 and
  complex128 lists),

and the outcome -- the result's dtype and bytes, or the exception's type
and message -- must be the same for all.  The documented type rules are checked
independently where NumPy defines the answer: ``negative(bool)`` raises
TypeError, and Python bools are bool data, not int64.
"""
import numpy as np
import pytest
from xnd import xnd

from xdap import kernels as K
from xdap.parts import parts
from xdap.kernels.operands import to_container

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float32", "float64", "complex128"]
# The dtype xdap infers from a Python list of these values (as NumPy does).
LIST_DTYPES = {"bool", "int64", "float64", "complex128"}


def values(dtype, reverse=False):
    """Edge values of dtype (extremes, zero, one, minus one, NaN, inf)."""
    if dtype == "bool":
        v = np.array([True, False, True, False, False, True, True, False])
    elif dtype.startswith(("int", "uint")):
        info = np.iinfo(dtype)
        v = np.array([info.min, info.max, 0, 1, info.min // 2 + 3, 2, info.max - 1, 7],
                     dtype=dtype)
        if dtype.startswith("int"):
            v[4] = -1
    elif dtype == "complex128":
        v = np.array([0.5 - 2j, -1.5 + 0j, 0j, 1 + 1j, complex(np.inf, 0), complex(np.nan, 1),
                      -3 - 0.25j, 2j])
    else:
        v = np.array([0.5, -1.5, 0.0, 1.0, np.inf, np.nan, -0.0, 3.25], dtype=dtype)
    return (v[::-1] if reverse else v).reshape(2, 4).copy()


def origins(v, dtype):
    """The same values as operands of every origin: name -> operand."""
    flipped = v[::-1, ::-1].copy()
    forms = {
        "xnd": xnd(v.tolist(), type=f"2 * 4 * {dtype}"),
        "xnd-view": xnd(flipped.tolist(), type=f"2 * 4 * {dtype}")[::-1, ::-1],
        "numpy-container": to_container(v),
        "numpy": v,
        "numpy-view": flipped[::-1, ::-1],
    }
    if dtype in LIST_DTYPES:
        forms["list"] = v.tolist()
    return forms


def outcome(kernel, *args):
    """(result dtype, result bytes) or the exception's type and message."""
    try:
        r = kernel(*args)
    except Exception as e:          # the exception is part of the outcome
        return f"{type(e).__name__}: {e}"
    p = parts(r)
    assert p.validity is None and p.info.shape == (2, 4)
    return p.info.dtype, p.values.tobytes()


def check_agree(name, dtype_pairs):
    kernel = getattr(K, name)
    differ = []
    for dtypes in dtype_pairs:
        operands = [origins(values(d, reverse=i == 1), d) for i, d in enumerate(dtypes)]
        common = [o for o in operands[0] if all(o in ops for ops in operands)]
        got = {o: outcome(kernel, *(ops[o] for ops in operands)) for o in common}
        if len(set(got.values())) > 1:
            differ.append(f"{name}{dtypes}: " + "; ".join(
                f"{o} -> {g if isinstance(g, str) else g[0]}" for o, g in got.items()))
    assert not differ, "outcome depends on the container's origin:\n" + "\n".join(differ)


@pytest.mark.parametrize("name", K.UNARY)
def test_unary_outcome_independent_of_origin(name):
    check_agree(name, [(d,) for d in DTYPES])


@pytest.mark.parametrize("name", K.BINARY + K.COMPARE)
def test_binary_outcome_independent_of_origin(name):
    check_agree(name, [(a, b) for a in DTYPES for b in DTYPES])


def test_negative_bool_raises_for_every_origin():
    # Documented rule (docs/kernels.md, "Type rules"), as NumPy:
    with pytest.raises(TypeError):
        np.negative(np.array([True, False]))
    for origin, x in origins(values("bool"), "bool").items():
        with pytest.raises(TypeError, match="no kernel for bool in negative"):
            K.negative(x)
