# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
# Type stubs of the kvpool package: its C half's (_kvpool.pyi), and the
# one function written in Python.
from kvpool import _kvpool as _kvpool
from kvpool._kvpool import *
from kvpool._kvpool import __version__ as __version__

# The runtime's, computed there from _kvpool's names; stubtest holds
# this copy to it.
__all__ = ["ABI_VERSION", "ARENA_CUDA", "ARENA_HOST", "ARENA_MAX_CHUNKS",
    "ARENA_NONE", "Arena", "ArenaInfo", "CGROUP_PATH_MAX", "CONTROL_PATH",
    "CREATE_BUDGET", "CREATE_GPU", "CREATE_RESERVE_ZERO", "DEFAULT_PATH",
    "Error", "FEAT_ARENA", "FEAT_BUDGET", "FEAT_EXPORT", "FEAT_EXTEND", "FEAT_GPU_AGENT",
    "FEAT_PREFIX_CACHE", "FEAT_PRESSURE", "FEAT_QUOTA", "FEAT_ROWS",
    "FEAT_SLOTS", "FEAT_SWA", "FEAT_TENANT_PATH", "FEAT_VERIFY", "Info",
    "LABEL_LEN",
    "LAYOUT_LAYER_MAJOR", "LAYOUT_PAGE_MAJOR", "NO_INDEX", "NoSpace",
    "PAGE_NONE", "PRESSURE_GUARANTEE", "PRESSURE_LOW", "PRESSURE_OVER_MAX",
    "Pool", "Pressure", "QuotaExceeded", "ROW_HELD", "ROW_SLOT", "RowInfo",
    "Stats", "TENANT_ANY_UID", "TENANT_BY_ID", "TENANT_BY_PATH",
    "TENANT_CONFIGURED", "TENANT_REMOVE", "Tenant", "Verify",
    "arena_create_cuda", "arena_create_host", "handle", "handle_gen",
    "handle_idx", "pool_create", "pool_destroy", "pool_gpu", "pool_list",
    "pool_status", "recv_fd", "send_fd", "set_wmark", "strerror",
    "tenant_list", "tenant_set", "version"]

def handle(idx: int, gen: int = 0) -> int: ...
