#include "intents.h"

/* every pointer function adds 10 through its pointer */
void p_input(int64_t *a) { *a += 10; }
void p_inplace(int64_t *a) { *a += 10; }
void p_inout(int64_t *a) { *a += 10; }
void p_input_output(int64_t *a) { *a += 10; }
void p_inplace_output(int64_t *a) { *a += 10; }
void p_inout_output(int64_t *a) { *a += 10; }

/* a by-value C scalar cannot be changed in place */
int64_t v_inplace(int64_t a) { a += 5; return a + 15; }
void v_input_output(int64_t a) { (void)a; }

/* every array function doubles its array */
static void twice(int n, double *x) { for (int i = 0; i < n; i++) x[i] *= 2; }
void arr_input(int n, double *x) { twice(n, x); }
void arr_inplace(int n, double *x) { twice(n, x); }
void arr_input_output(int n, double *x) { twice(n, x); }
void arr_inplace_output(int n, double *x) { twice(n, x); }
