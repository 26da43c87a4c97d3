"""The small patches the build applies to the pinned xnd stack's sources.

    python tools/patch_stack.py PACKAGE SOURCE_DIR

``tools/build_stack.sh`` runs it on each unpacked sdist before building its
wheel. Each patch replaces one exact piece of text and fails the build when
that text is not there (another version of the package), so a patch never
applies half-way or to code it was not written for.

ndtypes 0.2.0dev3
    ``ndt_var_dim`` refuses a var dimension with fewer than two offsets, so
    a ragged container with no rows -- ``var * var * T`` whose inner level
    has the offsets ``[0]`` -- cannot exist, and a rank with no rows of
    ragged data (an empty partition: a partitioner's, a migration's) had to
    be refused. One offset is the empty dimension: its last offset is 0,
    and nothing else in ndtypes or xnd reads past ``offsets[noffsets - 1]``.
    The patch accepts ``noffsets >= 1``; ``tests/test_empty_ragged.py``
    checks the containers this makes, through xnd, gumath and xdap.

    Its PEP 3118 export (the format of an xnd container's buffer) spells
    complex numbers ``D`` / ``F`` -- struct-module letters NumPy refuses
    ("'=D' is not a valid PEP 3118 buffer format string") -- and writes a
    record field's padding between its type and its name (``T{=bxxxxxxx:a:
    =d:b:}``), which NumPy reads as an extra field. The patches write
    ``Zd`` / ``Zf`` (PEP 3118's complex) and put the padding after the name,
    before the next field (``T{=b:a:xxxxxxx=d:b:}``, NumPy's own order), so
    ``np.asarray`` of a container is a view of the right dtype;
    ``tests/test_types_containers.py`` checks both. (ndtypes' own importer
    keeps reading ``D``/``F``; xdap reads NumPy arrays through its own
    buffers, never through that importer.)

xnd 0.2.0dev3
    Later xnd releases give a container its element type as ``x.dtype``
    (``xnd([1, 2]).dtype == ndt("int64")``); xndtools' kernel-generator
    tests -- the reference for the ``.cfg`` semantics ``xdap kernel build``
    follows -- compare results by it. The patch adds the property (the
    type's ``hidden_dtype``, which dev3 already computes). dev3's ``==``
    on containers is identity (``xnd(6) == xnd(6)`` is False); later
    releases compare values, and xndtools' tests do: the patch compares
    element type and values, whatever the layout (containers stay
    unhashable, as in dev3).
    ``tests/test_codegen_xndtools.py`` checks both.

    ``xnd_init`` (every new container: ``xnd.empty``, each gumath output)
    walks every element of a fixed dimension to find ``Ref`` subtypes to
    allocate, though the memory comes from ``calloc`` and plain elements
    need nothing (its own comments: "already initialized by calloc()"):
    ~9 ns an element, 7 ms for a 100,000 x 8 float64 output -- half the
    time of a generated kernel's call. The patch returns at once when
    every leaf under the dimension is such an element;
    ``tests/test_types_containers.py`` checks new containers of every
    kind are still zero and usable.

    ``xnd_clear`` (every container freed) walks every element the same
    way to find pointers to free, with an ``ndt_is_concrete`` assertion a
    visit: 33 ns an element, 3.3 ms of a 100,000 x 8 x 8 mat-vec kernel's
    8 ms. The patch returns at once when no leaf under the dimension owns
    memory (numbers, fixed strings and bytes, categories; not ``string``,
    ``bytes`` or ``ref``); ``tests/test_types_containers.py`` checks that
    strings and bytes under fixed and var dims are still freed (no leak),
    ``benchmarks/user_kernels.py`` the time.
"""
from __future__ import annotations

import pathlib
import sys

PATCHES = {
    "ndtypes": [
        ("libndtypes/ndtypes.c",
         '    if (noffsets < 2) {\n'
         '        ndt_err_format(ctx, NDT_InvalidArgumentError, "var_dim: noffsets < 2");',
         '    if (noffsets < 1) {      /* xdap: one offset is an empty var dimension */\n'
         '        ndt_err_format(ctx, NDT_InvalidArgumentError, "var_dim: noffsets < 1");'),
        ("libndtypes/compat/export.c",
         '        case Complex64: return primitive(buf, t, "F", ctx);\n'
         '        case Complex128: return primitive(buf, t, "D", ctx);',
         '        case Complex64: return primitive(buf, t, "Zf", ctx);    /* xdap: PEP 3118 */\n'
         '        case Complex128: return primitive(buf, t, "Zd", ctx);'),
        ("libndtypes/compat/export.c",
         '        n = format(buf, t->Record.types[i], ctx);\n'
         '        if (n < 0) return -1;\n'
         '\n'
         '        for (uint16_t k = 0; k < t->Concrete.Record.pad[i]; k++) {\n'
         '            n = ndt_snprintf(ctx, buf, "x");\n'
         '            if (n < 0) return -1;\n'
         '        }\n'
         '\n'
         '        n = ndt_snprintf(ctx, buf, ":%s:", t->Record.names[i]);\n'
         '        if (n < 0) return -1;\n',
         '        n = format(buf, t->Record.types[i], ctx);\n'
         '        if (n < 0) return -1;\n'
         '\n'
         '        /* xdap: the name, then the padding before the next field */\n'
         '        n = ndt_snprintf(ctx, buf, ":%s:", t->Record.names[i]);\n'
         '        if (n < 0) return -1;\n'
         '\n'
         '        for (uint16_t k = 0; k < t->Concrete.Record.pad[i]; k++) {\n'
         '            n = ndt_snprintf(ctx, buf, "x");\n'
         '            if (n < 0) return -1;\n'
         '        }\n'),
    ],
    "xnd": [
        ("python/xnd/__init__.py",
         '        return super().__new__(cls, type=type, value=value)\n',
         '        return super().__new__(cls, type=type, value=value)\n'
         '\n'
         '    @property\n'
         '    def dtype(self):\n'
         '        """The element type (xdap: as in later xnd releases)."""\n'
         '        return self.type.hidden_dtype\n'
         '\n'
         '    def __eq__(self, other):\n'
         '        """Same element type and values, whatever the layout (xdap)."""\n'
         '        if not isinstance(other, Xnd):\n'
         '            return NotImplemented\n'
         '        return self.dtype == other.dtype and self.value == other.value\n'),
        ("libxnd/xnd.c",
         'static int\n'
         'xnd_init(xnd_t * const x, const uint32_t flags, ndt_context_t *ctx)\n'
         '{\n',
         '/* xdap: true when every leaf under t\'s dimensions is initialized by\n'
         '   calloc() alone (no Ref to allocate): xnd_init need not visit them. */\n'
         'static int\n'
         'xdap_calloc_leaves(const ndt_t *t)\n'
         '{\n'
         '    while (t->tag == FixedDim || t->tag == VarDim) {\n'
         '        t = t->tag == FixedDim ? t->FixedDim.type : t->VarDim.type;\n'
         '    }\n'
         '    switch (t->tag) {\n'
         '    case Bool:\n'
         '    case Int8: case Int16: case Int32: case Int64:\n'
         '    case Uint8: case Uint16: case Uint32: case Uint64:\n'
         '    case Float16: case Float32: case Float64:\n'
         '    case Complex32: case Complex64: case Complex128:\n'
         '    case FixedString: case FixedBytes: case String: case Bytes:\n'
         '    case Categorical:\n'
         '        return 1;\n'
         '    default:\n'
         '        return 0;\n'
         '    }\n'
         '}\n'
         '\n'
         'static int\n'
         'xnd_init(xnd_t * const x, const uint32_t flags, ndt_context_t *ctx)\n'
         '{\n'),
        ("libxnd/xnd.c",
         '        for (i = 0; i < t->FixedDim.shape; i++) {\n'
         '            xnd_t next = _fixed_dim_next(x, i);\n'
         '            if (xnd_init(&next, flags, ctx) < 0) {',
         '        if (xdap_calloc_leaves(t)) {    /* xdap: nothing to visit */\n'
         '            return 0;\n'
         '        }\n'
         '        for (i = 0; i < t->FixedDim.shape; i++) {\n'
         '            xnd_t next = _fixed_dim_next(x, i);\n'
         '            if (xnd_init(&next, flags, ctx) < 0) {'),
        ("libxnd/xnd.c",
         '/* Clear embedded pointers in the data according to flags. */\n'
         'static void\n'
         'xnd_clear(xnd_t * const x, const uint32_t flags)\n'
         '{\n'
         '    NDT_STATIC_CONTEXT(ctx);\n'
         '    const ndt_t * const t = x->type;\n',
         '/* xdap: true when no leaf under t\'s dimensions owns memory (no string,\n'
         '   bytes or ref to free): xnd_clear need not visit them. */\n'
         'static int\n'
         'xdap_plain_leaves(const ndt_t *t)\n'
         '{\n'
         '    while (t->tag == FixedDim || t->tag == VarDim) {\n'
         '        t = t->tag == FixedDim ? t->FixedDim.type : t->VarDim.type;\n'
         '    }\n'
         '    return t->tag != String && t->tag != Bytes && xdap_calloc_leaves(t);\n'
         '}\n'
         '\n'
         '/* Clear embedded pointers in the data according to flags. */\n'
         'static void\n'
         'xnd_clear(xnd_t * const x, const uint32_t flags)\n'
         '{\n'
         '    NDT_STATIC_CONTEXT(ctx);\n'
         '    const ndt_t * const t = x->type;\n'
         '\n'
         '    if ((t->tag == FixedDim || t->tag == VarDim) && xdap_plain_leaves(t)) {\n'
         '        return;     /* xdap: nothing to free under these dims */\n'
         '    }\n'),
    ],
}


# Names to replace everywhere in one file: (path, old, new, how many times).
# The count pins the version the same way an exact text does.
RENAMES = {
    "xnd": [
        # Python 3.11 made the float packers public (PEP 3118's half, single
        # and double floats) and removed the underscored names, which then
        # compile as implicit declarations and fail at import.
        ("python/xnd/_xnd.c", "_PyFloat_Pack", "PyFloat_Pack", 9),
        ("python/xnd/_xnd.c", "_PyFloat_Unpack", "PyFloat_Unpack", 9),
    ],
    "ndtypes": [
        # Its setup.py runs the C library's Makefile, which compiles
        # compat/export.c once per target and loses a symbol when it races
        # under an inherited `make -jN` (MAKEFLAGS): build it serially.
        ("setup.py", '"./configure && make"', '"./configure && make -j1"', 1),
        ("setup.py", '"./configure --with-valgrind && make"',
         '"./configure --with-valgrind && make -j1"', 1),
    ],
}


def apply(package: str, source: pathlib.Path) -> int:
    for path, old, new in PATCHES.get(package, []):
        f = source / path
        text = f.read_text()
        if text.count(old) != 1:
            raise SystemExit(f"patch_stack: {package}: the text to patch in {path} is not there "
                             "exactly once (another version?)")
        f.write_text(text.replace(old, new))
        print(f"patch_stack: {package}: patched {path}")
    for path, old, new, count in RENAMES.get(package, []):
        f = source / path
        text = f.read_text()
        if text.count(old) != count:
            raise SystemExit(f"patch_stack: {package}: '{old}' is in {path} {text.count(old)} "
                             f"times, not {count} (another version?)")
        f.write_text(text.replace(old, new))
        print(f"patch_stack: {package}: {old} -> {new} in {path}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit(__doc__.split("\n\n")[1])
    sys.exit(apply(sys.argv[1], pathlib.Path(sys.argv[2])))
