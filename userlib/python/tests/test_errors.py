# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
"""kvpool.Error and its subclasses: errno, text, .index, .shortfall, and
nothing changed in the pool after a failed op."""

import errno
import os

import numpy as np
import pytest

import kvpool
from kvpt import H, L, Pools, snap, wait_for

pytestmark = pytest.mark.device

PT = 4
USABLE_PAGES, USABLE_ROWS = 63, 15


def check_error(e: BaseException, err: int,
                cls: type[kvpool.Error] = kvpool.Error) -> None:
    assert type(e) is cls, type(e)
    assert isinstance(e, kvpool.Error) and isinstance(e, OSError)
    assert e.errno == err
    assert e.strerror == kvpool.strerror(err)
    assert kvpool.strerror(err) in str(e)


def test_nospace_rows(pool: kvpool.Pool) -> None:
    keep = pool.alloc_rows(10)
    before = snap(pool, keep)
    with pytest.raises(kvpool.NoSpace) as ei:
        pool.alloc_rows(USABLE_ROWS - 10 + 3)
    check_error(ei.value, errno.ENOSPC, kvpool.NoSpace)
    assert ei.value.shortfall == 3
    assert snap(pool, keep) == before
    pool.release(keep)


def test_nospace_pages(pool: kvpool.Pool) -> None:
    hs = pool.alloc_rows(2)
    pool.extend(hs, L(40, 0))  # 10 pages
    before = snap(pool, hs)
    # 10 + 53 usable left; ask for 50 + 8 more pages: 5 missing.
    with pytest.raises(kvpool.NoSpace) as ei:
        pool.extend(hs, L(240, 32))
    check_error(ei.value, errno.ENOSPC, kvpool.NoSpace)
    assert ei.value.shortfall == 5
    assert ei.value.index is None  # not one entry's fault
    assert snap(pool, hs) == before
    # Exactly what is left still fits.
    assert len(pool.extend(hs, L(240, 12))) == 53
    assert pool.stats().free_pages == 0
    pool.release(hs)


def self_cgroup_id() -> int:
    """The caller's cgroup v2 id (inode of its folder), mounting cgroup2
    at /sys/fs/cgroup if nothing is there (the VM's init mounts none)."""
    root = "/sys/fs/cgroup"
    with open("/proc/self/mounts") as f:
        mounted = any(ln.split()[1] == root and ln.split()[2] == "cgroup2"
                      for ln in f)
    if not mounted:
        import subprocess
        subprocess.run(["mount", "-t", "cgroup2", "cgroup2", root],
                       check=True)
    with open("/proc/self/cgroup") as f:
        for ln in f:
            if ln.startswith("0::"):
                return os.stat(root + ln[3:].strip()).st_ino
    raise AssertionError("no cgroup v2 line in /proc/self/cgroup")


def test_quota_by_cgroup_and_uid(pools: Pools) -> None:
    pid = pools.create()
    cg = self_cgroup_id()
    tid = kvpool.tenant_set(pid, cgroup_id=cg, uid=os.getuid(), max_rows=2,
                            max_pages=6, label="pytest")
    p = pools.open(pid)
    s = p.stats()
    assert s.tenant_id == tid
    assert (s.tenant_max_rows, s.tenant_max_pages) == (2, 6)
    ts = {t.tenant_id: t for t in kvpool.tenant_list(pid)}
    assert ts[tid].cgroup_id == cg and ts[tid].uid == os.getuid()
    assert ts[tid].label == "pytest"
    assert ts[tid].nr_clients == 1
    before = snap(p)
    with pytest.raises(kvpool.QuotaExceeded) as ei:
        p.alloc_rows(3)
    check_error(ei.value, errno.EDQUOT, kvpool.QuotaExceeded)
    assert ei.value.shortfall == 1
    assert snap(p) == before
    hs = p.alloc_rows(2)
    pool_free = p.stats().free_pages
    with pytest.raises(kvpool.QuotaExceeded) as ei:
        p.extend(hs, L(16, 16))  # 8 pages, 6 allowed
    assert ei.value.shortfall == 2
    assert p.stats().free_pages == pool_free
    assert len(p.extend(hs, L(16, 8))) == 6
    ts = {t.tenant_id: t for t in kvpool.tenant_list(pid)}
    assert (ts[tid].pages, ts[tid].rows) == (6, 2)
    p.release(hs)


def test_quota_by_cgroup_path(pools: Pools) -> None:
    """A limit set on the cgroup's path (any uid) holds for a new client."""
    pid = pools.create()
    self_cgroup_id()  # mounts cgroup v2 when the guest has not
    with open("/proc/self/cgroup") as f:
        path = next(ln[3:].strip() for ln in f if ln.startswith("0::"))
    tid = kvpool.tenant_set(pid, cgroup_path=path, any_uid=True,
                            max_pages=3, label="bypath")
    p = pools.open(pid)
    assert p.stats().tenant_id == tid
    t = {t.tenant_id: t for t in kvpool.tenant_list(pid)}[tid]
    want = kvpool.TENANT_BY_PATH | kvpool.TENANT_ANY_UID | \
        kvpool.TENANT_CONFIGURED
    assert (t.flags, t.cgroup_id, t.max_pages) == (want, 0, 3)
    assert len(t) == 12  # flags is by name only
    h = p.alloc_rows(1)
    with pytest.raises(kvpool.QuotaExceeded):
        p.extend(h, L(4 * PT))
    p.release(h)
    with pytest.raises(kvpool.Error) as ei:
        kvpool.tenant_set(pid, cgroup_path=path + "/", max_pages=1)
    assert ei.value.errno == errno.EINVAL
    assert kvpool.tenant_set(pid, cgroup_path=path, any_uid=True,
                             remove=True) == tid
    t = {t.tenant_id: t for t in kvpool.tenant_list(pid)}[tid]
    assert t.flags == kvpool.TENANT_BY_PATH | kvpool.TENANT_ANY_UID


def test_quota_by_tenant_id(pool: kvpool.Pool) -> None:
    tid = pool.stats().tenant_id
    assert kvpool.tenant_set(pool.info.pool_id, tenant_id=tid,
                             max_pages=3) == tid
    h = pool.alloc_rows(1)
    with pytest.raises(kvpool.QuotaExceeded) as ei:
        pool.extend(h, L(5 * PT))
    assert ei.value.shortfall == 2
    assert pool.stats().tenant_pages == 0
    pool.release(h)


def test_batch_error_index(pool: kvpool.Pool) -> None:
    hs = pool.alloc_rows(5)
    pool.extend(hs, L(4, 4, 4, 4, 4))
    # Park row 3 and take it back: the same row under a newer generation,
    # so hs[3] is stale (ESTALE), not unknown.
    pool.to_slot(int(hs[3]), 1)
    h3, _ = pool.from_slot(1)
    assert kvpool.handle_idx(h3) == kvpool.handle_idx(int(hs[3]))
    live = [int(x) for x in hs[:3]] + [h3, int(hs[4])]
    before = snap(pool, live)
    with pytest.raises(kvpool.Error) as ei:
        pool.commit(hs, L(4, 4, 4, 4, 4))
    check_error(ei.value, errno.ESTALE)
    assert ei.value.index == 3
    assert ei.value.shortfall == 0
    assert snap(pool, live) == before
    with pytest.raises(kvpool.Error) as ei:
        pool.release(hs)
    assert ei.value.errno == errno.ESTALE and ei.value.index == 3
    assert snap(pool, live) == before
    # A bad length at entry 2 of a commit (past allocated): EINVAL there.
    with pytest.raises(kvpool.Error) as ei:
        pool.commit(H(*live[:4]), L(4, 4, 5, 0))
    check_error(ei.value, errno.EINVAL)
    assert ei.value.index == 2
    assert snap(pool, live) == before
    assert pool.release(H(*live)) == 5
    assert pool.stats().client_rows == 0


def test_plain_errnos(pool: kvpool.Pool) -> None:
    base = tuple(pool.stats())
    h = pool.alloc_row()
    never = (0x7FFF << 32) | kvpool.handle_idx(h)
    for call in (lambda: pool.row_query(never),
                 lambda: pool.to_slot(never, 1),
                 lambda: pool.export(never)):
        with pytest.raises(kvpool.Error) as ei:
            call()
        check_error(ei.value, errno.ENOENT)
        assert ei.value.index is None
    with pytest.raises(kvpool.Error) as ei:
        pool.from_slot(12345)
    check_error(ei.value, errno.ENOENT)
    with pytest.raises(kvpool.Error) as ei:
        pool.slot_release(12345)
    check_error(ei.value, errno.ENOENT)
    with pytest.raises(kvpool.Error) as ei:
        pool.cache_evict(np.array([5], np.uint32))
    check_error(ei.value, errno.ENOENT)
    assert ei.value.index == 0
    pool.to_slot(h, 77)
    h2 = pool.alloc_row()
    with pytest.raises(kvpool.Error) as ei:
        pool.to_slot(h2, 77)
    check_error(ei.value, errno.EEXIST)
    with pytest.raises(kvpool.Error) as ei:
        pool.row_query(h)  # parked: the handle is dead
    assert ei.value.errno in (errno.ENOENT, errno.ESTALE)
    with pytest.raises(kvpool.Error) as ei:
        pool.extend(H(h2), L(300))  # above row_tokens
    check_error(ei.value, errno.EINVAL)
    assert pool.slot_release(77) == 0
    pool.release(H(h2))
    assert tuple(pool.stats()) == base


def test_import_errors(pools: Pools) -> None:
    pid = pools.create()
    other = pools.create(nr_pages=8, nr_rows=4, row_tokens=32)
    p = pools.open(pid)
    q = pools.open(other)
    h = p.alloc_row()
    p.extend(H(h), L(8))
    fd = p.export(h)
    try:
        before = snap(q)
        with pytest.raises(kvpool.Error) as ei:
            q.import_row(fd)
        check_error(ei.value, errno.EXDEV)
        assert snap(q) == before
        h2, n = p.import_row(fd)
        assert n == 2
        with pytest.raises(kvpool.Error) as ei:
            p.import_row(fd)
        check_error(ei.value, errno.EALREADY)
        with pytest.raises(kvpool.Error) as ei:
            p.import_row(q.fileno())  # not an export file
        check_error(ei.value, errno.EINVAL)
        p.release(H(h2))
    finally:
        os.close(fd)
    r, w = os.pipe()
    os.close(w)
    os.close(r)
    with pytest.raises(kvpool.Error) as ei:
        p.import_row(r)
    check_error(ei.value, errno.EBADF)


def test_failed_op_then_recovers(pool: kvpool.Pool) -> None:
    """After an error the client works as before (no state kept)."""
    with pytest.raises(kvpool.NoSpace):
        pool.alloc_rows(USABLE_ROWS + 1)
    hs = pool.alloc_rows(USABLE_ROWS)
    assert pool.release(hs) == 0
    assert wait_for(lambda: pool.stats().free_rows == USABLE_ROWS, 1)
