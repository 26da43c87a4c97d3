"""Element types: ndtypes dtypes as NumPy dtypes and PEP-3118 formats.

A DistArray's element ("leaf") is any fixed-size ndtypes dtype whose bytes
NumPy can read as they lie in xnd's memory:

==============================  ==========================================
ndtypes                         NumPy (the same bytes, no copy)
==============================  ==========================================
bool, int8..uint64, float16..   the scalar dtype (``complex128`` -> ``c16``)
``{pos: 3 * float64, id: int64}``  an aligned structured dtype (C layout,
                                as ndtypes lays records out)
``(int8, float32)``             a structured dtype with fields f0, f1, ...
``fixed_bytes(size=8)``         ``S8``
``fixed_string(5)``             ``S5``: xnd's default ('utf8') stores one byte
                                per character (code points < 256, Latin-1)
``fixed_string(5, 'utf32')``    ``U5``
``categorical('a', 'b', NA)``   ``int64``: the index of the item (NA is an item)
==============================  ==========================================

Optional values (``?{...}``, ``?fixed_string(3)``) are the leaf plus an
Arrow validity bitmap, as for numbers. Variable-length ``string``/``bytes``
make 1-d arrays of their own (``N * string``: rows of bytes, see
``xdap.types``), not elements of records or lists. Not leaves, with the
reason and the nearest spelling in the error: missing items inside a
record's fixed dimension, ``fixed_string(n, 'utf16')`` and aligned
``fixed_bytes`` (no NumPy equivalent). Optional record fields are allowed:
see ``optional_fields``.

>>> leaf_numpy_dtype("{a : int8, b : float64}")
dtype([('a', 'i1'), ('b', '<f8')], align=True)
>>> leaf_format("{pos : 3 * float64, id : int64}"), leaf_format("complex128")
('T{(3)d:pos:l:id:}', 'Zd')
>>> dtype_from_numpy(np.dtype([("x", "f4"), ("tag", "S3")], align=True))
'{x : float32, tag : fixed_bytes(size=3)}'
>>> categories("categorical('a', 1, NA)")
['a', 1, None]
"""
from __future__ import annotations

import ast
import functools
import re

import numpy as np
from ndtypes import ndt

__all__ = ["DTYPES", "leaf_numpy_dtype", "leaf_format", "is_numeric", "categories", "fields",
           "optional_fields", "records_from_python", "records_to_python", "HIDDEN",
           "is_categorical", "numpy_dtype", "buffer_format", "dtype_from_numpy",
           "dtype_from_format", "LEAVES_HELP"]

# ndtypes name -> (numpy dtype, native PEP-3118 format that memoryview and
# numpy both accept). xnd itself exports '=d'-style formats (and '=D' for
# complex, which numpy rejects); we export these instead.
DTYPES = {
    "bool": (np.dtype(np.bool_), "?"),
    "int8": (np.dtype(np.int8), "b"),
    "int16": (np.dtype(np.int16), "h"),
    "int32": (np.dtype(np.int32), "i"),
    "int64": (np.dtype(np.int64), "q"),
    "uint8": (np.dtype(np.uint8), "B"),
    "uint16": (np.dtype(np.uint16), "H"),
    "uint32": (np.dtype(np.uint32), "I"),
    "uint64": (np.dtype(np.uint64), "Q"),
    "float16": (np.dtype(np.float16), "e"),
    "float32": (np.dtype(np.float32), "f"),
    "float64": (np.dtype(np.float64), "d"),
    "complex64": (np.dtype(np.complex64), "Zf"),
    "complex128": (np.dtype(np.complex128), "Zd"),
}
_BY_NUMPY = {dt: name for name, (dt, _) in DTYPES.items()}

LEAVES_HELP = ("an element is a number (bool, int8..int64, uint8..uint64, float16..float64, "
               "complex64, complex128), a record '{x: float64, n: 3 * int32}', a tuple "
               "'(int8, float32)', 'fixed_string(n)', 'fixed_bytes(size=n)' or "
               "'categorical(...)', optionally with '?'")

_TOKEN = re.compile(r"\s*(?:(?P<str>'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\")"
                    r"|(?P<num>-?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)"
                    r"|(?P<name>[A-Za-z_][A-Za-z0-9_]*)|(?P<punct>[{}(),:*?=]))")


# Optional record fields: xnd keeps a bitmap per field, which has no flat
# layout; xdap keeps each optional field's validity as a hidden byte field
# named "?name" after the others (1 = valid), so the records stay one
# fixed-size NumPy item that moves as bytes. The xnd container of such
# records is then made from their Python values (a copy), and back.
HIDDEN = "?"


def optional_fields(dt: np.dtype) -> bool:
    """Whether a NumPy record dtype carries hidden validity fields (at any depth)."""
    if dt.names is None:
        return dt.subdtype is not None and optional_fields(dt.subdtype[0])
    return any(n.startswith(HIDDEN) or optional_fields(dt.fields[n][0]) for n in dt.names)


def records_from_python(items, dt: np.dtype) -> np.ndarray:
    """Python values (dicts or tuples, None for a missing field) as NumPy
    records of ``dt`` (hidden validity fields filled)."""
    return np.array([_as_tuple(v, dt) for v in items], dt)


def records_to_python(values: np.ndarray, dtype: str) -> list:
    """NumPy records of the ndtypes element ``dtype`` as xnd's Python
    values: dicts for records, tuples for tuples, None where a hidden
    validity field says missing."""
    dt = leaf_numpy_dtype(dtype)
    return [_as_value(v, dt, dtype.lstrip("?")) for v in values.tolist()]


def _visible(dt):
    return [n for n in dt.names if not n.startswith(HIDDEN)]


def _as_tuple(v, dt):
    if dt.names is None:
        if dt.subdtype is not None:
            return [_as_tuple(x, dt.subdtype[0]) for x in v]
        return v
    names = _visible(dt)
    got = list(v.values()) if isinstance(v, dict) else list(v)
    if isinstance(v, dict) and list(v) != names:
        got = [v[n] for n in names]
    out, valid = [], {}
    for n, x in zip(names, got):
        sub = dt.fields[n][0]
        valid[n] = x is not None
        out.append(_zero(sub) if x is None else _as_tuple(x, sub))
    for n in dt.names[len(names):]:
        out.append(int(valid[n[len(HIDDEN):]]))
    return tuple(out)


def _zero(dt):
    return np.zeros((), dt).tolist()


def _as_value(v, dt, spelled):
    """One record's tolist() value as xnd's Python value; ``spelled`` is its
    ndtypes type (which says tuple or record, NumPy cannot)."""
    if dt.names is None:
        return v
    names = _visible(dt)
    hidden = {n[len(HIDDEN):]: v[dt.names.index(n)] for n in dt.names[len(names):]}
    kinds = fields(spelled)
    vals = [None if not hidden.get(n, 1) else _nested(x, dt.fields[n][0], kinds[n].lstrip("?"))
            for n, x in zip(names, v)]
    return tuple(vals) if spelled.startswith("(") else dict(zip(names, vals))


def _nested(x, dt, spelled):
    if dt.subdtype is not None:
        inner = spelled.split(" * ", 1)[1] if " * " in spelled else spelled
        return [_nested(y, dt.subdtype[0], inner) for y in x]
    return _as_value(x, dt, spelled)


def is_numeric(dtype: str) -> bool:
    """True for the numeric scalars kernels and reductions run on.

    >>> is_numeric("float64"), is_numeric("?int8"), is_numeric("{a : int8}")
    (True, True, False)
    """
    return dtype.lstrip("?") in DTYPES


INTEGERS = frozenset(f"{k}int{b}" for k in ("", "u") for b in (8, 16, 32, 64))


def is_integer(dtype: str) -> bool:
    """True for the signed and unsigned integer scalars (what indexes).

    >>> is_integer("uint16"), is_integer("?int8"), is_integer("bool")
    (True, False, False)
    """
    return dtype in INTEGERS


def is_categorical(dtype: str) -> bool:
    return dtype.lstrip("?").startswith("categorical(")


@functools.lru_cache(maxsize=512)
def leaf_numpy_dtype(dtype: str) -> np.dtype:
    """The NumPy dtype over the bytes of an ndtypes leaf ('?' ignored; see the
    module docstring). Raises TypeError naming the rule for other leaves."""
    name = dtype.lstrip("?")
    if name in DTYPES:
        return DTYPES[name][0]
    parser = _Parser(name)
    dt = parser.dtype(top=True)
    parser.end()
    want = _datasize(name)
    if dt.itemsize != want and not optional_fields(dt):  # a layout rule we do not mirror
        raise TypeError(f"element type {name!r}: ndtypes lays it out in {want} bytes, "
                        f"NumPy's aligned equivalent in {dt.itemsize}")
    return dt


@functools.lru_cache(maxsize=512)
def leaf_format(dtype: str) -> str:
    """The PEP-3118 format of a leaf that both memoryview and NumPy read."""
    name = dtype.lstrip("?")
    if name in DTYPES:
        return DTYPES[name][1]
    return memoryview(np.empty(0, leaf_numpy_dtype(name))).format


@functools.lru_cache(maxsize=256)
def fields(dtype: str) -> dict:
    """{field name: its ndtypes type} of a record or tuple leaf (tuple fields
    are named f0, f1, ... as in NumPy), in order.

    >>> fields("{pos : 3 * float64, id : int64}")
    {'pos': '3 * float64', 'id': 'int64'}
    >>> fields("(int8, fixed_string(3))")
    {'f0': 'int8', 'f1': 'fixed_string(3)'}
    """
    name = dtype.lstrip("?")
    if not name.startswith(("{", "(")):
        raise TypeError(f"element type {dtype!r} has no fields (it is not a record or tuple)")
    parser = _Parser(name)
    parser.dtype(top=True)
    return {n: str(ndt(t)) for n, t in zip(parser.names, parser.spelled)}


def categories(dtype: str) -> list:
    """The items of a ``categorical(...)`` leaf, NA as None."""
    text = dtype.lstrip("?")
    if not text.startswith("categorical("):
        raise TypeError(f"{dtype!r} is not a categorical type")
    items = []
    for tok in _tokens(text[len("categorical("):-1]):
        kind, value = tok
        if kind == "punct":
            continue
        if kind == "name":
            if value != "NA":
                raise TypeError(f"categorical item {value!r} in {dtype!r} is not a literal")
            items.append(None)
        else:
            items.append(ast.literal_eval(value))
    return items


def _datasize(name: str) -> int:
    try:
        return ndt(name).datasize
    except Exception as e:  # ndtypes raises ValueError/TypeError of its own
        raise TypeError(f"not an ndtypes type: {name!r} ({e})") from None


def _tokens(text: str):
    pos, out = 0, []
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise TypeError(f"cannot read element type {text!r} at {text[pos:]!r}")
        kind = m.lastgroup
        out.append((kind, m.group(kind)))
        pos = m.end()
    return out


class _Parser:
    """Recursive descent over ndtypes' spelling of a fixed-size dtype."""

    def __init__(self, text: str):
        self.text, self.toks, self.i = text, _tokens(text), 0

    def peek(self):
        return self.toks[self.i] if self.i < len(self.toks) else (None, None)

    def take(self, value=None):
        tok = self.peek()
        if tok[0] is None or (value is not None and tok[1] != value):
            raise TypeError(f"cannot read element type {self.text!r}: expected {value!r}")
        self.i += 1
        return tok

    def end(self):
        if self.i != len(self.toks):
            raise TypeError(f"cannot read element type {self.text!r}")

    def refuse(self, why: str):
        raise TypeError(f"element type {self.text!r}: {why}")

    def dtype(self, top=False):
        kind, value = self.peek()
        if value == "?":
            self.refuse("optional items are allowed as whole elements ('?{...}') and as "
                        "record or tuple fields ('{x: ?float64}'), not inside a fixed "
                        "dimension; make the field optional, or use a sentinel value")
        if kind == "num":
            shape = []
            while self.peek()[0] == "num":
                shape.append(int(self.take()[1]))
                self.take("*")
            if top:
                self.refuse("fixed dimensions belong outside the element ('3 * float64'), "
                            "or inside a record ('{v: 3 * float64}')")
            return np.dtype((self.dtype(), tuple(shape)))
        if value == "{":
            return self.record()
        if value == "(":
            return self.tuple()
        if kind != "name":
            self.refuse(LEAVES_HELP)
        self.take()
        if value in DTYPES:
            return DTYPES[value][0]
        args = self.args() if self.peek()[1] == "(" else []
        if value == "fixed_bytes":
            opts = dict(args)
            if int(opts.get("align", 1)) != 1:
                self.refuse("fixed_bytes with align > 1 has no NumPy equivalent; spell it "
                            f"fixed_bytes(size={opts.get('size')})")
            return np.dtype(f"S{int(opts['size'])}")
        if value == "fixed_string":
            size = int(args[0][1])
            encoding = args[1][1].strip("'\"") if len(args) > 1 else "utf8"
            if encoding in ("ascii", "utf8"):
                return np.dtype(f"S{size}")
            if encoding == "utf32":
                return np.dtype(f"U{size}")
            self.refuse(f"fixed_string with encoding {encoding!r} has no NumPy equivalent; use "
                        f"fixed_string({size}) (utf8) or fixed_string({size}, 'utf32')")
        if value == "categorical":
            return np.dtype(np.int64)
        if value in ("string", "bytes"):
            self.refuse(f"variable-length {value} items make 1-d arrays only ('N * {value}'), "
                        "not elements of records, fixed dims or lists (xnd stores a pointer per "
                        f"item); there use fixed_{value}"
                        f"({'n' if value == 'string' else 'size=n'}) for items up to n bytes")
        self.refuse(LEAVES_HELP)

    def args(self):
        """``(a, k=v, ...)`` as a list of (key or None, raw text) pairs."""
        self.take("(")
        out, depth, key, cur = [], 0, None, []
        while True:
            kind, value = self.take()
            if depth == 0 and value in (",", ")"):
                out.append((key, " ".join(cur)))
                key, cur = None, []
                if value == ")":
                    return out
            elif depth == 0 and value == "=" and len(cur) == 1:
                key, cur = cur[0], []
            else:
                depth += value == "("
                depth -= value == ")"
                cur.append(value)

    def typed(self):
        """One field's dtype, its ndtypes spelling and whether it is optional."""
        start = self.i
        optional = self.peek()[1] == "?"
        if optional:
            self.take()
        dt = self.dtype()
        return dt, " ".join(v for _, v in self.toks[start:self.i]), optional

    def fields_of(self, close, named):
        names, formats, spelled, hidden = [], [], [], []
        while True:
            if named:
                names.append(self.take()[1].strip("'\""))
                self.take(":")
            else:
                names.append(f"f{len(formats)}")
            dt, text, optional = self.typed()
            formats.append(dt)
            spelled.append(text)
            if optional:       # its validity: a hidden byte field (see optional_fields)
                hidden.append(HIDDEN + names[-1])
            if self.take()[1] == close:
                break
        self.names, self.spelled = names, spelled
        return np.dtype({"names": names + hidden,
                         "formats": formats + [np.dtype(np.uint8)] * len(hidden)}, align=True)

    def record(self):
        self.take("{")
        return self.fields_of("}", True)

    def tuple(self):
        self.take("(")
        return self.fields_of(")", False)


def numpy_dtype(dtype: str) -> np.dtype:
    """NumPy dtype of an ndtypes leaf ('?' ignored).

    >>> numpy_dtype("?int16")
    dtype('int16')
    """
    return leaf_numpy_dtype(dtype)


def buffer_format(dtype: str) -> str:
    """Native PEP-3118 format of an ndtypes leaf.

    >>> buffer_format("complex128"), buffer_format("fixed_bytes(size=4)")
    ('Zd', '4s')
    """
    return leaf_format(dtype)


def dtype_from_numpy(dt) -> str:
    """ndtypes leaf of a NumPy dtype (native byte order; structured dtypes
    need C alignment, ``np.dtype(..., align=True)``, as ndtypes lays records
    out that way).

    >>> dtype_from_numpy(np.float32), dtype_from_numpy("S4"), dtype_from_numpy("U2")
    ('float32', 'fixed_bytes(size=4)', "fixed_string(2, 'utf32')")
    """
    dt = np.dtype(dt)
    if dt.fields is not None:
        return _record_from_numpy(dt)
    if dt.kind == "S":
        return f"fixed_bytes(size={dt.itemsize})"
    if dt.kind == "U":
        return f"fixed_string({dt.itemsize // 4}, 'utf32')"
    if dt.byteorder not in "=|" and dt.byteorder != np.dtype(dt.type).byteorder:
        raise TypeError(f"non-native byte order in dtype {dt!r}: convert with .astype(dt.newbyteorder('='))")
    name = _BY_NUMPY.get(np.dtype(dt.type))
    if name is None or dt.subdtype is not None:
        raise TypeError(f"unsupported NumPy dtype {dt!r}: {LEAVES_HELP} (NumPy: scalars, "
                        "'S'/'U' strings and aligned structured dtypes)")
    return name


def _record_from_numpy(dt: np.dtype) -> str:
    fields = []
    hidden = {n[len(HIDDEN):] for n in dt.names if n.startswith(HIDDEN)}
    for name in dt.names:
        if name.startswith(HIDDEN):
            continue
        sub = dt.fields[name][0]
        if not name.isidentifier():
            raise TypeError(f"structured dtype field {name!r}: ndtypes record fields must be "
                            "identifiers")
        base, shape = (sub.subdtype if sub.subdtype is not None else (sub, ()))
        dims = "".join(f"{s} * " for s in shape)
        fields.append(f"{name} : {dims}{'?' if name in hidden else ''}{dtype_from_numpy(base)}")
    text = "{" + ", ".join(fields) + "}"
    aligned = leaf_numpy_dtype(text)
    if [dt.fields[n][1] for n in dt.names] != [aligned.fields[n][1] for n in dt.names] \
            or dt.itemsize != aligned.itemsize:
        raise TypeError(f"structured dtype {dt} is not laid out as ndtypes lays out {text!r} "
                        "(C alignment): convert with .astype(np.dtype(fields, align=True))")
    return text


def dtype_from_format(fmt: str, itemsize: int | None = None, buffer=None) -> str:
    """ndtypes leaf of a PEP-3118 format string ('=d', '<i', 'Zd', 'l', ...).
    Struct formats ('T{d:x:q:n:}', '8s', '3w') are read by NumPy from the
    ``buffer`` that carries them.

    >>> dtype_from_format("=d"), dtype_from_format("l", 8)
    ('float64', 'int64')
    >>> rec = np.zeros(2, np.dtype([("x", "f8"), ("n", "i8")]))
    >>> dtype_from_format(memoryview(rec).format, 16, memoryview(rec))
    '{x : float64, n : int64}'
    """
    order, code = (fmt[0], fmt[1:]) if fmt[:1] in "@=<>!" else ("@", fmt)
    table = _NATIVE if order == "@" else _STANDARD
    if code not in table:
        if buffer is None:
            raise TypeError(f"unsupported buffer format {fmt!r}: {LEAVES_HELP}")
        try:
            dt = np.asarray(buffer).dtype
        except (TypeError, ValueError) as e:
            raise TypeError(f"unsupported buffer format {fmt!r} ({e}): {LEAVES_HELP}") from None
        if itemsize is not None and dt.itemsize != itemsize:
            raise TypeError(f"buffer format {fmt!r} describes {dt.itemsize}-byte items, but "
                            f"the buffer's itemsize is {itemsize}")
        try:
            return dtype_from_numpy(dt)
        except TypeError as e:
            raise TypeError(f"unsupported buffer format {fmt!r}: {e}") from None
    if order in "<>!" and (order == "<") != (np.little_endian):
        raise TypeError(f"buffer format {fmt!r} is not in native byte order")
    name = table[code]
    if itemsize is not None and DTYPES[name][0].itemsize != itemsize:
        raise TypeError(f"buffer format {fmt!r} means {name}, but the buffer's itemsize is {itemsize}")
    return name


# struct's native ('@') and standard ('=<>!') sizes differ for 'l'/'L'.
_STANDARD = {"?": "bool", "b": "int8", "h": "int16", "i": "int32", "l": "int32",
             "q": "int64", "B": "uint8", "H": "uint16", "I": "uint32", "L": "uint32",
             "Q": "uint64", "e": "float16", "f": "float32", "d": "float64",
             "Zf": "complex64", "Zd": "complex128"}
_NATIVE = dict(_STANDARD, l=dtype_from_numpy(np.dtype("l")), L=dtype_from_numpy(np.dtype("L")),
               n=dtype_from_numpy(np.intp), N=dtype_from_numpy(np.uintp))
