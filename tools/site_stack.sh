#!/usr/bin/env bash
# The site stack of a cluster, in a venv whose mpi4py is built on the MPI on
# PATH (make test MPI=system, make peers; tools/build_stack.sh calls this):
#   - parallel HDF5: h5py built from source with MPI (HDF5_MPI=ON, CC=mpicc)
#     against the distribution's HDF5 for that MPI (Debian: libhdf5-openmpi-dev
#     or libhdf5-mpich-dev), so to_hdf5 and write_xdmf take their collective
#     path;
#   - mpi4py-fft against the distribution's FFTW (libfftw3-dev), the peer
#     benchmarks/peers.py measures xdap's FFTs and transposes against.
# Both are built against the venv's own NumPy 2 and mpi4py: Debian's python3
# packages (python3-h5py-mpi, python3-mpi4py-fft) are built for its NumPy
# 1.24 and cannot share xdap's process.
#
#   tools/site_stack.sh VENV
#
# The libraries come from Debian's packages where this machine has them or
# can install them (root and apt-get, as .ci/run installs Open MPI).  What
# it can neither find nor install is said, and left out: xdap then writes
# HDF5 rank by rank (xdap info says which), and the peers' rows say absent.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
venv=${1:?usage: tools/site_stack.sh VENV}
vpy="$here/$venv/bin/python"
say() { echo "site_stack: $*"; }

# which MPI is on PATH: its HDF5 package and pkg-config name
if mpicc -showme:version >/dev/null 2>&1; then
    flavour=openmpi
else
    flavour=mpich
fi
hdf5_pkg=libhdf5-$flavour-dev
hdf5_pc=hdf5-$flavour

# Debian's packages, where they are missing and can be installed
have_fftw() { [ -e /usr/include/fftw3.h ] || pkg-config --exists fftw3; }
have_hdf5() { pkg-config --exists "$hdf5_pc"; }
missing=()
have_fftw || missing+=(libfftw3-dev)
have_hdf5 || missing+=("$hdf5_pkg")
if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        say "installing Debian's ${missing[*]}"
        export DEBIAN_FRONTEND=noninteractive
        apt-get install -y -q --no-install-recommends "${missing[@]}" >/tmp/site-stack-apt.log 2>&1 ||
            { apt-get update -q >>/tmp/site-stack-apt.log 2>&1 &&
              apt-get install -y -q --no-install-recommends "${missing[@]}" \
                  >>/tmp/site-stack-apt.log 2>&1; } ||
            say "could not install ${missing[*]} (see /tmp/site-stack-apt.log)"
    else
        say "${missing[*]} not installed, and this is no root shell with apt-get"
    fi
fi

# the build tools, in a folder of their own on PYTHONPATH: the venv keeps the
# setuptools the xnd stack is built with; --no-build-isolation lets the builds
# see the venv's NumPy and its mpi4py (h5py's MPI build imports mpi4py)
tools="$here/build/site-build-tools"
wanted=$(grep -E '^(setuptools|Cython|pkgconfig|packaging)==' tools/site-requirements.txt | sort | tr '\n' ' ')
if [ "$(cat "$tools/.pins" 2>/dev/null)" != "$wanted" ]; then
    rm -rf "$tools"
    "$vpy" -m pip install -q --disable-pip-version-check --target "$tools" $wanted
    echo "$wanted" >"$tools/.pins"
fi
build() { PYTHONPATH="$tools" "$vpy" -m pip install -q --disable-pip-version-check \
              --no-build-isolation --no-deps --no-cache-dir --force-reinstall "$@"; }

if have_hdf5; then
    h5py_pin=$(grep -E '^h5py==' requirements.txt)
    say "building $h5py_pin with MPI against $(pkg-config --modversion "$hdf5_pc") ($hdf5_pc)"
    HDF5_MPI=ON CC=$(command -v mpicc) HDF5_PKGCONFIG_NAME=$hdf5_pc \
        build --no-binary h5py "$h5py_pin" >/tmp/site-stack-h5py.log 2>&1 ||
        { tail -20 /tmp/site-stack-h5py.log; say "error: h5py did not build with MPI"; exit 1; }
else
    say "absent: parallel HDF5 (no $hdf5_pkg): h5py stays the serial wheel"
fi

if have_fftw; then
    fft_pin=$(grep -E '^mpi4py-fft==' tools/site-requirements.txt)
    say "building $fft_pin against FFTW $(pkg-config --modversion fftw3 2>/dev/null || echo '?')"
    build "$fft_pin" >/tmp/site-stack-fft.log 2>&1 ||
        { tail -20 /tmp/site-stack-fft.log; say "error: mpi4py-fft did not build"; exit 1; }
else
    say "absent: mpi4py-fft (no FFTW headers: libfftw3-dev)"
fi

"$vpy" - <<'EOF'
import importlib.util
import h5py
fft = importlib.util.find_spec("mpi4py_fft") is not None
print(f"site_stack: parallel HDF5 {'on' if h5py.get_config().mpi else 'off'} "
      f"(h5py {h5py.__version__}, HDF5 {h5py.version.hdf5_version}); "
      f"mpi4py-fft {'installed' if fft else 'absent'}")
EOF
