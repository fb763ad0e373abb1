# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
"""Pressure: Pool.pressure(), wait_pressure() and POLLPRI on fileno(),
driven by the pool's watermarks (kvpool.set_wmark)."""

import errno
import select
import threading
import time
from collections.abc import Iterator

import pytest

import kvpool
from kvpt import L, PageIds

pytestmark = pytest.mark.device

PRESSURE_LOW = 1  # KVPOOL_PRESSURE_LOW


@pytest.fixture
def squeezed(pool: kvpool.Pool) -> Iterator[tuple[kvpool.Pool, PageIds]]:
    """3 evictable cache pages and 50 held ones: 10 of 63 pages free,
    above the new pool's low watermark (64 / 32 = 2)."""
    c = pool.alloc_rows(1)
    cache = pool.extend(c, L(12))
    pool.commit(c, L(12))
    assert pool.release(c, donate=True) == 0
    hog = pool.alloc_rows(1)
    pool.extend(hog, L(200))
    assert pool.stats().free_pages == 10
    yield pool, cache
    pool.release(hog)


def test_no_pressure_above_low(squeezed: tuple[kvpool.Pool, PageIds]) -> None:
    pool, _ = squeezed
    pr = pool.pressure()
    assert pr.ask_pages == 0 and pr.reasons == 0
    assert pr.free_pages == 10
    assert (pr.low_wmark, pr.high_wmark) == (2, 4)
    assert pool.wait_pressure(0) is False
    t0 = time.monotonic()
    assert pool.wait_pressure(0.2) is False
    assert time.monotonic() - t0 >= 0.15


def test_pressure_below_low(squeezed: tuple[kvpool.Pool, PageIds]) -> None:
    pool, cache = squeezed
    pid = pool.info.pool_id
    kvpool.set_wmark(pid, 20, 30)
    pr = pool.pressure()
    # Its share of high - free = 20 pages, capped by its 3 cache pages.
    assert pr.ask_pages == 3
    assert pr.asked == 3  # docs/python.md's name for it
    assert pr.reasons & PRESSURE_LOW
    assert (pr.low_wmark, pr.high_wmark, pr.free_pages) == (20, 30, 10)
    assert pool.wait_pressure(0) is True
    assert pool.wait_pressure(None) is True  # a level: at once
    assert pool.cache_evict(cache) == 3
    pr = pool.pressure()
    assert pr.ask_pages == 0  # nothing left to give
    assert pool.wait_pressure(0) is False


def test_set_wmark_refuses_bad_marks(pool: kvpool.Pool) -> None:
    pid = pool.info.pool_id
    with pytest.raises(kvpool.Error) as ei:
        kvpool.set_wmark(pid, 10, 5)  # high below low
    assert ei.value.errno == errno.EINVAL
    pr = pool.pressure()
    assert (pr.low_wmark, pr.high_wmark) == (2, 4)


def test_poll_sees_pollpri(squeezed: tuple[kvpool.Pool, PageIds]) -> None:
    pool, cache = squeezed
    fd = pool.fileno()
    po = select.poll()
    po.register(fd, select.POLLPRI)
    assert po.poll(0) == []
    kvpool.set_wmark(pool.info.pool_id, 20, 30)
    ev = po.poll(1000)
    assert ev and ev[0][0] == fd and ev[0][1] & select.POLLPRI
    pool.cache_evict(cache)
    assert po.poll(0) == []


def test_epoll_wakes_on_pressure(
        squeezed: tuple[kvpool.Pool, PageIds]) -> None:
    pool, _ = squeezed
    ep = select.epoll()
    try:
        ep.register(pool.fileno(), select.EPOLLPRI)
        assert ep.poll(0) == []
        timer = threading.Timer(0.3, kvpool.set_wmark,
                                (pool.info.pool_id, 20, 30))
        t0 = time.monotonic()
        timer.start()
        ev = ep.poll(10)
        timer.join()
        # The event, not the 10 s timeout, ended the wait; and not before
        # the timer raised the marks. Only a lower bound: load can delay
        # the wake-up, never bring it forward.
        assert ev and ev[0][1] & select.EPOLLPRI
        assert time.monotonic() - t0 >= 0.2
    finally:
        ep.close()


def test_wait_pressure_blocks_in_a_thread(
        squeezed: tuple[kvpool.Pool, PageIds]) -> None:
    """wait_pressure drops the GIL: another thread raises the marks
    while it waits, and it comes back True."""
    pool, _ = squeezed
    got = []
    t = threading.Thread(target=lambda: got.append(pool.wait_pressure(20)))
    t.start()
    time.sleep(0.3)
    assert t.is_alive() and not got
    kvpool.set_wmark(pool.info.pool_id, 20, 30)
    t.join(20)
    # True, not the False of the 20 s timeout: the marks woke it.
    assert got == [True]
