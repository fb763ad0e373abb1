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
"""
import os
import struct
import time

import gpu as gpumod


class Pool:
    def __init__(self, geo, block_tokens, gpu_bytes, ready_timeout):
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
        self.page_bytes = PAGE_SIZE * layers * 2  # one compound page
        self.nblocks = nblocks
        self.page_blocks = PAGE_SIZE // self.block_bytes
        self.pid = os.getpid()

    def available(self):
        return self.m.available_size()

    def alloc(self, n):
        return self.m.alloc(n)

    def free(self, ids):
        if ids:
            self.m.free(ids)

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
        return {'held_bytes': self.held(), 'seg_used': used,
                'seg_prealloc': prealloc}

    def describe(self):
        return {'blocks': self.nblocks, 'page_total': self.page_bytes,
                'page_blocks': self.page_blocks, 'ipc_name': self.ipc}

    def close(self):
        """Shut down as vLLM's shutdown path does (manager, then the
        allocator), so that every mapping is undone and the stand-in's
        counts can be checked to balance."""
        t = time.monotonic()
        ok = self.m.shutdown()
        self.vmm.shutdown_kvcached()
        return {'shutdown_ok': bool(ok),
                'shutdown_s': round(time.monotonic() - t, 3),
                'segment_left': os.path.exists('/dev/shm/' + self.ipc)}
