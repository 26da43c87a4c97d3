/* The xndtools tutorial's example: a plain C function to turn into a kernel. */
#include "square.h"

double square(double a)
{
    return a * a;
}
