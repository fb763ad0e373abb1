# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
"""One scheduler's run through vLLM 0.33's KVCacheManager, on vLLM's own
BlockPool or on kvpool.vllm's.

``run(manager, kernel=None)`` drives a small scheduler of this file's
over the manager: admissions whose prompts share a prefix (prefix hits
from get_computed_blocks), a chunked prefill (CHUNK tokens a step),
decode steps, finishes that free (and so leave their blocks cached),
preemption when allocate_slots returns None (the last running request
goes, as vLLM's scheduler does it), and a later wave whose prompts
share nothing, which evicts cached blocks, before the shared prefix
is asked for again. It returns one record a step: each running
request's block table, the free block count, the prefix-hit length of
each admission, the requests preempted, and (kernel given: the
kvpool.vllm BlockPool) the kernel's own checks. vllm_compare.py holds
two such runs against each other.

The scheduler is this file's because vLLM's needs a VllmConfig and a
model; what it calls on the manager is what vLLM's Scheduler calls
(get_computed_blocks, allocate_slots, free) in the same order.
"""

BLOCK = 4           # tokens a block (kvpool: page_tokens)
BLOCKS = 17          # vLLM's num_gpu_blocks; block 0 is the null block
CHUNK = 8           # prefill tokens a request a step
MAX_RUNNING = 4

PREFIX = list(range(1, 9))          # two blocks every first-wave prompt has


def requests(v, hasher):
    """(arrival step, Request, output length) of the scenario."""
    sp = v.SamplingParams(max_tokens=64)
    out = []

    def req(name, prompt, step, n_out):
        out.append((step, v.Request(name, prompt, sp, None,
                                    block_hasher=hasher), n_out))

    # Wave 1: a shared prefix, one long prompt (chunked), decodes that
    # fill the pool and preempt.
    req("a", PREFIX + list(range(100, 106)), 0, 6)
    req("b", PREFIX + list(range(200, 205)), 0, 8)
    req("c", PREFIX + list(range(300, 320)), 1, 10)
    req("d", PREFIX + list(range(400, 403)), 2, 14)
    req("e", list(range(500, 512)), 3, 12)
    # Wave 2, after most of wave 1 has finished: prompts sharing
    # nothing, enough to evict part of the cache.
    req("f", list(range(600, 628)), 14, 4)
    req("g", list(range(700, 720)), 15, 4)
    # The shared prefix again: its hit length says what was evicted.
    req("h", PREFIX + list(range(800, 806)), 22, 3)
    req("i", PREFIX + list(range(100, 106)), 23, 3)
    return out


def _table(m, rid):
    return [b for b in m.get_block_ids(rid)[0]]


def run(v, m, kernel=None, steps=27):
    """The scenario on manager m; kernel(m) -> dict of kernel checks."""
    hasher = v.kv_cache_utils.get_request_block_hasher(
        BLOCK, v.get_hash_fn_by_name("sha256"))
    pending = requests(v, hasher)
    waiting = []
    running = []                     # [Request]
    n_out = {}
    records = []
    for step in range(steps):
        for s, r, n in [p for p in pending if p[0] == step]:
            waiting.append(r)
            n_out[r.request_id] = n
        pending = [p for p in pending if p[0] != step]
        hits = {}
        preempted = []
        scheduled = {}
        # Running requests first, in order; a refusal preempts the last.
        i = 0
        while i < len(running):
            r = running[i]
            left = r.num_tokens - r.num_computed_tokens
            n = min(left, CHUNK) if left > 0 else 1
            got = m.allocate_slots(r, n)
            if got is None:
                victim = running.pop()
                m.free(victim)
                victim.num_computed_tokens = 0
                victim.status = v.RequestStatus.PREEMPTED
                waiting.insert(0, victim)
                preempted.append(victim.request_id)
                scheduled.pop(victim.request_id, None)
                continue
            scheduled[r.request_id] = n
            i += 1
        # Then admissions while they fit, as vLLM's waiting queue.
        while waiting and len(running) < MAX_RUNNING and not preempted:
            r = waiting[0]
            blocks, hit, _ = m.get_computed_blocks(r)
            n = min(r.num_tokens - hit, CHUNK)
            got = m.allocate_slots(r, n, hit, blocks)
            if got is None:
                break
            waiting.pop(0)
            hits[r.request_id] = hit
            r.num_computed_tokens = hit
            r.status = v.RequestStatus.RUNNING
            running.append(r)
            scheduled[r.request_id] = n
        # The model's step: computed tokens move on; a request whose
        # prompt is done gets an output token.
        finished = []
        for r in running:
            n = scheduled.get(r.request_id, 0)
            r.num_computed_tokens += n
            if r.num_computed_tokens >= r.num_tokens:
                r.append_output_token_ids(
                    10000 + 100 * ord(r.request_id[0]) + r.num_output_tokens)
                if r.num_output_tokens >= n_out[r.request_id]:
                    finished.append(r)
        rec = {
            "step": step,
            "tables": {r.request_id: _table(m, r.request_id)
                       for r in running},
            "hits": hits,
            "preempted": preempted,
        }
        for r in finished:
            m.free(r)
            running.remove(r)
        rec["finished"] = [r.request_id for r in finished]
        rec["free"] = m.block_pool.get_num_free_blocks()
        rec["usage"] = round(m.block_pool.get_usage(), 6)
        if kernel is not None:
            rec["kernel"] = kernel(m)
        records.append(rec)
    return records
