/* The "Running kernels on the GPU" tutorial's add kernel, written for the CPU:
   r[i] = x[i] + y[i] for i < n. */
#include "add.h"

void add(int n, float *x, float *y, float *r)
{
    for (int i = 0; i < n; i++) {
        r[i] = x[i] + y[i];
    }
}
