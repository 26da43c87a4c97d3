"""Progress bars: on rank 0 when stdout is a terminal, silent otherwise.

Each test starts its own job whose standard output is a pseudo-terminal
(``pty.openpty``) or a pipe, and reads what it wrote.
"""
import fcntl
import os
import pty
import select
import struct
import subprocess
import sys
import termios

import pytest

from xdap.launcher import clean_environment, mpiexec_command

JOB = r"""
import sys, tempfile, os
import numpy as np
import xdap
from mpi4py import MPI
comm = MPI.COMM_WORLD
path = comm.bcast(tempfile.mkdtemp() if comm.rank == 0 else None)
a = xdap.from_global(np.arange(4_000_000.0), comm=comm)       # 32 MB
a.save(os.path.join(path, "a"))
b = xdap.load(os.path.join(path, "a"), comm=comm)
m, _ = b.migrate(np.full(len(b.local), (comm.rank + 1) % comm.size))
assert np.array_equal(np.sort(np.asarray(m.to_global())), np.arange(4_000_000.0))
print("done", comm.rank, flush=True)
"""


def terminal():
    """A pseudo-terminal of 24 x 100 characters (a fresh one is 0 x 0, and
    tqdm draws nothing in no columns)."""
    primary, secondary = pty.openpty()
    fcntl.ioctl(secondary, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    return primary, secondary


def run_job(ranks, tty: bool, **env):
    cmd = mpiexec_command(ranks) + [sys.executable, "-c", JOB]
    if not tty:
        out = subprocess.run(cmd, capture_output=True, timeout=180,
                             env=clean_environment(**env))
        assert out.returncode == 0, out.stderr.decode()[-2000:]
        return out.stdout.decode() + out.stderr.decode()
    primary, secondary = terminal()
    proc = subprocess.Popen(cmd, stdout=secondary, stderr=secondary, stdin=subprocess.DEVNULL,
                            env=clean_environment(**env))
    os.close(secondary)
    chunks = []
    while True:
        ready, _, _ = select.select([primary], [], [], 180)
        if not ready:
            proc.kill()
            raise AssertionError("the job wrote nothing for 180 s")
        try:
            data = os.read(primary, 65536)
        except OSError:                 # the terminal closed: the job ended
            break
        if not data:
            break
        chunks.append(data)
    os.close(primary)
    assert proc.wait(timeout=60) == 0, b"".join(chunks).decode(errors="replace")[-2000:]
    return b"".join(chunks).decode(errors="replace")


@pytest.mark.parametrize("ranks", [1, 2])
def test_bars_on_a_terminal(ranks):
    """mpiexec forwards rank 0's output to our terminal, but the rank's own
    stdout is a pipe to the launcher; so the bars are asked for explicitly
    there (XDAP_PROGRESS=1) -- and without mpiexec a terminal is enough."""
    text = run_job(ranks, tty=True, XDAP_PROGRESS="1")
    for what in ("xdap save", "xdap load", "xdap migrate"):
        assert what in text, text[-2000:]
    assert "%|" in text                 # a drawn bar


def test_silent_in_a_pipe_and_when_turned_off():
    text = run_job(2, tty=False)
    assert "xdap save" not in text and "%|" not in text, text[-2000:]
    text = run_job(2, tty=True, XDAP_PROGRESS="0")
    assert "xdap save" not in text and "%|" not in text, text[-2000:]


def test_a_terminal_alone_turns_bars_on(tmp_path):
    """One process, no launcher: stdout is the terminal itself."""
    primary, secondary = terminal()
    code = JOB.replace("comm = MPI.COMM_WORLD", "comm = MPI.COMM_SELF")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=secondary, stderr=secondary,
                            env=clean_environment())
    os.close(secondary)
    out = b""
    while True:
        try:
            data = os.read(primary, 65536)
        except OSError:
            break
        if not data:
            break
        out += data
    os.close(primary)
    assert proc.wait(timeout=120) == 0, out.decode(errors="replace")[-2000:]
    assert "xdap save" in out.decode(errors="replace")
