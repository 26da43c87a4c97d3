/* Functions exercising every argument role of the generator (tests). */
#include <stdint.h>

double hyp(double x, double y);
float hypf(float x, float y);
int32_t iadd(int32_t a, int32_t b);
void twice_inout(double *v);
void neg_out(double x, double *r);
double dot(int n, const double *x, const double *y);
void scale(int n, double a, double *x);
void cumsum(int n, const double *x, double *out);
void outer(int n, int m, const double *x, const double *y, double *z);
