#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""kvcached 0.1.6 beside a static split on one three-model trace.

    run.py [--quick] [--out DIR] [--sides kvcached,kvcached-prefix,static]
           [--scenarios trace,handoff,race,pair,kill]

Scenarios (each a fresh stand-in GPU, fresh engine processes):

trace  three models (A, B, C: 1x/2x/4x bytes per token) on one GPU,
       intermittent staggered peaks (trace.py). Every side. The three
       engines are started at once, so the kvcached side also answers
       #193 (start-up failures: an engine not ready, or failed).
handoff  C fills most of the GPU, B arrives and cannot fit, C's
       requests all finish at once: the time from C's memory going to
       B's growing (memory moving from the idle model to the busy one;
       on the static side it never moves). Every side.
race   #262's setup: six instances of one model at
       KVCACHED_GPU_UTILIZATION=0.90, all peaking together; counts race
       misses (available_size() said yes, alloc() returned None).
pair   #262's pair at its narrowest (pair.py): six instances at 0.90
       call available_size() then alloc() as fast as they can, at the
       GPU's limit, freeing in waves; counts the pairs and the misses.
kill   three engines as in trace; one is SIGKILLed at its first peak
       (#134). Reports what the stand-in GPU gives back (at once: the
       driver frees a dead process's memory) and what stays stranded in
       kvcached's own shm budget (the dead engine's /dev/shm segment:
       its limit, used and prealloc bytes, which kvctl and kvtop still
       show) and for how long, and how soon the other engines grow into
       the freed memory.

Output: DIR/results.json (per side and scenario: per-engine metrics,
thinned timelines, the stand-in's counts) and a printed table per side.
The exit status is 0 when every check held: held bytes never below the
live need, every kvcached engine's cuMemCreate/cuMemRelease and
cuMemMap/cuMemUnmap balanced at its exit and no bytes left on the GPU
(the killed engine excepted), the static side's blocks all returned.
Timing is not checked. KVB_PYTHON is the interpreter of the kvcached
venv (install.sh prints it).
"""
import argparse
import json
import os
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import gpu as gpumod  # noqa: E402
import metrics  # noqa: E402
import trace as tracemod  # noqa: E402

GIB = 2**30


def spawn(args, env):
    return subprocess.Popen([args[0], os.path.join(HERE, 'engine.py')]
                            + args[1:], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def ipc_name(scen, side, name):
    """The engine's kvcached shm segment (KVCACHED_IPC_NAME)."""
    return f'kvb-{os.getpid()}-{scen}-{side}-{name}'


def run_side(side, scen, cfg, tr_path, tr, engines, rundir, gpu_bytes,
             util=None, die=None, drain=1500, idle=150):
    """Start engines (name -> model) at once, wait ready, go, collect."""
    os.makedirs(rundir, exist_ok=True)
    gpu_path = f'/dev/shm/kvb-{os.getpid()}-{scen}-{side}'
    gpumod.create(gpu_path, gpu_bytes)
    py = cfg.python if side.startswith('kvcached') else sys.executable
    kvp = None
    if side == 'kvpool':
        # The administrator's part: a budget of the GPU's bytes (90% of
        # it at util 0.90, kvcached's share), a pool per engine on it.
        from backends import kvpool as kvpmod
        bid = kvpmod.make_budget(int(gpu_bytes * (util or 1.0)))
        kvp = {'budget': bid, 'pools': {
            name: kvpmod.make_pool(bid, tr['models'][model],
                                   tr['block_tokens'], gpu_bytes)
            for name, model in engines.items()}}
    procs = {}
    t_launch = time.monotonic()
    for name, model in engines.items():
        env = dict(os.environ, KVB_GPU=gpu_path,
                   KVCACHED_IPC_NAME=ipc_name(scen, side, name),
                   KVCACHED_LOG_LEVEL='ERROR', PYTHONWARNINGS='ignore')
        if util is not None:
            env['KVCACHED_GPU_UTILIZATION'] = str(util)
        args = [py, '--backend', side, '--model', model, '--trace', tr_path,
                '--dir', rundir, '--name', name, '--gpu-bytes',
                str(gpu_bytes), '--share-bytes',
                str(gpu_bytes // len(engines)), '--step-ms',
                str(cfg.step_ms), '--ready-timeout', str(cfg.ready_timeout),
                '--drain', str(drain), '--idle', str(idle)]
        if die and name == die[0]:
            args += ['--die-at', str(die[1])]
        if kvp:
            args += ['--pool-id', str(kvp['pools'][name]),
                     '--budget-id', str(kvp['budget'])]
        procs[name] = spawn(args, env)
    ready = {}
    deadline = time.monotonic() + cfg.ready_timeout + 60
    while len(ready) < len(procs) and time.monotonic() < deadline:
        for name, p in procs.items():
            f = os.path.join(rundir, name + '.ready')
            if name not in ready and os.path.exists(f):
                with open(f) as fh:
                    ready[name] = json.load(fh)
            elif name not in ready and p.poll() is not None:
                ready[name] = {'ready': False,
                               'error': f'exited {p.returncode}'}
        time.sleep(0.05)
    startup_s = round(time.monotonic() - t_launch, 2)
    for name in procs:
        ready.setdefault(name, {'ready': False, 'error': 'not ready'})
    # Written whole, then renamed: an engine polls for the name.
    go = os.path.join(rundir, 'go')
    with open(go + '.new', 'w') as f:
        f.write(repr(time.time() + 0.2))
    os.replace(go + '.new', go)
    watch = None
    if die:
        watch = (watch_kill_kvpool(procs, die, engines, kvp) if kvp
                 else watch_kill(procs, die, engines, gpu_path, cfg))
    logs = {}
    for name, p in procs.items():
        logs[name] = p.communicate(timeout=cfg.timeout)[0]
        if p.returncode not in (0, -9):
            sys.stderr.write(f'--- {scen}/{side}/{name} exit '
                             f'{p.returncode}\n{logs[name][-3000:]}\n')
    total, slots = gpumod.read(gpu_path)
    res = {'gpu_bytes': gpu_bytes, 'startup_s': startup_s,
           'start_failures': sum(1 for r in ready.values()
                                 if not r.get('ready')),
           'engines': {}, 'checks': {}}
    for name, model in engines.items():
        r = ready[name]
        e = {'model': model, 'ready': r.get('ready'),
             'ready_s': r.get('ready_s'), 'error': r.get('error')}
        sp = os.path.join(rundir, name + '.samples')
        sm = os.path.join(rundir, name + '.summary')
        samples = metrics.load_samples(sp) if os.path.exists(sp) else []
        summary = {}
        if os.path.exists(sm):
            with open(sm) as f:
                summary = json.load(f)
        geo = tr['models'][model]
        if samples:
            e['metrics'] = metrics.engine_metrics(
                samples, r, summary, geo['bytes_per_token'],
                tr['block_tokens'], cfg.step_ms)
            e['timeline'] = metrics.timeline(samples)
        slot = slots.get(r.get('pid'))
        if slot:
            e['standin'] = {k: slot[k] for k in gpumod.FIELDS}
        e['shutdown_ok'] = summary.get('shutdown_ok')
        # A segment left by an engine that did not shut down (#134): say
        # so, and remove it, as `kvctl delete` would.
        seg = '/dev/shm/' + ipc_name(scen, side, name)
        e['segment_left'] = os.path.exists(seg)
        if e['segment_left']:
            os.unlink(seg)
        res['engines'][name] = e
        res['checks'][name] = check(side, e, summary, die, name)
    if watch:
        res['kill'] = watch
    if kvp:
        # After every engine closed: each pool must hold no chunk (the
        # killed one's too), and the budget must have all of them back.
        res['kvpool'] = kvpmod.teardown(kvp['budget'],
                                        list(kvp['pools'].values()))
        res['kvpool']['pools'] = kvp['pools']
        k = res['kvpool']
        bad = [f'pool {p} holds {c} chunks after its engine closed'
               for p, c in k['held_at_end'].items() if c]
        if k['out_free_chunks'] != k['nr_chunks']:
            bad.append(f'budget has {k["out_free_chunks"]} of '
                       f'{k["nr_chunks"]} chunks free at the end')
        res['checks']['budget'] = bad
    res['gpu_left_bytes'] = gpumod.used(gpu_path)
    os.unlink(gpu_path)
    return res


def check(side, e, summary, die, name):
    """The accounting invariants; a list of the ones that failed."""
    bad = []
    m = e.get('metrics')
    if not e.get('ready'):
        return bad  # a start-up failure is a measured result, not a check
    if m is None:
        return ['no samples']
    if m['steps_held_below_need']:
        bad.append(f'held < need at {m["steps_held_below_need"]} steps')
    if die and name == die[0]:
        return bad
    if side.startswith('kvcached'):
        s = e.get('standin') or {}
        if s.get('creates') != s.get('releases'):
            bad.append(f'cuMemCreate {s.get("creates")} != cuMemRelease '
                       f'{s.get("releases")}')
        if s.get('maps') != s.get('unmaps'):
            bad.append(f'cuMemMap {s.get("maps")} != cuMemUnmap '
                       f'{s.get("unmaps")}')
        if s.get('bytes'):
            bad.append(f'{s["bytes"]} bytes left on the GPU')
    elif side == 'kvpool':
        if summary.get('leaked_rows'):
            bad.append(f'{summary["leaked_rows"]} rows not released')
        if summary.get('chunks_after_close') is None:
            bad.append('no summary')
    elif summary.get('leaked_blocks'):
        bad.append(f'{summary["leaked_blocks"]} blocks not returned')
    return bad


def watch_kill(procs, die, engines, gpu_path, cfg):
    """Wait for the victim to die; then time what comes back."""
    name = die[0]
    p = procs[name]
    while p.poll() is None:
        time.sleep(0.002)
    t_dead = time.monotonic()
    seg = '/dev/shm/' + ipc_name('kill', 'kvcached', name)
    _, slots = gpumod.read(gpu_path)
    dead = [s for s in slots.values() if not s['alive']]
    others0 = {s['pid']: s['bytes'] for s in slots.values() if s['alive']}
    used0 = gpumod.used(gpu_path)
    stranded = None
    if os.path.exists(seg):
        with open(seg, 'rb') as f:
            stranded = list(struct.unpack('<3q', f.read(24)))
    grew_ms = None
    while any(q.poll() is None for q in procs.values()):
        _, slots = gpumod.read(gpu_path)
        if grew_ms is None and any(
                s['bytes'] > others0.get(s['pid'], 0)
                for s in slots.values() if s['alive']):
            grew_ms = round((time.monotonic() - t_dead) * 1000, 1)
        time.sleep(0.005)
    t_end = time.monotonic()
    still = os.path.exists(seg)
    out = {'victim': name, 'model': engines[name],
           'gpu_bytes_of_dead_at_death': sum(s['bytes'] for s in dead),
           'gpu_used_by_others_at_death': sum(others0.values()),
           'gpu_used_at_death': used0,
           'segment_after_death': stranded,
           'segment_bytes_stranded': (stranded[1] + stranded[2])
           if stranded else 0,
           'segment_still_there_at_end': still,
           'segment_stranded_s_at_least': round(t_end - t_dead, 2)
           if still else None,
           'first_growth_of_others_ms': grew_ms}
    if still:
        os.unlink(seg)  # what `kvctl delete` would do by hand
    return out


def watch_kill_kvpool(procs, die, engines, kvp):
    """kvpool's #134: the victim's file is closed by its death, which
    releases its rows (and quarantines what a mapped writer held until
    the process is gone); time until its pool holds no chunk, from the
    kernel's own count (sysfs), and until another pool grows."""
    from backends import kvpool as kvpmod
    name = die[0]
    p = procs[name]
    victim = kvp['pools'][name]
    others = [q for n, q in kvp['pools'].items() if n != name]
    # The last sample before death is the victim's own held count; the
    # chunks it held at death are read right after the reap.
    while p.poll() is None:
        time.sleep(0.002)
    t_dead = time.monotonic()
    at_death = kvpmod.chunks(victim)
    others0 = {q: kvpmod.chunks(q) for q in others}
    freed_ms = 0.0 if at_death == 0 else None
    grew_ms = first_ms = None
    while any(q.poll() is None for q in procs.values()):
        now = time.monotonic()
        left = kvpmod.chunks(victim)
        if first_ms is None and left < at_death:
            first_ms = round((now - t_dead) * 1000, 1)
        if freed_ms is None and left == 0:
            freed_ms = round((now - t_dead) * 1000, 1)
        if grew_ms is None and any(kvpmod.chunks(q) > others0[q]
                                   for q in others):
            grew_ms = round((now - t_dead) * 1000, 1)
        time.sleep(0.002)
    unit = kvpmod.GPU_CHUNK
    left = kvpmod.chunks(victim)
    return {'victim': name, 'model': engines[name],
            'first_chunks_back_ms': first_ms,
            'chunks_at_end': left,
            'stranded_bytes_at_end': left * unit,
            'stranded_s_at_least': round(time.monotonic() - t_dead, 2)
            if left else None,
            'gpu_bytes_of_dead_at_death': at_death * unit,
            'gpu_used_by_others_at_death': sum(others0.values()) * unit,
            'chunks_at_death': at_death,
            'stranded_ms': freed_ms,
            'segment_bytes_stranded': 0,
            'segment_still_there_at_end': False,
            'segment_stranded_s_at_least': None,
            'first_growth_of_others_ms': grew_ms}


def handoff_trace(tr):
    """C fills most of the GPU and finishes all at once; B arrives while
    C runs and cannot fit until C is gone."""
    t = dict(tr, steps=260, requests={
        'C': [[0, 1024, 100, -1, 0]] * 60,
        'B': [[30, 2048, 100, -1, 0]] * 60})
    t['models'] = {m: tr['models'][m] for m in ('B', 'C')}
    return t


def handoff(rundir, src='C', dst='B'):
    """Time from src's first drop in held bytes (its requests finished)
    to dst's first rise after it: memory moving between models. Both
    engines stamp samples from the same start (the go file)."""
    def rows(n):
        return metrics.load_samples(os.path.join(rundir, n + '.samples'))
    a, b = rows(src), rows(dst)
    t_drop = next((s['t'] for p, s in zip(a, a[1:])
                   if s['held_bytes'] < p['held_bytes']), None)
    if t_drop is None:
        return {'released_at_s': None, 'moved_ms': None}
    before = max((s['held_bytes'] for s in b if s['t'] <= t_drop), default=0)
    t_rise = next((s['t'] for s in b
                   if s['t'] > t_drop and s['held_bytes'] > before), None)
    waited = [s for s in b if s['refused']]
    return {'released_at_s': t_drop,
            'moved_ms': None if t_rise is None
            else round((t_rise - t_drop) * 1000, 1),
            'dst_refused_steps': len(waited)}


def run_pair(cfg, out, gpu_bytes, n=6, util=0.90, seconds=20.0):
    """pair.py in n processes at once on one stand-in GPU."""
    gpu_path = f'/dev/shm/kvb-{os.getpid()}-pair'
    gpumod.create(gpu_path, gpu_bytes)
    go = os.path.join(out, 'pair-go')
    # Together they want 1.4x what the GPU lets kvcached use.
    block = tracemod.BLOCK_TOKENS * tracemod.bytes_per_token('B')
    hold = int(gpu_bytes * util * 1.4 / n / block)
    procs = []
    for i in range(n):
        env = dict(os.environ, KVB_GPU=gpu_path,
                   KVCACHED_IPC_NAME=ipc_name('pair', 'kvcached', f'P{i}'),
                   KVCACHED_LOG_LEVEL='ERROR', PYTHONWARNINGS='ignore',
                   KVCACHED_GPU_UTILIZATION=str(util))
        procs.append(subprocess.Popen(
            [cfg.python, os.path.join(HERE, 'pair.py'), '--gpu-bytes',
             str(gpu_bytes), '--hold', str(hold), '--go', go, '--seconds',
             str(seconds), '--seed', str(i)], env=env,
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True))
    for p in procs:  # each says ready on its first line
        p.stdout.readline()
    with open(go, 'w'):
        pass
    rows = []
    for p in procs:
        o = p.communicate(timeout=cfg.timeout)[0].strip().splitlines()
        rows.append(json.loads(o[-1]) if o else {'error': p.returncode})
    _, slots = gpumod.read(gpu_path)
    for r in rows:
        s = slots.get(r.get('pid'))
        if s:
            r['standin'] = {k: s[k] for k in gpumod.FIELDS}
    os.unlink(gpu_path)
    tot = {k: sum(r.get(k, 0) for r in rows)
           for k in ('pairs', 'misses', 'refused', 'frees')}
    tot['cuMemCreate_refused'] = sum(r.get('standin', {}).get('refused', 0)
                                     for r in rows)
    checks = {}
    for i, r in enumerate(rows):
        s = r.get('standin', {})
        bad = []
        if 'error' in r or not s:
            bad.append(f'no result ({r.get("error")})')
        elif s['creates'] != s['releases'] or s['maps'] != s['unmaps']:
            bad.append(f'stand-in counts do not balance: {s}')
        checks[f'P{i}'] = bad
    return {'instances': n, 'util': util, 'seconds': seconds,
            'hold_blocks': hold, 'totals': tot, 'per_instance': rows,
            'checks': checks}


def main():
    ap = argparse.ArgumentParser(
        description=__doc__.split('\n')[0],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--quick', action='store_true')
    ap.add_argument('--out')
    ap.add_argument('--sides', default='kvcached,kvcached-prefix,static',
                    help='and kvpool, in a guest with kvpool.ko '
                    '(kvpool.sh)')
    ap.add_argument('--scenarios', default='trace,handoff,race,pair,kill')
    ap.add_argument('--gpu-gib', type=float, default=12.0)
    ap.add_argument('--step-ms', type=float, default=20.0)
    ap.add_argument('--ready-timeout', type=float, default=120.0)
    ap.add_argument('--timeout', type=float, default=900.0)
    ap.add_argument('--seed', type=int, default=1)
    a = ap.parse_args()
    a.python = os.environ.get('KVB_PYTHON', '')
    sides = a.sides.split(',')
    if any(s.startswith('kvcached') for s in sides) and not a.python:
        sys.exit('run.py: set KVB_PYTHON to the kvcached venv\'s python '
                 '(tools/engine-bench/kvcached/install.sh prints it)')
    out = a.out or tempfile.mkdtemp(prefix='kvb-kvcached.')
    os.makedirs(out, exist_ok=True)
    cycles, period = (1, 300) if a.quick else (3, 600)
    gpu_bytes = int(a.gpu_gib * GIB)
    tr = tracemod.make(cycles=cycles, period=period, seed=a.seed)
    tr_path = os.path.join(out, 'trace.json')
    tracemod.save(tr, tr_path)
    # #262: one model six times, every instance at its peak together.
    race = tracemod.make(models=('B',) * 1, cycles=cycles, period=period,
                         peak_rate=1.5, output=(256, 768), seed=a.seed + 1,
                         stagger=False)
    race_path = os.path.join(out, 'trace-race.json')
    tracemod.save(race, race_path)
    three = {'A': 'A', 'B': 'B', 'C': 'C'}
    results = {'argv': sys.argv[1:], 'gpu_bytes': gpu_bytes,
               'step_ms': a.step_ms, 'steps': tr['steps'],
               'models': tr['models'], 'requests':
               {m: len(r) for m, r in tr['requests'].items()},
               'sides': {}}
    scen = a.scenarios.split(',')
    for side in sides:
        r = results['sides'].setdefault(side, {})
        if 'trace' in scen:
            r['trace'] = run_side(side, 'trace', a, tr_path, tr, three,
                                  os.path.join(out, f'trace-{side}'),
                                  gpu_bytes)
        if 'handoff' in scen:
            ho = handoff_trace(tr)
            ho_path = os.path.join(out, 'trace-handoff.json')
            tracemod.save(ho, ho_path)
            d = os.path.join(out, f'handoff-{side}')
            r['handoff'] = run_side(side, 'handoff', a, ho_path, ho,
                                    {'C': 'C', 'B': 'B'}, d, gpu_bytes,
                                    drain=0, idle=0)
            r['handoff']['handoff'] = handoff(d)
        if side == 'static':
            continue
        if 'race' in scen:
            six = {f'B{i}': 'B' for i in range(6)}
            r['race'] = run_side(side, 'race', a, race_path, race, six,
                                 os.path.join(out, f'race-{side}'),
                                 gpu_bytes, util=0.90, drain=0, idle=0)
        if 'pair' in scen and side == 'kvcached':
            r['pair'] = run_pair(a, out, gpu_bytes,
                                 seconds=5.0 if a.quick else 20.0)
        if 'kill' in scen and side in ('kvcached', 'kvpool'):
            # C at its first peak: C's ramp starts 2/3 of a period in.
            at = int(period * (2 / 3 + 0.2))
            r['kill'] = run_side(side, 'kill', a, tr_path, tr, three,
                                 os.path.join(out, 'kill' if side ==
                                              'kvcached' else
                                              f'kill-{side}'), gpu_bytes,
                                 die=('C', at))
    with open(os.path.join(out, 'results.json'), 'w') as f:
        json.dump(results, f, indent=1)
    failed = report(results)
    print(f'results: {out}/results.json')
    return 1 if failed else 0


def report(results):
    failed = []
    for side, scens in results['sides'].items():
        for scen, r in scens.items():
            if scen == 'pair':
                t = r['totals']
                print(f'\n{side} / pair: {r["instances"]} instances at '
                      f'{r["util"]}, {r["seconds"]} s: {t["pairs"]} '
                      f'available_size()/alloc() pairs, {t["misses"]} '
                      f'misses (#262), {t["refused"]} refused by the '
                      f'check, {t["cuMemCreate_refused"]} cuMemCreate '
                      'refused')
                for n, bad in r['checks'].items():
                    failed += [f'{side}/pair/{n}: {b}' for b in bad]
                continue
            rows = {n: e['metrics'] for n, e in r['engines'].items()
                    if 'metrics' in e}
            print(f'\n{side} / {scen}: GPU {r["gpu_bytes"] / GIB:.1f} GiB, '
                  f'start-up failures {r["start_failures"]} of '
                  f'{len(r["engines"])} (all ready in {r["startup_s"]} s)')
            print(metrics.table(side, rows))
            if 'kvpool' in r:
                k = r['kvpool']
                print(f'budget: {k["nr_chunks"]} chunks, {k["out_moves"]} '
                      'moves between pools, '
                      f'{k["out_cleared_bytes"]} bytes cleared in '
                      f'{k["out_clear_ns"] / 1e6:.1f} ms; '
                      f'{k["out_free_chunks"]} free at the end')
            if scen.startswith('race'):
                print('race misses (#262: fatal before kvcached\'s '
                      'allocate_slots patch): '
                      f'{sum(m["race_misses"] for m in rows.values())}')
            if 'handoff' in r:
                h = r['handoff']
                if h['released_at_s'] is None:
                    print('handoff: C\'s part never comes free (its held '
                          'bytes never drop), so B never grows into it')
                else:
                    print(f'handoff: C released at {h["released_at_s"]} s;'
                          f' B grew {h["moved_ms"]} ms later (samples are '
                          f'one step apart; B refused '
                          f'{h["dst_refused_steps"]} steps)')
            if 'kill' in r and side == 'kvpool':
                k = r['kill']
                print(f'kill: {k["victim"]} held '
                      f'{metrics.gib(k["gpu_bytes_of_dead_at_death"])} GiB '
                      f'({k["chunks_at_death"]} chunks) at death; the first '
                      f'came back {k["first_chunks_back_ms"]} ms after the '
                      f'reap, all {k["stranded_ms"]} ms after; '
                      f'{k["chunks_at_end"]} still held '
                      f'{k["stranded_s_at_least"]} s later (end of run; '
                      'polled every 2 ms); others grew '
                      f'{k["first_growth_of_others_ms"]} ms after')
            elif 'kill' in r:
                k = r['kill']
                print(f'kill: {k["victim"]} held '
                      f'{metrics.gib(k["gpu_bytes_of_dead_at_death"])} GiB '
                      'on the GPU, free again at death; its shm segment '
                      f'still says {metrics.gib(k["segment_bytes_stranded"])}'
                      f' GiB used+prealloc, there '
                      f'{k["segment_stranded_s_at_least"]} s later (end of '
                      'run); others grew '
                      f'{k["first_growth_of_others_ms"]} ms after')
            for n, bad in r['checks'].items():
                for b in bad:
                    failed.append(f'{side}/{scen}/{n}: {b}')
    for f in failed:
        print('CHECK FAILED:', f)
    return failed


if __name__ == '__main__':
    sys.exit(main())
