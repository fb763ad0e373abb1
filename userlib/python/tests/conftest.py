# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
"""Fixtures and the result reporter of the kvpool binding's tests.

Tests that need the module are marked ``device`` (``pytestmark`` in their
files): ``make check`` on the build host deselects them with
``-m "not device"``; the VM's launcher (selftests/kernel/python_test)
runs everything, so a missing /dev/kvpool0 fails there instead of
skipping.

The reporter: with KVPOOL_REPORT=tap or lines and KVPOOL_REPORT_FD=N,
one line per test goes to file descriptor N, which pytest does not
capture (its own output may be going anywhere), and the file
KVPOOL_REPORT_STAMP, if set, is made once the counts are out:
- tap: kselftest's "ok N name" / "not ok N name" and a "# Totals:"
  line, what tools/vm/guest-tests.sh counts;
- lines: "PASS name" / "FAIL name" and "N passed, N failed, N skipped",
  what tools/check.sh's run_checks counts.
"""

import os

import pytest

import kvpool
from kvpt import CTL_PATH, Child, free_identity, pool_path, wait_for

# engine/ is the SGLang comparison (tools/engine-tests.sh runs it in its
# own venv with SGLang): not a part of this suite, whatever its files are
# named.
collect_ignore = ["engine"]


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "device: needs kvpool.ko loaded (runs in the test VM)")
    mode = os.environ.get("KVPOOL_REPORT")
    if mode:
        config.pluginmanager.register(Reporter(mode), "kvpool-reporter")


class Reporter:
    """One result line per test, a whole-run count at the end."""

    def __init__(self, mode):
        if mode not in ("tap", "lines"):
            raise pytest.UsageError("KVPOOL_REPORT must be tap or lines")
        self.mode = mode
        self.fd = int(os.environ.get("KVPOOL_REPORT_FD", "1"))
        self.n = 0
        self.counts = dict(pass_=0, fail=0, skip=0, xfail=0, error=0)
        self.state = {}

    def out(self, line):
        os.write(self.fd, (line + "\n").encode())

    def pytest_sessionstart(self, session):
        if self.mode == "tap":
            self.out("TAP version 13")

    def emit(self, name, outcome, why=""):
        self.n += 1
        key = {"passed": "pass_", "failed": "fail", "skipped": "skip",
               "xfail": "xfail", "error": "error"}[outcome]
        self.counts[key] += 1
        why = " ".join(why.split())[:200]
        if self.mode == "tap":
            ok = "not ok" if outcome in ("failed", "error") else "ok"
            tail = ""
            if outcome == "skipped":
                tail = " # SKIP " + why
            elif outcome == "xfail":
                tail = " # XFAIL " + why
            self.out("%s %d %s%s" % (ok, self.n, name, tail))
            if outcome in ("failed", "error") and why:
                self.out("# %s: %s" % (name, why))
        else:
            word = {"passed": "PASS", "failed": "FAIL", "error": "FAIL",
                    "skipped": "SKIP", "xfail": "XFAIL"}[outcome]
            self.out("%s python: %s%s" % (word, name,
                                          ": " + why if why else ""))

    def pytest_collectreport(self, report):
        if report.failed:
            self.emit("collect:" + (report.nodeid or "session"), "error",
                      str(report.longrepr).splitlines()[-1]
                      if report.longrepr else "")

    def pytest_runtest_logreport(self, report):
        st = self.state.setdefault(report.nodeid, ["passed", ""])
        if report.failed:
            if st[0] != "failed":
                msg = ""
                crash = getattr(report.longrepr, "reprcrash", None)
                if crash is not None:
                    msg = crash.message
                st[:] = ["failed", "%s: %s" % (report.when, msg)]
        elif report.skipped and st[0] == "passed":
            if hasattr(report, "wasxfail"):
                st[:] = ["xfail", report.wasxfail]
            else:
                reason = report.longrepr[2] if isinstance(
                    report.longrepr, tuple) else str(report.longrepr)
                st[:] = ["skipped", reason]
        elif report.when == "call" and hasattr(report, "wasxfail"):
            # An xfail test that passed: a strict failure.
            st[:] = ["failed", "XPASS " + report.wasxfail]

    def pytest_runtest_logfinish(self, nodeid, location):
        outcome, why = self.state.pop(nodeid, ["passed", ""])
        name = nodeid.split("/")[-1].replace(".py::", ".").replace("::", ".")
        self.emit(name, outcome, why)

    def pytest_sessionfinish(self, session, exitstatus):
        c = self.counts
        if self.n == 0 or exitstatus not in (0, 1):
            # Interrupted, a usage error, nothing collected: a failure.
            self.emit("session", "error", "pytest exit status %d"
                      % int(exitstatus))
        if self.mode == "tap":
            self.out("1..%d" % self.n)
            self.out("# Totals: pass:%d fail:%d xfail:%d xpass:0 skip:%d "
                     "error:%d" % (c["pass_"], c["fail"], c["xfail"],
                                   c["skip"], c["error"]))
        else:
            self.out("%d passed, %d failed, %d skipped"
                     % (c["pass_"] + c["xfail"], c["fail"] + c["error"],
                        c["skip"]))
        stamp = os.environ.get("KVPOOL_REPORT_STAMP")
        if stamp:
            open(stamp, "w").close()


# ---- pools the tests make ------------------------------------------------


class Pools:
    """Pools a test creates, and the clients it opens on them.

    The teardown checks each pool as the C selftests' kt_pool_fini() does:
    VERIFY while clients are still open, then every client closed, a fresh
    client must see the whole pool free (after the quarantine, if any, has
    drained), VERIFY again, and destroy.
    """

    def __init__(self):
        self.ids = []
        self.clients = []
        self.arenas = []

    def create(self, nr_pages=64, page_tokens=4, nr_rows=16, row_tokens=256,
               reserve_zero=True, arena_page_bytes=None, **kw):
        pid = kvpool.pool_create(nr_pages, page_tokens, nr_rows, row_tokens,
                                 reserve_zero=reserve_zero, **kw)
        self.ids.append(pid)
        if arena_page_bytes:
            kvpool.arena_create_host(pid, arena_page_bytes, 1)
        return pid

    def open(self, pool_id):
        p = kvpool.Pool(pool_path(pool_id))
        self.clients.append(p)
        return p

    def new(self, **kw):
        """A new pool and one client of it."""
        return self.open(self.create(**kw))

    def map(self, p):
        a = p.map_arena()
        self.arenas.append(a)
        return a

    def finish(self):
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

                    def back(p=p, want=want):
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


@pytest.fixture
def pools():
    if not os.path.exists(CTL_PATH):
        pytest.fail("%s is missing: is kvpool.ko loaded?" % CTL_PATH)
    ps = Pools()
    yield ps
    problems = ps.finish()
    assert not problems, "; ".join(problems)


@pytest.fixture
def pool(pools):
    """A client of a fresh 64-page pool: 4 tokens a page, 16 rows of up
    to 256 tokens, page 0 and row 0 reserved."""
    return pools.new()


@pytest.fixture
def children():
    """Start kvpt_child.py processes; any left running are killed."""
    kids = []

    def start(*args, **kw):
        c = Child(*args, **kw)
        kids.append(c)
        return c
    yield start
    for c in kids:
        c.cleanup()
