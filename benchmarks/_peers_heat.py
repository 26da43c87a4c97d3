"""heat's side of ``benchmarks/peers.py``: the distributed-NumPy rows
(sort, unique, transpose, reshape, concatenate, argsort, percentile) in
heat's own idiom, in heat's venv (``.venv-heat``, ``tools/peers_env.sh``),
launched by ``peers.py`` under the same ``mpiexec`` right after xdap's side.
Not a benchmark itself (``make bench`` skips files starting with ``_``).

    mpiexec -n P .venv-heat/bin/python benchmarks/_peers_heat.py OUT.jsonl SIZES.json

The same inputs as xdap's side (the same generators a rank), the same
layouts: 1-D arrays split along axis 0, a (1000 P, 1000) array in row
blocks.  heat has no ``argsort``: its ``sort`` returns the indices too.
"""
from __future__ import annotations

import json
import os
import sys

import numpy as np

# heat itself, not benchmarks/heat.py (the heat equation's benchmark, in this
# script's folder, which Python puts first on the path)
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path = [p for p in sys.path if os.path.abspath(p or ".") != HERE]
import heat as ht  # noqa: E402
import torch  # noqa: E402

sys.path.insert(0, HERE)
from _harness import COMM, P, RANK, bench  # noqa: E402


def main():
    out = sys.argv[1]
    with open(sys.argv[2]) as f:
        sizes = json.load(f)
    n = sizes["heat"]
    rng = np.random.default_rng(11 + RANK)          # xdap's side draws the same
    comm = ht.MPICommunication(COMM)
    mine = lambda v: ht.array(torch.from_numpy(v), is_split=0, comm=comm)   # noqa: E731
    s, t = mine(rng.random(n)), mine(rng.random(n))
    ints = mine(rng.integers(0, 1000, n))
    m = mine(rng.random((1000, 1000)))
    rows = []
    for name, fn in (("sort", lambda: ht.sort(s)), ("unique", lambda: ht.unique(ints)),
                     ("a.T", lambda: m.T), ("reshape", lambda: ht.reshape(m, (2000 * P, 500))),
                     ("concat", lambda: ht.concatenate((s, t), axis=0)),
                     ("argsort", lambda: ht.sort(s)[1]),
                     ("percentile", lambda: ht.percentile(s, 90))):
        got = fn()
        check = float(got.sum()) if name == "unique" else float(got) if name == "percentile" \
            else None                   # values both sides compute, whatever the layout
        med, _, _ = bench([fn], budget=1.0, min_reps=5, block=1)
        rows.append({"work": name, "impl": "heat", "ranks": P, "seconds": float(med[0]),
                     "check": check})
    if RANK == 0:
        with open(out, "a") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")
            f.write(json.dumps({"versions": {"heat": f"{ht.__version__} (torch "
                                                     f"{torch.__version__})"}}) + "\n")


if __name__ == "__main__":
    main()
    COMM.Barrier()
