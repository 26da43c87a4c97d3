"""Build xdap: the Python package and its C extension `xdap._xndbuf`.

The extension compiles against the headers and shared libraries that the
pinned ndtypes/xnd wheels ship inside their packages (see
tools/build_stack.sh), so it needs them installed first.
"""
import os
import importlib.util

from setuptools import Extension, find_packages, setup


def package_dir(name):
    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None:
        raise SystemExit(
            f"setup.py: the '{name}' package is not installed; run "
            "tools/build_stack.sh (or `make`) to build the pinned xnd stack first")
    return os.path.dirname(spec.origin)


stack = [package_dir(name) for name in ("ndtypes", "xnd")]

xndbuf = Extension(
    "xdap._xndbuf",
    sources=["xdap/_xndbuf.c"],
    include_dirs=stack,
    library_dirs=stack,
    libraries=["ndtypes", "xnd"],
    runtime_library_dirs=stack,
    extra_compile_args=["-std=c11", "-O2", "-Wall", "-Wextra", "-Werror",
                        "-Wno-missing-field-initializers", "-Wno-unused-parameter"],
)

# The fast elementwise dispatcher (xdap/_apply.c) also needs gumath.
gumath_dir = package_dir("gumath")
apply_ext = Extension(
    "xdap._apply",
    sources=["xdap/_apply.c"],
    include_dirs=stack + [gumath_dir],
    library_dirs=stack + [gumath_dir],
    libraries=["gumath", "ndtypes", "xnd"],
    runtime_library_dirs=stack + [gumath_dir],
    extra_compile_args=["-std=c11", "-O2", "-Wall", "-Wextra", "-Werror",
                        "-Wno-missing-field-initializers"],
)

setup(
    name="xdap",
    version="0.1.0",
    description="Typed distributed arrays: xnd containers over MPI, DAP and __partitioned__",
    packages=find_packages(include=["xdap", "xdap.*"]),
    ext_modules=[xndbuf, apply_ext],
    python_requires="==3.11.*",
    entry_points={"console_scripts": ["xdap = xdap.cli:main"]},
)
