#!/usr/bin/env bash
# Build the project environment from nothing: .venv/ with the pinned xnd
# stack (ndtypes, xnd, gumath 0.2.0.dev3, built here into relocatable wheels),
# the pinned Python dependencies (requirements.txt) and xdap itself (editable,
# with its C extensions compiled).
#
# Why a script and not `pip install`: the stack ships only sdists, and those
# do not build on Python 3.11 with pip (see ../shared/DESIGN.md, "Facts about
# the pinned stack"). Each sdist is checked against tools/stack.sha256, built
# with setup.py bdist_wheel into wheelhouse/, and installed before the next
# one is built (xnd builds against ndtypes, gumath against both).
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
stack=(ndtypes xnd gumath)
stack_version=0.2.0dev3

die() { echo "build_stack: error: $*" >&2; exit 1; }

# -- preconditions, with messages that say what to install -----------------
command -v "$py" >/dev/null || die "no '$py' on PATH; install Python 3.11 (or set PYTHON=...)"
pyver=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
[ "$pyver" = "3.11" ] || die "Python 3.11 is required (the pinned xnd stack is patched for it); '$py' is $pyver"
command -v gcc >/dev/null || die "gcc not found; install a C compiler (Debian: apt-get install gcc)"
incdir=$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
[ -f "$incdir/Python.h" ] || die "Python headers missing ($incdir/Python.h); install them (Debian: apt-get install python3.11-dev)"

case "$mpi" in
    wheel) ;;
    system) command -v mpicc >/dev/null || die "XDAP_MPI=system needs the site's MPI with its compiler wrapper (mpicc) on PATH (Debian: apt-get install libopenmpi-dev openmpi-bin)" ;;
    *) die "XDAP_MPI must be 'wheel' or 'system', got '$mpi'" ;;
esac
stamp_inputs=$( (cat tools/build_stack.sh tools/patch_stack.py tools/stack.sha256 tools/build-requirements.txt requirements.txt setup.py; echo "$mpi") | sha256sum | cut -c1-16)
# the wheels are built from the sdists with tools/patch_stack.py's patches:
# wheels built with other patches (or none) are built again
patches=$(sha256sum tools/patch_stack.py | cut -c1-16)
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

# -- the stack wheels -------------------------------------------------------
mkdir -p "$wheelhouse/sdist"
have_all=1
[ -f "$wheelhouse/.patches-$patches" ] || have_all=0
for p in "${stack[@]}"; do
    ls "$wheelhouse"/"$p"-0.2.0.dev3-*.whl >/dev/null 2>&1 || have_all=0
done
if [ "$have_all" = 0 ]; then
    echo "build_stack: downloading the pinned sdists"
    for p in "${stack[@]}"; do
        [ -f "$wheelhouse/sdist/$p-$stack_version.tar.gz" ] ||
            "$vpy" -m pip download -q --disable-pip-version-check --no-deps \
                --no-binary :all: -d "$wheelhouse/sdist" "$p==0.2.0.dev3"
    done
    (cd "$wheelhouse/sdist" && sha256sum --quiet -c "$here/tools/stack.sha256") ||
        die "sha256 mismatch for the downloaded sdists (see tools/stack.sha256)"

    build=$(mktemp -d)
    trap 'rm -rf "$build"' EXIT
    # Python 3.11 renamed the private float packers the stack calls.
    export CFLAGS="-D_PyFloat_Pack2=PyFloat_Pack2 -D_PyFloat_Pack4=PyFloat_Pack4 -D_PyFloat_Pack8=PyFloat_Pack8 -D_PyFloat_Unpack2=PyFloat_Unpack2 -D_PyFloat_Unpack4=PyFloat_Unpack4 -D_PyFloat_Unpack8=PyFloat_Unpack8"
    # Relocatable: each extension finds the bundled libraries of its own and
    # its sibling packages relative to itself, wherever the venv lives.
    export LDFLAGS='-Wl,-rpath,$ORIGIN:$ORIGIN/../ndtypes:$ORIGIN/../xnd:$ORIGIN/../gumath'
    export SETUPTOOLS_USE_DISTUTILS=stdlib
    for p in "${stack[@]}"; do
        echo "build_stack: building the $p wheel"
        tar -xzf "$wheelhouse/sdist/$p-$stack_version.tar.gz" -C "$build"
        "$vpy" tools/patch_stack.py "$p" "$build/$p-$stack_version"
        rm -f "$wheelhouse"/"$p"-0.2.0.dev3-*.whl
        (cd "$build/$p-$stack_version" && "$vpy" setup.py bdist_wheel >"$build/$p.log" 2>&1) || {
            tail -30 "$build/$p.log" >&2; die "building $p failed (log above)"; }
        cp "$build/$p-$stack_version"/dist/*.whl "$wheelhouse/"
        "$vpy" -m pip install -q --disable-pip-version-check --no-deps --force-reinstall "$wheelhouse"/"$p"-0.2.0.dev3-*.whl
    done
    rm -f "$wheelhouse"/.patches-*
    touch "$wheelhouse/.patches-$patches"
fi

# -- install everything -----------------------------------------------------
echo "build_stack: installing the stack wheels and requirements.txt"
"$vpy" -m pip install -q --disable-pip-version-check --no-deps --force-reinstall \
    "$wheelhouse"/ndtypes-0.2.0.dev3-*.whl "$wheelhouse"/xnd-0.2.0.dev3-*.whl "$wheelhouse"/gumath-0.2.0.dev3-*.whl
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
else
    "$vpy" -m pip install -q --disable-pip-version-check -r requirements.txt
fi
echo "build_stack: building xdap (editable)"
"$vpy" -m pip install -q --disable-pip-version-check --no-deps --no-build-isolation -e .
"$vpy" -c "import xdap, gumath, mpi4py; from mpi4py import MPI; print('build_stack: ok, xdap', xdap.__version__, 'on', MPI.Get_library_version().splitlines()[0])"
rm -f "$venv"/.xdap-env-*
touch "$stamp"
