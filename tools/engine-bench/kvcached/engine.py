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
    __slots__ = ('rid', 'arrival', 'prompt', 'output', 'made', 'blocks')

    def __init__(self, rid, arrival, prompt, output):
        self.rid, self.arrival = rid, arrival
        self.prompt, self.output = prompt, output
        self.made = 0
        self.blocks = []


def run(pool, reqs, steps, step_s, t0, out, block_tokens, max_running,
        die_at=None):
    queue = [Request(i, *r) for i, r in enumerate(reqs)]
    queue.reverse()  # pop() from the end is the next arrival
    waiting, running = [], []
    stats = dict(admitted=0, finished=0, preempted=0, refused=0,
                 race_misses=0, alloc_calls=0, steps_behind=0)
    for k in range(steps):
        target = t0 + k * step_s
        now = time.monotonic()
        if now < target:
            time.sleep(target - now)
        elif now - target > step_s:
            stats['steps_behind'] += 1
        if die_at is not None and k == die_at:
            os.kill(os.getpid(), 9)
        while queue and queue[-1].arrival <= k:
            waiting.append(queue.pop())
        refused_now = 0

        def take(n):
            stats['alloc_calls'] += 1
            if pool.available() < n:
                return None
            ids = pool.alloc(n)
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
                ids = take(1)
                if ids is not None:
                    r.blocks += ids
                    continue
                refused_now += 1
                victim = running[-1]
                pool.free(victim.blocks)
                victim.blocks, victim.made = [], 0
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
            ids = take(need)
            if ids is None:
                refused_now += 1
                break
            r.blocks = ids
            running.append(waiting.pop(0))
            stats['admitted'] += 1
        stats['refused'] += refused_now
        live_tokens = sum(r.prompt + r.made for r in running)
        live_blocks = sum(len(r.blocks) for r in running)
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


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--backend', choices=('kvcached', 'static'),
                    required=True)
    ap.add_argument('--model', required=True)
    ap.add_argument('--trace', required=True)
    ap.add_argument('--dir', required=True,
                    help='run folder: go file, samples, summaries')
    ap.add_argument('--name', required=True, help='this engine in the run')
    ap.add_argument('--gpu-bytes', type=int, required=True)
    ap.add_argument('--share-bytes', type=int, default=0,
                    help='static: this engine\'s fixed part')
    ap.add_argument('--step-ms', type=float, default=20.0)
    ap.add_argument('--max-running', type=int, default=64)
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
        if a.backend == 'kvcached':
            from backends import kvcached as backend
            pool = backend.Pool(geo, bt, a.gpu_bytes, a.ready_timeout)
        else:
            from backends import static as backend
            pool = backend.Pool(geo, bt, a.share_bytes)
    except Exception as e:  # a start-up failure is a result (#193)
        status.update(ready=False, error=f'{type(e).__name__}: {e}')
        with open(os.path.join(a.dir, a.name + '.ready'), 'w') as f:
            json.dump(status, f)
        return 1
    status.update(ready=True, ready_s=round(time.monotonic() - t_start, 3),
                  **pool.describe())
    with open(os.path.join(a.dir, a.name + '.ready'), 'w') as f:
        json.dump(status, f)
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
                    a.step_ms / 1000, t0, out, bt, a.max_running, a.die_at)
    stats.update(status)
    stats.update(pool.close())
    with open(os.path.join(a.dir, a.name + '.summary'), 'w') as f:
        json.dump(stats, f)
    return 0


if __name__ == '__main__':
    sys.exit(main())
