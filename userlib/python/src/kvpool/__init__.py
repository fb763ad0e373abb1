# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
"""kvpool: the kvpool KV-cache page broker from Python, over libkvpool.

Pool is one client of /dev/kvpoolN; Arena its pool's memory mapped into
this process; the module functions pass descriptors between processes
and administer pools (root). Every failure of libkvpool raises
kvpool.Error, an OSError (NoSpace for ENOSPC, QuotaExceeded for EDQUOT).
See docs/python.md in the kvpool tree.
"""


def _version() -> str:
    """This package's version, from its metadata (the extension that
    would say it did not load)."""
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version("kvpool")
    except PackageNotFoundError:
        return "(this package's version)"


try:
    from kvpool import _kvpool
except ImportError as e:
    # The bare loader message ("libkvpool.so.1: cannot open shared
    # object file") says neither which package wants the library nor
    # what provides it. A wheel built in the kvpool tree has libkvpool
    # linked in; one built against an installed libkvpool (pkg-config,
    # a distribution's python3-kvpool) needs that library at run time.
    if "libkvpool" in str(e):
        # Missing, or older than this package (a version node it lacks).
        raise ImportError(
            "kvpool: the C extension kvpool._kvpool cannot load "
            "libkvpool.so.1 (%s): install libkvpool1 %s or later (Debian: "
            "apt install libkvpool1; from the kvpool tree: make -C userlib "
            "install), or a kvpool wheel built in the kvpool tree (pip "
            "install ./userlib/python), which has libkvpool linked in"
            % (e, _version()), name=e.name, path=e.path) from e
    raise ImportError(
        "kvpool: the C extension kvpool._kvpool does not load (%s): "
        "install the kvpool package with pip (pip install "
        "./userlib/python in the kvpool tree) rather than importing it "
        "from its sources" % e, name=e.name, path=e.path) from e

from kvpool._kvpool import *  # noqa: F401,F403 (the C half is the API)
from kvpool._kvpool import __version__  # noqa: F401

__all__ = [name for name in dir(_kvpool) if not name.startswith("_")]


def handle(idx: int, gen: int = 0) -> int:
    """The handle int of row idx at generation gen: gen << 32 | idx."""
    if not 0 <= idx < 1 << 32 or not 0 <= gen < 1 << 32:
        raise ValueError("idx and gen are 32-bit unsigned")
    return gen << 32 | idx


__all__.append("handle")
