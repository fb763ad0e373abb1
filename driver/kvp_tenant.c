// SPDX-License-Identifier: GPL-2.0-only
/*
 * kvpool core: tenants, their limits and guarantees, and pressure.
 *
 * A tenant is the clients of one cgroup and uid, found by a hash of
 * both, or, once the administrator configures one on a cgroup path, of
 * the subtree below that path (kvp_tenant_match()). Pages are charged to
 * it as its clients' rows, slots and caches
 * take them (kvp_charge()); max_pages and max_rows refuse with EDQUOT,
 * and min_pages is a guarantee that other tenants' allocations cannot
 * eat into (kvp_available()). kvp_pressure_locked() is the eviction ask
 * of one client.
 */
#include "kvp_priv.h"

/*
 * Pages @t may take: free ones less those stepped EXTENDs have reserved
 * and less what others are guaranteed.
 */
u32 kvp_available(struct kvp_pool *pool, const struct kvp_tenant *t)
{
	u32 others = pool->unmet - kvp_unmet(t);
	u32 free = pool->free_pages - pool->pending_pages;

	return free > others ? free - others : 0;
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

/* FNV-1a: the paths are short and few, and this needs nothing. */
static u64 kvp_path_hash(const char *path, u32 len)
{
	u64 h = 0xcbf29ce484222325ULL;
	u32 i;

	for (i = 0; i < len; i++) {
		h ^= (u8)path[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

static struct hlist_head *kvp_path_bucket(struct kvp_pool *pool,
					  const char *path, u32 len, u32 uid)
{
	return &pool->tenant_path_hash[hash_64(kvp_path_hash(path, len) ^
					       ((u64)uid << 32),
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

/*
 * The configured path tenant of the first @len bytes of @path, for @uid
 * or, with @any, for every uid (stored as uid 0).
 */
struct kvp_tenant *kvp_path_find(struct kvp_pool *pool, const char *path,
				 u32 len, u32 uid, bool any)
{
	u32 key = any ? 0 : uid;
	struct kvp_tenant *t;

	hlist_for_each_entry(t, kvp_path_bucket(pool, path, len, key), hash)
		if (t->path_len == len && t->uid == key &&
		    !(t->flags & KVPOOL_TENANT_ANY_UID) == !any &&
		    !memcmp(t->path, path, len))
			return t;
	return NULL;
}

/**
 * kvp_tenant_match() - the configured tenant a new client joins
 * @pool: the pool
 * @cgroup_id: the opener's cgroup v2 id
 * @uid: the opener's uid
 * @path: the opener's cgroup path, or that of its nearest ancestor whose
 *        path fits %KVPOOL_CGROUP_PATH_MAX; NULL: match by id only
 *
 * First a tenant configured on @cgroup_id and @uid; then, from @path up
 * to "/", at each level the path tenant of @uid and then that of any
 * uid. The walk is over the string: an ancestor's path is a prefix of
 * its descendant's that ends before a '/'.
 *
 * Context: @pool->lock held.
 * Return: the tenant, or the unconfigured one of @cgroup_id and @uid
 * when none is configured (NULL if there is none yet).
 */
struct kvp_tenant *kvp_tenant_match(struct kvp_pool *pool, u64 cgroup_id,
				    u32 uid, const char *path)
{
	struct kvp_tenant *t = kvp_tenant_find(pool, cgroup_id, uid), *p;
	u32 len;

	if ((t && t->configured) || !path || !pool->path_bytes)
		return t;
	len = strlen(path);
	for (;;) {
		p = kvp_path_find(pool, path, len, uid, false);
		if (!p)
			p = kvp_path_find(pool, path, len, uid, true);
		if (p)
			return p;
		if (len <= 1)
			return t;
		/* Drop the last component and the '/' before it. */
		while (len > 1 && path[len - 1] != '/')
			len--;
		if (len > 1)
			len--;
	}
}

/* A new, empty tenant with the lowest free id, hashed nowhere yet. */
static int kvp_tenant_new(struct kvp_pool *pool, struct kvp_tenant **out)
{
	struct kvp_tenant *t;
	int ret;

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
	INIT_LIST_HEAD(&t->clients);
	INIT_HLIST_NODE(&t->hash);
	pool->nr_tenants++;
	*out = t;
	return 0;
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
	ret = kvp_tenant_new(pool, &t);
	if (ret)
		return ret;
	t->cgroup_id = cgroup_id;
	t->uid = uid;
	hlist_add_head(&t->hash, kvp_tenant_bucket(pool, cgroup_id, uid));
	*out = t;
	return 0;
}

/*
 * A new path tenant of the first @len bytes of @path: the copy is made
 * first, so that a failure leaves no tenant behind.
 */
static int kvp_path_tenant_new(struct kvp_pool *pool, const char *path,
			       u32 len, u32 uid, bool any,
			       struct kvp_tenant **out)
{
	struct kvp_tenant *t;
	char *copy;
	int ret;

	if (pool->path_bytes + len + 1 > KVP_PATH_BYTES_MAX)
		return -ENOSPC;
	copy = kvmalloc_array(len + 1, 1, GFP_KERNEL);
	if (!copy)
		return -ENOMEM;
	ret = kvp_tenant_new(pool, &t);
	if (ret) {
		kvfree(copy);
		return ret;
	}
	memcpy(copy, path, len);
	copy[len] = '\0';
	t->path = copy;
	t->path_len = len;
	t->flags = KVPOOL_TENANT_BY_PATH | (any ? KVPOOL_TENANT_ANY_UID : 0);
	t->uid = any ? 0 : uid;
	pool->path_bytes += len + 1;
	hlist_add_head(&t->hash, kvp_path_bucket(pool, path, len, t->uid));
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
	/* A removed path tenant is unhashed already. */
	if (!hlist_unhashed(&t->hash))
		hlist_del(&t->hash);
	if (t->path) {
		pool->path_bytes -= t->path_len + 1;
		kvfree(t->path);
	}
	xa_erase(&pool->tenants, t->id);
	pool->nr_tenants--;
	kvfree(t);
}

/*
 * Drops @t's configuration: its limits and guarantee go, a path tenant
 * leaves the path hash so that new opens no longer find it, and @t goes
 * with its last client (now, if it has none). Its clients keep it.
 */
static void kvp_tenant_unconfigure(struct kvp_pool *pool,
				   struct kvp_tenant *t)
{
	pool->sum_min -= t->min_pages;
	pool->unmet -= kvp_unmet(t);
	t->max_pages = 0;
	t->min_pages = 0;
	t->max_rows = 0;
	t->configured = false;
	if (pool->blocked_tenant == t->id)
		pool->blocked_tenant = KVP_NIL;
	if (t->path)
		hlist_del_init(&t->hash);
	kvp_pressure_changed(pool);
	kvp_tenant_put(pool, t);
}

/**
 * kvp_tenant_prune_locked() - forget tenants configured on dead cgroups
 * @pool: the pool
 * @alive: whether a cgroup id names a live cgroup
 *
 * A tenant configured by cgroup id names one incarnation of a cgroup: once
 * that cgroup is gone no open can join it again, so when it also has no
 * clients and holds nothing it is dropped, rather than listed forever.
 * Only a cgroup seen alive here before can be seen to die: an id that
 * never named a cgroup (one configured ahead, or made up) is left alone,
 * as an administrator set it (kvp_tenant_seen_locked() looks once, when
 * CTL_TENANT_SET names it). The driver walks at CTL_TENANT_LIST, and when
 * a full table refuses a CTL_TENANT_SET or an open: a lookup per tenant is
 * too dear for every SET. Path tenants are kept: a path can come back.
 *
 * Context: @pool->lock held.
 */
void kvp_tenant_prune_locked(struct kvp_pool *pool,
			     bool (*alive)(u64 cgroup_id))
{
	struct kvp_tenant *t;
	unsigned long id;

	lockdep_assert_held(&pool->lock);
	xa_for_each(&pool->tenants, id, t) {
		if (!t->configured || t->path)
			continue;
		if (alive(t->cgroup_id))
			t->cgroup_seen = true;
		else if (t->cgroup_seen && !t->nr_clients && !t->pages &&
			 !t->rows)
			kvp_tenant_unconfigure(pool, t);
	}
}

/**
 * kvp_tenant_seen_locked() - look once at the cgroup of a tenant just set
 * @pool: the pool
 * @id: the tenant CTL_TENANT_SET configured
 * @alive: whether a cgroup id names a live cgroup
 *
 * A tenant configured by cgroup id whose cgroup lives now is marked, so
 * that a later kvp_tenant_prune_locked() can tell that cgroup's end from
 * an id that never named one.
 *
 * Context: @pool->lock held.
 */
void kvp_tenant_seen_locked(struct kvp_pool *pool, u32 id,
			    bool (*alive)(u64 cgroup_id))
{
	struct kvp_tenant *t;

	lockdep_assert_held(&pool->lock);
	t = xa_load(&pool->tenants, id);
	if (t && t->configured && !t->path && alive(t->cgroup_id))
		t->cgroup_seen = true;
}

/*
 * Someone was refused, with @err (-ENOSPC or -EDQUOT): count it, and let
 * pollers look at the pressure again. Refused pages below its guarantee,
 * @t now asks the tenants above theirs.
 */
void kvp_refused(struct kvp_pool *pool, struct kvp_tenant *t,
		 bool pages, int err)
{
	if (err == -EDQUOT)
		pool->refused_quota++;
	else
		pool->refused_space++;
	if (pages && kvp_unmet(t))
		pool->blocked_tenant = t->id;
	kvp_pressure_changed(pool);
}

/**
 * kvp_cgroup_path_check() - whether a tenant may be configured on a path
 * @path: NUL-terminated, at most %KVPOOL_CGROUP_PATH_MAX bytes read
 *
 * The paths kernfs_path() gives for cgroups: "/", or "/a/b" with no empty,
 * "." or ".." component and no trailing '/'. Only these can ever match.
 *
 * Return: 0; -ENAMETOOLONG if @path is %KVPOOL_CGROUP_PATH_MAX bytes or
 * more; -EINVAL if it is not of that form.
 */
int kvp_cgroup_path_check(const char *path)
{
	size_t len = strnlen(path, KVPOOL_CGROUP_PATH_MAX), i, start;

	if (len >= KVPOOL_CGROUP_PATH_MAX)
		return -ENAMETOOLONG;
	if (path[0] != '/')
		return -EINVAL;
	if (len == 1)
		return 0;
	for (start = 1, i = 1; i <= len; i++) {
		size_t n;

		if (i < len && path[i] != '/')
			continue;
		n = i - start;
		if (!n || (n == 1 && path[start] == '.') ||
		    (n == 2 && path[start] == '.' && path[start + 1] == '.'))
			return -EINVAL;
		start = i + 1;
	}
	return 0;
}

/* Validates @a of kvp_tenant_set_locked() and finds what it names. */
static int kvp_tenant_set_find(struct kvp_pool *pool,
			       const struct kvpool_ctl_tenant *a,
			       const char *path, struct kvp_tenant **out)
{
	const u32 known = KVPOOL_TENANT_BY_ID | KVPOOL_TENANT_BY_PATH |
			  KVPOOL_TENANT_ANY_UID | KVPOOL_TENANT_REMOVE;
	bool by_path = a->flags & KVPOOL_TENANT_BY_PATH;
	bool any = a->flags & KVPOOL_TENANT_ANY_UID;
	int ret;

	if (a->flags & ~known)
		return -EOPNOTSUPP;
	if (a->__reserved || a->__reserved2 ||
	    !memchr(a->label, 0, sizeof(a->label)) ||
	    (a->max_pages && a->min_pages > a->max_pages))
		return -EINVAL;
	/* One way of naming it; a path exactly when it is named by one. */
	if ((by_path && (a->flags & KVPOOL_TENANT_BY_ID)) ||
	    (any && !by_path) || by_path != !!path)
		return -EINVAL;
	/* Removing is not setting: no limits or label may come with it. */
	if ((a->flags & KVPOOL_TENANT_REMOVE) &&
	    (a->max_pages || a->min_pages || a->max_rows || a->label[0]))
		return -EINVAL;
	if (by_path) {
		if (a->cgroup_id || (any && a->uid))
			return -EINVAL;
		ret = kvp_cgroup_path_check(path);
		if (ret)
			return ret;
		*out = kvp_path_find(pool, path, strlen(path), a->uid, any);
	} else if (a->flags & KVPOOL_TENANT_BY_ID) {
		*out = xa_load(&pool->tenants, a->tenant_id);
		if (!*out)
			return -ENOENT;
	} else {
		*out = kvp_tenant_find(pool, a->cgroup_id, a->uid);
	}
	return 0;
}

/**
 * kvp_tenant_set_locked() - set a tenant's limits (CTL_TENANT_SET)
 * @pool: the pool
 * @a: the request: the tenant by cgroup and uid, with
 *     %KVPOOL_TENANT_BY_ID by id, or with %KVPOOL_TENANT_BY_PATH by @path
 *     and uid (any uid with %KVPOOL_TENANT_ANY_UID); written back with the
 *     tenant as it is now (id, cgroup, uid, label)
 * @path: with %KVPOOL_TENANT_BY_PATH the cgroup path, NUL-terminated and
 *        shorter than %KVPOOL_CGROUP_PATH_MAX; else NULL
 *
 * A tenant named by cgroup and uid or by path is made if it is new, so
 * that limits can be set before its first client opens the pool. The
 * tenant becomes configured: it stays, limits and all, while it has no
 * clients. An empty label keeps the old one. With %KVPOOL_TENANT_REMOVE
 * the tenant's configuration is dropped instead (kvp_tenant_unconfigure()).
 *
 * Context: @pool->lock held; may sleep (allocates).
 * Return: 0; -EOPNOTSUPP for an unknown flag; -EINVAL if a reserved field
 * is set, the label has no NUL, min_pages is above a non-zero max_pages,
 * the tenant is named more than one way, ANY_UID comes without BY_PATH
 * (or with a uid), BY_PATH with a cgroup id or without a path, the path
 * is not canonical, REMOVE comes with limits or a label, or the
 * guarantees of all tenants together would be more than the pool's
 * unreserved pages (they could not all be met); -ENAMETOOLONG for a path
 * too long; -ENOENT if no tenant has that id, or REMOVE names no
 * configured tenant; -EMFILE or -ENOMEM if a new tenant cannot be made;
 * -ENOSPC if its path would take the pool's paths past
 * %KVP_PATH_BYTES_MAX. On error nothing changed and @a is untouched.
 */
int kvp_tenant_set_locked(struct kvp_pool *pool, struct kvpool_ctl_tenant *a,
			  const char *path)
{
	struct kvp_tenant *t;
	u64 sum_min;
	int ret;

	lockdep_assert_held(&pool->lock);
	ret = kvp_tenant_set_find(pool, a, path, &t);
	if (ret)
		return ret;
	if (a->flags & KVPOOL_TENANT_REMOVE) {
		if (!t || !t->configured)
			return -ENOENT;
		a->tenant_id = t->id;
		a->cgroup_id = t->cgroup_id;
		a->uid = t->uid;
		memcpy(a->label, t->label, sizeof(a->label));
		kvp_tenant_unconfigure(pool, t);
		return 0;
	}
	/* Guarantees together must fit the pool, or they mean nothing. */
	sum_min = pool->sum_min - (t ? t->min_pages : 0) + a->min_pages;
	if (sum_min > pool->nr_pages - pool->reserved_pages)
		return -EINVAL;
	if (!t) {
		if (path)
			ret = kvp_path_tenant_new(pool, path, strlen(path),
						  a->uid,
						  a->flags & KVPOOL_TENANT_ANY_UID,
						  &t);
		else
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
 *  - free pages are below low_wmark: its share of (high_wmark - free),
 *    where a pool on a budget counts as free the pages the budget could
 *    still give it (&kvp_pool.headroom): the pages it has not backed yet
 *    are no reason to evict while the budget has them;
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
	u32 ask = 0, want, free;

	lockdep_assert_held(&pool->lock);
	*reasons = 0;
	if (!mine)
		return 0;
	free = pool->free_pages;
	/* Asked only below low_wmark, where free + room < 2^32. */
	if (free < pool->low_wmark && pool->headroom)
		free += min(pool->headroom(pool), pool->low_wmark - free);
	if (free < pool->low_wmark) {
		want = kvp_share(pool->high_wmark - free, mine,
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
 * @paths: gets an empty string, then the paths of the entries written,
 *         back to back, each while it fits @paths_len; NULL: none
 * @paths_len: room in @paths
 * @paths_used: gets the bytes of @paths written
 *
 * Each entry's ask_pages is the sum of its clients' kvp_pressure_locked().
 * The bytes @paths needs for every tenant are 1 + &kvp_pool.path_bytes.
 *
 * Context: @pool->lock held.
 * Return: the number of tenants, which may be more than @count, so that
 * the caller can size a second call.
 */
u32 kvp_tenant_list_locked(struct kvp_pool *pool,
			   struct kvpool_tenant_info *out, u32 count,
			   char *paths, u32 paths_len, u32 *paths_used)
{
	struct kvp_tenant *t;
	struct kvp_client *c;
	unsigned long id;
	u32 n = 0, why, used = 0;

	lockdep_assert_held(&pool->lock);
	if (paths && paths_len)
		paths[used++] = '\0';
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
		ti->flags = t->flags |
			    (t->configured ? KVPOOL_TENANT_CONFIGURED : 0);
		memcpy(ti->label, t->label, sizeof(ti->label));
		if (t->path && used && paths_len - used > t->path_len) {
			memcpy(paths + used, t->path, t->path_len + 1);
			ti->path_offset = used;
			used += t->path_len + 1;
		}
		list_for_each_entry(c, &t->clients, tenant_link)
			ti->ask_pages += kvp_pressure_locked(c, &why);
	}
	*paths_used = used;
	return n;
}
