"""NumPy's ufunc protocol on a DistArray costs nothing measurable (1 rank).

    .venv/bin/python benchmarks/numpy_habits.py

``np.sin(a)``, ``a + 1`` and ``a * 0.5`` (an int64 array: NumPy's promotion
to float64) on 10^7 elements against calling ``xdap.kernels`` directly on
the same array, interleaved; then the per-call cost of ``np.sin(a)`` on 10
elements (the ``__array_ufunc__`` layer plus the kernel call) against
``xdap.kernels.sin(a)`` and against NumPy's own ``np.sin`` on 10 values.
"""
from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _harness  # noqa: E402
from _harness import COMM, run_main, say, verdict  # noqa: E402

import xdap  # noqa: E402
from xdap import kernels as K  # noqa: E402


def ms(t):
    return f"{1e3 * t:7.2f} ms"


def main():
    n = 10 ** 7
    a = xdap.from_global(np.linspace(0, 1, n), comm=COMM)
    i = xdap.from_global(np.arange(n, dtype=np.int64), comm=COMM)
    results = []
    say(f"1. 10^7 elements, {COMM.size} rank(s): NumPy protocol vs xdap.kernels, median")
    for label, via_numpy, direct in [
            ("np.sin(a)", lambda: np.sin(a), lambda: K.sin(a)),
            ("a + 1", lambda: a + 1, lambda: K.add(a, 1)),
            ("int64 a * 0.5", lambda: i * 0.5, lambda: K.multiply(i, 0.5))]:
        med, low, _ = _harness.bench([via_numpy, direct], budget=3.0, collective=False)
        ratio = med[0] / med[1]
        say(f"   {label:<14} {ms(med[0])}  kernels {ms(med[1])}  ratio {ratio:.3f}")
        results.append(f"RESULT numpy_protocol_{label.split('(')[0].replace(' ', '_')}="
                       f"{ratio:.3f} ({label} {ms(med[0]).strip()} / xdap.kernels "
                       f"{ms(med[1]).strip()}; target <= 1.1) {verdict(ratio <= 1.1)}")
    small = xdap.from_global(np.linspace(0, 1, 10), comm=COMM)
    x = np.linspace(0, 1, 10)
    med, _, _ = _harness.bench([lambda: np.sin(small), lambda: K.sin(small), lambda: np.sin(x)],
                               budget=2.0, collective=False, max_reps=200000)
    say(f"2. 10 elements: np.sin(a) {1e6 * med[0]:.2f} us, xdap.kernels.sin(a) "
        f"{1e6 * med[1]:.2f} us, NumPy np.sin(ndarray) {1e6 * med[2]:.2f} us")
    over = med[0] - med[1]
    results.append(f"RESULT numpy_protocol_small_call={1e6 * med[0]:.2f} us (np.sin(a) on 10 "
                   f"elements; the protocol layer adds {1e6 * over:.2f} us to xdap.kernels.sin; "
                   f"target < 5 us) {verdict(med[0] < 5e-6)}")
    for line in results:
        say(line)


if __name__ == "__main__":
    run_main(main)
