# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
"""Build kvpool._kvpool, the C extension over libkvpool.

In the kvpool tree (../kvpool.h exists) it builds against the tree's
headers and links ../libkvpool.so, which `make -C userlib` must have
built; elsewhere it asks pkg-config for an installed libkvpool. Either
way the extension is linked dynamically against libkvpool.so.1, with no
rpath: at run time the library comes from the system's linker path or
LD_LIBRARY_PATH.
"""

import os
import shlex
import subprocess
import sys

from setuptools import Extension, setup

HERE = os.path.dirname(os.path.abspath(__file__))
USERLIB = os.path.dirname(HERE)
TOP = os.path.dirname(USERLIB)
IN_TREE = os.path.exists(os.path.join(USERLIB, "kvpool.h"))


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


def extension_args():
    if IN_TREE:
        if not os.path.exists(os.path.join(USERLIB, "libkvpool.so")):
            sys.exit("kvpool: build libkvpool first: make -C userlib")
        return {
            "include_dirs": [USERLIB, os.path.join(TOP, "uapi")],
            "library_dirs": [USERLIB],
            "libraries": ["kvpool"],
        }
    return {
        "extra_compile_args": shlex.split(pkg_config("--cflags")),
        "extra_link_args": shlex.split(pkg_config("--libs")),
    }


VERSION = version()
args = extension_args()
args["extra_compile_args"] = args.get("extra_compile_args", []) + [
    "-std=gnu11", "-Wall", "-Wextra", "-Werror",
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
