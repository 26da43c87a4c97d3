#include "linalg.h"

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
    for (int i = 0; i < m; i++) {
        double s = 0.0;
        for (int j = 0; j < n; j++)
            s += a[(long)i * n + j] * x[j];
        y[i] = s;
    }
}
