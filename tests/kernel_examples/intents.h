/* One function per intent combination (tests/test_codegen_intents.py). */
#include <stdint.h>
void p_input(int64_t *a);
void p_inplace(int64_t *a);
void p_inout(int64_t *a);
void p_input_output(int64_t *a);
void p_inplace_output(int64_t *a);
void p_inout_output(int64_t *a);
int64_t v_inplace(int64_t a);
void v_input_output(int64_t a);
void arr_input(int n, double *x);
void arr_inplace(int n, double *x);
void arr_input_output(int n, double *x);
void arr_inplace_output(int n, double *x);
