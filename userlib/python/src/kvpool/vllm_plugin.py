# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
"""kvpool's ``vllm.general_plugins`` entry point (docs/vllm.md).

vLLM runs every installed general plugin in each of its processes, so
this module imports nothing of vLLM's, and does nothing, unless
$KVPOOL_VLLM_POOL is set: a vLLM that has kvpool installed but does not
use it is not touched, whatever its version.
"""

import importlib
import os

POOL_ENV = "KVPOOL_VLLM_POOL"


def register() -> None:
    """With $KVPOOL_VLLM_POOL set: kvpool.vllm.require() (which checks
    that this vLLM is a supported version, and raises naming the range
    if not) and open the pool once, so that a wrong version or path stops
    the server at start rather than at its first request."""
    path = os.environ.get(POOL_ENV)
    if not path:
        return
    import kvpool

    importlib.import_module("kvpool.vllm").require()  # vLLM version
    with kvpool.Pool(path):
        pass
