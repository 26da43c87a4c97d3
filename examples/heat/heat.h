/* One Jacobi step of the 2-D heat equation on a block with a one-cell rim:
   unew[i][j] = (u[i-1][j] + u[i+1][j] + u[i][j-1] + u[i][j+1]) / 4 inside;
   the rim (ghost cells or the fixed boundary) is left as it is. */
extern void jacobi(long n, long m, const double *u, double *unew);
