"""Compile a kernel config into an importable extension module.

``extension_spec`` writes the generated C and returns everything a
setuptools ``Extension`` needs; ``build`` compiles and links directly with
the compiler Python was built with (no setuptools run), putting
``<name><EXT_SUFFIX>`` into ``out_dir``.

>>> sorted(stack_dirs())
['gumath', 'ndtypes', 'xnd']
"""
from __future__ import annotations

import importlib.util
import os
import pathlib
import shlex
import subprocess
import sysconfig
import warnings

from .config import load_config
from .emit import generate_c

# The generated C is held to these; -Wno-unused-parameter because Python.h
# and the stack headers have unused parameters in inline functions.
STRICT_CFLAGS = ("-std=c11", "-O3", "-Wall", "-Wextra", "-Werror", "-Wno-unused-parameter")


def opt_flags() -> list:
    """The optimisation xdap's own kernel library is built with, for the
    generated C and the user's sources alike: -O3, -fno-math-errno (libm
    calls may vectorise; NaN/inf stay IEEE -- no kernel reads errno),
    -march from XDAP_KERNEL_ARCH (default native; empty: none), and
    link-time optimisation without semantic interposition, so the user's
    function inlines into the generated loop across files and the loop
    vectorises (a sqrt(x*x + y*y) kernel called through the PLT ran 1.3x
    slower than the library's hypot)."""
    arch = os.environ.get("XDAP_KERNEL_ARCH", "native")
    return (["-O3", "-fno-math-errno", "-flto", "-fno-semantic-interposition"]
            + ([f"-march={arch}"] if arch else []))


STACK = ("ndtypes", "xnd", "gumath")


class BuildError(RuntimeError):
    """The compiler or linker failed; the message carries its output."""


def stack_dirs() -> dict:
    """Directories of the installed ndtypes, xnd and gumath packages (their
    headers and shared libraries), found without importing them."""
    out = {}
    for name in STACK:
        spec = importlib.util.find_spec(name)
        if spec is None or not spec.submodule_search_locations:
            raise BuildError(f"the '{name}' package is not installed; the kernel generator needs "
                             "the pinned ndtypes/xnd/gumath stack")
        out[name] = str(pathlib.Path(list(spec.submodule_search_locations)[0]).resolve())
    return out


def _write_if_changed(path: pathlib.Path, text: str) -> None:
    # Unchanged sources keep their timestamps, so incremental builds skip them.
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


def extension_spec(cfg_path, build_dir, strict: bool = False) -> dict:
    """Generate the C for ``cfg_path`` into ``build_dir`` and describe the
    extension, e.g. for ``setuptools.Extension(**{k: spec[k] for k in
    EXTENSION_KEYS})`` (prefix ``name`` with the package if it lives in one).

    Keys: name, c_source (the generated file), sources (it + the cfg's
    sources), include_dirs, library_dirs, libraries, runtime_library_dirs,
    extra_compile_args, extra_link_args, config (the ModuleConfig).
    """
    config = load_config(cfg_path, strict)
    build_dir = pathlib.Path(build_dir)
    build_dir.mkdir(parents=True, exist_ok=True)
    c_path = (build_dir / f"{config.name}_kernels.c").resolve()
    _write_if_changed(c_path, generate_c(config))
    stack = list(stack_dirs().values())
    return {
        "name": config.name,
        "c_source": str(c_path),
        "sources": [str(c_path)] + list(config.sources),
        "include_dirs": [str(config.directory)] + list(config.include_dirs) + stack,
        "library_dirs": list(config.library_dirs) + stack,
        "libraries": list(config.libraries) + ["gumath", "xnd", "ndtypes"],
        "runtime_library_dirs": list(config.library_dirs) + stack,
        "extra_compile_args": list(STRICT_CFLAGS),
        "extra_link_args": [],
        "config": config,
    }


EXTENSION_KEYS = ("name", "sources", "include_dirs", "library_dirs", "libraries",
                  "runtime_library_dirs", "extra_compile_args", "extra_link_args")


def _run(cmd, what):
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise BuildError(f"{what} failed ({' '.join(map(shlex.quote, cmd))}):\n"
                         f"{proc.stdout}{proc.stderr}")


class RefusedSections(UserWarning):
    """A kernel config had sections that were not built (the message lists
    each: file, section, key, reason)."""


def build(cfg_path, out_dir, *, extra_cflags=(), extra_ldflags=(),
          strict: bool = False) -> pathlib.Path:
    """Generate, compile and link the module of ``cfg_path`` into ``out_dir``.

    The generated C is compiled with -Wall -Wextra -Werror; the cfg's own
    ``sources`` without warnings (they are the user's code); both with
    ``opt_flags()``, the library's own optimisation.  Returns the path
    of the extension; ``sys.path.insert(0, str(out_dir))`` then
    ``import <name>`` loads it.  Raises ConfigError (a ValueError) for a bad
    cfg and BuildError when the compiler fails.
    """
    out_dir = pathlib.Path(out_dir).resolve()
    spec = extension_spec(cfg_path, out_dir / f"build-{pathlib.Path(cfg_path).stem}", strict)
    refused = spec["config"].refused
    if refused:       # every kernel that can be built is; the rest said at once
        warnings.warn(f"{len(refused)} section(s) of {pathlib.Path(cfg_path).name} not built:\n  "
                      + "\n  ".join(refused), RefusedSections, stacklevel=2)
    cc = shlex.split(sysconfig.get_config_var("CC") or "cc")
    ccshared = shlex.split(sysconfig.get_config_var("CCSHARED") or "-fPIC")
    ldshared = shlex.split(sysconfig.get_config_var("LDSHARED") or "cc -shared")
    includes = [f"-I{d}" for d in [sysconfig.get_paths()["include"]] + spec["include_dirs"]]
    build_dir = pathlib.Path(spec["c_source"]).parent
    objects = []
    for k, src in enumerate(spec["sources"]):
        flags = (spec["extra_compile_args"] if k == 0 else []) + opt_flags()
        obj = build_dir / f"{k}_{pathlib.Path(src).stem}.o"
        _run(cc + ccshared + flags + list(extra_cflags) + includes + ["-c", str(src), "-o", str(obj)],
             f"compiling {src}")
        objects.append(str(obj))
    target = out_dir / (spec["name"] + sysconfig.get_config_var("EXT_SUFFIX"))
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    link = (ldshared + opt_flags() + objects
            + [f"-L{d}" for d in spec["library_dirs"]]
            + [f"-Wl,-rpath,{d}" for d in spec["runtime_library_dirs"]]
            + [f"-l{lib}" for lib in spec["libraries"]]
            + list(extra_ldflags) + ["-o", str(tmp)])
    _run(link, f"linking {target.name}")
    os.replace(tmp, target)  # atomic: a process importing it never sees half a file
    return target
