"""The Array API suite at depth (``make conformance SUITE=...``): the whole
suite, extensions included, on 2 and 3 ranks, in every layout the plugin
knows (``xdap_suite_plugin.LAYOUTS`` but the default), at 1,000 examples
a test -- one ``run.py`` launch each -- and one table: passes per layout
and rank count, and whether the ranks agreed on every test.

    .venv/bin/python tools/array_api_suite/conformance.py SUITE [--max-examples 1000]
        [--ranks 2,3] [--layouts split,cyclic,...] [--docs] [PYTEST ARGS]

SUITE is a checkout of data-apis/array-api-tests with its ``array-api``
submodule (not on the package index: a private run).  What the suite needs
besides pytest (``ndindex``, ``pytest-json-report``) is installed into
``build/array-api-suite-lib`` on the first run.  Too long for ``make
test`` (hours on 2 cores at 1,000 examples); PYTEST ARGS naming test files
run those alone.  ``--docs`` writes the table into docs/array_api.md.
Exits 1 where a launch hung or the ranks disagreed.
"""
import argparse
import datetime
import json
import pathlib
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
LIB = ROOT / "build" / "array-api-suite-lib"
NEEDS = ("ndindex==1.10.1", "pytest-json-report==1.5.0")
LAYOUTS = ("split", "cyclic", "block-cyclic", "grid", "empty", "random")
BEGIN, END = "<!-- conformance: tools/array_api_suite/conformance.py --docs -->", \
    "<!-- /conformance -->"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("suite", type=pathlib.Path)
    ap.add_argument("--max-examples", type=int, default=1000)
    ap.add_argument("--ranks", default="2,3")
    ap.add_argument("--layouts", default=",".join(LAYOUTS))
    ap.add_argument("--timeout", type=int, default=6 * 3600)
    ap.add_argument("--docs", action="store_true")
    ap.add_argument("pytest_args", nargs="*")
    args = ap.parse_intermixed_args(argv)
    if not (args.suite / "array_api_tests").is_dir() or \
            not (args.suite / "array-api" / "src").is_dir():
        print(f"conformance: {args.suite} is not a checkout of data-apis/array-api-tests with "
              "its array-api submodule (git clone --recursive "
              "https://github.com/data-apis/array-api-tests)")
        return 2
    if not (LIB / ".pins").exists() or (LIB / ".pins").read_text() != " ".join(NEEDS):
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--target", str(LIB),
                        *NEEDS], check=True)
        (LIB / ".pins").write_text(" ".join(NEEDS))
    rows, bad = [], False
    for layout in args.layouts.split(","):
        for ranks in (int(r) for r in args.ranks.split(",")):
            out = ROOT / "build" / "conformance" / f"{layout}-{ranks}"
            subprocess.run([sys.executable, str(HERE / "run.py"), str(args.suite), "-n", str(ranks),
                            "--max-examples", str(args.max_examples), "--layout", layout,
                            "--extra-path", str(LIB), "--out", str(out), "--timeout",
                            str(args.timeout), *args.pytest_args])
            got = out / "summary.json"
            s = json.loads(got.read_text()) if got.exists() else None
            rows.append((layout, ranks, s))
            bad = bad or s is None or s["hung"] or bool(s["differ"])
    text = table(rows, args)
    print(text)
    if args.docs:
        write_docs(text)
    return 1 if bad else 0


def table(rows, args) -> str:
    lines = [f"{args.max_examples} examples a test"
             + (f", {' '.join(args.pytest_args)}" if args.pytest_args else ", the whole suite")
             + f" (run {datetime.date.today().isoformat()}):", "",
             "| layout | ranks | arrays laid out so | passed | failed | skipped | ranks agree | "
             "failures |", "|---|---|---|---|---|---|---|---|"]
    for layout, ranks, s in rows:
        if s is None:
            lines.append(f"| {layout} | {ranks} | -- | no result (see build/conformance) "
                         "| | | | |")
            continue
        laid = sum(s["layouts"].values()) if layout != "random" else \
            ", ".join(f"{k} {v}" for k, v in sorted(s["layouts"].items()))
        agree = f"on all {s['tests']}" if not s["differ"] else \
            f"{s['agree']} of {s['tests']} (differ: {', '.join(s['differ'])})"
        failures = "; ".join(t.split("::")[-1] for t in s["failures"]) or "--"
        lines.append(f"| {layout} | {ranks} | {laid} | {s['passed']} | {s['failed']} | "
                     f"{s['skipped']} | {agree}{' -- HANG' if s['hung'] else ''} | {failures} |")
    return "\n".join(lines)


def write_docs(text) -> None:
    path = ROOT / "docs" / "array_api.md"
    doc = path.read_text()
    block = f"{BEGIN}\n{text}\n{END}"
    if BEGIN in doc:
        head, rest = doc.split(BEGIN, 1)
        doc = head + block + rest.split(END, 1)[1]
    else:
        anchor = "### The failures left, and why"
        doc = doc.replace(anchor, "### At depth: every layout (`make conformance`)\n\n" + block +
                          "\n\n" + anchor, 1)
    path.write_text(doc)


if __name__ == "__main__":
    sys.exit(main())
