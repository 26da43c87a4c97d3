/* Kernels with core dimensions (tests/test_kernels_core_dims.py). */
double rowsum(int n, const double *x);
void matvec(int m, int n, const double *a, const double *x, double *y);
