// SPDX-License-Identifier: GPL-2.0-only
/*
 * kvptest: the shared helpers of the kvpool kernel selftests; see
 * kvptest.h for what they are and the rules they follow.
 *
 * Copyright (C) 2026 The kvpool authors
 */
#include "kvptest.h"

#include <stdarg.h>

/*
 * ioctl(2) as 0 or the positive errno. A positive return from the kernel is
 * no documented outcome: report it as a negative number, which no errno
 * assertion accepts.
 */
int kt_ioctl(int fd, unsigned long cmd, void *arg)
{
	int ret = ioctl(fd, cmd, arg);

	if (ret == 0)
		return 0;
	if (ret < 0)
		return errno;
	return -ret;
}

int kt_ctl_open(void)
{
	return open(KT_CTL_PATH, O_RDWR | O_CLOEXEC);
}

int kt_create(int ctl, __u32 flags, __u32 nr_pages,
	      __u32 page_tokens, __u32 nr_rows, __u32 row_tokens,
	      __u32 *out_id)
{
	struct kvpool_ctl_create c = {
		.size = sizeof(c),
		.flags = flags,
		.nr_pages = nr_pages,
		.page_tokens = page_tokens,
		.nr_rows = nr_rows,
		.row_tokens = row_tokens,
		.out_pool_id = 0,
	};
	int ret = kt_ioctl(ctl, KVPOOL_CTL_CREATE, &c);

	if (out_id)
		*out_id = c.out_pool_id;
	return ret;
}

int kt_destroy(int ctl, __u32 id)
{
	struct kvpool_ctl_destroy d = { .size = sizeof(d), .pool_id = id };

	return kt_ioctl(ctl, KVPOOL_CTL_DESTROY, &d);
}

void kt_dev_path(char *buf, size_t len, __u32 id)
{
	snprintf(buf, len, "/dev/kvpool%u", id);
}

int kt_open_id(__u32 id, int oflags)
{
	char path[32];

	kt_dev_path(path, sizeof(path), id);
	return open(path, oflags);
}

/* Number of /sys/class/kvpool/kvpoolN entries: how many pools exist. */
int kt_count_pools(void)
{
	DIR *d = opendir(KT_SYSFS_CLASS);
	struct dirent *de;
	int n = 0;

	if (!d)
		return -1;
	while ((de = readdir(d))) {
		const char *p = de->d_name;

		if (strncmp(p, "kvpool", 6) || !p[6])
			continue;
		for (p += 6; *p >= '0' && *p <= '9'; p++)
			;
		if (!*p)
			n++;
	}
	closedir(d);
	return n;
}

int kt_info(int fd, struct kvpool_info *i)
{
	memset(i, 0, sizeof(*i));
	i->size = sizeof(*i);
	return kt_ioctl(fd, KVPOOL_INFO, i);
}

int kt_stats(int fd, struct kvpool_stats *s)
{
	memset(s, 0, sizeof(*s));
	s->size = sizeof(*s);
	return kt_ioctl(fd, KVPOOL_STATS, s);
}

int kt_verify(int fd, struct kvpool_verify *v)
{
	memset(v, 0, sizeof(*v));
	v->size = sizeof(*v);
	v->out_violations = 0xdeadbeef;
	return kt_ioctl(fd, KVPOOL_VERIFY, v);
}

int kt_row_alloc(int fd, __u32 count,
		 struct kvpool_handle *handles, __u32 *out_short)
{
	struct kvpool_row_alloc a = {
		.size = sizeof(a),
		.count = count,
		.entry_len = sizeof(*handles),
		.handles = kt_ptr(handles),
	};
	int ret = kt_ioctl(fd, KVPOOL_ROW_ALLOC, &a);

	if (out_short)
		*out_short = a.out_short;
	return ret;
}

int kt_extend(int fd, struct kvpool_extend_entry *e,
	      __u32 count, __u32 *pages, __u32 pages_cap,
	      struct kvpool_extend *out)
{
	struct kvpool_extend x = {
		.size = sizeof(x),
		.count = count,
		.entry_len = sizeof(*e),
		.pages_cap = pages_cap,
		.page_entry_len = sizeof(*pages),
		.entries = kt_ptr(e),
		.pages = kt_ptr(pages),
		.out_nr_pages = 0xdeadbeef,
		.out_short = 0xdeadbeef,
		.out_error_index = 0xdeadbeef,
	};
	int ret = kt_ioctl(fd, KVPOOL_EXTEND, &x);

	if (out)
		*out = x;
	return ret;
}

/* Extend one row; *nr_new (if given) gets out_nr_new. */
int kt_extend1(int fd, struct kvpool_handle h, __u32 new_len,
	       __u32 *pages, __u32 pages_cap, __u32 *nr_new)
{
	struct kvpool_extend_entry e = { .handle = h, .new_len = new_len };
	int ret = kt_extend(fd, &e, 1, pages, pages_cap, NULL);

	if (nr_new)
		*nr_new = e.out_nr_new;
	return ret;
}

/* Extend one row to new_len with a scratch page array big enough. */
int kt_grow(int fd, struct kvpool_handle h, __u32 new_len)
{
	static __u32 scratch[1u << 16];

	return kt_extend1(fd, h, new_len, scratch, ARRAY_SIZE(scratch), NULL);
}

/*
 * The length of one entry of a struct kvpool_batch op, as this header has
 * it: what kt_batch() puts in entry_len. 0 for a cmd that is no batch op
 * (the kernel refuses 0 with EINVAL).
 */
__u32 kt_batch_entry_len(unsigned long cmd)
{
	if (cmd == KVPOOL_COMMIT || cmd == KVPOOL_DONATE ||
	    cmd == KVPOOL_SWA_FREE)
		return sizeof(struct kvpool_len_entry);
	if (cmd == KVPOOL_TRIM || cmd == KVPOOL_RELEASE)
		return sizeof(struct kvpool_handle);
	if (cmd == KVPOOL_CACHE_EVICT)
		return sizeof(__u32);
	return 0;
}

/* A batch op with an explicit entry_len (for the element-length tests). */
int kt_batch_len(int fd, unsigned long cmd, __u32 flags,
		 void *entries, __u32 count, __u32 entry_len,
		 struct kvpool_batch *out)
{
	struct kvpool_batch b = {
		.size = sizeof(b),
		.flags = flags,
		.count = count,
		.entry_len = entry_len,
		.entries = kt_ptr(entries),
		.out_error_index = 0xdeadbeef,
		.out_nr_pages = 0xdeadbeef,
	};
	int ret = kt_ioctl(fd, cmd, &b);

	if (out)
		*out = b;
	return ret;
}

int kt_batch(int fd, unsigned long cmd, __u32 flags,
	     void *entries, __u32 count,
	     struct kvpool_batch *out)
{
	return kt_batch_len(fd, cmd, flags, entries, count,
			    kt_batch_entry_len(cmd), out);
}

/* A batch op on one entry; *nr (if given) gets out_nr_pages. */
static int kt_batch1(int fd, unsigned long cmd, __u32 flags, void *entry,
		     __u32 *nr)
{
	struct kvpool_batch b;
	int ret = kt_batch(fd, cmd, flags, entry, 1, &b);

	if (nr)
		*nr = b.out_nr_pages;
	return ret;
}

int kt_commit1(int fd, struct kvpool_handle h, __u32 len)
{
	struct kvpool_len_entry e = { .handle = h, .len = len };

	return kt_batch1(fd, KVPOOL_COMMIT, 0, &e, NULL);
}

int kt_trim1(int fd, struct kvpool_handle h, __u32 *nr_freed)
{
	return kt_batch1(fd, KVPOOL_TRIM, 0, &h, nr_freed);
}

int kt_release1(int fd, struct kvpool_handle h,
		__u32 *nr_freed)
{
	return kt_batch1(fd, KVPOOL_RELEASE, 0, &h, nr_freed);
}

/* RELEASE of one row with KVPOOL_RELEASE_DONATE. */
int kt_release_donate1(int fd, struct kvpool_handle h,
		       __u32 *nr_freed)
{
	return kt_batch1(fd, KVPOOL_RELEASE, KVPOOL_RELEASE_DONATE, &h,
			 nr_freed);
}

/* DONATE one row up to `upto`; *nr_moved gets out_nr_pages. */
int kt_donate1(int fd, struct kvpool_handle h, __u32 upto,
	       __u32 *nr_moved)
{
	struct kvpool_len_entry e = { .handle = h, .len = upto };

	return kt_batch1(fd, KVPOOL_DONATE, 0, &e, nr_moved);
}

/* SWA_FREE one row at window edge `edge`; *nr_freed gets out_nr_pages. */
int kt_swa_free1(int fd, struct kvpool_handle h, __u32 edge,
		 __u32 *nr_freed)
{
	struct kvpool_len_entry e = { .handle = h, .len = edge };

	return kt_batch1(fd, KVPOOL_SWA_FREE, 0, &e, nr_freed);
}

int kt_evict(int fd, __u32 *ids, __u32 count,
	     struct kvpool_batch *out)
{
	return kt_batch(fd, KVPOOL_CACHE_EVICT, 0, ids, count, out);
}

int kt_attach(int fd, struct kvpool_handle h,
	      const __u32 *ids, __u32 nr_pages)
{
	struct kvpool_attach a = {
		.size = sizeof(a),
		.handle = h,
		.nr_pages = nr_pages,
		.page_entry_len = sizeof(*ids),
		.pages = kt_ptr(ids),
	};

	return kt_ioctl(fd, KVPOOL_ATTACH_PREFIX, &a);
}

int kt_slot_op(int fd, unsigned long cmd, __u64 session,
	       struct kvpool_handle *h, __u32 *nr_pages)
{
	struct kvpool_slot s = {
		.size = sizeof(s),
		.session_id = session,
		.out_nr_pages = 0xdeadbeef,
	};
	int ret;

	if (cmd == KVPOOL_TO_SLOT)
		s.handle = *h;
	ret = kt_ioctl(fd, cmd, &s);
	if (cmd == KVPOOL_FROM_SLOT && h && !ret)
		*h = s.handle;
	if (nr_pages)
		*nr_pages = s.out_nr_pages;
	return ret;
}

int kt_to_slot(int fd, __u64 session, struct kvpool_handle h,
	       __u32 *nr_pages)
{
	return kt_slot_op(fd, KVPOOL_TO_SLOT, session, &h, nr_pages);
}

int kt_from_slot(int fd, __u64 session,
		 struct kvpool_handle *h, __u32 *nr_pages)
{
	return kt_slot_op(fd, KVPOOL_FROM_SLOT, session, h, nr_pages);
}

int kt_slot_release(int fd, __u64 session, __u32 *nr_pages)
{
	return kt_slot_op(fd, KVPOOL_SLOT_RELEASE, session, NULL, nr_pages);
}

/* The parts of a ROW_QUERY that aim its page array. */
static void kt_query_init(struct kvpool_row_query *q, __u32 *pages,
			  __u32 pages_cap)
{
	memset(q, 0, sizeof(*q));
	q->size = sizeof(*q);
	q->pages_cap = pages_cap;
	q->page_entry_len = sizeof(*pages);
	q->pages = kt_ptr(pages);
}

int kt_query(int fd, struct kvpool_handle h, __u32 *pages,
	     __u32 pages_cap, struct kvpool_row_query *q)
{
	kt_query_init(q, pages, pages_cap);
	q->handle = h;
	return kt_ioctl(fd, KVPOOL_ROW_QUERY, q);
}

int kt_query_slot(int fd, __u64 session, __u32 *pages,
		  __u32 pages_cap, struct kvpool_row_query *q)
{
	kt_query_init(q, pages, pages_cap);
	q->flags = KVPOOL_QUERY_BY_SLOT;
	q->session_id = session;
	return kt_ioctl(fd, KVPOOL_ROW_QUERY, q);
}

#define KT_ST_FIELD(f, g) { #f, offsetof(struct kvpool_stats, f), g }

/* Every counter of struct kvpool_stats, in the struct's order. */
static const struct kt_stats_field {
	const char *name;
	size_t off;
	unsigned int group;
} kt_stats_fields[] = {
	KT_ST_FIELD(out_free_pages, KT_ST_POOL),
	KT_ST_FIELD(out_row_pages, KT_ST_POOL),
	KT_ST_FIELD(out_slot_pages, KT_ST_POOL),
	KT_ST_FIELD(out_cache_evictable, KT_ST_POOL),
	KT_ST_FIELD(out_cache_pinned, KT_ST_POOL),
	KT_ST_FIELD(out_reserved_pages, KT_ST_POOL),
	KT_ST_FIELD(out_free_rows, KT_ST_POOL),
	KT_ST_FIELD(out_held_rows, KT_ST_POOL),
	KT_ST_FIELD(out_slot_rows, KT_ST_POOL),
	KT_ST_FIELD(out_reserved_rows, KT_ST_POOL),
	KT_ST_FIELD(out_nr_clients, KT_ST_POOL),
	KT_ST_FIELD(out_client_rows, KT_ST_CLIENT),
	KT_ST_FIELD(out_client_slots, KT_ST_CLIENT),
	KT_ST_FIELD(out_client_pages, KT_ST_CLIENT),
	KT_ST_FIELD(out_client_cache_pages, KT_ST_CLIENT),
	KT_ST_FIELD(out_export_rows, KT_ST_POOL),
	KT_ST_FIELD(out_export_pages, KT_ST_POOL),
	KT_ST_FIELD(out_tenant_id, KT_ST_LIMITS),
	KT_ST_FIELD(out_tenant_pages, KT_ST_TENANT),
	KT_ST_FIELD(out_tenant_rows, KT_ST_TENANT),
	KT_ST_FIELD(out_tenant_max_pages, KT_ST_LIMITS),
	KT_ST_FIELD(out_tenant_min_pages, KT_ST_LIMITS),
	KT_ST_FIELD(out_tenant_max_rows, KT_ST_LIMITS),
};

const char *kt_stats_diff(const struct kvpool_stats *a,
			  const struct kvpool_stats *b, unsigned int groups)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(kt_stats_fields); i++) {
		const struct kt_stats_field *f = &kt_stats_fields[i];
		__u32 va, vb;

		if (!(f->group & groups))
			continue;
		memcpy(&va, (const char *)a + f->off, sizeof(va));
		memcpy(&vb, (const char *)b + f->off, sizeof(vb));
		if (va != vb)
			return f->name;
	}
	return "";
}

void kt_snap_fill(struct kt_row_snap *s, int err,
		  const struct kvpool_row_query *q)
{
	s->err = err;
	if (err)
		return;
	s->state = q->out_state;
	s->nr_pages = q->out_nr_pages;
	s->idx = q->out_req_pool_idx;
	s->alloc = q->out_allocated_len;
	s->committed = q->out_committed_len;
	s->protected_len = q->out_protected_len;
	s->swa = q->out_swa_evicted_len;
}

void kt_snap_row(int fd, struct kvpool_handle h,
		 struct kt_row_snap *s)
{
	struct kvpool_row_query q;

	memset(s, 0, sizeof(*s));
	kt_snap_fill(s, kt_query(fd, h, s->pages, KT_ROW_MAX_PAGES, &q), &q);
}

/* kt_snap_row() of the row parked in slot @session. */
void kt_snap_slot(int fd, __u64 session,
		  struct kt_row_snap *s)
{
	struct kvpool_row_query q;

	memset(s, 0, sizeof(*s));
	kt_snap_fill(s, kt_query_slot(fd, session, s->pages, KT_ROW_MAX_PAGES,
				      &q), &q);
}

/* A held row of @alloc tokens, @committed of them committed. */
struct kvpool_handle kt_new_row(struct __test_metadata *_metadata, int fd,
				__u32 alloc, __u32 committed)
{
	struct kvpool_handle h;

	ASSERT_EQ(0, kt_row_alloc(fd, 1, &h, NULL));
	if (alloc)
		ASSERT_EQ(0, kt_grow(fd, h, alloc));
	if (committed)
		ASSERT_EQ(0, kt_commit1(fd, h, committed));
	return h;
}

const char *kt_row_diff(const struct kt_row_snap *a,
			const struct kt_row_snap *b)
{
#define KT_CMP(f) do { if (a->f != b->f) return #f; } while (0)
	KT_CMP(err);
	KT_CMP(state);
	KT_CMP(nr_pages);
	KT_CMP(idx);
	KT_CMP(alloc);
	KT_CMP(committed);
	KT_CMP(protected_len);
	KT_CMP(swa);
#undef KT_CMP
	if (a->nr_pages <= KT_ROW_MAX_PAGES &&
	    memcmp(a->pages, b->pages, a->nr_pages * sizeof(__u32)))
		return "pages";
	return "";
}

void kt_snap(int fd, const struct kvpool_handle *h, int nr,
	     struct kt_state *s)
{
	int i;

	if (nr > KT_SNAP_ROWS)
		nr = KT_SNAP_ROWS;
	s->nr = nr;
	if (kt_stats(fd, &s->st))
		memset(&s->st, 0xff, sizeof(s->st));
	for (i = 0; i < nr; i++)
		kt_snap_row(fd, h[i], &s->rows[i]);
}

const char *kt_state_diff(const struct kt_state *a,
			  const struct kt_state *b)
{
	static char buf[64];
	const char *d = kt_stats_diff(&a->st, &b->st, KT_ST_USAGE);
	int i;

	if (*d)
		return d;
	for (i = 0; i < a->nr; i++) {
		d = kt_row_diff(&a->rows[i], &b->rows[i]);
		if (*d) {
			snprintf(buf, sizeof(buf), "row[%d].%s", i, d);
			return buf;
		}
	}
	return "";
}

int kt_read_text(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	buf[0] = 0;
	if (fd < 0)
		return errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return errno;
	buf[n] = 0;
	return 0;
}

int kt_run_output(char *out, size_t len, const char *fmt, ...)
{
	char line[600], sink[256];
	size_t n = 0;
	va_list ap;
	FILE *p;
	int st;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line) - 8, fmt, ap);
	va_end(ap);
	strcat(line, " 2>&1");
	p = popen(line, "r");
	if (!p)
		return -1;
	if (out && len) {
		n = fread(out, 1, len - 1, p);
		out[n] = 0;
	}
	/* The rest unread: the command must not block on a full pipe. */
	while (fread(sink, 1, sizeof(sink), p) > 0)
		;
	st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int kt_write_text(const char *path, const char *s)
{
	size_t len = strlen(s);
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return errno;
	n = write(fd, s, len);
	if (n < 0)
		n = -errno;
	close(fd);
	if (n < 0)
		return -n;
	return n == (ssize_t)len ? 0 : EIO;
}

/* Read /sys/class/kvpool/kvpoolN/<name>: strict "decimal\n". */
int kt_sysfs_u64(__u32 id, const char *name, __u64 *val)
{
	char path[128], buf[64], *end;
	ssize_t n;
	int fd, ret;

	snprintf(path, sizeof(path), KT_SYSFS_FMT, id, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	n = read(fd, buf, sizeof(buf) - 1);
	/* A read error's errno (ENODEV: the device went), not close()'s. */
	ret = n < 0 ? errno : n == 0 ? EIO : 0;
	close(fd);
	if (ret)
		return ret;
	buf[n] = 0;
	if (buf[n - 1] != '\n' || buf[0] < '0' || buf[0] > '9')
		return EBADMSG;
	errno = 0;
	*val = strtoull(buf, &end, 10);
	if (errno || *end != '\n' || end != buf + n - 1)
		return EBADMSG;
	return 0;
}

__u64 kt_sysfs_val(__u32 id, const char *name)
{
	__u64 v = ~0ull;

	if (kt_sysfs_u64(id, name, &v))
		return ~0ull;
	return v;
}

/*
 * Value of "key:\tvalue\n" in /proc/self/fdinfo/<fd>. Returns 0, ENOENT
 * (no such key), EBADMSG (malformed) or ENOTUNIQ (the key twice).
 */
int kt_fdinfo_u64(int fd, const char *key, __u64 *val)
{
	char path[64], buf[4096], *line, *save = NULL;
	size_t klen = strlen(key);
	bool found = false;
	ssize_t n;
	int f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = open(path, O_RDONLY | O_CLOEXEC);
	if (f < 0)
		return errno;
	n = read(f, buf, sizeof(buf) - 1);
	close(f);
	if (n <= 0)
		return EIO;
	buf[n] = 0;
	if (buf[n - 1] != '\n')
		return EBADMSG;
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *end;

		if (strncmp(line, key, klen) || line[klen] != ':')
			continue;
		if (found)
			return ENOTUNIQ;
		found = true;
		if (line[klen + 1] != '\t' || line[klen + 2] < '0' ||
		    line[klen + 2] > '9')
			return EBADMSG;
		errno = 0;
		*val = strtoull(line + klen + 2, &end, 10);
		if (errno || *end)
			return EBADMSG;
	}
	return found ? 0 : ENOENT;
}

void kt_pool_reset(struct kt_pool *p)
{
	int i;

	memset(p, 0, sizeof(*p));
	p->ctl = -1;
	for (i = 0; i < KT_MAX_FDS; i++)
		p->fds[i] = -1;
	for (i = 0; i < KT_MAX_PIDS; i++)
		p->pids[i] = -1;
}

/* Make a pool (setup only: uses ASSERT). */
void kt_pool_init(struct __test_metadata *_metadata,
		  struct kt_pool *p, __u32 flags,
		  __u32 nr_pages, __u32 page_tokens,
		  __u32 nr_rows, __u32 row_tokens)
{
	bool rz = flags & KVPOOL_CREATE_RESERVE_ZERO;

	kt_pool_reset(p);
	p->ctl = kt_ctl_open();
	ASSERT_LE(0, p->ctl) TH_LOG("open " KT_CTL_PATH ": %s (module loaded?)",
				     strerror(errno));
	p->geo.size = sizeof(p->geo);
	p->geo.flags = flags;
	p->geo.nr_pages = nr_pages;
	p->geo.page_tokens = page_tokens;
	p->geo.nr_rows = nr_rows;
	p->geo.row_tokens = row_tokens;
	ASSERT_EQ(0, kt_ioctl(p->ctl, KVPOOL_CTL_CREATE, &p->geo));
	p->created = true;
	p->id = p->geo.out_pool_id;
	p->usable_pages = nr_pages - rz;
	p->usable_rows = nr_rows - rz;
	p->max_batch = nr_rows < 8192 ? nr_rows : 8192;
}

/* Open a client of the pool; the teardown closes it if the test did not. */
int kt_pool_open(struct __test_metadata *_metadata,
		 struct kt_pool *p)
{
	int fd = kt_open_id(p->id, O_RDWR | O_CLOEXEC);
	int i;

	ASSERT_LE(0, fd) TH_LOG("open /dev/kvpool%u: %s", p->id,
				 strerror(errno));
	for (i = 0; i < KT_MAX_FDS; i++) {
		if (p->fds[i] < 0) {
			p->fds[i] = fd;
			return fd;
		}
	}
	close(fd);
	ASSERT_TRUE(false) TH_LOG("too many fds");
	return -1;
}

void kt_pool_close(struct kt_pool *p, int fd)
{
	int i;

	for (i = 0; i < KT_MAX_FDS; i++)
		if (p->fds[i] == fd)
			p->fds[i] = -1;
	close(fd);
}

/*
 * fork() and remember the child so the teardown can kill and reap it if
 * the test ends early. Returns as fork() does.
 */
pid_t kt_pool_fork(struct __test_metadata *_metadata,
		   struct kt_pool *p)
{
	pid_t pid;
	int i;

	fflush(stdout);
	fflush(stderr);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0)
		return 0;
	for (i = 0; i < KT_MAX_PIDS; i++) {
		if (p->pids[i] < 0) {
			p->pids[i] = pid;
			return pid;
		}
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	ASSERT_TRUE(false) TH_LOG("too many children");
	return -1;
}

/* The teardown no longer needs to kill @pid: it was reaped. */
static void kt_pool_forget(struct kt_pool *p, pid_t pid)
{
	int i;

	for (i = 0; i < KT_MAX_PIDS; i++)
		if (p->pids[i] == pid)
			p->pids[i] = -1;
}

/* Reap a child started with kt_pool_fork(); returns its wait status. */
int kt_pool_wait(struct kt_pool *p, pid_t pid)
{
	int status = -1;

	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	kt_pool_forget(p, pid);
	return status;
}

pid_t kt_pool_trywait(struct kt_pool *p, pid_t pid, int *status)
{
	pid_t got;

	do
		got = waitpid(pid, status, WNOHANG);
	while (got < 0 && errno == EINTR);
	if (got == pid)
		kt_pool_forget(p, pid);
	return got;
}

/* Child side of a pipe handshake: write one byte, or exit. */
void kt_child_signal(int wfd, char c)
{
	CHILD_CHECK(write(wfd, &c, 1) == 1);
}

/* Block until the other side writes a byte or closes; returns it or 0. */
char kt_pipe_wait(int rfd)
{
	char c = 0;
	ssize_t n;

	do {
		n = read(rfd, &c, 1);
	} while (n < 0 && errno == EINTR);
	return n == 1 ? c : 0;
}

/* Check the pool's accounting identities on one STATS snapshot. */
void kt_check_identities(struct __test_metadata *_metadata,
			 struct kt_pool *p,
			 const struct kvpool_stats *s)
{
	EXPECT_EQ(p->geo.nr_pages,
		  s->out_free_pages + s->out_row_pages + s->out_slot_pages +
		  s->out_cache_evictable + s->out_cache_pinned +
		  s->out_reserved_pages + s->out_export_pages +
		  s->out_quarantine_pages);
	EXPECT_EQ(p->geo.nr_rows,
		  s->out_free_rows + s->out_held_rows + s->out_slot_rows +
		  s->out_reserved_rows + s->out_export_rows);
}

/*
 * VERIFY must find nothing broken and walk the whole pool. It needs
 * CAP_SYS_ADMIN (EPERM otherwise): call it from the test process (root),
 * not from a child that dropped privileges.
 */
void kt_expect_verify(struct __test_metadata *_metadata,
		      struct kt_pool *p, int fd)
{
	struct kvpool_verify v;

	EXPECT_EQ(0, kt_verify(fd, &v));
	EXPECT_EQ(0, v.out_violations)
		TH_LOG("pool %u: KVPOOL_VERIFY found %u broken invariants (see dmesg)",
		       p->id, v.out_violations);
	EXPECT_EQ(p->geo.nr_pages, v.out_pages_checked);
	EXPECT_EQ(p->geo.nr_rows, v.out_rows_checked);
}

/*
 * The whole pool is free: what a fresh client sees after every other
 * client is gone. On a pool with an arena, the pages a closed client
 * still held come back only after the processes that used it have
 * exited, and a moment later than their exit (the pool looks every few
 * milliseconds): wait for that first, for up to KT_SETTLE_MS.
 */
int kt_quarantine_settle(int fd)
{
	struct kvpool_stats s;
	int waited = 0;

	while (!kt_stats(fd, &s) && s.out_quarantine_pages) {
		if (waited >= KT_SETTLE_MS)
			return -1;
		usleep(2000);
		waited += 2;
	}
	return waited;
}

void kt_expect_pool_full(struct __test_metadata *_metadata,
			 struct kt_pool *p, int fd,
			 __u32 nr_clients)
{
	bool rz = p->geo.flags & KVPOOL_CREATE_RESERVE_ZERO;
	struct kvpool_stats s;

	EXPECT_LE(0, kt_quarantine_settle(fd))
		TH_LOG("pages held back %d ms after every client closed",
		       KT_SETTLE_MS);
	EXPECT_EQ(0, kt_stats(fd, &s));
	EXPECT_EQ(0, s.out_quarantine_pages);
	EXPECT_EQ(p->usable_pages, s.out_free_pages);
	EXPECT_EQ(0, s.out_row_pages);
	EXPECT_EQ(0, s.out_slot_pages);
	EXPECT_EQ(0, s.out_cache_evictable);
	EXPECT_EQ(0, s.out_cache_pinned);
	EXPECT_EQ(rz, s.out_reserved_pages);
	EXPECT_EQ(p->usable_rows, s.out_free_rows);
	EXPECT_EQ(0, s.out_held_rows);
	EXPECT_EQ(0, s.out_slot_rows);
	EXPECT_EQ(rz, s.out_reserved_rows);
	EXPECT_EQ(nr_clients, s.out_nr_clients);
	kt_expect_verify(_metadata, p, fd);
}

/*
 * Teardown: verify with the clients' state in place, kill and reap
 * children, close every client, check that a fresh client sees the whole
 * pool free and verify again, then destroy the pool. EXPECT only.
 */
void kt_pool_verify_open(struct __test_metadata *_metadata, struct kt_pool *p)
{
	int i;

	for (i = 0; i < KT_MAX_FDS; i++) {
		if (p->fds[i] >= 0) {
			kt_expect_verify(_metadata, p, p->fds[i]);
			return;
		}
	}
}

void kt_pool_reap(struct kt_pool *p)
{
	int i;

	for (i = 0; i < KT_MAX_PIDS; i++) {
		if (p->pids[i] > 0) {
			kill(p->pids[i], SIGKILL);
			kt_pool_wait(p, p->pids[i]);
		}
	}
}

void kt_pool_destroy_whole(struct __test_metadata *_metadata,
			   struct kt_pool *p, kt_expect_full_fn expect_full)
{
	int fd = kt_open_id(p->id, O_RDWR | O_CLOEXEC);

	EXPECT_LE(0, fd);
	if (fd >= 0) {
		expect_full(_metadata, p, fd, 1);
		close(fd);
	}
	EXPECT_EQ(0, kt_destroy(p->ctl, p->id));
	p->created = false;
}

void kt_pool_close_ctl(struct kt_pool *p)
{
	if (p->ctl >= 0)
		close(p->ctl);
	p->ctl = -1;
}

void kt_pool_fini(struct __test_metadata *_metadata,
		  struct kt_pool *p)
{
	int i;

	if (p->created) {
		kt_pool_verify_open(_metadata, p);
		kt_pool_reap(p);
		for (i = 0; i < KT_MAX_FDS; i++) {
			if (p->fds[i] >= 0) {
				close(p->fds[i]);
				p->fds[i] = -1;
			}
		}
		kt_pool_destroy_whole(_metadata, p, kt_expect_pool_full);
	}
	kt_pool_close_ctl(p);
}

/*
 * Two pages: the first read-write, the second PROT_NONE. Returns the start;
 * kt_fault_edge(base) is the first byte that faults.
 */
void *kt_map_guarded(void)
{
	char *p = mmap(NULL, 2 * KT_PAGE_SIZE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	if (mprotect(p + KT_PAGE_SIZE, KT_PAGE_SIZE, PROT_NONE)) {
		munmap(p, 2 * KT_PAGE_SIZE);
		return NULL;
	}
	memset(p, 0, KT_PAGE_SIZE);
	return p;
}

void *kt_fault_edge(void *base)
{
	return (char *)base + KT_PAGE_SIZE;
}

/*
 * Every page id in ids[0..n) is a real, distinct page of the pool, and not
 * page 0 when the pool reserves it. seen (nr_pages bytes) accumulates over
 * calls so distinctness holds across rows. Returns "" or what is wrong.
 */
const char *kt_check_ids(const struct kt_pool *p,
			 const __u32 *ids, __u32 n,
			 unsigned char *seen)
{
	static char buf[96];
	__u32 i;

	for (i = 0; i < n; i++) {
		__u32 id = ids[i];

		if (id == KVPOOL_PAGE_NONE || id >= p->geo.nr_pages) {
			snprintf(buf, sizeof(buf), "page id %u out of range", id);
			return buf;
		}
		if (id == 0 && (p->geo.flags & KVPOOL_CREATE_RESERVE_ZERO))
			return "reserved page 0 handed out";
		if (seen[id]) {
			snprintf(buf, sizeof(buf), "page %u handed out twice", id);
			return buf;
		}
		seen[id] = 1;
	}
	return "";
}

/* ---- arenas ------------------------------------------------------------- */

int kt_host_memfd(__u64 bytes)
{
	int fd = memfd_create("kvptest-arena", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	if (fd < 0)
		return -1;
	if (ftruncate(fd, (off_t)bytes) ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)) {
		close(fd);
		return -1;
	}
	return fd;
}

int kt_host_arena(int ctl, __u32 id, __u32 nr_pages, __u64 page_bytes)
{
	struct kvpool_arena_chunk ch = { 0 };
	int ret;

	ch.bytes = (__u64)nr_pages * page_bytes;
	ch.fd = kt_host_memfd(ch.bytes);
	if (ch.fd < 0)
		return errno ? errno : EIO;
	ret = kt_arena_set(ctl, id, KVPOOL_ARENA_HOST, page_bytes, &ch, 1,
			   NULL);
	close(ch.fd);
	return ret;
}

#define KT_FAKE_CUDA	"/sys/module/kvpool/parameters/fake_cuda"

int kt_fake_cuda(int on)
{
	char old = 0;
	int fd, ret;

	fd = open(KT_FAKE_CUDA, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ret = pread(fd, &old, 1, 0) == 1 &&
	      pwrite(fd, on ? "1" : "0", 1, 0) == 1 ? 0 : -EIO;
	close(fd);
	if (ret)
		return ret;
	return old == 'Y' || old == '1';
}

int kt_fake_export(void)
{
	return posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
}

int kt_find_gpu(__u32 *domain, __u32 *devid, char *name, size_t len)
{
	DIR *d = opendir("/sys/bus/pci/devices");
	struct dirent *e;
	int ret = -ENODEV;

	if (!d)
		return -ENODEV;
	while (ret && (e = readdir(d))) {
		unsigned int dom, bus, dev, fn;
		char path[300], cls[32];

		if (sscanf(e->d_name, "%x:%x:%x.%x", &dom, &bus, &dev, &fn) != 4)
			continue;
		snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/class",
			 e->d_name);
		if (kt_read_text(path, cls, sizeof(cls)) ||
		    strtoul(cls, NULL, 16) >> 16 != 0x03)
			continue;
		if (domain)
			*domain = dom;
		if (devid)
			*devid = bus << 8 | dev << 3 | fn;
		if (name)
			snprintf(name, len, "%.*s", (int)len - 1, e->d_name);
		ret = 0;
	}
	closedir(d);
	return ret;
}

int kt_create_gpu_pool(int ctl, __u32 nr_pages, __u32 *id)
{
	struct kvpool_ctl_create c = {
		.size = sizeof(c), .flags = KVPOOL_CREATE_GPU,
		.nr_pages = nr_pages, .page_tokens = 1, .nr_rows = 4,
		.row_tokens = 16,
	};
	int ret = kt_find_gpu(&c.gpu_domain, &c.gpu_devid, NULL, 0);

	if (!ret)
		ret = -kt_ioctl(ctl, KVPOOL_CTL_CREATE, &c);
	if (!ret)
		*id = c.out_pool_id;
	return ret;
}

int kt_pty_index(int fd)
{
	unsigned int n;

	return ioctl(fd, TIOCGPTN, &n) ? -1 : (int)n;
}

int kt_arena_set(int ctl, __u32 id, __u32 kind, __u64 page_bytes,
		 const struct kvpool_arena_chunk *chunks, __u32 nr,
		 __u32 *error_index)
{
	struct kvpool_ctl_arena_set s = {
		.size = sizeof(s), .pool_id = id, .kind = kind,
		.page_bytes = page_bytes, .nr_chunks = nr,
		.chunk_entry_len = sizeof(*chunks), .chunks = kt_ptr(chunks),
		.out_error_index = 0xdeadbeef,
	};
	int ret = kt_ioctl(ctl, KVPOOL_CTL_ARENA_SET, &s);

	if (error_index)
		*error_index = s.out_error_index;
	return ret;
}

int kt_arena_info(int fd, struct kvpool_arena *a)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	return kt_ioctl(fd, KVPOOL_ARENA, a);
}

int kt_arena_fds(int fd, __u32 first, __u32 count,
		 struct kvpool_arena_fd *out, struct kvpool_arena *a)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->flags = KVPOOL_ARENA_FDS;
	a->first_chunk = first;
	a->count = count;
	a->fd_entry_len = sizeof(*out);
	a->fds = kt_ptr(out);
	return kt_ioctl(fd, KVPOOL_ARENA, a);
}
