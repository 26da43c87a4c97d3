extern void add(int n, float *x, float *y, float *r);
