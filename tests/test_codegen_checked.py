"""A .cfg file is untrusted input at run time too: a hidden argument's or
an initial value's expression that divides by zero, overflows or does not
fit its C type is a clear ValueError before the C function runs -- never a
signal that kills the rank (integer division by zero is SIGFPE in C).
And a .cfg that is not UTF-8 is a config error."""
import re

import pytest
from xnd import xnd

from helpers import import_module_at
from xdap.codegen import ConfigError, build, load_config

HEADER = """
#include <stdint.h>
double head_sum(int64_t n, const double *x, int64_t k, int64_t m);
double grown(int64_t n, const double *x, int64_t k, int64_t m);
double narrow(int64_t n, const double *x, int64_t k, int m);
double ratio(double x, int64_t k, int64_t q);
double fratio(double x, double s, int64_t q);
"""
SOURCE = """
#include "checked.h"
double head_sum(int64_t n, const double *x, int64_t k, int64_t m)
{ double s = 0; (void)k; for (int64_t i = 0; i < m && i < n; i++) s += x[i]; return s; }
double grown(int64_t n, const double *x, int64_t k, int64_t m)
{ (void)n; (void)x; (void)k; return (double)m; }
double narrow(int64_t n, const double *x, int64_t k, int m)
{ (void)n; (void)x; (void)k; return (double)m; }
double ratio(double x, int64_t k, int64_t q) { (void)k; return x * (double)q; }
double fratio(double x, double s, int64_t q) { (void)s; return x + (double)q; }
"""
CONFIG = """
[MODULE xk_checked]
includes = checked.h
sources = checked.c

[KERNEL head_sum]
prototypes = double head_sum(int64_t n, double *x, int64_t k, int64_t m);
input = x(n), k
hide = n = len(x), m = len(x) / k

[KERNEL grown]
prototypes = double grown(int64_t n, double *x, int64_t k, int64_t m);
input = x(n), k
hide = n = len(x), m = len(x) * k + 1

[KERNEL narrow]
prototypes = double narrow(int64_t n, double *x, int64_t k, int m);
input = x(n), k
hide = n = len(x), m = len(x) * k

[KERNEL ratio]
prototypes = double ratio(double x, int64_t k, int64_t q);
input = x, k
hide = q = 100 % k

[KERNEL fratio]
prototypes = double fratio(double x, double s, int64_t q);
input = x, s
hide = q = 10 / s
"""


@pytest.fixture(scope="module")
def m(tmp_path_factory):
    d = tmp_path_factory.mktemp("checked")
    (d / "checked.h").write_text(HEADER)
    (d / "checked.c").write_text(SOURCE)
    (d / "checked.cfg").write_text(CONFIG)
    return import_module_at(build(d / "checked.cfg", d / "out"), "xk_checked")


X = [1.0, 2.0, 3.0, 4.0]


def test_values_that_are_fine_compute(m):
    assert m.head_sum(xnd(X), xnd(2)).value == 3.0
    assert m.grown(xnd(X), xnd(3)).value == 13.0
    assert m.narrow(xnd(X), xnd(5)).value == 20.0
    assert m.ratio(xnd([1.0, 2.0]), xnd(7)).value == [2.0, 4.0]
    assert m.fratio(xnd([1.0]), xnd(5.0)).value == [3.0]


@pytest.mark.parametrize("call, what", [
    (lambda m: m.head_sum(xnd(X), xnd(0)), "m = len(x) / k divides by zero or overflows"),
    (lambda m: m.grown(xnd(X), xnd(2 ** 62)), "m = len(x) * k + 1 divides by zero or overflows"),
    (lambda m: m.narrow(xnd(X), xnd(2 ** 40)), "m = len(x) * k is 4398046511104, not a value of C type int"),
    (lambda m: m.ratio(xnd([1.0, 2.0]), xnd(0)), "divides by zero, overflows or is out of range"),
    (lambda m: m.fratio(xnd([1.0]), xnd(0.0)), "divides by zero, overflows or is out of range"),
    (lambda m: m.fratio(xnd([1.0]), xnd(1e-300)), "divides by zero, overflows or is out of range"),
    (lambda m: m.fratio(xnd([1.0]), xnd(4.0)), "divides by zero, overflows or is out of range"),
])
def test_a_bad_expression_is_a_value_error_not_a_signal(m, call, what):
    with pytest.raises(ValueError, match=re.escape(what)):
        call(m)


@pytest.mark.parametrize("where", ["every rank", "one rank"])
def test_on_distarrays_the_value_error_comes_through(m, where):
    """On a DistArray the kernel runs through xdap's fast path (the loop
    itself): its refusal is the same ValueError."""
    import numpy as np
    import xdap
    from mpi4py import MPI
    a = xdap.from_global(np.arange(4.0), comm=MPI.COMM_SELF)
    k = xdap.from_global(np.array([3, 0, 5, 7]) if where == "one rank" else np.zeros(4, np.int64),
                         comm=MPI.COMM_SELF)
    with pytest.raises(ValueError, match="divides by zero"):
        xdap.kernels.apply(m.ratio, a, k)
    ok = xdap.from_global(np.array([3, 1, 5, 7]), comm=MPI.COMM_SELF)
    np.testing.assert_array_equal(xdap.kernels.apply(m.ratio, a, ok).to_numpy(),
                                  np.arange(4.0) * (100 % np.array([3, 1, 5, 7])))


def test_a_config_that_is_not_utf8_is_a_config_error(tmp_path):
    path = tmp_path / "latin1.cfg"
    path.write_bytes("[MODULE m]\n# caf\xe9\n".encode("latin-1"))
    with pytest.raises(ConfigError, match="not UTF-8"):
        load_config(path)
