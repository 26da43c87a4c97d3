"""The examples of the README, the guide's "Types", "Data born distributed"
and "Errors", and docs/movement.md run as written, on real ranks, and
compute what they say."""
import pathlib
import re
import shutil
import tempfile

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
GUIDE = ROOT / "docs" / "guide.md"


def first_look() -> str:
    return re.search(r"```python\n(.*?)```", README.read_text(), re.S).group(1)


@pytest.mark.mpi(ranks=(4,))           # as the README runs it: grid=(2, 2)
def test_first_look_runs(comm, capsys):
    where = comm.bcast(tempfile.mkdtemp() if comm.rank == 0 else None)
    code = first_look().replace("/tmp/r.xdap", f"{where}/r.xdap")
    scope = {}
    try:
        exec(compile(code, str(README), "exec"), scope)
    finally:
        comm.Barrier()
        if comm.rank == 0:
            shutil.rmtree(where, ignore_errors=True)
    # what the example computed, checked against the global data it started from
    import numpy as np
    assert scope["b"].to_global().value == np.arange(45.0).reshape(5, 9).tolist()
    np.testing.assert_allclose(scope["s"].to_numpy(), np.sin(np.arange(45.0).reshape(5, 9)) * 0.5)
    assert scope["v"].global_shape == (3 * comm.size,)
    assert scope["m"].to_global().value == [0.5 * i for i in range(4 * comm.size)]
    i, j = np.indices((6, 8))
    assert scope["x"].to_global().value == (i * 100 + j).tolist()


def born_distributed() -> str:
    text = GUIDE.read_text()
    section = text[text.index("## Data born distributed"):text.index("## Maps:")]
    return "\n".join(re.findall(r"```python\n(.*?)```", section, re.S))


@pytest.mark.mpi(ranks=(1, 2, 4))
def test_guide_born_distributed_runs(comm):
    import numpy as np
    scope = {}
    exec(compile(born_distributed(), str(GUIDE), "exec"), scope)
    P = comm.size
    assert scope["b"].global_shape == (sum(r + 2 for r in range(P)), 3)
    assert scope["u"].to_global().value == [float(i) for i in range(40)]
    assert scope["moved"].to_global().value == scope["u"].to_global().value
    assert scope["other"].to_global().value == [2.0 * i for i in range(40)]
    assert scope["g"].to_global().value == [float(i) for i in range(40)]
    i, j = np.indices((1000, 64))
    np.testing.assert_allclose(np.array(scope["f"].to_global().value), np.sin(i) * j)
    assert scope["r"].to_global().value == list(np.arange(10 ** 6, dtype=float))


@pytest.mark.mpi(ranks=(4,))           # its partition examples need 4 ranks
def test_movement_doc_runs(comm):
    text = (ROOT / "docs" / "movement.md").read_text()
    code = "import numpy as np, xdap\nfrom mpi4py import MPI\n" + \
        "\n".join(re.findall(r"```python\n(.*?)```", text, re.S))
    scope = {}
    exec(compile(code, "docs/movement.md", "exec"), scope)
    r = comm.rank
    want = [r, r, r + 1, r + 1] if r < comm.size - 1 else [r] * 4
    assert scope["mesh"].local.value == [float(v) for v in want]
    # the migration example's c: another field (a * 10) moved by the plan
    assert scope["c"].to_global().value == [10.0 * v for v in scope["a"].to_global().value]


@pytest.mark.mpi(ranks=(1, 2, 4))
def test_guide_types_example(comm, capsys):
    import numpy as np
    text = GUIDE.read_text()
    section = text[text.index("## Types: what a partition can be"):text.index("## Distributions")]
    scope = {}
    exec(compile("\n".join(re.findall(r"```python\n(.*?)```", section, re.S)), str(GUIDE),
                 "exec"), scope)
    assert scope["total"] == 4.0
    got = scope["p"].to_global()
    assert [v["pos"] for v in got.value] == (np.arange(24.0).reshape(8, 3) * 2).tolist()
    assert scope["p"].local_numpy()["id"].tolist() == list(range(comm.rank, 8, comm.size))
    assert scope["colors"].to_global().value == ["red", None, "green", "red"]
    assert scope["names"].local.value == ["Oslo", "Zürich", "", "Lyon"][comm.rank::comm.size]


@pytest.mark.mpi(ranks=(2, 3))
def test_guide_errors_example(comm, capsys):
    text = GUIDE.read_text()
    section = text[text.index("## Errors"):text.index("## Where next")]
    code = "\n".join(re.findall(r"```python\n(.*?)```", section, re.S))
    exec(compile(code, str(GUIDE), "exec"), {})
    printed = capsys.readouterr().out
    assert "to_global: root must be the same on every rank: rank 0 passed 0, rank 1 1" in printed


def _kernel_tutorial():
    """docs/kernels.md Example 1: {file name: text} of its C files, its cfg
    and its calling script, as the page shows them."""
    text = (ROOT / "docs" / "kernels.md").read_text()
    section = text[text.index("### Example 1"):text.index("### Example 2")]
    files = {}
    for lang, body in re.findall(r"```(c|python|ini)\n(.*?)```", section, re.S):
        if lang == "ini":
            files["square-kernels.cfg (as shown)"] = body
            continue
        first = body.splitlines()[0]
        name = re.search(r"(square[\w.]*\.(?:h|c|py))", first).group(1)
        files[name] = body
    return files


@pytest.mark.mpi(ranks=(4,))           # the page runs it on 4 ranks
def test_kernel_tutorial_runs_as_written(comm, capsys):
    """From the C function to a DistArray on 4 ranks, with the page's own
    files and commands (the CLI as `python -m xdap`, which .venv/bin/xdap is)."""
    import os
    import subprocess
    import sys

    import numpy as np
    from xdap.agreement import agree
    files = _kernel_tutorial()
    where, error = None, None
    if comm.rank == 0:
        where = tempfile.mkdtemp(prefix="xdap-tutorial-")
        try:
            for name in ("square.h", "square.c", "square_demo.py"):
                pathlib.Path(where, name).write_text(files[name])
            # a command of its own, not a rank of this job: without the launcher's variables
            from xdap.launcher import clean_environment
            env = clean_environment()
            for cmd in (["kernel", "config", "square.h"], ["kernel", "build", "square-kernels.cfg"]):
                subprocess.run([sys.executable, "-m", "xdap", *cmd], cwd=where, check=True,
                               capture_output=True, text=True, env=env)
            # the cfg the page shows is the one `xdap kernel config` writes
            written = pathlib.Path(where, "square-kernels.cfg").read_text()
            shown = files["square-kernels.cfg (as shown)"]
            if [x.strip() for x in written.splitlines() if x.strip()] != \
                    [x.strip() for x in shown.splitlines() if x.strip()]:
                error = ValueError(f"docs/kernels.md shows another cfg than xdap writes:\n{written}")
        except subprocess.CalledProcessError as e:
            error = ValueError(f"{e.cmd}: {e.stderr}")
    agree(comm, error)
    where = comm.bcast(where)
    here = os.getcwd()
    scope = {"__name__": "__main__"}
    sys.modules.pop("square", None)       # this module, not one another test built
    try:
        os.chdir(where)
        exec(compile(files["square_demo.py"], "docs/kernels.md (square_demo.py)", "exec"), scope)
    finally:
        os.chdir(here)
        sys.path[:] = [p for p in sys.path if p != "."]
        comm.Barrier()
        if comm.rank == 0:
            shutil.rmtree(where, ignore_errors=True)
    grid = np.linspace(-1, 1, 9)
    np.testing.assert_allclose(scope["b"].to_numpy(), grid ** 2)
    np.testing.assert_allclose(scope["a"].to_numpy(), grid ** 2)         # out= wrote a
    assert scope["total"] == pytest.approx(3.75)
    out = capsys.readouterr().out
    if comm.rank == 0:
        assert "xnd([1.0, 4.0, 9.0], type='3 * float64')" in out
        assert out.count("sum of squares 3.7500") == comm.size
        for r in range(comm.size):
            assert f"[rank {r}] " in out


@pytest.mark.mpi(ranks=(2, 4))
def test_exchange_doc_runs(comm, capsys):
    """docs/exchange.md's Arrow/Awkward and save/load examples, as written,
    in a fresh directory; they print what they computed."""
    import os
    import numpy as np
    text = (ROOT / "docs" / "exchange.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    code = [b for b in blocks if "to_awkward" in b or "xdap.load" in b]
    assert len(code) == 2
    where = comm.bcast(tempfile.mkdtemp() if comm.rank == 0 else None)
    here, scopes = os.getcwd(), []
    try:
        os.chdir(where)
        for block in code:
            scopes.append({})
            exec(compile(block, "docs/exchange.md", "exec"), scopes[-1])
    finally:
        os.chdir(here)
        comm.Barrier()
        if comm.rank == 0:
            shutil.rmtree(where, ignore_errors=True)
    arrow, store = scopes
    assert arrow["y"].value == [[1.0, None], [], [2.0]] and arrow["k"].tolist() == [[1.0], [2.0, 3.0]]
    assert arrow["a"].global_shape == (2 * comm.size, None)     # rows, ragged lists
    want = np.ma.array(np.arange(12.0), mask=[0, 1] * 6)
    got = store["c"].to_numpy()
    assert (got.mask == want.mask).all() and (got.data[~want.mask] == want.data[~want.mask]).all()
    assert store["b"].distribution.maps == store["a"].distribution.maps
    assert "[[1.0, None], [], [2.0]]" in capsys.readouterr().out


def _dap_doc_block(marker):
    text = (ROOT / "docs" / "dap.md").read_text()
    return [b for b in re.findall(r"```python\n(.*?)```", text, re.S) if marker in b][0]


@pytest.mark.mpi(ranks=(2,))           # as the page runs it
def test_dap_doc_padded_block_runs(comm, capsys):
    scope = {}
    exec(compile(_dap_doc_block("-n 2"), "docs/dap.md", "exec"), scope)
    dd = scope["d"]["dim_data"][0]
    assert (dd["start"], dd["stop"], tuple(dd["padding"])) == \
        ((0, 10, (1, 1)) if comm.rank == 0 else (8, 18, (1, 1)))


@pytest.mark.mpi(ranks=(3,))           # as the page runs it
def test_dap_doc_ragged_runs(comm, capsys):
    scope = {}
    exec(compile(_dap_doc_block("-n 3"), "docs/dap.md", "exec"), scope)
    assert scope["leaf"]["dist_type"] == "u"
    assert scope["b"].to_global().value == scope["rows"]


def _run_kernel_demo(comm, cfg, sources, marker, module, extra=None):
    """Build ``cfg`` (with ``sources``) from tests/kernel_examples as the page
    says (``xdap kernel build``), then run the page's block that starts with
    ``marker`` in that directory, as written; ``extra(scope)`` runs there
    too.  The block's scope."""
    import os
    import subprocess
    import sys
    from xdap.agreement import agree
    text = (ROOT / "docs" / "kernels.md").read_text()
    demo = re.search(rf"```python\n({re.escape(marker)}.*?)```", text, re.S).group(1)
    where, error = None, None
    if comm.rank == 0:
        where = tempfile.mkdtemp(prefix="xdap-demo-")
        for f in (cfg,) + sources:
            shutil.copy(ROOT / "tests" / "kernel_examples" / f, where)
        from xdap.launcher import clean_environment
        proc = subprocess.run([sys.executable, "-m", "xdap", "kernel", "build", cfg],
                              cwd=where, capture_output=True, text=True, env=clean_environment())
        if proc.returncode:
            error = ValueError(f"xdap kernel build {cfg}: {proc.stderr}")
    agree(comm, error)
    where = comm.bcast(where)
    here = os.getcwd()
    scope = {"__name__": "__main__"}
    sys.modules.pop(module, None)
    sys.path_importer_cache.pop(".", None)   # "." was another directory in an earlier test
    try:
        os.chdir(where)
        exec(compile(demo, f"docs/kernels.md ({marker[2:]})", "exec"), scope)
        if extra is not None:
            extra(scope)
    finally:
        os.chdir(here)
        sys.path[:] = [p for p in sys.path if p != "."]
        sys.modules.pop(module, None)
        comm.Barrier()
        if comm.rank == 0:
            shutil.rmtree(where, ignore_errors=True)
    return scope


@pytest.mark.mpi(ranks=(1, 4))
def test_kernel_core_dims_example_runs_as_written(comm):
    """docs/kernels.md "Kernels with core dimensions": linalg.cfg built as
    the page says, core_demo.py as it shows it, values against NumPy."""
    import numpy as np

    def refusal(scope):
        if comm.size > 1:       # the refusal the page's last lines describe
            with pytest.raises(ValueError, match=r"redistribute it first, e.g. "
                                                 r"a.redistribute\(dist=\('b', 'n'\)\)"):
                scope["rowsum"](scope["cols"])
    scope = _run_kernel_demo(comm, "linalg.cfg", ("linalg.c", "linalg.h"), "# core_demo.py",
                             "xk_linalg", refusal)
    A = np.arange(32.0).reshape(8, 4)
    np.testing.assert_allclose(scope["s"].to_numpy(), A.sum(axis=1))
    np.testing.assert_allclose(scope["y"].to_numpy(), A @ np.ones(4))
    np.testing.assert_allclose(scope["z"].to_numpy(), np.einsum("rmn,rn->rm", np.ones((8, 3, 4)), A))


@pytest.mark.mpi(ranks=(1, 4))
def test_kernel_add_demo_runs_as_written(comm):
    """docs/kernels.md Example 2: add-kernels.cfg built as the page says,
    add_demo.py as it shows it; r holds x + y."""
    import numpy as np
    scope = _run_kernel_demo(comm, "add-kernels.cfg", ("add.c", "add.h"), "# add_demo.py",
                             "add_cpu")
    np.testing.assert_array_equal(scope["r"].to_numpy(), np.arange(8, dtype=np.float32) + 0.5)


@pytest.mark.mpi(ranks=(1, 4))
def test_guide_numpy_habits_runs(comm):
    """docs/guide.md "NumPy habits on distributed data", as written."""
    import numpy as np
    text = GUIDE.read_text()
    code = re.search(r"```python\n(# habits.py.*?)```", text, re.S).group(1)
    scope = {}
    exec(compile(code, str(GUIDE), "exec"), scope)
    g = np.arange(40.0).reshape(8, 5)
    # NumPy's semantics, in the guide's order: slices are views (the write
    # to row 0 shows through them), a mask selection is a copy
    inner, column, flipped, big = g[1:-1], g[:, 0], g[::-1], g[g > 20]
    g[0] = -1.0
    np.testing.assert_array_equal(scope["inner"].to_numpy(), inner)
    np.testing.assert_array_equal(scope["column"].to_numpy(), column)
    np.testing.assert_array_equal(scope["flipped"].to_numpy(), flipped)
    np.testing.assert_array_equal(scope["big"].to_numpy(), big)
    assert column[0] == -1.0 and flipped[-1, 0] == -1.0
    np.testing.assert_allclose(scope["centred"].to_numpy(), g - g.mean(axis=0))
    np.testing.assert_array_equal(scope["scaled"].to_numpy(), g * np.arange(5.0))
    np.testing.assert_array_equal(scope["order"].to_numpy(), np.argsort(g[:, 1], kind="stable"))
    np.testing.assert_array_equal(scope["top"].to_numpy(), np.sort(g[:, 1])[::-1])


@pytest.mark.mpi(ranks=(1, 4))
def test_mesh_pipeline_doc_runs(comm, tmp_path_factory):
    """docs/mesh.md "The pipeline in code", as written (in a temporary
    directory), against NumPy on the whole mesh."""
    import os
    import numpy as np
    text = (ROOT / "docs" / "mesh.md").read_text()
    code = re.search(r"```python\n(# run with.*?)```", text, re.S).group(1)
    where = comm.bcast(str(tmp_path_factory.mktemp("meshdoc")) if comm.rank == 0 else None)
    here = os.getcwd()
    os.chdir(where)
    try:
        scope = {}
        exec(compile(code, "docs/mesh.md", "exec"), scope)
    finally:
        os.chdir(here)
    import meshio
    m = meshio.read(os.path.join(where, "box", "box.xdmf"))
    tets = m.cells_dict["tetra"]
    corners = m.points[tets]
    vols = np.abs(np.linalg.det(corners[:, 1:] - corners[:, :1])) / 6.0
    ref = np.bincount(tets.ravel(), weights=np.repeat(vols / 4, 4), minlength=len(m.points))
    np.testing.assert_allclose(scope["nodes"].to_numpy(), ref, rtol=1e-12, atol=1e-15)
    layer = scope["layer"]
    np.testing.assert_allclose(scope["ghost_values"], ref[layer.needed], rtol=1e-12, atol=1e-15)
    assert abs(scope["total"] - 1.0) < 1e-9
    written = meshio.read(os.path.join(where, "box", "result.xdmf"))      # write_xdmf's file
    node_id = written.point_data["node_id"]
    np.testing.assert_allclose(written.point_data["volume"], ref[node_id], rtol=1e-12,
                               atol=1e-15)
    np.testing.assert_array_equal(node_id[written.cells_dict["tetra"]],
                                  tets[written.cell_data["cell_id"][0]])


def test_kernel_fidelity_demo_runs_as_written(tmp_path):
    """docs/kernels.md's worked example of xndtools' semantics, as shown
    (its own process: it imports a module named ops)."""
    import subprocess
    import sys
    text = (ROOT / "docs" / "kernels.md").read_text()
    block = re.search(r"```python\n(# fidelity_demo\.py\n.*?)```", text, re.S).group(1)
    (tmp_path / "fidelity_demo.py").write_text(block)
    proc = subprocess.run([sys.executable, "fidelity_demo.py"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
