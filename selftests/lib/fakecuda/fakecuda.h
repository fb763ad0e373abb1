/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * fakecuda.h: the fake CUDA driver's test-only entry points, exported
 * from its libcuda.so.1 beside the cu* names (fakecuda.c says what each
 * models). A test dlsym()s them from the fake; a real driver has none.
 * Each needs cuInit() first, as the driver API does.
 */
#ifndef KVPOOL_FAKECUDA_H
#define KVPOOL_FAKECUDA_H

#include <cuda.h>

/*
 * Export file @fd (every descriptor of its open file, in every process)
 * exports nothing from now on: later imports through it fail with
 * CUDA_ERROR_INVALID_VALUE. What NVIDIA's non-privileged
 * NV0000_CTRL_CMD_OS_UNIX_EXPORT_OBJECTS_TO_FD with a zero object lets
 * any holder of the nvidiactl file do. CUDA_ERROR_INVALID_VALUE if @fd
 * is no export of the fake's.
 */
CUresult fakecuda_unexport(int fd);

/*
 * Export file @fd exports @h's allocation from now on, in place of what
 * it did: the same control, given another object. Other exports of the
 * old allocation are not affected.
 */
CUresult fakecuda_export_replace(int fd, CUmemGenericAllocationHandle h);

/*
 * Collects garbage now (what cuInit(), cuMemCreate() and
 * cuMemImportFromShareableHandle() do too): frees every allocation
 * nothing holds and every one of a GPU torn down since it was made.
 * Returns how many allocations of the registry live, or -1 (before
 * cuInit(), or the registry cannot be read).
 */
int fakecuda_gc(void);

#endif /* KVPOOL_FAKECUDA_H */
