# SPDX-License-Identifier: GPL-2.0-only
"""vLLM's KV cache manager imported on a machine without a GPU.

What is replaced, and nothing else (the list bench_engines.py's header
and JSON notes repeat from REPLACED):

  vllm.v1.structured_output   the package's __init__ is not run: the
      package is entered as a bare namespace over its own directory, so
      that vllm.v1.request's `from vllm.v1.structured_output.request
      import StructuredOutputRequest` loads that real submodule. The
      __init__ builds the grammar manager (vllm.parser, xgrammar and
      llguidance: compiled grammar engines a scheduler's allocator never
      calls); a request without structured output never reaches it.

Everything else on the import chain of vllm.v1.core.kv_cache_manager is
vLLM's own code, and KVCacheManager, KVCacheCoordinator, BlockPool, the
free block queue and the single-type managers run unchanged. vllm._C
(the CUDA extension) is not imported by that chain, and
vllm.platforms' current_platform, where something asks for it, finds
no device and is vLLM's own UnspecifiedPlatform. load() checks both, so
that a later vLLM that starts to need CUDA fails loudly instead of
timing something else.
"""

import importlib.util
import sys
import types

REPLACED = [
    "vllm.v1.structured_output: package __init__ not run (grammar "
    "manager: vllm.parser, xgrammar, llguidance); its request submodule "
    "is vLLM's own",
]

# Must not be imported by the allocation path (see load()).
_MUST_STAY_OUT = ("vllm._C", "vllm.platforms.cuda", "vllm.platforms.rocm")


def _bare_package(name):
    """Enter package @name without running its __init__.py."""
    spec = importlib.util.find_spec(name)
    if spec is None or spec.submodule_search_locations is None:
        raise ImportError("%s is not a package here" % name)
    mod = types.ModuleType(name)
    mod.__path__ = list(spec.submodule_search_locations)
    mod.__spec__ = spec
    mod.__file__ = None
    sys.modules[name] = mod
    parent, _, child = name.rpartition(".")
    setattr(importlib.import_module(parent), child, mod)
    return mod


def load():
    """Import what the benchmark uses; a namespace of it."""
    import torch
    _bare_package("vllm.v1.structured_output")

    import vllm
    from vllm.sampling_params import SamplingParams
    from vllm.utils.hashing import get_hash_fn_by_name
    from vllm.v1.core import kv_cache_utils
    from vllm.v1.core.kv_cache_manager import KVCacheManager
    from vllm.v1.kv_cache_interface import (FullAttentionSpec, KVCacheConfig,
                                            KVCacheGroupSpec)
    from vllm.v1.request import Request, RequestStatus

    loaded = [m for m in _MUST_STAY_OUT if m in sys.modules]
    plat = getattr(sys.modules.get("vllm.platforms"), "_current_platform",
                   None)
    if plat is not None and type(plat).__name__ != "UnspecifiedPlatform":
        loaded.append("platform %s" % type(plat).__name__)
    if loaded:
        raise ImportError("vLLM's allocation path imported %s"
                          % ", ".join(loaded))
    return types.SimpleNamespace(
        torch=torch, version=getattr(vllm, "__version__", "?"),
        SamplingParams=SamplingParams,
        get_hash_fn_by_name=get_hash_fn_by_name,
        kv_cache_utils=kv_cache_utils, KVCacheManager=KVCacheManager,
        FullAttentionSpec=FullAttentionSpec, KVCacheConfig=KVCacheConfig,
        KVCacheGroupSpec=KVCacheGroupSpec, Request=Request,
        RequestStatus=RequestStatus)
