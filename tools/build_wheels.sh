#!/usr/bin/env bash
# Wheels for one Python: the pinned xnd stack (ndtypes, xnd, gumath
# 0.2.0.dev3), patched, and -- with --xdap -- xdap itself, into wheelhouse/.
#
#     tools/build_wheels.sh [--xdap]            # for python3 on PATH
#     PYTHON=python3.13 tools/build_wheels.sh --xdap   (make wheels PYTHON=...)
#
# Then, in any environment of that Python (a venv, a conda env, one whose
# mpi4py is built against the site's MPI):
#
#     pip install --find-links wheelhouse 'xdap[mesh]'
#
# Why not `pip install ndtypes`: the index has only the 2018 sdists, which
# do not build on Python 3.11+ and lack xdap's fixes (tools/patch_stack.py).
# Each sdist is checked against tools/stack.sha256, patched, built with
# `setup.py bdist_wheel` in build/stack-env-cpXY (a venv of that Python with
# tools/build-requirements.txt) and installed there before the next is built
# (xnd builds against ndtypes, gumath against both). The wheels are
# relocatable (each extension finds its own and its siblings' libraries
# through $ORIGIN) and are reused while the patches are unchanged.
# The xdap wheel is built as pip builds it for a user (pyproject.toml, an
# isolated build environment with the stack wheels from wheelhouse/); its
# kernels get -march=$XDAP_KERNEL_ARCH (default native: set x86-64-v2 for a
# wheelhouse shared by different machines).
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
py=${PYTHON:-python3}
wheelhouse=${XDAP_WHEELHOUSE:-wheelhouse}
stack=(ndtypes xnd gumath)
stack_version=0.2.0dev3

die() { echo "build_wheels: error: $*" >&2; exit 1; }

command -v "$py" >/dev/null || die "no '$py' on PATH; install Python 3.11, 3.12 or 3.13 (or set PYTHON=...)"
tag=$("$py" -c 'import sys; print("cp%d%d" % sys.version_info[:2])')
case "$tag" in
    cp311|cp312|cp313) ;;
    *) die "Python 3.11, 3.12 or 3.13 is required; '$py' is $("$py" -c 'import sys; print(sys.version.split()[0])')" ;;
esac
command -v gcc >/dev/null || die "gcc not found; install a C compiler (Debian: apt-get install gcc)"
incdir=$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
[ -f "$incdir/Python.h" ] || die "Python headers missing ($incdir/Python.h); install them (Debian: apt-get install python3-dev)"

# -- the stack wheels -------------------------------------------------------
# wheels built with other patches (or none) are built again
patches=$( (cat tools/patch_stack.py tools/build-requirements.txt tools/build_wheels.sh) | sha256sum | cut -c1-16)
mkdir -p "$wheelhouse/sdist"
have_all=1
[ -f "$wheelhouse/.patches-$tag-$patches" ] || have_all=0
for p in "${stack[@]}"; do
    ls "$wheelhouse/$p-0.2.0.dev3-$tag-"*.whl >/dev/null 2>&1 || have_all=0
done
if [ "$have_all" = 0 ]; then
    env="$here/build/stack-env-$tag"
    rm -rf "$env"
    "$py" -m venv "$env"
    bpy="$env/bin/python"
    "$bpy" -m pip install -q --disable-pip-version-check -r tools/build-requirements.txt
    for p in "${stack[@]}"; do
        [ -f "$wheelhouse/sdist/$p-$stack_version.tar.gz" ] || {
            echo "build_wheels: downloading the pinned $p sdist"
            "$bpy" -m pip download -q --disable-pip-version-check --no-deps \
                --no-binary :all: -d "$wheelhouse/sdist" "$p==0.2.0.dev3"; }
    done
    (cd "$wheelhouse/sdist" && sha256sum --quiet -c "$here/tools/stack.sha256") ||
        die "sha256 mismatch for the downloaded sdists (see tools/stack.sha256)"

    build=$(mktemp -d)
    trap 'rm -rf "$build"' EXIT
    # A call the stack makes to a function this Python lacks must fail the
    # build, not the import.
    export CFLAGS="-Werror=implicit-function-declaration"
    # Relocatable: each extension finds the bundled libraries of its own and
    # its sibling packages relative to itself, wherever the env lives.
    export LDFLAGS='-Wl,-rpath,$ORIGIN:$ORIGIN/../ndtypes:$ORIGIN/../xnd:$ORIGIN/../gumath'
    # ndtypes' Makefile races under an inherited -jN (patch_stack.py makes it
    # serial; this keeps an outer `make -j` from reaching it at all).
    unset MAKEFLAGS MFLAGS
    for p in "${stack[@]}"; do
        echo "build_wheels: building the $p wheel for $tag"
        tar -xzf "$wheelhouse/sdist/$p-$stack_version.tar.gz" -C "$build"
        "$bpy" tools/patch_stack.py "$p" "$build/$p-$stack_version"
        (cd "$build/$p-$stack_version" && "$bpy" setup.py bdist_wheel >"$build/$p.log" 2>&1) || {
            tail -30 "$build/$p.log" >&2; die "building $p failed (log above)"; }
        rm -f "$wheelhouse/$p-0.2.0.dev3-$tag-"*.whl
        cp "$build/$p-$stack_version"/dist/*.whl "$wheelhouse/"
        "$bpy" -m pip install -q --disable-pip-version-check --no-deps --force-reinstall \
            "$wheelhouse/$p-0.2.0.dev3-$tag-"*.whl
    done
    rm -f "$wheelhouse/.patches-$tag-"*
    touch "$wheelhouse/.patches-$tag-$patches"
fi

# -- xdap's own wheel -------------------------------------------------------
if [ "${1:-}" = "--xdap" ]; then
    echo "build_wheels: building the xdap wheel for $tag (pyproject.toml, isolated)"
    rm -f "$wheelhouse"/xdap-*-"$tag"-*.whl
    "$py" -m pip wheel -q --disable-pip-version-check --no-deps \
        --find-links "$wheelhouse" -w "$wheelhouse" . ||
        die "building the xdap wheel failed (pip's output above)"
    ls "$wheelhouse"/xdap-*-"$tag"-*.whl
fi
