"""Command line: ``python -m xdap`` (or ``xdap``).

    xdap info    versions of xdap, the xnd stack and MPI
    xdap demo    the main job: run it under mpiexec (``make demo`` = 4 ranks)
    xdap kernel config HEADER.h [-o FILE.cfg]   skeleton kernel config
    xdap kernel build FILE.cfg [--out DIR]      build a gumath kernel module

The demo distributes a ragged dataset with missing values
(``var * var * ?float64``) block-wise and cyclically, exports each over the
Distributed Array Protocol, re-imports it twice -- once as a consumer that
knows only the DAP spec (NumPy + mpi4py on the bare dict), once with
``xdap.from_distarray`` -- checks both against the serial data and reports.
"""
from __future__ import annotations

import argparse
import sys
import time

import numpy as np


def _info(_args):
    import gumath
    import ndtypes
    import xnd
    from mpi4py import MPI

    import xdap
    print(f"xdap {xdap.__version__}")
    print(f"ndtypes {ndtypes.__version__}, xnd {xnd.__version__}, gumath {gumath.__version__}")
    print(f"mpi4py {__import__('mpi4py').__version__}, {MPI.Get_library_version().splitlines()[0]}")
    print(f"numpy {np.__version__}, Python {sys.version.split()[0]}")
    return 0


def make_ragged_dataset(nrows: int, mean_len: float, na_fraction: float, seed: int = 7):
    """A reproducible ``var * var * ?float64`` dataset as flat parts."""
    from .containers import Parts, pack_validity
    from .types import type_info
    rng = np.random.default_rng(seed)
    lengths = rng.poisson(mean_len, nrows)
    values = rng.standard_normal(int(lengths.sum()))
    valid = rng.random(values.size) >= na_fraction
    offsets = (np.array([0, nrows], np.int32),
               np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32))
    return Parts(type_info("var * var * ?float64"), values, pack_validity(valid), offsets)


def spec_only_consumer(d: dict, comm):
    """Read a DAP dict the way a consumer that knows only the spec would:
    place each rank's buffer values at their global positions ('b' start or
    'u' indices) and gather the whole 1-d array on every rank."""
    dd = d["dim_data"][0]
    buf = np.asarray(memoryview(d["buffer"]))
    if dd["dist_type"] == "b":
        positions = np.arange(dd["start"], dd["stop"])
    else:
        positions = np.asarray(dd["indices"])
    pieces = comm.allgather((positions, buf))
    out = np.empty(dd["size"], buf.dtype)
    for pos, vals in pieces:
        out[pos] = vals
    return out


def _demo(args):
    from mpi4py import MPI

    import xdap
    from .containers import container, parts

    comm = MPI.COMM_WORLD
    rank, size = comm.rank, comm.size
    say = print if rank == 0 else (lambda *a, **k: None)
    serial = make_ragged_dataset(args.rows, args.mean_length, args.missing)
    data = container(serial) if rank == 0 else None
    total_leaves = serial.values.size
    say(f"xdap {xdap.__version__} demo on {size} MPI rank(s)")
    say(f"dataset: {args.rows} rows x ~{args.mean_length:g} values, "
        f"{100 * args.missing:.0f}% missing -> {total_leaves} values, type 'var * var * ?float64'")
    ok = True
    for dist, label in ((("b",), "block"), (("c",), "cyclic")):
        comm.Barrier()
        t0 = time.perf_counter()
        a = xdap.from_global(data, dist=dist, root=0, comm=comm)
        t1 = time.perf_counter()
        d = a.__distarray__()
        t2 = time.perf_counter()
        flat = spec_only_consumer(d, comm)
        t3 = time.perf_counter()
        b = xdap.from_distarray(d, comm=comm)
        t4 = time.perf_counter()
        back = b.to_global()
        t5 = time.perf_counter()

        zero_copy = bool(np.shares_memory(np.asarray(memoryview(d["buffer"])), parts(b.local).values))
        got = parts(back)
        same_layout = (np.array_equal(got.offsets[1], serial.offsets[1])
                       and np.array_equal(got.valid_mask(), serial.valid_mask()))
        valid = serial.valid_mask()
        same_values = np.array_equal(got.values[valid], serial.values[valid])
        spec_values = np.array_equal(flat[valid], serial.values[valid])
        local_rows = comm.gather(a.distribution.local_shape[0], root=0)
        local_leaves = comm.gather(len(parts(a.local).values), root=0)
        good = comm.allreduce(int(same_layout and same_values and spec_values and zero_copy), MPI.MIN)
        ok &= bool(good)
        say(f"\n[{label}] {a!r}")
        say(f"  rows per rank    {local_rows}   values per rank {local_leaves}")
        say(f"  DAP leaf dim     dist_type '{d['dim_data'][0]['dist_type']}', size "
            f"{d['dim_data'][0]['size']}; rows: {a.dim_data[0]['dist_type']!r}")
        say(f"  spec-only read   {'OK' if spec_values else 'MISMATCH'} (values at their global positions)")
        say(f"  xdap re-import   {'OK' if same_values and same_layout else 'MISMATCH'} "
            f"(offsets, validity and values equal the serial data); buffer shared zero-copy: {zero_copy}")
        say(f"  time [ms]        distribute {1e3 * (t1 - t0):.1f}, export {1e3 * (t2 - t1):.3f}, "
            f"spec read {1e3 * (t3 - t2):.1f}, import {1e3 * (t4 - t3):.1f}, to_global {1e3 * (t5 - t4):.1f}")
    say("\nresult: " + ("all checks passed" if ok else "FAILED"))
    return 0 if ok else 1


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
    out_dir = pathlib.Path(args.out) if args.out else pathlib.Path(args.cfg).resolve().parent
    try:
        target = build(args.cfg, out_dir, extra_cflags=shlex.split(args.cflags),
                       extra_ldflags=shlex.split(args.ldflags))
    except (ValueError, BuildError) as e:
        print(f"xdap kernel build: {e}", file=sys.stderr)
        return 2
    print(f"built {target}")
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
    bld.set_defaults(run=_kernel_build)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="xdap", description="Typed distributed arrays over MPI.")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("info", help="versions of xdap, the xnd stack and MPI").set_defaults(run=_info)
    demo = sub.add_parser("demo", help="distribute, export and re-import a ragged dataset (run under mpiexec)")
    demo.add_argument("--rows", type=int, default=200_000)
    demo.add_argument("--mean-length", type=float, default=10.0)
    demo.add_argument("--missing", type=float, default=0.1, help="fraction of missing values")
    demo.set_defaults(run=_demo)
    _add_kernel_commands(sub)
    args = parser.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
