"""xdap as pip installs it: pyproject.toml's metadata against what the suite
runs, optional dependencies that name their extra, extensions that find the
stack relative to themselves, and the stack patches for Python 3.11+.

The install itself -- wheels for Python 3.11, 3.12 and 3.13, pip into fresh
environments, the README's example on 2 ranks -- is `make install-check`
(tools/install_check.sh), which CI runs after the suite."""
import ast
import os
import pathlib
import re
import subprocess
import sys
import tomllib
from importlib.metadata import PackageNotFoundError, version

import pytest
from packaging.requirements import Requirement

import xdap
from xdap.optional import EXTRAS

ROOT = pathlib.Path(__file__).resolve().parent.parent
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def requirements(extra=None):
    """{name: Requirement} of the core, or of one extra (its own lines)."""
    lines = PROJECT["dependencies"] if extra is None else PROJECT["optional-dependencies"][extra]
    reqs = [Requirement(line) for line in lines]
    return {r.name: r for r in reqs if r.name != "xdap"}


def test_the_declared_ranges_hold_what_the_suite_runs():
    """Every range pyproject.toml declares admits the version requirements.txt
    pins and this suite runs, and the stack is pinned to the built one. (The
    `mpich` extra is absent under MPI=system: the site's MPI stands in.)"""
    declared = dict(requirements())
    for extra in PROJECT["optional-dependencies"]:
        declared.update(requirements(extra))
    for name, req in declared.items():
        try:
            installed = version(name)
        except PackageNotFoundError:
            assert name == "mpich" and os.environ.get("XDAP_MPI") == "system", name
            continue
        assert req.specifier.contains(installed, prereleases=True), (name, str(req), installed)
    for name in ("ndtypes", "xnd", "gumath"):
        assert str(declared[name].specifier) == "==0.2.0.dev3"
    assert PROJECT["requires-python"] == ">=3.11,<3.14"
    assert {"mesh", "store", "arrow", "awkward", "pictures", "mpich", "test"} <= set(
        PROJECT["optional-dependencies"])
    # MPI is the user's: no MPI library outside the mpich extra
    assert "mpich" not in requirements() and "mpi4py" in requirements()


def test_each_optional_module_is_in_the_extra_its_error_names():
    for module, extra in EXTRAS.items():
        names = set(requirements(extra))
        for line in PROJECT["optional-dependencies"][extra]:     # xdap[store] inside mesh
            for inner in re.findall(r"xdap\[([a-z,]+)\]", line):
                for e in inner.split(","):
                    names |= set(requirements(e))
        assert module in names, (module, extra, names)


def test_optional_modules_are_imported_through_need():
    """A missing optional module says which extra to install: no module of
    xdap imports one directly (xdap.optional.need does)."""
    direct = []
    for path in (ROOT / "xdap").rglob("*.py"):
        if path.name == "optional.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module] if isinstance(node, ast.ImportFrom) and node.module and
                     node.level == 0 else [])
            direct += [f"{path.relative_to(ROOT)}:{node.lineno} {n}" for n in names
                       if n.partition(".")[0] in EXTRAS]
    assert direct == []


def test_a_missing_extra_is_named_on_use(tmp_path):
    """`a.save` without zarr: one ImportError naming `xdap[store]` (a process
    of its own, whose zarr is made unimportable)."""
    code = ("import sys; sys.modules['zarr'] = None\n"
            "import numpy as np, xdap\n"
            "a = xdap.from_local(np.arange(3.0))\n"
            "try:\n"
            "    a.save(sys.argv[1])\n"
            "except ImportError as e:\n"
            "    print('refused:', e)\n")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "x.xdap")],
                         capture_output=True, text=True, timeout=120,
                         env={**os.environ, "XDAP_ABORT_ON_ERROR": "0"})
    assert out.returncode == 0, out.stderr
    assert "refused: zarr is not installed here: pip install 'xdap[store]'" in out.stdout


def _runpath(so: pathlib.Path) -> list:
    out = subprocess.run(["readelf", "-d", str(so)], capture_output=True, text=True, check=True)
    found = re.search(r"\((?:RUNPATH|RPATH)\)\s+Library r(?:un)?path: \[(.*)\]", out.stdout)
    return found.group(1).split(":") if found else []


def _needed(so: pathlib.Path) -> list:
    out = subprocess.run(["readelf", "-d", str(so)], capture_output=True, text=True, check=True)
    return re.findall(r"\(NEEDED\)\s+Shared library: \[(.*)\]", out.stdout)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="ELF run paths")
def test_extensions_find_the_stack_relative_to_themselves():
    """A wheel's extensions load the stack's libraries from beside xdap/
    ($ORIGIN), wherever pip put them; the build's own paths (pip's temporary
    build environment) are not what they rely on."""
    sos = sorted(pathlib.Path(xdap.__file__).parent.rglob("*.so"))
    assert len(sos) >= 6          # _xndbuf, _envelope, _apply, the three kernel modules
    for so in sos:
        if not any(lib.startswith(("libndtypes", "libxnd")) for lib in _needed(so)):
            assert so.name.startswith("_envelope"), (so, _needed(so))   # links no stack
            continue
        depth = len(so.relative_to(pathlib.Path(xdap.__file__).parent.parent).parts) - 1
        up = "/".join([".."] * depth)
        paths = _runpath(so)
        assert f"$ORIGIN/{up}/ndtypes" in paths and f"$ORIGIN/{up}/xnd" in paths, (so, paths)


def test_floats_pack_through_the_renamed_python_api():
    """xnd packs and unpacks half, single and double floats (and complex)
    through PyFloat_Pack*/Unpack*, the names Python 3.11 made public."""
    from xnd import xnd
    for t, v in [("float16", 1.5), ("float32", -0.25), ("float64", 1e300),
                 ("complex64", 1.5 - 2j), ("complex128", 1e-300 + 3j)]:
        x = xnd(v, type=t)
        assert x.value == v, (t, x.value)
        assert xnd([v, v], type=f"2 * {t}").value == [v, v]
