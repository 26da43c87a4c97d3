"""Command line: ``python -m xdap`` (or ``xdap``).

    xdap info    what a bug report needs: versions, MPI and its launcher, the stack's patches
    xdap demo    the main job: run it under mpiexec (``make demo`` = 4 ranks)
    xdap demo mesh [--tets N] [--mesh FILE] [--out DIR]   the mesh pipeline
    xdap kernel config HEADER.h [-o FILE.cfg]   skeleton kernel config
    xdap kernel build FILE.cfg [--out DIR]      build a gumath kernel module
    xdap show STORE [-o picture.png]            draw how a saved array was distributed

The demo (``xdap/demo.py``) walks through typed ragged data, kernels,
reductions, redistribution, DAP/Arrow/``__partitioned__`` exchange,
save/load, halo exchange and an unstructured mesh, each stage checked against
serial NumPy.
"""
from __future__ import annotations

import argparse
import sys

from .optional import need


# what a bug report needs to know of the libraries xdap uses (installed or not)
DEPENDENCIES = ("numpy", "mpi4py", "mpich", "pyarrow", "awkward", "zarr", "h5py", "meshio",
                "gmsh", "pymetis", "matplotlib", "xarray", "hypothesis", "array-api-strict")


def stack_patches() -> dict:
    """{patch: applied?} for the fixes ``tools/patch_stack.py`` makes to the
    pinned xnd stack that a running process can tell apart (each probe is
    what the unpatched dev3 does differently); the two speed patches of xnd
    (``xnd_init``, ``xnd_clear``) change no behaviour and cannot be probed."""
    from ndtypes import ndt
    from xnd import xnd
    probes = {
        "ndtypes: an empty nested var dimension": lambda: ndt(
            "var(offsets=[0,0]) * var(offsets=[0]) * float64") is not None,
        "ndtypes: complex exported as PEP 3118 'Zd'": lambda: memoryview(
            xnd(1 + 2j)).format.lstrip("=<>@!") == "Zd",
        "xnd: a container's dtype": lambda: xnd([1, None]).dtype == ndt("?int64"),
        "xnd: == compares values": lambda: xnd(6) == xnd(6) and xnd(6) != xnd(6.0),
    }
    out = {}
    for name, probe in probes.items():
        try:
            out[name] = bool(probe())
        except Exception:
            out[name] = False
    return out


def _info(_args):
    """What a bug report needs: versions, the MPI library and launcher, the
    stack's patches, where the kernels are."""
    import os
    import platform
    from importlib.metadata import PackageNotFoundError, version

    from mpi4py import MPI

    import xdap
    from .launcher import mpiexec_command

    def installed(name):
        try:
            return version(name)
        except PackageNotFoundError:
            return "not installed"
    print(f"xdap {xdap.__version__} ({os.path.dirname(xdap.__file__)})")
    print(f"Python {sys.version.split()[0]} ({sys.executable}), {platform.platform()}")
    # the dev3 stack's modules carry no __version__: ask the installed metadata
    print("stack: " + ", ".join(f"{name} {installed(name)}" for name in ("ndtypes", "xnd",
                                                                      "gumath")))
    for name, applied in stack_patches().items():
        print(f"  patch {'applied' if applied else 'MISSING'}: {name}")
    print("dependencies: " + ", ".join(f"{name} {installed(name)}" for name in DEPENDENCIES))
    try:
        h5py = need("h5py")
        print(f"  h5py: HDF5 {h5py.version.hdf5_version}, parallel (MPI) "
              f"{'yes' if h5py.get_config().mpi else 'no'}")
    except ImportError:
        pass
    major, minor = MPI.Get_version()
    print(f"MPI: {MPI.Get_library_version().splitlines()[0].strip()} (standard {major}.{minor}); "
          f"mpi4py {__import__('mpi4py').__version__}")
    launcher = mpiexec_command(1)[:-2]
    print(f"launcher: {' '.join(launcher)}"
          f"{' (XDAP_MPIEXEC)' if os.environ.get('XDAP_MPIEXEC', '').strip() else ''}")
    from .kernels import _unary
    # -march is the build's XDAP_KERNEL_ARCH (setup.py); the module does not record it
    arch = os.environ.get("XDAP_KERNEL_ARCH")
    print(f"kernels: {os.path.dirname(_unary.__file__)} on {platform.machine()}; "
          f"XDAP_KERNEL_ARCH {'unset' if arch is None else repr(arch)} here (a build without "
          "it compiles for -march=native)")
    return 0


def _demo(args):
    from . import demo
    return demo.run(args)


def _demo_mesh(args):
    from . import demo_mesh
    return demo_mesh.run(args)


def _kernel_config(args):
    """`xdap kernel config HEADER.h [-o FILE.cfg]`: skeleton .cfg from a header."""
    from .codegen import write_skeleton
    try:
        out = write_skeleton(args.header, args.output)
    except ValueError as e:
        print(f"xdap kernel config: {e}", file=sys.stderr)
        return 2
    print(f"wrote {out}")
    return 0


def _kernel_build(args):
    """`xdap kernel build FILE.cfg [--out DIR]`: generate, compile, link."""
    import pathlib
    import shlex

    from .codegen import BuildError, build
    import warnings

    from .codegen.build import RefusedSections
    out_dir = pathlib.Path(args.out) if args.out else pathlib.Path(args.cfg).resolve().parent
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", RefusedSections)
            target = build(args.cfg, out_dir, extra_cflags=shlex.split(args.cflags),
                           extra_ldflags=shlex.split(args.ldflags), strict=args.strict)
    except (ValueError, BuildError) as e:
        print(f"xdap kernel build: {e}", file=sys.stderr)
        return 2
    for w in caught:
        if issubclass(w.category, RefusedSections):
            print(f"xdap kernel build: {w.message}", file=sys.stderr)
    print(f"built {target}")
    return 0


def _show(args):
    """`xdap show STORE [-o picture.png]`: who owned what, from a saved store."""
    from .pictures import plot_store
    try:
        ax = plot_store(args.store, max_cells=args.max_cells)
    except (ValueError, TypeError, OSError) as e:
        print(f"xdap show: {e}", file=sys.stderr)
        return 2
    out = args.output or "distribution.png"
    ax.figure.savefig(out, dpi=120)
    print(f"wrote {out}")
    return 0


def _add_kernel_commands(sub):
    kernel = sub.add_parser("kernel", help="author gumath kernels from C functions (docs/kernels.md)")
    ksub = kernel.add_subparsers(dest="kernel_command", required=True)
    cfg = ksub.add_parser("config", help="write a skeleton .cfg from a C header's prototypes")
    cfg.add_argument("header", help="C header with the function prototypes")
    cfg.add_argument("-o", "--output", help="cfg file to write (default: HEADER-kernels.cfg)")
    cfg.set_defaults(run=_kernel_config)
    bld = ksub.add_parser("build", help="build the extension module a .cfg describes")
    bld.add_argument("cfg", help="the kernel configuration (.cfg)")
    bld.add_argument("--out", help="directory for the module (default: the cfg's directory)")
    bld.add_argument("--cflags", default="", help="extra compiler flags, e.g. --cflags='-O3 -march=native'")
    bld.add_argument("--ldflags", default="", help="extra linker flags, e.g. --ldflags='-lm'")
    bld.add_argument("--strict", action="store_true",
                     help="fail when any section is refused (default: build the others, "
                          "list the refused ones)")
    bld.set_defaults(run=_kernel_build)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="xdap", description="Typed distributed arrays over MPI.")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("info", help="what a bug report needs: versions, MPI and its launcher, "
                   "the stack's patches").set_defaults(run=_info)
    demo = sub.add_parser("demo", help="the main job, checked against serial NumPy (run under mpiexec)")
    from .demo import add_arguments
    add_arguments(demo)
    demo.set_defaults(run=_demo)
    demo_sub = demo.add_subparsers(dest="demo_what")
    mesh = demo_sub.add_parser("mesh", help="the mesh pipeline: read in pieces, partition, "
                               "migrate, ghosts, compute, save, show (run under mpiexec)")
    from .demo_mesh import add_arguments as mesh_arguments
    mesh_arguments(mesh)
    mesh.set_defaults(run=_demo_mesh)
    _add_kernel_commands(sub)
    show = sub.add_parser("show", help="draw how a saved array was distributed (docs/format.md)")
    show.add_argument("store", help="a store written by a.save(path)")
    show.add_argument("-o", "--output", help="picture to write (default: distribution.png)")
    show.add_argument("--max-cells", type=int, default=256,
                      help="cells drawn along a dimension before sampling (default 256)")
    show.set_defaults(run=_show)
    args = parser.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
