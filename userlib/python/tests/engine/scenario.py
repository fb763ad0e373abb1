# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
"""One scheduler's sequence of calls, run through SGLang or kvpool.sglang.

``run(side)`` drives admissions with a shared prefix, a chunked
prefill, decode steps, finishes that insert into the prefix cache, a
streaming session's two turns, a retraction, a batch refused for rows
and one refused for tokens, and returns one record per step: every live
request's req_to_token row, the prefix cache's entries, the free token
and row counts, and the error the step raised. compare.py holds two such
lists against each other.

The radix tree is a small one of this file's (ToyTree), the same on
both sides: SGLang's trees need a model runner around them, and the tree
is what stays SGLang's own under kvpool anyway (docs/sglang.md). Req,
the batch and the session are stand-ins with the attributes SGLang's
functions read; the record on SGLang's side is SGLang's ReqKvInfo, and
the session there is SGLang's StreamingSession.
"""

import types

TOKENS = 64         # usable KV tokens (page size 1): pages 1..64
ROWS = 6            # usable rows: 1..6
CTX = 48            # max_context_len


class Session:
    def __init__(self, sid):
        self.session_id = sid
        self.streaming = True
        self.finished = []

    def finish_req(self, req):
        self.finished.append(req.rid)

    def abort_req(self):
        pass


class Req:
    """The attributes of SGLang's Req that the functions under test read."""

    def __init__(self, rid, prompt, kv_factory, session=None):
        self.rid = rid
        self.origin_input_ids = list(prompt)
        self.output_ids = []
        self.kv = kv_factory()
        self._kv_factory = kv_factory
        self.prefix_len = 0
        self.lock = None
        self.last_node = None
        self.session = session
        self.to_finish = None
        self.finished_reason = None
        self.finished_len = None
        self.skip_radix_cache_insert = False
        self.swa_branching_seqlen = None
        self.done = False

    @property
    def fill_ids(self):
        return self.origin_input_ids + self.output_ids

    def finished(self):
        return self.done

    def refresh_fill_ids(self):
        pass

    def owned_kv_len(self):
        return self.kv.kv_committed_len

    def detach_kv(self):
        kv, self.kv = self.kv, self._kv_factory()
        return kv

    def reset_for_retract(self):
        self.prefix_len = 0
        self.last_node = None
        self.kv.cache_protected_len = 0
        self.kv.cache_inserted_len = 0
        self.lock = None


class Lock:
    def __init__(self, node):
        self.node = node


class ToyTree:
    """A prefix cache of whole inserted sequences: match is the longest
    common prefix with any of them; the nodes keep the token indices the
    row had. It frees nothing itself (no eviction in the scenario), so
    both sides' free counts say only what the pools did."""

    def __init__(self, req_to_token_pool, allocator, free_kv_row=None,
                 page_size=1):
        self.req_to_token_pool = req_to_token_pool
        self.token_to_kv_pool_allocator = allocator
        self.page_size = page_size
        self.nodes = []             # [tokens, indices, refs]
        self.session = None
        self._free_kv_row = free_kv_row

    # What SGLang's functions ask of a tree.
    def supports_prefix_sharing(self):
        return False

    def supports_mamba(self):
        return False

    def free_kv_row(self, kv, ranges):
        self._free_kv_row(self, kv, ranges)

    def maybe_hand_to_session(self, req):
        self.session.take(req)

    def claim_kv_row(self, req):
        return self.session.try_cache_finished_req(req)

    def on_release(self, req, *, checkpointed):
        pass

    def unlock(self, lock):
        if lock is not None and lock.node is not None:
            lock.node[2] -= 1

    def lock(self, node):
        if node is not None:
            node[2] += 1
        return Lock(node)

    def prefix_device_indices(self, req):
        import torch
        return torch.tensor(req.last_node[1][:req.prefix_len],
                            dtype=torch.int64)

    def pretty_print(self):
        pass

    def available_and_evictable_str(self):
        return "available=%d" % self.token_to_kv_pool_allocator.available_size()

    def checkpoint(self, req, *, up_to):
        # Whole pages only, as SGLang's paged trees insert.
        up_to -= up_to % self.page_size
        row = self.req_to_token_pool.req_to_token[req.kv.req_pool_idx]
        idx = [int(x) for x in row[:up_to]]
        node = [tuple(req.fill_ids[:up_to]), idx, 0]
        best = self._match(node[0])[1]
        # The scenario never inserts a token the tree has past the
        # request's own match (SGLang would free such duplicates).
        assert best <= req.kv.cache_protected_len, (req.rid, best)
        self.unlock(req.lock)
        self.nodes.append(node)
        req.lock = self.lock(node)
        req.last_node = node
        req.kv.cache_protected_len = up_to

    def _match(self, tokens):
        best, blen = None, 0
        for n in self.nodes:
            k = 0
            while k < min(len(n[0]), len(tokens)) and n[0][k] == tokens[k]:
                k += 1
            if k > blen:
                best, blen = n, k
        return best, blen

    def match_prefix(self, req, lend):
        """The scheduler's match at admission; lend(req, key_len) is the
        session's, which wins when it applies."""
        key = req.fill_ids[:-1]             # one token kept for logits
        plen = lend(req, key)
        if plen is not None:
            req.prefix_len = plen
            return
        node, plen = self._match(key)
        plen -= plen % self.page_size
        req.prefix_len = plen
        req.last_node = node
        req.kv.cache_protected_len = plen
        req.lock = self.lock(node if plen else None)

    def cached(self):
        """The tree's entries, as lists of token indices."""
        return [list(n[1]) for n in self.nodes]


class Batch:
    def __init__(self, side, reqs, prefix_lens, seq_lens):
        import torch
        self.reqs = reqs
        self.device = "cpu"
        self.req_to_token_pool = side.rtp
        self.tree_cache = side.tree
        self.hisparse_coordinator = None
        self.prefix_lens = list(prefix_lens)
        self.extend_lens = [s - p for s, p in zip(seq_lens, prefix_lens)]
        self.extend_num_tokens = sum(self.extend_lens)
        self.seq_lens_cpu = torch.tensor(seq_lens, dtype=torch.int64)
        self.seq_lens = self.seq_lens_cpu.clone()
        self.model_config = types.SimpleNamespace(is_encoder_decoder=False)
        idx = [r.kv.req_pool_idx for r in reqs]
        if all(i is not None for i in idx):
            self.req_pool_indices_cpu = torch.tensor(idx, dtype=torch.int64)
            self.req_pool_indices = self.req_pool_indices_cpu.clone()

    def maybe_evict_swa(self):
        pass

    def is_dllm(self):
        return False


def sglang_side():
    """SGLang 0.5.23's own classes and functions."""
    import torch
    from sglang.srt.runtime_context import SpawnRanks, publish, reset_context
    from sglang.srt.server_args import ServerArgs

    reset_context()
    publish(ServerArgs(model_path="dummy", device="cpu",
                       attention_backend="torch_native"),
            role="test", ranks=SpawnRanks(world_rank=0, dp_rank=None))
    from sglang.srt.managers.schedule_batch import ReqKvInfo
    from sglang.srt.mem_cache import allocation, common
    from sglang.srt.mem_cache.allocator import TokenToKVPoolAllocator
    from sglang.srt.mem_cache.base_prefix_cache import BasePrefixCache
    from sglang.srt.mem_cache.memory_pool import ReqToTokenPool
    from sglang.srt.session.streaming_session import StreamingSession

    s = types.SimpleNamespace(name="sglang")
    s.rtp = ReqToTokenPool(ROWS, CTX, "cpu", False)
    s.alloc = TokenToKVPoolAllocator(TOKENS, torch.float16, "cpu", None,
                                     False)
    s.tree = ToyTree(s.rtp, s.alloc, BasePrefixCache.free_kv_row)
    s.session = StreamingSession(s.tree)
    s.tree.session = s.session

    # The tree's checkpoint_into_tree, which SGLang's session calls.
    s.tree.checkpoint_into_tree = s.tree.checkpoint
    s.kv_factory = ReqKvInfo
    s.alloc_for_extend = allocation.alloc_for_extend
    s.alloc_for_decode = allocation.alloc_for_decode
    s.release_kv_cache = common.release_kv_cache

    def release_batch(reqs, tree, *, checkpoint):
        for r in reqs:
            common.release_kv_cache(r, tree, checkpoint=checkpoint)
    s.release_batch = release_batch

    def lend(req, key):
        m = s.session.try_match_prefix(
            types.SimpleNamespace(req=req, key=key))
        return None if m is None else m.device_prefix_len
    s.lend = lend
    s.release_session = s.session.release_session
    s.free_tokens = s.alloc.available_size
    s.free_rows = s.rtp.available_size
    s.cache_pages = lambda: None
    s.verify = lambda: None
    return s


def kvpool_side(pool):
    """kvpool.sglang on a pool of the same geometry (reserve_zero)."""
    from kvpool import sglang as ks

    s = types.SimpleNamespace(name="kvpool")
    s.rtp = ks.ReqToTokenPool(ROWS, CTX, "cpu", False, pool=pool)
    s.alloc = ks.KVPoolTokenAllocator(pool)
    s.tree = ToyTree(s.rtp, s.alloc, page_size=pool.info.page_tokens)
    s.session = ks.StreamingSessions(s.rtp, s.tree)
    s.tree.session = s.session
    s.kv_factory = ks.KvRecord
    s.alloc_for_extend = ks.alloc_for_extend
    s.alloc_for_decode = ks.alloc_for_decode
    s.release_kv_cache = ks.release_kv_cache
    s.release_batch = ks.release_kv_cache_batch     # one RELEASE
    s.lend = lambda req, key: s.session.lend(req, len(key))
    s.release_session = s.session.release_session
    s.free_tokens = s.alloc.available_size
    s.free_rows = s.rtp.available_size

    def cache_pages():
        st = pool.stats()
        return st.cache_evictable + st.cache_pinned
    s.cache_pages = cache_pages

    def verify():
        try:
            return pool.verify().violations
        except OSError:
            return None
    s.verify = verify

    def kernel_rows():
        # The kernel's page list of every held row, as token indices.
        return {i: [int(x) for x in s.rtp.row_tokens(i, n)]
                for i, n in held.items()}
    held = {}
    s.kernel_rows = kernel_rows
    s.held = held
    return s


def run(side):
    """The scenario; one record per step."""
    steps = []
    live = {}                                   # rid -> Req
    tok = iter(range(5000, 9000))               # decode output token ids

    def record(name, err=None):
        rows = {}
        for rid, r in sorted(live.items()):
            if r.kv.holds_kv:
                n = r.kv.kv_allocated_len
                rows[rid] = [int(x) for x in
                             side.rtp.req_to_token[r.kv.req_pool_idx][:n]]
        for sid, sl in sorted(side.session.slots.items()):
            if sl.kv.holds_kv:
                n = sl.kv.kv_allocated_len
                rows["slot:" + sid] = [
                    int(x) for x in
                    side.rtp.req_to_token[sl.kv.req_pool_idx][:n]]
        rec = {"step": name, "page_size": side.tree.page_size,
               "rows": rows, "tree": side.tree.cached(),
               "free_tokens": int(side.free_tokens()),
               "free_rows": int(side.free_rows()),
               "error": None if err is None else type(err).__name__,
               "error_msg": None if err is None else str(err).split("\n")[0],
               "cache_pages": side.cache_pages(),
               "violations": side.verify()}
        if hasattr(side, "kernel_rows"):
            side.held.clear()
            for r in list(live.values()):
                if r.kv.holds_kv:
                    side.held[r.kv.req_pool_idx] = r.kv.kv_allocated_len
            rec["kernel_rows_match"] = all(
                rows_k == [int(x) for x in
                           side.rtp.req_to_token[i][:len(rows_k)]]
                for i, rows_k in side.kernel_rows().items())
        steps.append(rec)

    def new(rid, prompt, session=None):
        r = Req(rid, prompt, side.kv_factory, session)
        return r

    def admit(name, reqs, chunk=None):
        """Match, then one extend batch; chunk caps a request's first
        chunk (rid -> tokens this chunk)."""
        for r in reqs:
            side.tree.match_prefix(r, side.lend)
        seq = []
        for r in reqs:
            total = len(r.fill_ids)
            if chunk and r.rid in chunk:
                total = r.prefix_len + chunk[r.rid]
            seq.append(total)
        err = None
        try:
            side.alloc_for_extend(
                Batch(side, reqs, [r.prefix_len for r in reqs], seq))
            for r in reqs:
                live[r.rid] = r
                r.extend_end = r.kv.kv_allocated_len
        except RuntimeError as e:
            err = e
            for r in reqs:
                side.tree.unlock(r.lock)
                r.lock = None
        record(name, err)

    def next_chunk(name, r, n):
        plen = r.kv.kv_allocated_len
        r.prefix_len = plen
        side.alloc_for_extend(Batch(side, [r], [plen], [plen + n]))
        record(name)

    def decode(name, reqs, steps_n=1):
        for k in range(steps_n):
            b = Batch(side, reqs, [0] * len(reqs),
                      [r.kv.kv_allocated_len for r in reqs])
            side.alloc_for_decode(b, 1)
            for r in reqs:
                r.output_ids.append(next(tok))
            record("%s.%d" % (name, k))

    def finish(name, reqs, checkpoint=True):
        for r in reqs:
            r.done = True
            r.finished_len = len(r.output_ids)
        side.release_batch(reqs, side.tree, checkpoint=checkpoint)
        for r in reqs:
            live.pop(r.rid, None)
        record(name)

    def retract(name, r):
        side.release_kv_cache(r, side.tree, checkpoint=False)
        r.reset_for_retract()
        live.pop(r.rid, None)
        record(name)

    record("start")
    A = new("A", range(100, 110))
    B = new("B", range(200, 208))
    admit("admit A B", [A, B])
    decode("decode A B", [A, B], 3)
    finish("finish A", [A])
    # C shares A's first 8 tokens (a tree hit), then its own; D is new.
    C = new("C", list(range(100, 108)) + list(range(300, 306)))
    D = new("D", range(400, 405))
    admit("admit C(chunk) D", [C, D], chunk={"C": 2})
    next_chunk("C chunk 2", C, len(C.fill_ids) - C.kv.kv_allocated_len)
    decode("decode B C D", [B, C, D], 2)
    # A streaming session's first turn.
    s1 = Session("s1")
    E = new("E", range(500, 506), session=s1)
    admit("admit E (session turn 1)", [E])
    decode("decode E", [E], 2)
    finish("finish E -> slot", [E])
    # More requests than free rows: refused whole.
    many = [new("X%d" % i, range(600 + 10 * i, 604 + 10 * i))
            for i in range(4)]
    admit("admit 4 (no rows)", many)
    retract("retract D", D)
    finish("finish B C", [B, C])
    # The session's second turn: E's tokens and three new ones.
    F = new("F", E.fill_ids + [700, 701, 702], session=s1)
    admit("admit F (session turn 2)", [F])
    decode("decode F", [F], 1)
    finish("finish F -> slot", [F])
    side.release_session("s1")
    record("close session")
    # D comes back after its retraction, from nothing.
    D2 = new("D", D.fill_ids)
    admit("readmit D", [D2])
    # More tokens than are free: refused.
    G = new("G", range(800, 800 + 40))
    admit("admit G (no tokens)", [G])
    finish("finish D", [D2])
    return steps
