/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The stand-in for <cuda.h> that kvcached 0.1.6's csrc/inc/gpu_vmm.hpp
 * includes: only the driver types, constants and calls that gpu_vmm.hpp
 * uses, written from the CUDA driver API's documented signatures. Every
 * call forwards to standin.cpp (kvb_*), which counts it and keeps the
 * "GPU" (a byte budget shared by every process of a run) in a file under
 * /dev/shm. The wrappers are static inline so that the extension never
 * exports or imports a cu* symbol: torch's own CUDA libraries, loaded
 * RTLD_GLOBAL, cannot capture these calls.
 */
#ifndef KVB_STANDIN_CUDA_H
#define KVB_STANDIN_CUDA_H

#include <stddef.h>
#include <stdint.h>

typedef int CUdevice;
typedef uintptr_t CUdeviceptr;
typedef unsigned long long CUmemGenericAllocationHandle;

/* Its own type, as in the driver: gpu_vmm.hpp overloads on it. */
typedef enum {
	CUDA_SUCCESS = 0,
	CUDA_ERROR_INVALID_VALUE = 1,
	CUDA_ERROR_OUT_OF_MEMORY = 2,
	CUDA_ERROR_ALREADY_MAPPED = 208,
	CUDA_ERROR_NOT_MAPPED = 211,
} CUresult;

typedef enum {
	CU_MEM_ALLOCATION_TYPE_INVALID = 0,
	CU_MEM_ALLOCATION_TYPE_PINNED = 1,
} CUmemAllocationType;

typedef enum {
	CU_MEM_LOCATION_TYPE_INVALID = 0,
	CU_MEM_LOCATION_TYPE_DEVICE = 1,
} CUmemLocationType;

typedef enum {
	CU_MEM_ACCESS_FLAGS_PROT_NONE = 0,
	CU_MEM_ACCESS_FLAGS_PROT_READ = 1,
	CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 3,
} CUmemAccess_flags;

typedef enum {
	CU_MEM_ALLOC_GRANULARITY_MINIMUM = 0,
	CU_MEM_ALLOC_GRANULARITY_RECOMMENDED = 1,
} CUmemAllocationGranularity_flags;

typedef enum {
	CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED = 102,
} CUdevice_attribute;
/* gpu_vmm.hpp picks the attribute by #if defined(): say it exists. */
#define CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED \
	CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED

typedef struct {
	CUmemLocationType type;
	int id;
} CUmemLocation;

typedef struct {
	CUmemAllocationType type;
	int requestedHandleTypes;
	CUmemLocation location;
	void *win32HandleMetaData;
	unsigned long long reserved;
} CUmemAllocationProp;

typedef struct {
	CUmemLocation location;
	CUmemAccess_flags flags;
} CUmemAccessDesc;

#ifdef __cplusplus
extern "C" {
#endif
int kvb_mem_create(unsigned long long *handle, size_t size);
int kvb_mem_release(unsigned long long handle);
int kvb_address_reserve(uintptr_t *ptr, size_t size, size_t align,
			uintptr_t addr);
int kvb_address_free(uintptr_t ptr, size_t size);
int kvb_mem_map(uintptr_t ptr, size_t size, size_t offset,
		unsigned long long handle);
int kvb_mem_unmap(uintptr_t ptr, size_t size);
int kvb_set_access(uintptr_t ptr, size_t size);
int kvb_mem_get_info(size_t *free_bytes, size_t *total_bytes);
const char *kvb_error_string(int status);
#ifdef __cplusplus
}
#endif

static inline CUresult cuGetErrorString(CUresult status, const char **str)
{
	*str = kvb_error_string(status);
	return CUDA_SUCCESS;
}

static inline CUresult cuDeviceGetAttribute(int *value,
					    CUdevice_attribute attr,
					    CUdevice dev)
{
	(void)dev;
	*value = attr == CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED;
	return CUDA_SUCCESS;
}

/* 2 MiB, the minimum granularity of current NVIDIA GPUs. */
static inline CUresult
cuMemGetAllocationGranularity(size_t *granularity,
			      const CUmemAllocationProp *prop,
			      CUmemAllocationGranularity_flags option)
{
	(void)prop;
	(void)option;
	*granularity = 2u << 20;
	return CUDA_SUCCESS;
}

static inline CUresult cuMemCreate(CUmemGenericAllocationHandle *handle,
				   size_t size,
				   const CUmemAllocationProp *prop,
				   unsigned long long flags)
{
	(void)prop;
	(void)flags;
	return (CUresult)kvb_mem_create(handle, size);
}

static inline CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
	return (CUresult)kvb_mem_release(handle);
}

static inline CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size,
					   size_t alignment, CUdeviceptr addr,
					   unsigned long long flags)
{
	(void)flags;
	return (CUresult)kvb_address_reserve(ptr, size, alignment, addr);
}

static inline CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
	return (CUresult)kvb_address_free(ptr, size);
}

static inline CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
				CUmemGenericAllocationHandle handle,
				unsigned long long flags)
{
	(void)flags;
	return (CUresult)kvb_mem_map(ptr, size, offset, handle);
}

static inline CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
	return (CUresult)kvb_mem_unmap(ptr, size);
}

static inline CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size,
				      const CUmemAccessDesc *desc,
				      size_t count)
{
	(void)desc;
	(void)count;
	return (CUresult)kvb_set_access(ptr, size);
}

#endif
