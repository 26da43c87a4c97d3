# xdap: `make test` and `make demo` do all the set-up on a fresh machine.
VENV   := .venv
PY     := $(VENV)/bin/python
# XDAP_MPIEXEC: the launcher with its flags (xdap.launcher), e.g. a site's Open MPI
MPIEXEC := $(if $(XDAP_MPIEXEC),$(XDAP_MPIEXEC),$(VENV)/bin/mpiexec)
# 4 ranks on a 2-core machine: oversubscription is expected.
RANKS  ?= 4

.PHONY: env test demo bench clean distclean

env:
	@bash tools/build_stack.sh

test: env
	$(PY) -m pytest -q --doctest-modules xdap tests

demo: env
	$(MPIEXEC) -n $(RANKS) $(PY) -m xdap demo

bench: env
	@for b in benchmarks/[!_]*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

clean:
	rm -rf build *.egg-info xdap/*.so .pytest_cache .hypothesis

distclean: clean
	rm -rf $(VENV) wheelhouse
