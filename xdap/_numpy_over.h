/*
 * _numpy_over.h -- a NumPy array over memory someone else owns, shared by
 * xdap/_xndbuf.c (views of xnd containers) and xdap/_apply.c (the values of
 * a result built in C).  Include after <numpy/arrayobject.h>.
 */
#ifndef XDAP_NUMPY_OVER_H
#define XDAP_NUMPY_OVER_H

/* NumPy allocates for NULL data: arrays of no elements point here. */
static char numpy_over_nothing;

/* A NumPy array of `descr` (a new reference is taken) with `ndim` dims
   `dims` and byte `strides` (NULL: C order) over `data`, owned by `owner`
   (kept alive as the array's base): no copy. `flags`: NumPy's, e.g.
   NPY_ARRAY_WRITEABLE or NPY_ARRAY_CARRAY.  NULL with an exception on
   failure. */
static PyObject *
numpy_over(PyObject *owner, char *data, PyArray_Descr *descr, int ndim, npy_intp *dims,
           npy_intp *strides, int flags)
{
    Py_INCREF(descr);
    PyObject *a = PyArray_NewFromDescr(&PyArray_Type, descr, ndim, dims, strides,
                                       data != NULL ? data : &numpy_over_nothing, flags, NULL);
    if (a == NULL) {
        return NULL;
    }
    Py_INCREF(owner);
    if (PyArray_SetBaseObject((PyArrayObject *)a, owner) < 0) {
        Py_DECREF(a);
        return NULL;
    }
    return a;
}

#endif
