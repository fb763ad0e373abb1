# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
"""vLLM 0.33's own BlockPool against kvpool.vllm's, on vllm_scenario.py.

  vllm_compare.py vllm OUT.json   the scenario on vLLM's BlockPool
  vllm_compare.py kvpool DIR [R]  on a new pool (root, module loaded:
                                  the VM) through kvpool.vllm into
                                  DIR/kvpool.json, vLLM's own again into
                                  DIR/vllm-guest.json; with R > 0, both
                                  timed R times each, interleaved, and
                                  the step times printed with their ratio
  vllm_compare.py check A.json B.json [A2.json]
                                  one PASS/FAIL line a step, then
                                  "N passed, N failed"; exit 1 on a failure
                                  (A2: vLLM's run elsewhere, must equal A)
  vllm_compare.py selftest A.json the checker against A with mismatches
                                  put in: each must fail, A itself pass

What a step must show on both sides: the same running requests, each
block table the same up to one renaming of block ids (a bijection kept
from step to step while a block stays in a table), the same free block
count and usage, the same prefix-hit length for each admission, the
same requests preempted and finished. On kvpool's side also: every
block vLLM holds or caches is a page the kernel has this client hold
(a row's, or in its cache), and no other; vLLM's free queue is as long
as the kernel's free pages and evictable cache; verify() finds nothing.
"""

import copy
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "..", "tools",
                                "engine-bench"))

import vllm_scenario as sc  # noqa: E402


def _v():
    import vllm_cpu
    v = vllm_cpu.load()
    v.kv_cache_utils.init_none_hash(v.get_hash_fn_by_name("sha256"))
    return v


def manager(v):
    spec = v.FullAttentionSpec(block_size=sc.BLOCK, num_kv_heads=2,
                               head_size=16, dtype=v.torch.float16)
    cfg = v.KVCacheConfig(
        num_blocks=sc.BLOCKS, kv_cache_tensors=[],
        kv_cache_groups=[v.KVCacheGroupSpec(["layers.0.attn"], spec)])
    return v.KVCacheManager(cfg, max_model_len=256,
                            scheduler_block_size=sc.BLOCK,
                            hash_block_size=sc.BLOCK, enable_caching=True)


def kernel_checks(m, free_is_queue=True):
    bp = m.block_pool
    errs = []
    held = {}
    for b in bp.blocks[1:]:
        hashed = (b.block_hash is not None
                  or b.block_id in bp.cached_block_hashes_by_block)
        if b.ref_cnt > 0 or hashed:
            held[b.block_id] = hashed
    kp = bp.kernel_pages()
    if set(kp) != set(held):
        errs.append("kernel holds %s, vLLM %s"
                    % (sorted(set(kp) - set(held)),
                       sorted(set(held) - set(kp))))
    for i, hashed in held.items():
        if hashed and not kp.get(i, False):
            errs.append("cached block %d is not in the kernel cache" % i)
    for i in sorted(set(bp._row)):
        q = bp.pool.row_query(bp._row[i])
        if q.pages is None or list(q.pages) != [i]:
            errs.append("block %d's row has pages %s" % (i, q.pages))
    if free_is_queue and (bp.free_block_queue.num_free_blocks
                          != bp.get_num_free_blocks()):
        errs.append("vLLM's queue %d, kernel free %d"
                    % (bp.free_block_queue.num_free_blocks,
                       bp.get_num_free_blocks()))
    vr = bp.pool.verify().violations
    if vr:
        errs.append("verify: %d violations" % vr)
    return errs


def run_vllm(out):
    v = _v()
    t = time.monotonic()
    recs = sc.run(v, manager(v))
    json.dump(recs, open(out, "w"))
    print("vllm %s: %d steps in %.1f s" % (v.version, len(recs),
                                          time.monotonic() - t))


def _kvpool_run(v, kernel):
    import kvpool
    from kvpool import vllm as kv

    pid = kvpool.pool_create(sc.BLOCKS, sc.BLOCK, sc.BLOCKS, sc.BLOCK,
                             reserve_zero=True)
    try:
        with kvpool.Pool("/dev/kvpool%d" % pid) as p:
            m = manager(v)
            kv.install(m, p)
            t0 = time.perf_counter_ns()
            recs = sc.run(v, m, kernel_checks if kernel else None)
            t = time.perf_counter_ns() - t0
            for r in list(m.coordinator.single_type_managers[0]
                          .req_to_blocks):
                m.coordinator.free(r)
            del m
    finally:
        kvpool.pool_destroy(pid)
    return recs, t


def shortfall_check(v):
    """A pool shared with another client that takes pages between the
    free count allocate_slots read and get_new_blocks: allocate_slots
    must return None and leave the request, vLLM's counts and the
    kernel as they were. The race is made deterministic by handing the
    manager the free count from before the other client's take."""
    import numpy as np

    import kvpool
    from kvpool import vllm as kv

    errs = []
    hasher = v.kv_cache_utils.get_request_block_hasher(
        sc.BLOCK, v.get_hash_fn_by_name("sha256"))
    sp = v.SamplingParams(max_tokens=8)
    pid = kvpool.pool_create(sc.BLOCKS, sc.BLOCK, sc.BLOCKS, sc.BLOCK,
                             reserve_zero=True)
    try:
        with kvpool.Pool("/dev/kvpool%d" % pid) as p, \
                kvpool.Pool("/dev/kvpool%d" % pid) as other:
            m = manager(v)
            bp = kv.install(m, p)
            x = v.Request("x", sc.PREFIX + [90, 91, 92], sp, None,
                          block_hasher=hasher)
            if m.allocate_slots(x, x.num_tokens) is None:
                errs.append("x was refused")
            x.num_computed_tokens = x.num_tokens
            m.free(x)                     # its two full blocks stay cached
            free0 = bp.get_num_free_blocks()
            y = v.Request("y", sc.PREFIX + list(range(50, 62)), sp, None,
                          block_hasher=hasher)
            blocks, hit, _ = m.get_computed_blocks(y)
            take = int(p.stats().free_pages) - 1
            hs = other.alloc_rows(take)
            other.extend(hs, np.full(take, sc.BLOCK, dtype=np.int32))
            bp.get_num_free_blocks = lambda: free0    # the stale count
            got = m.allocate_slots(y, y.num_tokens - hit, hit, blocks)
            del bp.get_num_free_blocks
            if got is not None:
                errs.append("allocate_slots did not return None")
            if m.get_block_ids("y")[0]:
                errs.append("y kept blocks %s" % m.get_block_ids("y")[0])
            if hit == 0:
                errs.append("y had no prefix hit to undo")
            if bp.get_num_free_blocks() != free0 - take:
                errs.append("free %d, not %d" % (bp.get_num_free_blocks(),
                                                 free0 - take))
            errs += kernel_checks(m, free_is_queue=False)
            other.release(hs)
            got = m.allocate_slots(y, y.num_tokens - hit, hit, blocks)
            if got is None:
                errs.append("y was refused once the pages were back")
            errs += kernel_checks(m)
            m.free(y)
            # Reset with nothing in use here but pages held by the
            # other client: vLLM's check is of this pool's blocks.
            hs = other.alloc_rows(2)
            other.extend(hs, np.full(2, sc.BLOCK, dtype=np.int32))
            if not m.reset_prefix_cache():
                errs.append("reset_prefix_cache refused")
            if bp.kernel_pages():
                errs.append("the kernel still holds %s after the reset"
                            % sorted(bp.kernel_pages()))
            errs += kernel_checks(m, free_is_queue=False)
    finally:
        kvpool.pool_destroy(pid)
    return errs


def run_kvpool(out_dir, reps):
    v = _v()
    t = time.monotonic()
    recs, _ = _kvpool_run(v, True)
    json.dump(recs, open(os.path.join(out_dir, "kvpool.json"), "w"))
    json.dump(shortfall_check(v),
              open(os.path.join(out_dir, "shortfall.json"), "w"))
    json.dump(sc.run(v, manager(v)),
              open(os.path.join(out_dir, "vllm-guest.json"), "w"))
    print("kvpool.vllm: %d steps in %.1f s" % (len(recs),
                                               time.monotonic() - t))
    if reps <= 0:
        return
    tv, tk = [], []
    for _ in range(reps):
        m = manager(v)
        t0 = time.perf_counter_ns()
        sc.run(v, m)
        tv.append(time.perf_counter_ns() - t0)
        tk.append(_kvpool_run(v, False)[1])
    n = len(recs)
    a = statistics.median(tv) / n / 1e3
    b = statistics.median(tk) / n / 1e3
    res = {"steps": n, "reps": reps, "vllm_us_per_step": a,
           "kvpool_us_per_step": b, "ratio": b / a}
    json.dump(res, open(os.path.join(out_dir, "steps-time.json"), "w"))
    print("step time (scheduler side, median of %d runs of %d steps): "
          "vLLM BlockPool %.0f us, kvpool.vllm %.0f us, ratio %.2f"
          % (reps, n, a, b, b / a))


class Renaming:
    """block id on vLLM's side <-> on kvpool's, one to one."""

    def __init__(self):
        self.fwd = {}
        self.back = {}
        self.paired = 0             # blocks compared, over the run

    def keep_only(self, live):
        for a in [a for a in self.fwd if a not in live]:
            b = self.fwd.pop(a)
            # A failed pair() can leave back[b] naming another block.
            if self.back.get(b) == a:
                del self.back[b]

    def pair(self, xs, ys):
        if len(xs) != len(ys):
            return "lengths %d != %d" % (len(xs), len(ys))
        for a, b in zip(xs, ys):
            self.paired += 1
            if self.fwd.setdefault(a, b) != b:
                return "block %d is %d, was %d" % (a, b, self.fwd[a])
            if self.back.setdefault(b, a) != a:
                return "block %d has two names %d, %d" % (b, a,
                                                           self.back[b])
        return None


FIELDS = ("hits", "preempted", "finished", "free", "usage")


def check_step(ren, a, b, prev):
    if a["step"] != b["step"]:
        return ["step %r against %r" % (a["step"], b["step"])]
    errs = ["%s %s != %s" % (f, a[f], b[f]) for f in FIELDS if a[f] != b[f]]
    ta, tb = a["tables"], b["tables"]
    if sorted(ta) != sorted(tb):
        errs.append("running %s != %s" % (sorted(ta), sorted(tb)))
    # A block keeps its name while a request holds it throughout: one
    # held at the last step by a request that is still running. Any
    # other block may have been freed (and, uncached, reused under
    # another name) in between.
    if prev is not None:
        ren.keep_only({x for k, t in prev["tables"].items()
                       if k in ta and k not in prev["finished"] for x in t})
    for k in sorted(set(ta) & set(tb)):
        e = ren.pair(ta[k], tb[k])
        if e:
            errs.append("request %s: %s" % (k, e))
    if "kernel" not in b:
        errs.append("no kernel checks")
    else:
        errs += b["kernel"]
    return errs


def check_records(a, b):
    """(passed, failed, lines)."""
    ren = Renaming()
    lines = []
    passed = failed = 0
    if len(a) != len(b):
        lines.append("FAIL steps: %d != %d" % (len(a), len(b)))
        failed += 1
    for i, (x, y) in enumerate(zip(a, b)):
        errs = check_step(ren, x, y, a[i - 1] if i else None)
        what = "vllm step %d: free %d, running %d%s%s" % (
            y["step"], y["free"], len(y["tables"]),
            ", hits %s" % y["hits"] if y["hits"] else "",
            ", preempted %s" % y["preempted"] if y["preempted"] else "")
        if errs:
            lines.append("FAIL %s: %s" % (what, "; ".join(errs)))
            failed += 1
        else:
            lines.append("PASS %s" % what)
            passed += 1
    # The scenario must have exercised what it is for.
    need = {"a prefix hit": any(any(h > 0 for h in x["hits"].values())
                                for x in a),
            "a preemption": any(x["preempted"] for x in a),
            "a renaming": ren.paired > 0}
    after = [x for x in a if x["step"] >= 22]
    need["a shorter hit after eviction"] = any(
        0 < h < len(sc.PREFIX) + 6 for x in after for h in x["hits"].values())
    for what, ok in need.items():
        if not ok:
            lines.append("FAIL the scenario has no %s" % what)
            failed += 1
    return passed, failed, lines


def check(fa, fb, fa2=None):
    a = json.load(open(fa))
    b = json.load(open(fb))
    passed, failed, lines = check_records(a, b)
    short = os.path.join(os.path.dirname(fb), "shortfall.json")
    if os.path.exists(short):
        errs = json.load(open(short))
        lines.append("%s a shortfall after the free count: allocate_slots "
                     "returns None, nothing kept%s"
                     % ("FAIL" if errs else "PASS",
                        ": " + "; ".join(errs) if errs else ""))
        passed += not errs
        failed += bool(errs)
    if fa2 is not None:
        ok = json.load(open(fa2)) == a
        lines.append("%s vLLM's run in the guest is the host's"
                     % ("PASS" if ok else "FAIL"))
        passed += ok
        failed += not ok
    print("\n".join(lines))
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


def _mutations(a):
    """(what, records): a with one mismatch put in."""
    # A step with two requests whose first blocks differ (no shared
    # prefix), so that giving one the other's block is a mismatch.
    x, k1, k2 = next((y["step"], p, q) for y in a
                     for p in sorted(y["tables"]) for q in sorted(y["tables"])
                     if p < q and y["tables"][p][0] != y["tables"][q][0])

    def m(what, f):
        b = copy.deepcopy(a)
        f(b)
        return what, b

    yield m("a block in two requests", lambda b: b[x]["tables"][k2]
            .__setitem__(0, b[x]["tables"][k1][0]))
    yield m("a block renamed mid-run", lambda b: [
        t.__setitem__(0, 999) for t in [b[x]["tables"][k1]]])
    yield m("a free count", lambda b: b[x].__setitem__("free",
                                                       b[x]["free"] + 1))
    hx = next(y["step"] for y in a if y["hits"])
    hk = next(iter(a[hx]["hits"]))
    yield m("a prefix-hit length", lambda b: b[hx]["hits"].__setitem__(
        hk, b[hx]["hits"][hk] + sc.BLOCK))
    px = next(y["step"] for y in a if y["preempted"])
    yield m("a preempted request", lambda b: b[px].__setitem__(
        "preempted", []))
    yield m("a missing request", lambda b: b[x]["tables"].pop(k2))
    yield m("a kernel check", lambda b: b[x].__setitem__(
        "kernel", ["kernel holds [3], vLLM []"]))


def selftest(fa):
    a = json.load(open(fa))
    for y in a:
        y["kernel"] = []
    passed = failed = 0

    def report(ok, what):
        nonlocal passed, failed
        print("%s checker: %s" % ("PASS" if ok else "FAIL", what))
        passed += ok
        failed += not ok

    p, f, _ = check_records(a, copy.deepcopy(a))
    report(f == 0 and p == len(a), "vLLM's run against itself passes")
    for what, b in _mutations(a):
        _, f, _ = check_records(a, b)
        report(f > 0, "%s is caught" % what)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


def main(argv):
    if len(argv) == 3 and argv[1] == "vllm":
        run_vllm(argv[2])
        return 0
    if len(argv) in (3, 4) and argv[1] == "kvpool":
        run_kvpool(argv[2], int(argv[3]) if len(argv) == 4 else 0)
        return 0
    if len(argv) in (4, 5) and argv[1] == "check":
        return check(*argv[2:])
    if len(argv) == 3 and argv[1] == "selftest":
        return selftest(argv[2])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
