# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
"""Helpers shared by the kvpool binding's tests (not a test file)."""

import array
import json
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

import kvpool

# The binding's new arrays, as numpy makes them (kvpool's stubs).
Handles = npt.NDArray[np.uint64]
PageIds = npt.NDArray[np.uint32]
Lens = npt.NDArray[np.int32]
# A row as row_snap() sees it.
RowSnap = tuple[Any, ...]
T = TypeVar("T")

CTL_PATH = "/dev/kvpool-control"
TOPDIR = os.path.abspath(os.path.join(os.path.dirname(__file__),
                                      "..", "..", ".."))
HERE = os.path.dirname(os.path.abspath(__file__))
CHILD = os.path.join(HERE, "kvpt_child.py")


def pool_path(pool_id: int) -> str:
    return "/dev/kvpool%d" % pool_id


def H(*handles: int) -> Handles:
    """A handle array, numpy uint64."""
    return np.array(handles, dtype=np.uint64)


def L(*lens: int) -> Lens:
    """A length array, numpy int32."""
    return np.array(lens, dtype=np.int32)


def AQ(*handles: int) -> "array.array[int]":
    """A handle array, array.array('Q')."""
    return array.array("Q", handles)


def free_identity(st: kvpool.Stats, info: kvpool.Info) -> str | None:
    """The accounting identities of struct kvpool_stats: None or what fails."""
    pages = (st.free_pages + st.row_pages + st.slot_pages
             + st.cache_evictable + st.cache_pinned + st.reserved_pages
             + st.export_pages + st.quarantine_pages)
    rows = (st.free_rows + st.held_rows + st.slot_rows + st.reserved_rows
            + st.export_rows)
    if pages != info.nr_pages:
        return "pages add up to %d, not %d" % (pages, info.nr_pages)
    if rows != info.nr_rows:
        return "rows add up to %d, not %d" % (rows, info.nr_rows)
    return None


def wait_for(cond: Callable[[], T], timeout: float = 10.0,
             step: float = 0.02) -> T:
    """Poll cond() until it is true or timeout seconds pass; its last value."""
    end = time.monotonic() + timeout
    while True:
        v = cond()
        if v or time.monotonic() > end:
            return v
        time.sleep(step)
        step = min(step * 2, 0.2)


ROW_FIELDS = ("state", "nr_pages", "req_pool_idx", "allocated_len",
              "committed_len", "protected_len", "swa_evicted_len")


def pages_of(q: kvpool.RowInfo) -> list[int]:
    """The page list of a RowInfo asked for without a pages buffer."""
    assert q.pages is not None
    return [int(x) for x in q.pages]


def row_snap(p: kvpool.Pool, h: Any) -> RowSnap:
    q = p.row_query(int(h))
    return tuple(getattr(q, f) for f in ROW_FIELDS) + (tuple(pages_of(q)),)


def wait_in_poll(tid: int, timeout: float = 10.0) -> bool:
    """Wait until thread `tid` of this process sleeps in poll(2) or
    ppoll(2) (x86-64 numbers 7 and 271), as /proc shows it."""
    path = "/proc/self/task/%d/syscall" % tid

    def inside() -> bool:
        with open(path) as f:
            return f.read().split()[0] in ("7", "271")
    return wait_for(inside, timeout, 0.01)


def snap(p: kvpool.Pool, handles: Iterable[Any] = ()
         ) -> tuple[tuple[int, ...], list[RowSnap]]:
    """What "nothing changed" compares: stats and each row's record."""
    return tuple(p.stats()), [row_snap(p, h) for h in handles]


class Child:
    """kvpt_child.py MODE ARGS in the venv's python."""

    def __init__(self, *args: object, pass_fds: Sequence[int] = ()) -> None:
        self.p = subprocess.Popen(
            [sys.executable, CHILD] + [str(a) for a in args],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            pass_fds=pass_fds)
        self.buf = b""

    def read(self, timeout: float = 120) -> Any:
        """The child's next JSON line; fails if it dies or says nothing."""
        assert self.p.stdout is not None  # made with stdout=PIPE
        fd = self.p.stdout.fileno()
        end = time.monotonic() + timeout
        while b"\n" not in self.buf:
            left = end - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise AssertionError("child said nothing in %ds" % timeout)
            chunk = os.read(fd, 4096)
            if not chunk:
                raise AssertionError("child exited %s before a report"
                                     % self.p.wait())
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def kill(self) -> int:
        self.p.send_signal(signal.SIGKILL)
        return self.p.wait(60)

    def finish(self) -> int:
        if self.p.poll() is None:
            assert self.p.stdin is not None  # made with stdin=PIPE
            self.p.stdin.close()
        return self.p.wait(60)

    def cleanup(self) -> None:
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()


# ---- pools the tests make ------------------------------------------------


class Pools:
    """Pools a test creates, and the clients it opens on them.

    The teardown checks each pool as the C selftests' kt_pool_fini() does:
    VERIFY while clients are still open, then every client closed, a fresh
    client must see the whole pool free (after the quarantine, if any, has
    drained), VERIFY again, and destroy.
    """

    def __init__(self) -> None:
        self.ids: list[int] = []
        self.clients: list[kvpool.Pool] = []
        self.arenas: list[kvpool.Arena] = []

    def create(self, nr_pages: int = 64, page_tokens: int = 4,
               nr_rows: int = 16, row_tokens: int = 256,
               reserve_zero: bool = True, arena_page_bytes: int | None = None,
               **kw: Any) -> int:
        pid = kvpool.pool_create(nr_pages, page_tokens, nr_rows, row_tokens,
                                 reserve_zero=reserve_zero, **kw)
        self.ids.append(pid)
        if arena_page_bytes:
            kvpool.arena_create_host(pid, arena_page_bytes, 1)
        return pid

    def open(self, pool_id: int) -> kvpool.Pool:
        p = kvpool.Pool(pool_path(pool_id))
        self.clients.append(p)
        return p

    def new(self, **kw: Any) -> kvpool.Pool:
        """A new pool and one client of it."""
        return self.open(self.create(**kw))

    def map(self, p: kvpool.Pool) -> kvpool.Arena:
        a = p.map_arena()
        self.arenas.append(a)
        return a

    def finish(self) -> list[str]:
        problems = []
        for pid in self.ids:
            try:
                with kvpool.Pool(pool_path(pid)) as p:
                    v = p.verify()
                    if v.violations:
                        problems.append("pool %d: %d violations"
                                        % (pid, v.violations))
            except Exception as e:  # noqa: BLE001 - report them all
                problems.append("pool %d: verify: %r" % (pid, e))
        for a in self.arenas:
            try:
                a.close()
            except Exception as e:  # noqa: BLE001
                problems.append("arena close: %r" % e)
        for p in self.clients:
            p.close()
        for pid in self.ids:
            try:
                with kvpool.Pool(pool_path(pid)) as p:
                    info = p.info
                    want = info.nr_pages - (1 if info.create_flags & 1
                                            else 0)

                    def back(p: kvpool.Pool = p, want: int = want) -> bool:
                        s = p.stats()
                        return s.free_pages == want and s.nr_clients == 1

                    if not wait_for(back, 10.0):
                        s = p.stats()
                        problems.append(
                            "pool %d not whole at the end: %d free of %d, "
                            "%d in quarantine, %d clients"
                            % (pid, s.free_pages, want, s.quarantine_pages,
                               s.nr_clients))
                    bad = free_identity(p.stats(), info)
                    if bad:
                        problems.append("pool %d: %s" % (pid, bad))
                    if p.verify().violations:
                        problems.append("pool %d: violations at the end"
                                        % pid)
            except Exception as e:  # noqa: BLE001
                problems.append("pool %d: final check: %r" % (pid, e))
            try:
                kvpool.pool_destroy(pid)
            except Exception as e:  # noqa: BLE001
                problems.append("pool %d: destroy: %r" % (pid, e))
        return problems
