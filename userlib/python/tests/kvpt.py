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

import numpy as np

CTL_PATH = "/dev/kvpool-control"
TOPDIR = os.path.abspath(os.path.join(os.path.dirname(__file__),
                                      "..", "..", ".."))
HERE = os.path.dirname(os.path.abspath(__file__))
CHILD = os.path.join(HERE, "kvpt_child.py")


def pool_path(pool_id):
    return "/dev/kvpool%d" % pool_id


def H(*handles):
    """A handle array, numpy uint64."""
    return np.array(handles, dtype=np.uint64)


def L(*lens):
    """A length array, numpy int32."""
    return np.array(lens, dtype=np.int32)


def AQ(*handles):
    """A handle array, array.array('Q')."""
    return array.array("Q", handles)


def free_identity(st, info):
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


def wait_for(cond, timeout=10.0, step=0.02):
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


def row_snap(p, h):
    q = p.row_query(int(h))
    return tuple(getattr(q, f) for f in ROW_FIELDS) + (tuple(q.pages),)


def wait_in_poll(tid, timeout=10.0):
    """Wait until thread `tid` of this process sleeps in poll(2) or
    ppoll(2) (x86-64 numbers 7 and 271), as /proc shows it."""
    path = "/proc/self/task/%d/syscall" % tid

    def inside():
        with open(path) as f:
            return f.read().split()[0] in ("7", "271")
    return wait_for(inside, timeout, 0.01)


def snap(p, handles=()):
    """What "nothing changed" compares: stats and each row's record."""
    return tuple(p.stats()), [row_snap(p, h) for h in handles]


class Child:
    """kvpt_child.py MODE ARGS in the venv's python."""

    def __init__(self, *args, pass_fds=()):
        self.p = subprocess.Popen(
            [sys.executable, CHILD] + [str(a) for a in args],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            pass_fds=pass_fds)
        self.buf = b""

    def read(self, timeout=120):
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

    def kill(self):
        self.p.send_signal(signal.SIGKILL)
        return self.p.wait(60)

    def finish(self):
        if self.p.poll() is None:
            assert self.p.stdin is not None  # made with stdin=PIPE
            self.p.stdin.close()
        return self.p.wait(60)

    def cleanup(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()
