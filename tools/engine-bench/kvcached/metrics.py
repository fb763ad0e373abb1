# SPDX-License-Identifier: GPL-2.0-only
"""Metrics from engine samples, the same for every side.

Per engine, from its per-step samples (engine.py) and its ready file:

- held: bytes the side holds for the model (kvcached: what the stand-in
  GPU has given the process, i.e. mapped pages, the pages it keeps
  reserved and its zero page; static: its whole part), mean and peak;
- need: live blocks x bytes per block (block_tokens x bytes per token,
  all layers, K and V): what the live tokens occupy;
- floor: need rounded up to the side's page (kvcached: a compound page
  of 2 MiB x layers x 2 holding page_blocks blocks; static: a block):
  the packed floor of kvcached's bench_idle_footprint;
- footprint: sum(held) / sum(floor) over the steps with live blocks
  (time-weighted held over the packed floor), and idle_held: mean held
  over the steps where the model has nothing running or waiting (the
  floor of live blocks is 0 there); with a prefix cache, idle_floor is
  the packed floor of the blocks it keeps (the cap of #359),
  idle_footprint is idle held over that floor and idle_used_footprint
  the same with kvcached's own used_size (its shm segment: in-use pages
  only, no reserved pages, no zero page), which is what #359 reports;
- waits: runs of consecutive steps in which the engine was refused
  memory (admission or decode growth); their length is the time the
  model waited for memory to come to it (from the idle models, on a side
  where memory moves; from its own finishing requests on the static
  side): count, median and max in ms;
- preempted, refused, race_misses: the engine's counters.
"""
import json
import math
import statistics


def load_samples(path, every=1):
    rows = []
    with open(path) as f:
        for line in f:
            rows.append(json.loads(line))
    return rows


def engine_metrics(samples, ready, summary, bytes_per_token, block_tokens,
                   step_ms):
    block_total = block_tokens * bytes_per_token
    page_blocks = ready.get('page_blocks', 1)
    page_total = ready.get('page_total', block_total)
    held = [s['held_bytes'] for s in samples]
    held_sum = floor_sum = 0
    idle = []
    idle_used = []
    idle_floor = []
    under_floor = 0
    for s in samples:
        need = s['blocks'] * block_total
        floor = math.ceil(s['blocks'] / page_blocks) * page_total
        if need > s['held_bytes']:
            under_floor += 1
        if s['blocks']:
            held_sum += s['held_bytes']
            floor_sum += floor
        if not s['running'] and not s['waiting']:
            idle.append(s['held_bytes'])
            idle_used.append(s.get('seg_used', s['held_bytes']))
            # A prefix cache keeps blocks on purpose: their packed floor
            # is what kvcached's bench_idle_footprint compares with.
            idle_floor.append(math.ceil(s.get('cached_blocks', 0)
                                        / page_blocks) * page_total)
    waits, run = [], 0
    for s in samples:
        if s['refused']:
            run += 1
        elif run:
            waits.append(run * step_ms)
            run = 0
    if run:
        waits.append(run * step_ms)
    return {
        'held_mean': int(statistics.fmean(held)) if held else 0,
        'held_peak': max(held, default=0),
        'need_peak': max((s['blocks'] for s in samples), default=0)
        * block_total,
        'footprint': round(held_sum / floor_sum, 3) if floor_sum else None,
        'idle_steps': len(idle),
        'idle_held': int(statistics.fmean(idle)) if idle else None,
        'idle_floor': int(statistics.fmean(idle_floor)) if idle else None,
        'idle_footprint': round(sum(idle) / sum(idle_floor), 3)
        if idle and sum(idle_floor) else None,
        # kvcached's own used_size (in-use pages, without the reserved
        # pages and the zero page): the figure #359 reports.
        'idle_used_footprint': round(sum(idle_used) / sum(idle_floor), 3)
        if idle and sum(idle_floor) else None,
        'end_held': held[-1] if held else 0,
        'end_cached_blocks': samples[-1].get('cached_blocks', 0)
        if samples else 0,
        'prefix_hit_blocks': summary.get('prefix_hit_blocks', 0),
        'steps_held_below_need': under_floor,
        'waits': len(waits),
        'wait_ms_median': statistics.median(waits) if waits else 0,
        'wait_ms_max': max(waits, default=0),
        'preempted': summary.get('preempted', 0),
        'refused': summary.get('refused', 0),
        'race_misses': summary.get('race_misses', 0),
        'finished': summary.get('finished', 0),
        'left_waiting': summary.get('left_waiting', 0),
        'steps_behind': summary.get('steps_behind', 0),
    }


def timeline(samples, points=60):
    """Held bytes and live need over time, thinned for the JSON."""
    if not samples:
        return []
    every = max(1, len(samples) // points)
    return [[s['t'], s['held_bytes'], s['blocks'], s['running'],
             s['waiting']] for s in samples[::every]]


def gib(n):
    return '-' if n is None else f'{n / 2**30:.2f}'


def table(side, rows):
    """One printed table per side: a row per engine."""
    head = (f'{"side":<15} {"engine":<6} {"held":>6} {"peak":>6} '
            f'{"need":>6} {"foot":>5} {"idle":>6} {"waits":>5} '
            f'{"w50ms":>6} {"wmax":>6} {"preem":>5} {"refus":>6} '
            f'{"race":>4} {"done":>5} {"ifoot":>5}')
    out = [head]
    for name, m in rows.items():
        foot = '-' if m['footprint'] is None else f'{m["footprint"]:.2f}'
        out.append(
            f'{side:<15} {name:<6} {gib(m["held_mean"]):>6} '
            f'{gib(m["held_peak"]):>6} {gib(m["need_peak"]):>6} '
            f'{foot:>5} {gib(m["idle_held"]):>6} {m["waits"]:>5} '
            f'{m["wait_ms_median"]:>6.0f} {m["wait_ms_max"]:>6.0f} '
            f'{m["preempted"]:>5} {m["refused"]:>6} {m["race_misses"]:>4} '
            f'{m["finished"]:>5} '
            f'{"-" if m["idle_footprint"] is None else m["idle_footprint"]:>5}')
    return '\n'.join(out)
