"""The kernel generator: xndtools-style .cfg files -> gumath kernel modules.

    load_config(path)         read and validate a .cfg (ValueError naming
                              file, section and key on any problem)
    generate_c(config)        the C source of the extension module
    build(cfg, out_dir)       compile it; returns the extension's path
    extension_spec(cfg, dir)  the generated C + setuptools Extension fields
    write_skeleton(header)    a starting .cfg from a C header's prototypes

This package imports only the standard library (no mpi4py, no xnd, no
compiled xdap code), so a build script can load it before xdap is built --
without importing ``xdap`` itself (whose ``__init__`` imports MPI)::

    import importlib.util, sys
    spec = importlib.util.spec_from_file_location(
        "xdap_codegen", "xdap/codegen/__init__.py",
        submodule_search_locations=["xdap/codegen"])
    codegen = importlib.util.module_from_spec(spec)
    sys.modules["xdap_codegen"] = codegen
    spec.loader.exec_module(codegen)

Every generated module exposes its gumath functions and ``_table``, a
PyCapsule named ``"xdap.gm_tbl_t"`` holding the module's ``gm_tbl_t *``.
See docs/kernels.md.

>>> from xdap.codegen import parse_config, generate_c
>>> cfg = parse_config('''
... [MODULE demo]
... [KERNEL cube]
... prototypes = double cube(double x);
... ''')
>>> [k.name for k in cfg.kernels], 'PyInit_demo' in generate_c(cfg)
(['cube'], True)
"""
from .build import EXTENSION_KEYS, BuildError, build, extension_spec, stack_dirs
from .config import ConfigError, ModuleConfig, load_config, parse_config
from .emit import CAPSULE_NAME, generate_c, kernel_table
from .prototype import parse_prototype, scan_header
from .skeleton import skeleton_config, write_skeleton

__all__ = ["load_config", "parse_config", "generate_c", "build", "extension_spec",
           "write_skeleton", "skeleton_config", "kernel_table", "parse_prototype", "scan_header",
           "ConfigError", "BuildError", "ModuleConfig", "CAPSULE_NAME", "EXTENSION_KEYS",
           "stack_dirs"]
