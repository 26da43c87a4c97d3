"""``.npy`` headers for the fixed pieces of a save (NumPy's own format,
version 1.0, written and parsed with ``numpy.lib.format``), so every piece
opens with ``numpy.load`` / ``numpy.load(mmap_mode="r")``.

>>> h = npy_header(np.dtype("complex64"), (3, 4))
>>> len(h) % 64, parse_npy_header(h)
(0, (dtype('complex64'), (3, 4)))
"""
from __future__ import annotations

import io

import numpy as np
from numpy.lib import format as npformat

__all__ = ["npy_header", "parse_npy_header"]


def npy_header(dtype: np.dtype, shape) -> bytes:
    """The header of a C-order ``.npy`` file of this dtype and shape."""
    buf = io.BytesIO()
    npformat.write_array_header_1_0(buf, {"descr": npformat.dtype_to_descr(np.dtype(dtype)),
                                          "fortran_order": False,
                                          "shape": tuple(int(s) for s in shape)})
    return buf.getvalue()


def parse_npy_header(data) -> tuple:
    """(dtype, shape) of a C-order ``.npy`` header; ValueError otherwise."""
    f = io.BytesIO(bytes(data))
    try:
        version = npformat.read_magic(f)
        read = {(1, 0): npformat.read_array_header_1_0,
                (2, 0): npformat.read_array_header_2_0}.get(version)
        if read is None:
            raise ValueError(f"unsupported .npy version {version}")
        shape, fortran, dtype = read(f)
    except Exception as e:        # numpy raises ValueError, SyntaxError, ...
        raise ValueError(f"not a valid .npy header ({e})") from None
    if fortran:
        raise ValueError("a Fortran-order .npy piece is not what xdap writes")
    return dtype, tuple(shape)
