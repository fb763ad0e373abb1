/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * cu_entry.h: the CUDA driver entry points that tools/gpu-check and the
 * fake driver's test call, as function pointers p_cuX looked up with
 * dlsym(): nothing links libcuda, so both build where there is none.
 *
 * The names looked up are those cuda.h gives the functions after its
 * renaming (cuMemcpyHtoD is cuMemcpyHtoD_v2): the plain names are the
 * legacy entry points, with other signatures.
 *
 * Include after <cuda.h>, in one file of a program: the pointers are
 * static.
 */
#ifndef KVPOOL_CU_ENTRY_H
#define KVPOOL_CU_ENTRY_H

#include <dlfcn.h>

#define CU_STR(x)	#x
#define CU_XSTR(x)	CU_STR(x)	/* after cuda.h's renaming */

#define CU_ENTRY_POINTS(X)						\
	X(cuInit) X(cuDriverGetVersion) X(cuGetErrorName)		\
	X(cuDeviceGetCount) X(cuDeviceGet) X(cuDeviceGetAttribute)	\
	X(cuDeviceGetByPCIBusId) X(cuDeviceGetPCIBusId)			\
	X(cuDeviceGetName)						\
	X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease)	\
	X(cuCtxSetCurrent) X(cuCtxGetCurrent) X(cuCtxSynchronize)	\
	X(cuMemGetAllocationGranularity) X(cuMemCreate) X(cuMemRelease)	\
	X(cuMemExportToShareableHandle)					\
	X(cuMemImportFromShareableHandle)				\
	X(cuMemGetAllocationPropertiesFromHandle)			\
	X(cuMemAddressReserve) X(cuMemAddressFree) X(cuMemMap)		\
	X(cuMemUnmap) X(cuMemSetAccess) X(cuMemcpyHtoD)		\
	X(cuMemcpyDtoH) X(cuMemsetD8) X(cuMemGetInfo)

#define CU_ENTRY_DECL(f) static __typeof__(&f) p_##f;
CU_ENTRY_POINTS(CU_ENTRY_DECL)
#undef CU_ENTRY_DECL

/*
 * Look every entry point up in @dl; NULL when all are there, else the
 * (renamed) name of the first that is not.
 */
static inline const char *cu_entry_load(void *dl)
{
#define CU_ENTRY_LOAD(f)						\
	do {								\
		p_##f = (__typeof__(&f))dlsym(dl, CU_XSTR(f));		\
		if (!p_##f)						\
			return CU_XSTR(f);				\
	} while (0);
	CU_ENTRY_POINTS(CU_ENTRY_LOAD)
#undef CU_ENTRY_LOAD
	return NULL;
}

#endif /* KVPOOL_CU_ENTRY_H */
