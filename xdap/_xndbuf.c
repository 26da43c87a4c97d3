/*
 * xdap._xndbuf -- zero-copy bridges between xnd containers and flat buffers.
 *
 * xnd 0.2.0.dev3 exports PEP-3118 buffers only for fixed, non-optional
 * types, and only with '='-prefixed formats.  Ragged (var) data, optional
 * data and their offsets/validity bitmaps are reachable only from C.  This
 * module closes that gap in both directions, without copying values:
 *
 *   layout(x, dtype)  -> (values, validity, offsets)
 *       NumPy views of a whole container's memory (the container is their
 *       base): the leaf values of NumPy dtype `dtype` (N-d for fixed
 *       dims, flat 1-d over all leaves for var dims), the validity bitmap
 *       (LSB-first, 1 = valid, as in Arrow) or None, and one int32 offsets
 *       array per var dimension, outermost first.  Each view keeps x alive.
 *
 *   from_buffers(type, offsets, values, validity) -> xnd
 *       a container over existing memory: 'type' is the full type string of
 *       a fixed container ("2 * 3 * ?float64") or the leaf dtype of a ragged
 *       one ("?float64", with 'offsets' a sequence of int32 buffers,
 *       outermost first).  The new container keeps 'values' and 'validity'
 *       alive.  Offsets are copied into the type (ndtypes owns them; they
 *       are 4 bytes per row, the values are not copied).
 *
 * The one private detail relied on is the object layout of xnd's memory
 * block (to honour read-only imports); it is mirrored below for the pinned
 * xnd 0.2.0.dev3 and nothing else.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>
#include "ndtypes.h"
#include "pyndtypes.h"
#include "xnd.h"
#include "pyxnd.h"
#include "_xndmirror.h"   /* the mirrored layouts, shared with _apply */
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>
#include "_numpy_over.h"    /* numpy_over, shared with _apply */

static PyObject *xnd_type_object = NULL;   /* xnd.xnd */
static PyArray_Descr *int32_descr = NULL;   /* offsets */
static PyArray_Descr *uint8_descr = NULL;   /* validity bitmaps */


/* ------------------------------------------------------------------------ */
/* Keep: re-exports a values buffer as bytes and keeps a bitmap alive.       */
/* ------------------------------------------------------------------------ */

typedef struct {
    PyObject_HEAD
    Py_buffer values;       /* acquired from the caller's values object */
    PyObject *validity;     /* kept alive: its memory is the xnd bitmap */
    Py_buffer validity_buf;
    int has_validity;
} KeepObject;

static PyTypeObject Keep_Type;
static char empty_byte;     /* xnd refuses NULL buffers; zero-size data points here */

static void
keep_dealloc(KeepObject *self)
{
    PyBuffer_Release(&self->values);
    if (self->has_validity) {
        PyBuffer_Release(&self->validity_buf);
    }
    Py_XDECREF(self->validity);
    PyObject_Free(self);
}

static int
keep_getbuf(KeepObject *self, Py_buffer *view, int flags)
{
    char *buf = self->values.len ? (char *)self->values.buf : &empty_byte;
    Py_ssize_t len = self->values.len ? self->values.len : 1;
    return PyBuffer_FillInfo(view, (PyObject *)self, buf, len,
                             self->values.readonly, flags);
}

static PyBufferProcs keep_as_buffer = {
    .bf_getbuffer = (getbufferproc)keep_getbuf,
    .bf_releasebuffer = NULL,
};

static PyTypeObject Keep_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "xdap._xndbuf.Keep",
    .tp_basicsize = sizeof(KeepObject),
    .tp_dealloc = (destructor)keep_dealloc,
    .tp_as_buffer = &keep_as_buffer,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Owner of the buffers behind an xnd container made by from_buffers.",
};

/* A new Keep holding a buffer of `values` (writable if it can be, else
   read-only) requested with `flags`; NULL with an exception. */
static KeepObject *
keep_values(PyObject *values, int flags)
{
    KeepObject *keep = PyObject_New(KeepObject, &Keep_Type);
    if (keep == NULL) {
        return NULL;
    }
    keep->validity = NULL;
    keep->has_validity = 0;
    if (PyObject_GetBuffer(values, &keep->values, flags | PyBUF_WRITABLE) < 0) {
        PyErr_Clear();
        if (PyObject_GetBuffer(values, &keep->values, flags) < 0) {
            keep->values.obj = NULL;
            PyObject_Free(keep);
            return NULL;
        }
    }
    return keep;
}


/* ------------------------------------------------------------------------ */
/* layout                                                                     */
/* ------------------------------------------------------------------------ */


/* A NumPy array over an xnd container's memory (``numpy_over``, with
   the container's Py_ssize_t shape and strides). */
static PyObject *
array_over(PyObject *owner, char *data, PyArray_Descr *descr, int ndim,
           const Py_ssize_t *shape, const Py_ssize_t *strides, int readonly)
{
    npy_intp dims[NDT_MAX_DIM], steps[NDT_MAX_DIM];
    for (int i = 0; i < ndim; i++) {
        dims[i] = (npy_intp)shape[i];
        steps[i] = (npy_intp)strides[i];
    }
    return numpy_over(owner, data, descr, ndim, dims, steps,
                      readonly ? 0 : NPY_ARRAY_WRITEABLE);
}

static PyObject *
layout(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *x;
    PyArray_Descr *descr;
    if (!PyArg_ParseTuple(args, "OO!", &x, &PyArrayDescr_Type, &descr)) {
        return NULL;
    }
    if (!Xnd_Check(x)) {
        PyErr_SetString(PyExc_TypeError, "layout() expects an xnd container");
        return NULL;
    }
    const xnd_t *xv = CONST_XND(x);
    const ndt_t *t = xv->type;
    const int readonly = xdap_is_readonly(x);
    Py_ssize_t shape[NDT_MAX_DIM], strides[NDT_MAX_DIM];
    PyObject *values = NULL, *validity = NULL, *offsets = NULL;
    int64_t nleaves;
    int ndim = 0;

    if (t->ndim > 0 && t->tag == VarDim) {
        /* Ragged: walk the var dims, collect offsets, count the leaves. */
        const ndt_t *u = t;
        int nvar = 0;
        if (xv->index != 0) {
            PyErr_SetString(PyExc_ValueError,
                "layout() needs a whole ragged container, not a view into one");
            return NULL;
        }
        offsets = PyTuple_New(t->ndim);
        if (offsets == NULL) {
            return NULL;
        }
        int64_t expect = 1;   /* number of lists at this level */
        while (u->ndim > 0) {
            if (u->tag != VarDim || u->Concrete.VarDim.nslices != 0) {
                PyErr_SetString(PyExc_ValueError,
                    "layout() needs unsliced var dimensions only");
                goto error;
            }
            const int32_t *off = u->Concrete.VarDim.offsets;
            const int32_t n = u->Concrete.VarDim.noffsets;
            if (n != expect + 1 || off[0] != 0) {
                PyErr_SetString(PyExc_ValueError,
                    "layout() needs a whole ragged container (outer offsets must span it)");
                goto error;
            }
            Py_ssize_t s = n, st = sizeof(int32_t);
            PyObject *o = array_over(x, (char *)off, int32_descr, 1, &s, &st, 1);
            if (o == NULL) {
                goto error;
            }
            PyTuple_SET_ITEM(offsets, nvar++, o);
            expect = off[n - 1];
            u = u->VarDim.type;
        }
        nleaves = expect;
        shape[0] = (Py_ssize_t)nleaves;
        strides[0] = (Py_ssize_t)u->datasize;
        ndim = 1;
        if (PyDataType_ELSIZE(descr) != u->datasize) {
            goto wrong_size;
        }
        values = array_over(x, xv->ptr, descr, 1, shape, strides, readonly);
        if (values == NULL) {
            goto error;
        }
        t = u;
    }
    else {
        /* Fixed: shape and strides from the steps, based at the linear index. */
        const ndt_t *u = t;
        nleaves = 1;
        int contiguous = 1;
        int64_t expect_step = 1;
        while (u->ndim > 0) {
            if (u->tag != FixedDim) {
                PyErr_SetString(PyExc_ValueError, "layout() needs fixed or var dimensions");
                return NULL;
            }
            shape[ndim] = (Py_ssize_t)u->FixedDim.shape;
            strides[ndim] = (Py_ssize_t)u->Concrete.FixedDim.step;  /* in items, scaled below */
            nleaves *= u->FixedDim.shape;
            ndim++;
            u = u->FixedDim.type;
        }
        for (int i = ndim - 1; i >= 0; i--) {
            if (shape[i] > 1 && strides[i] != expect_step) {
                contiguous = 0;
            }
            expect_step *= shape[i];
            strides[i] *= (Py_ssize_t)u->datasize;
        }
        if (ndt_is_optional(u) && (xv->index != 0 || !contiguous)) {
            PyErr_SetString(PyExc_ValueError,
                "layout() needs a whole C-contiguous container for optional data");
            return NULL;
        }
        if (PyDataType_ELSIZE(descr) != u->datasize) {
            PyErr_Format(PyExc_ValueError, "layout(): dtype of %zd bytes for %lld-byte items",
                         (Py_ssize_t)PyDataType_ELSIZE(descr), (long long)u->datasize);
            return NULL;
        }
        char *base = xv->ptr + xv->index * u->datasize;
        values = array_over(x, nleaves ? base : xv->ptr, descr, ndim, shape, strides, readonly);
        if (values == NULL) {
            return NULL;
        }
        offsets = PyTuple_New(0);
        if (offsets == NULL) {
            goto error;
        }
        t = u;
    }

    if (ndt_is_optional(t)) {
        Py_ssize_t nbytes = (Py_ssize_t)((nleaves + 7) / 8), one = 1;
        if (xv->bitmap.data == NULL && nbytes > 0) {
            PyErr_SetString(PyExc_ValueError, "optional container without a bitmap");
            goto error;
        }
        validity = array_over(x, nbytes ? (char *)xv->bitmap.data : &empty_byte, uint8_descr,
                              1, &nbytes, &one, readonly);
        if (validity == NULL) {
            goto error;
        }
    }
    else {
        validity = Py_None;
        Py_INCREF(validity);
    }
    return Py_BuildValue("(NNN)", values, validity, offsets);

wrong_size:
    PyErr_Format(PyExc_ValueError, "layout(): dtype of %zd bytes for %lld-byte items",
                 (Py_ssize_t)PyDataType_ELSIZE(descr), (long long)t->datasize);
error:
    Py_XDECREF(values);
    Py_XDECREF(validity);
    Py_XDECREF(offsets);
    return NULL;
}


/* ------------------------------------------------------------------------ */
/* from_buffers                                                               */
/* ------------------------------------------------------------------------ */

static ndt_t *
type_from_args(const char *type, PyObject *offsets, int64_t *nleaves)
{
    NDT_STATIC_CONTEXT(ctx);
    ndt_t *t = ndt_from_string(type, &ctx);
    if (t == NULL) {
        Ndt_SetError(&ctx);
        return NULL;
    }
    if (offsets == Py_None) {
        const ndt_t *u = t;
        *nleaves = 1;
        while (u->ndim > 0) {
            if (u->tag != FixedDim) {
                ndt_del(t);
                PyErr_Format(PyExc_ValueError,
                    "from_buffers: '%s' must have fixed dimensions only "
                    "(give ragged types as a dtype plus offsets)", type);
                return NULL;
            }
            *nleaves *= u->FixedDim.shape;
            u = u->FixedDim.type;
        }
        return t;
    }

    if (t->ndim != 0) {
        ndt_del(t);
        PyErr_Format(PyExc_ValueError,
            "from_buffers: with offsets, the type must be a dtype, not '%s'", type);
        return NULL;
    }
    PyObject *seq = PySequence_Fast(offsets, "from_buffers: offsets must be a sequence");
    if (seq == NULL) {
        ndt_del(t);
        return NULL;
    }
    Py_ssize_t nvar = PySequence_Fast_GET_SIZE(seq);
    if (nvar < 1 || nvar > NDT_MAX_DIM) {
        PyErr_Format(PyExc_ValueError,
            "from_buffers: need 1 to %d offsets arrays, got %zd", NDT_MAX_DIM, nvar);
        goto error;
    }
    /* Validate outermost first, then build innermost first. */
    Py_buffer bufs[NDT_MAX_DIM];
    int acquired = 0;
    int64_t lists = 1;
    for (Py_ssize_t i = 0; i < nvar; i++) {
        if (PyObject_GetBuffer(PySequence_Fast_GET_ITEM(seq, i), &bufs[i],
                               PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
            goto release;
        }
        acquired++;
        const char *f = bufs[i].format;
        if (bufs[i].itemsize != 4 || !(strcmp(f, "i") == 0 || strcmp(f, "<i") == 0 ||
                                       strcmp(f, "=i") == 0 || strcmp(f, "l") == 0)) {
            PyErr_Format(PyExc_TypeError,
                "from_buffers: offsets[%zd] must be int32, got format '%s'", i, f);
            goto release;
        }
        const int32_t *o = (const int32_t *)bufs[i].buf;
        Py_ssize_t n = bufs[i].len / 4;
        if (n != lists + 1) {
            PyErr_Format(PyExc_ValueError,
                "from_buffers: offsets[%zd] has %zd entries, expected %lld "
                "(one more than the lists at that level)", i, n, (long long)lists + 1);
            goto release;
        }
        if (o[0] != 0) {
            PyErr_Format(PyExc_ValueError,
                "from_buffers: offsets[%zd] must start at 0, got %d", i, o[0]);
            goto release;
        }
        for (Py_ssize_t k = 1; k < n; k++) {
            if (o[k] < o[k - 1]) {
                PyErr_Format(PyExc_ValueError,
                    "from_buffers: offsets[%zd] must be non-decreasing "
                    "(offsets[%zd][%zd]=%d < %d)", i, i, k, o[k], o[k - 1]);
                goto release;
            }
        }
        lists = o[n - 1];
    }
    *nleaves = lists;
    for (Py_ssize_t i = nvar - 1; i >= 0; i--) {
        NDT_STATIC_CONTEXT(vctx);
        Py_ssize_t n = bufs[i].len / 4;
        int32_t *copy = ndt_alloc(n, sizeof(int32_t));
        if (copy == NULL) {
            PyErr_NoMemory();
            goto release;
        }
        memcpy(copy, bufs[i].buf, n * sizeof(int32_t));
        t = ndt_var_dim(t, InternalOffsets, (int32_t)n, copy, 0, NULL, &vctx);
        if (t == NULL) {
            Ndt_SetError(&vctx);
            goto release_no_t;
        }
    }
    for (int i = 0; i < acquired; i++) {
        PyBuffer_Release(&bufs[i]);
    }
    Py_DECREF(seq);
    return t;

release:
    ndt_del(t);
release_no_t:
    for (int i = 0; i < acquired; i++) {
        PyBuffer_Release(&bufs[i]);
    }
    Py_DECREF(seq);
    return NULL;
error:
    ndt_del(t);
    Py_DECREF(seq);
    return NULL;
}

static PyObject *
from_buffers(PyObject *self, PyObject *args)
{
    (void)self;
    const char *type;
    PyObject *offsets, *values, *validity;
    int64_t nleaves = 0;
    if (!PyArg_ParseTuple(args, "sOOO", &type, &offsets, &values, &validity)) {
        return NULL;
    }
    ndt_t *t = type_from_args(type, offsets, &nleaves);
    if (t == NULL) {
        return NULL;
    }
    const ndt_t *leaf = t;
    while (leaf->ndim > 0) {
        leaf = leaf->tag == FixedDim ? leaf->FixedDim.type : leaf->VarDim.type;
    }
    const int64_t itemsize = leaf->datasize;
    const int optional = ndt_is_optional(leaf);

    KeepObject *keep = keep_values(values, PyBUF_C_CONTIGUOUS);
    if (keep == NULL) {
        ndt_del(t);
        return NULL;
    }
    PyObject *x = NULL;
    /* Fixed dims may carry steps (a field of a record array): the type's
       datasize is then the span of memory it covers. */
    const int64_t need = offsets == Py_None ? t->datasize : nleaves * itemsize;
    if (keep->values.len < need) {
        PyErr_Format(PyExc_ValueError,
            "from_buffers: values buffer has %zd bytes, type needs %lld",
            keep->values.len, (long long)need);
        goto fail;
    }
    if (optional) {
        if (validity == Py_None) {
            PyErr_SetString(PyExc_ValueError,
                "from_buffers: an optional dtype needs a validity bitmap");
            goto fail;
        }
        if (PyObject_GetBuffer(validity, &keep->validity_buf, PyBUF_C_CONTIGUOUS) < 0) {
            goto fail;
        }
        keep->has_validity = 1;
        Py_INCREF(validity);
        keep->validity = validity;
        if (keep->validity_buf.len < (nleaves + 7) / 8) {
            PyErr_Format(PyExc_ValueError,
                "from_buffers: validity bitmap has %zd bytes, %lld items need %lld",
                keep->validity_buf.len, (long long)nleaves, (long long)((nleaves + 7) / 8));
            goto fail;
        }
    }
    else if (validity != Py_None) {
        PyErr_Format(PyExc_ValueError,
            "from_buffers: validity given for non-optional type '%s'", type);
        goto fail;
    }

    uint8_t *bitmap = optional ? (uint8_t *)keep->validity_buf.buf : NULL;
    x = xdap_view_over(xnd_type_object, (PyObject *)keep, t, bitmap);   /* steals t */
    Py_DECREF(keep);
    return x;

fail:
    Py_XDECREF(keep);
    ndt_del(t);
    return NULL;
}


/* from_strided(leaf, values) -> an xnd container over a strided N-d view
   (a transpose, a slice with steps): fixed dims whose steps are the view's
   strides in items, based at its first element -- no copy.  The leaf must
   be a non-optional dtype of the view's itemsize, every stride a multiple
   of it (NumPy views of one array are). */
static PyObject *
from_strided(PyObject *self, PyObject *args)
{
    (void)self;
    const char *leaf;
    PyObject *values;
    if (!PyArg_ParseTuple(args, "sO", &leaf, &values)) {
        return NULL;
    }
    NDT_STATIC_CONTEXT(ctx);
    ndt_t *t = ndt_from_string(leaf, &ctx);
    if (t == NULL) {
        return Ndt_SetError(&ctx);
    }
    if (t->ndim != 0 || ndt_is_optional(t)) {
        ndt_del(t);
        PyErr_Format(PyExc_ValueError,
            "from_strided: the leaf must be a dtype without missing values, got '%s'", leaf);
        return NULL;
    }
    KeepObject *keep = keep_values(values, PyBUF_STRIDES);
    if (keep == NULL) {
        ndt_del(t);
        return NULL;
    }
    const Py_buffer *b = &keep->values;
    const Py_ssize_t itemsize = b->itemsize;
    if (itemsize != t->datasize || b->ndim < 1 || b->ndim > NDT_MAX_DIM) {
        PyErr_Format(PyExc_ValueError,
            "from_strided: a view of 1 to %d dims of %lld-byte items, got %d dims of %zd bytes",
            NDT_MAX_DIM, (long long)t->datasize, b->ndim, itemsize);
        ndt_del(t);
        Py_DECREF(keep);
        return NULL;
    }
    int64_t contiguous_step = 1;
    for (int i = b->ndim - 1; i >= 0; i--) {
        const Py_ssize_t stride = b->strides[i];
        int64_t step = contiguous_step;       /* a dim of one item: any step reads it */
        if (b->shape[i] > 1) {
            if (stride == 0 || stride % itemsize != 0) {
                PyErr_Format(PyExc_ValueError,
                    "from_strided: stride %zd of dim %d is not a nonzero multiple of the "
                    "%zd-byte item", stride, i, itemsize);
                ndt_del(t);
                Py_DECREF(keep);
                return NULL;
            }
            step = (int64_t)(stride / itemsize);
        }
        t = ndt_fixed_dim(t, (int64_t)b->shape[i], step, &ctx);     /* steals t */
        if (t == NULL) {
            Py_DECREF(keep);
            return Ndt_SetError(&ctx);
        }
        contiguous_step *= b->shape[i];
    }
    PyObject *x = xdap_view_over(xnd_type_object, (PyObject *)keep, t, NULL);   /* steals t */
    Py_DECREF(keep);
    return x;
}

static PyMethodDef methods[] = {
    {"layout", layout, METH_VARARGS,
     "layout(x, dtype) -> (values, validity, offsets): zero-copy NumPy views of a whole xnd "
     "container."},
    {"from_buffers", from_buffers, METH_VARARGS,
     "from_buffers(type, offsets, values, validity) -> xnd over existing memory (values not copied)."},
    {"from_strided", from_strided, METH_VARARGS,
     "from_strided(leaf, values) -> xnd over a strided N-d view (values not copied)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_xndbuf", "Zero-copy bridges between xnd and flat buffers.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__xndbuf(void)
{
    import_array();
    int32_descr = PyArray_DescrFromType(NPY_INT32);
    uint8_descr = PyArray_DescrFromType(NPY_UINT8);
    if (int32_descr == NULL || uint8_descr == NULL) {
        return NULL;
    }
    xnd_type_object = xdap_import_xnd_type();
    if (xnd_type_object == NULL) {
        return NULL;
    }
    if (PyType_Ready(&Keep_Type) < 0) {
        return NULL;
    }
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) {
        return NULL;
    }
    return m;
}
