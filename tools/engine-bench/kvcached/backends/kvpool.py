# SPDX-License-Identifier: GPL-2.0-only
"""kvpool's side: one pool per model on one chunk budget, in a 6.1 guest
with kvpool.ko loaded (kvpool.sh runs run.py there).

The administrator's part (run.py, as root, before the engines start and
after they end) is make_budget()/make_pool()/teardown() below: one host
budget of the trace's GPU bytes in chunks, and on it one pool per engine
whose page is one block of that model (16 tokens, all layers, K and V),
so that three models of three geometries share the budget's chunks.
These ops are not in the Python binding (kvpool), so they go through
ctypes over libkvpool.so.1 (kvpool_budget_create() and the rest, node
KVPOOL_1.7); the binding does the pool ops.

An engine (Pool) opens its pool's device as an ordinary client and:

- alloc(n, have): a new request's blocks are a new row EXTENDed to n
  pages, a running request's next block is its row EXTENDed by one: one
  KVPOOL_EXTEND, all or nothing. A pool short of free pages takes chunks
  from the budget inside that EXTEND; ENOSPC (NoSpace) or EDQUOT takes
  nothing and is a refusal. Any other error is a fatal allocation
  failure (an engine would die on it): it is raised.
- free(ids): the row goes back with one RELEASE; the pool gives its
  wholly free chunks back to the budget after the op (watermarks 0, set
  by make_pool(): no hysteresis, so idle means no chunk held).
- available(): the pool's free pages plus what the budget's free chunks
  would back. It is advice, as vLLM's get_num_free_blocks() is: another
  pool may take those chunks before the EXTEND, which then refuses
  cleanly (a "race miss" that changed nothing).
- every new page is written once through the engine's shared mapping
  of the pool file (mmap of the pool fd, as kvpool_arena_map() maps a
  budget pool), as a KV write: the kernel backs the chunk on that touch.
- sample(): held bytes are the chunks the pool holds (sysfs
  /sys/class/kvpool/kvpoolN/chunks) times the chunk's bytes.

Scale: the guest cannot give a budget the trace's 12 GiB (a budget is at
most half the guest's RAM), so every real byte stands for KVB_SCALE
bytes of the GPU: the budget has the GPU's chunk count (12 GiB / 2 MiB)
of chunks of 2 MiB / KVB_SCALE, a page is a block's bytes / KVB_SCALE,
and every figure this module reports is multiplied back (GPU bytes), so
metrics.py reads the same units as on the other sides. Page counts,
chunk counts and pages per chunk are those of the 2 MiB GPU; only the
bytes the kernel zeroes when a chunk moves are KVB_SCALE times fewer.
"""
import array
import ctypes
import mmap
import os

import kvpool

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.abspath(os.path.join(HERE, '..', '..', '..', '..'))
GPU_CHUNK = 2 << 20  # what a chunk stands for: CUDA's granularity
ARENA_HOST = 1  # KVPOOL_ARENA_HOST (uapi/linux/kvpool.h)


class _Params(ctypes.Structure):
    """struct kvpool_pool_params (userlib/kvpool.h)."""
    _fields_ = [('nr_pages', ctypes.c_uint32),
                ('page_tokens', ctypes.c_uint32),
                ('nr_rows', ctypes.c_uint32),
                ('row_tokens', ctypes.c_uint32),
                ('flags', ctypes.c_uint32),
                ('gpu_domain', ctypes.c_uint32),
                ('gpu_devid', ctypes.c_uint32),
                ('resv', ctypes.c_uint32)]


class _Budget(ctypes.Structure):
    """struct kvpool_ctl_budget (uapi/linux/kvpool.h)."""
    _fields_ = [('size', ctypes.c_uint32), ('flags', ctypes.c_uint32),
                ('op', ctypes.c_uint32), ('budget_id', ctypes.c_uint32),
                ('kind', ctypes.c_uint32), ('nr_chunks', ctypes.c_uint32),
                ('chunk_bytes', ctypes.c_uint64),
                ('pool_id', ctypes.c_uint32), ('resv', ctypes.c_uint32),
                ('min_bytes', ctypes.c_uint64),
                ('max_bytes', ctypes.c_uint64),
                ('out_free_chunks', ctypes.c_uint32),
                ('out_nr_pools', ctypes.c_uint32),
                ('out_moves', ctypes.c_uint64),
                ('out_cleared_bytes', ctypes.c_uint64),
                ('out_clear_ns', ctypes.c_uint64)]


_LIB = None


def lib():
    global _LIB
    if _LIB is None:
        path = os.environ.get('KVB_LIBKVPOOL',
                              os.path.join(TOP, 'userlib', 'libkvpool.so.1'))
        _LIB = ctypes.CDLL(path, use_errno=True)
        _LIB.kvpool_budget_create.argtypes = [
            ctypes.c_uint32, ctypes.c_uint32, ctypes.c_uint64,
            ctypes.POINTER(ctypes.c_uint)]
        _LIB.kvpool_budget_destroy.argtypes = [ctypes.c_uint]
        _LIB.kvpool_budget_info.argtypes = [ctypes.c_uint,
                                            ctypes.POINTER(_Budget)]
        _LIB.kvpool_pool_create_budget.argtypes = [
            ctypes.POINTER(_Params), ctypes.c_uint, ctypes.c_uint64,
            ctypes.POINTER(ctypes.c_uint)]
    return _LIB


def _check(ret, what):
    if ret < 0:
        raise OSError(-ret, f'{what}: {os.strerror(-ret)}')


def scale():
    return int(os.environ.get('KVB_SCALE', '8'))


def chunk_bytes():
    """The real bytes of one chunk in the guest."""
    return GPU_CHUNK // scale()


def make_budget(gpu_bytes):
    """A host budget of gpu_bytes of GPU in 2 MiB chunks; its id."""
    bid = ctypes.c_uint()
    _check(lib().kvpool_budget_create(ARENA_HOST, gpu_bytes // GPU_CHUNK,
                                      chunk_bytes(), ctypes.byref(bid)),
           'kvpool_budget_create')
    return bid.value


def budget_info(bid):
    b = _Budget()
    _check(lib().kvpool_budget_info(bid, ctypes.byref(b)),
           'kvpool_budget_info')
    return {k: getattr(b, k) for k in ('nr_chunks', 'chunk_bytes',
                                       'out_free_chunks', 'out_nr_pools',
                                       'out_moves', 'out_cleared_bytes',
                                       'out_clear_ns')}


def make_pool(bid, geo, block_tokens, gpu_bytes, nr_rows=256,
              row_tokens=4096):
    """A pool on budget bid whose page is one of geo's blocks and whose
    id space could hold the whole GPU; watermarks 0 (every wholly free
    chunk goes back after the op that freed it). Its id."""
    block = block_tokens * geo['bytes_per_token']
    p = _Params(nr_pages=gpu_bytes // block, page_tokens=block_tokens,
                nr_rows=nr_rows, row_tokens=row_tokens)
    pid = ctypes.c_uint()
    _check(lib().kvpool_pool_create_budget(ctypes.byref(p), bid,
                                           block // scale(),
                                           ctypes.byref(pid)),
           'kvpool_pool_create_budget')
    kvpool.set_wmark(pid.value, 0, 0)
    return pid.value


def chunks(pool_id):
    """Chunks pool_id holds now (sysfs)."""
    with open(f'/sys/class/kvpool/kvpool{pool_id}/chunks') as f:
        return int(f.read())


def teardown(bid, pool_ids):
    """Destroy the pools and the budget; what the budget said first."""
    info = budget_info(bid)
    held = {p: chunks(p) for p in pool_ids}
    for p in pool_ids:
        kvpool.pool_destroy(p)
    _check(lib().kvpool_budget_destroy(bid), 'kvpool_budget_destroy')
    info['held_at_end'] = held
    return info


class Pool:
    rows = True  # alloc() takes the request's blocks so far (engine.py)

    def __init__(self, geo, block_tokens, pool_id, budget_id):
        self.p = kvpool.Pool(f'/dev/kvpool{pool_id}')
        self.pool_id, self.budget_id = pool_id, budget_id
        self.bt = block_tokens
        self.scale = scale()
        self.chunk = chunk_bytes()
        a = self.p.arena_info()
        self.page_bytes = a.page_bytes
        self.ppc = self.chunk // self.page_bytes
        self.nr_pages = self.p.info.nr_pages
        # The whole id space, shared: the kernel backs a chunk on first
        # touch and unmaps it when the pool gives it back.
        self.m = mmap.mmap(self.p.fileno(), a.bytes, mmap.MAP_SHARED,
                           mmap.PROT_READ | mmap.PROT_WRITE)
        self.row = {}  # first page of a request -> its row's handle
        self.extends = self.releases = self.refusals = 0

    def available(self):
        free = self.p.stats().free_pages
        b = _Budget()
        _check(lib().kvpool_budget_info(self.budget_id, ctypes.byref(b)),
               'kvpool_budget_info')
        return free + b.out_free_chunks * self.ppc

    def alloc(self, n, have=()):
        new = not have
        h = self.p.alloc_row() if new else self.row[have[0]]
        self.extends += 1
        try:
            pages = self.p.extend(array.array('Q', [h]),
                                  array.array('I', [(len(have) + n)
                                                    * self.bt]))
        except (kvpool.NoSpace, kvpool.QuotaExceeded):
            self.refusals += 1
            if new:
                self.p.release(array.array('Q', [h]))
            return None
        ids = list(pages)
        for pg in ids:  # the KV write that backs the page
            self.m[pg * self.page_bytes] = 1
        if new:
            self.row[ids[0]] = h
        return ids

    def free(self, ids):
        if ids:
            self.releases += 1
            self.p.release(array.array('Q', [self.row.pop(ids[0])]))

    def sample(self):
        c = chunks(self.pool_id)
        return {'held_bytes': c * self.chunk * self.scale, 'chunks': c}

    def describe(self):
        return {'blocks': self.nr_pages, 'pool_id': self.pool_id,
                'page_total': self.chunk * self.scale,
                'page_blocks': self.ppc,
                'page_bytes_real': self.page_bytes,
                'chunk_bytes_real': self.chunk, 'scale': self.scale}

    def close(self):
        left = len(self.row)
        if self.row:
            self.p.release(array.array('Q', self.row.values()))
            self.row.clear()
        st = self.p.stats()
        self.m.close()
        self.p.close()
        return {'leaked_rows': left, 'extends': self.extends,
                'releases': self.releases, 'kvpool_refusals': self.refusals,
                'free_pages_at_close': st.free_pages,
                'chunks_after_close': chunks(self.pool_id)}
