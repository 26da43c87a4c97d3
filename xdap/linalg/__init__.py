"""Distributed dense linear algebra on the core pair: the algorithms whose
data moves between ranks: ``tsqr`` (the QR factorization of a tall matrix
whose rows are split over ranks), ``summa`` (the product of two matrices
in blocks over one 2-D process grid), ``block_cholesky`` and
``block_lu_solve`` (the Cholesky factor, and ``A X = B`` by LU with
partial pivoting, of a matrix distributed block-cyclically). The Array API's ``linalg`` extension
(``xdap.api.linalg``) is built on them and on NumPy's LAPACK per rank.
"""
from .cholesky import block_cholesky
from .lu import block_lu_solve
from .summa import summa
from .tsqr import tsqr

__all__ = ["tsqr", "summa", "block_cholesky", "block_lu_solve"]
