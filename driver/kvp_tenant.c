// SPDX-License-Identifier: GPL-2.0-only
/*
 * kvpool core: tenants, their limits and guarantees, and pressure.
 *
 * A tenant is the clients of one cgroup and uid, found by a hash of
 * both. Pages are charged to it as its clients' rows, slots and caches
 * take them (kvp_charge()); max_pages and max_rows refuse with EDQUOT,
 * and min_pages is a guarantee that other tenants' allocations cannot
 * eat into (kvp_available()). kvp_pressure_locked() is the eviction ask
 * of one client.
 */
#include "kvp_priv.h"

/* Pages @t may take: free ones less what others are guaranteed. */
u32 kvp_available(struct kvp_pool *pool, const struct kvp_tenant *t)
{
	u32 others = pool->unmet - kvp_unmet(t);

	return pool->free_pages > others ? pool->free_pages - others : 0;
}

/**
 * kvp_charge() - charge pages to a tenant
 * @pool: the pool
 * @t: the tenant
 * @delta: pages it holds more (fewer, when negative)
 *
 * Every change of &kvp_tenant.pages goes through here, so that
 * &kvp_pool.unmet, which kvp_available() reads on every allocation, stays
 * the sum it stands for without a walk of the tenants, and so that a
 * tenant that reaches its guarantee stops blocking the others.
 *
 * Context: @pool->lock held.
 */
void kvp_charge(struct kvp_pool *pool, struct kvp_tenant *t,
		int delta)
{
	pool->unmet -= kvp_unmet(t);
	t->pages += delta;
	pool->unmet += kvp_unmet(t);
	if (pool->blocked_tenant == t->id && !kvp_unmet(t))
		pool->blocked_tenant = KVP_NIL;
	/*
	 * Growth can raise the ask of @t's clients: above its guarantee
	 * while another tenant waits below its own, or over its limit.
	 * Watermark crossings are the caller's to report.
	 */
	if (delta > 0 &&
	    ((pool->blocked_tenant != KVP_NIL && pool->blocked_tenant != t->id &&
	      t->pages > t->min_pages) ||
	     (t->max_pages && t->pages > t->max_pages)))
		kvp_pressure_changed(pool);
}

static struct hlist_head *kvp_tenant_bucket(struct kvp_pool *pool,
					    u64 cgroup_id, u32 uid)
{
	return &pool->tenant_hash[hash_64(cgroup_id ^ ((u64)uid << 32),
					  KVP_TENANT_HASH_BITS)];
}

struct kvp_tenant *kvp_tenant_find(struct kvp_pool *pool,
				   u64 cgroup_id, u32 uid)
{
	struct kvp_tenant *t;

	hlist_for_each_entry(t, kvp_tenant_bucket(pool, cgroup_id, uid), hash)
		if (t->cgroup_id == cgroup_id && t->uid == uid)
			return t;
	return NULL;
}

int kvp_tenant_get(struct kvp_pool *pool, u64 cgroup_id, u32 uid,
		   struct kvp_tenant **out)
{
	struct kvp_tenant *t = kvp_tenant_find(pool, cgroup_id, uid);
	int ret;

	if (t) {
		*out = t;
		return 0;
	}
	if (pool->nr_tenants >= KVP_MAX_TENANTS)
		return -EMFILE;
	t = kvcalloc(1, sizeof(*t), GFP_KERNEL);
	if (!t)
		return -ENOMEM;
	ret = xa_alloc(&pool->tenants, &t->id, t,
		       XA_LIMIT(0, KVP_MAX_TENANTS - 1), GFP_KERNEL);
	if (ret) {
		kvfree(t);
		return ret == -EBUSY ? -EMFILE : ret;
	}
	t->cgroup_id = cgroup_id;
	t->uid = uid;
	INIT_LIST_HEAD(&t->clients);
	hlist_add_head(&t->hash, kvp_tenant_bucket(pool, cgroup_id, uid));
	pool->nr_tenants++;
	*out = t;
	return 0;
}

/* Forgets @t once nothing refers to it. */
void kvp_tenant_put(struct kvp_pool *pool, struct kvp_tenant *t)
{
	/* No client of it is waiting for pages any more. */
	if (!t->nr_clients && pool->blocked_tenant == t->id)
		pool->blocked_tenant = KVP_NIL;
	if (t->nr_clients || t->configured)
		return;
	hlist_del(&t->hash);
	xa_erase(&pool->tenants, t->id);
	pool->nr_tenants--;
	kvfree(t);
}

/*
 * Someone was refused: let pollers look at the pressure again. Refused
 * pages below its guarantee, @t now asks the tenants above theirs.
 */
void kvp_refused(struct kvp_pool *pool, struct kvp_tenant *t,
		 bool pages)
{
	if (pages && kvp_unmet(t))
		pool->blocked_tenant = t->id;
	kvp_pressure_changed(pool);
}

/**
 * kvp_tenant_set_locked() - set a tenant's limits (CTL_TENANT_SET)
 * @pool: the pool
 * @a: the request: the tenant by cgroup and uid, or with
 *     %KVPOOL_TENANT_BY_ID by id; written back with the tenant as it is
 *     now (id, cgroup, uid, label)
 *
 * A tenant named by cgroup and uid is made if it is new, so that limits
 * can be set before its first client opens the pool. The tenant becomes
 * configured: it stays, limits and all, while it has no clients. An empty
 * label keeps the old one.
 *
 * Context: @pool->lock held; may sleep (allocates).
 * Return: 0; -EOPNOTSUPP for a flag other than %KVPOOL_TENANT_BY_ID;
 * -EINVAL if a reserved field is set, the label has no NUL, min_pages is
 * above a non-zero max_pages, or the guarantees of all tenants together
 * would be more than the pool's unreserved pages (they could not all be
 * met); -ENOENT if no tenant has that id; -EMFILE or -ENOMEM if a new
 * tenant cannot be made. On error nothing changed and @a is untouched.
 */
int kvp_tenant_set_locked(struct kvp_pool *pool, struct kvpool_ctl_tenant *a)
{
	struct kvp_tenant *t;
	u64 sum_min;
	int ret;

	lockdep_assert_held(&pool->lock);
	if (a->flags & ~KVPOOL_TENANT_BY_ID)
		return -EOPNOTSUPP;
	if (a->__reserved || a->__reserved2 ||
	    !memchr(a->label, 0, sizeof(a->label)) ||
	    (a->max_pages && a->min_pages > a->max_pages))
		return -EINVAL;
	if (a->flags & KVPOOL_TENANT_BY_ID) {
		t = xa_load(&pool->tenants, a->tenant_id);
		if (!t)
			return -ENOENT;
	} else {
		t = kvp_tenant_find(pool, a->cgroup_id, a->uid);
	}
	/* Guarantees together must fit the pool, or they mean nothing. */
	sum_min = pool->sum_min - (t ? t->min_pages : 0) + a->min_pages;
	if (sum_min > pool->nr_pages - pool->reserved_pages)
		return -EINVAL;
	if (!t) {
		ret = kvp_tenant_get(pool, a->cgroup_id, a->uid, &t);
		if (ret)
			return ret;
	}

	pool->sum_min = sum_min;
	pool->unmet -= kvp_unmet(t);
	t->max_pages = a->max_pages;
	t->min_pages = a->min_pages;
	t->max_rows = a->max_rows;
	t->configured = true;
	pool->unmet += kvp_unmet(t);
	if (a->label[0])
		memcpy(t->label, a->label, sizeof(t->label));
	if (pool->blocked_tenant == t->id && !kvp_unmet(t))
		pool->blocked_tenant = KVP_NIL;
	kvp_pressure_changed(pool);
	a->tenant_id = t->id;
	a->cgroup_id = t->cgroup_id;
	a->uid = t->uid;
	memcpy(a->label, t->label, sizeof(a->label));
	return 0;
}

/**
 * kvp_set_wmark_locked() - set the free-page watermarks (CTL_SET_WMARK)
 * @pool: the pool
 * @low: below this many free pages, clients are asked to evict
 * @high: the free pages that ask aims for
 *
 * Pollers are told to look again, as the asks may have changed.
 *
 * Context: @pool->lock held.
 * Return: 0; -EINVAL if @high is below @low or above the pool's pages,
 * and then nothing changed.
 */
int kvp_set_wmark_locked(struct kvp_pool *pool, u32 low, u32 high)
{
	lockdep_assert_held(&pool->lock);
	if (high < low || high > pool->nr_pages)
		return -EINVAL;
	pool->low_wmark = low;
	pool->high_wmark = high;
	kvp_pressure_changed(pool);
	return 0;
}

/* ceil(a * b / c), for asking each client its share of @a. */
static u32 kvp_share(u32 a, u32 b, u32 c)
{
	return c ? (u32)(((u64)a * b + c - 1) / c) : 0;
}

/**
 * kvp_pressure_locked() - how many cache pages a client is asked to evict
 * @c: the client
 * @reasons: gets the ``KVPOOL_PRESSURE_*`` bits of the conditions that hold
 *
 * The policy (docs/design.md): a client is asked to evict cache pages,
 * never more than its unpinned ones, in proportion to them, when
 *
 *  - free pages are below low_wmark: its share of (high_wmark - free);
 *  - its tenant is over max_pages: its share of the excess within the
 *    tenant;
 *  - a tenant was refused below its guarantee and this client's tenant is
 *    above its own: its share of that tenant's unmet guarantee among the
 *    tenants above theirs.
 *
 * The largest of these is asked. Proportional shares mean no one client
 * is made to pay for all, and asking for unpinned pages only means the
 * ask can always be met.
 *
 * Context: @c->pool->lock held.
 * Return: the pages to evict; 0 when no condition holds or @c has no
 * unpinned cache page (@reasons is then 0 too).
 */
u32 kvp_pressure_locked(struct kvp_client *c, u32 *reasons)
{
	struct kvp_pool *pool = c->pool;
	struct kvp_tenant *t = c->tenant;
	u32 mine = c->nr_cache_pages - c->nr_cache_pinned;
	u32 ask = 0, want;

	lockdep_assert_held(&pool->lock);
	*reasons = 0;
	if (!mine)
		return 0;
	if (pool->free_pages < pool->low_wmark) {
		want = kvp_share(pool->high_wmark - pool->free_pages, mine,
				 pool->cache_evictable);
		ask = want > ask ? want : ask;
		*reasons |= KVPOOL_PRESSURE_LOW;
	}
	if (t->max_pages && t->pages > t->max_pages) {
		want = kvp_share(t->pages - t->max_pages, mine,
				 t->cache_pages - t->cache_pinned);
		ask = want > ask ? want : ask;
		*reasons |= KVPOOL_PRESSURE_OVER_MAX;
	}
	if (pool->blocked_tenant != KVP_NIL && pool->blocked_tenant != t->id &&
	    t->pages > t->min_pages) {
		struct kvp_tenant *b = xa_load(&pool->tenants,
					       pool->blocked_tenant);
		struct kvp_tenant *o;
		unsigned long id;
		u32 above = 0;

		xa_for_each(&pool->tenants, id, o)
			if (o != b && o->pages > o->min_pages)
				above += o->cache_pages - o->cache_pinned;
		want = kvp_share(kvp_unmet(b), mine, above);
		ask = want > ask ? want : ask;
		*reasons |= KVPOOL_PRESSURE_GUARANTEE;
	}
	return ask < mine ? ask : mine;
}

/**
 * kvp_tenant_list_locked() - describe the pool's tenants (CTL_TENANT_LIST)
 * @pool: the pool
 * @out: gets the first min(@count, tenants) of them, by id
 * @count: room in @out
 *
 * Each entry's ask_pages is the sum of its clients' kvp_pressure_locked().
 *
 * Context: @pool->lock held.
 * Return: the number of tenants, which may be more than @count, so that
 * the caller can size a second call.
 */
u32 kvp_tenant_list_locked(struct kvp_pool *pool,
			   struct kvpool_tenant_info *out, u32 count)
{
	struct kvp_tenant *t;
	struct kvp_client *c;
	unsigned long id;
	u32 n = 0, why;

	lockdep_assert_held(&pool->lock);
	/* O(tenants + clients): each client is asked once, by its tenant. */
	xa_for_each(&pool->tenants, id, t) {
		struct kvpool_tenant_info *ti;

		if (n >= count) {
			n++;
			continue;
		}
		ti = &out[n++];
		memset(ti, 0, sizeof(*ti));
		ti->tenant_id = t->id;
		ti->uid = t->uid;
		ti->cgroup_id = t->cgroup_id;
		ti->pages = t->pages;
		ti->cache_pages = t->cache_pages;
		ti->rows = t->rows;
		ti->nr_clients = t->nr_clients;
		ti->max_pages = t->max_pages;
		ti->min_pages = t->min_pages;
		ti->max_rows = t->max_rows;
		memcpy(ti->label, t->label, sizeof(ti->label));
		list_for_each_entry(c, &t->clients, tenant_link)
			ti->ask_pages += kvp_pressure_locked(c, &why);
	}
	return n;
}
