# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
"""kvpool: the kvpool KV-cache page broker from Python, over libkvpool.

Pool is one client of /dev/kvpoolN; Arena its pool's memory mapped into
this process; the module functions pass descriptors between processes
and administer pools (root). Every failure of libkvpool raises
kvpool.Error, an OSError (NoSpace for ENOSPC, QuotaExceeded for EDQUOT).
See docs/python.md in the kvpool tree.
"""

from kvpool._kvpool import *  # noqa: F401,F403 (the C half is the API)
from kvpool._kvpool import __version__  # noqa: F401
from kvpool import _kvpool

__all__ = [name for name in dir(_kvpool) if not name.startswith("_")]


def handle(idx, gen=0):
    """The handle int of row idx at generation gen: gen << 32 | idx."""
    if not 0 <= idx < 1 << 32 or not 0 <= gen < 1 << 32:
        raise ValueError("idx and gen are 32-bit unsigned")
    return gen << 32 | idx


__all__.append("handle")
