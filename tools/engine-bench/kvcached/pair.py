# SPDX-License-Identifier: GPL-2.0-only
"""#262's race, at its narrowest: kvcached's available_size()/alloc()
pair hammered by several instances sharing one GPU (run.py's `pair`).

Each process is one instance (backends/kvcached.py's Pool, i.e.
kvcached's KVCacheManager over the stand-in GPU). For --seconds it asks
for n blocks (n drawn from 1..--max-need, prefill-sized, as #262's
76-block allocations were) the way vLLM's scheduler does -- available()
first, alloc() only if that said yes -- and holds what it got in a
FIFO; past --hold blocks it frees the oldest, and when the check says
no it frees the oldest half (a wave of requests finishing), so the
instances together keep the GPU at its limit and pages keep changing
hands. No pacing: the point is as many check/alloc pairs as the CPU
allows.

A miss is available() saying yes and alloc() then returning None. The
summary (JSON on stdout) has the pairs, the misses, the refusals (the
check said no) and the stand-in's counts.
"""
import json
import os
import random
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import trace as tracemod  # noqa: E402
from backends import kvcached as backend  # noqa: E402


def main():
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--model', default='B')
    ap.add_argument('--gpu-bytes', type=int, required=True)
    ap.add_argument('--seconds', type=float, default=20.0)
    ap.add_argument('--max-need', type=int, default=76)
    ap.add_argument('--hold', type=int, required=True,
                    help='blocks this instance keeps before freeing')
    ap.add_argument('--go', required=True, help='file to wait for')
    ap.add_argument('--seed', type=int, default=0)
    a = ap.parse_args()
    geo = dict(tracemod.MODELS[a.model])
    pool = backend.Pool(geo, tracemod.BLOCK_TOKENS, a.gpu_bytes, 60.0)
    print(json.dumps({'ready': os.getpid()}), flush=True)
    while not os.path.exists(a.go):
        time.sleep(0.005)
    rng = random.Random(a.seed)
    held, nheld = [], 0
    st = dict(pairs=0, misses=0, refused=0, frees=0)
    end = time.monotonic() + a.seconds
    while time.monotonic() < end:
        n = rng.randint(1, a.max_need)
        if pool.available() >= n:
            st['pairs'] += 1
            ids = pool.alloc(n)
            if ids is None:
                st['misses'] += 1
            else:
                held.append(ids)
                nheld += n
        else:
            st['refused'] += 1
            # Refused: a wave of requests finishes, half of what it
            # holds goes back, and pages change hands between instances.
            low = nheld // 2
            while held and nheld > low:
                ids = held.pop(0)
                nheld -= len(ids)
                pool.free(ids)
                st['frees'] += 1
        while held and nheld > a.hold:
            ids = held.pop(0)
            nheld -= len(ids)
            pool.free(ids)
            st['frees'] += 1
    for ids in held:
        pool.free(ids)
    st.update(pool.close())
    st['pid'] = os.getpid()
    print(json.dumps(st), flush=True)


if __name__ == '__main__':
    main()
