#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
#
# Writes the seed corpus of fuzz_core: op sequences in fuzz_core.c's input
# format, each a scenario a scheduler or a careless client would produce,
# so the fuzzer starts deep in the state space instead of at random bytes.
# The op numbers and the codes of the argument bytes are read from
# fuzz_core.c (FZ_OPS, its fz_* enums, fz_pts): the encoders below only
# put them together the way its dec_* functions take them apart. Replay
# one with its trace to see what it does:
#   KVP_FUZZ_TRACE=1 ./fuzz_core corpus/NAME
#
# Usage: gen-corpus.py DIR
import os
import random
import re
import struct
import sys


def read_spec(path):
    """The input format as fuzz_core.c defines it: the ops of FZ_OPS (in
    order: their numbers), the constants of its enums, and fz_pts (page
    tokens by header index). Names are those of the C file: ALLOC for
    OP_ALLOC, FZ_H_OWN, ..."""
    with open(path) as f:
        src = f.read()
    table = re.search(r'#define FZ_OPS\(X\)(.*?)\n\n', src, re.S).group(1)
    spec = {m.group(1): i for i, m in
            enumerate(re.finditer(r'X\((\w+),', table))}
    for body in re.findall(r'\benum\s+fz_\w+\s*\{(.*?)\};', src, re.S):
        body = re.sub(r'/\*.*?\*/', '', body, flags=re.S)
        nxt = 0
        for ent in filter(None, (e.strip() for e in body.split(','))):
            name, _, val = (x.strip() for x in ent.partition('='))
            if name.startswith('OP_') or name == 'FZ_NR_OPS':
                continue            # from FZ_OPS, above
            nxt = int(val, 0) if val else nxt
            spec[name] = nxt
            nxt += 1
    pts = re.search(r'fz_pts\[\d+\]\s*=\s*\{([^}]*)\}', src).group(1)
    spec['fz_pts'] = [int(x, 0) for x in pts.split(',')]
    return spec


C = read_spec(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                           'fuzz_core.c'))
globals().update({k: v for k, v in C.items() if not k.startswith('FZ_')
                  and k != 'fz_pts'})     # the op numbers: ALLOC, ...

# The first header index of each page_tokens value.
PT_INDEX = {}
for _i, _pt in enumerate(C['fz_pts']):
    PT_INDEX.setdefault(_pt, _i)


def u32(v):
    return struct.pack('<I', v & 0xffffffff)


def u64(v):
    return struct.pack('<Q', v & 0xffffffffffffffff)


def header(pt=1, pages=64, rows=8, rt_pages=16, rt_adj=0, reserve=False,
           gen_wrap=False, epoch_wrap=False, four=False, tenants=False):
    """Pool geometry: rt_adj 0 rt = k*pt, 1 k*pt-1, 2 k*pt+1, 3 k.
    tenants: client i is in tenant (cgroup i % 2)."""
    bits = ((reserve, 'FZ_HDR_RESERVE_ZERO'), (gen_wrap, 'FZ_HDR_GEN_WRAP'),
            (epoch_wrap, 'FZ_HDR_EPOCH_WRAP'), (four, 'FZ_HDR_FOUR'),
            (tenants, 'FZ_HDR_TENANTS'))
    b0 = PT_INDEX[pt]
    for on, name in bits:
        b0 |= C[name] if on else 0
    assert 2 <= pages <= 257 and 2 <= rows <= 65 and 1 <= rt_pages <= 64
    return bytes([b0, pages - 2, rows - 2,
                  (rt_pages - 1) | (rt_adj << C['FZ_HDR_RT_SHIFT'])])


# ---- arguments ----

GEN = {None: C['FZ_GEN_SAME'], +1: C['FZ_GEN_NEXT'], -1: C['FZ_GEN_PREV'],
       +5: C['FZ_GEN_PLUS5'], 'far': C['FZ_GEN_FAR'],
       'half': C['FZ_GEN_HALF']}


def h_live(i=0, tweak=None):
    """The i-th row the caller holds, its generation moved by tweak:
    +1, +5, 'far' (+2^31 - 1): not issued yet (ENOENT); -1, 'half'
    (+2^31, as far behind as ahead): stale (ESTALE)."""
    return bytes([C['FZ_H_OWN'] | (GEN[tweak] << C['FZ_GEN_SHIFT']), i])


def h_known(i):
    """The i-th handle seen so far (any client's, maybe released)."""
    return bytes([C['FZ_H_KNOWN'], i])


def h_any(i):
    """The i-th held row of any client."""
    return bytes([C['FZ_H_ANY'], i])


def h_small(idx, gen):
    return bytes([C['FZ_H_RAW'], idx & 0xff, gen & 0xff])


def h_raw(idx, gen):
    return bytes([C['FZ_H_RAW32'] | C['FZ_H_RAW']]) + u32(idx) + u32(gen)


# Length bases and what the second byte does (enum fz_len_base, _adj).
ZERO, ALLOCD, COMMITTED, PROT, SWAE, RT, PAGEUP = (
    C['FZ_LEN_ZERO'], C['FZ_LEN_ALLOCATED'], C['FZ_LEN_COMMITTED'],
    C['FZ_LEN_PROTECTED'], C['FZ_LEN_SWA_EVICTED'], C['FZ_LEN_ROW_TOKENS'],
    C['FZ_LEN_PAGE_UP'])
PLUS, PAGES, MINUS, PAGES_M1 = (C['FZ_ADJ_PLUS'], C['FZ_ADJ_PAGES'],
                                C['FZ_ADJ_MINUS'], C['FZ_ADJ_PAGES_M1'])


def ln(base=ZERO, d=0, adj=PLUS):
    """A length: base (of the entry's row) and d tokens / pages."""
    return bytes([base | (adj << C['FZ_ADJ_SHIFT']), d])


def ln_raw(v):
    return bytes([C['FZ_LEN_RAW']]) + u32(v)


def tok(n):
    """n tokens, absolute."""
    assert n < 256
    return ln(ZERO, n)


def pg(n):
    """n pages' worth of tokens, absolute."""
    return ln(ZERO, n, PAGES)


COUNT_SPECIAL = {'zero': C['FZ_COUNT_ZERO'], 'max': C['FZ_COUNT_MAX'],
                 'max+1': C['FZ_COUNT_MAX1'], 'huge': C['FZ_COUNT_HUGE']}


def count(n):
    if isinstance(n, str):
        return bytes([COUNT_SPECIAL[n]])
    if 1 <= n <= 8:
        return bytes([n - 1])
    if 9 <= n <= 16:
        return bytes([C['FZ_COUNT_SPECIAL'] | (n - 1)])
    raise ValueError(n)


def cap_all():
    return bytes([C['FZ_CAP_ALL']])


def cap_small(v):
    return bytes([C['FZ_CAP_SMALL'] | (v << C['FZ_CAP_SHIFT'])])


def cap_need(delta=0):
    return bytes([C['FZ_CAP_NEED'] | ((delta + 1) << C['FZ_CAP_SHIFT'])])


def cap_zero():
    return bytes([C['FZ_CAP_ZERO']])


def sess(v):
    assert 0 <= v < 16
    return bytes([v])


def sess_own(i=0):
    return bytes([C['FZ_S_OWN'] | i])


def sess_special(k, raw=0):
    """k: FZ_SS_<k> of enum fz_session_special ('RAW': raw follows)."""
    return bytes([C['FZ_S_SPECIAL'] | C['FZ_SS_' + k]]) + \
        (u64(raw) if k == 'RAW' else b'')


def p_own(i):
    return bytes([C['FZ_P_OWN'], i])


def p_any_cache(i):
    return bytes([C['FZ_P_ANY_CACHE'], i])


def p_mapped(i):
    return bytes([C['FZ_P_MAPPED'], i])


def p_small(i):
    return bytes([C['FZ_P_SMALL'], i])


def p_none():
    return bytes([C['FZ_P_ZERO_NONE'], 1])


def p_raw(v):
    return bytes([C['FZ_P_RAW']]) + u32(v)


def plist_seq(off=0):
    return bytes([C['FZ_PL_SEQ'] | (off << 1)])


def plist(*pages):
    return bytes([C['FZ_PL_EACH']]) + b''.join(pages)


# ---- ops ----

def op(o, c, *args):
    return bytes([o, c]) + b''.join(args)


def alloc(c, n=1):
    return op(ALLOC, c, count(n))


def extend(c, entries, cap=None):
    """entries: [(handle, len)]"""
    body = count(len(entries)) + b''.join(h + l for h, l in entries)
    return op(EXTEND, c, body, cap if cap is not None else cap_all())


def lenop(o, c, entries, resv=0, n=None):
    return op(o, c, count(n if n is not None else len(entries)),
              bytes([resv]), *[h + l for h, l in entries])


def commit(c, entries, **kw):
    return lenop(COMMIT, c, entries, **kw)


def donate(c, entries, **kw):
    return lenop(DONATE, c, entries, **kw)


def swa(c, entries, **kw):
    return lenop(SWA, c, entries, **kw)


def trim(c, handles):
    return op(TRIM, c, count(len(handles)), *handles)


def release(c, handles, flags=0, n=None):
    odd = C['FZ_REL_ODD']
    fb = bytes([{0: 0, 1: C['FZ_REL_DONATE'], 2: odd | C['FZ_REL_ODD_2'],
                 3: odd | C['FZ_REL_ODD_3'],
                 'high': odd | C['FZ_REL_ODD_HIGH']}[flags]])
    return op(RELEASE, c, fb, count(n if n is not None else len(handles)),
              *handles)


def to_slot(c, h, s):
    return op(TO_SLOT, c, h, s)


def from_slot(c, s):
    return op(FROM_SLOT, c, s)


def slot_release(c, s):
    return op(SLOT_RELEASE, c, s)


def query(c, h, cap=None):
    return op(QUERY, c, h, cap if cap is not None else cap_all())


def query_slot(c, s, cap=None):
    return op(QUERY_SLOT, c, s, cap if cap is not None else cap_all())


def attach(c, h, n, pl=None):
    nb = COUNT_SPECIAL.get('zero' if n == 0 else n)
    if nb is None:
        assert 1 <= n <= 32
        nb = n - 1
    if n == 'huge':     # too many to decode: no page list follows
        return op(ATTACH, c, h, bytes([nb]))
    return op(ATTACH, c, h, bytes([nb]), pl if pl is not None else plist_seq())


def evict(c, n, pl=None):
    return op(EVICT, c, count(n), pl if pl is not None else plist_seq())


def stats(c):
    return op(STATS, c)


def reopen(c, stay_closed=False):
    return op(REATTACH, c,
              bytes([C['FZ_REATTACH_STAY_CLOSED'] if stay_closed else 0]))


def fail(c, nth=1):
    return op(FAIL, c, bytes([nth - 1]))


def export_row(c, h):
    return op(EXPORT, c, b'\x00', h)      # a row: FZ_EXPORT_SLOT clear


def export_slot(c, s):
    return op(EXPORT, c, bytes([C['FZ_EXPORT_SLOT']]), s)


def import_(c, i=0, not_exported=None):
    """The i-th export; or row not_exported, which was never exported."""
    if not_exported is not None:
        return op(IMPORT, c,
                  bytes([C['FZ_IMPORT_NOT_EXPORTED'] | not_exported]))
    return op(IMPORT, c, bytes([i]))


def drop(i=0):
    return op(DROP, 0, bytes([i]))


def tenant(by_id=False, tid=0, cgroup=0, uid=0, max_share=0, min_share=0,
           rows=0, label=0, bad_flags=False):
    """max_share / 200 of the usable pages (0: none); min_share / 800."""
    fb = (C['FZ_TEN_BAD_FLAG'] if bad_flags else
          C['FZ_TEN_BY_ID'] if by_id else C['FZ_TEN_BY_KEY'])
    assert tid < C['FZ_TEN_IDS'] and cgroup < C['FZ_TEN_CGROUPS'] and uid < 2
    return op(TENANT, 0, bytes([fb, tid,
                                cgroup | (uid << C['FZ_TEN_UID_SHIFT']),
                                max_share, min_share, rows, label]))


def wmark(low, high):
    """Watermarks in 1/200ths of the pool."""
    return op(WMARK, 0, bytes([low, high]))


def pressure(c):
    return op(PRESSURE, c)


def tenant_list(room):
    return op(TENANT_LIST, 0, bytes([room]))


def geom(flags, pages, pt, rows, rt):
    """kvp_geom_check(); flags: 0/1, or FZ_GEOM_ODD_FLAG | bit for an
    unknown flag."""
    def v(x):
        if x > 255:
            return bytes([C['FZ_GEOM_U32']]) + u32(x)
        return b'\x00' + bytes([x])
    return op(GEOM, 0, bytes([flags]), v(pages), v(pt), v(rows), v(rt))


# ---- scenarios ----

def scenarios():
    s = {}

    s['rows-basic'] = header(pt=1, pages=64, rows=8, rt_pages=32) + \
        alloc(0, 2) + extend(0, [(h_live(0), tok(5)), (h_live(1), tok(9))]) + \
        commit(0, [(h_live(0), tok(3)), (h_live(1), tok(9))]) + \
        trim(0, [h_live(0)]) + query(0, h_live(0)) + stats(0) + \
        release(0, [h_live(0), h_live(1)]) + stats(0)

    s['partial-pages'] = header(pt=16, pages=32, rows=4, rt_pages=8) + \
        alloc(1) + extend(1, [(h_live(0), tok(17))]) + \
        extend(1, [(h_live(0), tok(32))]) + extend(1, [(h_live(0), tok(33))]) + \
        commit(1, [(h_live(0), tok(20))]) + trim(1, [h_live(0)]) + \
        query(1, h_live(0), cap_need(-1)) + query(1, h_live(0), cap_zero()) + \
        extend(1, [(h_live(0), ln(ALLOCD, 1))]) + \
        extend(1, [(h_live(0), ln(PAGEUP, 0))]) + release(1, [h_live(0)])

    s['enospc-rows-pages'] = header(pt=2, pages=6, rows=3, rt_pages=16) + \
        alloc(0, 3) + alloc(0, 2) + extend(0, [(h_live(0), pg(3)), (h_live(1), pg(3))]) + \
        extend(0, [(h_live(0), pg(2)), (h_live(1), pg(2))]) + \
        extend(1, [(h_live(0), pg(1))]) + alloc(1, 1) + \
        extend(1, [(h_live(0), pg(1))]) + release(0, [h_live(0)]) + \
        extend(1, [(h_live(0), pg(2))]) + stats(1)

    s['enobufs'] = header(pt=1, pages=40, rows=4, rt_pages=32) + \
        alloc(0, 2) + \
        extend(0, [(h_live(0), tok(10)), (h_live(1), tok(10))], cap_need(-1)) + \
        extend(0, [(h_live(0), tok(10)), (h_live(1), tok(10))], cap_zero()) + \
        extend(0, [(h_live(0), tok(10)), (h_live(1), tok(10))], cap_need(0)) + \
        extend(0, [(h_live(0), tok(10)), (h_live(1), tok(10))], cap_zero()) + \
        extend(0, [(h_live(0), tok(30)), (h_live(1), tok(30))], cap_small(3))

    s['stale-handles'] = header(pt=1, pages=16, rows=2, rt_pages=8) + \
        alloc(0) + extend(0, [(h_live(0), tok(4))]) + release(0, [h_live(0)]) + \
        alloc(0) + extend(0, [(h_known(0), tok(5))]) + \
        commit(0, [(h_live(0, -1), tok(0))]) + trim(0, [h_live(0, +1)]) + \
        release(0, [h_known(0)]) + query(0, h_known(0)) + \
        to_slot(0, h_live(0, -1), sess(1)) + release(0, [h_known(1)]) + \
        release(0, [h_known(1)])

    # Generations ahead of the row's name nothing (ENOENT), behind are
    # stale (ESTALE), for every op that takes a handle; the second run
    # starts the rows' generations just below 2^32, so they wrap.
    for name, wrap in (('future-generations', False),
                       ('future-generations-wrap', True)):
        g = header(pt=4, pages=64, rows=6, rt_pages=16, gen_wrap=wrap) + \
            alloc(0, 3) + extend(0, [(h_live(0), tok(16)), (h_live(1), tok(16))]) + \
            commit(0, [(h_live(0), tok(8)), (h_live(1), tok(8))]) + \
            donate(0, [(h_live(0), tok(4))])
        for tw in (+1, +5, 'far', -1, 'half'):
            g += commit(0, [(h_live(0), tok(12)), (h_live(1, tw), tok(12))]) + \
                trim(0, [h_live(0), h_live(1, tw)]) + \
                release(0, [h_live(0), h_live(1, tw)]) + \
                release(0, [h_live(0), h_live(1, tw)], flags=1) + \
                extend(0, [(h_live(0), tok(20)), (h_live(1, tw), tok(20))]) + \
                donate(0, [(h_live(0), tok(8)), (h_live(1, tw), tok(8))]) + \
                swa(0, [(h_live(0), tok(4)), (h_live(1, tw), tok(4))]) + \
                to_slot(0, h_live(1, tw), sess(3)) + \
                attach(0, h_live(2, tw), 1) + export_row(0, h_live(1, tw)) + \
                query(0, h_live(1, tw))
        g += to_slot(0, h_live(1), sess(3)) + from_slot(0, sess(3)) + \
            commit(0, [(h_live(1, +1), tok(12))]) + \
            commit(0, [(h_live(1, -1), tok(12))]) + \
            export_row(0, h_live(1)) + import_(0, 0) + \
            trim(0, [h_live(1, +1)]) + trim(0, [h_live(1, -1)]) + \
            attach(0, h_live(2), 1)
        s[name] = g

    # The case an outside model found: page_tokens 16, committed 64,
    # SWA_FREE to 32 with protected 0, then DONATE 64 succeeded with
    # protected 64 over two holes. A holed row donates nothing now
    # (EINVAL, naming the entry), alone or in a batch, nor with
    # RELEASE_DONATE; without the flag it releases, and a row donated
    # before its window slid keeps a whole prefix.
    s['donate-after-swa'] = header(pt=16, pages=32, rows=4, rt_pages=8) + \
        alloc(0, 3) + \
        extend(0, [(h_live(0), tok(64)), (h_live(1), tok(64)), (h_live(2), tok(64))]) + \
        commit(0, [(h_live(0), tok(64)), (h_live(1), tok(64)), (h_live(2), tok(64))]) + \
        swa(0, [(h_live(1), tok(32))]) + donate(0, [(h_live(1), tok(64))]) + \
        donate(0, [(h_live(1), tok(0))]) + donate(0, [(h_live(1), tok(48))]) + \
        donate(0, [(h_live(0), tok(64)), (h_live(1), tok(64))]) + \
        release(0, [h_live(0), h_live(1)], flags=1) + \
        donate(0, [(h_live(2), tok(32))]) + swa(0, [(h_live(2), tok(32))]) + \
        donate(0, [(h_live(2), tok(48))]) + swa(0, [(h_live(2), tok(64))]) + \
        donate(0, [(h_live(2), tok(64))]) + release(0, [h_live(2)], flags=1) + \
        query(0, h_live(1)) + release(0, [h_live(1)]) + \
        alloc(0) + attach(0, h_live(1), 3) + \
        release(0, [h_live(0)], flags=1) + stats(0) + reopen(0)

    s['cross-client'] = header(pt=4, pages=64, rows=8, rt_pages=8, four=True) + \
        alloc(0, 2) + alloc(1, 1) + extend(0, [(h_live(0), tok(8))]) + \
        extend(1, [(h_any(0), tok(12))]) + commit(2, [(h_any(1), tok(0))]) + \
        release(3, [h_known(0)]) + query(1, h_known(0)) + \
        to_slot(2, h_any(0), sess(3)) + trim(1, [h_any(2)]) + \
        donate(3, [(h_any(0), tok(4))]) + swa(2, [(h_any(0), tok(4))]) + \
        release(1, [h_live(0)]) + release(0, [h_live(0), h_live(1)])

    s['batch-duplicates'] = header(pt=1, pages=64, rows=8, rt_pages=16) + \
        alloc(0, 3) + extend(0, [(h_live(0), tok(4)), (h_live(0), tok(5))]) + \
        extend(0, [(h_live(0), tok(4)), (h_live(1), tok(4)), (h_live(2), tok(4))]) + \
        commit(0, [(h_live(1), tok(2)), (h_live(1), tok(3))]) + \
        trim(0, [h_live(2), h_live(2)]) + \
        donate(0, [(h_live(0), tok(2)), (h_live(0), tok(3))]) + \
        swa(0, [(h_live(1), tok(0)), (h_live(1), tok(0))]) + \
        release(0, [h_live(0), h_live(1), h_live(0)]) + \
        release(0, [h_live(0), h_live(1), h_live(2)])

    s['slots'] = header(pt=2, pages=48, rows=6, rt_pages=16) + \
        alloc(0, 2) + extend(0, [(h_live(0), tok(7)), (h_live(1), tok(3))]) + \
        commit(0, [(h_live(0), tok(5))]) + to_slot(0, h_live(0), sess(4)) + \
        to_slot(0, h_live(0), sess(4)) + query_slot(0, sess(4)) + \
        query_slot(1, sess(4)) + from_slot(1, sess(4)) + \
        from_slot(0, sess(4)) + extend(0, [(h_live(1), tok(9))]) + \
        to_slot(0, h_live(1), sess(5)) + to_slot(0, h_live(0), sess(6)) + \
        slot_release(0, sess(5)) + slot_release(0, sess(5)) + \
        from_slot(0, sess_own(0)) + release(0, [h_live(0)])

    s['slot-hash-chains'] = header(pt=1, pages=64, rows=20, rt_pages=8) + \
        alloc(0, 8) + alloc(0, 8) + \
        b''.join(to_slot(0, h_live(0), sess(i)) for i in range(16)) + \
        query_slot(0, sess(7)) + from_slot(0, sess(3)) + slot_release(0, sess(9)) + \
        from_slot(0, sess(0)) + slot_release(0, sess(15)) + \
        to_slot(0, h_live(0), sess(3)) + \
        to_slot(0, h_live(1), sess_special('ALL_ONES')) + \
        to_slot(0, h_live(0), sess_special('TOP_BIT')) + \
        from_slot(0, sess_special('TOP_BIT')) + \
        reopen(0)

    s['prefix-cache'] = header(pt=4, pages=64, rows=6, rt_pages=16) + \
        alloc(0) + extend(0, [(h_live(0), pg(4))]) + \
        commit(0, [(h_live(0), pg(4))]) + donate(0, [(h_live(0), pg(3))]) + \
        donate(0, [(h_live(0), pg(3))]) + release(0, [h_live(0)]) + \
        alloc(0) + attach(0, h_live(0), 3) + evict(0, 1) + \
        extend(0, [(h_live(0), pg(5))]) + commit(0, [(h_live(0), ln(ALLOCD))]) + \
        donate(0, [(h_live(0), ln(COMMITTED))]) + query(0, h_live(0)) + \
        release(0, [h_live(0)]) + evict(0, 4) + stats(0)

    s['release-donate'] = header(pt=2, pages=40, rows=6, rt_pages=16) + \
        alloc(1, 2) + extend(1, [(h_live(0), tok(9)), (h_live(1), tok(4))]) + \
        commit(1, [(h_live(0), tok(7)), (h_live(1), tok(4))]) + \
        release(1, [h_live(0), h_live(1)], flags=1) + stats(1) + \
        alloc(1) + attach(1, h_live(0), 2) + alloc(1) + attach(1, h_live(1), 3, plist_seq(1)) + \
        evict(1, 2) + release(1, [h_live(0)], flags=1) + \
        release(1, [h_live(0)], flags=1) + evict(1, 5) + \
        release(1, [h_live(0)], flags=2) + release(1, [h_live(0)], flags='high')

    s['swa'] = header(pt=4, pages=64, rows=4, rt_pages=16) + \
        alloc(0) + extend(0, [(h_live(0), pg(8))]) + \
        commit(0, [(h_live(0), pg(8))]) + swa(0, [(h_live(0), pg(3))]) + \
        query(0, h_live(0)) + swa(0, [(h_live(0), pg(2))]) + \
        swa(0, [(h_live(0), ln(SWAE, 1))]) + donate(0, [(h_live(0), pg(5))]) + \
        swa(0, [(h_live(0), pg(4))]) + swa(0, [(h_live(0), pg(6))]) + \
        trim(0, [h_live(0)]) + extend(0, [(h_live(0), pg(10))]) + \
        commit(0, [(h_live(0), pg(10))]) + swa(0, [(h_live(0), ln(COMMITTED))]) + \
        to_slot(0, h_live(0), sess(2)) + from_slot(0, sess(2)) + \
        release(0, [h_live(0)], flags=1) + evict(0, 5)

    s['close-with-everything'] = header(pt=2, pages=64, rows=10, rt_pages=16, four=True) + \
        alloc(2, 3) + extend(2, [(h_live(0), tok(8)), (h_live(1), tok(6)), (h_live(2), tok(5))]) + \
        commit(2, [(h_live(0), tok(8)), (h_live(1), tok(6))]) + \
        donate(2, [(h_live(0), tok(8))]) + alloc(2) + attach(2, h_live(3), 2) + \
        to_slot(2, h_live(1), sess(1)) + alloc(1, 2) + extend(1, [(h_live(0), tok(4))]) + \
        reopen(2) + stats(1) + alloc(2) + query(2, h_known(0)) + \
        release(1, [h_known(0)]) + reopen(1, stay_closed=True) + alloc(1) + \
        reopen(1) + alloc(1)

    s['fail-nth'] = header(pt=1, pages=64, rows=8, rt_pages=40) + \
        alloc(0, 2) + fail(0, 1) + extend(0, [(h_live(0), tok(20))]) + \
        fail(0, 2) + extend(0, [(h_live(0), tok(20))]) + \
        fail(0, 1) + extend(0, [(h_live(0), tok(20))]) + \
        extend(0, [(h_live(1), tok(20))]) + commit(0, [(h_live(0), tok(20))]) + \
        fail(0, 1) + donate(0, [(h_live(0), tok(10))]) + \
        donate(0, [(h_live(0), tok(10))]) + alloc(0) + \
        fail(0, 1) + attach(0, h_live(2), 10) + \
        fail(0, 1) + query(0, h_live(0)) + fail(0, 1) + query_slot(0, sess(0)) + \
        fail(0, 1) + release(0, [h_live(0)], flags=1) + \
        fail(0, 2) + release(0, [h_live(1)], flags=1) + fail(0, 1) + stats(0) + \
        fail(0, 1) + reopen(0)

    s['boundaries'] = header(pt=3, pages=100, rows=5, rt_pages=10, rt_adj=1) + \
        alloc(0, 'zero') + alloc(0, 'max') + alloc(0, 'max+1') + alloc(0, 'huge') + \
        release(0, [h_live(i) for i in range(5)], n='max') + alloc(0, 2) + \
        extend(0, [(h_live(0), ln(RT, 0))]) + extend(0, [(h_live(1), ln(RT, 1))]) + \
        extend(0, [(h_live(1), ln(RT, 0, MINUS))]) + \
        extend(0, [(h_live(0), ln(ALLOCD, 1, MINUS))]) + \
        commit(0, [(h_live(0), ln(ALLOCD, 1))]) + commit(0, [(h_live(0), ln(ALLOCD))]) + \
        commit(0, [(h_live(0), ln(COMMITTED, 1, MINUS))]) + \
        op(EXTEND, 0, count('zero'), cap_all()) + op(EXTEND, 0, count('max+1'), cap_all()) + \
        op(TRIM, 0, count('huge')) + op(COMMIT, 0, count('zero'), b'\x00') + \
        op(EVICT, 0, count('max+1'), plist_seq()) + attach(0, h_live(0), 0) + \
        attach(0, h_live(1), 'max') + attach(0, h_live(1), 'max+1') + \
        attach(0, h_live(1), 'huge') + extend(0, [(h_live(1), ln_raw(0xffffffff))]) + \
        extend(0, [(h_raw(0xffffffff, 1), tok(1))]) + release(0, [h_live(0), h_live(1)])

    s['reserve-zero'] = header(pt=1, pages=10, rows=3, rt_pages=8, reserve=True) + \
        alloc(0, 3) + alloc(0, 2) + extend(0, [(h_small(0, 0), tok(1))]) + \
        extend(0, [(h_small(0, 1), tok(1))]) + query(0, h_small(0, 0)) + \
        extend(0, [(h_live(0), tok(5)), (h_live(1), tok(4))]) + \
        extend(0, [(h_live(1), tok(5))]) + evict(0, 1, plist(p_small(0))) + \
        attach(0, h_live(0), 1, plist(p_small(0))) + release(0, [h_live(0), h_live(1)])

    s['generation-wrap'] = header(pt=1, pages=16, rows=2, rt_pages=4, gen_wrap=True) + \
        b''.join(alloc(0) + release(0, [h_live(0)]) for _ in range(4)) + \
        alloc(0) + to_slot(0, h_live(0), sess(1)) + from_slot(0, sess(1)) + \
        to_slot(0, h_live(0), sess(1)) + from_slot(0, sess(1)) + \
        release(0, [h_known(0)]) + release(0, [h_known(3)]) + release(0, [h_live(0)])

    s['epoch-wrap'] = header(pt=1, pages=32, rows=4, rt_pages=8, epoch_wrap=True) + \
        alloc(0, 3) + b''.join(
            commit(0, [(h_live(0), tok(0)), (h_live(1), tok(0)), (h_live(0), tok(0))]) +
            trim(0, [h_live(0), h_live(1), h_live(2)]) for _ in range(4)) + \
        release(0, [h_live(0), h_live(1), h_live(2)])

    s['evict-errors'] = header(pt=1, pages=32, rows=4, rt_pages=8) + \
        alloc(0) + alloc(1) + extend(0, [(h_live(0), tok(4))]) + \
        extend(1, [(h_live(0), tok(4))]) + commit(0, [(h_live(0), tok(4))]) + \
        commit(1, [(h_live(0), tok(4))]) + donate(0, [(h_live(0), tok(4))]) + \
        donate(1, [(h_live(0), tok(3))]) + release(0, [h_live(0)]) + \
        evict(0, 2, plist(p_own(0), p_own(0))) + evict(0, 1, plist(p_any_cache(4))) + \
        evict(0, 1, plist(p_none())) + evict(0, 1, plist(p_raw(0x80000000))) + \
        evict(0, 1, plist(p_mapped(0))) + evict(1, 1) + \
        evict(0, 3, plist(p_own(0), p_own(1), p_small(40))) + evict(0, 4)

    s['attach-errors'] = header(pt=2, pages=32, rows=5, rt_pages=8) + \
        alloc(0, 2) + extend(0, [(h_live(0), tok(8))]) + \
        commit(0, [(h_live(0), tok(8))]) + donate(0, [(h_live(0), tok(8))]) + \
        attach(0, h_live(0), 1) + attach(0, h_live(1), 2, plist(p_own(0), p_own(0))) + \
        attach(0, h_live(1), 1, plist(p_mapped(1))) + alloc(1) + \
        attach(1, h_live(0), 1, plist(p_any_cache(0))) + \
        attach(0, h_live(1), 1, plist(p_none())) + attach(0, h_live(1), 5) + \
        attach(0, h_live(1), 4) + attach(0, h_known(2), 1) + \
        release(0, [h_live(0)]) + evict(0, 4) + release(0, [h_live(0)]) + evict(0, 4)

    s['donate-errors'] = header(pt=4, pages=32, rows=4, rt_pages=8) + \
        alloc(0) + extend(0, [(h_live(0), tok(14))]) + \
        commit(0, [(h_live(0), tok(10))]) + donate(0, [(h_live(0), tok(11))]) + \
        donate(0, [(h_live(0), tok(0))]) + donate(0, [(h_live(0), tok(3))]) + \
        donate(0, [(h_live(0), tok(10))]) + donate(0, [(h_live(0), tok(8))]) + \
        donate(0, [(h_live(0), tok(9))]) + donate(0, [(h_live(0), tok(10))], resv=1) + \
        commit(0, [(h_live(0), tok(14))]) + donate(0, [(h_live(0), ln(COMMITTED))]) + \
        trim(0, [h_live(0)]) + to_slot(0, h_live(0), sess(0)) + \
        slot_release(0, sess(0)) + evict(0, 2)

    s['slot-borrowed'] = header(pt=1, pages=32, rows=6, rt_pages=16) + \
        alloc(0) + extend(0, [(h_live(0), tok(6))]) + commit(0, [(h_live(0), tok(6))]) + \
        donate(0, [(h_live(0), tok(4))]) + alloc(0) + attach(0, h_live(1), 4) + \
        extend(0, [(h_live(1), tok(7))]) + to_slot(0, h_live(1), sess(8)) + \
        to_slot(0, h_live(0), sess(9)) + evict(0, 4) + query_slot(0, sess(8)) + \
        from_slot(0, sess(8)) + slot_release(0, sess(9)) + evict(0, 4) + \
        release(0, [h_live(0)]) + evict(0, 4)

    s['sessions-special'] = header(pt=1, pages=32, rows=6, rt_pages=8) + \
        alloc(0, 4) + to_slot(0, h_live(0), sess_special('ALL_ONES')) + \
        to_slot(0, h_live(0), sess_special('GOLDEN')) + \
        to_slot(0, h_live(0), sess_special('BIT58')) + \
        to_slot(0, h_live(0), sess_special('RAW', 0xdeadbeefcafe)) + \
        query_slot(0, sess_special('RAW', 0xdeadbeefcafe)) + \
        from_slot(1, sess_special('ANY_SLOT')) + \
        slot_release(1, sess_special('ANY_SLOT')) + \
        query_slot(0, sess_special('64')) + \
        from_slot(0, sess_special('GOLDEN')) + \
        slot_release(0, sess_special('ALL_ONES')) + reopen(0)

    s['exhaust-and-reuse'] = header(pt=1, pages=20, rows=4, rt_pages=20) + \
        alloc(0, 3) + extend(0, [(h_live(0), tok(10)), (h_live(1), tok(10))]) + \
        extend(0, [(h_live(2), tok(1))]) + alloc(1) + alloc(1) + \
        release(0, [h_live(1)]) + extend(1, [(h_live(0), tok(10))]) + \
        extend(0, [(h_live(1), tok(1))]) + trim(1, [h_live(0)]) + \
        extend(0, [(h_live(1), tok(10))]) + stats(0) + reopen(0) + \
        extend(1, [(h_live(0), tok(20))]) + stats(1)

    s['unknown-flags'] = header(pt=1, pages=16, rows=4, rt_pages=8) + \
        alloc(0) + release(0, [h_live(0)], flags=2) + \
        release(0, [h_live(0)], flags=3) + release(0, [h_live(0)], flags='high') + \
        op(RELEASE, 0, bytes([C['FZ_REL_ODD'] | C['FZ_REL_ODD_RAW']]),
           u32(0xfffffffe), count(1), h_live(0)) + \
        release(0, [h_live(0)], flags=1)

    s['reserved-fields'] = header(pt=1, pages=16, rows=4, rt_pages=8) + \
        alloc(0, 2) + extend(0, [(h_live(0), tok(4)), (h_live(1), tok(4))]) + \
        commit(0, [(h_live(0), tok(2)), (h_live(1), tok(2))], resv=2) + \
        swa(0, [(h_live(0), tok(1))], resv=1) + \
        donate(0, [(h_live(0), tok(1))], resv=1) + \
        commit(0, [(h_live(0), tok(2)), (h_live(1), tok(5))]) + \
        commit(0, [(h_live(0), tok(2)), (h_known(9), tok(2))])

    s['first-bad-entry'] = header(pt=1, pages=16, rows=4, rt_pages=8) + \
        alloc(0, 2) + extend(0, [(h_live(0), tok(4)), (h_live(1), tok(4))]) + \
        extend(0, [(h_live(0), tok(1)), (h_live(1, +1), tok(5))]) + \
        commit(0, [(h_live(0), tok(5)), (h_small(9, 1), tok(1))])

    s['big-rows'] = header(pt=1, pages=257, rows=3, rt_pages=64, rt_adj=2) + \
        alloc(0, 2) + extend(0, [(h_live(0), ln(RT, 0))]) + \
        extend(0, [(h_live(1), tok(17)), (h_live(0), ln(RT, 0))]) + \
        extend(0, [(h_live(1), tok(33))]) + extend(0, [(h_live(1), ln(RT, 0))]) + \
        commit(0, [(h_live(1), ln(ALLOCD))]) + swa(0, [(h_live(1), tok(40))]) + \
        donate(0, [(h_live(1), tok(50))]) + query(0, h_live(1)) + \
        to_slot(0, h_live(1), sess(1)) + reopen(0)

    s['page-tokens-64'] = header(pt=64, pages=24, rows=4, rt_pages=8, rt_adj=3) + \
        alloc(0) + extend(0, [(h_live(0), tok(8))]) + commit(0, [(h_live(0), tok(8))]) + \
        donate(0, [(h_live(0), tok(8))]) + swa(0, [(h_live(0), tok(8))]) + \
        attach(0, h_live(0), 1) + release(0, [h_live(0)], flags=1)

    s['page-tokens-5'] = header(pt=5, pages=60, rows=6, rt_pages=12, rt_adj=2) + \
        alloc(2, 2) + extend(2, [(h_live(0), ln(RT, 0)), (h_live(1), tok(11))]) + \
        commit(2, [(h_live(0), tok(26)), (h_live(1), tok(10))]) + \
        donate(2, [(h_live(0), tok(26))]) + swa(2, [(h_live(0), tok(26))]) + \
        swa(2, [(h_live(1), tok(5))]) + donate(2, [(h_live(1), tok(10))]) + \
        trim(2, [h_live(0), h_live(1)]) + alloc(2) + attach(2, h_live(2), 5) + \
        release(2, [h_live(0), h_live(1)], flags=1) + evict(2, 4) + reopen(2)

    s['export-import'] = header(pt=2, pages=64, rows=8, rt_pages=16, four=True) + \
        alloc(0, 3) + extend(0, [(h_live(0), tok(9)), (h_live(1), tok(4))]) + \
        commit(0, [(h_live(0), tok(8))]) + donate(0, [(h_live(0), tok(8))]) + \
        to_slot(0, h_live(1), sess(5)) + export_row(0, h_live(0)) + \
        export_slot(0, sess(5)) + export_slot(0, sess(5)) + stats(0) + \
        import_(1, 0) + import_(1, 0) + import_(2, not_exported=3) + \
        query(1, h_live(0)) + release(1, [h_live(0)]) + drop(0) + \
        export_row(0, h_live(0)) + reopen(0) + import_(3, 0) + stats(3)

    s['export-borrowed-busy'] = header(pt=1, pages=32, rows=6, rt_pages=16) + \
        alloc(0) + extend(0, [(h_live(0), tok(6))]) + commit(0, [(h_live(0), tok(6))]) + \
        donate(0, [(h_live(0), tok(4))]) + alloc(0) + attach(0, h_live(1), 4) + \
        export_row(0, h_live(0)) + export_row(0, h_live(1)) + \
        release(0, [h_live(0)]) + export_row(0, h_live(0)) + \
        import_(1, 0) + evict(0, 4) + release(1, [h_live(0)]) + stats(0)

    s['export-drop-close'] = header(pt=4, pages=48, rows=6, rt_pages=8) + \
        alloc(1, 2) + extend(1, [(h_live(0), pg(3)), (h_live(1), pg(2))]) + \
        export_row(1, h_live(0)) + reopen(1) + stats(0) + \
        fail(0, 1) + import_(0, 0) + import_(0, 0) + \
        export_row(0, h_live(0)) + drop(0) + drop(0) + stats(0)

    s['tenants-quota'] = header(pt=1, pages=100, rows=10, rt_pages=40, tenants=True) + \
        tenant(cgroup=0, max_share=40, rows=3) + \
        alloc(0, 3) + alloc(0, 1) + alloc(2, 1) + alloc(1, 4) + \
        extend(0, [(h_live(0), tok(30))]) + extend(0, [(h_live(1), tok(30))]) + \
        extend(1, [(h_live(0), tok(30))]) + tenant(by_id=True, tid=0) + \
        extend(0, [(h_live(1), tok(30))]) + pressure(0) + stats(0)

    s['tenants-guarantee'] = header(pt=1, pages=60, rows=10, rt_pages=60, tenants=True) + \
        tenant(cgroup=1, min_share=239) + alloc(0, 2) + \
        extend(0, [(h_live(0), tok(40))]) + extend(0, [(h_live(1), tok(20))]) + \
        commit(0, [(h_live(0), tok(40))]) + donate(0, [(h_live(0), tok(40))]) + \
        release(0, [h_live(0)]) + pressure(0) + pressure(1) + alloc(1) + \
        extend(1, [(h_live(0), tok(30))]) + pressure(0) + evict(0, 8) + \
        extend(1, [(h_live(0), tok(30))]) + reopen(1) + \
        tenant(by_id=True, tid=1, min_share=0xff) + tenant(cgroup=2, uid=1, max_share=10, min_share=100) + \
        tenant(by_id=True, tid=7) + tenant(bad_flags=True) + tenant(label=2) + \
        tenant(label=3) + tenant(cgroup=1, label=1) + stats(1)

    s['tenants-import-quota'] = header(pt=1, pages=64, rows=8, rt_pages=32, tenants=True) + \
        tenant(cgroup=1, max_share=30, rows=1) + alloc(0, 2) + \
        extend(0, [(h_live(0), tok(20)), (h_live(1), tok(5))]) + \
        export_row(0, h_live(0)) + export_row(0, h_live(0)) + \
        import_(1, 0) + import_(1, 1) + import_(1, 0) + import_(3, 0) + reopen(1)

    s['wmark-pressure'] = header(pt=1, pages=100, rows=6, rt_pages=64) + \
        wmark(50, 100) + wmark(100, 50) + wmark(0, 201) + alloc(0) + \
        extend(0, [(h_live(0), tok(60))]) + commit(0, [(h_live(0), tok(60))]) + \
        donate(0, [(h_live(0), tok(50))]) + release(0, [h_live(0)]) + \
        alloc(1) + extend(1, [(h_live(0), tok(64))]) + pressure(0) + \
        pressure(1) + evict(0, 8) + pressure(0)

    s['tenant-list'] = header(pt=1, pages=64, rows=8, rt_pages=16, tenants=True, four=True) + \
        tenant(cgroup=2, max_share=50, label=1) + alloc(0) + alloc(1) + \
        extend(1, [(h_live(0), tok(9))]) + tenant_list(0) + tenant_list(1) + \
        tenant_list(5) + reopen(0, stay_closed=True) + reopen(2, stay_closed=True) + \
        tenant_list(5)

    s['geometry'] = header() + \
        geom(0, 1, 1, 1, 1) + geom(1, 1, 1, 2, 1) + geom(1, 2, 1, 2, 1) + \
        geom(0, 1 << 27, 65536, 1 << 20, 1 << 24) + \
        geom(0, (1 << 27) + 1, 1, 1, 1) + geom(0, 1, 65537, 1, 1) + \
        geom(0, 1, 1, (1 << 20) + 1, 1) + geom(0, 1, 1, 1, (1 << 24) + 1) + \
        geom(0, 0, 1, 1, 1) + geom(0, 1, 0, 1, 1) + geom(0, 1, 1, 0, 1) + \
        geom(0, 1, 1, 1, 0) + geom(C['FZ_GEOM_ODD_FLAG'] | 1, 8, 1, 8, 8) + \
        geom(C['FZ_GEOM_ODD_FLAG'] | 15, 8, 1, 8, 8)

    s['big-cache'] = header(pt=1, pages=257, rows=6, rt_pages=64) + \
        alloc(0, 3) + extend(0, [(h_live(0), ln(RT, 0)), (h_live(1), ln(RT, 0)),
                                 (h_live(2), ln(RT, 0))]) + \
        commit(0, [(h_live(0), ln(ALLOCD)), (h_live(1), ln(ALLOCD)),
                   (h_live(2), ln(ALLOCD))]) + \
        donate(0, [(h_live(0), ln(COMMITTED)), (h_live(1), ln(COMMITTED))]) + \
        release(0, [h_live(0), h_live(1), h_live(2)], flags=1) + stats(0) + \
        alloc(0) + attach(0, h_live(0), 'max') + evict(0, 8) + \
        release(0, [h_live(0)]) + evict(0, 'max') + reopen(0)

    return s


def workload(seed, nops=60):
    """A scheduler-like random walk over mostly valid ops, 4 clients."""
    rnd = random.Random(seed)
    pt = rnd.choice([1, 2, 4, 16])
    out = [header(pt=pt, pages=rnd.randrange(24, 200), rows=rnd.randrange(6, 40),
                  rt_pages=rnd.randrange(8, 48), reserve=rnd.random() < 0.5,
                  four=True, tenants=seed % 2 == 1)]
    for _ in range(nops):
        c = rnd.randrange(4)
        k = rnd.random()
        i, j = rnd.randrange(4), rnd.randrange(4)
        if k < 0.15:
            out.append(alloc(c, rnd.randrange(1, 4)))
        elif k < 0.35:
            ents = [(h_live(x), ln(ALLOCD, rnd.randrange(1, 3 * pt))) for x in
                    range(rnd.randrange(1, 4))]
            out.append(extend(c, ents))
        elif k < 0.45:
            out.append(commit(c, [(h_live(i), ln(ALLOCD))]))
        elif k < 0.5:
            out.append(trim(c, [h_live(i)]))
        elif k < 0.58:
            out.append(release(c, [h_live(i)], flags=rnd.randrange(2)))
        elif k < 0.63:
            out.append(donate(c, [(h_live(i), ln(COMMITTED))]))
        elif k < 0.68:
            out.append(attach(c, h_live(i), rnd.randrange(1, 4), plist_seq(j)))
        elif k < 0.72:
            out.append(evict(c, rnd.randrange(1, 3), plist_seq(j)))
        elif k < 0.76:
            out.append(swa(c, [(h_live(i), ln(COMMITTED, 0))]))
        elif k < 0.8:
            out.append(to_slot(c, h_live(i), sess(rnd.randrange(16))))
        elif k < 0.84:
            out.append(from_slot(c, sess_own(j)))
        elif k < 0.86:
            out.append(slot_release(c, sess_own(j)))
        elif k < 0.9:
            out.append(query(c, h_any(i)))
        elif k < 0.92:
            out.append(query_slot(c, sess_own(j)))
        elif k < 0.93:
            out.append(fail(c, rnd.randrange(1, 3)))
        elif k < 0.94:
            out.append(export_row(c, h_live(i)) if rnd.random() < 0.7
                       else import_(c, j))
        elif k < 0.95:
            out.append(pressure(c) if rnd.random() < 0.5 else drop(j))
        elif k < 0.97:
            out.append(reopen(c))
        else:
            out.append(stats(c))
    return b''.join(out)


def main():
    if len(sys.argv) != 2:
        sys.exit('usage: gen-corpus.py DIR')
    d = sys.argv[1]
    os.makedirs(d, exist_ok=True)
    files = scenarios()
    for n in range(8):
        files['workload-%d' % n] = workload(n)
    for name, data in sorted(files.items()):
        with open(os.path.join(d, name), 'wb') as f:
            f.write(data)
    print('%d inputs, %d bytes' % (len(files), sum(map(len, files.values()))))


if __name__ == '__main__':
    main()
