// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * kvpool_send_fd() and kvpool_recv_fd() over a socketpair, with an
 * ordinary file standing in for an export file: the descriptor arrives
 * naming the same file, close-on-exec; a peer that hangs up, a message
 * without a descriptor and one with several are told apart.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "kvpool.h"
#include "kvp_expect.h"
#include "fdcount.h"

static void make_pair(int type, int sv[2])
{
	if (socketpair(AF_UNIX, type | SOCK_CLOEXEC, 0, sv))
		kvp_expect_die("socketpair");
}

static int same_file(int a, int b)
{
	struct stat x, y;

	if (fstat(a, &x) || fstat(b, &y))
		return 0;
	return x.st_dev == y.st_dev && x.st_ino == y.st_ino;
}

/* Send @nr descriptors in one SCM_RIGHTS message, as another program may. */
static void send_raw(int sock, const int *fds, int nr)
{
	union {
		char buf[CMSG_SPACE(2 * sizeof(int))];
		struct cmsghdr align;
	} ctl;
	char byte = 'x';
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *cm;

	if (nr) {
		memset(&ctl, 0, sizeof(ctl));
		msg.msg_control = ctl.buf;
		msg.msg_controllen = CMSG_SPACE((size_t)nr * sizeof(int));
		cm = CMSG_FIRSTHDR(&msg);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN((size_t)nr * sizeof(int));
		memcpy(CMSG_DATA(cm), fds, (size_t)nr * sizeof(int));
	}
	if (sendmsg(sock, &msg, 0) != 1)
		kvp_expect_die("sendmsg");
}

static void test_pass(int type, const char *name)
{
	int sv[2], fd, got, ret;

	make_pair(type, sv);
	fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		kvp_expect_die("/dev/null");

	ret = kvpool_send_fd(sv[0], fd);
	EXPECT_EQ(0, ret) TH_LOG("%s: send", name);
	got = kvpool_recv_fd(sv[1]);
	EXPECT_TRUE(got >= 0 && got != fd) TH_LOG("%s: recv: %d", name, got);
	if (got >= 0) {
		EXPECT_TRUE(same_file(fd, got))
			TH_LOG("%s: another file arrived", name);
		EXPECT_EQ(FD_CLOEXEC, fcntl(got, F_GETFD))
			TH_LOG("%s: not close-on-exec", name);
		close(got);
	}

	/* Nothing sent yet on the other way: a hang-up reads as such. */
	close(sv[0]);
	ret = kvpool_recv_fd(sv[1]);
	EXPECT_EQ(-ECONNRESET, ret) TH_LOG("%s: recv after hang-up", name);
	/* And sending to a closed peer fails without SIGPIPE. */
	ret = kvpool_send_fd(sv[1], fd);
	EXPECT_EQ(-EPIPE, ret) TH_LOG("%s: send to closed peer", name);
	close(sv[1]);
	close(fd);
}

static void test_odd_messages(void)
{
	int sv[2], fds[2], got, ret, nr_open;

	make_pair(SOCK_STREAM, sv);

	/* Data but no descriptor. */
	send_raw(sv[0], NULL, 0);
	ret = kvpool_recv_fd(sv[1]);
	EXPECT_EQ(-EBADMSG, ret) TH_LOG("message without fd");

	/* Two descriptors: the first comes back, the second is closed. */
	fds[0] = open("/dev/null", O_RDONLY | O_CLOEXEC);
	fds[1] = open("/dev/zero", O_RDONLY | O_CLOEXEC);
	if (fds[0] < 0 || fds[1] < 0)
		kvp_expect_die("open");
	nr_open = count_fds();
	send_raw(sv[0], fds, 2);
	got = kvpool_recv_fd(sv[1]);
	EXPECT_TRUE(got >= 0 && same_file(got, fds[0]))
		TH_LOG("two fds: got %d", got);
	if (got >= 0)
		close(got);
	EXPECT_EQ(nr_open, count_fds())
		TH_LOG("two fds: the second was left open");

	EXPECT_EQ(-EBADF, kvpool_send_fd(sv[0], -1));
	EXPECT_EQ(-EBADF, kvpool_send_fd(-1, fds[0]));
	EXPECT_EQ(-EBADF, kvpool_recv_fd(-1));
	ret = kvpool_send_fd(fds[0], fds[1]);
	EXPECT_EQ(-ENOTSOCK, ret) TH_LOG("send on a non-socket");

	close(fds[0]);
	close(fds[1]);
	close(sv[0]);
	close(sv[1]);
}

int main(void)
{
	/* A SIGPIPE would kill us: kvpool_send_fd() must not raise it. */
	signal(SIGPIPE, SIG_DFL);

	test_pass(SOCK_STREAM, "stream");
	test_pass(SOCK_SEQPACKET, "seqpacket");
	test_odd_messages();

	return kvp_expect_done("fdpass");
}
