# SPDX-License-Identifier: GPL-2.0-only
#
# What the builds against the CUDA driver API share (tools/gpu-check,
# selftests/lib/fakecuda): CUDA_INC, a folder with NVIDIA's cuda.h, from
# tools/cuda-headers.sh (the toolkit's, else fetched from its PyPI wheel),
# and CU_ENTRY, the folder of cu_entry.h. Set TOPDIR before including.

CU_ENTRY	:= $(TOPDIR)/tools/gpu-check

# Asked only when something is built, not on "make clean".
ifneq ($(MAKECMDGOALS),clean)
CUDA_INC	:= $(shell $(TOPDIR)/tools/cuda-headers.sh)
ifeq ($(CUDA_INC),)
$(error $(TOPDIR)/tools/cuda-headers.sh found no cuda.h)
endif
endif
