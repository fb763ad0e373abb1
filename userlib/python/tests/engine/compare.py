# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
"""SGLang 0.5.23 against kvpool.sglang, on scenario.py's calls.

  compare.py sglang OUT.json    run the scenario through SGLang (engine venv)
  compare.py kvpool DIR         run it through kvpool.sglang on new pools
                                (root, module loaded: the VM), page size 1
                                into DIR/kvpool.json, and 4 into
                                DIR/kvpool-ps4.json
  compare.py check A.json B.json [SELF.json...]
                                one PASS/FAIL line a step, then
                                "N passed, N failed"; exit 1 on a failure

What a step must show on both sides: the same requests holding rows,
each row's req_to_token the same up to one renaming of token indices
(a bijection kept from step to step while an index stays live), the same
prefix-cache entries under that renaming, the same free token and row
counts, and the same error. On kvpool's side also: the kernel's page
list of every held row is what req_to_token says, the kernel's cache
holds as many pages as the tree, and verify() finds nothing.

SGLang's paged allocator needs a GPU (its allocation kernels are
Triton's), so at page size 4 only kvpool's side runs: each SELF.json's
steps are held to the kvpool-side checks alone (page lists, cache
against tree, verify, and the same errors as at page size 1).

One difference is expected and checked as such: when an extend batch
fails for tokens, SGLang has already bound rows to the batch's new
requests and keeps them (its error is fatal for the scheduler), while
kvpool.sglang gives them back; from that step on SGLang's free rows are
kvpool's less the rows of that batch.
"""

import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import scenario  # noqa: E402

# The steps after which SGLang keeps rows kvpool gave back: name -> rows.
LEAKED_ROWS = {"admit G (no tokens)": 1}


def run_sglang(out):
    t = time.monotonic()
    steps = scenario.run(scenario.sglang_side())
    json.dump(steps, open(out, "w"))
    print("sglang: %d steps in %.1f s" % (len(steps), time.monotonic() - t))


def run_kvpool(out_dir):
    import kvpool

    for ps, name in ((1, "kvpool.json"), (4, "kvpool-ps4.json")):
        t = time.monotonic()
        pid = kvpool.pool_create(scenario.TOKENS // ps + 1, ps,
                                 scenario.ROWS + 1, scenario.CTX,
                                 reserve_zero=True)
        try:
            with kvpool.Pool("/dev/kvpool%d" % pid) as p:
                steps = scenario.run(scenario.kvpool_side(p))
        finally:
            kvpool.pool_destroy(pid)
        json.dump(steps, open(os.path.join(out_dir, name), "w"))
        print("kvpool: page size %d, %d steps in %.1f s"
              % (ps, len(steps), time.monotonic() - t))


class Renaming:
    """token index on SGLang's side <-> on kvpool's, one to one."""

    def __init__(self):
        self.fwd = {}
        self.back = {}

    def keep_only(self, live_a):
        for a in [a for a in self.fwd if a not in live_a]:
            del self.back[self.fwd.pop(a)]

    def pair(self, xs, ys):
        if len(xs) != len(ys):
            return "lengths %d != %d" % (len(xs), len(ys))
        for a, b in zip(xs, ys):
            if self.fwd.setdefault(a, b) != b:
                return "index %d is %d, was %d" % (a, b, self.fwd[a])
            if self.back.setdefault(b, a) != a:
                return "index %d has two names %d, %d" % (b, a, self.back[b])
        return None


def check_step(ren, a, b, leaked):
    errs = []
    if a["step"] != b["step"]:
        return ["step %r against %r" % (a["step"], b["step"])]
    if a["error"] != b["error"]:
        errs.append("error %s != %s" % (a["error"], b["error"]))
    if a["free_tokens"] != b["free_tokens"]:
        errs.append("free tokens %d != %d" % (a["free_tokens"],
                                               b["free_tokens"]))
    if a["free_rows"] + leaked != b["free_rows"]:
        errs.append("free rows %d (+%d) != %d" % (a["free_rows"], leaked,
                                                  b["free_rows"]))
    if sorted(a["rows"]) != sorted(b["rows"]):
        errs.append("rows %s != %s" % (sorted(a["rows"]), sorted(b["rows"])))
    live = set()
    for k in a["rows"]:
        live.update(a["rows"][k])
    for t in a["tree"]:
        live.update(t)
    ren.keep_only(live)
    for k in sorted(set(a["rows"]) & set(b["rows"])):
        e = ren.pair(a["rows"][k], b["rows"][k])
        if e:
            errs.append("row %s: %s" % (k, e))
    if len(a["tree"]) != len(b["tree"]):
        errs.append("tree entries %d != %d" % (len(a["tree"]),
                                               len(b["tree"])))
    for i, (x, y) in enumerate(zip(a["tree"], b["tree"])):
        e = ren.pair(x, y)
        if e:
            errs.append("tree entry %d: %s" % (i, e))
    return errs + kernel_checks(b)


def kernel_checks(b):
    errs = []
    ps = b.get("page_size", 1)
    tree_pages = len({x // ps for t in b["tree"] for x in t})
    if b["cache_pages"] != tree_pages:
        errs.append("kernel cache %s pages, tree %d" % (b["cache_pages"],
                                                         tree_pages))
    if b["violations"] != 0:
        errs.append("verify: %s violations" % b["violations"])
    if b["kernel_rows_match"] is not True:
        errs.append("req_to_token is not the kernel's page list")
    return errs


def report(name, y, errs):
    """One PASS/FAIL line for a step; whether it passed."""
    what = "%s: tokens %d rows %d%s" % (
        name, y["free_tokens"], y["free_rows"],
        ", " + y["error"] if y["error"] else "")
    if errs:
        print("FAIL %s: %s" % (what, "; ".join(errs)))
        return False
    print("PASS %s" % what)
    return True


def check(fa, fb, selfs=()):
    a = json.load(open(fa))
    b = json.load(open(fb))
    ren = Renaming()
    passed = failed = 0
    for f in selfs:
        p, q = check_self(a, json.load(open(f)), f)
        passed += p
        failed += q
    leaked = 0
    if len(a) != len(b):
        print("FAIL steps: %d != %d" % (len(a), len(b)))
        failed += 1
    for x, y in zip(a, b):
        leaked += LEAKED_ROWS.get(x["step"], 0)
        errs = check_step(ren, x, y, leaked)
        ok = report(y["step"], y, errs)
        passed += ok
        failed += not ok
    # The renaming is a real one: the scenario must have exercised it.
    if not ren.fwd and not failed:
        print("FAIL nothing was compared")
        failed += 1
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


def check_self(a, c, name):
    """kvpool alone at another page size: its own checks, and the errors
    of the page-size-1 run (a: SGLang's)."""
    passed = failed = 0
    if len(a) != len(c):
        print("FAIL %s: %d steps, not %d" % (name, len(c), len(a)))
        return 0, 1
    for x, y in zip(a, c):
        errs = kernel_checks(y)
        if x["error"] != y["error"]:
            errs.append("error %s != %s" % (y["error"], x["error"]))
        if sorted(x["rows"]) != sorted(y["rows"]):
            errs.append("rows %s" % sorted(y["rows"]))
        ok = report("page size %d, %s" % (y["page_size"], y["step"]), y,
                    errs)
        passed += ok
        failed += not ok
    return passed, failed


def main(argv):
    if len(argv) == 3 and argv[1] == "sglang":
        run_sglang(argv[2])
        return 0
    if len(argv) == 3 and argv[1] == "kvpool":
        run_kvpool(argv[2])
        return 0
    if len(argv) >= 4 and argv[1] == "check":
        return check(argv[2], argv[3], argv[4:])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
