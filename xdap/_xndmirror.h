/*
 * xdap/_xndmirror.h -- what xdap's C extensions (_xndbuf, _apply) share
 * about the pinned xnd 0.2.0.dev3: the private object layouts they mirror,
 * and the one way they make an xnd container over memory another Python
 * object owns.  Include after Python.h, ndtypes.h, pyndtypes.h, xnd.h and
 * pyxnd.h; every definition is static (one copy per extension).
 */
#ifndef XDAP_XNDMIRROR_H
#define XDAP_XNDMIRROR_H

/* Mirrors of xnd 0.2.0.dev3's private object layouts (python/xnd/_xnd.c). */
typedef struct {
    PyObject_HEAD
    PyObject *type;
    xnd_master_t *xnd;
    Py_buffer *view;
} MirrorMemoryBlock;

typedef struct {
    PyObject_HEAD
    MirrorMemoryBlock *mblock;
    PyObject *type;
    xnd_t xnd;
} MirrorXnd;

/* Is x (an xnd container) a view of a read-only buffer? */
static inline int
xdap_is_readonly(PyObject *x)
{
    MirrorMemoryBlock *mb = ((MirrorXnd *)x)->mblock;
    return mb != NULL && mb->view != NULL && mb->view->readonly;
}

/* Module init: import the ndtypes and xnd C APIs; returns a new reference
   to the xnd.xnd type, or NULL with an exception set. */
static inline PyObject *
xdap_import_xnd_type(void)
{
    if (import_ndtypes() < 0 || import_xnd() < 0) {
        return NULL;
    }
    PyObject *xnd_module = PyImport_ImportModule("xnd");
    if (xnd_module == NULL) {
        return NULL;
    }
    PyObject *xnd_type = PyObject_GetAttrString(xnd_module, "xnd");
    Py_DECREF(xnd_module);
    return xnd_type;
}

/* An xnd container of type t (stolen, also on error) over the buffer that
   `owner` exports (the container keeps owner alive; the caller keeps its own
   reference), with `bitmap` (or NULL) as the leaves' validity -- memory that
   owner must keep alive too.  This is the route NumPy arrays take into xnd
   (xnd.from_buffer), retyped without copying. */
static inline PyObject *
xdap_view_over(PyObject *xnd_type, PyObject *owner, ndt_t *t, uint8_t *bitmap)
{
    PyObject *x0 = PyObject_CallMethod(xnd_type, "from_buffer", "O", owner);
    if (x0 == NULL) {
        ndt_del(t);
        return NULL;
    }
    PyObject *x = Xnd_ViewMoveNdt(x0, t);   /* steals t */
    Py_DECREF(x0);
    if (x != NULL && bitmap != NULL) {
        MirrorXnd *mx = (MirrorXnd *)x;
        mx->xnd.bitmap.data = bitmap;
        mx->xnd.bitmap.size = 0;
        mx->xnd.bitmap.next = NULL;
    }
    return x;
}

#endif /* XDAP_XNDMIRROR_H */
