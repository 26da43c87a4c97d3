"""Shared pytest set-up for xdap.

The MPI harness (``@pytest.mark.mpi`` and the ``comm`` fixture) lives in
mpi_harness.py; importing its hooks here keeps it working whatever directory
pytest is started from (``pytest_plugins`` is only honoured in top-level
conftests).
"""
import os
import sys

if os.path.dirname(__file__) not in sys.path:  # --import-mode=importlib adds nothing
    sys.path.insert(0, os.path.dirname(__file__))
from mpi_harness import *  # noqa: E402,F401,F403
