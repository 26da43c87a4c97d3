#!/usr/bin/env bash
# The peers benchmarks/peers.py measures xdap against, where they are missing
# (make peers runs this after make env MPI=system):
#   - PETSc: Debian's python3-petsc4py (PETSc 3.18) on Debian's python3 -- it
#     is built for Debian's NumPy 1.24, so it runs in a process of its own;
#   - heat: .venv-heat, a venv of its own (heat needs torch), on the MPI on
#     PATH (its mpi4py built against it, as xdap's .venv-system);
#   - mpi4py-fft and h5py with MPI are in .venv-system already
#     (tools/site_stack.sh).
# What cannot be installed here is said; peers.py then reports it absent.
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
say() { echo "peers_env: $*"; }
py=${PYTHON:-python3}

apt_install() {   # apt_install LOG PACKAGE...: Debian's packages, where this is root with apt-get
    local log=$1; shift
    [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null || return 1
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q --no-install-recommends "$@" >"$log" 2>&1 ||
        { apt-get update -q >>"$log" 2>&1 && apt-get install -y -q --no-install-recommends "$@" >>"$log" 2>&1; }
}

# the MPI on PATH every peer runs on (as .ci/run installs it for its Open MPI pass)
if ! command -v mpicc >/dev/null; then
    say "no MPI on PATH: installing Debian's Open MPI"
    apt_install /tmp/peers-apt.log openmpi-bin libopenmpi-dev ||
        { say "error: no MPI on PATH and none installable (apt-get as root)"; exit 1; }
fi

# Debian's PETSc links libblas.so.3, which is the reference BLAS until an
# optimized one is installed: its serial OpenBLAS (one thread a rank, as the
# benchmarks run xdap's), so PETSc's VecDot/VecNorm are not a strawman
if [ ! -e /usr/lib/x86_64-linux-gnu/openblas-serial/libblas.so.3 ] && \
        [ ! -e /usr/lib/aarch64-linux-gnu/openblas-serial/libblas.so.3 ]; then
    say "installing Debian's OpenBLAS (serial) for PETSc's BLAS"
    apt_install /tmp/peers-apt.log libopenblas0-serial ||
        say "no OpenBLAS: PETSc's vector rows run on the reference BLAS (docs/peers.md says so)"
fi

if ! /usr/bin/python3 -c "import petsc4py" 2>/dev/null; then
    say "installing Debian's python3-petsc4py (PETSc 3.18) and python3-mpi4py"
    apt_install /tmp/peers-apt.log python3-petsc4py python3-mpi4py petsc-dev ||
        say "PETSc absent: Debian's python3-petsc4py needs root and apt-get (see /tmp/peers-apt.log)"
fi

# heat 1.8.0 (the newest on the index) wants torch < 2.11.1; the torch this
# machine's registry has for Python 3.11 without a download of several GB of
# CUDA wheels is 2.14.1 with torchvision 0.29.1 (heat imports torchvision),
# so heat is installed without its pin (--no-deps) and its imports checked
venv=.venv-heat
pins="torch==2.14.1 torchvision==0.29.1 $(grep -E '^(numpy|scipy)==' requirements.txt | tr '\n' ' ')"
if ! "$venv/bin/python" -c "import heat" 2>/dev/null; then
    say "building $venv: heat 1.8.0 with $pins"
    rm -rf "$venv"
    "$py" -m venv "$venv" &&
        "$venv/bin/python" -m pip install -q --disable-pip-version-check $pins >/tmp/peers-heat.log 2>&1 &&
        MPICC=$(command -v mpicc) "$venv/bin/python" -m pip install -q --disable-pip-version-check \
            --no-binary mpi4py "$(grep -E '^mpi4py==' requirements.txt)" >>/tmp/peers-heat.log 2>&1 &&
        "$venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps heat==1.8.0 \
            >>/tmp/peers-heat.log 2>&1 ||
        say "could not build $venv (see /tmp/peers-heat.log): heat's rows will say absent"
fi
"$venv/bin/python" -c "import heat, torch; print('peers_env: heat', heat.__version__, 'on torch', torch.__version__)" 2>/dev/null ||
    say "heat absent"
/usr/bin/python3 -c "from petsc4py import PETSc; print('peers_env: PETSc', '.'.join(map(str, PETSc.Sys.getVersion())))" 2>/dev/null ||
    say "PETSc absent"
exit 0
