"""Awkward Array interop: local xnd containers <-> ``awkward`` arrays, zero-copy.

The layouts are built from ``ak.contents`` nodes directly over the
container's buffers (the same buffers ``ak.to_buffers`` would list):

=========================  ==================================================
xdap type                  awkward layout
=========================  ==================================================
``N * T``                  ``NumpyArray``
``N * M * T``              ``RegularArray(NumpyArray, size=M)``
``var * var * T``          ``ListOffsetArray(Index32 offsets, NumpyArray)``
``?T`` leaves              ``BitMaskedArray(valid_when=True, lsb_order=True)``
                           around the leaf -- the same bits as xnd's bitmap
=========================  ==================================================

Every dtype (bool and complex included) is zero-copy in both directions.
Going back, other awkward layouts are accepted and converted with a copy of
the part that differs: int64/uint32 offsets (narrowed to int32),
``ListArray`` (starts/stops), ``ByteMaskedArray``, ``IndexedOptionArray``,
``UnmaskedArray`` (a bitmap is made), ``IndexedArray``; an offsets array not
starting at 0 is shifted (O(rows)). Option types above a list level (null
lists) raise TypeError.

Records, fixed strings and bytes, and categoricals go through their Arrow
form (``xdap.protocols.arrow``; Awkward reads and writes Arrow itself):
records become ``RecordArray`` columns (a copy -- xnd interleaves fields),
categoricals Awkward categoricals (Awkward has no NA category: a
``categorical(..., NA)`` is exported as ``?categorical(...)``), strings
Awkward strings. Where Awkward's form is not the type -- ``fixed_string(n)``
(an Awkward string), any categorical (an option type there) -- the element
node carries the ndtypes type as the parameter ``xdap_type``, and
``from_awkward`` restores it exactly.

>>> import numpy as np
>>> from xdap.parts import as_container, parts
>>> x = as_container([[1, None], [], [3]], type="var * var * ?int32")
>>> arr = to_awkward(x)
>>> str(arr.type), arr.tolist()
('3 * var * ?int32', [[1, None], [], [3]])
>>> y = from_awkward(arr)
>>> y.value == x.value, np.shares_memory(parts(y).values, parts(x).values)
(True, True)
"""
from __future__ import annotations

import numpy as np
from ndtypes import ndt

from .. import comm as _comm
from ..arraylike import is_distributed, unwrap
from ..parts import Parts, container, parts
from ..rows import take_block, take_rows
from ..bitmaps import all_valid, pack_validity
from ..dtypes import HIDDEN, categories, fields as record_fields, is_categorical, is_numeric
from ..types import TypeInfo, dtype_from_numpy, numpy_dtype, split_dims
from ..agreement import agreement
from ..optional import need

ak = need("awkward")

__all__ = ["to_awkward", "owned_awkward", "from_awkward", "parts_from_awkward",
           "stack_awkward"]


def to_awkward(x) -> ak.Array:
    """An awkward Array over a local container's buffers (no copy).

    ``x`` is an xnd container, ``Parts`` or a DistArray: its owned part
    (communication padding left out, which copies; none: zero-copy).

    >>> from xnd import xnd
    >>> str(to_awkward(xnd([[1.0, 2.0]])).type)
    '1 * 2 * float64'
    """
    if is_distributed(x):
        return owned_awkward(*unwrap(x))
    return _to_awkward(x if isinstance(x, Parts) else parts(x))


def owned_awkward(d, p: Parts) -> ak.Array:
    """The part of ``(d, p)`` this rank owns as an awkward Array (zero-copy
    unless there is communication padding to leave out)."""
    d.require_dims("to_awkward")
    own = tuple(d.maps[k].owned_local_slice(d.coords[k]) for k in range(d.ndim))
    if all(s == slice(0, n) for s, n in zip(own, p.shape)):
        return _to_awkward(p)
    if p.info.ragged:                   # communication padding: the owned part is copied
        return _to_awkward(take_rows(p, np.arange(own[0].start, own[0].stop)))
    return _to_awkward(take_block(p, own))


def _to_awkward(p: Parts) -> ak.Array:
    if p.info.text:           # Awkward reads Arrow strings as its own
        from .arrow import parts_to_arrow
        return ak.from_arrow(parts_to_arrow(p), highlevel=True)
    element = p.info.leaf                    # before the NA category becomes missing
    p = _na_as_missing(p)
    flat = p.values.reshape(-1)
    node = _element_node(flat, p.info.dtype)
    if p.validity is not None:
        # simplified: a categorical is an indexed node, which a mask must absorb
        make = ak.contents.BitMaskedArray if p.info.numeric else \
            ak.contents.BitMaskedArray.simplified
        node = make(ak.index.IndexU8(np.asarray(p.validity, np.uint8)), node,
                    valid_when=True, length=len(flat), lsb_order=True)
    if _inexact(element):
        node = _remember(node, element)
    if not p.info.ragged:
        shape = p.values.shape
        for k in range(len(shape) - 1, 0, -1):
            node = ak.contents.RegularArray(node, int(shape[k]), zeros_length=int(np.prod(shape[:k])))
    else:
        for off in reversed(p.offsets[1:]):
            node = ak.contents.ListOffsetArray(ak.index.Index32(np.asarray(off, np.int32)), node)
    return ak.Array(node)


def _element_node(flat: np.ndarray, dtype: str):
    """The awkward node of a 1-d array of elements: numbers zero-copy;
    records as a RecordArray of their fields (copies: xnd interleaves them);
    strings, bytes and categoricals as Awkward reads their Arrow form."""
    if is_numeric(dtype):
        return ak.contents.NumpyArray(flat)
    if dtype.startswith(("{", "(")):
        contents, names = [], []
        for name, text in record_fields(dtype).items():
            dims, leaf = split_dims(text)
            column = np.ascontiguousarray(flat[name])
            node = _element_node(column.reshape(-1), leaf.lstrip("?"))
            if leaf.startswith("?"):        # an optional field: its hidden validity byte
                bits = pack_validity(flat[HIDDEN + name].astype(bool))
                make = ak.contents.BitMaskedArray if is_numeric(leaf) else \
                    ak.contents.BitMaskedArray.simplified
                node = make(ak.index.IndexU8(bits), node, valid_when=True, length=len(flat),
                            lsb_order=True)
            if _inexact(leaf):
                node = _remember(node, leaf)
            for k in range(len(dims) - 1, -1, -1):
                node = ak.contents.RegularArray(node, int(dims[k]),
                                                zeros_length=len(flat) * int(np.prod(dims[:k] or [1])))
            contents.append(node)
            names.append(name)
        return ak.contents.RecordArray(contents, None if dtype.startswith("(") else names,
                                       length=len(flat))
    from .arrow import leaf_to_arrow
    node = ak.from_arrow(leaf_to_arrow(flat, None, dtype), highlevel=False)
    # Arrow arrays are nullable: Awkward wraps them in an option it need not
    return node.content if isinstance(node, ak.contents.UnmaskedArray) else node


# The ndtypes element type, kept as a parameter of the element node where
# Awkward's own form would come back as another type: fixed_string(n) (an
# Awkward string), a categorical (always an option type in Awkward; an NA
# category becomes missing values). ``from_awkward`` restores it.
TYPE_PARAMETER = "xdap_type"


def _inexact(element: str) -> bool:
    """Whether Awkward's form of the ndtypes ``element`` loses what it is."""
    bare = element.lstrip("?")
    return bare.startswith("fixed_string") or is_categorical(bare)


def _remember(node, element: str):
    return node.copy(parameters={**(node.parameters or {}), TYPE_PARAMETER: element})


def _remembered(form):
    """The element type a node kept (``_remember``), or None."""
    while isinstance(form, (ak.forms.ListOffsetForm, ak.forms.ListForm, ak.forms.RegularForm)) \
            and form.parameter("__array__") not in ("string", "bytestring") \
            and form.parameter(TYPE_PARAMETER) is None:
        form = form.content
    return form.parameter(TYPE_PARAMETER)


def _missing_as_na(p: Parts, element: str) -> Parts:
    """``_na_as_missing`` undone: the missing values of a ``?categorical``
    back as the NA category of ``element`` (copies the codes)."""
    items = categories(element)
    na = items.index(None)
    codes = np.asarray(p.values)
    valid = p.valid_mask() if p.validity is not None else np.ones(codes.shape, bool)
    codes = np.where(valid, np.where(codes >= na, codes + 1, codes), na)
    return Parts(p.info.with_leaf(element), codes.astype(p.values.dtype), None, p.offsets)


def _restore(p: Parts, element: str) -> Parts:
    """The Parts read back from Awkward as the element type they were."""
    if is_categorical(element.lstrip("?")) and None in categories(element.lstrip("?")) \
            and not element.startswith("?"):
        return _missing_as_na(p, element)
    from .arrow import apply_type
    return apply_type(p, element)


def _na_as_missing(p: Parts) -> Parts:
    """A categorical with an NA item as ``?categorical`` without it: Awkward
    has missing values, not an NA category (copies the codes)."""
    if not is_categorical(p.info.dtype) or None not in categories(p.info.dtype):
        return p
    items = categories(p.info.dtype)
    na = items.index(None)
    codes = np.asarray(p.values)
    valid = codes != na
    if p.validity is not None:
        valid &= p.valid_mask()
    kept = ", ".join(repr(v) for v in items if v is not None)
    info = p.info.with_leaf(f"?categorical({kept})")
    codes = np.where(valid, np.where(codes > na, codes - 1, codes), 0)
    return Parts(info, codes, pack_validity(valid), p.offsets)


def from_awkward(arr, type=None):
    """An xnd container over an awkward array's buffers (zero-copy where the
    layouts match, see the module docstring). ``type`` as in
    ``xdap.protocols.arrow.from_arrow``.

    >>> import awkward as ak
    >>> from_awkward(ak.Array([[1.5], [], [None, 2.5]])).type
    ndt("var * var * ?float64")
    """
    return container(parts_from_awkward(arr, type))


def parts_from_awkward(arr, type=None) -> Parts:
    """Like ``from_awkward``, but the flat ``Parts``."""
    layout = ak.to_layout(arr, allow_record=False)
    if _has_elements(layout.form):
        # records, strings, categoricals: through Arrow (copies, as Awkward does)
        from .arrow import parts_from_arrow
        element = _remembered(layout.form) if type is None else None
        text = element is not None and element.lstrip("?").startswith("fixed_string")
        p = parts_from_arrow(ak.to_arrow(layout, extensionarray=False,
                                         categorical_as_dictionary=True),
                             element if text else type)
        if _optional_elements(layout.form) and not p.info.optional and type is None:
            # an option type without nulls on this rank has no Arrow bitmap
            p = Parts(p.info.with_leaf("?" + p.info.dtype), p.values,
                      all_valid(p.values.size), p.offsets)
        return _restore(p, element) if element is not None and not text else p
    n = layout.length
    fixed, var = [], []
    node = layout
    while True:
        if isinstance(node, ak.contents.IndexedArray):
            node = node.project()
        elif isinstance(node, ak.contents.RegularArray):
            fixed.append(node.size)
            node = _cut(node.content, 0, node.length * node.size)
        elif isinstance(node, (ak.contents.ListOffsetArray, ak.contents.ListArray)):
            if node.parameter("__array__") in ("string", "bytestring"):
                raise TypeError("awkward strings are not supported (numeric leaves only)")
            if isinstance(node, ak.contents.ListArray):
                node = node.to_ListOffsetArray64(True)          # starts/stops: copies
            off = np.asarray(node.offsets.data)
            lo, hi = int(off[0]), int(off[-1])
            if lo:
                off = off - lo
            if off.dtype != np.int32:
                if hi - lo > np.iinfo(np.int32).max:
                    raise ValueError(f"awkward list has {hi - lo} items, more than int32 "
                                     "offsets can address")
                off = off.astype(np.int32)
            var.append(off)
            node = _cut(node.content, lo, hi)
        else:
            break
        if fixed and var:
            raise TypeError(f"awkward type {layout.form.type} mixes regular and variable "
                            "dims; xdap supports 'N * M * T' or 'var * var * T'")
    values, validity, spelled = _leaf(node, layout)
    if values.ndim > 1:                        # a NumpyArray with an inner shape
        if var:
            raise TypeError(f"awkward type {layout.form.type} mixes variable and regular dims")
        fixed += list(values.shape[1:])
        values = values.reshape(-1)
    dtype = spelled or dtype_from_numpy(values.dtype)
    optional = validity is not None
    if var:
        info = TypeInfo.of_ragged(len(var) + 1, dtype, optional)
        p = Parts(info, values, validity, (np.array([0, n], np.int32),) + tuple(var))
    else:
        shape = (n,) + tuple(fixed)
        p = Parts(TypeInfo.fixed(shape, dtype, optional), values.reshape(shape), validity)
    if type is not None:
        from .arrow import apply_type
        p = apply_type(p, type)
    return p


def _has_elements(form) -> bool:
    """Whether an awkward form holds records, strings or categoricals."""
    if isinstance(form, ak.forms.RecordForm):
        return False                    # its fields are read one by one (_records)
    if form.parameter("__array__") in ("string", "bytestring", "categorical"):
        return True
    content = getattr(form, "content", None)
    return content is not None and _has_elements(content)


def _optional_elements(form) -> bool:
    """Whether the elements (below every list level) are of an option type."""
    option = (ak.forms.IndexedOptionForm, ak.forms.ByteMaskedForm, ak.forms.BitMaskedForm,
              ak.forms.UnmaskedForm)
    while True:
        if isinstance(form, option):
            return True
        if form.parameter("__array__") in ("string", "bytestring"):
            return False
        if isinstance(form, (ak.forms.ListOffsetForm, ak.forms.ListForm, ak.forms.RegularForm,
                             ak.forms.IndexedForm)):
            form = form.content
        else:
            return False


def _cut(node, lo: int, hi: int):
    """node[lo:hi], but the node itself when that is all of it: slicing an
    option node makes awkward rebuild it (a copy of the mask)."""
    return node if lo == 0 and hi == node.length else node[lo:hi]


def _leaf(node, layout):
    """(numpy values, validity bitmap or None, the element's ndtypes
    spelling when NumPy's dtype does not say it -- a tuple -- else None)."""
    if isinstance(node, ak.contents.BitMaskedArray) and node.valid_when and node.lsb_order:
        values, _, spelled = _leaf(node.content[: node.length], layout)
        bits = np.asarray(node.mask.data)[: (node.length + 7) // 8]
        return values, bits, spelled
    if isinstance(node, (ak.contents.BitMaskedArray, ak.contents.ByteMaskedArray,
                         ak.contents.IndexedOptionArray, ak.contents.UnmaskedArray)):
        valid = ~np.asarray(node.mask_as_bool(valid_when=False)) \
            if not isinstance(node, ak.contents.UnmaskedArray) else np.ones(node.length, bool)
        inner = node.project() if not isinstance(node, ak.contents.UnmaskedArray) else node.content
        values, _, spelled = _leaf(inner, layout)
        if not isinstance(node, ak.contents.UnmaskedArray):   # re-expand: nulls get a 0 slot
            full = np.zeros((node.length,) + values.shape[1:], values.dtype)
            full[valid] = values
            values = full
        return values, pack_validity(valid), spelled
    if isinstance(node, ak.contents.EmptyArray):
        return np.zeros(0, np.float64), None, None
    if isinstance(node, ak.contents.RecordArray):
        values, spelled = _records(node)
        return values, None, spelled
    if isinstance(node, ak.contents.NumpyArray):
        if node.parameter("__array__") in ("char", "byte"):
            raise TypeError("awkward strings are not supported (numeric leaves only)")
        return np.asarray(node.data), None, None
    if isinstance(node, (ak.contents.ListOffsetArray, ak.contents.ListArray,
                         ak.contents.RegularArray)):
        raise TypeError(f"awkward type {layout.form.type}: option types above a list level "
                        "(null lists) are not supported; xnd has optional values only")
    raise TypeError(f"awkward layout {type(node).__name__} ({layout.form.type}) is not "
                    "supported: numeric leaves, regular/var lists and option leaves only")


def _records(node):
    """A RecordArray's fields interleaved into NumPy records (a copy), and
    the records' ndtypes type."""
    names = node.fields if not node.is_tuple else [f"f{i}" for i in range(len(node.contents))]
    columns, spelled = [], []
    for name, content in zip(names, node.contents):
        p = parts_from_awkward(ak.Array(content[: node.length]))
        if p.info.ragged:
            raise TypeError(f"record field {name!r} is ragged ({p.info.type_string()}): record "
                            "fields have fixed sizes (make the list the outer dimension)")
        if p.info.optional and p.values.ndim > 1:
            raise TypeError(f"record field {name!r} has missing items inside its fixed "
                            "dimension: optional items inside a fixed dimension of a record "
                            "are not supported; fill them")
        columns.append((p.values, p.valid_mask()))
        spelled.append(" * ".join([str(s) for s in p.values.shape[1:]] + [p.info.leaf]))
    text = ("(" + ", ".join(spelled) + ")" if node.is_tuple else
            "{" + ", ".join(f"{k} : {v}" for k, v in zip(names, spelled)) + "}")
    out = np.zeros(node.length, numpy_dtype(text))
    for k, (col, valid) in zip(out.dtype.names, columns):
        out[k] = col
        if valid is not None:
            out[HIDDEN + k] = valid
    return out, str(ndt(text))


def stack_awkward(arr, comm=None, type=None) -> tuple:
    """``(Distribution, Parts)`` of every rank's awkward array, rows stacked
    in rank order (collective; see ``xdap.protocols.arrow.stack_arrow``).

    >>> import awkward as ak
    >>> from mpi4py import MPI
    >>> stack_awkward(ak.Array([[1, 2], [3]]), comm=MPI.COMM_SELF)[0].global_shape
    (2,)
    """
    from .arrow import stack_rows
    comm = _comm.resolve(comm)
    p = None
    with agreement(comm):
        p = parts_from_awkward(arr, type)
    return stack_rows(p, comm)
