# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
"""kvpool.sglang without SGLang: its row-level calls on a real pool,
driven by the smallest stand-ins for SGLang's request, tree and batch
(tools/engine-tests.sh compares it with SGLang itself). numpy only:
torch, when it imports, would make req_to_token a tensor, which these
checks read the same way."""

from typing import Any

import pytest

import kvpool
from kvpool import sglang as ks
from kvpt import Pools

pytestmark = pytest.mark.device

ROWS, CTX = 8, 64


class Session:
    def __init__(self, sid: str) -> None:
        self.session_id = sid
        self.streaming = True
        self.finished: list[Any] = []

    def finish_req(self, req: Any) -> None:
        self.finished.append(req)


class Req:
    def __init__(self, rid: str, prompt: int,
                 session: Session | None = None) -> None:
        self.rid = rid
        self.kv: ks.KvInfo = ks.KvRecord()
        self.lock: Any = None
        self.session = session
        self.finished_len: int | None = None
        self.output_ids: list[int] = []
        self.origin_input_ids = list(range(prompt))


class Tree:
    """A tree that caches nothing: no prefix matches, nothing kept."""

    def __init__(self, rtp: ks.ReqToTokenPool,
                 alloc: ks.KVPoolTokenAllocator) -> None:
        self.req_to_token_pool = rtp
        self.token_to_kv_pool_allocator = alloc
        self.sessions: ks.StreamingSessions | None = None
        self.released: list[tuple[str, bool]] = []

    def unlock(self, lock: Any) -> None:
        pass

    def on_release(self, req: Any, *, checkpointed: bool) -> None:
        self.released.append((req.rid, checkpointed))

    def claim_kv_row(self, req: Any) -> bool:
        return self.sessions is not None and \
            self.sessions.try_cache_finished_req(req)

    def checkpoint(self, req: Any, *, up_to: int) -> None:
        raise AssertionError("nothing here is released with checkpoint")

    def prefix_device_indices(self, req: Any) -> list[int]:
        return []

    def maybe_hand_to_session(self, req: Any) -> None:
        if self.sessions is not None:
            self.sessions.take(req)


class Batch:
    def __init__(self, tree: Tree, reqs: list[Req],
                 seq_lens: list[int]) -> None:
        self.req_to_token_pool = tree.req_to_token_pool
        self.tree_cache = tree
        self.reqs = reqs
        self.prefix_lens = [0] * len(reqs)
        self.seq_lens_cpu = seq_lens
        self.req_pool_indices: Any = None
        self.device = "cpu"


def make_pool(pools: Pools, nr_pages: int = 64
              ) -> tuple[kvpool.Pool, ks.ReqToTokenPool, Tree]:
    p = pools.new(nr_pages=nr_pages, page_tokens=1, nr_rows=ROWS + 1,
                  row_tokens=CTX)
    rtp = ks.ReqToTokenPool(ROWS, CTX, pool=p)
    return p, rtp, Tree(rtp, ks.KVPoolTokenAllocator(p))


def row(r: Req) -> int:
    assert r.kv.req_pool_idx is not None
    return r.kv.req_pool_idx


def test_extend_decode_release(pools: Pools) -> None:
    p, rtp, tree = make_pool(pools)
    alloc = tree.token_to_kv_pool_allocator
    free = alloc.available_size()
    a, b = Req("a", 5), Req("b", 7)
    batch = Batch(tree, [a, b], [5, 7])
    out, _, cpu = ks.alloc_for_extend(batch)
    assert (a.kv.kv_committed_len, b.kv.kv_committed_len) == (5, 7)
    # req_to_token holds the kernel's pages, and out_cache_loc is them.
    for r, n in ((a, 5), (b, 7)):
        assert [int(x) for x in rtp.req_to_token[row(r), :n]] == \
            [int(x) for x in rtp.row_tokens(row(r), n)]
    assert sorted(int(x) for x in out) == sorted(
        int(x) for r, n in ((a, 5), (b, 7)) for x in rtp.row_tokens(row(r), n))
    batch.req_pool_indices = cpu
    assert len(ks.alloc_for_decode(batch, 1)) == 2
    assert (a.kv.kv_allocated_len, b.kv.kv_allocated_len) == (6, 8)
    assert alloc.available_size() == free - 14
    assert rtp.available_size() == ROWS - 2
    ks.release_kv_cache_batch([a, b], tree, checkpoint=False)
    assert a.kv.req_pool_idx is None and b.kv.is_kv_released
    assert tree.released == [("a", False), ("b", False)]
    assert alloc.available_size() == free
    assert rtp.available_size() == ROWS
    assert p.verify().violations == 0


def test_extend_short_of_pages_takes_nothing(pools: Pools) -> None:
    p, rtp, tree = make_pool(pools, nr_pages=16)     # 15 pages to give
    a = Req("a", 20)
    with pytest.raises(RuntimeError, match="Prefill out of memory"):
        ks.alloc_for_extend(Batch(tree, [a], [20]))
    # The row it took for the batch is given back, as the kernel would.
    assert a.kv.req_pool_idx is None
    assert rtp.available_size() == ROWS
    assert p.stats().client_rows == 0


def test_streaming_session_parks_and_lends(pools: Pools) -> None:
    p, rtp, tree = make_pool(pools)
    ss = ks.StreamingSessions(rtp, tree)
    tree.sessions = ss
    sess = Session("s1")
    t1 = Req("t1", 6, sess)
    ks.alloc_for_extend(Batch(tree, [t1], [6]))
    idx = row(t1)
    t1.finished_len = 0
    # Finished: the row goes to a slot (TO_SLOT), the request is free.
    ks.release_kv_cache(t1, tree, checkpoint=True)
    assert sess.finished == [t1] and not t1.kv.holds_kv
    assert p.stats().client_slots == 1 and rtp.available_size() == ROWS - 1
    # The next turn borrows it back (FROM_SLOT), same row and pages.
    t2 = Req("t2", 8, sess)
    assert ss.lend(t2, 6) == 6
    assert row(t2) == idx and t2.kv.kv_committed_len == 6
    assert p.stats().client_slots == 0
    assert ss.release_session("s1") == 6
    assert rtp.available_size() == ROWS
    assert p.verify().violations == 0
