"""DAP dim dicts with one rank's export mutated, against an independent
model of the spec (tests/dap_fuzz.py): every example is either imported
exactly as the model says or refused with the same error on every rank --
never a hang (watchdog), a crash, different errors per rank, or a wrong
array.  ``benchmarks/robustness.py`` runs 10^4 examples per rank count."""
import pytest
from hypothesis import HealthCheck, given, settings

from dap_fuzz import examples, run
from helpers import watchdog

EXAMPLES = 120


@pytest.mark.mpi(ranks=(2, 3, 4))
def test_mutated_dim_dicts_match_the_model(comm):
    outcomes = {}

    @settings(derandomize=True, database=None, max_examples=EXAMPLES, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(examples(comm.size))
    def check(ex):
        outcome = run(comm, ex, watchdog)
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
        assert outcome in ("accepted", "refused"), f"{outcome}: {ex!r}"

    check()
    assert outcomes.get("accepted", 0) > 0 and outcomes.get("refused", 0) > 0, outcomes
