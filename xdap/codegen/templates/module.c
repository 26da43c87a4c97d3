/* The module of a generated kernel library: its gumath table, filled once
   from xdap_kernels[], exposed with Gumath_AddFunctions and as the _table
   capsule.  xdap/codegen/emit.py fills in the @NAMES@. */
/* The table lives as long as the process: the gufunc objects that
   Gumath_AddFunctions creates, and users of the _table capsule, point into it. */
static gm_tbl_t *xdap_table = NULL;

static struct PyModuleDef xdap_module = {
    PyModuleDef_HEAD_INIT, @MODULE_NAME@, @MODULE_DOC@, -1, NULL,
    NULL, NULL, NULL, NULL
};

PyMODINIT_FUNC
PyInit_@MODULE@(void)
{
    NDT_STATIC_CONTEXT(ctx);
    PyObject *m = NULL;
    PyObject *capsule = NULL;

    if (import_gumath() < 0) {
        return NULL;
    }
    if (xdap_table == NULL) {
        gm_tbl_t *tbl = gm_tbl_new(&ctx);
        if (tbl == NULL) {
            PyErr_SetString(PyExc_MemoryError, ndt_context_msg(&ctx));
            ndt_err_clear(&ctx);
            return NULL;
        }
        for (const gm_kernel_init_t *k = xdap_kernels; k->name != NULL; k++) {
            if (gm_add_kernel(tbl, k, &ctx) < 0) {
                PyErr_Format(PyExc_ValueError, "@MODULE@: cannot add kernel %s with signature '%s': %s",
                             k->name, k->sig, ndt_context_msg(&ctx));
                ndt_err_clear(&ctx);
                gm_tbl_del(tbl);
                return NULL;
            }
        }
        xdap_table = tbl;
    }
    m = PyModule_Create(&xdap_module);
    if (m == NULL) {
        return NULL;
    }
    if (Gumath_AddFunctions(m, xdap_table) < 0) {
        goto error;
    }
    capsule = PyCapsule_New(xdap_table, @CAPSULE@, NULL);
    if (capsule == NULL || PyModule_AddObject(m, "_table", capsule) < 0) {
        Py_XDECREF(capsule);
        goto error;
    }
    /* The kernels whose outputs the Python function allocates (JSON; see
       xdap.codegen.emit.allocation_spec). */
    if (PyModule_AddStringConstant(m, "__xdap_allocating__", @ALLOCATING@) < 0) {
        goto error;
    }
    /* First-class xdap kernels: DistArrays, NumPy arrays and scalars too
       (xdap.kernels.library.wrap_module); without xdap, plain gumath. */
    PyObject *lib = PyImport_ImportModule("xdap.kernels.library");
    if (lib == NULL) {
        PyErr_Clear();
        return m;
    }
    PyObject *done = PyObject_CallMethod(lib, "wrap_module", "O", m);
    Py_DECREF(lib);
    if (done == NULL) {
        goto error;
    }
    Py_DECREF(done);
    return m;

error:
    Py_DECREF(m);
    return NULL;
}
