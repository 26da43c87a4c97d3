"""Build xdap: the Python package and its C extensions.

- `xdap._xndbuf`: zero-copy bridges between xnd containers and flat buffers;
- `xdap._envelope`: the vote's record check (every collective call runs it);
- `xdap._apply`: the fast elementwise dispatcher of xdap.kernels;
- `xdap.kernels._unary`, `_binary`, `_compare`: the kernel library, generated
  at build time from kernel-configs/*.cfg by xdap.codegen (the C functions
  are kernels/xdap_kernels.h).

They compile against the headers and shared libraries that the pinned
ndtypes/xnd/gumath wheels ship inside their packages (tools/build_wheels.sh
builds them), so those must be installed first: pip does that from
pyproject.toml's build requirements (`--find-links wheelhouse`), `make` in
.venv. The metadata -- name, version, dependencies, extras, the `xdap`
command -- is in pyproject.toml; this file only describes the extensions.

The kernel library is compiled with -O3 -fno-math-errno (IEEE NaN/inf kept,
unlike -ffast-math) and, on x86_64 glibc, linked with libmvec so gcc's
vectorised loops call its SIMD sin/exp/...; XDAP_KERNEL_ARCH sets -march
(default "native": the build runs on the machine that uses it; set e.g.
"x86-64-v2" for a portable build, or "" for the compiler's default).
"""
import glob
import importlib.util
import os
import platform
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


def package_dir(name):
    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None:
        raise SystemExit(
            f"setup.py: the '{name}' package is not installed; build the patched "
            "xnd stack's wheels first (tools/build_wheels.sh) and install with "
            "`pip install --find-links wheelhouse .`, or run `make`")
    return os.path.dirname(spec.origin)


stack = [package_dir(name) for name in ("ndtypes", "xnd")]


def numpy_include() -> str:
    """NumPy's C headers: _xndbuf hands out NumPy arrays over xnd memory."""
    import numpy
    return numpy.get_include()


xndbuf = Extension(
    "xdap._xndbuf",
    sources=["xdap/_xndbuf.c"],
    depends=["xdap/_xndmirror.h", "xdap/_numpy_over.h"],     # _xndmirror.h shared with _apply
    include_dirs=stack + [numpy_include()],
    library_dirs=stack,
    libraries=["ndtypes", "xnd"],
    runtime_library_dirs=stack,
    extra_compile_args=["-std=c11", "-O2", "-Wall", "-Wextra", "-Werror",
                        "-Wno-missing-field-initializers", "-Wno-unused-parameter"],
)

# The vote's record check (xdap/_envelope.c): the standard library only.
envelope_ext = Extension(
    "xdap._envelope",
    sources=["xdap/_envelope.c"],
    extra_compile_args=["-std=c11", "-O2", "-Wall", "-Wextra", "-Werror"],
)

# The fast elementwise dispatcher (xdap/_apply.c) also needs gumath.
gumath_dir = package_dir("gumath")
apply_ext = Extension(
    "xdap._apply",
    sources=["xdap/_apply.c"],
    depends=["xdap/_xndmirror.h"],
    include_dirs=stack + [gumath_dir, numpy_include()],
    library_dirs=stack + [gumath_dir],
    libraries=["gumath", "ndtypes", "xnd"],
    runtime_library_dirs=stack + [gumath_dir],
    extra_compile_args=["-std=c11", "-O2", "-Wall", "-Wextra", "-Werror",
                        "-Wno-missing-field-initializers"],
)



def load_codegen():
    """xdap.codegen without importing xdap (its __init__ needs the built
    extensions and MPI); codegen itself uses the standard library only."""
    here = os.path.dirname(os.path.abspath(__file__))
    spec = importlib.util.spec_from_file_location(
        "xdap_codegen", os.path.join(here, "xdap", "codegen", "__init__.py"),
        submodule_search_locations=[os.path.join(here, "xdap", "codegen")])
    module = importlib.util.module_from_spec(spec)
    sys.modules["xdap_codegen"] = module
    spec.loader.exec_module(module)
    return module


def kernel_library():
    """One Extension per kernel-configs/*.cfg, generated into build/kernels-src."""
    codegen = load_codegen()
    arch = os.environ.get("XDAP_KERNEL_ARCH", "native")
    cflags = ["-O3", "-fno-math-errno"] + ([f"-march={arch}"] if arch else [])
    ldflags = []
    if platform.machine() == "x86_64" and sys.platform.startswith("linux") and (
            glob.glob("/lib/x86_64-linux-gnu/libmvec.so*") or glob.glob("/usr/lib*/libmvec.so*")):
        ldflags = ["-lmvec", "-lm"]
    else:
        cflags.append("-DXDAP_NO_LIBMVEC")
    exts = []
    for cfg in sorted(glob.glob("kernel-configs/*.cfg")):
        spec = codegen.extension_spec(cfg, os.path.join("build", "kernels-src"), strict=True)
        fields = {k: spec[k] for k in codegen.EXTENSION_KEYS}
        fields["name"] = "xdap.kernels." + spec["name"]
        fields["extra_compile_args"] = list(spec["extra_compile_args"]) + cflags
        fields["extra_link_args"] = list(spec["extra_link_args"]) + ldflags
        fields["depends"] = ["kernels/xdap_kernels.h", cfg]
        exts.append(Extension(**fields))
    return exts


STACK_DIRS = {os.path.realpath(d) for d in stack + [gumath_dir]}


class relocatable_build_ext(build_ext):
    """Each extension finds the stack's shared libraries relative to itself
    (``$ORIGIN/../ndtypes`` beside ``xdap/``), as the stack's own wheels do,
    so a wheel works wherever it is installed -- pip's isolated build
    environment, whose absolute paths the build would otherwise record, is
    gone by then. A build in place (``make``'s editable .venv, where xdap's
    directory is not beside the stack's) also keeps the absolute paths."""

    def build_extension(self, ext):
        up = "/".join([".."] * ext.name.count("."))   # xdap/kernels/_unary.so: ../..
        stack_used = [d for d in ext.runtime_library_dirs if os.path.realpath(d) in STACK_DIRS]
        own = [d for d in ext.runtime_library_dirs if d not in stack_used]
        relative = [f"$ORIGIN/{up}/{os.path.basename(d)}" for d in stack_used]
        in_place = self.inplace or getattr(self, "editable_mode", False)
        ext.runtime_library_dirs = relative + own + (stack_used if in_place else [])
        super().build_extension(ext)


setup(
    ext_modules=[xndbuf, envelope_ext, apply_ext] + kernel_library(),
    cmdclass={"build_ext": relocatable_build_ext},
)
