"""Map C scalar types to ndtypes dtypes.

A module's ``typemaps`` entries (``C type: ndtypes type``) extend and
override the defaults below.  Only fixed-size numeric types (and bool) can
be kernel arguments: they are what gumath's Strided and Xnd kernels move.

>>> resolve("unsigned   long", {})
'uint64'
>>> resolve("real", {"real": "float32"})
'float32'
"""
from __future__ import annotations

# ndtypes dtype -> byte size; the set of dtypes a kernel argument may have.
DTYPE_SIZE = {
    "bool": 1, "int8": 1, "int16": 2, "int32": 4, "int64": 8,
    "uint8": 1, "uint16": 2, "uint32": 4, "uint64": 8,
    "float32": 4, "float64": 8, "complex64": 8, "complex128": 16,
}

# Defaults for an LP64 platform (Linux x86_64/aarch64); the generated C
# checks every size with a static assertion, so a wrong guess fails loudly.
DEFAULT_TYPEMAP = {
    "bool": "bool", "_Bool": "bool",
    "signed char": "int8", "unsigned char": "uint8",
    "short": "int16", "short int": "int16", "signed short": "int16",
    "unsigned short": "uint16", "unsigned short int": "uint16",
    "int": "int32", "signed": "int32", "signed int": "int32",
    "unsigned": "uint32", "unsigned int": "uint32",
    "long": "int64", "long int": "int64", "signed long": "int64",
    "unsigned long": "uint64", "unsigned long int": "uint64",
    "long long": "int64", "long long int": "int64", "unsigned long long": "uint64",
    "int8_t": "int8", "int16_t": "int16", "int32_t": "int32", "int64_t": "int64",
    "uint8_t": "uint8", "uint16_t": "uint16", "uint32_t": "uint32", "uint64_t": "uint64",
    "size_t": "uint64", "ssize_t": "int64", "intptr_t": "int64", "ptrdiff_t": "int64",
    "float": "float32", "double": "float64",
    "float32_t": "float32", "float64_t": "float64",
    "float complex": "complex64", "float _Complex": "complex64", "complex float": "complex64",
    "double complex": "complex128", "double _Complex": "complex128", "complex double": "complex128",
    "ndt_complex64_t": "complex64", "ndt_complex128_t": "complex128",
}


def normalise(ctype: str) -> str:
    return " ".join(ctype.split())


def resolve(ctype: str, typemap: dict) -> str | None:
    """The ndtypes dtype of a C type, or None when it is unknown."""
    key = normalise(ctype)
    dtype = typemap.get(key, DEFAULT_TYPEMAP.get(key))
    return dtype


def parse_typemaps(text: str):
    """Read ``C type: dtype`` lines; return (dict, list of bad lines)."""
    out, bad = {}, []
    for line in text.splitlines():
        line = line.strip().rstrip(",")
        if not line:
            continue
        ctype, sep, dtype = line.rpartition(":")
        ctype, dtype = normalise(ctype), dtype.strip()
        if not sep or not ctype or dtype not in DTYPE_SIZE:
            bad.append(line)
            continue
        out[ctype] = dtype
    return out, bad
