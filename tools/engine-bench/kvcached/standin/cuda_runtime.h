/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The stand-in for <cuda_runtime.h>: the five runtime calls kvcached
 * 0.1.6's gpu_vmm.hpp makes. One device, index 0. cudaMemGetInfo() is
 * the one that matters: kvcached's PageAllocator::get_avail_physical_pages()
 * sizes every instance's growth from it, so it reads the shared budget
 * (see standin.cpp).
 */
#ifndef KVB_STANDIN_CUDA_RUNTIME_H
#define KVB_STANDIN_CUDA_RUNTIME_H

#include "cuda.h"

typedef enum { cudaSuccess = 0, cudaErrorInvalidDevice = 101 } cudaError_t;

static inline const char *cudaGetErrorString(cudaError_t status)
{
	return kvb_error_string((int)status);
}

static inline cudaError_t cudaFree(void *ptr)
{
	(void)ptr;
	return cudaSuccess;
}

static inline cudaError_t cudaSetDevice(int dev)
{
	return dev == 0 ? cudaSuccess : cudaErrorInvalidDevice;
}

static inline cudaError_t cudaGetDevice(int *dev)
{
	*dev = 0;
	return cudaSuccess;
}

static inline cudaError_t cudaMemGetInfo(size_t *free_bytes,
					 size_t *total_bytes)
{
	return (cudaError_t)kvb_mem_get_info(free_bytes, total_bytes);
}

static inline cudaError_t cudaDeviceSynchronize(void)
{
	return cudaSuccess;
}

#endif
