/* Kernels with core dimensions (tests/test_kernels_core_dims.py,
   benchmarks/user_kernels.py). */
double dot(int n, const double *x, const double *y);
double rowsum(int n, const double *x);
void matvec(int m, int n, const double *a, const double *x, double *y);
