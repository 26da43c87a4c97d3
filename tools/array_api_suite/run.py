"""Run the Array API standard's test suite on xdap, on N MPI ranks.

    .venv/bin/python tools/array_api_suite/run.py SUITE [-n RANKS] [--max-examples 100]
                     [--extra-path DIR] [--out DIR] [--timeout SECONDS] [--split]
                     [--layout default|split|cyclic|block-cyclic|grid|empty|random]
                     [PYTEST ARGS]

PYTEST ARGS that name test files (``array_api_tests/test_set_functions.py``)
run those instead of the whole suite.

SUITE is a checkout of data-apis/array-api-tests (with its ``array-api``
submodule); it is not on the package index, so this is a private run.  The
suite also needs ``ndindex`` (and ``pytest-json-report``): install them into
a directory of their own (``pip install --target DIR ndindex
pytest-json-report``) and pass ``--extra-path DIR``.

Every rank runs the whole suite (derandomized: the same examples), with
``xdap_suite_plugin`` (same draws on every rank; outcomes written as they
come), its log in ``OUT/rank.<r>.log``.  At the end: each rank's counts,
whether the ranks agree test by test, and the failures -- docs/array_api.md
lists the ones left, with their reasons.  A hang is the launch outliving
``--timeout``; the outcome files then show where each rank stopped.
"""
import argparse
import collections
import json
import os
import pathlib
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("suite", type=pathlib.Path)
    ap.add_argument("-n", "--ranks", type=int, default=1)
    ap.add_argument("--max-examples", type=int, default=100)
    ap.add_argument("--extra-path", default="")
    ap.add_argument("--out", type=pathlib.Path, default=None)
    ap.add_argument("--timeout", type=int, default=3600)
    ap.add_argument("--split", action="store_true",
                    help="spread every array of 2+ elements over all ranks (test-only); "
                         "--layout split")
    ap.add_argument("--layout", default=None,
                    choices=("default", "split", "cyclic", "block-cyclic", "grid", "empty",
                             "random"),
                    help="how the creation functions lay out every array of 2+ elements "
                         "(test-only; xdap_suite_plugin.py says each)")
    ap.add_argument("pytest_args", nargs="*")
    args = ap.parse_intermixed_args(argv)
    out = args.out or pathlib.Path(tempfile.mkdtemp(prefix="xdap-array-api-suite-"))
    out.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, ARRAY_API_TESTS_MODULE="xdap.array_api", XDAP_SUITE_OUT=str(out),
               XDAP_SUITE_LAYOUT=args.layout or ("split" if args.split else "default"),
               PYTHONPATH=os.pathsep.join(p for p in (str(HERE), args.extra_path,
                                                       str(ROOT)) if p))
    # test paths among the pytest args run instead of the whole suite
    paths = [a for a in args.pytest_args if a.startswith("array_api_tests")]
    pytest = [sys.executable, "-m", "pytest", *(paths or ["array_api_tests"]), "-q", "-rf",
              "-p", "no:cacheprovider", "-p", "xdap_suite_plugin",
              "--max-examples", str(args.max_examples), "--derandomize", "--disable-deadline",
              *[a for a in args.pytest_args if a not in paths]]
    # each rank's output to its own log (a shell per rank reads its rank)
    line = " ".join(f"'{a}'" for a in pytest)
    rank = "${PMI_RANK:-${OMPI_COMM_WORLD_RANK:-0}}"
    shell = f'exec {line} > "{out}/rank.{rank}.log" 2>&1'
    mpiexec = os.environ.get("XDAP_MPIEXEC", str(pathlib.Path(sys.executable).parent / "mpiexec"))
    try:
        code = subprocess.run([*mpiexec.split(), "-n", str(args.ranks), "sh", "-c", shell],
                              cwd=args.suite, env=env, timeout=args.timeout).returncode
        hung = False
    except subprocess.TimeoutExpired:
        code, hung = None, True
    return report(out, args.ranks, hung, code)


def outcomes(path: pathlib.Path) -> dict:
    """{test id: (outcome, first error line)} from one rank's outcome file."""
    got, last = {}, None
    for line in path.read_text().splitlines() if path.exists() else []:
        if line.startswith("    "):
            if last and not got[last][1]:
                got[last] = (got[last][0], line.strip())
            continue
        outcome, test = line.split(" ", 1)
        got[test], last = (outcome, ""), test
    return got


def report(out, ranks, hung, code) -> int:
    per_rank = [outcomes(out / f"outcomes.{r}") for r in range(ranks)]
    for r, got in enumerate(per_rank):
        counts = collections.Counter(o for o, _ in got.values())
        print(f"rank {r}: " + ", ".join(f"{n} {o}" for o, n in sorted(counts.items())))
    tests = set().union(*per_rank)
    differ = sorted(t for t in tests if len({got.get(t, ("missing",))[0] for got in per_rank}) > 1)
    print(f"the ranks agree on {len(tests) - len(differ)} of {len(tests)} tests"
          + (f"; they differ on: {', '.join(differ)}" if differ else ""))
    failed = sorted(t for t in tests if per_rank[0].get(t, ("",))[0] == "failed")
    counted = [t for t in tests if per_rank[0].get(t, ("",))[0] in ("passed", "failed")]
    passed = sum(per_rank[0][t][0] == "passed" for t in counted)
    print(f"rank 0: {passed} of {len(counted)} tests pass "
          f"({100.0 * passed / max(1, len(counted)):.1f}%)")
    arrays = [json.loads((out / f"arrays.{r}").read_text()) if (out / f"arrays.{r}").exists()
              else None for r in range(ranks)]
    laid = {}
    if arrays[0]:
        laid = arrays[0].pop("layouts", {})
        total = sum(arrays[0].values())
        print(f"arrays the creation functions handed out (rank 0): {total}; " + ", ".join(
            f"{k} {v} ({100.0 * v / max(1, total):.0f}%)" for k, v in arrays[0].items()))
        if laid:
            print("laid out (rank 0): " + ", ".join(f"{k} {v}" for k, v in sorted(laid.items())))
    skipped = sum(per_rank[0][t][0] == "skipped" for t in tests)
    (out / "summary.json").write_text(json.dumps({
        "ranks": ranks, "tests": len(tests), "passed": passed, "failed": len(failed),
        "skipped": skipped, "agree": len(tests) - len(differ), "differ": differ, "hung": hung,
        "failures": {t: per_rank[0][t][1][:200] for t in failed}, "arrays": arrays[0],
        "layouts": laid}))
    for t in failed:
        print(f"  FAILED {t}\n         {per_rank[0][t][1][:200]}")
    if hung:
        print(f"HANG: the launch outlived its timeout; each rank's last outcome is in {out}")
    print(f"logs: {out}")
    return 1 if hung or differ else 0


if __name__ == "__main__":
    sys.exit(main())
