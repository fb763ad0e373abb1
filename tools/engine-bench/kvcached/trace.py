# SPDX-License-Identifier: GPL-2.0-only
"""The three-model trace with intermittent peaks, backend-independent.

The shape is that of kvcached's benchmarks/bench_latency_benefit: each
model's request rate ramps up to a peak and back down ("ramp-up-down",
e.g. 0 -> 12 -> 1 req/s), the models' ramps delayed against each other
so that one model peaks while the others idle, and the memory the idle
ones held has to move to the busy one. Here a ramp repeats (cycles), so
every model peaks more than once.

Time is in engine steps (one decode iteration each); run.py says how
long a step is on the wall clock. A request is (arrival step, prompt
tokens, output tokens). The trace is a pure function of its arguments
and seed, written to JSON, so every side replays the same requests.
"""
import json
import math
import random

# Three geometries: per token, per layer, K (or V) bytes and layer count.
# Bytes per token are 2 * layers * cell: 32 KiB, 64 KiB, 128 KiB (1x, 2x,
# 4x); a kvcached page id is 2 MiB per layer per K/V, so a compound page
# is 32, 64 and 128 MiB and holds 1024 tokens (64 blocks of 16) in each.
MODELS = {
    'A': {'layers': 8, 'cell': 2048},
    'B': {'layers': 16, 'cell': 2048},
    'C': {'layers': 32, 'cell': 2048},
}
BLOCK_TOKENS = 16


def bytes_per_token(m):
    return 2 * MODELS[m]['layers'] * MODELS[m]['cell']


def poisson(rng, lam):
    """Knuth's method; lam is small (arrivals in one step)."""
    limit, k, p = math.exp(-lam), 0, rng.random()
    while p > limit:
        k += 1
        p *= rng.random()
    return k


def make(models=('A', 'B', 'C'), cycles=2, period=600, peak_rate=0.5,
         base_rate=0.02, prompt=(256, 1024), output=(64, 384), seed=1,
         stagger=True, tail=0, hot=16, hot_tokens=(128, 256),
         hot_ratio=0.3):
    """Requests per model. period: steps of one ramp up and down;
    peak_rate/base_rate: arrivals per step at the top and outside it;
    stagger: delay model i's ramp by i/len(models) of a period; tail:
    steps with no arrivals at the end, so that every model goes idle.

    hot, hot_tokens, hot_ratio: a share of the prompts starts with one of
    a few hot prefixes (as kvcached's bench_idle_footprint workload
    mixes hot prefixes with a cold tail); only a side with a prefix
    cache uses them. A request is [arrival, prompt, output, hot prefix
    id or -1, hot prefix tokens]."""
    rng = random.Random(seed)
    out = {}
    steps = cycles * period + tail
    for i, m in enumerate(models):
        delay = int(period * i / len(models)) if stagger else 0
        hot_len = [rng.randint(*hot_tokens) for _ in range(hot)]
        reqs = []
        for k in range(cycles * period):
            # Triangle of half the period's width, the rest at base_rate.
            x = ((k - delay) % period) / period
            rate = base_rate
            if x < 0.5:
                rate += (peak_rate - base_rate) * (1 - abs(4 * x - 1))
            for _ in range(poisson(rng, rate)):
                h = rng.randrange(hot) if rng.random() < hot_ratio else -1
                reqs.append((k, rng.randint(*prompt), rng.randint(*output),
                             h, hot_len[h] if h >= 0 else 0))
        out[m] = reqs
    return {'steps': steps, 'period': period, 'block_tokens': BLOCK_TOKENS,
            'models': {m: dict(MODELS[m], bytes_per_token=bytes_per_token(m))
                       for m in models},
            'requests': out}


def save(trace, path):
    with open(path, 'w') as f:
        json.dump(trace, f)


def load(path):
    with open(path) as f:
        return json.load(f)
