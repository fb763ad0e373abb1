# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
"""vLLM's block pool on a kvpool pool (docs/vllm.md).

vLLM 0.33 keeps a request's KV as a list of blocks per KV cache group,
handed out by ``vllm.v1.core.block_pool.BlockPool``: an LRU queue of
free blocks (prefix-cached ones among them, evicted as the queue
reaches them) and a hash map of cached blocks. ``BlockPool`` here is a
subclass that leaves all of that bookkeeping to vLLM's own code and
keeps, beside it, every block this process uses owned in the kernel:

- a block id *is* a kvpool page id (page 0, the pool's reserved page,
  is vLLM's null block), so the ids vLLM's block tables hold are pages
  no other process of the pool can take;
- a block a request holds (``ref_cnt > 0``) is held by a kvpool row of
  one page, committed whole; its handle (and so its generation) is the
  block's, and a block freed twice is a stale handle (ENOENT), never
  another block's page;
- a block vLLM caches (it has a hash) is a page of this client's
  prefix cache: DONATEd by its row while a request holds it, pinned by
  a row (ROW_ALLOC + ATTACH_PREFIX) whenever a request holds it, and
  evictable (no row) when none does;
- a block vLLM neither holds nor caches is a free page of the pool.

What moves pages is the kernel: ``get_new_blocks`` takes the pages the
kernel gives (one ROW_ALLOC, one EXTEND, one COMMIT, all or nothing)
after evicting (CACHE_EVICT) the cached blocks that vLLM's queue would
have reused for them, and keeps the queue the same as vLLM's up to a
renaming of the uncached free blocks, so that which prefixes survive,
and so every prefix hit, is what vLLM alone decides. The free count is
the kernel's (free pages plus this client's evictable cache), so a pool
shared with other processes shows its real room to the scheduler, and a
shortfall the count did not foresee makes ``allocate_slots`` return
None (the scheduler preempts) instead of raising.

``Scheduler`` and ``AsyncScheduler`` are vLLM's two schedulers with
this block pool under their KVCacheManager (``--scheduler-cls
kvpool.vllm.AsyncScheduler``); ``install`` does the same to a manager
made some other way.

vLLM is imported on first use of BlockPool, KVCacheManager, the
schedulers or ``install`` (``require()`` does it alone), which checks
its version. Supported: vLLM 0.33.x, full-attention KV cache
groups (one pool for all groups, as vLLM has one). Not done: a KV
connector that places the KV tensors in the pool's arena.
"""

import importlib
import os
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

import kvpool

SUPPORTED = "0.33"
"""The vLLM minor version this module is written against (0.33.x)."""


def check_version(version: str) -> None:
    """Raise RuntimeError unless version is a vLLM 0.33.x."""
    parts = version.split(".")
    if len(parts) < 2 or ".".join(parts[:2]) != SUPPORTED:
        raise RuntimeError("kvpool.vllm supports vLLM %s.x (>=%s.0,<%s); "
                           "this is vLLM %s"
                           % (SUPPORTED, SUPPORTED, _next_minor(SUPPORTED),
                              version))


def _next_minor(v: str) -> str:
    major, minor = v.split(".")
    return "%s.%d" % (major, int(minor) + 1)


__all__ = ["SUPPORTED", "check_version", "require", "PoolShortfall",
           "install", "register",
           "POOL_ENV"]

from kvpool.vllm_plugin import POOL_ENV  # noqa: E402

_Block = Any  # vllm.v1.core.kv_cache_utils.KVCacheBlock


def _u64(v: Sequence[int]) -> npt.NDArray[np.uint64]:
    return np.asarray(v, dtype=np.uint64)


def _i32(v: Sequence[int]) -> npt.NDArray[np.int32]:
    return np.asarray(v, dtype=np.int32)


class PoolShortfall(ValueError):
    """The kernel had fewer pages (or rows) than get_new_blocks asked
    for; nothing was taken. A ValueError, as vLLM's own shortfall is."""


def _build() -> dict[str, Any]:
    """BlockPool and KVCacheManager, made on first use (below): the
    module imports without vLLM, so that the package's checkers, and
    a process that never touches vLLM, do not need it; first use checks
    vLLM's version."""
    # The checkers need not have vLLM: they do not see the classes
    # (subclasses of vLLM's, so of Any to them).
    if TYPE_CHECKING:
        return {}
    else:
        vllm = importlib.import_module("vllm")
        check_version(getattr(vllm, "__version__", "?"))
        _bp: Any = importlib.import_module("vllm.v1.core.block_pool")
        _KVCacheManager: Any = importlib.import_module(
            "vllm.v1.core.kv_cache_manager").KVCacheManager

        class BlockPool(_bp.BlockPool):  # type: ignore[misc]
            """vLLM's ``BlockPool`` whose blocks are pages of ``pool``.

            The pool must have been made with reserve_zero, at most
            ``num_gpu_blocks`` pages and at least as many rows as pages; its
            page size is free (a block's row commits one whole page).
            """

            def __init__(self, pool: kvpool.Pool, num_gpu_blocks: int,
                         *args: Any, **kwargs: Any) -> None:
                info = pool.info
                if (info.nr_pages > num_gpu_blocks
                        or info.nr_rows < info.nr_pages):
                    raise ValueError(
                        "kvpool.vllm: pool %d has %d pages and %d rows; "
                        "vLLM has %d blocks (the pool needs at most as "
                        "many pages, and a row per page)"
                        % (info.pool_id, info.nr_pages, info.nr_rows,
                           num_gpu_blocks))
                super().__init__(num_gpu_blocks, *args, **kwargs)
                self.pool = pool
                self._pt = info.page_tokens
                # block id -> handle of its row
                self._row: dict[int, int] = {}
                # block ids in the kernel cache
                self._kcache: set[int] = set()
                self._n_evictable = 0              # in _kcache without a row

            # ---------------------------------------------------- kernel

            def _hashed(self, b: _Block) -> bool:
                return (b.block_hash is not None
                        or b.block_id in self.cached_block_hashes_by_block)

            def _sync(self, blocks: Iterable[_Block]) -> None:
                """Bring the kernel's state of each block to what vLLM's says
                (the module's docstring), in one call of each kind."""
                donate: list[int] = []
                attach: list[int] = []
                rel: list[int] = []
                rel_donate: list[int] = []
                evict: list[int] = []
                seen: set[int] = set()
                for b in blocks:
                    i = b.block_id
                    if b.is_null or i in seen or (b.pool is not None
                                                  and b.pool is not self):
                        continue
                    seen.add(i)
                    h = self._row.get(i)
                    kc = i in self._kcache
                    hashed = self._hashed(b)
                    if b.ref_cnt > 0:
                        if h is None:
                            # Only a cached block is held without a row: a hit.
                            assert kc, "block %d is held but not owned" % i
                            attach.append(i)
                        elif hashed and not kc:
                            donate.append(i)
                        # A pinned page that lost its hash stays cached until
                        # its row goes (the kernel cannot un-cache it).
                    elif h is not None:
                        if hashed and not kc:
                            rel_donate.append(i)
                        else:
                            rel.append(i)
                            if kc and not hashed:
                                evict.append(i)
                    elif kc and not hashed:
                        evict.append(i)
                p = self.pool
                if donate:
                    p.donate(_u64([self._row[i] for i in donate]),
                             _i32([self._pt] * len(donate)))
                    self._kcache.update(donate)
                if attach:
                    hs = p.alloc_rows(len(attach))
                    for i, h in zip(attach, hs):
                        p.attach_prefix(int(h), _i32([i]))
                        self._row[i] = int(h)
                    self._n_evictable -= len(attach)
                for group, give in ((rel, False), (rel_donate, True)):
                    if not group:
                        continue
                    p.release(_u64([self._row.pop(i) for i in group]),
                              donate=give)
                    for i in group:
                        if give or i in self._kcache:
                            self._kcache.add(i)
                            self._n_evictable += 1
                if evict:
                    p.cache_evict(_i32(evict))
                    self._kcache.difference_update(evict)
                    self._n_evictable -= len(evict)

            def _take_pages(self, n: int) -> list[int]:
                """n pages from the kernel, each held by a new row; all or
                none."""
                try:
                    hs = self.pool.alloc_rows(n)
                except kvpool.NoSpace:
                    raise PoolShortfall("kvpool: no %d free rows"
                                        % n) from None
                lens = _i32([self._pt] * n)
                try:
                    pages = self.pool.extend(hs, lens)
                except kvpool.NoSpace:
                    self.pool.release(hs)
                    raise PoolShortfall("kvpool: cannot get %d free blocks "
                                        "from the pool" % n) from None
                self.pool.commit(hs, lens)
                out = [int(x) for x in pages]
                for i, h in zip(out, hs):
                    self._row[i] = int(h)
                return out

            # ------------------------------------------------------ vLLM's API

            def get_num_free_blocks(self) -> int:
                return int(self.pool.stats().free_pages) + self._n_evictable

            def get_new_blocks(self, num_blocks: int) -> list[_Block]:
                if num_blocks > self.get_num_free_blocks():
                    raise ValueError(f"Cannot get {num_blocks} free blocks "
                                     "from the pool")
                q = self.free_block_queue
                # The blocks vLLM would pop: the cached ones among them are
                # evicted (their pages go back to the kernel) ...
                window: list[Any] = []
                b = q.fake_free_list_head.next_free_block
                tail = q.fake_free_list_tail
                while len(window) < num_blocks and b is not tail:
                    window.append(b)
                    b = b.next_free_block
                if self.enable_caching:
                    for b in window:
                        self._maybe_evict_cached_block(b)
                    self._sync(window)
                pages = self._take_pages(num_blocks)
                got = [self.blocks[i] for i in pages]
                if self._reuse_watchers:
                    self._notify_reuse(got)
                # ... and the queue loses its first num_blocks entries, as
                # vLLM's does: a window block the kernel did not give takes the
                # place of one it gave from further on (uncached free blocks
                # are interchangeable), then the given blocks leave the queue.
                gotset = set(pages)
                spare = [w for w in window if w.block_id not in gotset]
                wset = {w.block_id for w in window}
                for g in got:
                    if g.block_id in wset:
                        continue
                    w = spare.pop()
                    q.remove(w)
                    prev = g.prev_free_block
                    prev.next_free_block = w
                    w.prev_free_block = prev
                    w.next_free_block = g
                    g.prev_free_block = w
                    q.num_free_blocks += 1
                for g in got:
                    assert g.ref_cnt == 0 and g.block_hash is None, \
                        "the kernel gave block %d, which vLLM holds" \
                        % g.block_id
                    q.remove(g)
                    g.ref_cnt += 1
                    if self.metrics_collector:
                        self.metrics_collector.on_block_allocated(g)
                return got

            def touch(self, blocks: Sequence[_Block]) -> None:
                super().touch(blocks)
                self._sync(blocks)

            def free_blocks(self, ordered_blocks: Iterable[_Block]) -> None:
                blocks = list(ordered_blocks)
                super().free_blocks(blocks)
                self._sync(blocks)

            def unpin_blocks(self, blocks: Iterable[_Block],
                             on_reuse: Any) -> None:
                blocks = list(blocks)
                super().unpin_blocks(blocks, on_reuse)
                self._sync(blocks)

            def cache_full_blocks(self, request: Any, blocks: list[_Block],
                                  num_cached_blocks: int, num_full_blocks: int,
                                  *args: Any, **kwargs: Any) -> None:
                super().cache_full_blocks(request, blocks, num_cached_blocks,
                                          num_full_blocks, *args, **kwargs)
                self._sync(blocks[num_cached_blocks:num_full_blocks])

            def cache_partial_block(self, request: Any, block: _Block,
                                    *args: Any, **kwargs: Any) -> Any:
                r = super().cache_partial_block(request, block, *args,
                                                **kwargs)
                self._sync([block])
                return r

            def move_block_hashes(self, src_block: _Block,
                                  dst_block: _Block) -> None:
                super().move_block_hashes(src_block, dst_block)
                self._sync([src_block, dst_block])

            def evict_blocks(self, block_ids: set[int]) -> None:
                super().evict_blocks(block_ids)
                self._sync([self.blocks[i] for i in block_ids])

            def reset_prefix_cache(self) -> bool:
                # vLLM refuses when a block is in use, by the free
                # count; the kernel's also counts other clients' pages,
                # so vLLM's own queue is what it must read here.
                q = self.free_block_queue
                self.get_num_free_blocks = lambda: q.num_free_blocks
                try:
                    ok: bool = super().reset_prefix_cache()
                finally:
                    del self.get_num_free_blocks
                if ok:
                    self._sync([self.blocks[i] for i in list(self._kcache)])
                return ok

            # get_cached_block, get_usage (through get_num_free_blocks) and
            # take_events are vLLM's own: they read only what vLLM keeps.

            def kernel_pages(self) -> dict[int, bool]:
                """For checks: block id -> whether its page is in the kernel
                cache, for every block this pool holds a row or cache page
                of."""
                out = {i: False for i in self._row}
                out.update({i: True for i in self._kcache})
                return out


        class KVCacheManager(_KVCacheManager):  # type: ignore[misc]
            """vLLM's KVCacheManager whose ``allocate_slots`` returns None when
            the pool refuses blocks its free count promised (another process of
            the pool took them first), after undoing the request's part of the
            call, so the scheduler preempts as it does for a full pool."""

            def allocate_slots(self, request: Any, *args: Any,
                               **kwargs: Any) -> Any:
                rid = request.request_id
                mgrs = self.coordinator.single_type_managers
                before = [(len(m.req_to_blocks[rid]),
                           m.num_cached_block.get(rid))
                          if rid in m.req_to_blocks else None for m in mgrs]
                try:
                    return super().allocate_slots(request, *args, **kwargs)
                except PoolShortfall:
                    for m, was in zip(mgrs, before):
                        if was is None:
                            # A new request: what the call gave it (touched
                            # prefix hits) goes as a finished request's does.
                            if rid in m.req_to_blocks:
                                m.free(rid)
                            continue
                        n, cached = was
                        blocks = m.req_to_blocks[rid]
                        extra = blocks[n:]
                        del blocks[n:]
                        if cached is None:
                            m.num_cached_block.pop(rid, None)
                        else:
                            m.num_cached_block[rid] = cached
                        self.block_pool.free_blocks(reversed(extra))
                    return None

        for c in (BlockPool, KVCacheManager):
            c.__module__ = __name__
            c.__qualname__ = c.__name__
        return {"BlockPool": BlockPool, "KVCacheManager": KVCacheManager}


_built: dict[str, Any] = {}


def require() -> None:
    """Import vLLM's classes this module builds on and make its own:
    RuntimeError, naming the supported range, on another vLLM version
    (ImportError without vLLM). Done by first use of anything below."""
    if not _built:
        _built.update(_build())


def install(manager: Any, pool: kvpool.Pool) -> Any:
    """Put a kvpool BlockPool under a new vLLM KVCacheManager (one that
    has handed out no block yet), in place of the BlockPool vLLM made."""
    require()
    old = manager.block_pool
    if old.get_num_free_blocks() != old.num_gpu_blocks - 1:
        raise RuntimeError("kvpool.vllm: the manager has blocks in use")
    new = _built["BlockPool"](pool, old.num_gpu_blocks, old.enable_caching,
                    old.hash_block_size,
                    enable_kv_cache_events=old.enable_kv_cache_events,
                    metrics_collector=old.metrics_collector,
                    num_hash_lookahead_tokens=old.num_hash_lookahead_tokens,
                    medium=old.medium)
    coord = manager.coordinator
    coord.block_pool = new
    manager.block_pool = new
    for m in coord.single_type_managers:
        if m.block_pool is not old:
            raise RuntimeError("kvpool.vllm: a KV cache group has a block "
                               "pool of its own (%s)" % type(m).__name__)
        m.block_pool = new
        m._null_block = new.null_block
    # Only methods are added: the object's state is vLLM's.
    mgr = _built["KVCacheManager"]
    if not isinstance(manager, mgr):
        manager.__class__ = type("KvpoolKVCacheManager",
                                 (mgr, type(manager)), {})
    return new


_SCHEDULERS = {
    # name here: (vLLM's module, its class)
    "Scheduler": ("vllm.v1.core.sched.scheduler", "Scheduler"),
    "AsyncScheduler": ("vllm.v1.core.sched.async_scheduler",
                       "AsyncScheduler"),
}


def _make_scheduler(name: str) -> type:
    require()
    mod, cls = _SCHEDULERS[name]
    base: Any = getattr(importlib.import_module(mod), cls)

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        base.__init__(self, *args, **kwargs)
        self.kvpool = kvpool.Pool(os.environ.get(POOL_ENV)
                                  or kvpool.DEFAULT_PATH)
        install(self.kv_cache_manager, self.kvpool)

    doc = ("vLLM's %s on a kvpool pool: ``--scheduler-cls kvpool.vllm.%s`` "
           "(``SchedulerConfig.scheduler_cls``). The pool is "
           "$KVPOOL_VLLM_POOL, else kvpool's default device." % (cls, name))
    t = type(name, (base,), {"__init__": __init__, "__doc__": doc,
                             "__module__": __name__})
    t.__qualname__ = name
    return t


def __getattr__(name: str) -> Any:
    # vLLM's scheduler modules import much of its engine (structured
    # output, the KV connectors); the block pool needs none of it, so
    # the schedulers are made on first use (vLLM's qualname lookup of
    # kvpool.vllm.Scheduler is one).
    if name in _SCHEDULERS:
        cls = _make_scheduler(name)
        globals()[name] = cls
        return cls
    if name in ("BlockPool", "KVCacheManager"):
        require()
        return _built[name]
    raise AttributeError("module %r has no attribute %r" % (__name__, name))


from kvpool.vllm_plugin import register  # noqa: E402,F401
