# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
"""Every Pool op of docs/python.md on a pool the test makes (the `pool`
fixture: 64 pages of 4 tokens, 16 rows of up to 256 tokens, page 0 and
row 0 reserved)."""

import array
import errno
import gc
import os
import threading
from collections.abc import Iterable
from typing import Any

import numpy as np
import pytest

import kvpool
from kvpt import (AQ, H, Handles, L, Pools, free_identity, pages_of, pool_path,
                  wait_for, wait_in_poll)

pytestmark = pytest.mark.device

NR_PAGES, PT, NR_ROWS, ROW_TOKENS = 64, 4, 16, 256
USABLE_PAGES, USABLE_ROWS = NR_PAGES - 1, NR_ROWS - 1
ROW_HELD, ROW_SLOT = 1, 2


def check_ids(got: Iterable[Any], n: int) -> list[int]:
    ids = [int(x) for x in got]
    assert len(ids) == n
    assert len(set(ids)) == n, ids
    assert all(0 < x < NR_PAGES for x in ids), ids
    return ids


def full_row(pool: kvpool.Pool, tokens: int) -> tuple[Handles, list[int]]:
    """A new row of `tokens` tokens, all committed: (handles, page ids)."""
    h = pool.alloc_rows(1)
    ids = check_ids(pool.extend(h, L(tokens)), -(-tokens // PT))
    pool.commit(h, L(tokens))
    return h, ids


def test_default_pool_opens() -> None:
    with kvpool.Pool() as p:
        assert p.info.pool_id == 0
        assert not p.closed
    assert p.closed


def test_info(pool: kvpool.Pool) -> None:
    i = pool.info
    assert i.abi_version >= 2
    assert (i.nr_pages, i.page_tokens, i.nr_rows, i.row_tokens) == \
        (NR_PAGES, PT, NR_ROWS, ROW_TOKENS)
    assert i.create_flags == 1  # KVPOOL_CREATE_RESERVE_ZERO
    assert i.max_batch == NR_ROWS
    assert tuple(pool.info) == tuple(i)  # read once, at open
    for f in ("ROWS", "EXTEND", "SLOTS", "VERIFY", "PREFIX_CACHE", "SWA",
              "EXPORT", "QUOTA", "PRESSURE", "ARENA"):
        assert i.features & getattr(kvpool, "FEAT_" + f), f
    assert os.path.realpath("/proc/self/fd/%d" % pool.fileno()) == \
        pool_path(i.pool_id)
    with kvpool.Pool(pool_path(i.pool_id)) as q:
        assert q.info.client_id != i.client_id
        assert q.info.pool_id == i.pool_id


def test_close_and_context(pools: Pools) -> None:
    pid = pools.create()
    p = kvpool.Pool(pool_path(pid))
    fd = p.fileno()
    p.close()
    assert p.closed
    with pytest.raises(OSError):
        os.fstat(fd)
    p.close()  # a second close is harmless
    for call in (p.stats, p.alloc_row, p.pressure, p.map_arena,
                 lambda: p.release(np.zeros(1, np.uint64))):
        with pytest.raises(ValueError):
            call()


def test_from_fd_owns_fd(pools: Pools) -> None:
    pid = pools.create()
    fd = os.open(pool_path(pid), os.O_RDWR | os.O_CLOEXEC)
    p = kvpool.Pool.from_fd(fd)
    assert p.fileno() == fd
    assert p.info.pool_id == pid
    h = p.alloc_row()
    assert p.stats().client_rows == 1
    p.close()
    with pytest.raises(OSError):
        os.fstat(fd)
    del h


def test_stats_fresh(pool: kvpool.Pool) -> None:
    s = pool.stats()
    assert s.free_pages == USABLE_PAGES
    assert s.reserved_pages == 1
    assert s.free_rows == USABLE_ROWS
    assert s.reserved_rows == 1
    assert s.nr_clients == 1
    assert (s.client_rows, s.client_pages, s.quarantine_pages) == (0, 0, 0)
    assert free_identity(s, pool.info) is None


def test_alloc_rows_release(pool: kvpool.Pool) -> None:
    hs = pool.alloc_rows(3)
    assert len(hs) == 3 and hs.itemsize == 8
    idx = {kvpool.handle_idx(int(h)) for h in hs}
    assert len(idx) == 3 and 0 not in idx
    s = pool.stats()
    assert (s.held_rows, s.client_rows, s.free_rows) == \
        (3, 3, USABLE_ROWS - 3)
    q = pool.row_query(int(hs[1]))
    assert q.state == ROW_HELD
    assert q.req_pool_idx == kvpool.handle_idx(int(hs[1]))
    assert (q.nr_pages, q.allocated_len, q.committed_len) == (0, 0, 0)
    assert pool.release(hs) == 0
    assert pool.stats().free_rows == USABLE_ROWS
    with pytest.raises(kvpool.Error):
        pool.row_query(int(hs[0]))


def test_alloc_row_and_out_buffer(pool: kvpool.Pool) -> None:
    h = pool.alloc_row()
    assert isinstance(h, int)
    out = array.array("Q", [0] * 5)
    assert pool.alloc_rows(4, out) == 4
    assert all(out[:4]) and out[4] == 0
    assert len({kvpool.handle_idx(x) for x in list(out[:4]) + [h]}) == 5
    assert pool.stats().client_rows == 5
    assert pool.release(AQ(h, *out[:4])) == 0


def test_extend_returns_array(pool: kvpool.Pool) -> None:
    hs = pool.alloc_rows(2)
    nr_new = np.zeros(2, np.uint32)
    pages = pool.extend(hs, L(10, 5), nr_new=nr_new)
    ids = check_ids(pages, 5)  # ceil(10/4) + ceil(5/4)
    assert list(nr_new) == [3, 2]
    assert pages.itemsize == 4
    q0 = pool.row_query(int(hs[0]))
    assert pages_of(q0) == ids[:3]
    assert (q0.allocated_len, q0.nr_pages) == (10, 3)
    assert pages_of(pool.row_query(int(hs[1]))) == ids[3:]
    s = pool.stats()
    assert (s.row_pages, s.free_pages, s.client_pages) == \
        (5, USABLE_PAGES - 5, 5)
    # The partial last page is filled first: 10 -> 12 takes nothing.
    more = pool.extend(hs, L(12, 9), nr_new=nr_new)
    assert list(nr_new) == [0, 1]
    assert len(more) == 1
    assert pool.release(hs) == 6
    assert pool.stats().free_pages == USABLE_PAGES


def test_extend_into_buffer(pool: kvpool.Pool) -> None:
    hs = pool.alloc_rows(2)
    buf = np.full(8, 0xDEADBEEF, np.uint32)
    n = pool.extend(hs, L(4, 13), pages=buf)
    assert n == 5
    check_ids(buf[:5], 5)
    assert list(buf[5:]) == [0xDEADBEEF] * 3
    assert pages_of(pool.row_query(int(hs[1]))) == list(buf[1:5])
    # array.array('I') as the page buffer and 'i' lengths.
    pbuf = array.array("I", [0] * 4)
    nn = array.array("i", [0, 0])
    assert pool.extend(hs, array.array("i", [8, 13]), pages=pbuf,
                       nr_new=nn) == 1
    assert list(nn) == [1, 0]
    assert pool.release(hs) == 6


def test_commit_trim(pool: kvpool.Pool) -> None:
    h = pool.alloc_rows(1)
    pool.extend(h, L(16))
    assert pool.commit(h, L(5)) is None
    q = pool.row_query(int(h[0]))
    assert (q.allocated_len, q.committed_len) == (16, 5)
    # Pages from ceil(5/4) = 2 on go: 2 of 4.
    assert pool.trim(h) == 2
    q = pool.row_query(int(h[0]))
    assert (q.allocated_len, q.committed_len, q.nr_pages) == (5, 5, 2)
    assert pool.stats().row_pages == 2
    assert pool.release(h) == 2


def test_release_donate_and_evict(pool: kvpool.Pool) -> None:
    h = pool.alloc_rows(1)
    ids = check_ids(pool.extend(h, L(10)), 3)
    pool.commit(h, L(8))
    # Two full committed pages go to the cache, the third is freed.
    assert pool.release(h, donate=True) == 1
    s = pool.stats()
    assert (s.client_cache_pages, s.cache_evictable, s.cache_pinned) == \
        (2, 2, 0)
    assert s.free_pages == USABLE_PAGES - 2
    assert free_identity(s, pool.info) is None
    assert pool.cache_evict(np.array(ids[:2], np.uint32)) == 2
    assert pool.stats().free_pages == USABLE_PAGES


def test_donate_attach_prefix(pool: kvpool.Pool) -> None:
    a, ids = full_row(pool, 12)
    assert pool.donate(a, L(8)) == 2
    q = pool.row_query(int(a[0]))
    assert q.protected_len == 8
    s = pool.stats()
    assert (s.cache_pinned, s.cache_evictable, s.row_pages) == (2, 0, 1)
    assert pool.release(a) == 1
    assert pool.stats().cache_evictable == 2
    b = pool.alloc_row()
    prefix = np.array(ids[:2], np.uint32)
    assert pool.attach_prefix(b, prefix) is None
    q = pool.row_query(b)
    assert pages_of(q) == ids[:2]
    assert (q.allocated_len, q.committed_len, q.protected_len) == (8, 8, 8)
    assert pool.stats().cache_pinned == 2
    assert pool.release(H(b)) == 0
    assert pool.cache_evict(array.array("I", ids[:2])) == 2
    assert pool.stats().free_pages == USABLE_PAGES


def test_swa_free(pool: kvpool.Pool) -> None:
    h, ids = full_row(pool, 16)
    # Edge 9: pages wholly below token 9 are the first two.
    assert pool.swa_free(h, L(9)) == 2
    q = pool.row_query(int(h[0]))
    assert q.swa_evicted_len == 8
    assert pages_of(q) == [kvpool.PAGE_NONE] * 2 + ids[2:]
    assert pool.stats().row_pages == 2
    assert pool.release(h) == 2


def test_slots(pool: kvpool.Pool) -> None:
    sid = 0xDEADBEEF12345678
    h = pool.alloc_row()
    ids = check_ids(pool.extend(H(h), L(7)), 2)
    pool.commit(H(h), L(6))
    assert pool.to_slot(h, sid) == 2
    s = pool.stats()
    assert (s.slot_rows, s.slot_pages, s.client_slots, s.held_rows) == \
        (1, 2, 1, 0)
    with pytest.raises(kvpool.Error):
        pool.row_query(h)
    q = pool.slot_query(sid)
    assert q.state == ROW_SLOT
    assert pages_of(q) == ids
    assert (q.allocated_len, q.committed_len) == (7, 6)
    h2, n = pool.from_slot(sid)
    assert n == 2
    assert kvpool.handle_idx(h2) == kvpool.handle_idx(h)
    assert kvpool.handle_gen(h2) != kvpool.handle_gen(h)
    q = pool.row_query(h2)
    assert (q.state, q.committed_len, pages_of(q)) == (ROW_HELD, 6, ids)
    assert pool.to_slot(h2, 7) == 2
    assert pool.slot_release(7) == 2
    s = pool.stats()
    assert (s.slot_rows, s.free_pages, s.free_rows) == \
        (0, USABLE_PAGES, USABLE_ROWS)


def test_row_query_into_buffer(pool: kvpool.Pool) -> None:
    h = pool.alloc_row()
    ids = check_ids(pool.extend(H(h), L(12)), 3)
    buf = np.zeros(2, np.uint32)
    q = pool.row_query(h, pages=buf)
    assert q.pages is None
    assert q.nr_pages == 3
    assert list(buf) == ids[:2]
    big = array.array("I", [7] * 5)
    q = pool.row_query(h, pages=big)
    assert list(big) == ids + [7, 7]
    pool.to_slot(h, 99)
    sb = np.zeros(3, np.uint32)
    q = pool.slot_query(99, pages=sb)
    assert q.pages is None and list(sb) == ids
    assert pool.slot_release(99) == 3


def test_verify(pool: kvpool.Pool) -> None:
    hs = pool.alloc_rows(2)
    pool.extend(hs, L(20, 3))
    v = pool.verify()
    assert v.violations == 0
    assert v.pages_checked >= NR_PAGES - 1
    assert v.rows_checked >= NR_ROWS - 1
    pool.release(hs)


def test_pool_admin(pools: Pools) -> None:
    pid = pools.create(nr_pages=32, page_tokens=2, nr_rows=4,
                       row_tokens=64, reserve_zero=False)
    assert pid in kvpool.pool_list()
    info, st = kvpool.pool_status(pid)
    assert (info.pool_id, info.nr_pages, info.nr_rows, info.create_flags) \
        == (pid, 32, 4, 0)
    assert (st.free_pages, st.reserved_pages) == (32, 0)
    p = pools.open(pid)
    assert kvpool.pool_status(pid)[1].nr_clients == 1
    assert p.stats().free_rows == 4
    with pytest.raises(kvpool.Error) as ei:
        kvpool.pool_destroy(pid)  # it has a client
    assert ei.value.errno == errno.EBUSY
    assert pid in kvpool.pool_list()


def test_destroy_missing_pool() -> None:
    with pytest.raises(kvpool.Error) as ei:
        kvpool.pool_destroy(63 if 63 not in kvpool.pool_list() else 62)
    assert ei.value.errno == errno.ENODEV


def test_garbage_collected_pool_gives_back(pools: Pools) -> None:
    pid = pools.create()
    watch = pools.open(pid)
    p = kvpool.Pool(pool_path(pid))
    hs = p.alloc_rows(2)
    p.extend(hs, L(8, 8))
    assert watch.stats().nr_clients == 2
    del p
    gc.collect()
    s = watch.stats()
    assert (s.nr_clients, s.held_rows, s.free_pages) == \
        (1, 0, USABLE_PAGES)


def test_threads_share_a_pool(pool: kvpool.Pool) -> None:
    """Four threads on one Pool at once (the binding's per-Pool scratch
    and the GIL dropped around every ioctl); then the pool is sound."""
    errors: list[str] = []

    def work(n: int) -> None:
        try:
            for i in range(40):
                hs = pool.alloc_rows(2)
                pool.extend(hs, L(1 + i % 8, 8))
                pool.commit(hs, L(1, 8))
                pool.trim(hs)
                q = pool.row_query(int(hs[1]))
                assert q.committed_len == 8 and q.nr_pages == 2
                assert pool.release(hs) == 3
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(repr(e))

    ts = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(120)
    assert not errors
    s = pool.stats()
    assert (s.free_pages, s.free_rows) == (USABLE_PAGES, USABLE_ROWS)
    assert pool.verify().violations == 0


def test_close_refused_while_another_thread_calls(pool: kvpool.Pool) -> None:
    got: list[bool] = []
    tid: list[int] = []

    def waiter() -> None:
        tid.append(threading.get_native_id())
        got.append(pool.wait_pressure(5))

    t = threading.Thread(target=waiter)
    t.start()
    assert wait_for(lambda: tid, 5)
    assert wait_in_poll(tid[0]), "the thread never reached poll()"
    with pytest.raises(RuntimeError):
        pool.close()
    assert not pool.closed
    assert pool.stats().nr_clients == 1  # still open and usable
    t.join(10)
    assert got == [False]
    pool.close()
    assert pool.closed
