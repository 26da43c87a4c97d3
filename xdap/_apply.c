/*
 * xdap._apply -- the fast path for elementwise gumath kernels.
 *
 * gumath's own call path (the gufunc object) types the whole container,
 * allocates a zeroed output through the generic xnd allocator and walks the
 * dimensions for every call.  For elementwise kernels (every argument of the
 * signature is `... * T`) all of that can be done once: the kernel is
 * selected per tuple of leaf dtypes (cached), the leaves of fixed, ragged
 * and optional containers are one flat array, and the Strided loop of the
 * selected kernel runs over them directly.
 *
 *   Func(source, name=None)
 *       source: a gumath gufunc object (e.g. a generated module's function)
 *       or a PyCapsule "xdap.gm_tbl_t" plus the function name.
 *
 *   Func(*args, out=None) -> xnd
 *       args: xnd containers of one common layout (same fixed shape, or the
 *       same var offsets) or 0-d xnd scalars (broadcast).  The result has
 *       that layout with the kernel's output dtype; it is optional (`?T`)
 *       when any argument is, with validity = AND of the arguments' bitmaps
 *       (the kernel runs on every leaf, NA or not, so the loop stays
 *       branch-free).  A large ragged result of the operand's leaf dtype
 *       shares the operand's type object (no offsets copied); otherwise var
 *       offsets are copied into the result's type (4 bytes a list); values
 *       are never copied.  `out` (an xnd of the result
 *       layout and dtype) is written in place and returned; an input sharing
 *       memory with it other than element for element is copied first
 *       (NumPy's semantics), and its validity is combined through scratch.
 *
 *   Outputs: small ones are owned by xnd (one allocation, no Python call);
 *   large ones by a Buffer the container views (see new_buffer_xnd).
 *
 *   scalar_result / unary_result / array_result(func, ...) -> DistArray
 *       The operators' and the standard functions' fast paths: the selected
 *       kernel's loop over the operands' memory into a new NumPy array --
 *       the result's values; no xnd container is made for it (see "The fast
 *       paths' operands and results" below).
 *
 *   Exceptions that tell the Python layer to take another route:
 *       NoKernel (TypeError)        no kernel for these dtypes
 *       NotElementwise (TypeError)  a kernel exists but is not `... * T`
 *       NeedsCopy (ValueError)      a view that is neither contiguous nor one
 *                                   strided run (or an optional view): copy it
 *
 * Private details of the pinned 0.2.0.dev3 stack mirrored here (and nowhere
 * else in xdap): gumath's gufunc object layout {tbl, name}, xnd's memory
 * block layout (read-only imports), and that xnd frees data with
 * ndt_aligned_free, which reads the raw pointer stored just below the
 * aligned one and hands it to free().
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "ndtypes.h"
#include "pyndtypes.h"
#include "xnd.h"
#include "pyxnd.h"
#include "gumath.h"
#include "_xndmirror.h"
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>

/* ------------------------------------------------------------------------ */
/* Mirrors of private layouts (0.2.0.dev3)                                   */
/* ------------------------------------------------------------------------ */

typedef struct {
    PyObject_HEAD
    const gm_tbl_t *tbl;
    char *name;
} MirrorGufunc;

/* MirrorMemoryBlock, MirrorXnd: see _xndmirror.h (shared with _xndbuf). */

static PyObject *NoKernel, *NotElementwise, *NeedsCopy;

#define MAX_IN 8
#define MAX_OUT 4
#define MAX_CACHE 32
#define GIL_RELEASE_N 16384

/* ------------------------------------------------------------------------ */
/* Operand layout                                                            */
/* ------------------------------------------------------------------------ */

enum kind { SCALAR, FIXED, VAR };

typedef struct {
    enum kind kind;
    int ndim;
    int64_t n;                 /* leaves */
    char *ptr;                 /* first leaf */
    intptr_t step;             /* bytes from one leaf to the next (0: scalar) */
    const ndt_t *type;         /* the whole container's type */
    const ndt_t *leaf;         /* leaf type (maybe optional) */
    const uint8_t *bitmap;     /* validity of the leaves, or NULL */
    int optional;
} operand_t;

/* Describe x as a flat array of leaves; NeedsCopy for views we cannot flatten. */
static int
describe(PyObject *x, operand_t *op)
{
    if (!Xnd_Check(x)) {
        PyErr_Format(PyExc_TypeError, "kernel arguments must be xnd containers, got %s",
                     Py_TYPE(x)->tp_name);
        return -1;
    }
    const xnd_t *xv = CONST_XND(x);
    const ndt_t *t = xv->type;
    op->type = t;
    op->ndim = t->ndim;
    if (t->ndim == 0) {
        op->kind = SCALAR;
        op->n = 1;
        op->leaf = t;
        op->optional = ndt_is_optional(t);
        if (op->optional && xv->bitmap.data == NULL) {
            PyErr_SetString(PyExc_ValueError, "optional scalar without a bitmap");
            return -1;
        }
        if (op->optional && xv->index != 0) {
            PyErr_SetString(NeedsCopy, "optional scalar view");
            return -1;
        }
        op->ptr = xv->ptr + xv->index * t->datasize;
        op->step = 0;
        op->bitmap = op->optional ? xv->bitmap.data : NULL;
        return 0;
    }
    if (t->tag == VarDim) {
        const ndt_t *u = t;
        int64_t lists = 1;
        if (xv->index != 0) {
            PyErr_SetString(NeedsCopy, "a view into a ragged container");
            return -1;
        }
        while (u->ndim > 0) {
            if (u->tag != VarDim || u->Concrete.VarDim.nslices != 0) {
                PyErr_SetString(NeedsCopy, "sliced or mixed var dimensions");
                return -1;
            }
            const int32_t *off = u->Concrete.VarDim.offsets;
            if (u->Concrete.VarDim.noffsets != lists + 1 || off[0] != 0) {
                PyErr_SetString(NeedsCopy, "a view into a ragged container");
                return -1;
            }
            lists = off[lists];
            u = u->VarDim.type;
        }
        op->kind = VAR;
        op->n = lists;
        op->leaf = u;
        op->ptr = xv->ptr;
        op->step = (intptr_t)u->datasize;
    }
    else {
        const ndt_t *u = t;
        int64_t n = 1;
        int contiguous = 1;
        while (u->ndim > 0) {
            if (u->tag != FixedDim) {
                PyErr_SetString(PyExc_TypeError, "kernel arguments need fixed or var dimensions");
                return -1;
            }
            n *= u->FixedDim.shape;
            u = u->FixedDim.type;
        }
        /* C-contiguous: each step is the product of the inner shapes. */
        int64_t expect = 1;
        const ndt_t *dims[NDT_MAX_DIM];
        int k = 0;
        for (const ndt_t *v = t; v->ndim > 0; v = v->FixedDim.type) {
            dims[k++] = v;
        }
        int runs = 0;                   /* dims with more than one item */
        int64_t run_step = 1;
        for (int i = k - 1; i >= 0; i--) {
            if (dims[i]->FixedDim.shape > 1) {
                runs++;
                run_step = dims[i]->Concrete.FixedDim.step;
                if (run_step != expect) {
                    contiguous = 0;
                }
            }
            expect *= dims[i]->FixedDim.shape;
        }
        /* One strided run (e.g. x[::2], x[::-1], a column) is what a Strided
           loop takes as is; a non-optional one needs no copy. */
        if (!contiguous && (runs > 1 || ndt_is_optional(u))) {
            PyErr_SetString(NeedsCopy, "a non-contiguous view");
            return -1;
        }
        op->kind = FIXED;
        op->n = n;
        op->leaf = u;
        op->ptr = xv->ptr + xv->index * u->datasize;
        op->step = (intptr_t)((contiguous ? 1 : run_step) * u->datasize);
        if (ndt_is_optional(u) && xv->index != 0) {
            PyErr_SetString(NeedsCopy, "a view into an optional container");
            return -1;
        }
    }
    op->optional = ndt_is_optional(op->leaf);
    op->bitmap = NULL;
    if (op->optional) {
        if (xv->bitmap.data == NULL && op->n > 0) {
            PyErr_SetString(PyExc_ValueError, "optional container without a bitmap");
            return -1;
        }
        op->bitmap = xv->bitmap.data;
    }
    return 0;
}

/* Same dims (fixed shapes or var offsets)?  Writes what differs into msg. */
static int
same_dims(const operand_t *a, const operand_t *b, char *msg, size_t len)
{
    if (a->kind != b->kind || a->ndim != b->ndim) {
        snprintf(msg, len, "operands differ in dimensions: %s with %d dims vs %s with %d dims",
                 a->kind == VAR ? "ragged" : "fixed", a->ndim,
                 b->kind == VAR ? "ragged" : "fixed", b->ndim);
        return 0;
    }
    const ndt_t *u = a->type, *v = b->type;
    for (int d = 0; d < a->ndim; d++) {
        if (a->kind == FIXED) {
            if (u->FixedDim.shape != v->FixedDim.shape) {
                snprintf(msg, len, "operands differ in shape: dimension %d has %lld vs %lld items",
                         d, (long long)u->FixedDim.shape, (long long)v->FixedDim.shape);
                return 0;
            }
            u = u->FixedDim.type;
            v = v->FixedDim.type;
        }
        else {
            int32_t n = u->Concrete.VarDim.noffsets;
            if (n != v->Concrete.VarDim.noffsets ||
                (u->Concrete.VarDim.offsets != v->Concrete.VarDim.offsets &&
                 memcmp(u->Concrete.VarDim.offsets, v->Concrete.VarDim.offsets,
                        (size_t)n * sizeof(int32_t)) != 0)) {
                snprintf(msg, len, "operands differ in list lengths at var dimension %d", d);
                return 0;
            }
            u = u->VarDim.type;
            v = v->VarDim.type;
        }
    }
    return 1;
}

/* ------------------------------------------------------------------------ */
/* Memory: uninitialised, aligned, freed by xnd (see the header comment)     */
/* ------------------------------------------------------------------------ */

#define DATA_ALIGN 64

static char *
alloc_data(int64_t size)
{
    if (size <= 0) {
        size = 1;
    }
    size_t req = (size_t)size + DATA_ALIGN + sizeof(uintptr_t);
    char *raw = ndt_alloc_size(req);
    if (raw == NULL) {
        return NULL;
    }
    uintptr_t aligned = ((uintptr_t)raw + sizeof(uintptr_t) + DATA_ALIGN - 1)
                        & ~(uintptr_t)(DATA_ALIGN - 1);
    ((uintptr_t *)aligned)[-1] = (uintptr_t)raw;
    return (char *)aligned;
}

/* Large outputs must not be owned by xnd itself: xnd frees owned data with
   xnd_clear, which visits every element (O(n), as slow as the kernel).  A
   Buffer owns them instead and the xnd container is a view of it, made with
   xnd.from_buffer (the route NumPy arrays take into xnd). */
#define BUFFER_MIN_BYTES (1 << 16)

typedef struct {
    PyObject_HEAD
    char *raw;            /* what to free */
    char *data;           /* the data's start */
    Py_ssize_t len;
    uint8_t *bitmap;      /* validity, or NULL */
    PyObject *handler;    /* NumPy's memory handler that allocated raw */
} BufferObject;

/* NumPy's memory handler (NEP 49): its allocator struct, from the capsule. */
static PyDataMem_Handler *
numpy_handler(PyObject *capsule)
{
    return capsule == NULL ? NULL :
        (PyDataMem_Handler *)PyCapsule_GetPointer(capsule, "mem_handler");
}

static void
buffer_dealloc(BufferObject *self)
{
    PyDataMem_Handler *h = numpy_handler(self->handler);
    if (self->raw != NULL && h != NULL) {
        h->allocator.free(h->allocator.ctx, self->raw,
                          (size_t)(self->len > 0 ? self->len : 1));
    }
    Py_XDECREF(self->handler);
    free(self->bitmap);
    PyObject_Free(self);
}

static int
buffer_getbuf(BufferObject *self, Py_buffer *view, int flags)
{
    return PyBuffer_FillInfo(view, (PyObject *)self, self->data, self->len, 0, flags);
}

static PyBufferProcs buffer_as_buffer = {
    .bf_getbuffer = (getbufferproc)buffer_getbuf,
    .bf_releasebuffer = NULL,
};

static PyTypeObject Buffer_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "xdap._apply.Buffer",
    .tp_basicsize = sizeof(BufferObject),
    .tp_dealloc = (destructor)buffer_dealloc,
    .tp_as_buffer = &buffer_as_buffer,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Uninitialised memory behind a large kernel output.",
};

static PyObject *xnd_type_object = NULL;   /* xnd.xnd */

/* An xnd container of type t (stolen) over fresh uninitialised memory. */
static PyObject *
new_buffer_xnd(ndt_t *t, int64_t nbytes, int64_t n, int optional)
{
    BufferObject *b = PyObject_New(BufferObject, &Buffer_Type);
    if (b == NULL) {
        ndt_del(t);
        return NULL;
    }
    /* NumPy's own allocator (its handler: malloc, huge pages from 4 MiB), and
       exactly NumPy's size: a result of xdap's kernels and a NumPy array of
       the same shape reuse each other's freed blocks -- with an allocation a
       few bytes larger, glibc could not, and a loop mixing both page-faulted
       on fresh memory every step (measured: 1.7x the faults of NumPy alone). */
    b->raw = NULL;
    b->len = (Py_ssize_t)nbytes;
    b->handler = PyDataMem_GetHandler();
    b->bitmap = optional ? malloc((size_t)((n + 7) / 8 + 1)) : NULL;
    PyDataMem_Handler *h = numpy_handler(b->handler);
    if (h != NULL) {
        b->raw = h->allocator.malloc(h->allocator.ctx, (size_t)(nbytes > 0 ? nbytes : 1));
    }
    else {
        PyErr_Clear();
    }
    if (b->raw == NULL || (optional && b->bitmap == NULL)) {
        Py_DECREF(b);
        ndt_del(t);
        return PyErr_NoMemory();
    }
    b->data = b->raw;
    PyObject *x = xdap_view_over(xnd_type_object, (PyObject *)b, t, b->bitmap);  /* steals t */
    Py_DECREF(b);
    return x;
}

/* The type object of `arg` (the operand `like` describes) when a result of
   leaf `tag` (optional or not) can share it: a ragged operand whose leaf is
   the result's leaf.  Building the result's own type would copy every var
   level's offsets (4 bytes a list, O(rows)); ndtypes types are immutable and
   the Python type object is refcounted, so the result refers to the same
   one.  Fixed types are not shared: building them is O(ndim). */
static PyObject *
shareable_type(PyObject *arg, const operand_t *like, enum ndt tag, int optional)
{
    if (like == NULL || like->kind != VAR || like->leaf->tag != tag ||
        ndt_is_optional(like->leaf) != optional) {
        return NULL;
    }
    PyObject *type = ((MirrorXnd *)arg)->type;
    if (type == NULL || !Ndt_Check(type) || CONST_NDT(type) != like->type) {
        return NULL;
    }
    return type;
}

/* new_buffer_xnd with the result's type shared with an operand (see
   shareable_type): the view is made with a placeholder type, which is then
   replaced by `type` (borrowed; a reference is taken). */
static PyObject *
new_buffer_xnd_shared(PyObject *type, int64_t nbytes, int64_t n, int optional)
{
    NDT_STATIC_CONTEXT(ctx);
    ndt_t *placeholder = ndt_primitive(Uint8, 0, &ctx);
    if (placeholder == NULL) {
        return Ndt_SetError(&ctx);
    }
    PyObject *x = new_buffer_xnd(placeholder, nbytes, n, optional);
    if (x == NULL) {
        return NULL;
    }
    MirrorXnd *mx = (MirrorXnd *)x;
    Py_INCREF(type);
    Py_SETREF(mx->type, type);
    mx->xnd.type = CONST_NDT(type);
    return x;
}

/* ------------------------------------------------------------------------ */
/* Func: a multimethod with a per-dtype cache of selected kernels            */
/* ------------------------------------------------------------------------ */

typedef struct {
    int nin;
    enum ndt tags[MAX_IN];
    int status;                     /* 0 ok, 1 no kernel, 2 not elementwise */
    gm_strided_kernel_t strided;
    int nout;
    enum ndt out_tags[MAX_OUT];
    int64_t out_size[MAX_OUT];
} entry_t;

typedef struct {
    PyObject_HEAD
    PyObject *source;               /* keeps the gufunc / capsule alive */
    const gm_tbl_t *tbl;
    char *name;
    int ncache;
    entry_t cache[MAX_CACHE];
} FuncObject;

static PyTypeObject Func_Type;

static PyObject *
func_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"source", "name", NULL};
    PyObject *source;
    const char *name = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|z", kwlist, &source, &name)) {
        return NULL;
    }
    const gm_tbl_t *tbl;
    if (PyCapsule_CheckExact(source)) {
        tbl = PyCapsule_GetPointer(source, "xdap.gm_tbl_t");
        if (tbl == NULL) {
            return NULL;
        }
        if (name == NULL) {
            PyErr_SetString(PyExc_TypeError, "Func(table_capsule, name): name is required");
            return NULL;
        }
    }
    else if (strcmp(Py_TYPE(source)->tp_name, "_gumath.gufunc") == 0) {
        MirrorGufunc *g = (MirrorGufunc *)source;
        tbl = g->tbl;
        if (name == NULL) {
            name = g->name;
        }
    }
    else {
        PyErr_Format(PyExc_TypeError,
            "Func: expected a gumath gufunc or a 'xdap.gm_tbl_t' capsule, got %s",
            Py_TYPE(source)->tp_name);
        return NULL;
    }
    FuncObject *self = (FuncObject *)type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
    self->name = PyMem_Malloc(strlen(name) + 1);
    if (self->name == NULL) {
        Py_DECREF(self);
        return PyErr_NoMemory();
    }
    strcpy(self->name, name);
    Py_INCREF(source);
    self->source = source;
    self->tbl = tbl;
    self->ncache = 0;
    return (PyObject *)self;
}

static void
func_dealloc(FuncObject *self)
{
    Py_XDECREF(self->source);
    PyMem_Free(self->name);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* `... * T` for every argument of the signature? */
static int
is_elementwise(const ndt_t *sig)
{
    if (sig->tag != Function) {
        return 0;
    }
    for (int64_t i = 0; i < sig->Function.nargs; i++) {
        const ndt_t *a = sig->Function.types[i];
        if (a->tag != EllipsisDim || a->EllipsisDim.type->ndim != 0) {
            return 0;
        }
    }
    return 1;
}

static const char *
tag_name(enum ndt tag)
{
    switch (tag) {
    case Bool: return "bool";
    case Int8: return "int8"; case Int16: return "int16";
    case Int32: return "int32"; case Int64: return "int64";
    case Uint8: return "uint8"; case Uint16: return "uint16";
    case Uint32: return "uint32"; case Uint64: return "uint64";
    case Float16: return "float16"; case Float32: return "float32"; case Float64: return "float64";
    case Complex32: return "complex32"; case Complex64: return "complex64";
    case Complex128: return "complex128";
    default: return "?";
    }
}

static void
raise_no_kernel(FuncObject *self, const entry_t *e, PyObject *exc)
{
    char buf[256];
    size_t k = 0;
    k += snprintf(buf + k, sizeof buf - k, "%s(", self->name);
    for (int i = 0; i < e->nin && k < sizeof buf; i++) {
        k += snprintf(buf + k, sizeof buf - k, "%s%s", i ? ", " : "", tag_name(e->tags[i]));
    }
    if (k < sizeof buf) {
        snprintf(buf + k, sizeof buf - k, ")");
    }
    PyErr_SetString(exc, buf);
}

static entry_t *
lookup(FuncObject *self, int nin, const enum ndt *tags)
{
    for (int c = 0; c < self->ncache; c++) {
        entry_t *e = &self->cache[c];
        if (e->nin != nin) {
            continue;
        }
        int i = 0;
        while (i < nin && e->tags[i] == tags[i]) {
            i++;
        }
        if (i == nin) {
            return e;
        }
    }
    /* Select once: match the signatures against the bare leaf dtypes. */
    NDT_STATIC_CONTEXT(ctx);
    entry_t fresh;
    memset(&fresh, 0, sizeof fresh);
    fresh.nin = nin;
    const ndt_t *in_types[MAX_IN];
    xnd_t stack[MAX_IN];
    int ok = 1;
    for (int i = 0; i < nin; i++) {
        fresh.tags[i] = tags[i];
        in_types[i] = ndt_primitive(tags[i], 0, &ctx);
        if (in_types[i] == NULL) {
            for (int j = 0; j < i; j++) {
                ndt_del((ndt_t *)in_types[j]);
            }
            (void)Ndt_SetError(&ctx);
            return NULL;
        }
        stack[i] = xnd_error;
        stack[i].type = in_types[i];
    }
    ndt_apply_spec_t spec = ndt_apply_spec_empty;
    gm_kernel_t k = gm_select(&spec, self->tbl, self->name, in_types, nin, stack, &ctx);
    if (k.set == NULL) {
        /* No kernel for the bare dtypes.  If the function also has kernels
           with core dimensions (e.g. `... * N * float32`), gumath's own
           dispatch on the whole containers may still match: say so. */
        ndt_err_clear(&ctx);
        fresh.status = 1;
        const gm_func_t *f = gm_tbl_find(self->tbl, self->name, &ctx);
        if (f == NULL) {
            ndt_err_clear(&ctx);
        }
        else {
            for (int i = 0; i < f->nkernels; i++) {
                if (!is_elementwise(f->kernels[i].sig)) {
                    fresh.status = 2;
                }
            }
        }
        ok = 0;
    }
    else if (k.set->Strided == NULL || !is_elementwise(k.set->sig) || spec.nout < 1 ||
             spec.nout > MAX_OUT) {
        fresh.status = 2;
        ok = 0;
    }
    if (ok) {
        fresh.strided = k.set->Strided;
        fresh.nout = spec.nout;
        for (int i = 0; i < spec.nout; i++) {
            const ndt_t *o = spec.out[i];
            if (o->ndim != 0 || ndt_is_optional(o) || !ndt_is_concrete(o)) {
                fresh.status = 2;
                break;
            }
            fresh.out_tags[i] = o->tag;
            fresh.out_size[i] = o->datasize;
        }
    }
    if (k.set != NULL) {
        ndt_apply_spec_clear(&spec);
    }
    for (int i = 0; i < nin; i++) {
        ndt_del((ndt_t *)in_types[i]);
    }
    entry_t *slot = &self->cache[self->ncache < MAX_CACHE ? self->ncache++ : MAX_CACHE - 1];
    *slot = fresh;
    return slot;
}

/* The result type: the operands' dims around `leaf` (offsets copied). */
static ndt_t *
result_type(const operand_t *like, enum ndt tag, int optional, ndt_context_t *ctx)
{
    ndt_t *t = ndt_primitive(tag, 0, ctx);
    if (t == NULL) {
        return NULL;
    }
    if (optional) {
        t = ndt_option(t);
        if (t == NULL) {
            return NULL;
        }
    }
    if (like == NULL || like->kind == SCALAR) {
        return t;
    }
    const ndt_t *dims[NDT_MAX_DIM];
    int k = 0;
    for (const ndt_t *v = like->type; v->ndim > 0;
         v = v->tag == FixedDim ? v->FixedDim.type : v->VarDim.type) {
        dims[k++] = v;
    }
    for (int i = k - 1; i >= 0; i--) {
        if (like->kind == FIXED) {
            t = ndt_fixed_dim(t, dims[i]->FixedDim.shape, INT64_MAX, ctx);
        }
        else {
            int32_t n = dims[i]->Concrete.VarDim.noffsets;
            int32_t *copy = ndt_alloc(n, sizeof(int32_t));
            if (copy == NULL) {
                ndt_del(t);
                ndt_err_format(ctx, NDT_MemoryError, "out of memory");
                return NULL;
            }
            memcpy(copy, dims[i]->Concrete.VarDim.offsets, (size_t)n * sizeof(int32_t));
            t = ndt_var_dim(t, InternalOffsets, n, copy, 0, NULL, ctx);
        }
        if (t == NULL) {
            return NULL;
        }
    }
    return t;
}

/* Do the byte ranges [a, a + na) and [b, b + nb) share a byte? */
static int
overlaps(const void *a, int64_t na, const void *b, int64_t nb)
{
    const char *pa = a, *pb = b;
    return na > 0 && nb > 0 && pa < pb + nb && pb < pa + na;
}

static void
combine_validity_into(uint8_t *dst, int64_t n, const operand_t *ops, int nin);

/* dst = AND of the operands' validity.  When dst is (or overlaps) an
   operand's bitmap -- out= is one of the operands -- the AND is computed
   into scratch first: writing dst directly would overwrite that operand's
   bits before they are read (add(a, b, out=b) lost b's missing values). */
static int
combine_validity(uint8_t *dst, int64_t n, const operand_t *ops, int nin)
{
    const int64_t nbytes = (n + 7) / 8;
    int alias = 0;
    for (int i = 0; i < nin; i++) {
        const operand_t *op = &ops[i];
        if (op->optional && overlaps(dst, nbytes, op->bitmap, op->kind == SCALAR ? 1 : nbytes)) {
            alias = 1;
        }
    }
    if (!alias) {
        combine_validity_into(dst, n, ops, nin);
        return 0;
    }
    uint8_t *tmp = malloc((size_t)nbytes + 1);
    if (tmp == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    combine_validity_into(tmp, n, ops, nin);
    memcpy(dst, tmp, (size_t)nbytes);
    free(tmp);
    return 0;
}

static void
combine_validity_into(uint8_t *dst, int64_t n, const operand_t *ops, int nin)
{
    const int64_t nbytes = (n + 7) / 8;
    int first = 1;
    for (int i = 0; i < nin; i++) {
        const operand_t *op = &ops[i];
        if (!op->optional) {
            continue;
        }
        if (op->kind == SCALAR) {
            if (!(op->bitmap[0] & 1)) {
                memset(dst, 0, (size_t)nbytes);
                return;
            }
            continue;
        }
        if (first) {
            memcpy(dst, op->bitmap, (size_t)nbytes);
            first = 0;
        }
        else {
            for (int64_t b = 0; b < nbytes; b++) {
                dst[b] &= op->bitmap[b];
            }
        }
    }
    if (first) {
        memset(dst, 0xFF, (size_t)nbytes);
    }
}

/* out= sharing memory with an input: NumPy's semantics (the result is as if
   the inputs were read before anything is written).  An input that is the
   very same elements as an output (same start, same item size) is safe for
   an elementwise loop and used as is; any other overlap -- shifted views,
   reinterpreted items, a broadcast scalar inside the output -- is copied to
   scratch first (ptrs[i] then points at the copy, freed by free_copies). */
/* The bytes an operand's leaves span: [*lo, *hi). */
static void
extent(const operand_t *op, int64_t n, char **lo, char **hi)
{
    const int64_t size = op->leaf->datasize;
    const int64_t last = op->kind == SCALAR || n < 1 ? 0 : (n - 1) * (int64_t)op->step;
    *lo = op->ptr + (last < 0 ? last : 0);
    *hi = op->ptr + (last > 0 ? last : 0) + size;
}

static int
copy_overlapping_inputs(const operand_t *ops, int nin, const operand_t *outs, int nout,
                        int64_t n, char **ptrs, intptr_t *steps, char **copies)
{
    for (int i = 0; i < nin; i++) {
        char *ilo, *ihi;
        extent(&ops[i], n, &ilo, &ihi);
        const int64_t isize = ops[i].leaf->datasize;
        for (int j = 0; j < nout; j++) {
            char *olo, *ohi;
            extent(&outs[j], n, &olo, &ohi);
            if (!overlaps(ilo, ihi - ilo, olo, ohi - olo)) {
                continue;
            }
            if (ops[i].kind != SCALAR && ops[i].ptr == outs[j].ptr &&
                ops[i].step == outs[j].step && isize == outs[j].leaf->datasize) {
                continue;           /* element for element: safe in place */
            }
            const int64_t count = ops[i].kind == SCALAR ? 1 : n;
            copies[i] = malloc((size_t)(count * isize));
            if (copies[i] == NULL) {
                PyErr_NoMemory();
                return -1;
            }
            for (int64_t k = 0; k < count; k++) {
                memcpy(copies[i] + k * isize, ops[i].ptr + k * ops[i].step, (size_t)isize);
            }
            ptrs[i] = copies[i];
            steps[i] = ops[i].kind == SCALAR ? 0 : (intptr_t)isize;
            break;
        }
    }
    return 0;
}

static void
free_copies(char **copies, int nin)
{
    for (int i = 0; i < nin; i++) {
        free(copies[i]);
        copies[i] = NULL;
    }
}

/* The call's operands: describe each (flat leaves), check that the arrays
   share one layout, collect the leaf dtypes.  *like is the first array
   operand (NULL: all scalars), *optional whether any operand is ?T. */
static int
describe_operands(PyObject *args, Py_ssize_t nin, operand_t *ops, enum ndt *tags,
                  const operand_t **like, PyObject **like_arg, int *optional)
{
    *like = NULL;
    *like_arg = NULL;
    *optional = 0;
    for (Py_ssize_t i = 0; i < nin; i++) {
        if (describe(PyTuple_GET_ITEM(args, i), &ops[i]) < 0) {
            return -1;
        }
        tags[i] = ops[i].leaf->tag;
        *optional |= ops[i].optional;
        if (ops[i].kind == SCALAR) {
            continue;
        }
        if (*like == NULL) {
            *like = &ops[i];
            *like_arg = PyTuple_GET_ITEM(args, i);
            continue;
        }
        char msg[160];
        if (!same_dims(*like, &ops[i], msg, sizeof msg)) {
            PyErr_SetString(PyExc_ValueError, msg);
            return -1;
        }
    }
    return 0;
}

/* out=: existing containers of the operands' dims and the kernel's output
   dtypes, writable, optional when an operand is.  New references in
   results[], descriptions in outs[]. */
static int
bind_outputs(FuncObject *self, const entry_t *e, PyObject *out, const operand_t *like,
             int optional, PyObject **results, operand_t *outs)
{
    const int nout = e->nout;
    const int tuple = PyTuple_Check(out);
    if ((tuple && PyTuple_GET_SIZE(out) != nout) || (!tuple && nout != 1)) {
        PyErr_Format(PyExc_ValueError, "%s: out= needs %d container(s)", self->name, nout);
        return -1;
    }
    for (int j = 0; j < nout; j++) {
        PyObject *o = tuple ? PyTuple_GET_ITEM(out, j) : out;
        if (describe(o, &outs[j]) < 0) {
            if (PyErr_ExceptionMatches(NeedsCopy)) {
                /* the Python layer copies operands, but out= must be written */
                PyErr_Clear();
                PyErr_SetString(PyExc_ValueError,
                    "out= must be C-contiguous or a 1-D strided view (optional: a whole "
                    "container); write into a contiguous container and copy");
            }
            return -1;
        }
        if (like != NULL) {
            char msg[160];
            if (!same_dims(like, &outs[j], msg, sizeof msg)) {
                PyErr_Format(PyExc_ValueError, "out= does not fit the operands: %s", msg);
                return -1;
            }
        }
        else if (outs[j].kind != SCALAR) {
            PyErr_SetString(PyExc_ValueError, "out= does not fit the operands: they are scalars");
            return -1;
        }
        if (outs[j].leaf->tag != e->out_tags[j]) {
            PyErr_Format(PyExc_TypeError, "out= has dtype %s, the kernel %s writes %s",
                         tag_name(outs[j].leaf->tag), self->name, tag_name(e->out_tags[j]));
            return -1;
        }
        if (optional && !outs[j].optional) {
            PyErr_Format(PyExc_ValueError,
                "out= must be optional (?%s): the operands have missing values",
                tag_name(e->out_tags[j]));
            return -1;
        }
        if (xdap_is_readonly(o)) {
            PyErr_SetString(PyExc_ValueError, "out= is read-only");
            return -1;
        }
        Py_INCREF(o);
        results[j] = o;
    }
    return 0;
}

/* One new output of n leaves of dtype tag with the operands' dims: a large
   one over a Buffer (sharing a ragged operand's type when it can), a small
   one owned by xnd. */
static PyObject *
new_output(PyTypeObject *tp, const operand_t *like, PyObject *like_arg, enum ndt tag,
           int64_t itemsize, int64_t n, int optional)
{
    NDT_STATIC_CONTEXT(ctx);
    const int64_t nbytes = n * itemsize;
    if (nbytes >= BUFFER_MIN_BYTES) {
        PyObject *shared = shareable_type(like_arg, like, tag, optional);
        if (shared != NULL) {
            return new_buffer_xnd_shared(shared, nbytes, n, optional);
        }
    }
    ndt_t *t = result_type(like, tag, optional, &ctx);
    if (t == NULL) {
        return Ndt_SetError(&ctx);
    }
    if (nbytes >= BUFFER_MIN_BYTES) {
        return new_buffer_xnd(t, nbytes, n, optional);
    }
    xnd_t x = xnd_error;
    x.index = 0;
    x.type = t;
    x.ptr = alloc_data(nbytes);
    if (x.ptr == NULL) {
        ndt_del(t);
        return PyErr_NoMemory();
    }
    if (optional) {
        x.bitmap.data = ndt_alloc((n + 7) / 8 > 0 ? (n + 7) / 8 : 1, 1);
        if (x.bitmap.data == NULL) {
            ndt_aligned_free(x.ptr);
            ndt_del(t);
            return PyErr_NoMemory();
        }
    }
    return Xnd_FromXnd(tp, &x);   /* owns type, data and bitmap */
}

/* The kernel's loop over n leaves, inputs ops[] into outputs outs[]; with
   out= given (in_place), inputs overlapping an output are copied first. */
static int
run_loop(FuncObject *self, const entry_t *e, const operand_t *ops, int nin,
         const operand_t *outs, int64_t n, int in_place)
{
    char *ptrs[MAX_IN + MAX_OUT];
    intptr_t steps[MAX_IN + MAX_OUT];
    intptr_t dims[1] = {(intptr_t)n};
    char *copies[MAX_IN] = {NULL};
    for (int i = 0; i < nin; i++) {
        ptrs[i] = ops[i].ptr;
        steps[i] = ops[i].step;
    }
    if (in_place && copy_overlapping_inputs(ops, nin, outs, e->nout, n, ptrs, steps, copies) < 0) {
        free_copies(copies, nin);
        return -1;
    }
    for (int j = 0; j < e->nout; j++) {
        ptrs[nin + j] = outs[j].ptr;
        steps[nin + j] = outs[j].step;
    }
    int rc = 0;
    if (n >= GIL_RELEASE_N) {
        Py_BEGIN_ALLOW_THREADS
        rc = e->strided(ptrs, dims, steps, NULL);
        Py_END_ALLOW_THREADS
    }
    else if (n > 0) {
        rc = e->strided(ptrs, dims, steps, NULL);
    }
    free_copies(copies, nin);
    if (rc == 2) {      /* XDAP_EXPR_FAILED of a generated module (codegen/templates/prelude.c) */
        PyErr_Format(PyExc_ValueError, "%s: a hidden or initial value's expression divides by "
                     "zero, overflows or is out of range for its C type", self->name);
        return -1;
    }
    if (rc != 0) {
        PyErr_Format(PyExc_RuntimeError, "kernel %s failed (status %d)", self->name, rc);
        return -1;
    }
    return 0;
}

static PyObject *
func_call(FuncObject *self, PyObject *args, PyObject *kwds)
{
    PyObject *out = NULL;
    if (kwds != NULL && PyDict_GET_SIZE(kwds) > 0) {
        out = PyDict_GetItemString(kwds, "out");
        if (out == NULL || PyDict_GET_SIZE(kwds) != 1) {
            PyErr_SetString(PyExc_TypeError, "the only keyword argument is out=");
            return NULL;
        }
        if (out == Py_None) {
            out = NULL;
        }
    }
    const Py_ssize_t nin = PyTuple_GET_SIZE(args);
    if (nin < 1 || nin > MAX_IN) {
        PyErr_Format(PyExc_TypeError, "%s: expected 1 to %d arguments, got %zd",
                     self->name, MAX_IN, nin);
        return NULL;
    }
    operand_t ops[MAX_IN];
    enum ndt tags[MAX_IN];
    const operand_t *like;
    PyObject *like_arg;
    int optional;
    if (describe_operands(args, nin, ops, tags, &like, &like_arg, &optional) < 0) {
        return NULL;
    }
    entry_t *e = lookup(self, (int)nin, tags);
    if (e == NULL) {
        return NULL;
    }
    if (e->status != 0) {
        raise_no_kernel(self, e, e->status == 1 ? NoKernel : NotElementwise);
        return NULL;
    }
    const int64_t n = like ? like->n : 1;
    const int nout = e->nout;
    PyObject *results[MAX_OUT] = {NULL};
    operand_t outs[MAX_OUT] = {{0}};
    if (out != NULL) {
        if (bind_outputs(self, e, out, like, optional, results, outs) < 0) {
            goto error;
        }
    }
    else {
        PyTypeObject *tp = Py_TYPE(PyTuple_GET_ITEM(args, 0));
        for (int j = 0; j < nout; j++) {
            results[j] = new_output(tp, like, like_arg, e->out_tags[j], e->out_size[j], n,
                                    optional);
            if (results[j] == NULL || describe(results[j], &outs[j]) < 0) {
                goto error;
            }
        }
    }
    if (run_loop(self, e, ops, (int)nin, outs, n, out != NULL) < 0) {
        goto error;
    }
    for (int j = 0; j < nout; j++) {
        if (outs[j].optional &&
            combine_validity((uint8_t *)outs[j].bitmap, n, ops, (int)nin) < 0) {
            goto error;
        }
    }
    if (out != NULL) {
        for (int j = 0; j < nout; j++) {
            Py_DECREF(results[j]);
        }
        Py_INCREF(out);
        return out;
    }
    if (nout == 1) {
        return results[0];
    }
    PyObject *tup = PyTuple_New(nout);
    if (tup == NULL) {
        goto error;
    }
    for (int j = 0; j < nout; j++) {
        PyTuple_SET_ITEM(tup, j, results[j]);
    }
    return tup;

error:
    for (int j = 0; j < nout; j++) {
        Py_XDECREF(results[j]);
    }
    return NULL;
}

static PyObject *
func_name(FuncObject *self, void *closure)
{
    (void)closure;
    return PyUnicode_FromString(self->name);
}

static PyObject *
func_select(FuncObject *self, PyObject *args)
{
    /* select(dtype_name, ...) -> tuple of output dtype names (or raises). */
    const Py_ssize_t nin = PyTuple_GET_SIZE(args);
    if (nin < 1 || nin > MAX_IN) {
        PyErr_SetString(PyExc_TypeError, "select: 1 to 8 dtype names");
        return NULL;
    }
    enum ndt tags[MAX_IN];
    for (Py_ssize_t i = 0; i < nin; i++) {
        const char *s = PyUnicode_AsUTF8(PyTuple_GET_ITEM(args, i));
        if (s == NULL) {
            return NULL;
        }
        NDT_STATIC_CONTEXT(ctx);
        ndt_t *t = ndt_from_string(s, &ctx);
        if (t == NULL) {
            return Ndt_SetError(&ctx);
        }
        int scalar = t->ndim == 0 && !ndt_is_optional(t);
        tags[i] = t->tag;
        ndt_del(t);
        if (!scalar) {
            PyErr_Format(PyExc_TypeError, "select: %s is not a dtype", s);
            return NULL;
        }
    }
    entry_t *e = lookup(self, (int)nin, tags);
    if (e == NULL) {
        return NULL;
    }
    if (e->status != 0) {
        raise_no_kernel(self, e, e->status == 1 ? NoKernel : NotElementwise);
        return NULL;
    }
    PyObject *res = PyTuple_New(e->nout);
    if (res == NULL) {
        return NULL;
    }
    for (int j = 0; j < e->nout; j++) {
        PyTuple_SET_ITEM(res, j, PyUnicode_FromString(tag_name(e->out_tags[j])));
    }
    return res;
}

static PyGetSetDef func_getset[] = {
    {"name", (getter)func_name, NULL, "the multimethod's name", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef func_methods[] = {
    {"select", (PyCFunction)func_select, METH_VARARGS,
     "select(*dtypes) -> output dtypes of the elementwise kernel for these input dtypes"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject Func_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "xdap._apply.Func",
    .tp_basicsize = sizeof(FuncObject),
    .tp_dealloc = (destructor)func_dealloc,
    .tp_call = (ternaryfunc)func_call,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "An elementwise gumath multimethod called without gumath's dispatch overhead.",
    .tp_new = func_new,
    .tp_getset = func_getset,
    .tp_methods = func_methods,
};

/* ------------------------------------------------------------------------ */
/* scalar_result: `a <op> 2.0` made whole in C                               */
/* ------------------------------------------------------------------------ */

/* The operators' commonest call -- a DistArray of fixed numbers and a
   Python number, a result of the array's dtype -- costs ~1 us of Python
   around a 0.3 us kernel when the result DistArray is built field by field
   in Python (its Parts, its values array).  scalar_result builds the same
   objects here: the kernel's output, the NumPy array over it, the Parts and
   the DistArray (the operand's distribution and type).  Anything else --
   other dims, missing values, another result dtype, a kernel that refuses
   -- returns None and the Python path (xdap/array.py) handles it, errors
   included.  register_array(DistArray, Parts, info_of) names the two
   classes and the maker of a bool result's TypeInfo. */

static PyTypeObject *array_type = NULL, *parts_type = NULL;
/* info_of(info, dtype) -> the TypeInfo of a result of another dtype (a
   comparison's bool); its answers kept by (operand info, tag): results
   share their operand's info object, so a loop asks once. */
static PyObject *info_of = NULL, *result_infos = NULL;
#define MAX_RESULT_INFOS 1024

/* The slots of the two classes, read and written at their offsets (what
   CPython's member descriptors do, without a lookup a field). */
enum { P_INFO, P_VALUES, P_VALIDITY, P_OFFSETS, P_XND, P_ROWS, NP_SLOTS };
enum { A_DISTRIBUTION, A_PARTS, A_LEAF_INDEX, A_FRESH, NA_SLOTS };
static const char *parts_slots[NP_SLOTS] = {"info", "values", "validity", "offsets", "xnd", "rows"};
static const char *array_slots[NA_SLOTS] = {"distribution", "parts", "_leaf_index", "_fresh"};
static Py_ssize_t parts_at[NP_SLOTS], array_at[NA_SLOTS];
static PyObject *empty_tuple;

#define SLOT(obj, at) (*(PyObject **)((char *)(obj) + (at)))

static int
slot_offsets(PyTypeObject *type, const char **names, Py_ssize_t *at, int n)
{
    for (int i = 0; i < n; i++) {
        PyObject *d = PyDict_GetItemString(type->tp_dict, names[i]);     /* borrowed */
        if (d == NULL || !Py_IS_TYPE(d, &PyMemberDescr_Type) ||
            ((PyMemberDescrObject *)d)->d_member->type != T_OBJECT_EX) {
            PyErr_Format(PyExc_TypeError, "register_array: %s has no slot '%s'",
                         type->tp_name, names[i]);
            return -1;
        }
        at[i] = ((PyMemberDescrObject *)d)->d_member->offset;
    }
    return 0;
}

static PyObject *
register_array(PyObject *module, PyObject *args)
{
    (void)module;
    PyObject *a, *p, *of;
    if (!PyArg_ParseTuple(args, "O!O!O", &PyType_Type, &a, &PyType_Type, &p, &of)) {
        return NULL;
    }
    if (slot_offsets((PyTypeObject *)a, array_slots, array_at, NA_SLOTS) < 0 ||
        slot_offsets((PyTypeObject *)p, parts_slots, parts_at, NP_SLOTS) < 0) {
        return NULL;
    }
    if (result_infos == NULL && (result_infos = PyDict_New()) == NULL) {
        return NULL;
    }
    Py_INCREF(a);
    Py_INCREF(p);
    Py_INCREF(of);
    Py_XSETREF(array_type, (PyTypeObject *)a);
    Py_XSETREF(parts_type, (PyTypeObject *)p);
    Py_XSETREF(info_of, of);
    Py_RETURN_NONE;
}

static int npy_of_tag(enum ndt tag);
static int tag_of_numpy(int type_num);
static int plain_result(enum ndt out, enum ndt in);

/* The TypeInfo of a result of `descr`'s dtype with the dims of `info`
   (borrowed, kept in result_infos); NULL with an exception on failure. */
static PyObject *
result_info(PyObject *info, PyArray_Descr *descr)
{
    PyObject *key = Py_BuildValue("(ni)", (Py_ssize_t)(uintptr_t)info, descr->type_num);
    if (key == NULL) {
        return NULL;
    }
    PyObject *hit = PyDict_GetItemWithError(result_infos, key);       /* borrowed */
    if (hit != NULL && PyTuple_GET_ITEM(hit, 0) == info) {
        Py_DECREF(key);
        return PyTuple_GET_ITEM(hit, 1);
    }
    if (PyErr_Occurred()) {
        Py_DECREF(key);
        return NULL;
    }
    PyObject *made = PyObject_CallFunctionObjArgs(info_of, info, (PyObject *)descr, NULL);
    if (made == NULL) {
        Py_DECREF(key);
        return NULL;
    }
    if (PyDict_GET_SIZE(result_infos) >= MAX_RESULT_INFOS) {
        PyDict_Clear(result_infos);
    }
    /* the entry holds the operand's info: its address is not reused while kept */
    PyObject *entry = PyTuple_Pack(2, info, made);
    Py_DECREF(made);
    if (entry == NULL || PyDict_SetItem(result_infos, key, entry) < 0) {
        Py_XDECREF(entry);
        Py_DECREF(key);
        return NULL;
    }
    Py_DECREF(entry);
    Py_DECREF(key);
    return PyTuple_GET_ITEM(entry, 1);
}

/* The ndtypes tag of a NumPy dtype the kernels take, or -1. */
static int
tag_of_numpy(int type_num)
{
    switch (type_num) {
    case NPY_BOOL: return Bool;
    case NPY_INT8: return Int8;
    case NPY_INT16: return Int16;
    case NPY_INT32: return Int32;
    case NPY_INT64: return Int64;
    case NPY_UINT8: return Uint8;
    case NPY_UINT16: return Uint16;
    case NPY_UINT32: return Uint32;
    case NPY_UINT64: return Uint64;
    case NPY_FLOAT32: return Float32;
    case NPY_FLOAT64: return Float64;
    case NPY_COMPLEX64: return Complex64;
    case NPY_COMPLEX128: return Complex128;
    default: return -1;
    }
}

/* The NumPy type number of a kernel dtype's tag, or -1. */
static int
npy_of_tag(enum ndt tag)
{
    switch (tag) {
    case Bool: return NPY_BOOL;
    case Int8: return NPY_INT8;
    case Int16: return NPY_INT16;
    case Int32: return NPY_INT32;
    case Int64: return NPY_INT64;
    case Uint8: return NPY_UINT8;
    case Uint16: return NPY_UINT16;
    case Uint32: return NPY_UINT32;
    case Uint64: return NPY_UINT64;
    case Float32: return NPY_FLOAT32;
    case Float64: return NPY_FLOAT64;
    case Complex64: return NPY_COMPLEX64;
    case Complex128: return NPY_COMPLEX128;
    default: return -1;
    }
}

/* Whether a kernel's result of leaf `out` for an operand of leaf `in` is
   one the fast paths make: the operand's dtype, or a predicate's bool --
   where the kernel picks another dtype (sin of an integer), the general
   path applies NumPy's promotion. */
static int
plain_result(enum ndt out, enum ndt in)
{
    return out == in || (out == Bool && info_of != NULL);
}

/* ------------------------------------------------------------------------ */
/* The fast paths' operands and results: NumPy values, no xnd between       */
/* ------------------------------------------------------------------------ */

/* At a loop's sizes (10^3 values) a result's xnd container cost more than
   the kernel: its type built dim by dim, the container and its memory
   block, a NumPy view over it, the call's argument tuple and a second
   description of the operands in func_call.  The fast paths run the
   selected kernel's Strided loop on the operands' memory into a new NumPy
   array (NumPy's allocator and its cache of small blocks, as NumPy's own
   operators use) and keep that array as the result's values; the result's
   container is made when something asks for it (xdap.parts.container). */

/* The leaf type of a kernel dtype's tag, made once (ndtypes types are
   immutable): what copy_overlapping_inputs reads of a NumPy operand. */
#define MAX_TAG 64
static const ndt_t *
leaf_type(enum ndt tag)
{
    static ndt_t *made[MAX_TAG];
    if ((int)tag < 0 || (int)tag >= MAX_TAG) {
        return NULL;
    }
    if (made[tag] == NULL) {
        NDT_STATIC_CONTEXT(ctx);
        made[tag] = ndt_primitive(tag, 0, &ctx);
        if (made[tag] == NULL) {
            ndt_err_clear(&ctx);
        }
    }
    return made[tag];
}

/* The operand of Parts p (of type parts_type), described into op with its
   leaf tag in *tag: the container p holds, else its values when plain --
   a C-contiguous, native NumPy array of a kernel dtype, no validity, no
   offsets (what xdap.parts.container would make a container over, by
   that dtype alone).  0 when neither (no exception). */
static int
operand_of(PyObject *p, operand_t *op, enum ndt *tag)
{
    PyObject *c = SLOT(p, parts_at[P_XND]);
    if (c != NULL && Xnd_Check(c)) {
        if (describe(c, op) < 0) {
            PyErr_Clear();
            return 0;
        }
        *tag = op->leaf->tag;
        return 1;
    }
    PyObject *values = SLOT(p, parts_at[P_VALUES]);
    if (values == NULL || !PyArray_Check(values) || SLOT(p, parts_at[P_VALIDITY]) != Py_None ||
        SLOT(p, parts_at[P_OFFSETS]) != empty_tuple) {
        return 0;
    }
    PyArrayObject *v = (PyArrayObject *)values;
    const int t = tag_of_numpy(PyArray_TYPE(v));
    if (t < 0 || !PyArray_IS_C_CONTIGUOUS(v) || !PyArray_ISNOTSWAPPED(v) ||
        (op->leaf = leaf_type((enum ndt)t)) == NULL) {
        return 0;
    }
    op->kind = PyArray_NDIM(v) == 0 ? SCALAR : FIXED;
    op->ndim = PyArray_NDIM(v);
    op->n = PyArray_SIZE(v);
    op->ptr = PyArray_BYTES(v);
    op->step = op->kind == SCALAR ? 0 : (intptr_t)PyArray_ITEMSIZE(v);
    op->type = op->leaf;      /* the leaf's: nothing reads a plain operand's dims */
    op->bitmap = NULL;
    op->optional = 0;
    *tag = (enum ndt)t;
    return 1;
}

/* The checks every fast path makes of a DistArray operand: its class, its
   Parts, the slots a result copies; its Parts (borrowed), or NULL. */
static PyObject *
parts_of(PyObject *array)
{
    if (array_type == NULL || Py_TYPE(array) != array_type) {
        return NULL;
    }
    PyObject *p = SLOT(array, array_at[A_PARTS]);
    if (p == NULL || Py_TYPE(p) != parts_type || SLOT(p, parts_at[P_INFO]) == NULL ||
        SLOT(p, parts_at[P_VALUES]) == NULL || !PyArray_Check(SLOT(p, parts_at[P_VALUES])) ||
        SLOT(array, array_at[A_DISTRIBUTION]) == NULL ||
        SLOT(array, array_at[A_LEAF_INDEX]) == NULL) {
        return NULL;
    }
    return p;
}

/* Do the values of Parts a and b have one shape? */
static int
same_shape(PyObject *a, PyObject *b)
{
    PyArrayObject *va = (PyArrayObject *)SLOT(a, parts_at[P_VALUES]);
    PyArrayObject *vb = (PyArrayObject *)SLOT(b, parts_at[P_VALUES]);
    return PyArray_NDIM(va) == PyArray_NDIM(vb) &&
           PyArray_CompareLists(PyArray_DIMS(va), PyArray_DIMS(vb), PyArray_NDIM(va));
}

/* The new DistArray of `array`'s distribution whose values are the NumPy
   array v (a new reference, stolen) with the dims of Parts p's values: its
   type p's, or -- v of another dtype -- the one info_of makes.  NULL with an
   exception on failure. */
static PyObject *
wrap_values(PyObject *array, PyObject *p, PyObject *v)
{
    PyObject *info = SLOT(p, parts_at[P_INFO]);
    PyArrayObject *values = (PyArrayObject *)SLOT(p, parts_at[P_VALUES]);
    if (PyArray_TYPE((PyArrayObject *)v) != PyArray_TYPE(values)) {
        info = result_info(info, PyArray_DESCR((PyArrayObject *)v));
        if (info == NULL) {
            Py_DECREF(v);
            return NULL;
        }
    }
    PyObject *np_ = parts_type->tp_alloc(parts_type, 0);
    if (np_ == NULL) {
        Py_DECREF(v);
        return NULL;
    }
    /* info, values, validity, offsets, xnd (made when asked), rows */
    PyObject *pv[NP_SLOTS] = {info, v, Py_None, empty_tuple, Py_None, Py_None};
    for (int i = 0; i < NP_SLOTS; i++) {
        Py_INCREF(pv[i]);
        SLOT(np_, parts_at[i]) = pv[i];
    }
    Py_DECREF(v);
    PyObject *out = array_type->tp_alloc(array_type, 0);
    if (out == NULL) {
        Py_DECREF(np_);
        return NULL;
    }
    /* fresh: nothing else views the result (an operator may lend it on) */
    PyObject *av[NA_SLOTS] = {SLOT(array, array_at[A_DISTRIBUTION]), np_,
                              SLOT(array, array_at[A_LEAF_INDEX]), Py_True};
    for (int i = 0; i < NA_SLOTS; i++) {
        Py_INCREF(av[i]);
        SLOT(out, array_at[i]) = av[i];
    }
    Py_DECREF(np_);
    return out;
}

/* new_array(distribution, info, values, fresh[, dtype]) -> the DistArray of
   `distribution` whose Parts hold `values` (a NumPy array, taken as it is
   -- cast to `dtype` where one is given and it differs -- or a NumPy scalar,
   made a 0-d array of `dtype`) of type `info`: no
   missing values, no ragged dims, its container made when asked.  What the
   prepared paths of repeated calls (xdap/repeats.py) make their results
   with: a view's, a roll's, a reduction's 0-d array -- ~0.1 us where the
   Parts dataclass and __xdap_wrap__ cost ~0.5. */
static PyObject *
new_array(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 4 && nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "new_array(distribution, info, values, fresh[, dtype])");
        return NULL;
    }
    if (array_type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "new_array: register_array was not called");
        return NULL;
    }
    PyObject *v = args[2];
    if (nargs == 5 && args[4] != Py_None && !PyArray_DescrCheck(args[4])) {
        PyErr_SetString(PyExc_TypeError, "new_array: dtype must be a numpy.dtype");
        return NULL;
    }
    if (PyArray_Check(v)) {
        PyArray_Descr *want = nargs == 5 && args[4] != Py_None ? (PyArray_Descr *)args[4] : NULL;
        if (want != NULL && !PyArray_EquivTypes(PyArray_DESCR((PyArrayObject *)v), want)) {
            Py_INCREF(want);             /* PyArray_CastToType steals it */
            v = PyArray_CastToType((PyArrayObject *)v, want, 0);
            if (v == NULL) {
                return NULL;
            }
        }
        else {
            Py_INCREF(v);
        }
    }
    else if (PyArray_IsScalar(v, Generic)) {
        PyArray_Descr *descr = NULL;
        if (nargs == 5 && args[4] != Py_None) {
            descr = (PyArray_Descr *)args[4];
            Py_INCREF(descr);            /* PyArray_FromScalar steals it */
        }
        v = PyArray_FromScalar(v, descr);
        if (v == NULL) {
            return NULL;
        }
    }
    else {
        PyErr_Format(PyExc_TypeError, "new_array: values must be a NumPy array or scalar, got %s",
                     Py_TYPE(v)->tp_name);
        return NULL;
    }
    PyObject *np_ = parts_type->tp_alloc(parts_type, 0);
    if (np_ == NULL) {
        Py_DECREF(v);
        return NULL;
    }
    PyObject *pv[NP_SLOTS] = {args[1], v, Py_None, empty_tuple, Py_None, Py_None};
    for (int i = 0; i < NP_SLOTS; i++) {
        Py_INCREF(pv[i]);
        SLOT(np_, parts_at[i]) = pv[i];
    }
    Py_DECREF(v);
    PyObject *out = array_type->tp_alloc(array_type, 0);
    if (out == NULL) {
        Py_DECREF(np_);
        return NULL;
    }
    PyObject *av[NA_SLOTS] = {args[0], np_, Py_None, PyObject_IsTrue(args[3]) ? Py_True : Py_False};
    for (int i = 0; i < NA_SLOTS; i++) {
        Py_INCREF(av[i]);
        SLOT(out, array_at[i]) = av[i];
    }
    Py_DECREF(np_);
    return out;
}

/* The kernel of `func` for the nin operands ops[] (leaf tags tags[]) run
   over n leaves: into `into` (a DistArray whose plain values take the
   result; it is returned), else into a new NumPy array of the dims of Parts
   like_p's values, wrapped like `like` (wrap_values).  Py_None where the
   fast path does not apply -- no kernel, one that is not elementwise or
   gives more than one output, a result of a dtype neither the operand's nor
   a predicate's bool (`into`: not its dtype), a kernel that fails -- the
   Python path then decides, errors included; NULL on an error of its own
   (memory). */
static PyObject *
run_plain(PyObject *func, const operand_t *ops, const enum ndt *tags, int nin, int64_t n,
          PyObject *like, PyObject *like_p, enum ndt like_tag, PyObject *into)
{
    entry_t *e = lookup((FuncObject *)func, nin, tags);
    if (e == NULL) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    if (e->status != 0 || e->nout != 1 || !plain_result(e->out_tags[0], like_tag)) {
        Py_RETURN_NONE;
    }
    operand_t out = {0};
    enum ndt out_tag;
    if (into != NULL) {
        PyObject *ip = parts_of(into);
        /* a temporary's values are its own; still, nothing read-only is written */
        if (ip == NULL || !operand_of(ip, &out, &out_tag) || out_tag != e->out_tags[0] ||
            out.n != n || out.optional || out.kind == VAR ||
            !PyArray_ISWRITEABLE((PyArrayObject *)SLOT(ip, parts_at[P_VALUES])) ||
            (Xnd_Check(SLOT(ip, parts_at[P_XND])) && xdap_is_readonly(SLOT(ip, parts_at[P_XND])))) {
            Py_RETURN_NONE;
        }
        if (run_loop((FuncObject *)func, e, ops, nin, &out, n, 1) < 0) {
            PyErr_Clear();
            Py_RETURN_NONE;
        }
        Py_INCREF(into);
        return into;
    }
    const int npy = npy_of_tag(e->out_tags[0]);
    if (npy < 0) {
        Py_RETURN_NONE;
    }
    PyArrayObject *lv = (PyArrayObject *)SLOT(like_p, parts_at[P_VALUES]);
    PyObject *v = PyArray_SimpleNew(PyArray_NDIM(lv), PyArray_DIMS(lv), npy);
    if (v == NULL) {
        return NULL;
    }
    out.kind = PyArray_NDIM(lv) == 0 ? SCALAR : FIXED;
    out.leaf = out.type = leaf_type(e->out_tags[0]);
    out.optional = 0;
    out.bitmap = NULL;
    out.n = n;
    out.ptr = PyArray_BYTES((PyArrayObject *)v);
    out.step = (intptr_t)PyArray_ITEMSIZE((PyArrayObject *)v);
    if (run_loop((FuncObject *)func, e, ops, nin, &out, n, 0) < 0) {
        Py_DECREF(v);
        PyErr_Clear();            /* the Python path says why, the same way */
        Py_RETURN_NONE;
    }
    return wrap_values(like, like_p, v);
}

/* scalar_result(func, array, scalar, reflected[, into]) -> DistArray or
   None: `array <op> scalar` (`scalar <op> array` when reflected) of a
   DistArray of plain numbers (a 0-d one too) and a 0-d xnd container or a
   0-d DistArray; a result of the array's dtype (or a predicate's bool) and
   dims.  ``into``: True -- the array is a temporary whose buffer takes the
   result (returned itself). */
static PyObject *
scalar_result(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if ((nargs != 4 && nargs != 5) || !Py_IS_TYPE(args[0], &Func_Type)) {
        PyErr_SetString(PyExc_TypeError, "scalar_result(func, array, scalar, reflected[, into])");
        return NULL;
    }
    PyObject *func = args[0], *array = args[1], *scalar = args[2];
    const int reflected = PyObject_IsTrue(args[3]);
    const int into = nargs == 5 && PyObject_IsTrue(args[4]);
    PyObject *p = parts_of(array);
    operand_t arr, num;
    enum ndt arr_tag, num_tag;
    if (p == NULL || !operand_of(p, &arr, &arr_tag)) {
        Py_RETURN_NONE;
    }
    if (Py_TYPE(scalar) == array_type) {       /* a 0-d DistArray */
        PyObject *sp = parts_of(scalar);
        if (sp == NULL || !operand_of(sp, &num, &num_tag)) {
            Py_RETURN_NONE;
        }
    }
    else {
        if (describe(scalar, &num) < 0) {
            PyErr_Clear();
            Py_RETURN_NONE;
        }
        num_tag = num.leaf->tag;
    }
    if ((arr.kind != FIXED && arr.kind != SCALAR) || arr.optional || num.kind != SCALAR ||
        num.optional) {
        Py_RETURN_NONE;
    }
    operand_t ops[2] = {reflected ? num : arr, reflected ? arr : num};
    enum ndt tags[2] = {reflected ? num_tag : arr_tag, reflected ? arr_tag : num_tag};
    return run_plain(func, ops, tags, 2, arr.n, array, p, arr_tag, into ? array : NULL);
}

/* unary_result(func, array) -> DistArray or None: `func(array)` of a
   DistArray of plain numbers (`xp.sin(a)`, `-a`, `xp.isnan(a)`); anything
   else -- and any error -- is None: the Python path decides, errors
   included. */
static PyObject *
unary_result(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 2 || !Py_IS_TYPE(args[0], &Func_Type)) {
        PyErr_SetString(PyExc_TypeError, "unary_result(func, array)");
        return NULL;
    }
    PyObject *func = args[0], *array = args[1];
    PyObject *p = parts_of(array);
    operand_t op;
    enum ndt tag;
    if (p == NULL || !operand_of(p, &op, &tag) || (op.kind != FIXED && op.kind != SCALAR) ||
        op.optional) {
        Py_RETURN_NONE;
    }
    return run_plain(func, &op, &tag, 1, op.n, array, p, tag, NULL);
}

/* array_result(func, first, second, out) -> DistArray or None: `first <op>
   second` of two DistArrays of one distribution (the same object, or equal
   ones) and one shape, both plain numbers, whose result has the dtype of one
   of them (that one's type and distribution are the result's) or is a
   predicate's bool; ``out``: None, or the DistArray (one of the two, a
   temporary) whose buffer takes the result -- then it is returned.
   Anything else is None: the Python path decides, errors included. */
static PyObject *
array_result(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 4 || !Py_IS_TYPE(args[0], &Func_Type)) {
        PyErr_SetString(PyExc_TypeError, "array_result(func, first, second, out)");
        return NULL;
    }
    PyObject *func = args[0], *arrays[2] = {args[1], args[2]}, *out = args[3];
    PyObject *parts[2];
    operand_t ops[2];
    enum ndt tags[2];
    for (int i = 0; i < 2; i++) {
        parts[i] = parts_of(arrays[i]);
        if (parts[i] == NULL || !operand_of(parts[i], &ops[i], &tags[i]) ||
            (ops[i].kind != FIXED && ops[i].kind != SCALAR) || ops[i].optional) {
            Py_RETURN_NONE;
        }
    }
    if (ops[0].kind != ops[1].kind || !same_shape(parts[0], parts[1])) {
        Py_RETURN_NONE;
    }
    PyObject *da = SLOT(arrays[0], array_at[A_DISTRIBUTION]);
    PyObject *db = SLOT(arrays[1], array_at[A_DISTRIBUTION]);
    if (da != db) {
        int equal = PyObject_RichCompareBool(da, db, Py_EQ);
        if (equal != 1) {
            PyErr_Clear();
            Py_RETURN_NONE;
        }
    }
    if (out != Py_None && out != arrays[0] && out != arrays[1]) {
        Py_RETURN_NONE;
    }
    /* the result is like the operand of its dtype: the first where both are */
    entry_t *e = lookup((FuncObject *)func, 2, tags);
    if (e == NULL) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    const int like = e->status == 0 && e->nout == 1 && e->out_tags[0] == tags[1] &&
                     e->out_tags[0] != tags[0] ? 1 : 0;
    return run_plain(func, ops, tags, 2, ops[0].n, arrays[like], parts[like], tags[like],
                     out == Py_None ? NULL : out);
}

/* key(gufunc) -> (table address, name): a stable, hashable identity of a
   gumath function (its table lives as long as the process), for caches. */
static PyObject *
apply_key(PyObject *module, PyObject *source)
{
    (void)module;
    if (strcmp(Py_TYPE(source)->tp_name, "_gumath.gufunc") != 0) {
        PyErr_Format(PyExc_TypeError, "key: expected a gumath gufunc, got %s",
                     Py_TYPE(source)->tp_name);
        return NULL;
    }
    const MirrorGufunc *g = (const MirrorGufunc *)source;
    return Py_BuildValue("(ns)", (Py_ssize_t)(uintptr_t)g->tbl, g->name);
}

static PyMethodDef module_methods[] = {
    {"key", (PyCFunction)apply_key, METH_O,
     "key(gufunc) -> (table address, name): a stable cache key of a gumath function"},
    {"register_array", (PyCFunction)register_array, METH_VARARGS,
     "register_array(DistArray, Parts, info_of): the classes scalar_result builds"},
    {"array_result", (PyCFunction)(void (*)(void))array_result, METH_FASTCALL,
     "array_result(func, first, second, out) -> the DistArray of `first <op> second` (two "
     "DistArrays of one distribution; into `out`, one of them, when not None), or None: "
     "take the general path"},
    {"unary_result", (PyCFunction)(void (*)(void))unary_result, METH_FASTCALL,
     "unary_result(func, array) -> the DistArray of `func(array)`, or None: take the "
     "general path"},
    {"new_array", (PyCFunction)(void (*)(void))new_array, METH_FASTCALL,
     "new_array(distribution, info, values, fresh[, dtype]) -> a DistArray of plain values "
     "(a NumPy array as it is, or a NumPy scalar as a 0-d array of dtype)"},
    {"scalar_result", (PyCFunction)(void (*)(void))scalar_result, METH_FASTCALL,
     "scalar_result(func, array, scalar, reflected) -> the DistArray of `array <op> scalar` "
     "(`scalar <op> array` when reflected), or None: take the general path"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_apply", "Fast elementwise application of gumath kernels.", -1,
    module_methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__apply(void)
{
    import_array();
    empty_tuple = PyTuple_New(0);
    if (empty_tuple == NULL) {
        return NULL;
    }
    xnd_type_object = xdap_import_xnd_type();
    if (xnd_type_object == NULL) {
        return NULL;
    }
    PyObject *gm = PyImport_ImportModule("gumath");
    if (gm == NULL) {
        return NULL;
    }
    Py_DECREF(gm);
    if (PyType_Ready(&Func_Type) < 0 || PyType_Ready(&Buffer_Type) < 0) {
        return NULL;
    }
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) {
        return NULL;
    }
    NoKernel = PyErr_NewException("xdap._apply.NoKernel", PyExc_TypeError, NULL);
    NotElementwise = PyErr_NewException("xdap._apply.NotElementwise", PyExc_TypeError, NULL);
    NeedsCopy = PyErr_NewException("xdap._apply.NeedsCopy", PyExc_ValueError, NULL);
    if (NoKernel == NULL || NotElementwise == NULL || NeedsCopy == NULL) {
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&Func_Type);
    if (PyModule_AddObject(m, "Func", (PyObject *)&Func_Type) < 0 ||
        PyModule_AddObject(m, "NoKernel", NoKernel) < 0 ||
        PyModule_AddObject(m, "NotElementwise", NotElementwise) < 0 ||
        PyModule_AddObject(m, "NeedsCopy", NeedsCopy) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(NoKernel);
    Py_INCREF(NotElementwise);
    Py_INCREF(NeedsCopy);
    return m;
}
