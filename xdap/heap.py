"""Hand freed heap memory back to the operating system after a large build.

NumPy allocates big arrays with ``malloc``; once glibc has freed one
mmapped block it raises its mmap threshold, so later scratch arrays of a
few MiB come from the heap and stay resident after they are freed --
reusable by this process, but counted against the O(N/P) memory per rank a
collective build promises.  ``release_scratch`` (glibc's ``malloc_trim``)
returns those pages; ``trims_heap`` does it when a function returns.  On a
C library without ``malloc_trim`` both do nothing.

>>> @trims_heap
... def build():
...     return sum(range(10))
>>> build()
45
"""
from __future__ import annotations

import functools

__all__ = ["release_scratch", "trims_heap"]


def _libc():
    try:
        import ctypes
        libc = ctypes.CDLL("libc.so.6")
        libc.malloc_trim                          # glibc only
        return libc
    except (OSError, AttributeError):
        return None


_LIBC = _libc()


def release_scratch() -> None:
    """Return the free pages of the heap to the OS (local; microseconds
    when there is nothing to return, a few ms per GiB when there is)."""
    if _LIBC is not None:
        _LIBC.malloc_trim(0)


def trims_heap(fn):
    """Decorate a function that builds large temporaries: the heap is
    trimmed after it returns (or raises), once its locals are gone."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        finally:
            release_scratch()
    return wrapper
