#!/usr/bin/env bash
# Install xdap as a user does, and run the README's first example on 2 ranks:
# for each Python (XDAP_CHECK_PYTHONS, default "3.11 3.12 3.13": pythonX.Y on
# PATH, or pyenv's of that version where pyenv has one), build the wheels (tools/build_wheels.sh --xdap), then
# in fresh environments outside the checkout
#
#   mpich: a venv, pip install --find-links wheelhouse 'xdap[mesh,mpich]',
#          the venv's own mpiexec (a machine with no MPI of its own);
#   index: a venv with 'xdap[mesh]' alone -- mpi4py's wheel from the index,
#          which finds the MPI on PATH at run time -- and that MPI's mpiexec
#          (tools/system_mpiexec.sh) -- only where mpicc is;
#   site:  a venv whose mpi4py is compiled against the MPI on PATH (mpicc:
#          a site's module, Debian's Open MPI), then 'xdap[mesh]' and the
#          site's mpiexec -- only where mpicc is;
#   moved: 'xdap[mesh]' into a plain directory (pip install --target, on
#          PYTHONPATH, the first Python only): no venv, nothing where it was
#          built, as in a conda env or a container layer.
#
# Each runs the example from a directory that is not the checkout (so the
# installed xdap is the one imported) under a time limit, and `xdap info`.
# `make install-check` runs it; CI does too.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
pythons=${XDAP_CHECK_PYTHONS:-3.11 3.12 3.13}
wheelhouse="$here/wheelhouse"

find_python() {     # X.Y -> a python that runs (pyenv's shims answer "command not found")
    local c
    for c in "python$1" $(ls -d "${PYENV_ROOT:-$HOME/.pyenv}/versions/$1".*/bin/"python$1" 2>/dev/null | sort -V -r); do
        if "$c" -c 'import sys' >/dev/null 2>&1; then
            command -v "$c"
            return 0
        fi
    done
    return 1
}

# `install_check.sh --find-python X.Y`: the python it would use (.ci/run's
# side job builds those Pythons' stack wheels while a suite runs)
if [ "${1:-}" = "--find-python" ]; then
    find_python "$2"
    exit
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
pipq=(-m pip install -q --disable-pip-version-check --root-user-action=ignore)

die() { echo "install_check: error: $*" >&2; exit 1; }

# the README's first ```python block, as a user would copy it
awk '/^```python/{f=1; next} /^```/{if (f) exit} f' README.md > "$work/first.py"
[ -s "$work/first.py" ] || die "no \`\`\`python block in README.md"

run_example() {     # what, launcher..., python
    local what=$1; shift
    local log="$work/$what.log"
    if ! (cd "$work" && timeout 300 "$@" first.py >"$log" 2>&1); then
        tail -25 "$log" >&2
        die "$what: the README's first example failed on 2 ranks (log above)"
    fi
    echo "install_check: $what: the README's first example ran on 2 ranks"
}

checked=0
first=1
for v in $pythons; do
    py=$(find_python "$v") || die "no working python$v on PATH or in pyenv (set XDAP_CHECK_PYTHONS to the versions to check)"
    PYTHON="$py" bash tools/build_wheels.sh --xdap

    # -- mpich: a fresh venv and MPICH from the index --------------------------
    env="$work/mpich-$v"
    "$py" -m venv "$env"
    "$env/bin/python" "${pipq[@]}" --find-links "$wheelhouse" 'xdap[mesh,mpich]'
    (cd "$work" && "$env/bin/xdap" info >"$work/info-$v.txt") || die "python$v: xdap info failed"
    grep -q "^Python $v" "$work/info-$v.txt" || { cat "$work/info-$v.txt" >&2; die "python$v: xdap info names another Python"; }
    run_example "python$v+mpich" "$env/bin/mpiexec" -n 2 "$env/bin/python"
    checked=$((checked + 1))

    # -- index: mpi4py's own wheel on the MPI on PATH ---------------------------
    if command -v mpicc >/dev/null; then
        env="$work/index-$v"
        "$py" -m venv "$env"
        "$env/bin/python" "${pipq[@]}" --find-links "$wheelhouse" 'xdap[mesh]'
        # shellcheck disable=SC2046  # the launcher and its flags, split
        run_example "python$v+index-mpi4py" $(tools/system_mpiexec.sh) -n 2 "$env/bin/python"
        checked=$((checked + 1))
    fi

    # -- site: mpi4py built against the MPI on PATH ----------------------------
    if command -v mpicc >/dev/null; then
        env="$work/site-$v"
        "$py" -m venv "$env"
        MPICC=$(command -v mpicc) "$env/bin/python" "${pipq[@]}" --no-binary mpi4py 'mpi4py>=4,<5'
        "$env/bin/python" "${pipq[@]}" --find-links "$wheelhouse" 'xdap[mesh]'
        # shellcheck disable=SC2046  # the launcher and its flags, split
        run_example "python$v+site-mpi" $(tools/system_mpiexec.sh) -n 2 "$env/bin/python"
        checked=$((checked + 1))
    else
        echo "install_check: python$v: no mpicc on PATH, the site-MPI install is not tried"
    fi

    # -- moved: a plain directory on PYTHONPATH, the first Python only ---------
    if [ "$first" = 1 ]; then
        first=0
        target="$work/target-$v"
        "$py" "${pipq[@]}" --find-links "$wheelhouse" --target "$target" 'xdap[mesh,mpich]'
        PYTHONPATH="$target" run_example "python$v+target-dir" "$target/bin/mpiexec" -n 2 "$py"
        checked=$((checked + 1))
    fi
done
echo "install_check: $checked installs checked, each the README's first example on 2 ranks"
