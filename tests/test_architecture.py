"""The layer rules of docs/architecture.md hold for the code as it is
(tools/architecture.py reads the real import statements), and the checker
finds a broken rule when there is one."""
import pathlib

from helpers import import_module_at

arch = import_module_at(pathlib.Path(__file__).resolve().parent.parent / "tools" /
                        "architecture.py", "architecture")


def test_the_layers_hold():
    mods = arch.modules()
    edges = arch.imports(mods)
    assert arch.violations(mods, edges) == []
    # the engines are reached only from above: nothing below the surface imports it
    for name, targets in edges.items():
        if arch.layer_of(name) < arch.layer_of("xdap.array"):
            assert "xdap.array" not in targets and "xdap" not in targets, name


def test_the_checker_sees_an_upward_import_and_a_circle():
    mods = arch.modules()
    edges = arch.imports(mods)
    edges["xdap.maps"] = edges.get("xdap.maps", set()) | {"xdap.array"}
    broken = arch.violations(mods, edges)
    assert any("xdap.maps imports xdap.array" in b for b in broken)
    assert any(b.startswith("import circle:") and "xdap.maps" in b for b in broken)
