"""Self-tests of the MPI test harness (tests/mpi_harness.py)."""
import os
import re
import subprocess
import sys
import textwrap

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.mark.mpi(ranks=(1, 2, 3, 4))
def test_world_has_declared_size(comm):
    n = int(os.environ["XDAP_MPI_RANKS"])    # set by the parent from the item's N
    assert comm.size == n
    assert comm.allreduce(comm.rank) == n * (n - 1) // 2


@pytest.mark.mpi(ranks=8)
def test_cartesian_2x2x2(comm):
    cart = comm.Create_cart([2, 2, 2])
    coords = cart.Get_coords(cart.rank)
    assert cart.Get_cart_rank(coords) == cart.rank
    # Every corner of the cube is owned by exactly one rank.
    assert sorted(map(tuple, cart.allgather(coords))) == [
        (i, j, k) for i in (0, 1) for j in (0, 1) for k in (0, 1)]
    cart.Free()


@pytest.mark.mpi(ranks=2)
@pytest.mark.parametrize("x", [1, 2])
def test_user_params_combine_with_ranks(comm, x, request):
    assert request.node.name == f"test_user_params_combine_with_ranks[{x}]"  # child's name
    assert comm.bcast(x * 10, root=0) == x * 10


def test_plain_tests_run_in_the_parent(request):
    assert "PMI_RANK" not in os.environ
    names = {item.name for item in request.session.items}
    assert {f"test_world_has_declared_size[{n} ranks]" for n in (1, 2, 3, 4)} <= names
    assert "test_user_params_combine_with_ranks[1-2 ranks]" in names


# -- failure handling, checked by running a nested pytest on a scratch suite --

SCRATCH_SUITE = '''
import os, time
import pytest

@pytest.mark.mpi(ranks=2)
def test_a_fails_on_rank_1(comm):
    assert comm.rank != 1, "rank 1 disagrees"

@pytest.mark.mpi(ranks=2)
def test_b_runs_after_failure(comm):
    assert comm.allreduce(1) == 2

@pytest.mark.mpi(ranks=2)
def test_c_fails_while_others_wait(comm):
    if comm.rank == 1:
        raise ValueError("rank 1 gave up")
    comm.barrier()          # rank 0 waits forever for rank 1

@pytest.mark.mpi(ranks=2)
def test_d_hangs(comm):
    comm.recv(source=1 - comm.rank)   # both ranks wait for each other

@pytest.mark.mpi(ranks=2)
def test_e_crashes(comm):
    if comm.rank == 0:
        os.abort()
    comm.barrier()

@pytest.mark.mpi(ranks=2)
def test_f_still_runs(comm):
    assert comm.allreduce(comm.rank) == 1

@pytest.mark.mpi(ranks=2)
def test_g_skips(comm):
    pytest.skip("not today")

@pytest.mark.mpi(ranks=2)
@pytest.mark.xfail(reason="known bug", strict=True)
def test_h_xfails(comm):
    assert comm.rank == 5
'''


@pytest.fixture(scope="module")
def scratch_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("scratch")
    (root / "conftest.py").write_text("from mpi_harness import *\n")
    (root / "pytest.ini").write_text("[pytest]\n")
    (root / "test_scratch.py").write_text(textwrap.dedent(SCRATCH_SUITE))
    env = dict(os.environ, XDAP_MPI_TIMEOUT="8", XDAP_MPI_GRACE="3",
               PYTHONPATH=os.pathsep.join(filter(None, [HERE, os.environ.get("PYTHONPATH")])))
    proc = subprocess.run([sys.executable, "-m", "pytest", "-v", "-rA", "-p", "no:cacheprovider",
                           "test_scratch.py"],
                          cwd=root, env=env, capture_output=True, text=True, timeout=120)
    return proc.stdout + proc.stderr


def _outcome(output, test):
    m = re.search(rf"test_scratch\.py::{test}\[2 ranks\] (\w+)", output)
    assert m, output
    return m.group(1)


def _section(output, test):
    """The failure report of one test."""
    m = re.search(rf"_+ {test}\[2 ranks\] _+\n(.*?)(?=\n_{{5,}} |\n=+ )", output, re.S)
    assert m, output
    return m.group(1)


def test_failure_on_one_rank_is_reported_with_its_traceback(scratch_run):
    assert _outcome(scratch_run, "test_a_fails_on_rank_1") == "FAILED"
    report = _section(scratch_run, "test_a_fails_on_rank_1")
    assert "failed on rank(s) 1 of 2" in report
    assert "rank 1 disagrees" in report
    # The other rank finished the test, so the launch carried on.
    assert _outcome(scratch_run, "test_b_runs_after_failure") == "PASSED"
    assert re.search(r"-n 2 launch 1: 8 tests requested, [3-9] resolved", scratch_run)


def test_failure_while_other_ranks_block_aborts_and_reports(scratch_run):
    assert _outcome(scratch_run, "test_c_fails_while_others_wait") == "FAILED"
    report = _section(scratch_run, "test_c_fails_while_others_wait")
    assert "no result from rank(s) 0" in report
    assert "ValueError: rank 1 gave up" in report


def test_hang_times_out(scratch_run):
    assert _outcome(scratch_run, "test_d_hangs") == "FAILED"
    report = _section(scratch_run, "test_d_hangs")
    assert "timed out after 8 s" in report
    assert re.search(r"test_scratch.py\", line \d+ in test_d_hangs", report)  # stack dump


def test_crash_is_reported_and_later_tests_still_run(scratch_run):
    assert _outcome(scratch_run, "test_e_crashes") == "FAILED"
    assert "died" in _section(scratch_run, "test_e_crashes")
    assert _outcome(scratch_run, "test_f_still_runs") == "PASSED"


def test_skip_and_xfail_are_mirrored(scratch_run):
    assert _outcome(scratch_run, "test_g_skips") == "SKIPPED"
    assert "not today" in scratch_run
    assert _outcome(scratch_run, "test_h_xfails") == "XFAIL"
