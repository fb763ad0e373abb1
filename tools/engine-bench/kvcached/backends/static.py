# SPDX-License-Identifier: GPL-2.0-only
"""The static split: each model owns a fixed part of the GPU.

This is an engine without kvcached: vLLM or SGLang sizes its KV cache
once at start (gpu_memory_utilization) and holds all of it for its
life, so held bytes are the whole part at every step and nothing moves
between models. The blocks are counted, not mapped; the accounting
(blocks per part, bytes per block) is the same as the kvcached side's.
"""


class Pool:
    def __init__(self, geo, block_tokens, share_bytes):
        self.block_bytes = block_tokens * geo['bytes_per_token']
        self.nblocks = share_bytes // self.block_bytes
        self.held = self.nblocks * self.block_bytes
        self.free_ids = list(range(self.nblocks - 1, -1, -1))

    def available(self):
        return len(self.free_ids)

    def alloc(self, n):
        if len(self.free_ids) < n:
            return None
        ids = self.free_ids[-n:]
        del self.free_ids[-n:]
        return ids

    def free(self, ids):
        self.free_ids.extend(ids)

    def sample(self):
        return {'held_bytes': self.held}

    def describe(self):
        return {'blocks': self.nblocks, 'page_total': self.block_bytes,
                'page_blocks': 1}

    def close(self):
        return {'leaked_blocks': self.nblocks - len(self.free_ids)}
