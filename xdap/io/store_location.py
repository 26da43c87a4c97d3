"""Where a store is, and what it says it is: the path every rank agrees
on, the ``xdap`` attribute of its Zarr group (read, not yet checked), and
the staging directories a save leaves beside it.  Used by ``save``,
``load`` and ``xdap show`` alike.

>>> import tempfile
>>> read_store_attrs(tempfile.mkdtemp()) is None        # no zarr.json: not a store
True
"""
from __future__ import annotations

import errno
import os
import re
import stat

from ..agreement import agreement
from . import store_format as sf
from .files import as_path, resolves_inside

__all__ = ["agreed_path", "read_store_attrs", "staging_names", "STAGING"]

# a save writes ".NAME.xdap-saving-GENERATION-TOKEN" beside NAME and swaps it
# in; a replaced store is set aside as ".NAME.xdap-replaced-..." until deleted
STAGING = re.compile(r"^\.(?P<name>.+)\.xdap-(saving|replaced)-\d{6}-[0-9a-f]{16}$")


def agreed_path(comm, path, what: str) -> str:
    """``path`` as a str, the same on every rank (collective; the same error
    everywhere otherwise). The check runs outside the gather, so a bad path
    on one rank cannot leave it in a different collective than the others."""
    with agreement(comm, share=True) as ag:
        path = as_path(path)
        ag.share(path)
    paths = ag.shared
    if any(q != paths[0] for q in paths):
        raise ValueError(f"{what}: ranks passed different paths: {paths}")
    return path


def staging_names(path: str) -> list:
    """Staging and set-aside directories of saves to ``path`` that did not
    finish (newest generation last)."""
    parent, base = os.path.split(os.path.abspath(path))
    try:
        names = os.listdir(parent)
    except OSError:
        return []
    return sorted(n for n in names if (m := STAGING.match(n)) and m["name"] == base)


def read_store_attrs(path: str):
    """The ``xdap`` attribute of the Zarr group at ``path``, unchecked; None
    when ``path`` holds no Zarr group metadata. ValueError when it does but
    is not an xdap store."""
    import json
    name = os.path.join(path, "zarr.json")
    if not os.path.lexists(name):
        return None
    try:
        with open_regular(name) as f:
            meta = json.loads(f.read(MAX_METADATA_BYTES + 1))
    except RecursionError:
        raise ValueError(f"{path!r}: zarr.json nests deeper than a JSON reader follows "
                         "(not metadata xdap wrote)") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"{path!r}: zarr.json is not valid JSON ({e})") from None
    attrs = meta.get("attributes", {}) if isinstance(meta, dict) else None
    if not isinstance(meta, dict) or meta.get("node_type") != "group" or \
            not isinstance(attrs, dict) or sf.ATTRIBUTE not in attrs:
        raise ValueError(f"{path!r} is a Zarr node but not an xdap store (no "
                         f"'{sf.ATTRIBUTE}' attribute on a group)")
    if meta.get("zarr_format") != 3:
        raise ValueError(f"{path!r}: its group's zarr_format is {meta.get('zarr_format')!r}; "
                         "xdap stores are Zarr v3 (zarr_format 3)")
    return attrs[sf.ATTRIBUTE]


# The largest metadata file read (a store's zarr.json holds a type, a
# distribution and a few digests: kilobytes; a map's indices are an array)
MAX_METADATA_BYTES = 16 << 20


def open_regular(name: str, store: str | None = None):
    """``name`` opened for reading when it is a regular file -- not a
    symbolic link, a named pipe (whose ``open`` would block) or a device --
    and, given ``store``, inside it once every link of its directories is
    resolved. A store is untrusted input: nothing outside it is read."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise ValueError(f"{name!r} is a symbolic link; an xdap store holds regular files "
                             "only (nothing outside it is read)") from None
        raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValueError(f"{name!r} is not a regular file (a pipe, a device, a directory?); "
                             "an xdap store holds regular files only")
        if store is not None and not resolves_inside(os.path.dirname(name), store):
            raise ValueError(f"{name!r} lies outside the store {store!r} once its "
                             "directories' links are followed (nothing outside it is read)")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
