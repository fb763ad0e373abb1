# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
"""SGLang's request-row bookkeeping on a kvpool pool (docs/sglang.md).

SGLang 0.5.23 keeps a request's KV in two places: a row of
``ReqToTokenPool.req_to_token`` (``req.kv.req_pool_idx``) and the token
indices that row holds, handed out by a token allocator that never sees
the row. Here the row is a kvpool row and the tokens are the pages the
kernel gives it, so that another process cannot take them and a dead
one gives them back.

What this module replaces, with SGLang's signatures:

- ``ReqToTokenPool`` (``alloc``, ``alloc_rows``, ``free``, ``free_rows``,
  ``available_size``, ``req_to_token``, ``req_generation``);
- ``alloc_for_extend(batch)``: one ROW_ALLOC for the batch's new
  requests, one ATTACH_PREFIX for each request that matched the prefix
  cache, one EXTEND and one COMMIT for the whole batch;
- ``alloc_for_decode(batch, token_per_req)``: one EXTEND, one COMMIT;
- ``release_kv_cache(req, tree_cache, *, checkpoint)``: one RELEASE,
  with the donate flag when the tree inserts the request;
  ``release_kv_cache_batch`` does a list of requests in one RELEASE;
- ``StreamingSessions``: a streaming session's record kept between
  turns as a kvpool slot (TO_SLOT, FROM_SLOT, SLOT_RELEASE).

The module imports neither SGLang nor torch: it reads the attributes
SGLang's objects have (``batch.reqs``, ``req.kv`` ...). ``req_to_token``
is a torch tensor when torch can be imported and a numpy array
otherwise.

The types of SGLang's objects are the Protocols below: what this module
reads and writes of them, so that SGLang's own classes fit without
SGLang being imported.
"""

import importlib
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol, TypeAlias

import numpy as np
import numpy.typing as npt

import kvpool

# torch is optional and used here only as SGLang uses it, through its
# tensors' methods: it is Any to the type checkers, so that checking
# code that uses this module does not need torch (a 3 GB download).
torch: Any
try:
    torch = importlib.import_module("torch")
except ImportError:  # the binding's own tests run without torch
    torch = None

# req_to_token and the index tensors: torch tensors, or numpy arrays
# without torch.
Tensor: TypeAlias = Any
_Ints: TypeAlias = npt.NDArray[np.int64]

__all__ = [
    "KvInfo", "Session", "Req", "TreeCache", "Batch",
    "KvRecord", "ReqToTokenPool", "KVPoolTokenAllocator", "StreamingSessions",
    "alloc_for_extend", "alloc_for_decode", "release_kv_cache",
    "release_kv_cache_batch", "retract", "token_indices",
]

_NO_HANDLE = 0


# In these, what the module assigns is a plain attribute; what it only
# reads is a property, so that any attribute of a narrower type fits.


class KvInfo(Protocol):
    """What this module uses of SGLang's ``ReqKvInfo`` (KvRecord has it)."""

    req_pool_idx: int | None
    kv_committed_len: int
    kv_allocated_len: int

    @property
    def cache_protected_len(self) -> int: ...

    @property
    def holds_kv(self) -> bool: ...

    @property
    def is_kv_released(self) -> bool: ...

    def mark_kv_released(self) -> None: ...


class Session(Protocol):
    """What this module uses of SGLang's ``Session``."""

    @property
    def session_id(self) -> str: ...

    @property
    def streaming(self) -> bool: ...

    def finish_req(self, req: Any, /) -> Any: ...


class Req(Protocol):
    """What this module uses of SGLang's ``Req``; it also reads, where
    they exist, ``owned_kv_len()``, ``refresh_fill_ids()``,
    ``skip_radix_cache_insert`` and ``aborted``."""

    kv: KvInfo
    lock: Any
    output_ids: list[int]

    @property
    def rid(self) -> Any: ...

    @property
    def session(self) -> Session | None: ...

    @property
    def finished_len(self) -> int | None: ...

    @property
    def origin_input_ids(self) -> Sequence[int]: ...


class TreeCache(Protocol):
    """What this module uses of SGLang's tree cache (the radix tree);
    ``token_to_kv_pool_allocator`` is read where it exists."""

    @property
    def req_to_token_pool(self) -> "ReqToTokenPool": ...

    def unlock(self, lock: Any, /) -> Any: ...

    def on_release(self, req: Any, /, *, checkpointed: bool) -> Any: ...

    def claim_kv_row(self, req: Any, /) -> bool: ...

    def checkpoint(self, req: Any, /, *, up_to: int) -> Any: ...

    def prefix_device_indices(self, req: Any, /) -> Iterable[int]: ...

    def maybe_hand_to_session(self, req: Any, /) -> Any: ...


class Batch(Protocol):
    """What this module uses of SGLang's ``ScheduleBatch``."""

    @property
    def req_to_token_pool(self) -> "ReqToTokenPool": ...

    @property
    def tree_cache(self) -> TreeCache: ...

    @property
    def reqs(self) -> Sequence[Req]: ...

    @property
    def prefix_lens(self) -> Iterable[int]: ...

    @property
    def seq_lens_cpu(self) -> Any: ...

    @property
    def req_pool_indices(self) -> Any: ...

    @property
    def device(self) -> Any: ...


class KvRecord:
    """The fields of SGLang's ``ReqKvInfo`` that this module uses, for
    callers that do not import SGLang (SGLang's own record works too)."""

    def __init__(self) -> None:
        self.req_pool_idx: int | None = None
        self.cache_protected_len = 0
        self.cache_inserted_len = 0
        self.kv_committed_len = 0
        self.kv_allocated_len = 0
        self.component_evicted_seqlens: dict[str, int] = {}

    @property
    def holds_kv(self) -> bool:
        return self.req_pool_idx is not None

    @property
    def max_evicted_seqlen(self) -> int:
        return max(self.component_evicted_seqlens.values(), default=0)

    @property
    def is_kv_released(self) -> bool:
        return self.kv_allocated_len == 0 and self.max_evicted_seqlen == 0

    def mark_kv_released(self) -> None:
        self.kv_allocated_len = 0
        self.component_evicted_seqlens.clear()


def _i32(values: npt.ArrayLike) -> npt.NDArray[np.int32]:
    return np.ascontiguousarray(values, dtype=np.int32)


def _u64(values: npt.ArrayLike) -> npt.NDArray[np.uint64]:
    return np.ascontiguousarray(values, dtype=np.uint64)


def _as_list(values: Any) -> list[int]:
    if torch is not None and isinstance(values, torch.Tensor):
        got: list[int] = values.tolist()
        return got
    return [int(v) for v in values]


def _index_tensor(values: npt.ArrayLike, device: Any) -> Tensor:
    if torch is None:
        return np.asarray(values, dtype=np.int64)
    return torch.as_tensor(np.asarray(values, dtype=np.int64)).to(device)


def token_indices(pages: npt.ArrayLike, page_size: int, start: int,
                  end: int, first_page: int = 0) -> _Ints:
    """The token indices of row positions [start, end) when the row's pages,
    from page number first_page on, are ``pages``: SGLang's
    ``page * page_size + offset``."""
    pos = np.arange(start, end, dtype=np.int64)
    pg = np.asarray(pages, dtype=np.int64)[pos // page_size - first_page]
    return pg * page_size + pos % page_size


class ReqToTokenPool:
    """SGLang's ``ReqToTokenPool`` whose rows are kvpool rows.

    ``size`` rows are usable, numbered from 1 as in SGLang (row 0 is the
    padding row; the pool must be made with reserve_zero). The kvpool
    handle of each held row is kept in ``handles`` (numpy uint64, by
    ``req_pool_idx``); ``req_generation`` mirrors the handles'
    generations, which the kernel moves on every take of the row.
    """

    req_to_token: Tensor
    req_generation: Tensor

    def __init__(self, size: int, max_context_len: int, device: Any = "cpu",
                 enable_memory_saver: bool = False, *,
                 pool: kvpool.Pool | None = None,
                 path: str = kvpool.DEFAULT_PATH) -> None:
        self.pool = pool if pool is not None else kvpool.Pool(path)
        info = self.pool.info
        if info.nr_rows < size + 1 or info.row_tokens < max_context_len:
            raise ValueError("pool has %d rows of %d tokens; asked for %d "
                             "of %d" % (info.nr_rows - 1, info.row_tokens,
                                        size, max_context_len))
        self.size = size
        self._alloc_size = size + 1
        self.max_context_len = max_context_len
        self.device = device
        self.page_size = info.page_tokens
        if torch is not None:
            self.req_to_token = torch.zeros(
                (self._alloc_size, max_context_len), dtype=torch.int32,
                device=device)
            self.req_generation = torch.zeros(self._alloc_size,
                                              dtype=torch.int64)
        else:
            self.req_to_token = np.zeros((self._alloc_size, max_context_len),
                                         dtype=np.int32)
            self.req_generation = np.zeros(self._alloc_size, dtype=np.int64)
        self.handles = np.zeros(self._alloc_size, dtype=np.uint64)

    def write(self, indices: Any, values: Any) -> None:
        self.req_to_token[indices] = values

    def available_size(self) -> int:
        # Free rows of the pool, which other processes may share: what a
        # ROW_ALLOC could get now.
        return self.pool.stats().free_rows

    def handle(self, idx: int) -> int:
        h = int(self.handles[idx])
        if h == _NO_HANDLE:
            raise KeyError("row %d is not held here" % idx)
        return h

    def _bind(self, handle: int) -> int:
        idx = kvpool.handle_idx(handle)
        if idx >= self._alloc_size:
            # A shared pool may have more rows than this table: give it
            # back rather than write past req_to_token.
            self.pool.release(_u64([handle]))
            raise RuntimeError("pool row %d is beyond this table's %d rows"
                               % (idx, self.size))
        self.handles[idx] = handle
        self.req_generation[idx] = kvpool.handle_gen(handle)
        return idx

    def _unbind(self, idx: int) -> None:
        self.handles[idx] = _NO_HANDLE

    def alloc_rows(self, need_size: int) -> list[int] | None:
        """Take need_size rows in one ROW_ALLOC; None if there are not
        enough (nothing is taken then)."""
        if need_size == 0:
            return []
        try:
            hs = self.pool.alloc_rows(need_size)
        except kvpool.NoSpace:
            return None
        return [self._bind(int(h)) for h in hs]

    def alloc(self, reqs: Sequence[Req]) -> list[int] | None:
        reusing = [r for r in reqs if r.kv.holds_kv]
        assert all(r.kv.kv_allocated_len > 0 for r in reusing), \
            "a reused row must carry allocated KV"
        rows = self.alloc_rows(len(reqs) - len(reusing))
        if rows is None:
            return None
        it = iter(rows)
        for r in reqs:
            if not r.kv.holds_kv:
                r.kv.req_pool_idx = next(it)
        return [_row(r.kv) for r in reqs]

    def free_rows(self, indices: Iterable[int]) -> int:
        """RELEASE the rows (and every page they own) in one call."""
        idxs = list(indices)
        if not idxs:
            return 0
        freed = self.pool.release(_u64([self.handle(i) for i in idxs]))
        for i in idxs:
            self._unbind(i)
        return freed

    def free(self, req: Req) -> None:
        assert req.kv.holds_kv, "request must have req_pool_idx"
        self.free_rows([_row(req.kv)])
        req.kv.req_pool_idx = None

    def row_tokens(self, idx: int, end: int) -> _Ints:
        """Token indices of row idx's positions [0, end), from the kernel's
        page list (what req_to_token must hold)."""
        q = self.pool.row_query(self.handle(idx))
        assert q.pages is not None  # row_query() without a pages buffer
        return token_indices(q.pages, self.page_size, 0, end)


class KVPoolTokenAllocator:
    """The part of SGLang's token allocator the scheduler reads for
    capacity, answered by the pool; and ``free`` for what the radix tree
    evicts, which is CACHE_EVICT of those pages."""

    def __init__(self, pool: kvpool.Pool) -> None:
        self.pool = pool
        self.page_size = pool.info.page_tokens
        self.size = (pool.info.nr_pages - 1) * self.page_size

    def available_size(self) -> int:
        return self.pool.stats().free_pages * self.page_size

    def free(self, indices: Any) -> int:
        pages = np.unique(np.asarray(_as_list(indices), dtype=np.int64)
                          // self.page_size)
        if len(pages) == 0:
            return 0
        return self.pool.cache_evict(_i32(pages))


def _row(kv: KvInfo) -> int:
    """The row of a record that holds one (an error of the caller's
    bookkeeping otherwise)."""
    assert kv.req_pool_idx is not None, "the request holds no row"
    return kv.req_pool_idx


def _oom(what: str, need: int, tree_cache: TreeCache) -> RuntimeError:
    alloc = getattr(tree_cache, "token_to_kv_pool_allocator", None)
    avail = alloc.available_size() if alloc is not None else "?"
    return RuntimeError("%s out of memory. Try to lower your batch size.\n"
                        "Try to allocate %d tokens.\navailable=%s"
                        % (what, need, avail))


def _extend_rows(rtp: ReqToTokenPool, idxs: Sequence[int],
                 old_lens: Sequence[int], new_lens: Sequence[int],
                 tree_cache: TreeCache, what: str) -> Tensor:
    """One EXTEND of rows idxs to new_lens, one COMMIT, and req_to_token
    filled for positions [old_len, new_len); the new token indices in
    order (SGLang's out_cache_loc)."""
    handles = _u64([rtp.handle(i) for i in idxs])
    lens = _i32(new_lens)
    nr_new = np.zeros(len(idxs), dtype=np.int32)
    try:
        pages = rtp.pool.extend(handles, lens, nr_new=nr_new)
    except kvpool.NoSpace:
        raise _oom(what, int(sum(n - o for n, o in zip(new_lens, old_lens))),
                   tree_cache) from None
    rtp.pool.commit(handles, lens)
    ps = rtp.page_size
    out: list[_Ints] = []
    at = 0
    for i, idx in enumerate(idxs):
        old, new = int(old_lens[i]), int(new_lens[i])
        k = int(nr_new[i])
        mine = np.asarray(pages[at:at + k], dtype=np.int64)
        at += k
        if new == old:
            continue
        old_pages = -(-old // ps)
        pos = np.arange(old, new, dtype=np.int64)
        pg = np.empty(len(pos), dtype=np.int64)
        in_old = pos // ps < old_pages
        if in_old.any():
            # The last partial page, already in the row.
            first = (pos[in_old] // ps) * ps
            pg[in_old] = _as_list(rtp.req_to_token[idx, first[0]:first[0] + 1]
                                  )[0] // ps
        pg[~in_old] = mine[pos[~in_old] // ps - old_pages]
        tok = pg * ps + pos % ps
        rtp.write((idx, slice(old, new)), _index_tensor(tok, rtp.device)
                  .to(torch.int32) if torch is not None else tok)
        out.append(tok)
    flat = np.concatenate(out) if out else np.zeros(0, dtype=np.int64)
    return _index_tensor(flat, rtp.device)


def alloc_for_extend(batch: Batch) -> tuple[Tensor, Tensor, Tensor]:
    """SGLang's ``alloc_for_extend``: rows for the batch's new requests,
    their matched prefixes attached, every row extended to its
    ``seq_lens_cpu`` and committed; returns ``(out_cache_loc,
    req_pool_indices_device, req_pool_indices_cpu)``."""
    rtp = batch.req_to_token_pool
    tree = batch.tree_cache
    reqs = batch.reqs
    prefix_lens = [int(x) for x in batch.prefix_lens]
    seq_lens = _as_list(batch.seq_lens_cpu)
    fresh = [not r.kv.holds_kv for r in reqs]

    idxs = rtp.alloc(reqs)
    if idxs is None:
        raise RuntimeError(
            "alloc_req_slots runs out of memory. "
            "Please set a smaller number for `--max-running-requests`. "
            f"{rtp.available_size()=}, num_reqs={len(reqs)}, ")
    try:
        ps = rtp.page_size
        for r, new, plen in zip(reqs, fresh, prefix_lens):
            if not new or plen == 0:
                continue
            # The tree's match: pages of the client's prefix cache.
            loc = np.asarray(_as_list(tree.prefix_device_indices(r)),
                             dtype=np.int64)
            assert plen % ps == 0 and len(loc) >= plen
            rtp.pool.attach_prefix(rtp.handle(_row(r.kv)),
                                   _i32(loc[:plen:ps] // ps))
            rtp.write((_row(r.kv), slice(0, plen)),
                      _index_tensor(loc[:plen], rtp.device).to(torch.int32)
                      if torch is not None else loc[:plen])
        out = _extend_rows(rtp, idxs, prefix_lens, seq_lens, tree,
                           "Prefill")
    except BaseException:
        # All or nothing, as the kernel is: give back the rows this call
        # took (and the pins of their attached prefixes).
        taken = [_row(r.kv) for r, new in zip(reqs, fresh) if new]
        rtp.free_rows(taken)
        for r, new in zip(reqs, fresh):
            if new:
                r.kv.req_pool_idx = None
        raise
    for r, n in zip(reqs, seq_lens):
        r.kv.kv_allocated_len = n
        r.kv.kv_committed_len = n
        tree.maybe_hand_to_session(r)
    cpu: Tensor = np.asarray(idxs, dtype=np.int64)
    if torch is not None:
        cpu = torch.as_tensor(cpu)
        return out, cpu.to(batch.device), cpu
    return out, cpu, cpu


def alloc_for_decode(batch: Batch, token_per_req: int) -> Tensor:
    """SGLang's ``alloc_for_decode``: every row of the batch one EXTEND by
    token_per_req tokens and one COMMIT; returns out_cache_loc."""
    rtp = batch.req_to_token_pool
    idxs = _as_list(batch.req_pool_indices)
    old = _as_list(batch.seq_lens_cpu)
    new = [n + token_per_req for n in old]
    out = _extend_rows(rtp, idxs, old, new, batch.tree_cache, "Decode")
    for r in batch.reqs:
        r.kv.kv_allocated_len += token_per_req
        r.kv.kv_committed_len += token_per_req
    return out


def _owned_len(req: Req) -> int:
    f: Callable[[], int] | None = getattr(req, "owned_kv_len", None)
    return f() if f is not None else req.kv.kv_committed_len


def _forget(rtp: ReqToTokenPool, req: Req, tree_cache: TreeCache,
            checkpointed: bool) -> None:
    tree_cache.unlock(req.lock)
    req.lock = None
    tree_cache.on_release(req, checkpointed=checkpointed)
    rtp._unbind(_row(req.kv))
    req.kv.req_pool_idx = None
    req.kv.mark_kv_released()


def release_kv_cache_batch(reqs: Iterable[Req], tree_cache: TreeCache, *,
                           checkpoint: bool) -> int:
    """``release_kv_cache`` for a list of requests in one RELEASE (two when
    some donate and some do not, and one DONATE for a request whose
    insert stops short of its committed length)."""
    rtp = tree_cache.req_to_token_pool
    # donate flag -> [(req, inserted)]
    give: dict[bool, list[tuple[Req, bool]]] = {True: [], False: []}
    for req in reqs:
        assert (not req.kv.holds_kv) == req.kv.is_kv_released
        if not req.kv.holds_kv:
            continue
        if tree_cache.claim_kv_row(req):
            assert not req.kv.holds_kv
            continue
        ins = checkpoint and not getattr(req, "skip_radix_cache_insert",
                                         False)
        donate = ins
        if ins:
            upto = _owned_len(req)
            refresh: Callable[[], object] | None = getattr(
                req, "refresh_fill_ids", None)
            if refresh is not None:
                refresh()
            # The tree keys [protected, upto) of the row as it is in
            # req_to_token; the kernel moves those pages to this client's
            # cache in the RELEASE below.
            tree_cache.checkpoint(req, up_to=upto)
            if upto < req.kv.kv_committed_len:
                h = rtp.handle(_row(req.kv))
                rtp.pool.donate(_u64([h]), _i32([upto]))
                donate = False
        give[donate].append((req, ins))
    freed = 0
    for donate, group in give.items():
        if not group:
            continue
        hs = _u64([rtp.handle(_row(r.kv)) for r, _ in group])
        freed += rtp.pool.release(hs, donate=donate)
        for r, ins in group:
            _forget(rtp, r, tree_cache, checkpointed=ins)
    return freed


def release_kv_cache(req: Req, tree_cache: TreeCache, *,
                     checkpoint: bool) -> None:
    """SGLang's ``release_kv_cache``: the request's row given back in one
    RELEASE, its inserted prefix donated to the prefix cache when
    ``checkpoint``; a streaming session's turn goes to its slot."""
    release_kv_cache_batch([req], tree_cache, checkpoint=checkpoint)


def retract(req: Req, tree_cache: TreeCache) -> None:
    """A retraction: the row released without donating anything."""
    release_kv_cache(req, tree_cache, checkpoint=False)


class _Slot:
    def __init__(self, kv: KvInfo, sid: int) -> None:
        self.kv = kv
        self.sid = sid
        self.parked = False
        self.lock: Any = None


class StreamingSessions:
    """SGLang's ``StreamingSession`` on kvpool slots.

    A session takes its first turn's record at the row's allocation
    (``take``, nothing moves in the kernel); a finished or retracted turn
    parks the row in a slot (``try_cache_finished_req``: TO_SLOT, the
    handle dies); the next turn borrows it back (``lend``: FROM_SLOT,
    same ``req_pool_idx``, a new generation); ``release_session`` frees
    it (SLOT_RELEASE, or RELEASE if a turn holds it). SGLang's string
    session ids are mapped to the kernel's 64-bit ones here.
    """

    def __init__(self, req_to_token_pool: ReqToTokenPool,
                 tree_cache: TreeCache | None = None) -> None:
        self.rtp = req_to_token_pool
        self.cache = tree_cache
        self.slots: dict[str, _Slot] = {}
        self._next_sid = 1

    @staticmethod
    def _session(req: Req | None) -> Session | None:
        """req's session if it is a streaming one."""
        if req is None or req.session is None or not req.session.streaming:
            return None
        return req.session

    @classmethod
    def _streaming(cls, req: Req | None) -> bool:
        return cls._session(req) is not None

    def borrowed_slot(self, req: Req | None) -> _Slot | None:
        sess = self._session(req)
        if sess is None or req is None:
            return None
        s = self.slots.get(sess.session_id)
        return s if s is not None and s.kv is req.kv else None

    def take(self, req: Req) -> None:
        sess = self._session(req)
        if sess is None or self.borrowed_slot(req) is not None:
            return
        sid = sess.session_id
        assert sid not in self.slots, f"{sid=} already has a slot"
        s = _Slot(req.kv, self._next_sid)
        self._next_sid += 1
        s.lock, req.lock = req.lock, None
        self.slots[sid] = s

    def lend(self, req: Req, key_len: int) -> int | None:
        """The next turn borrows the slot's record; the prefix length it
        starts from (None if the session has no parked record)."""
        sess = self._session(req)
        if sess is None:
            return None
        s = self.slots.get(sess.session_id)
        if s is None or not s.parked:
            return None
        h, _ = self.rtp.pool.from_slot(s.sid)
        self.rtp._bind(h)
        s.parked = False
        req.kv = s.kv
        plen = min(s.kv.kv_committed_len, key_len)
        assert plen >= s.kv.cache_protected_len
        if plen < s.kv.kv_allocated_len:
            # SGLang frees the stale tail before the turn overwrites it; a
            # kvpool row can only drop what is past its committed length.
            assert plen == s.kv.kv_committed_len
            self.rtp.pool.trim(_u64([h]))
        s.kv.kv_allocated_len = plen
        s.kv.kv_committed_len = min(s.kv.kv_committed_len, plen)
        return plen

    def try_cache_finished_req(self, req: Req) -> bool:
        sess = self._session(req)
        if sess is None:
            return False
        s = self.borrowed_slot(req)
        assert s is not None, f"streaming {req.rid=} does not run on its slot"
        if getattr(req, "aborted", False):
            del self.slots[sess.session_id]
            req.lock, s.lock = s.lock, None
            return False
        fin = req.finished_len if req.finished_len is not None \
            else len(req.output_ids)
        target = len(req.origin_input_ids) + fin
        kv = req.kv
        if target < kv.kv_allocated_len:
            assert target >= kv.kv_committed_len, \
                "a turn's finish below its committed KV is not supported"
            self.rtp.pool.trim(_u64([self.rtp.handle(_row(kv))]))
            kv.kv_allocated_len = kv.kv_committed_len
        req.output_ids = req.output_ids[:fin]
        self.rtp.pool.to_slot(self.rtp.handle(_row(kv)), s.sid)
        self.rtp._unbind(_row(kv))
        s.parked = True
        req.kv = type(kv)()
        kv.kv_committed_len = min(target, kv.kv_allocated_len)
        sess.finish_req(req)
        return True

    def release_session(self, session_id: str) -> int:
        s = self.slots.pop(session_id, None)
        if s is None:
            return 0
        if self.cache is not None:
            self.cache.unlock(s.lock)
        if not s.kv.holds_kv:
            return 0
        if s.parked:
            freed = self.rtp.pool.slot_release(s.sid)
        else:
            freed = self.rtp.pool.release(
                _u64([self.rtp.handle(_row(s.kv))]))
            self.rtp._unbind(_row(s.kv))
        s.kv.req_pool_idx = None
        s.kv.mark_kv_released()
        return freed
