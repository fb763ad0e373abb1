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
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import kvpool
from kvpt import CTL_PATH, Child, Pools

# engine/ is the SGLang comparison (tools/engine-tests.sh runs it in its
# own venv with SGLang): not a part of this suite, whatever its files are
# named.
collect_ignore = ["engine"]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "device: needs kvpool.ko loaded (runs in the test VM)")
    mode = os.environ.get("KVPOOL_REPORT")
    if mode:
        config.pluginmanager.register(Reporter(mode), "kvpool-reporter")


class Reporter:
    """One result line per test, a whole-run count at the end."""

    def __init__(self, mode: str) -> None:
        if mode not in ("tap", "lines"):
            raise pytest.UsageError("KVPOOL_REPORT must be tap or lines")
        self.mode = mode
        self.fd = int(os.environ.get("KVPOOL_REPORT_FD", "1"))
        self.n = 0
        self.counts = dict(pass_=0, fail=0, skip=0, xfail=0, error=0)
        self.state: dict[str, list[str]] = {}

    def out(self, line: str) -> None:
        os.write(self.fd, (line + "\n").encode())

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        if self.mode == "tap":
            self.out("TAP version 13")

    def emit(self, name: str, outcome: str, why: str = "") -> None:
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

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self.emit("collect:" + (report.nodeid or "session"), "error",
                      str(report.longrepr).splitlines()[-1]
                      if report.longrepr else "")

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
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

    def pytest_runtest_logfinish(self, nodeid: str,
                                 location: tuple[str, int | None, str]
                                 ) -> None:
        outcome, why = self.state.pop(nodeid, ["passed", ""])
        name = nodeid.split("/")[-1].replace(".py::", ".").replace("::", ".")
        self.emit(name, outcome, why)

    def pytest_sessionfinish(self, session: pytest.Session,
                             exitstatus: int | pytest.ExitCode) -> None:
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


@pytest.fixture
def pools() -> Iterator[Pools]:
    if not os.path.exists(CTL_PATH):
        pytest.fail("%s is missing: is kvpool.ko loaded?" % CTL_PATH)
    ps = Pools()
    yield ps
    problems = ps.finish()
    assert not problems, "; ".join(problems)


@pytest.fixture
def pool(pools: Pools) -> kvpool.Pool:
    """A client of a fresh 64-page pool: 4 tokens a page, 16 rows of up
    to 256 tokens, page 0 and row 0 reserved."""
    return pools.new()


@pytest.fixture
def children() -> Iterator[Callable[..., Child]]:
    """Start kvpt_child.py processes; any left running are killed."""
    kids: list[Child] = []

    def start(*args: Any, **kw: Any) -> Child:
        c = Child(*args, **kw)
        kids.append(c)
        return c
    yield start
    for c in kids:
        c.cleanup()
