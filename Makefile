# xdap: `make test` and `make demo` do all the set-up on a fresh machine.
# MPI=wheel (default): MPICH and mpi4py from the package index, in .venv.
# MPI=system: the MPI on PATH (mpicc, mpiexec; e.g. a site's Open MPI), with
# mpi4py built against it, in .venv-system -- both can live side by side.
# PYTHON=python3.12 (or 3.13): the same in .venv-3.12 (.venv-system-3.12).
MPI    ?= wheel
PYTHON ?= python3
export PYTHON
PYVER  := $(shell $(PYTHON) -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)
ifeq ($(MPI),system)
VENV   := .venv-system
export XDAP_MPI := system
# the system launcher with the flags this machine needs (tools/system_mpiexec.sh)
export XDAP_MPIEXEC ?= $(shell tools/system_mpiexec.sh)
else
VENV   := .venv
endif
ifneq ($(PYVER),3.11)
VENV   := $(VENV)-$(PYVER)
endif
export XDAP_VENV := $(VENV)
PY     := $(VENV)/bin/python
# XDAP_MPIEXEC: the launcher with its flags (xdap.launcher), used by everything
MPIEXEC := $(if $(XDAP_MPIEXEC),$(XDAP_MPIEXEC),$(VENV)/bin/mpiexec)
# 4 ranks on a 2-core machine: oversubscription is expected.
RANKS  ?= 4
# tetrahedra of the demo's mesh: keeps `make demo` well under a minute here
TETS   ?= 100000

.PHONY: env test demo bench peers conformance wheels install-check clean distclean

env:
	@bash tools/build_stack.sh

test: env
	$(PY) -m pytest -q --doctest-modules xdap tests

# the mesh pipeline first (its gmsh mesh is cached in build/demo-mesh), then the tour
demo: env
	$(MPIEXEC) -n $(RANKS) $(PY) -m xdap demo mesh --tets $(TETS) --out build/demo-mesh
	$(MPIEXEC) -n $(RANKS) $(PY) -m xdap demo

# xdap side by side with mpi4py-fft (FFTW), PETSc, heat and h5py with MPI, on
# the MPI on PATH (Debian's Open MPI, installed where missing): the peers
# installed where they are missing (tools/peers_env.sh), the site venv built
# (.venv-system: parallel HDF5, mpi4py-fft), then benchmarks/peers.py on 1, 2
# and 4 ranks -- one table of ratios (PEERS_ARGS="--docs" writes docs/peers.md)
PEERS_ARGS ?=
peers:
	@bash tools/peers_env.sh
	@$(MAKE) --no-print-directory env MPI=system
	XDAP_MPIEXEC="$$(tools/system_mpiexec.sh)" $(if $(filter 3.11,$(PYVER)),.venv-system,.venv-system-$(PYVER))/bin/python benchmarks/peers.py $(PEERS_ARGS)

# the Array API suite at depth: every layout on 2 and 3 ranks at EXAMPLES
# examples a test (tools/array_api_suite/conformance.py; hours on 2 cores).
# SUITE: a checkout of data-apis/array-api-tests with its array-api submodule
# (not on the package index). CONFORMANCE_ARGS="--docs" writes docs/array_api.md
SUITE ?=
EXAMPLES ?= 1000
CONFORMANCE_ARGS ?=
conformance: env
	@test -n "$(SUITE)" || { echo "make conformance SUITE=path/to/array-api-tests (git clone --recursive https://github.com/data-apis/array-api-tests)"; exit 2; }
	$(PY) tools/array_api_suite/conformance.py $(SUITE) --max-examples $(EXAMPLES) $(CONFORMANCE_ARGS)

# pip-installable wheels of the patched stack and of xdap for $(PYTHON), in
# wheelhouse/: then `pip install --find-links wheelhouse 'xdap[mesh]'` in any
# environment of that Python (README, "Into your own environment")
wheels:
	@bash tools/build_wheels.sh --xdap

# what CI does as a user: fresh venvs of Python 3.11-3.13, pip install from
# the wheelhouse, the README's first example on 2 ranks (tools/install_check.sh)
install-check:
	@bash tools/install_check.sh

bench: env
	@for b in benchmarks/[!_]*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

clean:
	rm -rf build *.egg-info xdap/*.so .pytest_cache .hypothesis

distclean: clean
	rm -rf .venv .venv-* wheelhouse
