# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
#
# libkvpool's files, one concern each (lib.h, their shared header, says
# which holds what). Makefile builds the library of them, test/Makefile
# the library again over a fake sysfs.
KVP_SRCS	:= pool.c ctl.c arena.c map.c cuda.c gpu.c agent.c budget.c \
		   sysfs.c error.c version.c
