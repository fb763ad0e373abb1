// SPDX-License-Identifier: GPL-2.0-only
/*
 * env_test: what the debug lane's kernel must give the host userland.
 *
 * The 6.1-debug kernel is a tinyconfig plus a fragment
 * (tools/vm/debug-6.1.config), not a distribution kernel: every feature
 * the other tests take for granted is switched on by hand. This test runs
 * first in that kernel's VM (tools/vm/guest-debug.sh) and checks the ones
 * the kvpool tests and tools lean on, so that a fragment that lost one
 * fails here with a name instead of somewhere else with a riddle:
 * dynamically linked binaries and #! scripts, fork, threads (futex),
 * AF_UNIX with SCM_RIGHTS, /proc/self/fdinfo of a kvpool fd, fail-nth,
 * the control device (misc) and the pools' own class (kvpool) in sysfs
 * and /dev, a root process dropping CAP_SYS_ADMIN (capset; the tests of
 * the control ops and of VERIFY's EPERM do it), epoll/eventfd/timerfd/
 * signalfd, POSIX shm, file locks, ptys, TCP on loopback.
 *
 * Copyright (C) 2026 The kvpool authors
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/timerfd.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/capability.h>
#include <linux/kvpool.h>

#include "kvptest_tenant.h"

/* TEST() wrappers never use their variant argument. */
#pragma GCC diagnostic ignored "-Wunused-parameter"


/* Runs argv; its exit status, or -1. */
static int run(char *const argv[])
{
	int st;
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (!pid) {
		execv(argv[0], argv);
		_exit(127);
	}
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

TEST(exec_dynamic_and_script)
{
	char *const dyn[] = { "/bin/bash", "-c", "exit 3", NULL };
	char *const sh[] = { "/bin/sh", "-c",
		"printf '#!/bin/sh\\nexit 5\\n' >/tmp/env_test.sh && chmod +x /tmp/env_test.sh && /tmp/env_test.sh; r=$?; rm -f /tmp/env_test.sh; exit $r",
		NULL };

	ASSERT_EQ(3, run(dyn));
	ASSERT_EQ(5, run(sh));
}

static void *thread_fn(void *arg)
{
	pthread_mutex_t *m = arg;

	pthread_mutex_lock(m);
	pthread_mutex_unlock(m);
	return (void *)42;
}

TEST(fork_and_threads)
{
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	pthread_t t;
	void *ret;
	int st;
	pid_t pid = fork();

	ASSERT_LE(0, pid);
	if (!pid)
		_exit(7);
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	ASSERT_TRUE(WIFEXITED(st));
	ASSERT_EQ(7, WEXITSTATUS(st));

	/* contended: the waiter sleeps on a futex */
	pthread_mutex_lock(&m);
	ASSERT_EQ(0, pthread_create(&t, NULL, thread_fn, &m));
	usleep(10000);
	pthread_mutex_unlock(&m);
	ASSERT_EQ(0, pthread_join(t, &ret));
	ASSERT_EQ(42, (long)ret);
}

/* Creates a small pool; its id, or -1 (errno says why). */
static int make_pool(int ctl)
{
	__u32 id;

	if (kt_create(ctl, 0, 16, 1, 4, 16, &id))
		return -1;
	return id;
}

/* "MAJ:MIN\n" of a sysfs dev file matches the node's rdev. */
static int same_dev(const char *sysfs, const char *node)
{
	unsigned int maj, min;
	struct stat st;
	char txt[64];

	if (kt_read_text(sysfs, txt, sizeof(txt)) ||
	    sscanf(txt, "%u:%u", &maj, &min) != 2)
		return -1;
	if (stat(node, &st) || !S_ISCHR(st.st_mode))
		return -2;
	return st.st_rdev == makedev(maj, min) ? 0 : -3;
}

TEST(devices_in_sysfs_and_dev)
{
	char p[96], node[32], txt[64];
	int ctl, id;

	if (access(KT_CTL_PATH, F_OK))
		SKIP(return, "kvpool.ko not loaded");
	/* The control device stays a misc device. */
	ASSERT_EQ(0, same_dev("/sys/class/misc/kvpool-control/dev", KT_CTL_PATH));

	/* A pool is in the kvpool class, not misc, with its attributes. */
	ctl = kt_ctl_open();
	ASSERT_LE(0, ctl);
	id = make_pool(ctl);
	ASSERT_LE(0, id);
	snprintf(p, sizeof(p), KT_SYSFS_CLASS "/kvpool%d/dev", id);
	snprintf(node, sizeof(node), "/dev/kvpool%d", id);
	EXPECT_EQ(0, same_dev(p, node)) {
		TH_LOG("%s does not name %s (no devtmpfs node?)", p, node);
	}
	snprintf(p, sizeof(p), KT_SYSFS_CLASS "/kvpool%d/nr_pages", id);
	EXPECT_EQ(0, kt_read_text(p, txt, sizeof(txt)));
	EXPECT_STREQ("16\n", txt);
	snprintf(p, sizeof(p), KT_SYSFS_CLASS "/kvpool%d/nr_clients", id);
	EXPECT_EQ(0, kt_read_text(p, txt, sizeof(txt)));
	EXPECT_STREQ("0\n", txt);
	snprintf(p, sizeof(p), "/sys/class/misc/kvpool%d", id);
	EXPECT_NE(0, access(p, F_OK));
	EXPECT_EQ(0, kt_destroy(ctl, id));
	snprintf(p, sizeof(p), KT_SYSFS_CLASS "/kvpool%d", id);
	EXPECT_NE(0, access(p, F_OK));
	close(ctl);
}

/*
 * A root child without CAP_SYS_ADMIN is refused VERIFY (EPERM) and the
 * control ops, while its parent, with it, is not: the kernel must check
 * capabilities for uid 0 (CONFIG_MULTIUSER) and let capset drop one.
 */
TEST(cap_sys_admin_dropped)
{
	struct kvpool_verify v = { .size = sizeof(v) };
	char node[32];
	int ctl, id, fd, st;
	pid_t pid;

	if (access(KT_CTL_PATH, F_OK))
		SKIP(return, "kvpool.ko not loaded");
	if (geteuid())
		SKIP(return, "needs root");
	ctl = kt_ctl_open();
	ASSERT_LE(0, ctl);
	id = make_pool(ctl);
	ASSERT_LE(0, id);
	snprintf(node, sizeof(node), "/dev/kvpool%d", id);
	fd = open(node, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	EXPECT_EQ(0, ioctl(fd, KVPOOL_VERIFY, &v));
	EXPECT_EQ(0, v.out_violations);

	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct kvpool_verify cv = { .size = sizeof(cv) };

		if (kt_drop_sys_admin())
			_exit(10);
		if (!ioctl(fd, KVPOOL_VERIFY, &cv) || errno != EPERM)
			_exit(11);
		if (make_pool(ctl) >= 0 || errno != EPERM)
			_exit(12);
		_exit(0);
	}
	EXPECT_EQ(pid, waitpid(pid, &st, 0));
	EXPECT_TRUE(WIFEXITED(st));
	EXPECT_EQ(0, WEXITSTATUS(st)) {
		TH_LOG("child: 10 capset failed, 11 VERIFY not EPERM, 12 CTL_CREATE not EPERM");
	}
	close(fd);
	EXPECT_EQ(0, kt_destroy(ctl, id));
	close(ctl);
}

/* A pool fd crosses to a child over SCM_RIGHTS; fdinfo names it there. */
TEST(scm_rights_and_fdinfo)
{
	struct kvpool_ctl_create cr = {
		.size = sizeof(cr), .nr_pages = 16, .page_tokens = 1,
		.nr_rows = 4, .row_tokens = 16,
	};
	struct kvpool_ctl_destroy de = { .size = sizeof(de) };
	char path[64], info[512], want[64], cbuf[CMSG_SPACE(sizeof(int))];
	int ctl, fd, sv[2], st;
	pid_t pid;

	if (access(KT_CTL_PATH, F_OK))
		SKIP(return, "kvpool.ko not loaded");
	ctl = kt_ctl_open();
	ASSERT_LE(0, ctl);
	ASSERT_EQ(0, ioctl(ctl, KVPOOL_CTL_CREATE, &cr));
	snprintf(path, sizeof(path), "/dev/kvpool%u", cr.out_pool_id);
	fd = open(path, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	ASSERT_EQ(0, kt_read_text(path, info, sizeof(info)));
	snprintf(want, sizeof(want), "kvpool-pool:\t%u\n", cr.out_pool_id);
	ASSERT_NE(NULL, strstr(info, want)) {
		TH_LOG("fdinfo: %s", info);
	}

	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct msghdr mh = {};
		struct iovec iov;
		struct cmsghdr *cm;
		char byte, p[64], txt[512];
		int got;

		iov.iov_base = &byte;
		iov.iov_len = 1;
		mh.msg_iov = &iov;
		mh.msg_iovlen = 1;
		mh.msg_control = cbuf;
		mh.msg_controllen = sizeof(cbuf);
		if (recvmsg(sv[1], &mh, 0) != 1)
			_exit(10);
		cm = CMSG_FIRSTHDR(&mh);
		if (!cm || cm->cmsg_type != SCM_RIGHTS)
			_exit(11);
		memcpy(&got, CMSG_DATA(cm), sizeof(got));
		snprintf(p, sizeof(p), "/proc/self/fdinfo/%d", got);
		if (kt_read_text(p, txt, sizeof(txt)) || !strstr(txt, want))
			_exit(12);
		_exit(0);
	} else {
		struct msghdr mh = {};
		struct iovec iov;
		struct cmsghdr *cm;
		char byte = 'x';

		iov.iov_base = &byte;
		iov.iov_len = 1;
		mh.msg_iov = &iov;
		mh.msg_iovlen = 1;
		mh.msg_control = cbuf;
		mh.msg_controllen = sizeof(cbuf);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &fd, sizeof(fd));
		EXPECT_EQ(1, sendmsg(sv[0], &mh, 0));
		EXPECT_EQ(pid, waitpid(pid, &st, 0));
		EXPECT_TRUE(WIFEXITED(st));
		EXPECT_EQ(0, WEXITSTATUS(st));
	}
	close(sv[0]);
	close(sv[1]);
	close(fd);
	de.pool_id = cr.out_pool_id;
	ASSERT_EQ(0, ioctl(ctl, KVPOOL_CTL_DESTROY, &de));
	close(ctl);
}

TEST(fail_nth)
{
	char p[64], txt[16];
	int fd;

	snprintf(p, sizeof(p), "/proc/self/task/%ld/fail-nth",
		 (long)syscall(SYS_gettid));
	fd = open(p, O_RDWR | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT)
		SKIP(return, "no fail-nth: kernel without CONFIG_FAULT_INJECTION");
	ASSERT_LE(0, fd);
	ASSERT_EQ(2, pwrite(fd, "99", 2, 0));
	ASSERT_LT(0, pread(fd, txt, sizeof(txt) - 1, 0));
	/* a read makes no allocation, so the countdown is where it was */
	ASSERT_EQ(99, atoi(txt));
	ASSERT_EQ(1, pwrite(fd, "0", 1, 0));
	close(fd);
}

TEST(event_fds)
{
	struct itimerspec its = { .it_value = { .tv_nsec = 1000000 } };
	struct epoll_event ev = { .events = EPOLLIN };
	struct signalfd_siginfo si;
	sigset_t set;
	int ep, efd, tfd, sfd;
	uint64_t v;

	ep = epoll_create1(EPOLL_CLOEXEC);
	ASSERT_LE(0, ep);
	efd = eventfd(0, EFD_CLOEXEC);
	ASSERT_LE(0, efd);
	tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
	ASSERT_LE(0, tfd);
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	ASSERT_EQ(0, sigprocmask(SIG_BLOCK, &set, NULL));
	sfd = signalfd(-1, &set, SFD_CLOEXEC);
	ASSERT_LE(0, sfd);

	ev.data.fd = tfd;
	ASSERT_EQ(0, epoll_ctl(ep, EPOLL_CTL_ADD, tfd, &ev));
	ASSERT_EQ(0, timerfd_settime(tfd, 0, &its, NULL));
	ASSERT_EQ(1, epoll_wait(ep, &ev, 1, 5000));
	ASSERT_EQ(tfd, ev.data.fd);
	v = 1;
	ASSERT_EQ(8, write(efd, &v, 8));
	ASSERT_EQ(8, read(efd, &v, 8));
	ASSERT_EQ(0, kill(getpid(), SIGUSR1));
	ASSERT_EQ(sizeof(si), read(sfd, &si, sizeof(si)));
	ASSERT_EQ(SIGUSR1, si.ssi_signo);
	close(sfd);
	close(tfd);
	close(efd);
	close(ep);
}

TEST(shm_flock_pty)
{
	char name[] = "/tmp/env_test.lock.XXXXXX";
	int fd, lfd, pty;
	char *p;

	fd = shm_open("/env_test", O_RDWR | O_CREAT | O_EXCL, 0600);
	ASSERT_LE(0, fd);
	shm_unlink("/env_test");
	ASSERT_EQ(0, ftruncate(fd, 4096));
	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	p[0] = 1;
	munmap(p, 4096);
	close(fd);

	lfd = mkstemp(name);
	ASSERT_LE(0, lfd);
	unlink(name);
	ASSERT_EQ(0, flock(lfd, LOCK_EX));
	ASSERT_EQ(0, fcntl(lfd, F_SETLK, &(struct flock){ .l_type = F_WRLCK }));
	close(lfd);

	pty = posix_openpt(O_RDWR | O_NOCTTY);
	ASSERT_LE(0, pty);
	ASSERT_EQ(0, grantpt(pty));
	ASSERT_EQ(0, unlockpt(pty));
	ASSERT_NE(NULL, ptsname(pty));
	close(pty);
}

TEST(tcp_loopback)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);
	int l, c, s;
	char b = 0;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ASSERT_LE(0, l);
	ASSERT_EQ(0, bind(l, (struct sockaddr *)&a, sizeof(a)));
	ASSERT_EQ(0, listen(l, 1));
	ASSERT_EQ(0, getsockname(l, (struct sockaddr *)&a, &len));
	c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ASSERT_LE(0, c);
	ASSERT_EQ(0, connect(c, (struct sockaddr *)&a, sizeof(a))) {
		TH_LOG("connect 127.0.0.1: %s (is lo up?)", strerror(errno));
	}
	s = accept(l, NULL, NULL);
	ASSERT_LE(0, s);
	ASSERT_EQ(1, write(c, "k", 1));
	ASSERT_EQ(1, read(s, &b, 1));
	ASSERT_EQ('k', b);
	close(s);
	close(c);
	close(l);
}

TEST_HARNESS_MAIN
