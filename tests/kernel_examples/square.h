/* Prototype read by `xdap kernel config square.h`. */
extern double square(double);
