"""Distributed dense linear algebra on the core pair: the algorithms whose
data moves between ranks (``tsqr``: the QR factorization of a tall matrix
whose rows are split over ranks). The Array API's ``linalg`` extension
(``xdap.api.linalg``) is built on them and on NumPy's LAPACK per rank.
"""
from .tsqr import tsqr

__all__ = ["tsqr"]
