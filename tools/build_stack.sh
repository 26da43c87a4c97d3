#!/usr/bin/env bash
# Build the project environment from nothing: .venv/ with the pinned xnd
# stack (ndtypes, xnd, gumath 0.2.0.dev3, built by tools/build_wheels.sh into
# patched, relocatable wheels), the pinned Python dependencies
# (requirements.txt) and xdap itself (editable, with its C extensions
# compiled). PYTHON=python3.12 (make test PYTHON=...) builds .venv-3.12.
#
# Why a script and not only `pip install`: the stack ships only sdists, and
# those do not build on Python 3.11+ with pip (see ../shared/DESIGN.md,
# "Facts about the pinned stack"); a user installs the wheels this builds
# (README, "Into your own environment").
#
# Second runs are cheap: the wheels are reused, and nothing is reinstalled
# while the stamp in .venv matches the inputs.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
venv=${XDAP_VENV:-.venv}
# XDAP_MPI=system (make test MPI=system): mpi4py built against the MPI on
# PATH (mpicc), no mpich wheel; the default takes both from the index.
mpi=${XDAP_MPI:-wheel}
wheelhouse=wheelhouse
py=${PYTHON:-python3}

die() { echo "build_stack: error: $*" >&2; exit 1; }

# -- preconditions, with messages that say what to install -----------------
command -v "$py" >/dev/null || die "no '$py' on PATH; install Python 3.11 (or set PYTHON=...)"
pyver=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
case "$pyver" in
    3.11|3.12|3.13) ;;
    *) die "Python 3.11, 3.12 or 3.13 is required (the pinned xnd stack is patched for them); '$py' is $pyver" ;;
esac

case "$mpi" in
    wheel) ;;
    system) command -v mpicc >/dev/null || die "XDAP_MPI=system needs the site's MPI with its compiler wrapper (mpicc) on PATH (Debian: apt-get install libopenmpi-dev openmpi-bin)" ;;
    *) die "XDAP_MPI must be 'wheel' or 'system', got '$mpi'" ;;
esac
stamp_inputs=$( (cat tools/build_stack.sh tools/build_wheels.sh tools/patch_stack.py tools/stack.sha256 tools/build-requirements.txt requirements.txt setup.py pyproject.toml tools/site_stack.sh tools/site-requirements.txt; echo "$mpi $pyver") | sha256sum | cut -c1-16)
stamp="$venv/.xdap-env-$stamp_inputs"
if [ -f "$stamp" ] && [ "${1:-}" != "--force" ]; then
    # Environment is current; only (re)build our own extensions if sources changed.
    "$venv/bin/python" setup.py -q build_ext --inplace >/dev/null
    exit 0
fi

# -- the virtual environment ------------------------------------------------
if [ ! -x "$venv/bin/python" ]; then
    echo "build_stack: creating $venv"
    "$py" -m venv "$venv"
fi
vpy="$here/$venv/bin/python"
"$vpy" -m pip install -q --disable-pip-version-check -r tools/build-requirements.txt

# -- the stack wheels (patched, built once per Python) ------------------------
PYTHON="$py" bash tools/build_wheels.sh

# -- install everything -----------------------------------------------------
echo "build_stack: installing the stack wheels and requirements.txt"
tag=$("$vpy" -c 'import sys; print("cp%d%d" % sys.version_info[:2])')
"$vpy" -m pip install -q --disable-pip-version-check --no-deps --force-reinstall \
    "$wheelhouse"/{ndtypes,xnd,gumath}-0.2.0.dev3-"$tag"-*.whl
if [ "$mpi" = system ]; then
    # The same pins without the MPI wheels; mpi4py from its sdist, compiled
    # with the system's mpicc, so it links the site's MPI library.
    reqs=$(mktemp)
    grep -v -E '^(mpich|mpi4py)==' requirements.txt > "$reqs"
    "$vpy" -m pip install -q --disable-pip-version-check -r "$reqs"
    rm -f "$reqs"
    mpi4py_pin=$(grep -E '^mpi4py==' requirements.txt)
    echo "build_stack: building $mpi4py_pin against $(command -v mpicc) ($(mpiexec --version 2>&1 | head -1))"
    MPICC=$(command -v mpicc) "$vpy" -m pip install -q --disable-pip-version-check \
        --no-binary mpi4py --no-cache-dir "$mpi4py_pin"
    # a cluster's stack on that MPI: parallel HDF5 (h5py with MPI), mpi4py-fft on FFTW
    bash tools/site_stack.sh "$venv"
else
    "$vpy" -m pip install -q --disable-pip-version-check -r requirements.txt
fi
echo "build_stack: building xdap (editable)"
"$vpy" -m pip install -q --disable-pip-version-check --no-deps --no-build-isolation -e .
"$vpy" -c "import xdap, gumath, mpi4py; from mpi4py import MPI; print('build_stack: ok, xdap', xdap.__version__, 'on', MPI.Get_library_version().splitlines()[0])"
rm -f "$venv"/.xdap-env-*
touch "$stamp"
