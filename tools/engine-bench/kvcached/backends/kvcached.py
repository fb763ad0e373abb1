# SPDX-License-Identifier: GPL-2.0-only
"""kvcached 0.1.6's own allocator, in this process, as a vLLM engine
with kvcached enabled uses it.

What runs is kvcached's code from its PyPI sdist (install.sh): the
Python KVCacheManager (kv_cache_manager.py) over the C++ extension
kvcached._C built from the sdist's csrc/ -- PageAllocator with its
prealloc and resize-watcher threads, FTensor/FTensorAllocator, and the
C++ MemInfoTracker that keeps this instance's POSIX shm segment
(/dev/shm/$KVCACHED_IPC_NAME: limit, used, prealloc bytes) that kvctl
and kvtop read. Two things are not kvcached's (install.sh builds them
in and says so):

1. the CUDA driver and runtime under csrc/inc/gpu_vmm.hpp: cuMemCreate,
   cuMemMap, cuMemUnmap, cuMemRelease, cuMemAddressReserve, cudaMemGetInfo
   and the rest are standin/standin.cpp, which counts every call and
   keeps one byte budget for all the processes of a run;
2. the device of the torch tensor that views each FTensor's virtual
   range (one argument of FTensor's from_blob()): cpu, because torch's
   CUDA from_blob needs a CUDA driver. The FTensor itself stays a CUDA
   one, so every page goes through the VMM path (GPUPage, cuMemMap).
   Nothing reads or writes the tensors here.

The engine integration (kvcached.integration.vllm.interfaces) is not
called: its alloc_kv_cache() asks torch.cuda for the device. This module
does what it does with kvcached's lower layer: init_kvcached(), then
create_kv_tensors() sized as alloc_kv_cache() sizes them (the whole
GPU's memory, per layer, per K/V, in pages: every instance's virtual
capacity is the GPU), then the KVCacheManager get_kv_cache_manager()
makes (reserve_null_block=True).

With prefix_cache (engine.py --backend kvcached-prefix) the blocks come
through kvcached's ElasticBlockPool, its replacement for vLLM's
BlockPool with the prefix cache capped at KVCACHED_MAX_CACHED_TOKENS
(16000 by default: 1000 blocks) and its page-aware eviction (#359,
#390). It is built as kvcached's own tests/test_prefix_cache.py and
benchmarks/bench_idle_footprint/sim_eviction.py build it: injected by
ElasticBlockPoolPatch into a module whose BlockPool is object and whose
KVCacheBlock is the small class below (vLLM's is a plain record too),
with get_kv_cache_manager() answering this process's KVCacheManager.
"""
import os
import struct
import time

import gpu as gpumod


class Block:
    """The fields of vLLM's KVCacheBlock that ElasticBlockPool uses."""

    def __init__(self, block_id):
        self.block_id = block_id
        self.ref_cnt = 0
        self.is_null = False
        self.block_hash = None


class _Req:
    def __init__(self, hashes):
        self.block_hashes = hashes


class Pool:
    def __init__(self, geo, block_tokens, gpu_bytes, ready_timeout,
                 prefix_cache=False):
        from kvcached import vmm_ops
        from kvcached.kv_cache_manager import KVCacheManager
        from kvcached.utils import CONTIGUOUS_LAYOUT, PAGE_SIZE

        self.vmm = vmm_ops
        layers, cell = geo['layers'], geo['cell']
        self.block_bytes = block_tokens * cell  # one layer, K or V
        self.ipc = os.environ['KVCACHED_IPC_NAME']
        self.gpu = os.environ['KVB_GPU']
        vmm_ops.init_kvcached('cuda:0', PAGE_SIZE, CONTIGUOUS_LAYOUT)
        per_layer = gpu_bytes // layers // 2 // PAGE_SIZE * PAGE_SIZE
        nblocks = per_layer // self.block_bytes
        vmm_ops.create_kv_tensors(per_layer * 2, 2, 'cuda:0', layers,
                                  num_kv_buffers=2, group_id=0)
        self.m = KVCacheManager(nblocks, block_tokens, cell, layers,
                                reserve_null_block=True,
                                pool_name='kvbench')
        # _post_init (a kvcached thread) reserves the null block and
        # starts the prealloc thread; the engine is ready when it is done.
        if not self.m._post_init_done.wait(ready_timeout):
            raise TimeoutError(f'KVCacheManager not ready in '
                               f'{ready_timeout} s')
        if self.m.null_block is None:
            raise RuntimeError('KVCacheManager has no null block')
        self.prefix_cache = prefix_cache
        self.block_tokens = block_tokens
        if prefix_cache:
            self._make_block_pool(nblocks, block_tokens, cell, layers)
        self.page_bytes = PAGE_SIZE * layers * 2  # one compound page
        self.nblocks = nblocks
        self.page_blocks = PAGE_SIZE // self.block_bytes
        self.pid = os.getpid()

    def _make_block_pool(self, nblocks, block_tokens, cell, layers):
        import types

        from kvcached.integration.vllm import interfaces
        from kvcached.integration.vllm.patches import ElasticBlockPoolPatch
        from kvcached.utils import MAX_CACHED_TOKENS

        mod = types.ModuleType('kvbench_block_pool')
        mod.BlockPool = object
        mod.KVCacheBlock = Block
        ElasticBlockPoolPatch().inject_elastic_block_pool(mod)
        real = interfaces.get_kv_cache_manager
        interfaces.get_kv_cache_manager = lambda *a, **k: self.m
        try:
            # max_cached_blocks as kvcached's vLLM patch passes it.
            self.bp = mod.ElasticBlockPool(
                nblocks, block_tokens, cell, layers, enable_caching=True,
                max_cached_blocks=MAX_CACHED_TOKENS // block_tokens)
        finally:
            interfaces.get_kv_cache_manager = real

    def available(self):
        if self.prefix_cache:
            return self.bp.get_num_free_blocks()
        return self.m.available_size()

    def alloc(self, n):
        if not self.prefix_cache:
            return self.m.alloc(n)
        from kvcached.utils import KVCachePoolExhausted
        try:
            return [b.block_id for b in self.bp.get_new_blocks(n)]
        except KVCachePoolExhausted:
            return None

    def free(self, ids):
        if not ids:
            return
        if not self.prefix_cache:
            self.m.free(ids)
            return
        # vLLM frees a request's blocks tail first, so that the tail is
        # evicted before the shared head.
        self.bp.free_blocks([self.bp.kv_block_pool[i] for i in reversed(ids)])

    def lookup(self, hashes):
        """The longest cached run of hashes, touched (vLLM's
        get_computed_blocks + touch)."""
        hit = []
        for h in hashes:
            b = self.bp.get_cached_block(h)
            if b is None:
                break
            hit.append(b)
        self.bp.touch(hit)
        return [b.block_id for b in hit]

    def cache(self, hashes, ids, num_cached, num_full):
        self.bp.cache_full_blocks(_Req(hashes),
                                  [self.bp.kv_block_pool[i] for i in ids],
                                  num_cached, num_full, self.block_tokens)

    def segment(self):
        """kvcached's own shm record: (limit, used, prealloc) bytes."""
        try:
            with open('/dev/shm/' + self.ipc, 'rb') as f:
                return struct.unpack('<3q', f.read(24))
        except (OSError, struct.error):
            return (0, 0, 0)

    def held(self):
        _, slots = gpumod.read(self.gpu)
        return slots.get(self.pid, {}).get('bytes', 0)

    def sample(self):
        _, used, prealloc = self.segment()
        s = {'held_bytes': self.held(), 'seg_used': used,
             'seg_prealloc': prealloc}
        if self.prefix_cache:
            s['cached_blocks'] = len(self.bp._evictable_blocks)
        return s

    def describe(self):
        return {'blocks': self.nblocks, 'page_total': self.page_bytes,
                'page_blocks': self.page_blocks, 'ipc_name': self.ipc}

    def close(self):
        """Shut down as vLLM's shutdown path does (manager, then the
        allocator), so that every mapping is undone and the stand-in's
        counts can be checked to balance."""
        t = time.monotonic()
        if self.prefix_cache:
            self.bp.reset_prefix_cache()  # the cached blocks go back first
        ok = self.m.shutdown()
        self.vmm.shutdown_kvcached()
        return {'shutdown_ok': bool(ok),
                'shutdown_s': round(time.monotonic() - t, 3),
                'segment_left': os.path.exists('/dev/shm/' + self.ipc)}
