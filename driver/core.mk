# SPDX-License-Identifier: GPL-2.0-only
#
# The kvpool core: the sources and headers that build both into kvpool.ko
# (Kbuild) and, against the userspace shim of driver/user, into the unit
# test, the fuzzer, kvpool-replay's core backend and kvpool-bench. One
# list, so that a file added to the core cannot be missing from any of
# them.
#
# Include with KVP_DRIVER set to the path of driver/ as the includer sees it.
KVP_CORE_SRCS := kvp_pool.c kvp_client.c kvp_rows.c kvp_cache.c kvp_tenant.c \
		 kvp_export.c kvp_verify.c
KVP_CORE_HDRS := kvp_core.h kvp_priv.h kvp_os.h

KVP_CORE_SRC_PATHS := $(addprefix $(KVP_DRIVER)/,$(KVP_CORE_SRCS))
KVP_CORE_HDR_PATHS := $(addprefix $(KVP_DRIVER)/,$(KVP_CORE_HDRS))

# The userspace shim the core links with outside the kernel; Kbuild
# ignores it. kvp_os.h includes it by path: no -I is needed for it.
KVP_USER_SRCS := user/kvp_os_user.c
KVP_USER_HDRS := user/kvp_os_user.h
KVP_USER_SRC_PATHS := $(addprefix $(KVP_DRIVER)/,$(KVP_USER_SRCS))
KVP_USER_HDR_PATHS := $(addprefix $(KVP_DRIVER)/,$(KVP_USER_HDRS))
