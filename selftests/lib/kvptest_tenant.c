// SPDX-License-Identifier: GPL-2.0-only
/*
 * kvptest_tenant: tenants, watermarks, export/import, cgroups,
 * credentials, SCM_RIGHTS; see kvptest_tenant.h.
 *
 * Copyright (C) 2026 The kvpool authors
 */
#include "kvptest_tenant.h"

long long kt_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

void kt_sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

void kt_tenant_init(struct kvpool_ctl_tenant *t, __u32 pool,
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

int kt_tenant_set(int ctl, struct kvpool_ctl_tenant *t)
{
	return kt_ioctl(ctl, KVPOOL_CTL_TENANT_SET, t);
}

/*
 * Configure tenants (first + n, uid), n from @from up to @upto, with
 * max_pages @max: 0, or the errno of the first refused and *@at its n.
 */
int kt_tenant_fill(int ctl, __u32 pool, __u64 first, __u32 uid, __u32 max,
		   __u32 from, __u32 upto, __u32 *at)
{
	struct kvpool_ctl_tenant t;
	int ret = 0;

	for (*at = from; *at < upto; (*at)++) {
		kt_tenant_init(&t, pool, first + *at, uid, max, 0, 0, NULL);
		ret = kt_tenant_set(ctl, &t);
		if (ret)
			break;
	}
	return ret;
}

/* Set the limits of the tenant (cgroup_id, uid); *id gets its id. */
int kt_tenant_limits(int ctl, __u32 pool, __u64 cgroup_id,
		     __u32 uid, __u32 max_pages,
		     __u32 min_pages, __u32 max_rows, __u32 *id)
{
	struct kvpool_ctl_tenant t;
	int ret;

	kt_tenant_init(&t, pool, cgroup_id, uid, max_pages, min_pages,
		       max_rows, NULL);
	ret = kt_tenant_set(ctl, &t);
	if (id)
		*id = t.tenant_id;
	return ret;
}

/* The same, naming the tenant by id. */
int kt_tenant_limits_id(int ctl, __u32 pool, __u32 id,
			__u32 max_pages, __u32 min_pages,
			__u32 max_rows)
{
	struct kvpool_ctl_tenant t;

	kt_tenant_init(&t, pool, 0, 0, max_pages, min_pages, max_rows, NULL);
	t.flags = KVPOOL_TENANT_BY_ID;
	t.tenant_id = id;
	return kt_tenant_set(ctl, &t);
}

int kt_tenant_list(int ctl, __u32 pool,
		   struct kvpool_tenant_info *ti, __u32 count,
		   __u32 *nr)
{
	struct kvpool_ctl_tenant_list l = {
		.size = sizeof(l),
		.pool_id = pool,
		.count = count,
		.entry_len = sizeof(*ti),
		.tenants = kt_ptr(ti),
		.out_nr_tenants = 0xdeadbeef,
	};
	int ret = kt_ioctl(ctl, KVPOOL_CTL_TENANT_LIST, &l);

	if (nr)
		*nr = l.out_nr_tenants;
	return ret;
}

/* The entry of tenant @id from a fresh TENANT_LIST: 0, ENOENT or an errno. */
int kt_tenant_get(int ctl, __u32 pool, __u32 id,
		  struct kvpool_tenant_info *out)
{
	struct kvpool_tenant_info ti[KT_MAX_LIST];
	__u32 nr, i;
	int ret;

	memset(out, 0xa5, sizeof(*out));
	ret = kt_tenant_list(ctl, pool, ti, KT_MAX_LIST, &nr);
	if (ret)
		return ret;
	for (i = 0; i < nr && i < KT_MAX_LIST; i++) {
		if (ti[i].tenant_id == id) {
			*out = ti[i];
			return 0;
		}
	}
	return ENOENT;
}

int kt_set_wmark(int ctl, __u32 pool, __u32 low, __u32 high)
{
	struct kvpool_ctl_wmark w = {
		.size = sizeof(w),
		.pool_id = pool,
		.low_wmark = low,
		.high_wmark = high,
	};

	return kt_ioctl(ctl, KVPOOL_CTL_SET_WMARK, &w);
}

int kt_pressure(int fd, struct kvpool_pressure *p)
{
	memset(p, 0, sizeof(*p));
	p->size = sizeof(*p);
	p->out_ask_pages = p->out_reasons = p->out_free_pages = 0xdeadbeef;
	return kt_ioctl(fd, KVPOOL_PRESSURE, p);
}

void kt_export_init(struct kvpool_export *x, __u32 flags,
		    struct kvpool_handle h, __u64 session)
{
	memset(x, 0, sizeof(*x));
	x->size = sizeof(*x);
	x->flags = flags;
	x->handle = h;
	x->session_id = session;
	x->out_fd = -2;
	x->out_nr_pages = 0xdeadbeef;
}

int kt_export(int fd, __u32 flags, struct kvpool_handle h,
	      __u64 session, int *out_fd, __u32 *nr_pages)
{
	struct kvpool_export x;
	int ret;

	kt_export_init(&x, flags, h, session);
	ret = kt_ioctl(fd, KVPOOL_EXPORT, &x);

	if (out_fd)
		*out_fd = x.out_fd;
	if (nr_pages)
		*nr_pages = x.out_nr_pages;
	return ret;
}

int kt_export_row(int fd, struct kvpool_handle h, int *xfd,
		  __u32 *nr_pages)
{
	return kt_export(fd, 0, h, 0, xfd, nr_pages);
}

int kt_import(int fd, int xfd, struct kvpool_handle *h,
	      __u32 *nr_pages)
{
	struct kvpool_import im = {
		.size = sizeof(im),
		.fd = xfd,
		.out_handle = { 0xdeadbeef, 0xdeadbeef },
		.out_nr_pages = 0xdeadbeef,
	};
	int ret = kt_ioctl(fd, KVPOOL_IMPORT, &im);

	if (h)
		*h = im.out_handle;
	if (nr_pages)
		*nr_pages = im.out_nr_pages;
	return ret;
}

/* Is @fd an export file? (by its /proc link, "anon_inode:[kvpool-row]") */
bool kt_is_export_fd(int fd)
{
	char path[64], link[128];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, link, sizeof(link) - 1);
	if (n <= 0)
		return false;
	link[n] = 0;
	return !strcmp(link, KT_EXPORT_LINK);
}

/* Open files of this process, by /proc/self/fd. */
int kt_count_fds(void)
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

/* Send @len bytes with up to 8 files; 0 or the errno. */
int kt_send_fds(int sock, const void *buf, size_t len,
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
ssize_t kt_recv_fds(int sock, void *buf, size_t len, int *fds,
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

/* Become uid (and gid = uid) with no groups; every capability goes. */
int kt_become(uid_t uid)
{
	if (setgroups(0, NULL) || setresgid(uid, uid, uid) ||
	    setresuid(uid, uid, uid))
		return errno;
	return 0;
}

/* Drop CAP_SYS_ADMIN from every set, staying uid 0. */
int kt_drop_sys_admin(void)
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
int kt_pool_chmod(__u32 id, mode_t mode)
{
	char path[32];

	kt_dev_path(path, sizeof(path), id);
	return chmod(path, mode) ? errno : 0;
}

/*
 * cgroup2 at /sys/fs/cgroup: mounts it there when nothing is (the test
 * VM's init mounts only proc, sysfs and devtmpfs). 0 or the errno.
 */
int kt_cgroup2_ready(void)
{
	struct statfs sf;

	if (statfs(KT_CGROOT, &sf))
		return errno;
	if (sf.f_type == CGROUP2_SUPER_MAGIC)
		return 0;
	if (mount("cgroup2", KT_CGROOT, "cgroup2", 0, NULL))
		return errno;
	if (statfs(KT_CGROOT, &sf))
		return errno;
	return sf.f_type == CGROUP2_SUPER_MAGIC ? 0 : EMEDIUMTYPE;
}

/* The cgroup v2 id of a cgroup folder: its inode number (see the uapi). */
int kt_cgroup_id(const char *path, __u64 *id)
{
	struct stat st;

	if (stat(path, &st))
		return errno;
	*id = st.st_ino;
	return 0;
}

/* The id of the caller's own cgroup, from /proc/self/cgroup ("0::/path"). */
int kt_self_cgroup_id(__u64 *id)
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
		snprintf(path, sizeof(path), KT_CGROOT "%s", p);
		ret = kt_cgroup_id(path, id);
		break;
	}
	fclose(f);
	return ret;
}

/* Move process @pid (0: the caller) into the cgroup folder @path. */
int kt_cgroup_move(const char *path, pid_t pid)
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
