/* Helpers shared by the kernels xdap.codegen generates: copied verbatim into
   every generated module (xdap/codegen/emit.py reads this file). */

/* The .cfg expressions (hidden arguments, initial values), computed with
   checks: an integer overflow or a zero divisor sets *bad instead of
   trapping (SIGFPE) or wrapping, and the kernel reports a ValueError.  A
   Strided loop, which has no error context, returns XDAP_EXPR_FAILED. */
#define XDAP_EXPR_FAILED 2

static GM_UNUSED inline int64_t
xdap_i_add(int64_t a, int64_t b, int *bad) { int64_t r; if (__builtin_add_overflow(a, b, &r)) *bad = 1; return r; }
static GM_UNUSED inline int64_t
xdap_i_sub(int64_t a, int64_t b, int *bad) { int64_t r; if (__builtin_sub_overflow(a, b, &r)) *bad = 1; return r; }
static GM_UNUSED inline int64_t
xdap_i_mul(int64_t a, int64_t b, int *bad) { int64_t r; if (__builtin_mul_overflow(a, b, &r)) *bad = 1; return r; }
static GM_UNUSED inline int64_t
xdap_i_neg(int64_t a, int *bad) { if (a == INT64_MIN) { *bad = 1; return 0; } return -a; }
static GM_UNUSED inline int64_t
xdap_i_div(int64_t a, int64_t b, int *bad)
{
    if (b == 0 || (a == INT64_MIN && b == -1)) { *bad = 1; return 0; }
    return a / b;
}
static GM_UNUSED inline int64_t
xdap_i_mod(int64_t a, int64_t b, int *bad)
{
    if (b == 0 || (a == INT64_MIN && b == -1)) { *bad = 1; return 0; }
    return a % b;
}
static GM_UNUSED inline double
xdap_f_div(double a, double b, int *bad) { if (b == 0.0) { *bad = 1; return 0.0; } return a / b; }
static GM_UNUSED inline double
xdap_f_mod(double a, double b, int *bad) { if (b == 0.0) { *bad = 1; return 0.0; } return fmod(a, b); }
/* View one argument of a vectorised Xnd call as a flat 1-D slice: its first
   element, its length and its byte step (0 for a single value). */
static GM_UNUSED int
xdap_slice(const xnd_t *x, char **ptr, intptr_t *n, intptr_t *step, ndt_context_t *ctx)
{
    const ndt_t *t = x->type;

    if (t->ndim == 0) {
        *ptr = x->ptr;
        *n = 1;
        *step = 0;
        return 0;
    }
    if (t->ndim == 1 && t->tag == FixedDim) {
        const int64_t itemsize = t->Concrete.FixedDim.itemsize;
        *ptr = x->ptr + x->index * itemsize;
        *n = (intptr_t)t->FixedDim.shape;
        *step = (intptr_t)(t->Concrete.FixedDim.step * itemsize);
        return 0;
    }
    if (t->ndim == 1 && t->tag == VarDim) {
        int64_t start, vstep;
        const int64_t shape = ndt_var_indices(&start, &vstep, t, x->index, ctx);
        const int64_t itemsize = t->Concrete.VarDim.itemsize;
        if (shape < 0) {
            return -1;
        }
        *ptr = x->ptr + start * itemsize;
        *n = (intptr_t)shape;
        *step = (intptr_t)(vstep * itemsize);
        return 0;
    }
    ndt_err_format(ctx, NDT_TypeError, "xdap kernel: expected a value or a 1-D slice");
    return -1;
}

/* Collect the slices of a vectorised Xnd call; single values broadcast. */
static GM_UNUSED int
xdap_slices(xnd_t stack[], int nargs, char **args, intptr_t *n, intptr_t *steps,
            ndt_context_t *ctx)
{
    intptr_t len = 1;

    *n = -1;
    for (int k = 0; k < nargs; k++) {
        if (xdap_slice(&stack[k], &args[k], &len, &steps[k], ctx) < 0) {
            return -1;
        }
        if (stack[k].type->ndim == 0) {
            continue;
        }
        if (*n < 0) {
            *n = len;
        }
        else if (len != *n) {
            ndt_err_format(ctx, NDT_ValueError, "xdap kernel: arguments have different lengths");
            return -1;
        }
    }
    if (*n < 0) {
        *n = 1;
    }
    return 0;
}

/* An array argument handed to a C function: contiguous data in the order
   the function wants (row-major, or column-major for a `fortran:`
   argument), copied from (and back to) the xnd view only when the view is
   laid out otherwise. */
typedef struct {
    char *data;
    char *base;
    int ndim;
    bool fortran;
    int64_t itemsize;
    int64_t nelem;
    int64_t shape[NDT_MAX_DIM];
    int64_t step[NDT_MAX_DIM];
    bool copied;
} xdap_buf_t;

static GM_UNUSED void
xdap_buf_copy(xdap_buf_t *b, bool to_view)
{
    int64_t idx[NDT_MAX_DIM] = {0};
    char *flat = b->data;

    if (b->nelem == 0) {
        return;
    }
    for (;;) {
        char *p = b->base;
        for (int d = 0; d < b->ndim; d++) {
            p += idx[d] * b->step[d];
        }
        if (to_view) {
            memcpy(p, flat, (size_t)b->itemsize);
        }
        else {
            memcpy(flat, p, (size_t)b->itemsize);
        }
        flat += b->itemsize;
        if (b->fortran) {       /* the first index runs fastest */
            int d = 0;
            while (d < b->ndim && ++idx[d] == b->shape[d]) {
                idx[d] = 0;
                d++;
            }
            if (d == b->ndim) {
                return;
            }
        }
        else {
            int d = b->ndim - 1;
            while (d >= 0 && ++idx[d] == b->shape[d]) {
                idx[d] = 0;
                d--;
            }
            if (d < 0) {
                return;
            }
        }
    }
}

/* fill: copy the view's values in when a copy is needed (inputs);
   strict: the caller's array itself or an error (xndtools' inout). */
static GM_UNUSED int
xdap_buf_get(xdap_buf_t *b, const xnd_t *x, int ndim, int64_t itemsize, bool fill,
             bool fortran, bool strict, const char *kernel, const char *name,
             ndt_context_t *ctx)
{
    const ndt_t *t = x->type;
    int64_t expected = itemsize;
    bool contiguous = true;

    b->copied = false;
    b->data = NULL;
    b->ndim = ndim;
    b->fortran = fortran;
    b->itemsize = itemsize;
    b->nelem = 1;
    b->base = x->ptr + x->index * itemsize;
    if (ndim == 1 && t->tag == VarDim) {   /* one ragged row */
        int64_t start, vstep;
        const int64_t shape = ndt_var_indices(&start, &vstep, t, x->index, ctx);
        if (shape < 0) {
            return -1;
        }
        b->base = x->ptr + start * itemsize;
        b->shape[0] = shape;
        b->step[0] = vstep * itemsize;
        b->nelem = shape;
        t = t->VarDim.type;
    }
    else for (int d = 0; d < ndim; d++) {
        if (t->tag != FixedDim) {
            ndt_err_format(ctx, NDT_TypeError,
                           "%s: array argument %s needs fixed dimensions", kernel, name);
            return -1;
        }
        b->shape[d] = t->FixedDim.shape;
        b->step[d] = t->Concrete.FixedDim.step * itemsize;
        b->nelem *= b->shape[d];
        t = t->FixedDim.type;
    }
    for (int k = 0; k < ndim; k++) {
        const int d = fortran ? k : ndim - 1 - k;
        if (b->shape[d] > 1 && b->step[d] != expected) {
            contiguous = false;
        }
        expected *= b->shape[d];
    }
    if (contiguous) {
        b->data = b->base;
        return 0;
    }
    if (strict) {
        ndt_err_format(ctx, NDT_ValueError,
                       "%s: argument %s must be %s-contiguous (inout passes the caller's array "
                       "itself; declare it inplace to work through a copy)",
                       kernel, name, fortran ? "F" : "C");
        return -1;
    }
    b->data = calloc((size_t)(b->nelem > 0 ? b->nelem : 1), (size_t)itemsize);
    if (b->data == NULL) {
        ndt_err_format(ctx, NDT_MemoryError, "out of memory");
        return -1;
    }
    b->copied = true;
    if (fill) {
        xdap_buf_copy(b, false);
    }
    return 0;
}

static GM_UNUSED void
xdap_buf_put(xdap_buf_t *b)
{
    if (b->copied) {
        xdap_buf_copy(b, true);
    }
}

static GM_UNUSED void
xdap_buf_free(xdap_buf_t *b)
{
    if (b->copied) {
        free(b->data);
        b->copied = false;
    }
}

/* A batched kernel's fast path: x's first ndim dims are fixed and laid out
   C-contiguously; *data is its first item, shape[] its dims. */
static GM_UNUSED bool
xdap_c_contiguous(const xnd_t *x, int ndim, int64_t itemsize, char **data, int64_t *shape)
{
    const ndt_t *t = x->type;
    int64_t steps[NDT_MAX_DIM];
    int64_t expected = itemsize;

    for (int d = 0; d < ndim; d++) {
        if (t->tag != FixedDim) {
            return false;
        }
        shape[d] = t->FixedDim.shape;
        steps[d] = t->Concrete.FixedDim.step * itemsize;
        t = t->FixedDim.type;
    }
    for (int d = ndim - 1; d >= 0; d--) {
        if (shape[d] > 1 && steps[d] != expected) {
            return false;
        }
        expected *= shape[d];
    }
    *data = x->ptr + x->index * itemsize;
    return true;
}
