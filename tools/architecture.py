"""xdap's layers: read the real import graph, check the rules, draw the picture.

    .venv/bin/python tools/architecture.py            # check, then draw docs/architecture.png
    .venv/bin/python tools/architecture.py --check    # check only (tests/test_architecture.py)

The graph comes from the import statements of every module under xdap/
(parsed with ``ast``; docstrings and comments do not count).  The rules
(docs/architecture.md):

1. no import circle;
2. every import points down: a module never imports one of a higher layer
   -- in particular no engine imports the surface (``xdap.array``,
   ``xdap/__init__.py``), and the core imports no engine;
3. one module sends bytes between ranks: only ``xdap.transport`` imports the
   MPI primitives of ``xdap.exchange`` (engines compute routes).
"""
from __future__ import annotations

import ast
import collections
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "xdap"

# Bottom to top.  A module belongs to the first layer with a matching prefix.
LAYERS = [
    ("core: what things are", ["xdap.dtypes", "xdap.types", "xdap.maps", "xdap.arraylike",
                                "xdap.abort", "xdap.watch", "xdap.progress",
                                "xdap.optional", "xdap.labels"]),
    ("core: where they live", ["xdap.comm", "xdap._envelope", "xdap.ledger", "xdap.agreement",
                               "xdap.contract", "xdap.arguments",
                               "xdap.plans", "xdap.repeats", "xdap.partitions",
                               "xdap.bitmaps", "xdap.parts", "xdap.rows", "xdap._xndbuf",
                               "xdap.distribution", "xdap.heap"]),
    ("core: how they move", ["xdap.exchange", "xdap.packing", "xdap.transport", "xdap.directory"]),
    ("engines: (Distribution, Parts) in and out",
     ["xdap.codegen", "xdap._apply", "xdap.kernels", "xdap.create", "xdap.movement", "xdap.linalg",
      "xdap.protocols", "xdap.io", "xdap.mesh"]),
    ("surface: the public functions, by the standard's categories", ["xdap.api"]),
    ("surface: DistArray and the namespaces", ["xdap.array", "xdap.array_api", "xdap.printing",
                                                "xdap.pictures", "xdap"]),
    ("applications", ["xdap.cli", "xdap.demo", "xdap.demo_mesh", "xdap.__main__", "xdap.launcher"]),
]
# Bytes move between ranks through one module: the MPI primitives
# (xdap.exchange) are the transport's alone; everything else computes routes.
SENDERS = {"xdap.exchange": {"xdap.transport"}}
C_EXTENSIONS = ("xdap._xndbuf", "xdap._envelope", "xdap._apply")


def modules() -> dict:
    """{module name: path} of every Python module of the package, plus the
    C extensions (which have no imports of their own here)."""
    out = {name: None for name in C_EXTENSIONS}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def layer_of(name: str) -> int:
    best, length = None, -1
    for i, (_, prefixes) in enumerate(LAYERS):
        for p in prefixes:
            if (name == p or name.startswith(p + ".")) and len(p) > length:
                best, length = i, len(p)
    if best is None:
        raise SystemExit(f"architecture: module {name} is in no layer (add it to LAYERS)")
    return best


def imports(mods: dict) -> dict:
    """{module: set of xdap modules it imports}: ``from .. import x`` counts
    as importing the submodule x when there is one, else the package."""
    edges = collections.defaultdict(set)
    for name, path in mods.items():
        if path is None:
            continue
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[:len(package.split(".")) - node.level + 1]
                    base = ".".join(up + ([node.module] if node.module else []))
                subs = {f"{base}.{a.name}" for a in node.names} & mods.keys()
                targets = subs | ({base} if len(subs) < len(node.names) else set())
            elif isinstance(node, ast.Import):
                targets = {a.name for a in node.names}
            else:
                continue
            edges[name] |= {t for t in targets if t in mods and t != name}
    return edges


def violations(mods: dict, edges: dict) -> list:
    """The broken rules, as sentences (empty: the house is in order)."""
    out = []
    for a, targets in sorted(edges.items()):
        for b in sorted(targets):
            if b in SENDERS and a not in SENDERS[b]:
                out.append(f"{a} imports {b}: only {', '.join(sorted(SENDERS[b]))} may (the "
                           "one module that sends bytes between ranks; compute a route and "
                           "call xdap.transport instead)")
            if layer_of(b) > layer_of(a):
                out.append(f"{a} imports {b}, a module of a higher layer "
                           f"({LAYERS[layer_of(b)][0]!r} above {LAYERS[layer_of(a)][0]!r})")
    state, stack = {}, []

    def visit(u):
        state[u] = 1
        stack.append(u)
        for v in sorted(edges.get(u, ())):
            if state.get(v) == 1:
                out.append("import circle: " + " -> ".join(stack[stack.index(v):] + [v]))
            elif v not in state:
                visit(v)
        stack.pop()
        state[u] = 2
    for m in sorted(mods):
        if m not in state:
            visit(m)
    return out


def unit(name: str) -> str:
    """The box a module is drawn in: its package under xdap, or itself."""
    parts = name.split(".")
    return ".".join(parts[:2]) if len(parts) > 2 else name


def draw(mods: dict, edges: dict, out: pathlib.Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

    lines = collections.Counter()
    for name, path in mods.items():
        if path is not None:
            lines[unit(name)] += len(path.read_text().splitlines())
    units = sorted({unit(m) for m in mods}, key=lambda u: (layer_of(u), u))
    rows = collections.defaultdict(list)
    for u in units:
        rows[layer_of(u)].append(u)
    fig, ax = plt.subplots(figsize=(13, 10))
    ax.set_xlim(0, 13)
    ax.set_ylim(-0.2, 2.1 * len(LAYERS))
    ax.axis("off")
    where = {}
    colors = ["#dbe9f6", "#c6dbef", "#b3cde3", "#fde0c5", "#fdd0a2", "#d9f0d3", "#eeeeee", "#f2f2f2"]
    for i, (title, _) in enumerate(LAYERS):
        y = 2.1 * i
        ax.add_patch(FancyBboxPatch((0.05, y), 12.9, 1.7, boxstyle="round,pad=0.02",
                                    fc=colors[i], ec="none", zorder=0))
        ax.text(0.15, y + 1.55, title, fontsize=10, fontweight="bold", va="top")
        row = rows[i]
        width = min(2.0, 12.4 / max(len(row), 1))
        for j, u in enumerate(row):
            x = 0.3 + j * (12.5 / max(len(row), 1))
            label = u.replace("xdap.", "") if u != "xdap" else "__init__"
            if u in C_EXTENSIONS:
                label += " (C)"
            elif mods.get(u) is None or mods[u].name == "__init__.py":
                label += "/" if u != "xdap" else ""
            ax.add_patch(FancyBboxPatch((x, y + 0.2), width - 0.25, 0.95,
                                        boxstyle="round,pad=0.02", fc="white", ec="#4a6fa5"))
            ax.text(x + (width - 0.25) / 2, y + 0.75, label, ha="center", fontsize=9)
            ax.text(x + (width - 0.25) / 2, y + 0.38, f"{lines[u]} lines" if lines[u] else "",
                    ha="center", fontsize=7, color="#555555")
            where[u] = (x, x + width - 0.25, y + 0.2, y + 1.15)
    pairs = {(unit(a), unit(b)) for a, bs in edges.items() for b in bs if unit(a) != unit(b)}
    for a, b in sorted(pairs):
        (a0, a1, ay0, ay1), (b0, b1, by0, by1) = where[a], where[b]
        if layer_of(a) == layer_of(b):          # side to side, arched over the row
            right = b0 > a0
            start, end = ((a1, (ay0 + ay1) / 2), (b0, (by0 + by1) / 2)) if right else \
                ((a0, (ay0 + ay1) / 2), (b1, (by0 + by1) / 2))
            style, color = f"arc3,rad={-0.25 if right else 0.25}", "#b05050"
        else:
            start, end = ((a0 + a1) / 2, ay0), ((b0 + b1) / 2, by1)
            style, color = "arc3,rad=0.05", "#7a8ca3"
        ax.add_patch(FancyArrowPatch(start, end, arrowstyle="-|>", mutation_scale=8, lw=0.6,
                                     color=color, alpha=0.7, connectionstyle=style, zorder=1))
    ax.text(0.1, -0.15, "boxes: modules and packages of xdap/ (lines); arrows: imports, "
            "pointing down (red: within a layer, side to side). Generated by "
            "tools/architecture.py from the import statements.", fontsize=8, color="#444444")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def main(argv) -> int:
    mods = modules()
    edges = imports(mods)
    broken = violations(mods, edges)
    for line in broken:
        print("architecture:", line)
    if broken:
        return 1
    if "--check" not in argv:
        out = ROOT / "docs" / "architecture.png"
        draw(mods, edges, out)
        print(f"architecture: the layers hold; drew {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
