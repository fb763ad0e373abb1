// SPDX-License-Identifier: GPL-2.0-only
/*
 * kvptest_agent: the agent processes of the tenant tests and the RPC
 * between them and the test; see kvptest_agent.h.
 *
 * Copyright (C) 2026 The kvpool authors
 */
#include "kvptest_agent.h"
#include "kvptest_tenant.h"

/* The one request and answer in flight (export_test builds its own). */
struct kt_ag_req kt_ag_rq;
struct kt_ag_rep kt_ag_rp;

static void kt_agent_serve(int sock) __attribute__((noreturn));

/* The agent's side: answer requests until the socket closes. */
static void kt_agent_serve(int sock)
{
	static struct kt_ag_req rq;
	static struct kt_ag_rep rp;
	int slots[KT_AG_SLOTS];
	int i;

	for (i = 0; i < KT_AG_SLOTS; i++)
		slots[i] = -1;
	for (;;) {
		int in_fd = -1, out_fd = -1, nfd = 0, fd = -1;
		bool close_out = false;
		ssize_t n;

		n = kt_recv_fds(sock, &rq, sizeof(rq), &in_fd, 1, &nfd, 0);
		if (n == 0)
			_exit(0);	/* the test is gone or done */
		if (n != (ssize_t)sizeof(rq))
			_exit(3);
		if (!nfd)
			in_fd = -1;
		memset(&rp, 0, sizeof(rp));
		if (rq.slot < KT_AG_SLOTS)
			fd = slots[rq.slot];
		switch (rq.op) {
		case KT_AG_OPEN:
			for (i = 0; i < KT_AG_SLOTS && slots[i] >= 0; i++)
				;
			rq.path[sizeof(rq.path) - 1] = 0;
			if (i == KT_AG_SLOTS) {
				rp.err = ENFILE;
				break;
			}
			slots[i] = open(rq.path, O_RDWR | O_CLOEXEC);
			rp.err = slots[i] < 0 ? errno : 0;
			rp.val = i;
			break;
		case KT_AG_CLOSE:
			if (fd < 0) {
				rp.err = EBADSLT;
				break;
			}
			close(fd);
			slots[rq.slot] = -1;
			break;
		case KT_AG_TAKE_FD:
			for (i = 0; i < KT_AG_SLOTS && slots[i] >= 0; i++)
				;
			if (in_fd < 0 || i == KT_AG_SLOTS) {
				rp.err = EBADSLT;
				break;
			}
			slots[i] = in_fd;
			in_fd = -1;
			rp.val = i;
			break;
		case KT_AG_GIVE_FD:
			if (fd < 0)
				rp.err = EBADSLT;
			out_fd = fd;
			break;
		case KT_AG_IOCTL: {
			int r;

			if (fd < 0 || rq.st_len > KT_AG_ST ||
			    rq.arr_len > KT_AG_ARR) {
				rp.err = EBADSLT;
				break;
			}
			for (i = 0; i < 2; i++) {
				__u64 p = kt_ptr(rq.arr + rq.ptr_arr[i]);

				if (rq.ptr_off[i] != KT_AG_NONE)
					memcpy(rq.st + rq.ptr_off[i], &p,
					       sizeof(p));
			}
			if (rq.fd_in_off != KT_AG_NONE)
				memcpy(rq.st + rq.fd_in_off, &in_fd,
				       sizeof(in_fd));
			r = ioctl(fd, rq.cmd, rq.st);
			rp.err = r < 0 ? errno : r > 0 ? -r : 0;
			rp.ret = r;
			if (!rp.err && rq.fd_out_off != KT_AG_NONE) {
				memcpy(&out_fd, rq.st + rq.fd_out_off,
				       sizeof(out_fd));
				rp.val2 = fcntl(out_fd, F_GETFD);
				close_out = true;
			}
			memcpy(rp.st, rq.st, rq.st_len);
			memcpy(rp.arr, rq.arr, rq.arr_len);
			break;
		}
		case KT_AG_FDINFO:
			rq.path[sizeof(rq.path) - 1] = 0;
			rp.err = fd < 0 ? EBADSLT :
				 kt_fdinfo_u64(fd, rq.path, &rp.val);
			break;
		case KT_AG_POLL: {
			struct pollfd pfd = { .fd = fd, .events = POLLPRI | POLLIN };
			long long t0 = kt_now_ms();

			rp.ret = poll(&pfd, 1, rq.arg);
			rp.err = rp.ret < 0 ? errno : 0;
			rp.val = pfd.revents;
			rp.val2 = kt_now_ms() - t0;
			break;
		}
		case KT_AG_EXIT:
			_exit(rq.arg);
		default:
			rp.err = EBADRQC;
		}
		if (in_fd >= 0)
			close(in_fd);
		if (kt_send_fds(sock, &rp, sizeof(rp), &out_fd,
				out_fd >= 0 && !rp.err, 0))
			_exit(4);
		if (close_out)
			close(out_fd);
	}
}

/*
 * Start an agent: a child that joins @cgroup (a folder, or NULL to stay),
 * becomes @uid (or stays root when uid < 0), optionally drops
 * CAP_SYS_ADMIN, closes every file it inherited and then serves. Setup
 * only (ASSERTs); the fixture's teardown kills it.
 */
void kt_agent_start(struct __test_metadata *_metadata,
		    struct kt_pool *p, struct kt_agent *a,
		    const char *cgroup, int uid,
		    bool drop_sys_admin)
{
	int sv[2], nfd, fd;
	pid_t pid;
	ssize_t n;

	a->pid = -1;
	a->sock = -1;
	a->pending = 0;
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0,
				sv));
	pid = kt_pool_fork(_metadata, p);
	if (pid == 0) {
		struct kt_ag_rep *rp = &kt_ag_rp;

		memset(rp, 0, sizeof(*rp));
		close(sv[0]);
		if (cgroup)
			rp->err = kt_cgroup_move(cgroup, 0);
		if (!rp->err && uid >= 0)
			rp->err = kt_become(uid);
		if (!rp->err && drop_sys_admin)
			rp->err = kt_drop_sys_admin();
		/* Nothing inherited may keep a client alive. */
		for (fd = 3; fd < 1024; fd++)
			if (fd != sv[1])
				close(fd);
		rp->ret = getpid();
		if (kt_send_fds(sv[1], rp, sizeof(*rp), NULL, 0, 0))
			_exit(5);
		kt_agent_serve(sv[1]);
	}
	close(sv[1]);
	a->pid = pid;
	a->sock = sv[0];
	n = kt_recv_fds(a->sock, &kt_ag_rp, sizeof(kt_ag_rp), &fd, 1, &nfd,
			0);
	ASSERT_EQ((ssize_t)sizeof(kt_ag_rp), n);
	ASSERT_EQ(0, kt_ag_rp.err) TH_LOG("agent setup (cgroup %s, uid %d): %s",
					  cgroup ? cgroup : "-", uid,
					  strerror(kt_ag_rp.err));
	ASSERT_EQ(pid, kt_ag_rp.ret);
}

void kt_ag_req_init(__u32 op, int slot)
{
	struct kt_ag_req *rq = &kt_ag_rq;

	memset(rq, 0, offsetof(struct kt_ag_req, st));
	rq->op = op;
	rq->slot = slot;
	rq->ptr_off[0] = rq->ptr_off[1] = KT_AG_NONE;
	rq->fd_in_off = rq->fd_out_off = KT_AG_NONE;
}

/* Send kt_ag_rq (and @fd_in if >= 0); 0 or KT_AG_BROKEN. */
int kt_ag_send(struct kt_agent *a, int fd_in)
{
	if (a->sock < 0 || a->pending)
		return KT_AG_BROKEN;
	if (kt_send_fds(a->sock, &kt_ag_rq, sizeof(kt_ag_rq), &fd_in,
			fd_in >= 0, 0))
		return KT_AG_BROKEN;
	a->pending = 1;
	return 0;
}

/*
 * Wait up to @ms for the answer to a request sent; 0 and kt_ag_rp filled,
 * ETIMEDOUT (still pending), or KT_AG_BROKEN. *fd_out gets a file sent
 * back, or -1.
 */
int kt_ag_recv(struct kt_agent *a, int ms, int *fd_out)
{
	struct pollfd pfd = { .fd = a->sock, .events = POLLIN };
	int fd = -1, nfd = 0, r;
	ssize_t n;

	if (fd_out)
		*fd_out = -1;
	if (!a->pending)
		return KT_AG_BROKEN;
	do {
		r = poll(&pfd, 1, ms);
	} while (r < 0 && errno == EINTR);
	if (r == 0)
		return ETIMEDOUT;
	n = kt_recv_fds(a->sock, &kt_ag_rp, sizeof(kt_ag_rp), &fd, 1, &nfd,
			0);
	a->pending = 0;
	if (n != (ssize_t)sizeof(kt_ag_rp)) {
		if (nfd)
			close(fd);
		return KT_AG_BROKEN;
	}
	if (nfd) {
		if (fd_out)
			*fd_out = fd;
		else
			close(fd);
	}
	return 0;
}

/* One request, one answer: the op's errno, or KT_AG_BROKEN. */
int kt_ag_call(struct kt_agent *a, int fd_in, int *fd_out)
{
	int ret = kt_ag_send(a, fd_in);

	if (ret)
		return ret;
	ret = kt_ag_recv(a, KT_AG_TIMEOUT_MS, fd_out);
	if (ret == ETIMEDOUT) {
		/* Never leave an answer to be mistaken for the next one. */
		kill(a->pid, SIGKILL);
		close(a->sock);
		a->sock = -1;
		return KT_AG_BROKEN;
	}
	return ret ? ret : kt_ag_rp.err;
}

/* Open /dev/kvpool@pool in the agent: 0 and *slot, or the errno. */
int ag_open_path(struct kt_agent *a, const char *path,
		 int *slot)
{
	int ret;

	kt_ag_req_init(KT_AG_OPEN, 0);
	snprintf(kt_ag_rq.path, sizeof(kt_ag_rq.path), "%s", path);
	ret = kt_ag_call(a, -1, NULL);
	if (slot)
		*slot = ret ? -1 : (int)kt_ag_rp.val;
	return ret;
}

int ag_open(struct kt_agent *a, __u32 pool, int *slot)
{
	char path[32];

	kt_dev_path(path, sizeof(path), pool);
	return ag_open_path(a, path, slot);
}

int ag_close(struct kt_agent *a, int slot)
{
	kt_ag_req_init(KT_AG_CLOSE, slot);
	return kt_ag_call(a, -1, NULL);
}

/* Hand a file to the agent (it keeps a copy in a slot). */
int ag_take_fd(struct kt_agent *a, int fd, int *slot)
{
	int ret;

	kt_ag_req_init(KT_AG_TAKE_FD, 0);
	ret = kt_ag_call(a, fd, NULL);
	if (slot)
		*slot = ret ? -1 : (int)kt_ag_rp.val;
	return ret;
}

/* Get a copy of the agent's file in @slot. */
int ag_give_fd(struct kt_agent *a, int slot, int *fd)
{
	kt_ag_req_init(KT_AG_GIVE_FD, slot);
	return kt_ag_call(a, -1, fd);
}

int ag_fdinfo(struct kt_agent *a, int slot, const char *key,
	      __u64 *val)
{
	int ret;

	kt_ag_req_init(KT_AG_FDINFO, slot);
	snprintf(kt_ag_rq.path, sizeof(kt_ag_rq.path), "%s", key);
	ret = kt_ag_call(a, -1, NULL);
	*val = kt_ag_rp.val;
	return ret;
}

/* Start a poll() in the agent without waiting for it. */
int ag_poll_start(struct kt_agent *a, int slot, int ms)
{
	kt_ag_req_init(KT_AG_POLL, slot);
	kt_ag_rq.arg = ms;
	return kt_ag_send(a, -1);
}

/*
 * Wait up to @ms for that poll() to end: 0 (then *ret is poll()'s value,
 * *revents its events, *spent_ms its time), ETIMEDOUT or KT_AG_BROKEN.
 */
int ag_poll_wait(struct kt_agent *a, int ms, int *ret,
		 int *revents, long *spent_ms)
{
	int r = kt_ag_recv(a, ms, NULL);

	if (r)
		return r;
	*ret = kt_ag_rp.ret;
	*revents = (int)kt_ag_rp.val;
	if (spent_ms)
		*spent_ms = (long)kt_ag_rp.val2;
	return kt_ag_rp.err;
}

int ag_poll(struct kt_agent *a, int slot, int ms, int *ret,
	    int *revents)
{
	int r = ag_poll_start(a, slot, ms);

	if (r)
		return r;
	return ag_poll_wait(a, ms + KT_AG_TIMEOUT_MS, ret, revents, NULL);
}

/*
 * ioctl(@slot, @cmd, @st) in the agent. @arr (@arr_len bytes) travels
 * along; the __u64 fields at @p0 and @p1 of @st (KT_AG_NONE: none) are
 * aimed at arr + @a0 and arr + @a1 there. @st and @arr come back as the
 * agent's ioctl left them, pointers restored.
 */
/* The same, with the array sent (@in, NULL: zeros) and got back (@out) apart. */
int ag_ioctl_io(struct kt_agent *a, int slot,
		unsigned long cmd, void *st, size_t st_len,
		const void *in, void *arr, size_t arr_len,
		__u32 p0, __u32 a0, __u32 p1, __u32 a1,
		int fd_in, __u32 fd_in_off, int *fd_out,
		__u32 fd_out_off)
{
	struct kt_ag_req *rq = &kt_ag_rq;
	__u64 save0 = 0, save1 = 0;
	int ret;

	if (st_len > KT_AG_ST || arr_len > KT_AG_ARR)
		return KT_AG_BROKEN;
	kt_ag_req_init(KT_AG_IOCTL, slot);
	rq->cmd = cmd;
	rq->st_len = st_len;
	rq->arr_len = arr_len;
	rq->ptr_off[0] = p0;
	rq->ptr_arr[0] = a0;
	rq->ptr_off[1] = p1;
	rq->ptr_arr[1] = a1;
	rq->fd_in_off = fd_in_off;
	rq->fd_out_off = fd_out_off;
	memcpy(rq->st, st, st_len);
	if (arr_len && in)
		memcpy(rq->arr, in, arr_len);
	else if (arr_len)
		memset(rq->arr, 0, arr_len);
	if (p0 != KT_AG_NONE)
		memcpy(&save0, (char *)st + p0, sizeof(save0));
	if (p1 != KT_AG_NONE)
		memcpy(&save1, (char *)st + p1, sizeof(save1));
	ret = kt_ag_call(a, fd_in, fd_out);
	if (ret == KT_AG_BROKEN)
		return ret;
	memcpy(st, kt_ag_rp.st, st_len);
	if (arr_len)
		memcpy(arr, kt_ag_rp.arr, arr_len);
	if (p0 != KT_AG_NONE)
		memcpy((char *)st + p0, &save0, sizeof(save0));
	if (p1 != KT_AG_NONE)
		memcpy((char *)st + p1, &save1, sizeof(save1));
	return ret;
}

int ag_ioctl_fd(struct kt_agent *a, int slot,
		unsigned long cmd, void *st, size_t st_len,
		void *arr, size_t arr_len, __u32 p0, __u32 a0,
		__u32 p1, __u32 a1, int fd_in, __u32 fd_in_off,
		int *fd_out, __u32 fd_out_off)
{
	return ag_ioctl_io(a, slot, cmd, st, st_len, arr, arr, arr_len, p0,
			   a0, p1, a1, fd_in, fd_in_off, fd_out, fd_out_off);
}

int ag_ioctl(struct kt_agent *a, int slot, unsigned long cmd,
	     void *st, size_t st_len, void *arr, size_t arr_len,
	     __u32 p0, __u32 a0, __u32 p1, __u32 a1)
{
	return ag_ioctl_fd(a, slot, cmd, st, st_len, arr, arr_len, p0, a0, p1,
			   a1, -1, KT_AG_NONE, NULL, KT_AG_NONE);
}

/* A struct without arrays. */
int ag_ioctl0(struct kt_agent *a, int slot, unsigned long cmd,
	      void *st, size_t st_len)
{
	return ag_ioctl(a, slot, cmd, st, st_len, NULL, 0, KT_AG_NONE, 0,
			KT_AG_NONE, 0);
}

int ag_stats(struct kt_agent *a, int slot,
	     struct kvpool_stats *s)
{
	memset(s, 0, sizeof(*s));
	s->size = sizeof(*s);
	return ag_ioctl0(a, slot, KVPOOL_STATS, s, sizeof(*s));
}

int ag_pressure(struct kt_agent *a, int slot,
		struct kvpool_pressure *p)
{
	memset(p, 0, sizeof(*p));
	p->size = sizeof(*p);
	p->out_ask_pages = p->out_reasons = 0xdeadbeef;
	return ag_ioctl0(a, slot, KVPOOL_PRESSURE, p, sizeof(*p));
}

int ag_verify(struct kt_agent *a, int slot,
	      struct kvpool_verify *v)
{
	memset(v, 0, sizeof(*v));
	v->size = sizeof(*v);
	v->out_violations = 0xdeadbeef;
	return ag_ioctl0(a, slot, KVPOOL_VERIFY, v, sizeof(*v));
}

int ag_alloc(struct kt_agent *a, int slot, __u32 count,
	     struct kvpool_handle *h, __u32 *out_short)
{
	struct kvpool_row_alloc ra = {
		.size = sizeof(ra),
		.count = count,
		.entry_len = sizeof(*h),
		.out_short = 0xdeadbeef,
	};
	int ret;

	if (count * sizeof(*h) > KT_AG_ARR)
		return KT_AG_BROKEN;
	ret = ag_ioctl_io(a, slot, KVPOOL_ROW_ALLOC, &ra, sizeof(ra), NULL, h,
			  count * sizeof(*h),
			  offsetof(struct kvpool_row_alloc, handles), 0,
			  KT_AG_NONE, 0, -1, KT_AG_NONE, NULL, KT_AG_NONE);
	if (out_short)
		*out_short = ra.out_short;
	return ret;
}

int ag_alloc1(struct kt_agent *a, int slot,
	      struct kvpool_handle *h)
{
	return ag_alloc(a, slot, 1, h, NULL);
}

/*
 * Extend one row to @new_len; *out_short gets out_short, *nr_new
 * out_nr_new, and @pages (if given, room for @cap <= 1024) the new ids.
 */
int ag_extend1(struct kt_agent *a, int slot,
	       struct kvpool_handle h, __u32 new_len,
	       __u32 *out_short, __u32 *nr_new, __u32 *pages,
	       __u32 cap)
{
	struct {
		struct kvpool_extend_entry e;
		__u32 pages[1024];
	} buf;
	struct kvpool_extend x = {
		.size = sizeof(x),
		.count = 1,
		.entry_len = sizeof(buf.e),
		.pages_cap = pages ? cap : 1024,
		.page_entry_len = sizeof(__u32),
		.out_short = 0xdeadbeef,
	};
	int ret;

	if (x.pages_cap > 1024)
		return KT_AG_BROKEN;
	memset(&buf, 0, sizeof(buf));
	buf.e.handle = h;
	buf.e.new_len = new_len;
	ret = ag_ioctl(a, slot, KVPOOL_EXTEND, &x, sizeof(x), &buf,
		       sizeof(buf), offsetof(struct kvpool_extend, entries), 0,
		       offsetof(struct kvpool_extend, pages),
		       offsetof(typeof(buf), pages));
	if (out_short)
		*out_short = x.out_short;
	if (nr_new)
		*nr_new = buf.e.out_nr_new;
	if (pages && !ret)
		memcpy(pages, buf.pages, x.out_nr_pages * sizeof(__u32));
	return ret;
}

int ag_grow(struct kt_agent *a, int slot,
	    struct kvpool_handle h, __u32 new_len)
{
	return ag_extend1(a, slot, h, new_len, NULL, NULL, NULL, 0);
}

/* A struct kvpool_batch op on @count entries of @esize bytes. */
int ag_batch(struct kt_agent *a, int slot, unsigned long cmd,
	     __u32 flags, void *entries, __u32 count,
	     size_t esize, struct kvpool_batch *out)
{
	struct kvpool_batch b = {
		.size = sizeof(b),
		.flags = flags,
		.count = count,
		.entry_len = esize,
		.out_error_index = 0xdeadbeef,
		.out_nr_pages = 0xdeadbeef,
	};
	int ret;

	ret = ag_ioctl(a, slot, cmd, &b, sizeof(b), entries, count * esize,
		       offsetof(struct kvpool_batch, entries), 0, KT_AG_NONE,
		       0);
	if (out)
		*out = b;
	return ret;
}

int ag_len_op1(struct kt_agent *a, int slot, unsigned long cmd,
	       struct kvpool_handle h, __u32 len, __u32 *nr)
{
	struct kvpool_len_entry e = { .handle = h, .len = len };
	struct kvpool_batch b;
	int ret = ag_batch(a, slot, cmd, 0, &e, 1, sizeof(e), &b);

	if (nr)
		*nr = b.out_nr_pages;
	return ret;
}

int ag_commit1(struct kt_agent *a, int slot,
	       struct kvpool_handle h, __u32 len)
{
	return ag_len_op1(a, slot, KVPOOL_COMMIT, h, len, NULL);
}

int ag_donate1(struct kt_agent *a, int slot,
	       struct kvpool_handle h, __u32 upto, __u32 *nr)
{
	return ag_len_op1(a, slot, KVPOOL_DONATE, h, upto, nr);
}

int ag_swa_free1(struct kt_agent *a, int slot,
		 struct kvpool_handle h, __u32 edge, __u32 *nr)
{
	return ag_len_op1(a, slot, KVPOOL_SWA_FREE, h, edge, nr);
}

int ag_release1(struct kt_agent *a, int slot,
		struct kvpool_handle h, __u32 flags, __u32 *nr)
{
	struct kvpool_batch b;
	int ret = ag_batch(a, slot, KVPOOL_RELEASE, flags, &h, 1, sizeof(h),
			   &b);

	if (nr)
		*nr = b.out_nr_pages;
	return ret;
}

int ag_trim1(struct kt_agent *a, int slot,
	     struct kvpool_handle h, __u32 *nr)
{
	struct kvpool_batch b;
	int ret = ag_batch(a, slot, KVPOOL_TRIM, 0, &h, 1, sizeof(h), &b);

	if (nr)
		*nr = b.out_nr_pages;
	return ret;
}

int ag_evict(struct kt_agent *a, int slot, __u32 *ids,
	     __u32 count, __u32 *nr)
{
	struct kvpool_batch b;
	int ret = ag_batch(a, slot, KVPOOL_CACHE_EVICT, 0, ids, count,
			   sizeof(*ids), &b);

	if (nr)
		*nr = b.out_nr_pages;
	return ret;
}

int ag_attach(struct kt_agent *a, int slot,
	      struct kvpool_handle h, __u32 *ids, __u32 n)
{
	struct kvpool_attach at = {
		.size = sizeof(at),
		.handle = h,
		.nr_pages = n,
		.page_entry_len = sizeof(*ids),
	};

	return ag_ioctl(a, slot, KVPOOL_ATTACH_PREFIX, &at, sizeof(at), ids,
			n * sizeof(*ids), offsetof(struct kvpool_attach, pages),
			0, KT_AG_NONE, 0);
}

int ag_slot_op(struct kt_agent *a, int slot, unsigned long cmd,
	       __u64 session, struct kvpool_handle *h,
	       __u32 *nr)
{
	struct kvpool_slot s = {
		.size = sizeof(s),
		.session_id = session,
		.out_nr_pages = 0xdeadbeef,
	};
	int ret;

	if (cmd == KVPOOL_TO_SLOT)
		s.handle = *h;
	ret = ag_ioctl0(a, slot, cmd, &s, sizeof(s));
	if (cmd == KVPOOL_FROM_SLOT && h && !ret)
		*h = s.handle;
	if (nr)
		*nr = s.out_nr_pages;
	return ret;
}

int ag_to_slot(struct kt_agent *a, int slot, __u64 session,
	       struct kvpool_handle h)
{
	return ag_slot_op(a, slot, KVPOOL_TO_SLOT, session, &h, NULL);
}

/* ROW_QUERY: @q filled, @pages (room for @cap) the ids. */
int ag_query(struct kt_agent *a, int slot,
	     struct kvpool_handle h, __u32 *pages, __u32 cap,
	     struct kvpool_row_query *q)
{
	memset(q, 0, sizeof(*q));
	q->size = sizeof(*q);
	q->handle = h;
	q->pages_cap = cap;
	q->page_entry_len = sizeof(__u32);
	return ag_ioctl_io(a, slot, KVPOOL_ROW_QUERY, q, sizeof(*q), NULL,
			   pages, cap * sizeof(__u32),
			   offsetof(struct kvpool_row_query, pages), 0,
			   KT_AG_NONE, 0, -1, KT_AG_NONE, NULL, KT_AG_NONE);
}

/* A row as ag_query sees it, like kt_snap_row() (kvptest.h). */
void ag_snap_row(struct kt_agent *a, int slot,
		 struct kvpool_handle h, struct kt_row_snap *s)
{
	struct kvpool_row_query q;
	int err;

	memset(s, 0, sizeof(*s));
	err = ag_query(a, slot, h, s->pages,
		       KT_AG_ARR / sizeof(__u32) < KT_ROW_MAX_PAGES ?
		       KT_AG_ARR / sizeof(__u32) : KT_ROW_MAX_PAGES, &q);
	kt_snap_fill(s, err, &q);
}

/* EXPORT in the agent; *xfd gets the file, now the caller's. */
int ag_export(struct kt_agent *a, int slot, __u32 flags,
	      struct kvpool_handle h, __u64 session, int *xfd,
	      __u32 *nr_pages, int *fd_flags)
{
	struct kvpool_export x;
	int ret;

	kt_export_init(&x, flags, h, session);
	ret = ag_ioctl_fd(a, slot, KVPOOL_EXPORT, &x, sizeof(x), NULL, 0,
			  KT_AG_NONE, 0, KT_AG_NONE, 0, -1, KT_AG_NONE, xfd,
			  offsetof(struct kvpool_export, out_fd));
	if (nr_pages)
		*nr_pages = x.out_nr_pages;
	if (fd_flags)
		*fd_flags = ret ? -1 : (int)kt_ag_rp.val2;
	return ret;
}

/* IMPORT in the agent of the caller's file @xfd (sent along). */
int ag_import(struct kt_agent *a, int slot, int xfd,
	      struct kvpool_handle *h, __u32 *nr_pages)
{
	struct kvpool_import im = {
		.size = sizeof(im),
		.out_handle = { 0xdeadbeef, 0xdeadbeef },
		.out_nr_pages = 0xdeadbeef,
	};
	int ret;

	ret = ag_ioctl_fd(a, slot, KVPOOL_IMPORT, &im, sizeof(im), NULL, 0,
			  KT_AG_NONE, 0, KT_AG_NONE, 0, xfd,
			  offsetof(struct kvpool_import, fd), NULL,
			  KT_AG_NONE);
	if (h)
		*h = im.out_handle;
	if (nr_pages)
		*nr_pages = im.out_nr_pages;
	return ret;
}

/*
 * Put @n pages into the agent client's prefix cache (unpinned): a row of
 * @n pages of @pt tokens, committed and released with
 * KVPOOL_RELEASE_DONATE. @ids (room for @n, may be NULL) gets their ids.
 */
int ag_make_cache(struct kt_agent *a, int slot, __u32 pt,
		  __u32 n, __u32 *ids)
{
	struct kvpool_row_query q;
	struct kvpool_handle h;
	__u32 nr = 0;
	int ret;

	ret = ag_alloc1(a, slot, &h);
	if (!ret)
		ret = ag_grow(a, slot, h, n * pt);
	if (!ret)
		ret = ag_commit1(a, slot, h, n * pt);
	if (!ret && ids)
		ret = ag_query(a, slot, h, ids, n, &q);
	if (!ret)
		ret = ag_release1(a, slot, h, KVPOOL_RELEASE_DONATE, &nr);
	if (!ret && nr != 0)
		ret = -1;	/* every page went to the cache */
	return ret;
}

/* SIGKILL an agent and reap it; returns its wait status. */
int kt_agent_kill(struct kt_pool *p, struct kt_agent *a)
{
	int status = -1;

	if (a->pid > 0) {
		kill(a->pid, SIGKILL);
		status = kt_pool_wait(p, a->pid);
	}
	if (a->sock >= 0)
		close(a->sock);
	a->pid = -1;
	a->sock = -1;
	a->pending = 0;
	return status;
}
