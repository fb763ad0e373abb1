# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
"""Build kvpool._kvpool, the C extension over libkvpool.

In the kvpool tree (../kvpool.h exists) it builds against the tree's
headers and library, which `make -C userlib` must have built; elsewhere
it asks pkg-config for an installed libkvpool.

$KVPOOL_LINK, from the environment, says how libkvpool gets into the
extension:
- static (the default in the tree): libkvpool.a is linked in, so the
  wheel works in any venv with no libkvpool installed and no
  LD_LIBRARY_PATH. libkvpool.a's objects are -fPIC, and
  --exclude-libs keeps its symbols out of the extension's dynamic
  table: the extension exports PyInit__kvpool only, and its calls can
  never bind to another libkvpool that the process loaded. The
  archive's compat symbols (.symver kvpool_stats@KVPOOL_1.0 ...) need
  their version nodes to exist in the link: a version script made from
  the archive's symbols names them, with nothing in them.
- shared (the default out of the tree): the extension links
  libkvpool.so.1, without an rpath; a distribution's package does this
  and depends on its libkvpool1 package. kvpool/__init__.py names what
  to install when the library is not found.
"""

import os
import re
import shlex
import subprocess
import sys

from setuptools import Extension, setup

HERE = os.path.dirname(os.path.abspath(__file__))
USERLIB = os.path.dirname(HERE)
TOP = os.path.dirname(USERLIB)
IN_TREE = os.path.exists(os.path.join(USERLIB, "kvpool.h"))
LINK = os.environ.get("KVPOOL_LINK", "static" if IN_TREE else "shared")
# What libkvpool.a needs besides libc (libkvpool.pc's Libs.private):
# dlopen() of the CUDA driver, and pthreads.
STATIC_LIBS = ["-ldl", "-pthread"]


def pkg_config(*args):
    try:
        out = subprocess.run(["pkg-config", *args, "libkvpool"],
                             check=True, capture_output=True, text=True)
    except (OSError, subprocess.CalledProcessError) as e:
        sys.exit("kvpool: pkg-config cannot find libkvpool (%s); install "
                 "libkvpool or build in the kvpool tree" % e)
    return out.stdout.strip()


def version():
    """kvpool's one version: the tree's VERSION, else the library's."""
    path = os.path.join(TOP, "VERSION")
    if IN_TREE and os.path.exists(path):
        with open(path, encoding="ascii") as f:
            return f.read().strip()
    return pkg_config("--modversion")


def version_script(archive):
    """A version script for the extension linked with archive: every
    version node the archive's symbols name, empty, and PyInit__kvpool
    the one global symbol."""
    nm = os.environ.get("NM", "nm")
    try:
        out = subprocess.run([nm, "--defined-only", archive], check=True,
                             capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        sys.exit("kvpool: %s %s: %s" % (nm, archive, e))
    nodes = sorted({m.group(1) for m in
                    re.finditer(r"@@?([A-Za-z0-9_.]+)$", out, re.M)})
    path = os.path.join(HERE, "build", "_kvpool.map")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="ascii") as f:
        f.write("/* Made by setup.py from %s. */\n" % archive)
        for n in nodes:
            f.write("%s { };\n" % n)
        f.write("KVPOOL_PYTHON { global: PyInit__kvpool; local: *; };\n")
    return path


def static_args(libdir):
    archive = os.path.join(libdir, "libkvpool.a")
    if not os.path.exists(archive):
        sys.exit("kvpool: no %s: build libkvpool first (make -C userlib "
                 "libkvpool.a), or KVPOOL_LINK=shared" % archive)
    return {
        "extra_objects": [archive],
        "extra_link_args": ["-Wl,--exclude-libs,libkvpool.a",
                            "-Wl,--version-script=" + version_script(archive)]
        + STATIC_LIBS,
    }


def extension_args():
    if LINK not in ("static", "shared"):
        sys.exit("kvpool: KVPOOL_LINK is static or shared, not %r" % LINK)
    if IN_TREE:
        args = {"include_dirs": [USERLIB, os.path.join(TOP, "uapi")]}
        if LINK == "static":
            return {**args, **static_args(USERLIB)}
        if not os.path.exists(os.path.join(USERLIB, "libkvpool.so")):
            sys.exit("kvpool: build libkvpool first: make -C userlib")
        return {**args, "library_dirs": [USERLIB], "libraries": ["kvpool"]}
    args = {"extra_compile_args": shlex.split(pkg_config("--cflags"))}
    if LINK == "static":
        return {**args, **static_args(pkg_config("--variable=libdir"))}
    return {**args, "extra_link_args": shlex.split(pkg_config("--libs"))}


VERSION = version()
args = extension_args()
args["extra_compile_args"] = args.get("extra_compile_args", []) + [
    "-std=gnu11", "-Wall", "-Wextra", "-Werror",
    # The extension's own kvp_* functions stay inside it, however it is
    # linked: PyMODINIT_FUNC marks PyInit__kvpool for export.
    "-fvisibility=hidden",
    # CPython's own headers are not clean under -Wextra's unused-parameter
    # and missing-field-initializers in every version.
    "-Wno-missing-field-initializers",
]

setup(
    version=VERSION,
    ext_modules=[
        Extension(
            "kvpool._kvpool",
            sources=["src/kvpool/_kvpool.c", "src/kvpool/_pool.c",
                     "src/kvpool/_arena.c"],
            depends=["src/kvpool/_kvpool.h"],
            define_macros=[("KVPOOL_PY_VERSION", '"%s"' % VERSION)],
            **args,
        ),
    ],
)
