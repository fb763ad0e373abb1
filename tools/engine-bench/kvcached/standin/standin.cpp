// SPDX-License-Identifier: GPL-2.0-only
/*
 * standin.cpp: the counting stand-in for the CUDA VMM calls of kvcached
 * 0.1.6, linked into its extension (kvcached._C) in place of libcuda and
 * libcudart. kvcached's own sources are compiled unchanged; cuda.h and
 * cuda_runtime.h beside this file route gpu_vmm.hpp's calls here.
 *
 * The GPU is a file, $KVB_GPU (default /dev/shm/kvbench-gpu), made by the
 * harness (gpu.py) before any engine starts:
 *
 *   header: magic, total bytes, slot count
 *   slots:  one per process that ever called in: pid, bytes it holds
 *           (cuMemCreate'd, not yet cuMemRelease'd), peak, and its
 *           create/release/map/unmap counts
 *
 * Every update takes flock(LOCK_EX) on the file, so the budget is one
 * budget across real processes, as device memory is. A process's bytes
 * count as used only while it is alive (kill(pid, 0), and not a zombie):
 * the real driver frees a dead process's allocations when its context
 * goes, so a SIGKILLed engine's memory comes back to the GPU at once here
 * (the driver's best case; what stays stranded is kvcached's own
 * /dev/shm segment, which is the point of issue #134).
 *
 * cudaMemGetInfo() answers free = total - sum(live slots), so kvcached's
 * get_avail_physical_pages() sees the other instances exactly as it does
 * on a GPU. cuMemCreate() fails with CUDA_ERROR_OUT_OF_MEMORY when the
 * budget is spent, which is how a real GPU refuses.
 *
 * Per process, in memory: the handles (size of each) and the mappings
 * (address -> size), so a map over a mapping, an unmap of nothing, a
 * release of an unknown handle or of a still-mapped one fail as the
 * driver would, and the counts are counts of real page operations.
 */
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <map>
#include <mutex>
#include <signal.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <unistd.h>
#include <unordered_map>

#include "cuda.h"

#define KVB_HIDDEN __attribute__((visibility("hidden")))

namespace {

constexpr uint64_t kMagic = 0x6b76622d67707531ull; /* "kvb-gpu1" */
constexpr int kSlots = 256;

struct Slot {
	int64_t pid;
	int64_t bytes;
	int64_t peak;
	int64_t creates;
	int64_t releases;
	int64_t maps;
	int64_t unmaps;
	int64_t refused; /* cuMemCreate answered OUT_OF_MEMORY */
};

struct Gpu {
	uint64_t magic;
	int64_t total;
	int64_t nslots;
	int64_t pad;
	Slot slot[kSlots];
};

/*
 * This process's tables, taken before the flock. Made once and never
 * destroyed: kvcached's own statics (FTensorAllocator's allocators) may
 * unmap and release pages from their destructors at exit, after this
 * file's statics would have been destroyed.
 */
struct State {
	std::mutex lock;
	uint64_t next_handle = 1;
	std::unordered_map<uint64_t, size_t> handles;
	std::unordered_map<uint64_t, int> handle_maps; /* live mappings */
	std::map<uintptr_t, std::pair<size_t, uint64_t>> maps;
	std::map<uintptr_t, size_t> reserved;
};
State &g = *new State;
std::mutex &g_lock = g.lock;
int g_fd = -1;
Gpu *g_gpu;
Slot *g_self;

bool alive(int64_t pid)
{
	char path[64], buf[256];
	if (pid <= 0 || (kill((pid_t)pid, 0) < 0 && errno == ESRCH))
		return false;
	/* A killed child stays a zombie until reaped: dead to the GPU. */
	snprintf(path, sizeof(path), "/proc/%lld/stat", (long long)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return false;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	const char *p = strrchr(buf, ')');
	return !(p && p[1] == ' ' && p[2] == 'Z');
}

/* Open the GPU file and claim this process's slot; called with g_lock. */
int attach()
{
	if (g_self)
		return CUDA_SUCCESS;
	const char *path = getenv("KVB_GPU");
	if (!path || !*path)
		path = "/dev/shm/kvbench-gpu";
	int fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "kvb stand-in: no GPU file %s: %s\n", path,
			strerror(errno));
		return CUDA_ERROR_INVALID_VALUE;
	}
	void *m = mmap(nullptr, sizeof(Gpu), PROT_READ | PROT_WRITE,
		       MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) {
		close(fd);
		return CUDA_ERROR_INVALID_VALUE;
	}
	Gpu *gpu = static_cast<Gpu *>(m);
	if (gpu->magic != kMagic) {
		fprintf(stderr, "kvb stand-in: %s is not a GPU file\n", path);
		munmap(m, sizeof(Gpu));
		close(fd);
		return CUDA_ERROR_INVALID_VALUE;
	}
	flock(fd, LOCK_EX);
	Slot *self = nullptr;
	for (int i = 0; i < kSlots && !self; i++)
		if (gpu->slot[i].pid == 0) {
			self = &gpu->slot[i];
			memset(self, 0, sizeof(*self));
			self->pid = getpid();
			if (i >= gpu->nslots)
				gpu->nslots = i + 1;
		}
	flock(fd, LOCK_UN);
	if (!self) {
		fprintf(stderr, "kvb stand-in: all %d slots taken\n", kSlots);
		munmap(m, sizeof(Gpu));
		close(fd);
		return CUDA_ERROR_INVALID_VALUE;
	}
	g_fd = fd;
	g_gpu = gpu;
	g_self = self;
	return CUDA_SUCCESS;
}

int64_t used_flocked()
{
	int64_t used = 0;
	for (int i = 0; i < g_gpu->nslots; i++)
		if (g_gpu->slot[i].bytes && alive(g_gpu->slot[i].pid))
			used += g_gpu->slot[i].bytes;
	return used;
}

} // namespace

extern "C" {

KVB_HIDDEN const char *kvb_error_string(int status)
{
	switch (status) {
	case CUDA_SUCCESS:
		return "no error (stand-in)";
	case CUDA_ERROR_INVALID_VALUE:
		return "invalid argument (stand-in)";
	case CUDA_ERROR_OUT_OF_MEMORY:
		return "out of memory (stand-in budget spent)";
	case CUDA_ERROR_ALREADY_MAPPED:
		return "resource already mapped (stand-in)";
	case CUDA_ERROR_NOT_MAPPED:
		return "resource not mapped (stand-in)";
	}
	return "unknown error (stand-in)";
}

KVB_HIDDEN int kvb_mem_get_info(size_t *free_bytes, size_t *total_bytes)
{
	std::lock_guard<std::mutex> guard(g_lock);
	int rc = attach();
	if (rc)
		return rc;
	flock(g_fd, LOCK_SH);
	int64_t used = used_flocked();
	int64_t total = g_gpu->total;
	flock(g_fd, LOCK_UN);
	*total_bytes = (size_t)total;
	*free_bytes = (size_t)(used < total ? total - used : 0);
	return CUDA_SUCCESS;
}

KVB_HIDDEN int kvb_mem_create(unsigned long long *handle, size_t size)
{
	std::lock_guard<std::mutex> guard(g_lock);
	int rc = attach();
	if (rc)
		return rc;
	if (size == 0 || size % (2u << 20))
		return CUDA_ERROR_INVALID_VALUE;
	flock(g_fd, LOCK_EX);
	if (used_flocked() + (int64_t)size > g_gpu->total) {
		g_self->refused++;
		flock(g_fd, LOCK_UN);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	g_self->bytes += size;
	g_self->creates++;
	if (g_self->bytes > g_self->peak)
		g_self->peak = g_self->bytes;
	flock(g_fd, LOCK_UN);
	*handle = g.next_handle++;
	g.handles[*handle] = size;
	g.handle_maps[*handle] = 0;
	return CUDA_SUCCESS;
}

KVB_HIDDEN int kvb_mem_release(unsigned long long handle)
{
	std::lock_guard<std::mutex> guard(g_lock);
	auto it = g.handles.find(handle);
	if (!g_self || it == g.handles.end())
		return CUDA_ERROR_INVALID_VALUE;
	/*
	 * The driver defers the free of a still-mapped allocation until its
	 * last unmap; kvcached never relies on that, so flag it instead.
	 */
	if (g.handle_maps[handle] != 0)
		return CUDA_ERROR_INVALID_VALUE;
	flock(g_fd, LOCK_EX);
	g_self->bytes -= it->second;
	g_self->releases++;
	flock(g_fd, LOCK_UN);
	g.handles.erase(it);
	g.handle_maps.erase(handle);
	return CUDA_SUCCESS;
}

KVB_HIDDEN int kvb_address_reserve(uintptr_t *ptr, size_t size, size_t align,
				   uintptr_t addr)
{
	std::lock_guard<std::mutex> guard(g_lock);
	/* Address space only (PROT_NONE, no backing): nothing reads it. */
	void *p = mmap(reinterpret_cast<void *>(addr), size + align, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return CUDA_ERROR_OUT_OF_MEMORY;
	uintptr_t base = reinterpret_cast<uintptr_t>(p);
	uintptr_t aligned = align ? (base + align - 1) / align * align : base;
	*ptr = aligned;
	g.reserved[aligned] = size;
	return CUDA_SUCCESS;
}

KVB_HIDDEN int kvb_address_free(uintptr_t ptr, size_t size)
{
	std::lock_guard<std::mutex> guard(g_lock);
	auto it = g.reserved.find(ptr);
	if (it == g.reserved.end() || it->second != size)
		return CUDA_ERROR_INVALID_VALUE;
	auto m = g.maps.lower_bound(ptr);
	if (m != g.maps.end() && m->first < ptr + size)
		return CUDA_ERROR_INVALID_VALUE; /* still mapped */
	g.reserved.erase(it);
	return CUDA_SUCCESS;
}

KVB_HIDDEN int kvb_mem_map(uintptr_t ptr, size_t size, size_t offset,
			   unsigned long long handle)
{
	std::lock_guard<std::mutex> guard(g_lock);
	auto h = g.handles.find(handle);
	if (!g_self || h == g.handles.end() || offset + size > h->second)
		return CUDA_ERROR_INVALID_VALUE;
	auto r = g.reserved.upper_bound(ptr);
	if (r == g.reserved.begin())
		return CUDA_ERROR_INVALID_VALUE;
	--r;
	if (ptr + size > r->first + r->second)
		return CUDA_ERROR_INVALID_VALUE;
	auto m = g.maps.lower_bound(ptr);
	if (m != g.maps.end() && m->first < ptr + size)
		return CUDA_ERROR_ALREADY_MAPPED;
	if (m != g.maps.begin()) {
		auto prev = std::prev(m);
		if (prev->first + prev->second.first > ptr)
			return CUDA_ERROR_ALREADY_MAPPED;
	}
	g.maps[ptr] = {size, handle};
	g.handle_maps[handle]++;
	__atomic_add_fetch(&g_self->maps, 1, __ATOMIC_RELAXED);
	return CUDA_SUCCESS;
}

KVB_HIDDEN int kvb_mem_unmap(uintptr_t ptr, size_t size)
{
	std::lock_guard<std::mutex> guard(g_lock);
	if (!g_self)
		return CUDA_ERROR_INVALID_VALUE;
	auto m = g.maps.lower_bound(ptr);
	if (m == g.maps.end() || m->first >= ptr + size)
		return CUDA_ERROR_NOT_MAPPED;
	/* A range unmap (FTensor teardown) takes every mapping inside it. */
	while (m != g.maps.end() && m->first < ptr + size) {
		if (m->first + m->second.first > ptr + size)
			return CUDA_ERROR_INVALID_VALUE;
		g.handle_maps[m->second.second]--;
		__atomic_add_fetch(&g_self->unmaps, 1, __ATOMIC_RELAXED);
		m = g.maps.erase(m);
	}
	return CUDA_SUCCESS;
}

KVB_HIDDEN int kvb_set_access(uintptr_t ptr, size_t size)
{
	std::lock_guard<std::mutex> guard(g_lock);
	auto m = g.maps.lower_bound(ptr);
	if (m == g.maps.end() || m->first >= ptr + size)
		return CUDA_ERROR_NOT_MAPPED;
	return CUDA_SUCCESS;
}

} // extern "C"
