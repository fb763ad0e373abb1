# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
"""Two Python processes: a row exported, passed over a Unix socket
(send_fd/recv_fd) and imported both ways, and a client killed with
SIGKILL while it holds pages (on a pool with an arena they wait in
quarantine while a process that used the client lives)."""

import os
import signal
import socket
import time
from collections.abc import Callable

import pytest

import kvpool
from kvpt import Child, H, L, Pools, pages_of, pool_path, wait_for

pytestmark = pytest.mark.device

USABLE_PAGES = 63
HELD = 5


def test_export_import_across_processes(
        pools: Pools, children: Callable[..., Child]) -> None:
    pid = pools.create()
    p = pools.open(pid)
    h = p.alloc_row()
    ids = [int(x) for x in p.extend(H(h), L(12))]
    p.commit(H(h), L(12))
    xfd = p.export(h)
    assert not os.get_inheritable(xfd)
    s = p.stats()
    assert (s.export_rows, s.export_pages, s.client_pages) == (1, 3, 0)
    with pytest.raises(kvpool.Error):
        p.row_query(h)  # the handle is dead
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    with a, b:
        kid = children("import", pool_path(pid), b.fileno(),
                       pass_fds=[b.fileno()])
        kvpool.send_fd(a, xfd)
        os.close(xfd)
        r = kid.read()
        assert r["idx"] == kvpool.handle_idx(h)
        assert r["nr_pages"] == 3 and r["pages"] == ids
        # Without numpy (the child blocks it) new arrays are array.array.
        assert r["pages_type"] == "array.array"
        assert r["client_pages"] == 3
        s = p.stats()
        assert (s.export_rows, s.row_pages, s.nr_clients) == (0, 3, 2)
        a.send(b"e")  # now export it back
        assert kid.read()["exported"]
        back = kvpool.recv_fd(a)
        try:
            h2, n = p.import_row(back)
        finally:
            os.close(back)
        assert n == 3
        q = p.row_query(h2)
        assert pages_of(q) == ids and q.committed_len == 12
        a.send(b"g")
        assert kid.finish() == 0
    assert wait_for(lambda: p.stats().nr_clients == 1, 10)
    s = p.stats()
    assert (s.client_pages, s.row_pages) == (3, 3)
    assert p.release(H(h2)) == 3


def test_import_object_with_fileno(pool: kvpool.Pool) -> None:
    class Holder:
        def __init__(self, fd: int) -> None:
            self.fd = fd

        def fileno(self) -> int:
            return self.fd

    h = pool.alloc_row()
    pool.extend(H(h), L(5))
    fd = pool.export(h)
    try:
        h2, n = pool.import_row(Holder(fd))
    finally:
        os.close(fd)
    assert n == 2
    sid = 4242
    pool.to_slot(h2, sid)
    fd = pool.export_slot(sid)
    try:
        assert pool.stats().export_pages == 2
        h3, n = pool.import_row(fd)
    finally:
        os.close(fd)
    assert n == 2 and pool.stats().client_slots == 0
    assert pool.release(H(h3)) == 2


def test_unimported_export_comes_back(pool: kvpool.Pool) -> None:
    h = pool.alloc_row()
    pool.extend(H(h), L(8))
    fd = pool.export(h)
    assert pool.stats().export_pages == 2
    os.close(fd)
    assert wait_for(lambda: pool.stats().free_pages == USABLE_PAGES, 10)
    assert pool.stats().export_rows == 0


def test_kill9_gives_pages_back(pools: Pools,
                                children: Callable[..., Child]) -> None:
    pid = pools.create()
    p = pools.open(pid)
    kid = children("hold", pool_path(pid), HELD)
    assert kid.read()["client_pages"] == HELD
    s = p.stats()
    assert (s.nr_clients, s.row_pages, s.held_rows) == (2, HELD, 1)
    assert kid.kill() == -signal.SIGKILL
    assert wait_for(lambda: p.stats().free_pages == USABLE_PAGES, 10)
    s = p.stats()
    assert (s.nr_clients, s.held_rows, s.quarantine_pages) == (1, 0, 0)


def test_kill9_arena_pool_quarantine(pools: Pools,
                                     children: Callable[..., Child]) -> None:
    pid = pools.create(arena_page_bytes=4096)
    p = pools.open(pid)
    # The child closes its client while it holds pages and lives on:
    # they wait in quarantine (its GPU work could still write them).
    kid = children("close-hold", pool_path(pid), HELD)
    assert kid.read()["client_pages"] == HELD
    s = p.stats()
    assert s.quarantine_pages == HELD
    assert s.free_pages == USABLE_PAGES - HELD
    assert s.nr_clients == 1
    time.sleep(0.3)
    assert p.stats().quarantine_pages == HELD, "its user is alive"
    assert p.verify().violations == 0
    assert kid.kill() == -signal.SIGKILL
    assert wait_for(lambda: p.stats().quarantine_pages == 0, 10)
    assert p.stats().free_pages == USABLE_PAGES
    # Killed with its client open: back as well once it is gone.
    kid = children("hold", pool_path(pid), HELD)
    kid.read()
    assert p.stats().row_pages == HELD
    assert kid.kill() == -signal.SIGKILL
    assert wait_for(lambda: p.stats().free_pages == USABLE_PAGES, 10)
    s = p.stats()
    assert (s.quarantine_pages, s.nr_clients, s.held_rows) == (0, 1, 0)
