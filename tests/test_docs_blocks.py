"""Every Python block of README.md and docs/*.md runs as a reader would run it.

A reader copies a block into a file and runs it -- under ``mpiexec -n N``
when the block's first lines say so, else as ``python this.py`` (one rank).
A block that uses what an earlier block made says so on its first line,
``# continues the block above``: it runs after that block (and whatever it
continued), in one script, on that script's rank count.  Every block runs
here in a fresh directory that all ranks share (blocks write stores and
pictures); ``test_*`` functions a block defines (docs/testing.md) are called
as pytest would, with ``comm``.

Blocks that need files the page builds from C sources (docs/kernels.md's
``*_demo.py`` scripts) run in the tests named in ``ELSEWHERE``, which check
their values too; tests/test_doc_examples.py checks the values of many of
the blocks run here.
"""
import os
import pathlib
import re
import shutil
import sys
import tempfile
from dataclasses import dataclass

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))
CONTINUES = "# continues the block above"

# first line of a block -> the test of tests/test_doc_examples.py that runs it
ELSEWHERE = {
    "# square_demo.py": "test_kernel_tutorial_runs_as_written",
    "# add_demo.py": "test_kernel_add_demo_runs_as_written",
    "# core_demo.py": "test_kernel_core_dims_example_runs_as_written",
    "# fidelity_demo.py": "test_kernel_fidelity_demo_runs_as_written",
}


@dataclass
class Block:
    page: str          # relative to the repository root
    line: int          # of the opening fence
    code: str
    script: str        # this block with the blocks it continues, as one script
    ranks: int

    @property
    def name(self) -> str:
        return f"{self.page}:{self.line}"

    def elsewhere(self):
        first = self.code.splitlines()[0] if self.code.strip() else ""
        return next((test for start, test in ELSEWHERE.items() if first.startswith(start)),
                    None)


def _ranks(code: str) -> int:
    """``mpiexec -n N`` in a block's opening comment lines, else 1."""
    for line in code.splitlines()[:3]:
        if not line.startswith("#"):
            break
        m = re.search(r"mpiexec -n (\d+)", line)
        if m:
            return int(m.group(1))
    return 1


def doc_blocks() -> list:
    out = []
    for page in PAGES:
        text = page.read_text()
        previous = None
        for m in re.finditer(r"^```python\n(.*?)^```", text, re.S | re.M):
            code = m.group(1)
            line = text.count("\n", 0, m.start()) + 1
            rel = str(page.relative_to(ROOT))
            if code.startswith(CONTINUES):
                if previous is None:
                    raise AssertionError(f"{rel}:{line} continues no block")
                block = Block(rel, line, code, previous.script + "\n" + code, previous.ranks)
            else:
                block = Block(rel, line, code, code, _ranks(code))
            out.append(block)
            previous = block
    return out


BLOCKS = doc_blocks()


def test_every_block_is_run_somewhere():
    """Each block runs here or in a test of test_doc_examples.py that exists."""
    source = (ROOT / "tests" / "test_doc_examples.py").read_text()
    assert BLOCKS and all(b.ranks >= 1 for b in BLOCKS)
    for b in BLOCKS:
        test = b.elsewhere()
        if test is not None:
            assert f"def {test}(" in source, f"{b.name}: {test} is not in test_doc_examples.py"


@pytest.mark.parametrize("block", [pytest.param(b, id=b.name, marks=pytest.mark.mpi(ranks=(b.ranks,)))
                                   for b in BLOCKS if b.elsewhere() is None])
def test_block_runs_as_written(block, comm):
    where = comm.bcast(tempfile.mkdtemp(prefix="xdap-doc-") if comm.rank == 0 else None)
    here, argv = os.getcwd(), sys.argv
    scope = {"__name__": "__main__", "__file__": os.path.join(where, "this.py")}
    try:
        os.chdir(where)
        sys.argv = ["this.py"]
        exec(compile(block.script, block.name, "exec"), scope)
        for name, fn in list(scope.items()):
            if name.startswith("test_") and callable(fn):     # as pytest would call it
                fn(comm) if "comm" in fn.__code__.co_varnames[:fn.__code__.co_argcount] else fn()
    finally:
        os.chdir(here)
        sys.argv = argv
        if "matplotlib.pyplot" in sys.modules:             # figures a block opened
            sys.modules["matplotlib.pyplot"].close("all")
        comm.Barrier()
        if comm.rank == 0:
            shutil.rmtree(where, ignore_errors=True)
