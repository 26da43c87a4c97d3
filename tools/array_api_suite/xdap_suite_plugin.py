"""pytest plugin for running the Array API test suite (data-apis/array-api-tests)
on several MPI ranks; ``tools/array_api_suite/run.py`` loads it.

Every rank must draw the same examples, or the ranks' collective calls part
ways.  Derandomized hypothesis nearly does it; two things do not:

- hypothesis (>= 6.131) mixes into its draws constants read from the source
  of every *local* module in ``sys.modules`` -- a set that grows as modules
  are imported lazily, not alike on every rank (and cached in a directory the
  ranks share).  Off: no module's constants;
- health checks time the draws (``too_slow``): a slow, oversubscribed rank
  could fail one the others pass.  Off.

Each rank also writes every test's outcome the moment it is known to
``$XDAP_SUITE_OUT/outcomes.<rank>`` (a hung rank's progress stays readable).
"""
import os

import pytest
from hypothesis.internal.conjecture import providers

providers._get_local_constants = lambda: providers._local_constants    # stays empty

_RANK = os.environ.get("PMI_RANK", os.environ.get("OMPI_COMM_WORLD_RANK", "0"))
_OUT = None


@pytest.hookimpl(trylast=True)
def pytest_configure(config):
    from hypothesis import HealthCheck, settings
    settings.register_profile("xdap-mpi", parent=settings.get_profile("array-api-tests"),
                              suppress_health_check=list(HealthCheck))
    settings.load_profile("xdap-mpi")


def pytest_runtest_logreport(report):
    global _OUT
    if report.when != "call" and not (report.failed or report.skipped):
        return
    if _OUT is None:
        where = os.environ.get("XDAP_SUITE_OUT", ".")
        _OUT = open(os.path.join(where, f"outcomes.{_RANK}"), "w", buffering=1)
    _OUT.write(f"{report.outcome} {report.nodeid}\n")
    if report.failed:
        errors = [line for line in str(report.longrepr).splitlines() if line.startswith("E ")]
        _OUT.write("".join(f"    {line}\n" for line in errors[:6]))
