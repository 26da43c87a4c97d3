"""Distributed dense linear algebra on the core pair: the algorithms whose
data moves between ranks: ``tsqr`` (the QR factorization of a tall matrix
whose rows are split over ranks) and ``summa`` (the product of two matrices
in blocks over one 2-D process grid). The Array API's ``linalg`` extension
(``xdap.api.linalg``) is built on them and on NumPy's LAPACK per rank.
"""
from .summa import summa
from .tsqr import tsqr

__all__ = ["tsqr", "summa"]
