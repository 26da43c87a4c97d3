"""``xdap info``: what a bug report needs, checked against the running
process (not a hard-coded list of versions)."""
import os
import subprocess
import sys
from importlib.metadata import version

from mpi4py import MPI

from xdap.cli import DEPENDENCIES, stack_patches


def test_info_names_the_versions_mpi_launcher_patches_and_kernels():
    out = subprocess.run([sys.executable, "-m", "xdap", "info"], capture_output=True, text=True,
                         timeout=120, env={**os.environ, "XDAP_MPIEXEC": "mpirun --oversubscribe"})
    assert out.returncode == 0, out.stderr
    text = out.stdout
    for name in ("ndtypes", "xnd", "gumath"):
        assert f"{name} {version(name)}" in text
    assert f"Python {sys.version.split()[0]}" in text
    assert MPI.Get_library_version().splitlines()[0].strip() in text
    assert "launcher: mpirun --oversubscribe (XDAP_MPIEXEC)" in text
    assert "kernels: " in text and "XDAP_KERNEL_ARCH" in text
    for name in DEPENDENCIES:
        assert f" {name} " in text
    # the build applies every stack patch a process can tell apart
    patches = stack_patches()
    assert len(patches) == 4 and all(patches.values()), patches
    assert text.count("patch applied:") == 4 and "MISSING" not in text
