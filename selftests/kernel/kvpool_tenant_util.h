/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Helpers for the kvpool selftests of tenants, pressure and export/import
 * (tenant_test, pressure_test, export_test, torture_test), on top of
 * kvpool_util.h.
 *
 * - Wrappers for the control ops of tenants and watermarks, PRESSURE,
 *   EXPORT and IMPORT: 0 or the positive errno, like kvpool_util.h's.
 * - cgroup v2: mount it at /sys/fs/cgroup when the guest has not, make and
 *   remove child cgroups, the ids the kernel uses for tenants.
 * - Agents: a forked process that first joins a cgroup and drops to a uid
 *   (so that what it opens belongs to another tenant), then runs ioctls
 *   for the test over a SOCK_SEQPACKET socket, passing files both ways
 *   with SCM_RIGHTS. Its wrappers (ag_*) return 0 or the errno of the op
 *   in the agent, or KVP_AG_BROKEN when the agent is gone, which no errno
 *   assertion accepts. The agent never touches the harness: it only
 *   answers, so all checking stays in the test process.
 * - struct kvp_tenv: a fixture's pool plus its agents and cgroups, and a
 *   teardown that kills and reaps the agents, closes every file of the
 *   pool (export files included) and checks that the whole pool came back
 *   (export figures too), that VERIFY is clean and that it can be
 *   destroyed.
 *
 * Copyright (C) 2026 The kvpool authors
 */
#ifndef KVPOOL_TENANT_UTIL_H
#define KVPOOL_TENANT_UTIL_H

#include "kvpool_util.h"

#include <grp.h>
#include <poll.h>
#include <time.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <linux/capability.h>

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC	0x63677270
#endif

#define KVP_CGROOT		"/sys/fs/cgroup"
#define KVP_NOBODY		65534
#define KVP_EXPORT_LINK		"anon_inode:[kvpool-row]"

/* ---- time ---------------------------------------------------------------- */

static inline long long kvp_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static inline void kvp_sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* ---- control ops of tenants and watermarks -------------------------------- */

static inline void kvp_tenant_init(struct kvpool_ctl_tenant *t, __u32 pool,
				   __u64 cgroup_id, __u32 uid,
				   __u32 max_pages, __u32 min_pages,
				   __u32 max_rows, const char *label)
{
	memset(t, 0, sizeof(*t));
	t->size = sizeof(*t);
	t->pool_id = pool;
	t->cgroup_id = cgroup_id;
	t->uid = uid;
	t->max_pages = max_pages;
	t->min_pages = min_pages;
	t->max_rows = max_rows;
	if (label)
		snprintf(t->label, sizeof(t->label), "%s", label);
}

static inline int kvp_tenant_set(int ctl, struct kvpool_ctl_tenant *t)
{
	return kvp_ioctl(ctl, KVPOOL_CTL_TENANT_SET, t);
}

/* Set the limits of the tenant (cgroup_id, uid); *id gets its id. */
static inline int kvp_tenant_limits(int ctl, __u32 pool, __u64 cgroup_id,
				    __u32 uid, __u32 max_pages,
				    __u32 min_pages, __u32 max_rows, __u32 *id)
{
	struct kvpool_ctl_tenant t;
	int ret;

	kvp_tenant_init(&t, pool, cgroup_id, uid, max_pages, min_pages,
			max_rows, NULL);
	ret = kvp_tenant_set(ctl, &t);
	if (id)
		*id = t.tenant_id;
	return ret;
}

/* The same, naming the tenant by id. */
static inline int kvp_tenant_limits_id(int ctl, __u32 pool, __u32 id,
				       __u32 max_pages, __u32 min_pages,
				       __u32 max_rows)
{
	struct kvpool_ctl_tenant t;

	kvp_tenant_init(&t, pool, 0, 0, max_pages, min_pages, max_rows, NULL);
	t.flags = KVPOOL_TENANT_BY_ID;
	t.tenant_id = id;
	return kvp_tenant_set(ctl, &t);
}

static inline int kvp_tenant_list(int ctl, __u32 pool,
				  struct kvpool_tenant_info *ti, __u32 count,
				  __u32 *nr)
{
	struct kvpool_ctl_tenant_list l = {
		.size = sizeof(l),
		.pool_id = pool,
		.count = count,
		.entry_len = sizeof(*ti),
		.tenants = kvp_ptr(ti),
		.out_nr_tenants = 0xdeadbeef,
	};
	int ret = kvp_ioctl(ctl, KVPOOL_CTL_TENANT_LIST, &l);

	if (nr)
		*nr = l.out_nr_tenants;
	return ret;
}

#define KVP_MAX_LIST 64

/* The entry of tenant @id from a fresh TENANT_LIST: 0, ENOENT or an errno. */
static inline int kvp_tenant_get(int ctl, __u32 pool, __u32 id,
				 struct kvpool_tenant_info *out)
{
	struct kvpool_tenant_info ti[KVP_MAX_LIST];
	__u32 nr, i;
	int ret;

	memset(out, 0xa5, sizeof(*out));
	ret = kvp_tenant_list(ctl, pool, ti, KVP_MAX_LIST, &nr);
	if (ret)
		return ret;
	for (i = 0; i < nr && i < KVP_MAX_LIST; i++) {
		if (ti[i].tenant_id == id) {
			*out = ti[i];
			return 0;
		}
	}
	return ENOENT;
}

static inline int kvp_set_wmark(int ctl, __u32 pool, __u32 low, __u32 high)
{
	struct kvpool_ctl_wmark w = {
		.size = sizeof(w),
		.pool_id = pool,
		.low_wmark = low,
		.high_wmark = high,
	};

	return kvp_ioctl(ctl, KVPOOL_CTL_SET_WMARK, &w);
}

static inline int kvp_pressure(int fd, struct kvpool_pressure *p)
{
	memset(p, 0, sizeof(*p));
	p->size = sizeof(*p);
	p->out_ask_pages = p->out_reasons = p->out_free_pages = 0xdeadbeef;
	return kvp_ioctl(fd, KVPOOL_PRESSURE, p);
}

/* kvp_stats_diff() plus the export and tenant fields ("" if equal). */
static inline const char *kvp_stats_diff_x(const struct kvpool_stats *a,
					   const struct kvpool_stats *b)
{
	const char *d = kvp_stats_diff(a, b);

	if (*d)
		return d;
#define KVP_CMP(f) do { if (a->f != b->f) return #f; } while (0)
	KVP_CMP(out_export_rows);
	KVP_CMP(out_export_pages);
	KVP_CMP(out_tenant_id);
	KVP_CMP(out_tenant_pages);
	KVP_CMP(out_tenant_rows);
	KVP_CMP(out_tenant_max_pages);
	KVP_CMP(out_tenant_min_pages);
	KVP_CMP(out_tenant_max_rows);
#undef KVP_CMP
	return "";
}

/* The pool-wide fields only: what every client of the pool sees alike. */
static inline const char *kvp_stats_diff_pool(const struct kvpool_stats *a,
					      const struct kvpool_stats *b)
{
#define KVP_CMP(f) do { if (a->f != b->f) return #f; } while (0)
	KVP_CMP(out_free_pages);
	KVP_CMP(out_row_pages);
	KVP_CMP(out_slot_pages);
	KVP_CMP(out_cache_evictable);
	KVP_CMP(out_cache_pinned);
	KVP_CMP(out_reserved_pages);
	KVP_CMP(out_free_rows);
	KVP_CMP(out_held_rows);
	KVP_CMP(out_slot_rows);
	KVP_CMP(out_reserved_rows);
	KVP_CMP(out_nr_clients);
	KVP_CMP(out_export_rows);
	KVP_CMP(out_export_pages);
#undef KVP_CMP
	return "";
}

/* ---- export and import ------------------------------------------------ */

static inline int kvp_export(int fd, __u32 flags, struct kvpool_handle h,
			     __u64 session, int *out_fd, __u32 *nr_pages)
{
	struct kvpool_export x = {
		.size = sizeof(x),
		.flags = flags,
		.handle = h,
		.session_id = session,
		.out_fd = -2,
		.out_nr_pages = 0xdeadbeef,
	};
	int ret = kvp_ioctl(fd, KVPOOL_EXPORT, &x);

	if (out_fd)
		*out_fd = x.out_fd;
	if (nr_pages)
		*nr_pages = x.out_nr_pages;
	return ret;
}

static inline int kvp_export_row(int fd, struct kvpool_handle h, int *xfd,
				 __u32 *nr_pages)
{
	return kvp_export(fd, 0, h, 0, xfd, nr_pages);
}

static inline int kvp_import(int fd, int xfd, struct kvpool_handle *h,
			     __u32 *nr_pages)
{
	struct kvpool_import im = {
		.size = sizeof(im),
		.fd = xfd,
		.out_handle = { 0xdeadbeef, 0xdeadbeef },
		.out_nr_pages = 0xdeadbeef,
	};
	int ret = kvp_ioctl(fd, KVPOOL_IMPORT, &im);

	if (h)
		*h = im.out_handle;
	if (nr_pages)
		*nr_pages = im.out_nr_pages;
	return ret;
}

/* Is @fd an export file? (by its /proc link, "anon_inode:[kvpool-row]") */
static inline bool kvp_is_export_fd(int fd)
{
	char path[64], link[128];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, link, sizeof(link) - 1);
	if (n <= 0)
		return false;
	link[n] = 0;
	return !strcmp(link, KVP_EXPORT_LINK);
}

/* Open files of this process, by /proc/self/fd. */
static inline int kvp_count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int n = 0;

	if (!d)
		return -1;
	while ((de = readdir(d)))
		if (de->d_name[0] != '.')
			n++;
	closedir(d);
	return n - 1;	/* the DIR's own */
}

/* ---- SCM_RIGHTS ------------------------------------------------------ */

/* Send @len bytes with up to 8 files; 0 or the errno. */
static inline int kvp_send_fds(int sock, const void *buf, size_t len,
			       const int *fds, int nfds, int flags)
{
	union {
		char buf[CMSG_SPACE(8 * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t n;

	if (nfds > 8)
		return EINVAL;
	if (nfds > 0) {
		struct cmsghdr *c;

		memset(&u, 0, sizeof(u));
		msg.msg_control = u.buf;
		msg.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
		c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(nfds * sizeof(int));
		memcpy(CMSG_DATA(c), fds, nfds * sizeof(int));
	}
	do {
		n = sendmsg(sock, &msg, MSG_NOSIGNAL | flags);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno;
	return n == (ssize_t)len ? 0 : EMSGSIZE;
}

/*
 * Receive one message of at most @len bytes and up to @maxfds files
 * (O_CLOEXEC). Returns the bytes read (0: the other end is gone) or
 * -errno; *nfds gets the number of files.
 */
static inline ssize_t kvp_recv_fds(int sock, void *buf, size_t len, int *fds,
				   int maxfds, int *nfds, int flags)
{
	union {
		char buf[CMSG_SPACE(8 * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = u.buf, .msg_controllen = sizeof(u.buf),
	};
	struct cmsghdr *c;
	ssize_t n;

	*nfds = 0;
	do {
		n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC | flags);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	for (c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
		int k, cnt;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		cnt = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (k = 0; k < cnt; k++) {
			int fd;

			memcpy(&fd, CMSG_DATA(c) + k * sizeof(int), sizeof(int));
			if (*nfds < maxfds)
				fds[(*nfds)++] = fd;
			else
				close(fd);
		}
	}
	return n;
}

/* ---- credentials ------------------------------------------------------ */

/* Become uid (and gid = uid) with no groups; every capability goes. */
static inline int kvp_become(uid_t uid)
{
	if (setgroups(0, NULL) || setresgid(uid, uid, uid) ||
	    setresuid(uid, uid, uid))
		return errno;
	return 0;
}

/* Drop CAP_SYS_ADMIN from every set, staying uid 0. */
static inline int kvp_drop_sys_admin(void)
{
	struct __user_cap_header_struct h = {
		.version = _LINUX_CAPABILITY_VERSION_3,
		.pid = 0,
	};
	struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3];
	int i = CAP_TO_INDEX(CAP_SYS_ADMIN);

	if (syscall(SYS_capget, &h, d))
		return errno;
	d[i].effective &= ~CAP_TO_MASK(CAP_SYS_ADMIN);
	d[i].permitted &= ~CAP_TO_MASK(CAP_SYS_ADMIN);
	d[i].inheritable &= ~CAP_TO_MASK(CAP_SYS_ADMIN);
	return syscall(SYS_capset, &h, d) ? errno : 0;
}

/* Let anyone open /dev/kvpoolN (the guest's /dev is a writable devtmpfs). */
static inline int kvp_pool_chmod(__u32 id, mode_t mode)
{
	char path[32];

	kvp_dev_path(path, sizeof(path), id);
	return chmod(path, mode) ? errno : 0;
}

/* ---- cgroup v2 ------------------------------------------------------- */

/*
 * cgroup2 at /sys/fs/cgroup: mounts it there when nothing is (the test
 * VM's init mounts only proc, sysfs and devtmpfs). 0 or the errno.
 */
static inline int kvp_cgroup2_ready(void)
{
	struct statfs sf;

	if (statfs(KVP_CGROOT, &sf))
		return errno;
	if (sf.f_type == CGROUP2_SUPER_MAGIC)
		return 0;
	if (mount("cgroup2", KVP_CGROOT, "cgroup2", 0, NULL))
		return errno;
	if (statfs(KVP_CGROOT, &sf))
		return errno;
	return sf.f_type == CGROUP2_SUPER_MAGIC ? 0 : EMEDIUMTYPE;
}

/* The cgroup v2 id of a cgroup folder: its inode number (see the uapi). */
static inline int kvp_cgroup_id(const char *path, __u64 *id)
{
	struct stat st;

	if (stat(path, &st))
		return errno;
	*id = st.st_ino;
	return 0;
}

/* The id of the caller's own cgroup, from /proc/self/cgroup ("0::/path"). */
static inline int kvp_self_cgroup_id(__u64 *id)
{
	char buf[512], path[600], *p;
	FILE *f = fopen("/proc/self/cgroup", "re");
	int ret = ENOENT;

	if (!f)
		return errno;
	while (fgets(buf, sizeof(buf), f)) {
		if (strncmp(buf, "0::", 3))
			continue;
		p = buf + 3;
		p[strcspn(p, "\n")] = 0;
		snprintf(path, sizeof(path), KVP_CGROOT "%s", p);
		ret = kvp_cgroup_id(path, id);
		break;
	}
	fclose(f);
	return ret;
}

/* Move process @pid (0: the caller) into the cgroup folder @path. */
static inline int kvp_cgroup_move(const char *path, pid_t pid)
{
	char file[300], buf[32];
	int fd, n, ret = 0;

	snprintf(file, sizeof(file), "%s/cgroup.procs", path);
	fd = open(file, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	n = snprintf(buf, sizeof(buf), "%d\n", (int)pid);
	if (write(fd, buf, n) != n)
		ret = errno ? errno : EIO;
	close(fd);
	return ret;
}

/* ---- agents ---------------------------------------------------------- */

enum {
	KVP_AG_HELLO = 1,	/* the agent's first message */
	KVP_AG_OPEN,		/* open @path O_RDWR|O_CLOEXEC: val = slot */
	KVP_AG_CLOSE,		/* close @slot */
	KVP_AG_TAKE_FD,		/* keep the file sent along: val = slot */
	KVP_AG_GIVE_FD,		/* send the file in @slot back (kept) */
	KVP_AG_IOCTL,		/* ioctl(@slot, @cmd, st) */
	KVP_AG_FDINFO,		/* @path is a key of @slot's fdinfo: val */
	KVP_AG_POLL,		/* poll(@slot, POLLPRI | POLLIN, @arg ms) */
	KVP_AG_EXIT,		/* _exit(@arg) without an answer */
};

#define KVP_AG_ST	256
#define KVP_AG_ARR	8192
#define KVP_AG_SLOTS	32
#define KVP_AG_NONE	0xffffffffu
#define KVP_AG_BROKEN	(-10000)	/* no errno: the agent did not answer */
#define KVP_AG_TIMEOUT_MS 20000

struct kvp_ag_req {
	__u32 op;
	__u32 slot;
	__u64 cmd;
	__u32 st_len;
	__u32 arr_len;
	__u32 ptr_off[2];	/* __u64 pointer fields of st to aim at arr */
	__u32 ptr_arr[2];	/* ... at these offsets in arr */
	__u32 fd_in_off;	/* __s32 in st to set to the file sent along */
	__u32 fd_out_off;	/* __s32 in st: a new file to send back, then close */
	__s32 arg;
	__u32 __pad;
	char path[64];
	unsigned char st[KVP_AG_ST];
	unsigned char arr[KVP_AG_ARR];
};

struct kvp_ag_rep {
	__s32 err;		/* 0 or the errno of the op */
	__s32 ret;		/* HELLO: pid; POLL: poll()'s return */
	__u64 val;		/* see the ops */
	__u64 val2;		/* POLL: ms spent; IOCTL with fd_out: FD flags */
	unsigned char st[KVP_AG_ST];
	unsigned char arr[KVP_AG_ARR];
};

struct kvp_agent {
	pid_t pid;
	int sock;
	int pending;	/* a request sent whose answer is not read yet */
};

static struct kvp_ag_req kvp_ag_rq;
static struct kvp_ag_rep kvp_ag_rp;

static inline void kvp_agent_serve(int sock) __attribute__((noreturn));
static inline void kvp_agent_serve(int sock)
{
	static struct kvp_ag_req rq;
	static struct kvp_ag_rep rp;
	int slots[KVP_AG_SLOTS];
	int i;

	for (i = 0; i < KVP_AG_SLOTS; i++)
		slots[i] = -1;
	for (;;) {
		int in_fd = -1, out_fd = -1, nfd = 0, fd = -1;
		bool close_out = false;
		ssize_t n;

		n = kvp_recv_fds(sock, &rq, sizeof(rq), &in_fd, 1, &nfd, 0);
		if (n == 0)
			_exit(0);	/* the test is gone or done */
		if (n != (ssize_t)sizeof(rq))
			_exit(3);
		if (!nfd)
			in_fd = -1;
		memset(&rp, 0, sizeof(rp));
		if (rq.slot < KVP_AG_SLOTS)
			fd = slots[rq.slot];
		switch (rq.op) {
		case KVP_AG_OPEN:
			for (i = 0; i < KVP_AG_SLOTS && slots[i] >= 0; i++)
				;
			rq.path[sizeof(rq.path) - 1] = 0;
			if (i == KVP_AG_SLOTS) {
				rp.err = ENFILE;
				break;
			}
			slots[i] = open(rq.path, O_RDWR | O_CLOEXEC);
			rp.err = slots[i] < 0 ? errno : 0;
			rp.val = i;
			break;
		case KVP_AG_CLOSE:
			if (fd < 0) {
				rp.err = EBADSLT;
				break;
			}
			close(fd);
			slots[rq.slot] = -1;
			break;
		case KVP_AG_TAKE_FD:
			for (i = 0; i < KVP_AG_SLOTS && slots[i] >= 0; i++)
				;
			if (in_fd < 0 || i == KVP_AG_SLOTS) {
				rp.err = EBADSLT;
				break;
			}
			slots[i] = in_fd;
			in_fd = -1;
			rp.val = i;
			break;
		case KVP_AG_GIVE_FD:
			if (fd < 0)
				rp.err = EBADSLT;
			out_fd = fd;
			break;
		case KVP_AG_IOCTL: {
			int r;

			if (fd < 0 || rq.st_len > KVP_AG_ST ||
			    rq.arr_len > KVP_AG_ARR) {
				rp.err = EBADSLT;
				break;
			}
			for (i = 0; i < 2; i++) {
				__u64 p = kvp_ptr(rq.arr + rq.ptr_arr[i]);

				if (rq.ptr_off[i] != KVP_AG_NONE)
					memcpy(rq.st + rq.ptr_off[i], &p,
					       sizeof(p));
			}
			if (rq.fd_in_off != KVP_AG_NONE)
				memcpy(rq.st + rq.fd_in_off, &in_fd,
				       sizeof(in_fd));
			r = ioctl(fd, rq.cmd, rq.st);
			rp.err = r < 0 ? errno : r > 0 ? -r : 0;
			rp.ret = r;
			if (!rp.err && rq.fd_out_off != KVP_AG_NONE) {
				memcpy(&out_fd, rq.st + rq.fd_out_off,
				       sizeof(out_fd));
				rp.val2 = fcntl(out_fd, F_GETFD);
				close_out = true;
			}
			memcpy(rp.st, rq.st, rq.st_len);
			memcpy(rp.arr, rq.arr, rq.arr_len);
			break;
		}
		case KVP_AG_FDINFO:
			rq.path[sizeof(rq.path) - 1] = 0;
			rp.err = fd < 0 ? EBADSLT :
				 kvp_fdinfo_u64(fd, rq.path, &rp.val);
			break;
		case KVP_AG_POLL: {
			struct pollfd pfd = { .fd = fd, .events = POLLPRI | POLLIN };
			long long t0 = kvp_now_ms();

			rp.ret = poll(&pfd, 1, rq.arg);
			rp.err = rp.ret < 0 ? errno : 0;
			rp.val = pfd.revents;
			rp.val2 = kvp_now_ms() - t0;
			break;
		}
		case KVP_AG_EXIT:
			_exit(rq.arg);
		default:
			rp.err = EBADRQC;
		}
		if (in_fd >= 0)
			close(in_fd);
		if (kvp_send_fds(sock, &rp, sizeof(rp), &out_fd,
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
static inline void kvp_agent_start(struct __test_metadata *_metadata,
				   struct kvp_pool *p, struct kvp_agent *a,
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
	pid = kvp_pool_fork(_metadata, p);
	if (pid == 0) {
		struct kvp_ag_rep *rp = &kvp_ag_rp;

		memset(rp, 0, sizeof(*rp));
		close(sv[0]);
		if (cgroup)
			rp->err = kvp_cgroup_move(cgroup, 0);
		if (!rp->err && uid >= 0)
			rp->err = kvp_become(uid);
		if (!rp->err && drop_sys_admin)
			rp->err = kvp_drop_sys_admin();
		/* Nothing inherited may keep a client alive. */
		for (fd = 3; fd < 1024; fd++)
			if (fd != sv[1])
				close(fd);
		rp->ret = getpid();
		if (kvp_send_fds(sv[1], rp, sizeof(*rp), NULL, 0, 0))
			_exit(5);
		kvp_agent_serve(sv[1]);
	}
	close(sv[1]);
	a->pid = pid;
	a->sock = sv[0];
	n = kvp_recv_fds(a->sock, &kvp_ag_rp, sizeof(kvp_ag_rp), &fd, 1, &nfd,
			 0);
	ASSERT_EQ((ssize_t)sizeof(kvp_ag_rp), n);
	ASSERT_EQ(0, kvp_ag_rp.err) TH_LOG("agent setup (cgroup %s, uid %d): %s",
					   cgroup ? cgroup : "-", uid,
					   strerror(kvp_ag_rp.err));
	ASSERT_EQ(pid, kvp_ag_rp.ret);
}

static inline void kvp_ag_req_init(__u32 op, int slot)
{
	struct kvp_ag_req *rq = &kvp_ag_rq;

	memset(rq, 0, offsetof(struct kvp_ag_req, st));
	rq->op = op;
	rq->slot = slot;
	rq->ptr_off[0] = rq->ptr_off[1] = KVP_AG_NONE;
	rq->fd_in_off = rq->fd_out_off = KVP_AG_NONE;
}

/* Send kvp_ag_rq (and @fd_in if >= 0); 0 or KVP_AG_BROKEN. */
static inline int kvp_ag_send(struct kvp_agent *a, int fd_in)
{
	if (a->sock < 0 || a->pending)
		return KVP_AG_BROKEN;
	if (kvp_send_fds(a->sock, &kvp_ag_rq, sizeof(kvp_ag_rq), &fd_in,
			 fd_in >= 0, 0))
		return KVP_AG_BROKEN;
	a->pending = 1;
	return 0;
}

/*
 * Wait up to @ms for the answer to a request sent; 0 and kvp_ag_rp filled,
 * ETIMEDOUT (still pending), or KVP_AG_BROKEN. *fd_out gets a file sent
 * back, or -1.
 */
static inline int kvp_ag_recv(struct kvp_agent *a, int ms, int *fd_out)
{
	struct pollfd pfd = { .fd = a->sock, .events = POLLIN };
	int fd = -1, nfd = 0, r;
	ssize_t n;

	if (fd_out)
		*fd_out = -1;
	if (!a->pending)
		return KVP_AG_BROKEN;
	do {
		r = poll(&pfd, 1, ms);
	} while (r < 0 && errno == EINTR);
	if (r == 0)
		return ETIMEDOUT;
	n = kvp_recv_fds(a->sock, &kvp_ag_rp, sizeof(kvp_ag_rp), &fd, 1, &nfd,
			 0);
	a->pending = 0;
	if (n != (ssize_t)sizeof(kvp_ag_rp)) {
		if (nfd)
			close(fd);
		return KVP_AG_BROKEN;
	}
	if (nfd) {
		if (fd_out)
			*fd_out = fd;
		else
			close(fd);
	}
	return 0;
}

/* One request, one answer: the op's errno, or KVP_AG_BROKEN. */
static inline int kvp_ag_call(struct kvp_agent *a, int fd_in, int *fd_out)
{
	int ret = kvp_ag_send(a, fd_in);

	if (ret)
		return ret;
	ret = kvp_ag_recv(a, KVP_AG_TIMEOUT_MS, fd_out);
	if (ret == ETIMEDOUT) {
		/* Never leave an answer to be mistaken for the next one. */
		kill(a->pid, SIGKILL);
		close(a->sock);
		a->sock = -1;
		return KVP_AG_BROKEN;
	}
	return ret ? ret : kvp_ag_rp.err;
}

/* Open /dev/kvpool@pool in the agent: 0 and *slot, or the errno. */
static inline int ag_open_path(struct kvp_agent *a, const char *path,
			       int *slot)
{
	int ret;

	kvp_ag_req_init(KVP_AG_OPEN, 0);
	snprintf(kvp_ag_rq.path, sizeof(kvp_ag_rq.path), "%s", path);
	ret = kvp_ag_call(a, -1, NULL);
	if (slot)
		*slot = ret ? -1 : (int)kvp_ag_rp.val;
	return ret;
}

static inline int ag_open(struct kvp_agent *a, __u32 pool, int *slot)
{
	char path[32];

	kvp_dev_path(path, sizeof(path), pool);
	return ag_open_path(a, path, slot);
}

static inline int ag_close(struct kvp_agent *a, int slot)
{
	kvp_ag_req_init(KVP_AG_CLOSE, slot);
	return kvp_ag_call(a, -1, NULL);
}

/* Hand a file to the agent (it keeps a copy in a slot). */
static inline int ag_take_fd(struct kvp_agent *a, int fd, int *slot)
{
	int ret;

	kvp_ag_req_init(KVP_AG_TAKE_FD, 0);
	ret = kvp_ag_call(a, fd, NULL);
	if (slot)
		*slot = ret ? -1 : (int)kvp_ag_rp.val;
	return ret;
}

/* Get a copy of the agent's file in @slot. */
static inline int ag_give_fd(struct kvp_agent *a, int slot, int *fd)
{
	kvp_ag_req_init(KVP_AG_GIVE_FD, slot);
	return kvp_ag_call(a, -1, fd);
}

static inline int ag_fdinfo(struct kvp_agent *a, int slot, const char *key,
			    __u64 *val)
{
	int ret;

	kvp_ag_req_init(KVP_AG_FDINFO, slot);
	snprintf(kvp_ag_rq.path, sizeof(kvp_ag_rq.path), "%s", key);
	ret = kvp_ag_call(a, -1, NULL);
	*val = kvp_ag_rp.val;
	return ret;
}

/* Start a poll() in the agent without waiting for it. */
static inline int ag_poll_start(struct kvp_agent *a, int slot, int ms)
{
	kvp_ag_req_init(KVP_AG_POLL, slot);
	kvp_ag_rq.arg = ms;
	return kvp_ag_send(a, -1);
}

/*
 * Wait up to @ms for that poll() to end: 0 (then *ret is poll()'s value,
 * *revents its events, *spent_ms its time), ETIMEDOUT or KVP_AG_BROKEN.
 */
static inline int ag_poll_wait(struct kvp_agent *a, int ms, int *ret,
			       int *revents, long *spent_ms)
{
	int r = kvp_ag_recv(a, ms, NULL);

	if (r)
		return r;
	*ret = kvp_ag_rp.ret;
	*revents = (int)kvp_ag_rp.val;
	if (spent_ms)
		*spent_ms = (long)kvp_ag_rp.val2;
	return kvp_ag_rp.err;
}

static inline int ag_poll(struct kvp_agent *a, int slot, int ms, int *ret,
			  int *revents)
{
	int r = ag_poll_start(a, slot, ms);

	if (r)
		return r;
	return ag_poll_wait(a, ms + KVP_AG_TIMEOUT_MS, ret, revents, NULL);
}

/*
 * ioctl(@slot, @cmd, @st) in the agent. @arr (@arr_len bytes) travels
 * along; the __u64 fields at @p0 and @p1 of @st (KVP_AG_NONE: none) are
 * aimed at arr + @a0 and arr + @a1 there. @st and @arr come back as the
 * agent's ioctl left them, pointers restored.
 */
/* The same, with the array sent (@in, NULL: zeros) and got back (@out) apart. */
static inline int ag_ioctl_io(struct kvp_agent *a, int slot,
			      unsigned long cmd, void *st, size_t st_len,
			      const void *in, void *arr, size_t arr_len,
			      __u32 p0, __u32 a0, __u32 p1, __u32 a1,
			      int fd_in, __u32 fd_in_off, int *fd_out,
			      __u32 fd_out_off)
{
	struct kvp_ag_req *rq = &kvp_ag_rq;
	__u64 save0 = 0, save1 = 0;
	int ret;

	if (st_len > KVP_AG_ST || arr_len > KVP_AG_ARR)
		return KVP_AG_BROKEN;
	kvp_ag_req_init(KVP_AG_IOCTL, slot);
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
	if (p0 != KVP_AG_NONE)
		memcpy(&save0, (char *)st + p0, sizeof(save0));
	if (p1 != KVP_AG_NONE)
		memcpy(&save1, (char *)st + p1, sizeof(save1));
	ret = kvp_ag_call(a, fd_in, fd_out);
	if (ret == KVP_AG_BROKEN)
		return ret;
	memcpy(st, kvp_ag_rp.st, st_len);
	if (arr_len)
		memcpy(arr, kvp_ag_rp.arr, arr_len);
	if (p0 != KVP_AG_NONE)
		memcpy((char *)st + p0, &save0, sizeof(save0));
	if (p1 != KVP_AG_NONE)
		memcpy((char *)st + p1, &save1, sizeof(save1));
	return ret;
}

static inline int ag_ioctl_fd(struct kvp_agent *a, int slot,
			      unsigned long cmd, void *st, size_t st_len,
			      void *arr, size_t arr_len, __u32 p0, __u32 a0,
			      __u32 p1, __u32 a1, int fd_in, __u32 fd_in_off,
			      int *fd_out, __u32 fd_out_off)
{
	return ag_ioctl_io(a, slot, cmd, st, st_len, arr, arr, arr_len, p0,
			   a0, p1, a1, fd_in, fd_in_off, fd_out, fd_out_off);
}

static inline int ag_ioctl(struct kvp_agent *a, int slot, unsigned long cmd,
			   void *st, size_t st_len, void *arr, size_t arr_len,
			   __u32 p0, __u32 a0, __u32 p1, __u32 a1)
{
	return ag_ioctl_fd(a, slot, cmd, st, st_len, arr, arr_len, p0, a0, p1,
			   a1, -1, KVP_AG_NONE, NULL, KVP_AG_NONE);
}

/* A struct without arrays. */
static inline int ag_ioctl0(struct kvp_agent *a, int slot, unsigned long cmd,
			    void *st, size_t st_len)
{
	return ag_ioctl(a, slot, cmd, st, st_len, NULL, 0, KVP_AG_NONE, 0,
			KVP_AG_NONE, 0);
}

static inline int ag_stats(struct kvp_agent *a, int slot,
			   struct kvpool_stats *s)
{
	memset(s, 0, sizeof(*s));
	s->size = sizeof(*s);
	return ag_ioctl0(a, slot, KVPOOL_STATS, s, sizeof(*s));
}

static inline int ag_pressure(struct kvp_agent *a, int slot,
			      struct kvpool_pressure *p)
{
	memset(p, 0, sizeof(*p));
	p->size = sizeof(*p);
	p->out_ask_pages = p->out_reasons = 0xdeadbeef;
	return ag_ioctl0(a, slot, KVPOOL_PRESSURE, p, sizeof(*p));
}

static inline int ag_verify(struct kvp_agent *a, int slot,
			    struct kvpool_verify *v)
{
	memset(v, 0, sizeof(*v));
	v->size = sizeof(*v);
	v->out_violations = 0xdeadbeef;
	return ag_ioctl0(a, slot, KVPOOL_VERIFY, v, sizeof(*v));
}

static inline int ag_alloc(struct kvp_agent *a, int slot, __u32 count,
			   struct kvpool_handle *h, __u32 *out_short)
{
	struct kvpool_row_alloc ra = {
		.size = sizeof(ra),
		.count = count,
		.entry_len = sizeof(*h),
		.out_short = 0xdeadbeef,
	};
	int ret;

	if (count * sizeof(*h) > KVP_AG_ARR)
		return KVP_AG_BROKEN;
	ret = ag_ioctl_io(a, slot, KVPOOL_ROW_ALLOC, &ra, sizeof(ra), NULL, h,
			  count * sizeof(*h),
			  offsetof(struct kvpool_row_alloc, handles), 0,
			  KVP_AG_NONE, 0, -1, KVP_AG_NONE, NULL, KVP_AG_NONE);
	if (out_short)
		*out_short = ra.out_short;
	return ret;
}

static inline int ag_alloc1(struct kvp_agent *a, int slot,
			    struct kvpool_handle *h)
{
	return ag_alloc(a, slot, 1, h, NULL);
}

/*
 * Extend one row to @new_len; *out_short gets out_short, *nr_new
 * out_nr_new, and @pages (if given, room for @cap <= 1024) the new ids.
 */
static inline int ag_extend1(struct kvp_agent *a, int slot,
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
		return KVP_AG_BROKEN;
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

static inline int ag_grow(struct kvp_agent *a, int slot,
			  struct kvpool_handle h, __u32 new_len)
{
	return ag_extend1(a, slot, h, new_len, NULL, NULL, NULL, 0);
}

/* A struct kvpool_batch op on @count entries of @esize bytes. */
static inline int ag_batch(struct kvp_agent *a, int slot, unsigned long cmd,
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
		       offsetof(struct kvpool_batch, entries), 0, KVP_AG_NONE,
		       0);
	if (out)
		*out = b;
	return ret;
}

static inline int ag_len_op1(struct kvp_agent *a, int slot, unsigned long cmd,
			     struct kvpool_handle h, __u32 len, __u32 *nr)
{
	struct kvpool_len_entry e = { .handle = h, .len = len };
	struct kvpool_batch b;
	int ret = ag_batch(a, slot, cmd, 0, &e, 1, sizeof(e), &b);

	if (nr)
		*nr = b.out_nr_pages;
	return ret;
}

static inline int ag_commit1(struct kvp_agent *a, int slot,
			     struct kvpool_handle h, __u32 len)
{
	return ag_len_op1(a, slot, KVPOOL_COMMIT, h, len, NULL);
}

static inline int ag_donate1(struct kvp_agent *a, int slot,
			     struct kvpool_handle h, __u32 upto, __u32 *nr)
{
	return ag_len_op1(a, slot, KVPOOL_DONATE, h, upto, nr);
}

static inline int ag_swa_free1(struct kvp_agent *a, int slot,
			       struct kvpool_handle h, __u32 edge, __u32 *nr)
{
	return ag_len_op1(a, slot, KVPOOL_SWA_FREE, h, edge, nr);
}

static inline int ag_release1(struct kvp_agent *a, int slot,
			      struct kvpool_handle h, __u32 flags, __u32 *nr)
{
	struct kvpool_batch b;
	int ret = ag_batch(a, slot, KVPOOL_RELEASE, flags, &h, 1, sizeof(h),
			   &b);

	if (nr)
		*nr = b.out_nr_pages;
	return ret;
}

static inline int ag_trim1(struct kvp_agent *a, int slot,
			   struct kvpool_handle h, __u32 *nr)
{
	struct kvpool_batch b;
	int ret = ag_batch(a, slot, KVPOOL_TRIM, 0, &h, 1, sizeof(h), &b);

	if (nr)
		*nr = b.out_nr_pages;
	return ret;
}

static inline int ag_evict(struct kvp_agent *a, int slot, __u32 *ids,
			   __u32 count, __u32 *nr)
{
	struct kvpool_batch b;
	int ret = ag_batch(a, slot, KVPOOL_CACHE_EVICT, 0, ids, count,
			   sizeof(*ids), &b);

	if (nr)
		*nr = b.out_nr_pages;
	return ret;
}

static inline int ag_attach(struct kvp_agent *a, int slot,
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
			0, KVP_AG_NONE, 0);
}

static inline int ag_slot_op(struct kvp_agent *a, int slot, unsigned long cmd,
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

static inline int ag_to_slot(struct kvp_agent *a, int slot, __u64 session,
			     struct kvpool_handle h)
{
	return ag_slot_op(a, slot, KVPOOL_TO_SLOT, session, &h, NULL);
}

/* ROW_QUERY: @q filled, @pages (room for @cap) the ids. */
static inline int ag_query(struct kvp_agent *a, int slot,
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
			   KVP_AG_NONE, 0, -1, KVP_AG_NONE, NULL, KVP_AG_NONE);
}

/* A row as ag_query sees it, like kvp_snap_row() (kvpool_util.h). */
static inline void ag_snap_row(struct kvp_agent *a, int slot,
			       struct kvpool_handle h, struct kvp_row_snap *s)
{
	struct kvpool_row_query q;

	memset(s, 0, sizeof(*s));
	s->err = ag_query(a, slot, h, s->pages,
			  KVP_AG_ARR / sizeof(__u32) < KVP_ROW_MAX_PAGES ?
			  KVP_AG_ARR / sizeof(__u32) : KVP_ROW_MAX_PAGES, &q);
	if (s->err)
		return;
	s->state = q.out_state;
	s->nr_pages = q.out_nr_pages;
	s->idx = q.out_req_pool_idx;
	s->alloc = q.out_allocated_len;
	s->committed = q.out_committed_len;
	s->protected_len = q.out_protected_len;
	s->swa = q.out_swa_evicted_len;
}

/* EXPORT in the agent; *xfd gets the file, now the caller's. */
static inline int ag_export(struct kvp_agent *a, int slot, __u32 flags,
			    struct kvpool_handle h, __u64 session, int *xfd,
			    __u32 *nr_pages, int *fd_flags)
{
	struct kvpool_export x = {
		.size = sizeof(x),
		.flags = flags,
		.handle = h,
		.session_id = session,
		.out_fd = -2,
		.out_nr_pages = 0xdeadbeef,
	};
	int ret;

	ret = ag_ioctl_fd(a, slot, KVPOOL_EXPORT, &x, sizeof(x), NULL, 0,
			  KVP_AG_NONE, 0, KVP_AG_NONE, 0, -1, KVP_AG_NONE, xfd,
			  offsetof(struct kvpool_export, out_fd));
	if (nr_pages)
		*nr_pages = x.out_nr_pages;
	if (fd_flags)
		*fd_flags = ret ? -1 : (int)kvp_ag_rp.val2;
	return ret;
}

/* IMPORT in the agent of the caller's file @xfd (sent along). */
static inline int ag_import(struct kvp_agent *a, int slot, int xfd,
			    struct kvpool_handle *h, __u32 *nr_pages)
{
	struct kvpool_import im = {
		.size = sizeof(im),
		.out_handle = { 0xdeadbeef, 0xdeadbeef },
		.out_nr_pages = 0xdeadbeef,
	};
	int ret;

	ret = ag_ioctl_fd(a, slot, KVPOOL_IMPORT, &im, sizeof(im), NULL, 0,
			  KVP_AG_NONE, 0, KVP_AG_NONE, 0, xfd,
			  offsetof(struct kvpool_import, fd), NULL,
			  KVP_AG_NONE);
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
static inline int ag_make_cache(struct kvp_agent *a, int slot, __u32 pt,
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
static inline int kvp_agent_kill(struct kvp_pool *p, struct kvp_agent *a)
{
	int status = -1;

	if (a->pid > 0) {
		kill(a->pid, SIGKILL);
		status = kvp_pool_wait(p, a->pid);
	}
	if (a->sock >= 0)
		close(a->sock);
	a->pid = -1;
	a->sock = -1;
	a->pending = 0;
	return status;
}

/* ---- the fixture: pool, agents, cgroups --------------------------------- */

#define KVP_TENV_AGENTS	8
#define KVP_TENV_CGS	4

struct kvp_tenv {
	struct kvp_pool pool;
	struct kvp_agent ag[KVP_TENV_AGENTS];
	int nr_cg;
	char cg[KVP_TENV_CGS][128];
	__u64 cgid[KVP_TENV_CGS];
	__u64 self_cgid;	/* the test's own cgroup: root's tenant */
	int fd;			/* a client of the test process (root) */
};

/*
 * Make the pool (anyone may open it) and, if @nr_cg, that many child
 * cgroups of /sys/fs/cgroup. Without cgroup v2 the setup FAILS: the tenant
 * tests are meaningless without it.
 */
static inline void kvp_tenv_init(struct __test_metadata *_metadata,
				 struct kvp_tenv *e, __u32 flags,
				 __u32 nr_pages, __u32 page_tokens,
				 __u32 nr_rows, __u32 row_tokens, int nr_cg)
{
	int i, ret;

	for (i = 0; i < KVP_TENV_AGENTS; i++) {
		e->ag[i].pid = -1;
		e->ag[i].sock = -1;
	}
	e->nr_cg = 0;
	e->fd = -1;
	kvp_pool_init(_metadata, &e->pool, flags, nr_pages, page_tokens,
		      nr_rows, row_tokens);
	ASSERT_EQ(0, kvp_pool_chmod(e->pool.id, 0666));
	ret = kvp_cgroup2_ready();
	ASSERT_EQ(0, ret) TH_LOG("cgroup v2 at " KVP_CGROOT ": %s: tenants are cgroup v2 ids, this test needs it",
				 strerror(ret));
	ASSERT_EQ(0, kvp_self_cgroup_id(&e->self_cgid));
	for (i = 0; i < nr_cg && i < KVP_TENV_CGS; i++) {
		snprintf(e->cg[i], sizeof(e->cg[i]),
			 KVP_CGROOT "/kvpool-test-%d-%d", (int)getpid(), i);
		rmdir(e->cg[i]);
		ASSERT_EQ(0, mkdir(e->cg[i], 0755))
			TH_LOG("mkdir %s: %s", e->cg[i], strerror(errno));
		e->nr_cg = i + 1;
		ASSERT_EQ(0, kvp_cgroup_id(e->cg[i], &e->cgid[i]));
		ASSERT_NE(e->self_cgid, e->cgid[i]);
	}
	e->fd = kvp_pool_open(_metadata, &e->pool);
}

/* Start agent @i in cgroup @cg (-1: the test's own) as @uid (-1: root). */
static inline struct kvp_agent *kvp_tenv_agent(struct __test_metadata *_metadata,
					       struct kvp_tenv *e, int i,
					       int cg, int uid)
{
	kvp_agent_start(_metadata, &e->pool, &e->ag[i],
			cg >= 0 ? e->cg[cg] : NULL, uid, false);
	return &e->ag[i];
}

/* The same with a client of the pool already open in slot 0. */
static inline struct kvp_agent *kvp_tenv_client(struct __test_metadata *_metadata,
						struct kvp_tenv *e, int i,
						int cg, int uid)
{
	struct kvp_agent *a = kvp_tenv_agent(_metadata, e, i, cg, uid);
	int slot = -1;

	ASSERT_EQ(0, ag_open(a, e->pool.id, &slot));
	ASSERT_EQ(0, slot);
	return a;
}

/* Close every file of this process that keeps the pool: clients, exports. */
static inline void kvp_close_pool_files(__u32 id)
{
	char want[32], path[300], link[128];
	struct dirent *de;
	DIR *d = opendir("/proc/self/fd");
	int fds[256], n = 0, i;

	if (!d)
		return;
	kvp_dev_path(want, sizeof(want), id);
	while ((de = readdir(d)) && n < 256) {
		ssize_t len;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/fd/%s", de->d_name);
		len = readlink(path, link, sizeof(link) - 1);
		if (len <= 0)
			continue;
		link[len] = 0;
		if (!strcmp(link, want) || !strcmp(link, KVP_EXPORT_LINK))
			fds[n++] = atoi(de->d_name);
	}
	closedir(d);
	for (i = 0; i < n; i++)
		close(fds[i]);
}

/*
 * The whole pool is free, exports included, and the caller's tenant holds
 * nothing: what a fresh client sees once every other file is gone.
 */
static inline void kvp_tenv_expect_full(struct __test_metadata *_metadata,
					struct kvp_pool *p, int fd,
					__u32 nr_clients)
{
	struct kvpool_stats s;

	kvp_expect_pool_full(_metadata, p, fd, nr_clients);
	EXPECT_EQ(0, kvp_stats(fd, &s));
	EXPECT_EQ(0, s.out_export_rows);
	EXPECT_EQ(0, s.out_export_pages);
	EXPECT_EQ(0, s.out_tenant_pages);
	EXPECT_EQ(0, s.out_tenant_rows);
}

/*
 * Teardown (EXPECT only): VERIFY with everything in place, kill and reap
 * the agents and any other child, close every file of the pool in this
 * process (clients, export files), check from a fresh client that the
 * pool is whole, VERIFY, destroy it and remove the cgroups.
 */
static inline void kvp_tenv_fini(struct __test_metadata *_metadata,
				 struct kvp_tenv *e)
{
	struct kvp_pool *p = &e->pool;
	int i, fd;

	if (p->created) {
		for (i = 0; i < KVP_MAX_FDS; i++) {
			if (p->fds[i] >= 0) {
				kvp_expect_verify(_metadata, p, p->fds[i]);
				break;
			}
		}
	}
	for (i = 0; i < KVP_TENV_AGENTS; i++)
		if (e->ag[i].pid > 0 || e->ag[i].sock >= 0)
			kvp_agent_kill(p, &e->ag[i]);
	for (i = 0; i < KVP_MAX_PIDS; i++) {
		if (p->pids[i] > 0) {
			kill(p->pids[i], SIGKILL);
			kvp_pool_wait(p, p->pids[i]);
		}
	}
	if (p->created) {
		for (i = 0; i < KVP_MAX_FDS; i++)
			p->fds[i] = -1;
		kvp_close_pool_files(p->id);
		fd = kvp_open_id(p->id, O_RDWR | O_CLOEXEC);
		EXPECT_LE(0, fd);
		if (fd >= 0) {
			kvp_tenv_expect_full(_metadata, p, fd, 1);
			close(fd);
		}
		EXPECT_EQ(0, kvp_destroy(p->ctl, p->id));
		p->created = false;
	}
	if (p->ctl >= 0)
		close(p->ctl);
	p->ctl = -1;
	for (i = 0; i < e->nr_cg; i++)
		EXPECT_EQ(0, rmdir(e->cg[i])) TH_LOG("rmdir %s: %s", e->cg[i],
						     strerror(errno));
	e->nr_cg = 0;
}

#endif /* KVPOOL_TENANT_UTIL_H */
