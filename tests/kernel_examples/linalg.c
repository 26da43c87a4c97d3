#include "linalg.h"

/* Four partial sums: the additions of one chain wait on each other (a
   floating-point sum cannot be reordered by the compiler), four chains
   keep the adder busy -- what NumPy's own sum and einsum do. */
double dot(int n, const double *x, const double *y)
{
    double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
    int i = 0;
    for (; i + 4 <= n; i += 4) {
        s0 += x[i] * y[i];
        s1 += x[i + 1] * y[i + 1];
        s2 += x[i + 2] * y[i + 2];
        s3 += x[i + 3] * y[i + 3];
    }
    for (; i < n; i++)
        s0 += x[i] * y[i];
    return (s0 + s1) + (s2 + s3);
}

double rowsum(int n, const double *x)
{
    double s = 0.0;
    for (int i = 0; i < n; i++)
        s += x[i];
    return s;
}

/* y = A x, A row-major m x n */
void matvec(int m, int n, const double *a, const double *x, double *y)
{
    for (int i = 0; i < m; i++)
        y[i] = dot(n, a + (long)i * n, x);
}
