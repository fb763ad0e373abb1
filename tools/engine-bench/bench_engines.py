# SPDX-License-Identifier: GPL-2.0-only
"""SGLang's and vLLM's host-side page allocators beside kvpool's.

    python bench_engines.py [--quick] [--rounds R] [--steps S]
                            [--kvpool-json FILE] [--kvpool {auto,off}]
                            [--sides LIST] [--json FILE]

Run it with the engine-bench venv's python (tools/engine-bench.sh makes
the venv and runs this). One process times the same work on every side,
in rounds that interleave the sides (forward in even rounds, backward in
odd ones), so that the machine's noise hits all of them alike; a round
of each side runs untimed first. Figures are the median, min and max
over the rounds; nothing is asserted about them.

Workloads, named and parameterised as kvpool-bench's so that its
figures (--kvpool-json) line up:

  decode B=256 pt=1     one decode step of 256 requests that hold 256
                        tokens, one token each, averaged over --steps
                        steps (us/step)
      sglang            TokenToKVPoolAllocator.alloc(256)
      vllm, vllm-cache  KVCacheManager.allocate_slots(req, 1) for each
                        of the 256 running requests, block_size 1,
                        prefix caching off / on (on: vLLM's default)
      kvpool-py         Pool.extend + Pool.commit of the 256 rows
                        through the Python binding (as kvpool-bench's
                        decode step: EXTEND + COMMIT)
  decode B=256 pt=16    the same at 16 tokens a page
      sglang-paged      PagedTokenToKVPoolAllocator(page_size 16)
                        .alloc_decode(seq_lens, seq_lens_cpu, last_loc)
      vllm, vllm-cache  block_size 16
      kvpool-py         a pool of page_tokens 16
  release-256x128 B=256 pages=128 pt=1
                        free 256 requests of 128 pages each, grown a
                        token a step (so that their pages interleave as
                        decode's do; vLLM's in one allocate_slots each,
                        its free walks block objects in any order), one
                        round = all 256 (us)
      sglang            free() per request, 256 calls
      sglang-grouped    the same 256 free() calls inside
                        free_group_begin()/free_group_end()
      vllm, vllm-cache  KVCacheManager.free(req) per request
      kvpool-py         one Pool.release of the 256 rows
      kvpool-py-each    Pool.release per row, 256 calls
  release-256x128 B=256 pages=128 pt=16
      sglang-paged, sglang-paged-grouped, vllm(-cache) at block_size 16
      (128 pages of 16 tokens each; ratios against kvpool's pt=1
      figure, its release being per page, marked "pt=1 ref")

The untimed parts of a round: making the requests and their first
tokens, the scheduler's bookkeeping between steps (vLLM: the request's
num_computed_tokens and its new output token, whose block hash
Request.append_output_token_ids computes when caching is on; SGLang:
seq_lens and last_loc of the paged step, precomputed), and giving
everything back at the end. Python's GC stays on, as in a server;
gc.collect() runs between rounds. torch runs one intra-op thread
(--torch-threads): the scheduler's, as the other sides have one.

Sides from --kvpool-json (kvpool-bench's output, same machine, ideally
the same boot): floor (a C LIFO array of page ids), core (kvpool's
driver core linked into the process), kernel (libkvpool on a pool,
through the ioctls). Every engine figure gets its ratio to each of
those and to kvpool-py where they are present.

kvpool-py needs a pool: --kvpool auto makes one per workload through
kvpool.pool_create when the control device is there (root, module
loaded: the VM), and skips the side otherwise.

What runs is the engines' own code. Replaced at import level only:
vllm_cpu.REPLACED (one package __init__ of vLLM; see vllm_cpu.py).
SGLang's allocators import and run on the CPU as they are: with no
device platform, PagedTokenToKVPoolAllocator takes its own torch path
(alloc_decode_naive) instead of its Triton kernel, by its own test of
current_platform.capabilities.supports_triton.
"""

import argparse
import gc
import json
import os
import platform
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

B = 256             # requests (rows) a batch
START = 256         # tokens a decode request holds before its steps
PAGES = 128         # pages a request holds when freed

ns = time.perf_counter_ns


class Case:
    """One side of one workload: run() times one round, in unit."""

    def __init__(self, workload, params, side, unit, run, note=None):
        self.workload, self.params, self.side = workload, params, side
        self.unit, self.run, self.note = unit, run, note
        self.times = []


# ---------------------------------------------------------------- SGLang

def sglang_cases(steps):
    import torch
    from sglang.srt.mem_cache.allocator import (PagedTokenToKVPoolAllocator,
                                                TokenToKVPoolAllocator)
    cases = []

    def tok_alloc(size):
        return TokenToKVPoolAllocator(size, torch.float16, "cpu", None, False)

    # decode, page size 1
    dec = tok_alloc(B * (START + steps) + 64)

    def sg_decode():
        dec.clear()
        dec.alloc(B * START)
        alloc = dec.alloc
        t0 = ns()
        for _ in range(steps):
            alloc(B)
        return (ns() - t0) / steps / 1e3
    cases.append(Case("decode", {"B": B, "pt": 1}, "sglang", "us/step",
                      sg_decode))

    # decode, page size 16
    pal = PagedTokenToKVPoolAllocator(16 * (B * -(-(START + steps) // 16)
                                            + 64), 16, torch.float16, "cpu",
                                      None, False)
    seqs = [torch.full((B,), START + s + 1, dtype=torch.int64)
            for s in range(steps)]

    def sg_paged_decode():
        pal.clear()
        last = torch.stack([pal.alloc(START)[-1] for _ in range(B)])
        step = pal.alloc_decode
        t0 = ns()
        for s in seqs:
            last = step(s, s, last)
        t = ns() - t0
        if last is None:
            raise RuntimeError("sglang paged: alloc_decode ran out")
        return t / steps / 1e3
    cases.append(Case("decode", {"B": B, "pt": 16}, "sglang-paged",
                      "us/step", sg_paged_decode))

    # release 256 x 128, page size 1: rows grown a token a step
    rel = tok_alloc(B * PAGES + 64)

    def grown_rows():
        rel.clear()
        cols = [rel.alloc(B) for _ in range(PAGES)]
        return [r.clone() for r in torch.stack(cols, 1)]

    def timed_frees(a, rows, grouped, size):
        """free() of every row, in one group or not: microseconds."""
        free = a.free
        t0 = ns()
        if grouped:
            a.free_group_begin()
        for r in rows:
            free(r)
        if grouped:
            a.free_group_end()
        t = ns() - t0
        if a.available_size() != size:
            raise RuntimeError("sglang: free lost pages")
        return t / 1e3

    def sg_release(grouped):
        return lambda: timed_frees(rel, grown_rows(), grouped, B * PAGES + 64)
    p1 = {"B": B, "pages": PAGES, "pt": 1}
    cases.append(Case("release-256x128", p1, "sglang", "us",
                      sg_release(False)))
    cases.append(Case("release-256x128", p1, "sglang-grouped", "us",
                      sg_release(True)))

    # release 256 x 128 pages of 16
    prel = PagedTokenToKVPoolAllocator(16 * (B * PAGES + 64), 16,
                                       torch.float16, "cpu", None, False)

    def sg_paged_release(grouped):
        def run():
            prel.clear()
            rows = [prel.alloc(16 * PAGES) for _ in range(B)]
            return timed_frees(prel, rows, grouped, 16 * (B * PAGES + 64))
        return run
    p16 = {"B": B, "pages": PAGES, "pt": 16}
    cases.append(Case("release-256x128", p16, "sglang-paged", "us",
                      sg_paged_release(False)))
    cases.append(Case("release-256x128", p16, "sglang-paged-grouped", "us",
                      sg_paged_release(True)))
    import sglang
    return cases, getattr(sglang, "__version__", "?")


# ------------------------------------------------------------------ vLLM

def vllm_cases(steps):
    import vllm_cpu
    v = vllm_cpu.load()
    hash_fn = v.get_hash_fn_by_name("sha256")     # vLLM's default algo
    v.kv_cache_utils.init_none_hash(hash_fn)
    sp = v.SamplingParams(max_tokens=1 << 16)
    serial = [0]
    cases = []

    def manager(bs, nr_blocks, caching):
        spec = v.FullAttentionSpec(block_size=bs, num_kv_heads=8,
                                   head_size=128, dtype=v.torch.float16)
        cfg = v.KVCacheConfig(
            num_blocks=nr_blocks, kv_cache_tensors=[],
            kv_cache_groups=[v.KVCacheGroupSpec(["layers.0.attn"], spec)])
        return v.KVCacheManager(cfg, max_model_len=1 << 16,
                                scheduler_block_size=bs, hash_block_size=bs,
                                enable_caching=caching)

    def requests(m, bs, caching, ntok):
        """B running requests of ntok prompt tokens, prefilled and
        holding their first output token: what the scheduler has after
        a prefill step. Tokens differ from round to round, so no
        request hits the prefix cache."""
        hasher = (v.kv_cache_utils.get_request_block_hasher(bs, hash_fn)
                  if caching else None)
        reqs = []
        for i in range(B):
            serial[0] += 1
            base = serial[0] * 100000
            r = v.Request("req-%d" % serial[0],
                          list(range(base, base + ntok)), sp, None,
                          block_hasher=hasher)
            if m.allocate_slots(r, ntok) is None:
                raise RuntimeError("vllm: prefill allocation failed")
            r.num_computed_tokens = ntok
            r.status = v.RequestStatus.RUNNING
            r.append_output_token_ids(1)
            reqs.append(r)
        return reqs

    def decode(bs, caching):
        m = manager(bs, B * -(-(START + steps) // bs) + 64, caching)

        def run():
            reqs = requests(m, bs, caching, START)
            alloc = m.allocate_slots
            t = 0
            for s in range(steps):
                t0 = ns()
                for r in reqs:
                    if alloc(r, 1) is None:
                        raise RuntimeError("vllm: decode ran out")
                t += ns() - t0
                for r in reqs:
                    r.num_computed_tokens += 1
                    r.append_output_token_ids(2 + s)
            for r in reqs:
                m.free(r)
            return t / steps / 1e3
        return run

    def release(bs, caching):
        m = manager(bs, B * PAGES + 64, caching)

        def run():
            reqs = requests(m, bs, caching, PAGES * bs)
            free = m.free
            nfree = m.block_pool.get_num_free_blocks()
            t0 = ns()
            for r in reqs:
                free(r)
            t = ns() - t0
            if m.block_pool.get_num_free_blocks() != nfree + B * PAGES:
                raise RuntimeError("vllm: free lost blocks")
            return t / 1e3
        return run

    for caching in (False, True):
        side = "vllm-cache" if caching else "vllm"
        for bs in (1, 16):
            cases.append(Case("decode", {"B": B, "pt": bs}, side, "us/step",
                              decode(bs, caching)))
            cases.append(Case("release-256x128",
                              {"B": B, "pages": PAGES, "pt": bs}, side, "us",
                              release(bs, caching)))
    return cases, v.version, vllm_cpu.REPLACED


# ---------------------------------------------------------------- kvpool

def kvpool_cases(steps, pools):
    """kvpool through its Python binding, one pool per geometry, made
    here (pools: (id, Pool) pairs, for the caller to close and
    destroy)."""
    import numpy as np
    import kvpool

    def pool(nr_pages, pt, rows, row_tokens):
        pid = kvpool.pool_create(nr_pages, pt, rows, row_tokens,
                                 reserve_zero=True)
        p = kvpool.Pool("/dev/kvpool%d" % pid)
        pools.append((pid, p))
        return p

    cases = []
    buf = np.empty(B, dtype=np.uint32)

    def decode(pt):
        p = pool(B * -(-(START + steps) // pt) + 64, pt, B + 4,
                 START + steps)

        def run():
            h = p.alloc_rows(B)
            lens = np.full(B, START, dtype=np.int32)
            p.extend(h, lens)
            p.commit(h, lens)
            table = [lens + (s + 1) for s in range(steps)]
            extend, commit = p.extend, p.commit
            t0 = ns()
            for new in table:
                extend(h, new, buf)
                commit(h, new)
            t = ns() - t0
            p.release(h)
            return t / steps / 1e3
        return run

    rp = pool(B * PAGES + 64, 1, B + 4, PAGES)
    grow = [np.full(B, k, dtype=np.int32) for k in range(1, PAGES + 1)]

    def release(each):
        def run():
            nfree = rp.stats().free_pages
            h = rp.alloc_rows(B)
            for lens in grow:
                rp.extend(h, lens, buf)
                rp.commit(h, lens)
            t0 = ns()
            if each:
                for i in range(B):
                    rp.release(h[i:i + 1])
            else:
                rp.release(h)
            t = ns() - t0
            if rp.stats().free_pages != nfree:
                raise RuntimeError("kvpool: release lost pages")
            return t / 1e3
        return run

    for pt in (1, 16):
        cases.append(Case("decode", {"B": B, "pt": pt}, "kvpool-py",
                          "us/step", decode(pt)))
    p1 = {"B": B, "pages": PAGES, "pt": 1}
    cases.append(Case("release-256x128", p1, "kvpool-py", "us",
                      release(False)))
    cases.append(Case("release-256x128", p1, "kvpool-py-each", "us",
                      release(True)))
    return cases, kvpool.version()


# ------------------------------------------------------------- reporting

def key(workload, params):
    return workload + " " + " ".join("%s=%s" % kv for kv in params.items())


REF_SIDES = ("floor", "core", "kernel", "kvpool-py")


def ratios(results):
    """Every engine figure over each reference side's figure of the same
    workload, params and unit; a release at pt=16 over the pt=1 one."""
    refs = {}
    for r in results:
        if r["side"] in REF_SIDES:
            refs[(key(r["workload"], r["params"]), r["unit"],
                  r["side"])] = r["median"]
    out = []
    for r in results:
        if r["side"] in REF_SIDES and r["side"] != "kvpool-py":
            continue
        k = key(r["workload"], r["params"])
        alt = None
        if r["workload"] == "release-256x128" and r["params"].get("pt") != 1:
            alt = key(r["workload"], dict(r["params"], pt=1))
        for ref in REF_SIDES:
            if ref == r["side"]:
                continue
            base, note = refs.get((k, r["unit"], ref)), ""
            if base is None and alt:
                base, note = refs.get((alt, r["unit"], ref)), " (pt=1 ref)"
            if base:
                out.append({"workload": r["workload"],
                            "params": r["params"],
                            "name": "%s/%s%s" % (r["side"], ref, note),
                            "value": r["median"] / base})
    return out


def print_table(results, rats):
    by = {}
    for r in results:
        by.setdefault(key(r["workload"], r["params"]), []).append(r)
    rby = {}
    for x in rats:
        rby.setdefault((key(x["workload"], x["params"]),
                        x["name"].split("/")[0]), []).append(x)
    for k in sorted(by):
        print(k)
        for r in by[k]:
            rs = "  ".join("/%s %.4g" % (x["name"].split("/", 1)[1],
                                          x["value"])
                           for x in rby.get((k, r["side"]), []))
            print("  %-22s %11.3f %-7s (%.3f..%.3f, n=%d)  %s"
                  % (r["side"], r["median"], r["unit"], r["min"], r["max"],
                     r["n"], rs))


def load_kvpool_json(path, sides):
    """kvpool-bench's figures for our workloads, in its first unit."""
    want = {("decode", 1), ("decode", 16), ("release-256x128", 1)}
    out = []
    for r in json.load(open(path))["results"]:
        p = r["params"]
        if (r["workload"], p.get("pt")) not in want or p.get("B") != B:
            continue
        if r["unit"] not in ("us/step", "us") or r["side"] not in sides:
            continue
        out.append({x: r[x] for x in ("workload", "params", "side", "unit",
                                      "median", "min", "max", "n")})
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="smoke run: 5 rounds of 8 steps")
    ap.add_argument("--rounds", type=int, default=None,
                    help="timed rounds a side (default 9; --quick 5)")
    ap.add_argument("--steps", type=int, default=None,
                    help="decode steps a round (default 64; --quick 8)")
    ap.add_argument("--kvpool-json", metavar="FILE",
                    help="kvpool-bench --json output to merge")
    ap.add_argument("--kvpool", choices=("auto", "off"), default="auto",
                    help="kvpool-py side: auto (when a pool can be made)")
    ap.add_argument("--sides", default="sglang,vllm,kvpool",
                    help="engines to run (default sglang,vllm,kvpool)")
    ap.add_argument("--torch-threads", type=int, default=1,
                    help="torch's intra-op threads (default 1: a "
                    "scheduler's one thread, as every other side has)")
    ap.add_argument("--json", metavar="FILE", help="write the figures")
    a = ap.parse_args(argv)
    rounds = a.rounds or (5 if a.quick else 9)
    steps = a.steps or (8 if a.quick else 64)
    want = set(a.sides.split(","))

    t_start = time.monotonic()
    import torch
    torch.set_num_threads(a.torch_threads)
    notes, versions, cases, pools = [], {}, [], []
    if "sglang" in want:
        c, versions["sglang"] = sglang_cases(steps)
        cases += c
    if "vllm" in want:
        c, versions["vllm"], replaced = vllm_cases(steps)
        cases += c
        notes += ["replaced: " + x for x in replaced]
    if "kvpool" in want and a.kvpool == "auto":
        try:
            import kvpool
            ctl = kvpool.CONTROL_PATH
        except ImportError as e:
            kvpool, ctl = None, "binding: %s" % e
        if kvpool and os.path.exists(ctl) and os.geteuid() == 0:
            c, versions["kvpool"] = kvpool_cases(steps, pools)
            cases += c
        else:
            notes.append("kvpool-py: skipped (no %s, or not root)" % ctl)
    versions["torch"] = torch.__version__
    notes.append("torch threads: %d" % torch.get_num_threads())
    print("engine-bench: %d sides, %d rounds, %d decode steps a round, "
          "set up in %.1f s" % (len(cases), rounds, steps,
                                time.monotonic() - t_start), flush=True)
    try:
        for c in cases:                 # untimed: warm caches and imports
            c.run()
        for r in range(rounds):
            for c in (cases if r % 2 == 0 else cases[::-1]):
                gc.collect()
                c.times.append(c.run())
    finally:
        for pid, p in pools:
            p.close()           # a pool with clients cannot be destroyed
            try:
                sys.modules["kvpool"].pool_destroy(pid)
            except OSError as e:
                print("engine-bench: pool %d: %s" % (pid, e), file=sys.stderr)

    results = [{"workload": c.workload, "params": c.params, "side": c.side,
                "unit": c.unit, "median": statistics.median(c.times),
                "min": min(c.times), "max": max(c.times), "n": len(c.times)}
               for c in cases]
    if a.kvpool_json:
        results += load_kvpool_json(a.kvpool_json, ("floor", "core",
                                                    "kernel"))
        notes.append("floor/core/kernel: %s" % a.kvpool_json)
    rats = ratios(results)
    print("engine-bench: %s, %s; %.0f s" % (
        ", ".join("%s %s" % kv for kv in sorted(versions.items())),
        platform.node(), time.monotonic() - t_start))
    for n in notes:
        print("note: " + n)
    print_table(results, rats)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"host": {"uname": " ".join(platform.uname()),
                                "nproc": os.cpu_count()},
                       "versions": versions, "args": sys.argv[1:],
                       "rounds": rounds, "steps": steps, "notes": notes,
                       "results": results, "ratios": rats}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
