#include <math.h>
#include "ops.h"

double hyp(double x, double y) { return sqrt(x * x + y * y); }
float hypf(float x, float y) { return sqrtf(x * x + y * y); }
int32_t iadd(int32_t a, int32_t b) { return a + b; }
void twice_inout(double *v) { *v *= 2; }
void neg_out(double x, double *r) { *r = -x; }

double dot(int n, const double *x, const double *y)
{
    double s = 0;
    for (int i = 0; i < n; i++) s += x[i] * y[i];
    return s;
}

void scale(int n, double a, double *x)
{
    for (int i = 0; i < n; i++) x[i] *= a;
}

void cumsum(int n, const double *x, double *out)
{
    double s = 0;
    for (int i = 0; i < n; i++) { s += x[i]; out[i] = s; }
}

/* z(n, m) = x(n) y(m)^T, row-major */
void outer(int n, int m, const double *x, const double *y, double *z)
{
    for (int i = 0; i < n; i++)
        for (int j = 0; j < m; j++) z[i * m + j] = x[i] * y[j];
}
