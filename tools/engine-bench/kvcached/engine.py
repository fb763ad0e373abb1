# SPDX-License-Identifier: GPL-2.0-only
"""One engine: one model's requests from the trace, run step by step
against a pool of KV blocks (backends/*.py), in its own process.

The scheduler is vLLM's in the part that touches memory, nothing more:

- admission, first come first served: a waiting request needs
  ceil((prompt + generated) / block) blocks; the engine asks the pool's
  available() first and alloc()s only if that said yes, as vLLM's
  scheduler asks get_num_free_blocks() before allocate_slots(). When the
  pool says no, the request waits ("refused") and admission stops for
  this step.
- decode: every running request makes one token a step, and takes one
  more block each time it crosses a block boundary. If there is no
  block, the newest running request is preempted (recompute: its blocks
  are freed and it goes back to the front of the queue), until the
  allocation fits or nobody is left to preempt.
- finish: all of a request's blocks are freed at once.
- with a prefix cache (a pool with prefix_cache set: kvcached's
  ElasticBlockPool), admission first takes the longest run of cached
  blocks of the prompt (vLLM's get_computed_blocks, then touch), and
  every block that fills is handed to the cache (cache_full_blocks);
  a block wholly inside one of the trace's hot prefixes has the same
  key in every request that has that prefix.

A "race miss" is available() saying yes and alloc() then returning
None: another process took the memory in between. That is kvcached
issue #262 (and #191); vLLM's ElasticBlockPool asserted on it until
kvcached's allocate_slots patch turned it into a scheduling miss, which
is what this engine does with it (it counts it, then treats it as a
refusal).

Steps are paced on the wall clock (--step-ms), so processes share real
time; an engine that falls behind runs its steps back to back. Every
step writes one sample line (JSON) and the run ends with a summary line.
"""
import argparse
import json
import math
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import trace as tracemod  # noqa: E402  (tools/engine-bench/kvcached/trace.py)


class Request:
    __slots__ = ('rid', 'arrival', 'prompt', 'output', 'hot', 'hot_len',
                 'made', 'blocks', 'cached')

    def __init__(self, rid, arrival, prompt, output, hot=-1, hot_len=0):
        self.rid, self.arrival = rid, arrival
        self.prompt, self.output = prompt, output
        self.hot, self.hot_len = hot, hot_len
        self.made = 0
        self.blocks = []
        self.cached = 0  # blocks handed to the prefix cache

    def hashes(self, n, block_tokens):
        """Content keys of the first n full blocks: a block wholly inside
        the hot prefix is the same in every request that has it."""
        return [f'h{self.hot}:{i}'.encode()
                if self.hot >= 0 and (i + 1) * block_tokens <= self.hot_len
                else f'r{self.rid}:{i}'.encode() for i in range(n)]


def run(pool, reqs, steps, step_s, t0, out, block_tokens, max_running,
        die_at=None, drain=0, idle=0):
    """Step the trace; then up to drain more steps until nothing is left
    running or waiting, then idle steps with nothing to do (the idle
    footprint is read there)."""
    queue = [Request(i, *r) for i, r in enumerate(reqs)]
    queue.reverse()  # pop() from the end is the next arrival
    waiting, running = [], []
    stats = dict(admitted=0, finished=0, preempted=0, refused=0,
                 race_misses=0, alloc_calls=0, steps_behind=0,
                 prefix_hit_blocks=0)
    prefix = getattr(pool, 'prefix_cache', False)
    rows = getattr(pool, 'rows', False)
    idle_left = idle
    for k in range(steps + drain + idle):
        if k >= steps and not (queue or waiting or running):
            if idle_left == 0:
                break
            idle_left -= 1
        elif k >= steps + drain:
            break
        target = t0 + k * step_s
        now = time.monotonic()
        if now < target:
            time.sleep(target - now)
        elif now - target > step_s:
            stats['steps_behind'] += 1
        if die_at is not None and k == die_at:
            out.flush()  # the samples so far are the victim's record
            os.kill(os.getpid(), 9)
        while queue and queue[-1].arrival <= k:
            waiting.append(queue.pop())
        refused_now = 0

        def take(n, have=()):
            if n <= 0:
                return []
            stats['alloc_calls'] += 1
            if pool.available() < n:
                return None
            # A pool of rows (kvpool) grows the request's row by n.
            ids = pool.alloc(n, have) if rows else pool.alloc(n)
            if ids is None:
                stats['race_misses'] += 1
            return ids

        # Decode first, as vLLM schedules running requests before new ones.
        i = 0
        while i < len(running):
            r = running[i]
            r.made += 1
            if r.made >= r.output:
                pool.free(r.blocks)
                r.blocks = []
                running.pop(i)
                stats['finished'] += 1
                continue
            need = math.ceil((r.prompt + r.made) / block_tokens)
            while len(r.blocks) < need:
                ids = take(1, r.blocks)
                if ids is not None:
                    r.blocks += ids
                    if prefix:
                        full = (r.prompt + r.made) // block_tokens
                        pool.cache(r.hashes(full, block_tokens), r.blocks,
                                   r.cached, full)
                        r.cached = full
                    continue
                refused_now += 1
                victim = running[-1]
                pool.free(victim.blocks)
                victim.blocks, victim.made, victim.cached = [], 0, 0
                running.pop()
                waiting.insert(0, victim)
                stats['preempted'] += 1
                if victim is r:
                    break
            else:
                i += 1
                continue
            # r itself was preempted; running[i] is the next one.
        while waiting and len(running) < max_running:
            r = waiting[0]
            need = math.ceil((r.prompt + r.made + 1) / block_tokens)
            full = (r.prompt + r.made) // block_tokens
            # Prefix hits first (vLLM's get_computed_blocks), at most all
            # but the last block, which is always recomputed.
            hits = (pool.lookup(r.hashes(min(full, need - 1), block_tokens))
                    if prefix else [])
            ids = take(need - len(hits))
            if ids is None:
                if hits:
                    pool.free(hits)
                refused_now += 1
                break
            r.blocks = hits + ids
            stats['prefix_hit_blocks'] += len(hits)
            if prefix:
                pool.cache(r.hashes(full, block_tokens), r.blocks,
                           len(hits), full)
                r.cached = full
            running.append(waiting.pop(0))
            stats['admitted'] += 1
        stats['refused'] += refused_now
        live_tokens = sum(r.prompt + r.made for r in running)
        # Distinct: requests sharing a cached prefix share its blocks.
        live_blocks = len({b for r in running for b in r.blocks})
        s = {'k': k, 't': round(time.monotonic() - t0, 4),
             'tokens': live_tokens, 'blocks': live_blocks,
             'running': len(running), 'waiting': len(waiting),
             'refused': refused_now}
        s.update(pool.sample())
        out.write(json.dumps(s) + '\n')
    for r in running:
        pool.free(r.blocks)
    stats['left_waiting'] = len(waiting) + len(queue)
    stats['left_running'] = len(running)
    return stats


def write_ready(a, status):
    """Whole, then renamed: run.py polls for the name."""
    path = os.path.join(a.dir, a.name + '.ready')
    with open(path + '.new', 'w') as f:
        json.dump(status, f)
    os.replace(path + '.new', path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--backend', choices=('kvcached', 'kvcached-prefix',
                                          'static', 'kvpool'),
                    required=True)
    ap.add_argument('--model', required=True)
    ap.add_argument('--trace', required=True)
    ap.add_argument('--dir', required=True,
                    help='run folder: go file, samples, summaries')
    ap.add_argument('--name', required=True, help='this engine in the run')
    ap.add_argument('--gpu-bytes', type=int, required=True)
    ap.add_argument('--share-bytes', type=int, default=0,
                    help='static: this engine\'s fixed part')
    ap.add_argument('--pool-id', type=int, default=-1,
                    help='kvpool: this engine\'s pool (run.py made it)')
    ap.add_argument('--budget-id', type=int, default=-1,
                    help='kvpool: the budget its pool is on')
    ap.add_argument('--step-ms', type=float, default=20.0)
    ap.add_argument('--max-running', type=int, default=64)
    ap.add_argument('--drain', type=int, default=0,
                    help='steps past the trace to finish what is left')
    ap.add_argument('--idle', type=int, default=0,
                    help='steps with nothing to do, once drained')
    ap.add_argument('--die-at', type=int, default=None,
                    help='SIGKILL itself at this step (#134)')
    ap.add_argument('--ready-timeout', type=float, default=60.0)
    a = ap.parse_args()

    tr = tracemod.load(a.trace)
    geo = tr['models'][a.model]
    bt = tr['block_tokens']
    t_start = time.monotonic()
    status = {'name': a.name, 'model': a.model, 'backend': a.backend,
              'pid': os.getpid()}
    try:
        if a.backend.startswith('kvcached'):
            from backends import kvcached as backend
            pool = backend.Pool(geo, bt, a.gpu_bytes, a.ready_timeout,
                                prefix_cache=a.backend == 'kvcached-prefix')
        elif a.backend == 'kvpool':
            from backends import kvpool as backend
            pool = backend.Pool(geo, bt, a.pool_id, a.budget_id)
        else:
            from backends import static as backend
            pool = backend.Pool(geo, bt, a.share_bytes)
    except Exception as e:  # a start-up failure is a result (#193)
        status.update(ready=False, error=f'{type(e).__name__}: {e}')
        write_ready(a, status)
        return 1
    status.update(ready=True, ready_s=round(time.monotonic() - t_start, 3),
                  **pool.describe())
    write_ready(a, status)
    go = os.path.join(a.dir, 'go')
    while not os.path.exists(go):
        time.sleep(0.01)
    with open(go) as f:
        t0_wall = float(f.read())
    # The go file names a wall-clock start; turn it into this process's
    # monotonic clock so all engines step together.
    t0 = time.monotonic() + (t0_wall - time.time())
    with open(os.path.join(a.dir, a.name + '.samples'), 'w') as out:
        stats = run(pool, tr['requests'][a.model], tr['steps'],
                    a.step_ms / 1000, t0, out, bt, a.max_running, a.die_at,
                    a.drain, a.idle)
    stats.update(status)
    stats.update(pool.close())
    with open(os.path.join(a.dir, a.name + '.summary'), 'w') as f:
        json.dump(stats, f)
    return 0


if __name__ == '__main__':
    sys.exit(main())
