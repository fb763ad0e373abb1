// SPDX-License-Identifier: GPL-2.0-only
/*
 * kvpool selftests: the ops that answer before they act.
 *
 * FROM_SLOT and EXPORT hand the caller a name it could not learn any other
 * way (the row's new handle, the new fd), so they write their struct back
 * first and take effect only after that write succeeded. Between the two
 * the pool lock is dropped: another thread of the caller may change the
 * slot or the row meanwhile. FROM_SLOT must then fail with EAGAIN (or
 * ENOENT when the slot is gone), take nothing, and leave a struct that
 * names nothing; EXPORT's fd is out already, so it exports what the handle
 * names then (ENOENT if nothing) and rewrites the page count. EXPORT's file is made before the answer is written:
 * when it cannot be (ENFILE, EMFILE) the row stays with the caller.
 *
 * The window is made deterministic with userfaultfd(2) in write-protect
 * mode: the struct lies alone on a page that is present and readable (the
 * kernel first reads the struct: get_user() of size, then
 * copy_struct_from_user()) but write-protected, so the kernel's write-back
 * (copy_to_user() of min(size, sizeof) bytes, all on that page) blocks in
 * the fault. The test thread sees the fault, acts on the same client from
 * ordinary memory, then lifts the protection, which lets the write-back
 * finish and the op go on. (MISSING mode cannot do it: the read faults
 * first, and once that fault is resolved the page is present for the
 * write too; a struct straddling two pages does not help either, since
 * the read always covers every byte the write-back covers.)
 *
 * Without CONFIG_USERFAULTFD (and the write-protect mode x86-64 selects
 * with it) those tests fail, naming the option: they are no optional part
 * of the suite.
 *
 * Copyright (C) 2026 The kvpool authors
 */
#define _GNU_SOURCE
#include "kvptest_tenant.h"

#include <grp.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>

#define NR_PAGES	65	/* page 0 reserved: 64 usable */
#define USABLE		64
#define PT		4
#define NR_ROWS		9	/* row 0 reserved: 8 usable */
#define ROW_TOKENS	256
#define T(n)		((n) * PT)

#define SESSION		0x5e55100000000001ull
#define NOBODY		65534

#define FILE_MAX	"/proc/sys/fs/file-max"
#define FILE_NR		"/proc/sys/fs/file-nr"

/* How long the test waits for a write-back to fault, or an op to end. */
#define WAIT_MS		10000

/* ---- a write-protected page and a thread whose ioctl blocks on it ----- */

/* One ioctl, run by another thread of the test, on the protected page. */
struct racer {
	int fd;
	unsigned long cmd;
	void *arg;
	int ret;	/* 0 or the errno */
	int done;	/* __atomic: set once the ioctl returned */
};

/*
 * @page holds the op's struct and nothing else; @uffd has it registered
 * for write-protect faults. @fault is why the window did not open (0: the
 * racer's write-back faulted and waits for wp_window_close()).
 */
struct wp_window {
	int uffd;
	char *page;
	bool protected;
	bool running;	/* the racer thread exists and is not joined */
	pthread_t th;
	struct racer r;
	int fault;
	struct uffd_msg msg;
};

static void *racer_main(void *p)
{
	struct racer *r = p;

	r->ret = kt_ioctl(r->fd, r->cmd, r->arg);
	__atomic_store_n(&r->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static int wp_protect(struct wp_window *w, bool on)
{
	struct uffdio_writeprotect wp = {
		.range = { .start = kt_ptr(w->page), .len = KT_PAGE_SIZE },
		/* Lifting it also wakes the faulting thread. */
		.mode = on ? UFFDIO_WRITEPROTECT_MODE_WP : 0,
	};

	if (ioctl(w->uffd, UFFDIO_WRITEPROTECT, &wp))
		return errno;
	w->protected = on;
	return 0;
}

/* Unused fields, so that the teardown knows what there is to undo. */
static void wp_reset(struct wp_window *w)
{
	memset(w, 0, sizeof(*w));
	w->uffd = -1;
	w->page = MAP_FAILED;
	w->fault = -1;
}

/*
 * Set up the page: userfaultfd, write-protect mode, registered, populated
 * (write protection applies to present pages only). Fails the test, with
 * the kernel option to turn on, when this kernel cannot.
 */
static void wp_init(struct __test_metadata *_metadata, struct wp_window *w)
{
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg;
	int err;

	wp_reset(w);
	w->uffd = syscall(__NR_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	err = w->uffd < 0 ? errno : 0;
	ASSERT_LE(0, w->uffd) {
		if (err == ENOSYS)
			TH_LOG("userfaultfd(2): ENOSYS: this kernel lacks CONFIG_USERFAULTFD=y, which this test needs");
		else
			TH_LOG("userfaultfd(2): %s", strerror(err));
	}
	ASSERT_EQ(0, ioctl(w->uffd, UFFDIO_API, &api))
		TH_LOG("UFFDIO_API: %s", strerror(errno));
	ASSERT_TRUE(api.features & UFFD_FEATURE_PAGEFAULT_FLAG_WP)
		TH_LOG("userfaultfd has no write-protect mode: this kernel lacks CONFIG_HAVE_ARCH_USERFAULTFD_WP (x86-64 selects it with CONFIG_USERFAULTFD=y)");

	w->page = mmap(NULL, KT_PAGE_SIZE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, w->page);
	memset(w->page, 0, KT_PAGE_SIZE);
	memset(&reg, 0, sizeof(reg));
	reg.range.start = kt_ptr(w->page);
	reg.range.len = KT_PAGE_SIZE;
	reg.mode = UFFDIO_REGISTER_MODE_WP;
	ASSERT_EQ(0, ioctl(w->uffd, UFFDIO_REGISTER, &reg))
		TH_LOG("UFFDIO_REGISTER (write-protect, anonymous memory): %s",
		       strerror(errno));
	ASSERT_TRUE(reg.ioctls & (1ull << _UFFDIO_WRITEPROTECT))
		TH_LOG("UFFDIO_WRITEPROTECT not offered on anonymous memory");
}

static const char *wp_why(int fault)
{
	switch (fault) {
	case 0:
		return "the write-back faulted";
	case ETIMEDOUT:
		return "no write-back fault within 10 s";
	case ECHILD:
		return "the op returned without writing its struct back";
	case EPROTO:
		return "an unexpected userfaultfd message";
	default:
		return strerror(fault);
	}
}

/*
 * Start @cmd on the struct in the page, write-protected, in a thread of
 * its own, and wait until its write-back faults. Returns w->fault.
 */
static int wp_window_open(struct wp_window *w, int fd, unsigned long cmd)
{
	struct pollfd pfd = { .fd = w->uffd, .events = POLLIN };
	long long deadline = now_ms() + WAIT_MS;
	struct uffd_msg *m = &w->msg;
	int ret;

	ret = wp_protect(w, true);
	if (ret)
		return w->fault = ret;
	w->r = (struct racer){ .fd = fd, .cmd = cmd, .arg = w->page };
	ret = pthread_create(&w->th, NULL, racer_main, &w->r);
	if (ret)
		return w->fault = ret;
	w->running = true;

	/* Short polls: an op that never writes back ends the wait early. */
	for (;;) {
		ret = poll(&pfd, 1, 50);
		if (ret > 0)
			break;
		if (ret < 0 && errno != EINTR)
			return w->fault = errno;
		if (__atomic_load_n(&w->r.done, __ATOMIC_ACQUIRE))
			return w->fault = ECHILD;
		if (now_ms() > deadline)
			return w->fault = ETIMEDOUT;
	}
	if (read(w->uffd, m, sizeof(*m)) != sizeof(*m))
		return w->fault = errno ? errno : EIO;
	if (m->event != UFFD_EVENT_PAGEFAULT ||
	    !(m->arg.pagefault.flags & UFFD_PAGEFAULT_FLAG_WP) ||
	    !(m->arg.pagefault.flags & UFFD_PAGEFAULT_FLAG_WRITE) ||
	    (m->arg.pagefault.address & ~(__u64)(KT_PAGE_SIZE - 1)) !=
	    kt_ptr(w->page))
		return w->fault = EPROTO;
	return w->fault = 0;
}

/*
 * Lift the protection (the write-back completes, the op goes on) and
 * join the racer. Returns 0 when it ended, with its result in w->r.ret.
 */
static int wp_window_close(struct wp_window *w)
{
	struct timespec ts;
	int ret = 0;

	if (w->protected)
		ret = wp_protect(w, false);
	if (!w->running)
		return ret;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += WAIT_MS / 1000;
	if (pthread_timedjoin_np(w->th, NULL, &ts))
		return ETIMEDOUT;
	w->running = false;
	return ret;
}

/* Teardown: never leave a thread blocked on the page. EXPECT only. */
static void wp_fini(struct __test_metadata *_metadata, struct wp_window *w)
{
	if (w->uffd < 0)
		goto out_page;
	EXPECT_EQ(0, wp_window_close(w));
	if (w->running) {
		/* Closing the userfaultfd wakes any fault left on it. */
		close(w->uffd);
		w->uffd = -1;
		EXPECT_EQ(0, wp_window_close(w))
			TH_LOG("the racing ioctl never returned");
	}
	if (w->uffd >= 0)
		close(w->uffd);
	w->uffd = -1;
out_page:
	if (w->page != MAP_FAILED)
		munmap(w->page, KT_PAGE_SIZE);
	w->page = MAP_FAILED;
}

/* ---- small helpers ------------------------------------------------------ */

/* The same row in another place: everything but its state is equal. */
static const char *row_diff_but_state(const struct kt_row_snap *a,
				      const struct kt_row_snap *b)
{
	struct kt_row_snap *c = malloc(sizeof(*c));
	const char *d;

	if (!c)
		return "malloc";
	*c = *b;
	c->state = a->state;
	d = kt_row_diff(a, c);
	free(c);
	return d;
}

static void init_slot(struct kvpool_slot *s, __u64 session)
{
	memset(s, 0, sizeof(*s));
	s->size = sizeof(*s);
	s->session_id = session;
	/* FROM_SLOT ignores what the handle holds: make it visible. */
	s->handle = (struct kvpool_handle){ 0xdeadbeef, 0xdeadbeef };
	s->out_nr_pages = 0xdeadbeef;
}

static void init_export(struct kvpool_export *x, struct kvpool_handle h)
{
	memset(x, 0, sizeof(*x));
	x->size = sizeof(*x);
	x->handle = h;
	x->out_fd = -2;
	x->out_nr_pages = 0xdeadbeef;
}

static int export_row(int fd, struct kvpool_handle h, struct kvpool_export *x)
{
	init_export(x, h);
	return kt_ioctl(fd, KVPOOL_EXPORT, x);
}

static int import_fd(int fd, int xfd, struct kvpool_handle *h, __u32 *nr)
{
	struct kvpool_import im = {
		.size = sizeof(im),
		.fd = xfd,
	};
	int ret = kt_ioctl(fd, KVPOOL_IMPORT, &im);

	*h = im.out_handle;
	*nr = im.out_nr_pages;
	return ret;
}

/* The number a new file would get: every lower one is open. */
static int lowest_free_fd(void)
{
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

	if (fd >= 0)
		close(fd);
	return fd;
}

static bool fd_is_open(int fd)
{
	return fcntl(fd, F_GETFD) >= 0;
}

/* ---- the fixture --------------------------------------------------------- */

FIXTURE(respond) {
	struct kt_pool pool;
	int fd;
	struct wp_window w;
	char file_max[64];	/* file-max to restore; "" when untouched */
	int *fill;		/* files held open to fill the file table */
	int nr_fill;
};

FIXTURE_SETUP(respond)
{
	wp_reset(&self->w);
	self->file_max[0] = 0;
	self->fill = NULL;
	self->nr_fill = 0;
	kt_pool_init(_metadata, &self->pool, KVPOOL_CREATE_RESERVE_ZERO,
		     NR_PAGES, PT, NR_ROWS, ROW_TOKENS);
	self->fd = kt_pool_open(_metadata, &self->pool);
}

static int write_str(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;
	int err;

	if (fd < 0)
		return errno;
	n = write(fd, s, strlen(s));
	err = n == (ssize_t)strlen(s) ? 0 : n < 0 ? errno : EIO;
	close(fd);
	return err;
}

static int read_str(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n <= 0)
		return n < 0 ? errno : EIO;
	buf[n] = 0;
	return 0;
}

/* Put file-max back, once, whatever path the test took. EXPECT only. */
static void file_max_restore(struct __test_metadata *_metadata,
			     FIXTURE_DATA(respond) *self)
{
	if (!self->file_max[0])
		return;
	EXPECT_EQ(0, write_str(FILE_MAX, self->file_max))
		TH_LOG("could not restore %s to %s", FILE_MAX, self->file_max);
	self->file_max[0] = 0;
}

FIXTURE_TEARDOWN(respond)
{
	file_max_restore(_metadata, self);
	while (self->nr_fill)
		close(self->fill[--self->nr_fill]);
	free(self->fill);
	wp_fini(_metadata, &self->w);
	kt_pool_fini(_metadata, &self->pool);
}

/* STATS of the test's client, which must work. */
#define STATS(s) ASSERT_EQ(0, kt_stats(self->fd, (s)))

/* The pool is consistent: both identities, and VERIFY finds nothing. */
static void expect_sound(struct __test_metadata *_metadata,
			 FIXTURE_DATA(respond) *self)
{
	struct kvpool_stats s;

	EXPECT_EQ(0, kt_stats(self->fd, &s));
	kt_check_identities(_metadata, &self->pool, &s);
	kt_expect_verify(_metadata, &self->pool, self->fd);
}

/* ---- FROM_SLOT -------------------------------------------------------- */

/*
 * Control: nothing happens in the window. While the answer is being
 * written the row is still parked (the op has not taken effect); once the
 * write is let through, FROM_SLOT takes it under the handle it wrote.
 */
TEST_F(respond, from_slot_window_unchanged)
{
	struct kvpool_slot *s;
	struct kvpool_row_query q;
	struct kvpool_stats st;
	struct kvpool_handle h;
	int ret;

	wp_init(_metadata, &self->w);
	h = kt_new_row(_metadata, self->fd, T(3), T(2));
	ASSERT_EQ(0, kt_to_slot(self->fd, SESSION, h, NULL));
	s = (struct kvpool_slot *)self->w.page;
	init_slot(s, SESSION);

	if (!wp_window_open(&self->w, self->fd, KVPOOL_FROM_SLOT)) {
		EXPECT_EQ(0xdeadbeef, s->out_nr_pages)
			TH_LOG("the struct changed under write protection");
		EXPECT_EQ(0, kt_stats(self->fd, &st));
		EXPECT_EQ(1, st.out_client_slots)
			TH_LOG("FROM_SLOT took effect before answering");
		EXPECT_EQ(0, st.out_client_rows);
		EXPECT_EQ(0, kt_query_slot(self->fd, SESSION, NULL, 0, &q));
	}
	ret = wp_window_close(&self->w);
	ASSERT_EQ(0, self->w.fault) TH_LOG("%s", wp_why(self->w.fault));
	ASSERT_EQ(0, ret) TH_LOG("%s", strerror(ret));

	EXPECT_EQ(0, self->w.r.ret) TH_LOG("%s", strerror(self->w.r.ret));
	EXPECT_EQ(h.req_pool_idx, s->handle.req_pool_idx);
	EXPECT_EQ(h.generation + 1, s->handle.generation);
	EXPECT_EQ(3, s->out_nr_pages);
	STATS(&st);
	EXPECT_EQ(0, st.out_client_slots);
	EXPECT_EQ(1, st.out_client_rows);
	EXPECT_EQ(ENOENT, kt_query_slot(self->fd, SESSION, NULL, 0, &q));
	EXPECT_EQ(0, kt_query(self->fd, s->handle, NULL, 0, &q));
	EXPECT_EQ(KVPOOL_ROW_HELD, q.out_state);
	EXPECT_EQ(T(2), q.out_committed_len);
	expect_sound(_metadata, self);
}

/*
 * Another thread of the caller takes the row out of the slot and parks it
 * again under the same session id while the answer is being written: the
 * slot now holds the row under a newer generation, so the handle already
 * written (the very one the other thread got) would be wrong. FROM_SLOT
 * fails with EAGAIN, the slot stays as the other thread left it, the
 * struct names no row; called again, it takes the row under the
 * generation after the other thread's.
 */
TEST_F(respond, from_slot_reparked)
{
	struct kt_row_snap *before, *after;
	struct kvpool_handle h, h2 = { 0, 0 };
	struct kvpool_row_query q;
	struct kvpool_stats st;
	struct kvpool_slot *s;
	__u32 n2 = 0;
	int ret;

	before = calloc(2, sizeof(*before));
	ASSERT_NE(NULL, before);
	after = before + 1;
	wp_init(_metadata, &self->w);
	h = kt_new_row(_metadata, self->fd, T(3), T(2));
	ASSERT_EQ(0, kt_to_slot(self->fd, SESSION, h, NULL));
	kt_snap_slot(self->fd, SESSION, before);
	ASSERT_EQ(0, before->err);
	s = (struct kvpool_slot *)self->w.page;
	init_slot(s, SESSION);

	if (!wp_window_open(&self->w, self->fd, KVPOOL_FROM_SLOT)) {
		EXPECT_EQ(0, kt_from_slot(self->fd, SESSION, &h2, &n2));
		EXPECT_EQ(h.req_pool_idx, h2.req_pool_idx);
		EXPECT_EQ(h.generation + 1, h2.generation);
		EXPECT_EQ(3, n2);
		EXPECT_EQ(0, kt_to_slot(self->fd, SESSION, h2, NULL));
	}
	ret = wp_window_close(&self->w);
	ASSERT_EQ(0, self->w.fault) TH_LOG("%s", wp_why(self->w.fault));
	ASSERT_EQ(0, ret) TH_LOG("%s", strerror(ret));

	EXPECT_EQ(EAGAIN, self->w.r.ret) TH_LOG("got %d (%s)", self->w.r.ret,
						strerror(self->w.r.ret));
	/* The struct was written back once more: it names nothing. */
	EXPECT_EQ(sizeof(*s), s->size);
	EXPECT_EQ(SESSION, s->session_id);
	EXPECT_EQ(0, s->handle.req_pool_idx);
	EXPECT_EQ(0, s->handle.generation);
	EXPECT_EQ(0, s->out_nr_pages);
	/* Nothing changed: the slot is parked as the other thread left it. */
	STATS(&st);
	EXPECT_EQ(1, st.out_client_slots);
	EXPECT_EQ(0, st.out_client_rows);
	EXPECT_EQ(1, st.out_slot_rows);
	EXPECT_EQ(0, st.out_held_rows);
	EXPECT_EQ(3, st.out_slot_pages);
	EXPECT_EQ(0, st.out_row_pages);
	EXPECT_EQ(3, st.out_client_pages);
	kt_snap_slot(self->fd, SESSION, after);
	EXPECT_EQ(0, after->err);
	EXPECT_EQ(KVPOOL_ROW_SLOT, after->state);
	EXPECT_STREQ("", kt_row_diff(before, after));
	EXPECT_EQ(ENOENT, kt_query(self->fd, h2, NULL, 0, &q))
		TH_LOG("the other thread's handle died when it parked the row");
	expect_sound(_metadata, self);

	/*
	 * Call again: it works, one generation past the other thread's
	 * (TO_SLOT keeps the generation, FROM_SLOT bumps it).
	 */
	init_slot(s, SESSION);
	ASSERT_EQ(0, kt_ioctl(self->fd, KVPOOL_FROM_SLOT, s));
	EXPECT_EQ(h.req_pool_idx, s->handle.req_pool_idx);
	EXPECT_EQ(h2.generation + 1, s->handle.generation);
	EXPECT_EQ(3, s->out_nr_pages);
	kt_snap_row(self->fd, s->handle, after);
	EXPECT_EQ(0, after->err);
	EXPECT_EQ(KVPOOL_ROW_HELD, after->state);
	EXPECT_STREQ("", row_diff_but_state(before, after));
	expect_sound(_metadata, self);
	free(before);
}

/*
 * Another thread takes the row out of the slot for good while the answer
 * is being written: the slot is gone, so the re-check finds nothing and
 * the op fails as any FROM_SLOT of a missing slot does, ENOENT (the
 * driver's re-check reports the lookup's error as it is; EAGAIN is for a
 * slot that is there but changed). The struct names nothing, although
 * the handle written first is the one the other thread now holds.
 */
TEST_F(respond, from_slot_taken)
{
	struct kvpool_handle h, h2 = { 0, 0 };
	struct kvpool_row_query q;
	struct kvpool_stats st;
	struct kvpool_slot *s;
	__u32 n2 = 0;
	int ret;

	wp_init(_metadata, &self->w);
	h = kt_new_row(_metadata, self->fd, T(5), T(5));
	ASSERT_EQ(0, kt_to_slot(self->fd, SESSION, h, NULL));
	s = (struct kvpool_slot *)self->w.page;
	init_slot(s, SESSION);

	if (!wp_window_open(&self->w, self->fd, KVPOOL_FROM_SLOT))
		EXPECT_EQ(0, kt_from_slot(self->fd, SESSION, &h2, &n2));
	ret = wp_window_close(&self->w);
	ASSERT_EQ(0, self->w.fault) TH_LOG("%s", wp_why(self->w.fault));
	ASSERT_EQ(0, ret) TH_LOG("%s", strerror(ret));

	EXPECT_EQ(ENOENT, self->w.r.ret) TH_LOG("got %d (%s)", self->w.r.ret,
						strerror(self->w.r.ret));
	EXPECT_EQ(0, s->handle.req_pool_idx);
	EXPECT_EQ(0, s->handle.generation);
	EXPECT_EQ(0, s->out_nr_pages);
	EXPECT_EQ(h.generation + 1, h2.generation);
	EXPECT_EQ(5, n2);
	/* The row is the other thread's, once: held, not parked. */
	STATS(&st);
	EXPECT_EQ(0, st.out_client_slots);
	EXPECT_EQ(1, st.out_client_rows);
	EXPECT_EQ(0, st.out_slot_rows);
	EXPECT_EQ(1, st.out_held_rows);
	EXPECT_EQ(5, st.out_row_pages);
	EXPECT_EQ(0, kt_query(self->fd, h2, NULL, 0, &q));
	EXPECT_EQ(KVPOOL_ROW_HELD, q.out_state);
	EXPECT_EQ(T(5), q.out_committed_len);
	EXPECT_EQ(ENOENT, kt_from_slot(self->fd, SESSION, &h2, NULL));
	expect_sound(_metadata, self);
}

/* ---- EXPORT ------------------------------------------------------------- */

/*
 * Control: nothing happens in the window. The fd number is taken but no
 * file is installed there and the row is still the caller's while the
 * answer is being written; afterwards the fd it wrote is the export file.
 */
TEST_F(respond, export_window_unchanged)
{
	struct kvpool_export *x;
	struct kvpool_row_query q;
	struct kvpool_handle h, nh;
	struct kvpool_stats st;
	int low, ret;
	__u32 nr;

	wp_init(_metadata, &self->w);
	h = kt_new_row(_metadata, self->fd, T(3), T(1));
	x = (struct kvpool_export *)self->w.page;
	init_export(x, h);
	low = lowest_free_fd();
	ASSERT_LE(0, low);

	if (!wp_window_open(&self->w, self->fd, KVPOOL_EXPORT)) {
		EXPECT_EQ(-2, x->out_fd);
		EXPECT_FALSE(fd_is_open(low))
			TH_LOG("fd %d installed before answering", low);
		EXPECT_EQ(0, kt_query(self->fd, h, NULL, 0, &q))
			TH_LOG("the row left before the answer was written");
		EXPECT_EQ(0, kt_stats(self->fd, &st));
		EXPECT_EQ(0, st.out_export_rows);
		EXPECT_EQ(1, st.out_client_rows);
	}
	ret = wp_window_close(&self->w);
	ASSERT_EQ(0, self->w.fault) TH_LOG("%s", wp_why(self->w.fault));
	ASSERT_EQ(0, ret) TH_LOG("%s", strerror(ret));

	EXPECT_EQ(0, self->w.r.ret) TH_LOG("%s", strerror(self->w.r.ret));
	EXPECT_EQ(low, x->out_fd);
	EXPECT_EQ(3, x->out_nr_pages);
	EXPECT_TRUE(kt_is_export_fd(x->out_fd));
	EXPECT_EQ(ENOENT, kt_query(self->fd, h, NULL, 0, &q));
	STATS(&st);
	EXPECT_EQ(1, st.out_export_rows);
	EXPECT_EQ(3, st.out_export_pages);
	EXPECT_EQ(0, st.out_client_rows);
	expect_sound(_metadata, self);
	if (x->out_fd >= 0) {
		EXPECT_EQ(0, import_fd(self->fd, x->out_fd, &nh, &nr));
		EXPECT_EQ(3, nr);
		close(x->out_fd);
	}
}

/*
 * Another thread of the caller extends the row while the answer (fd and
 * page count) is being written. The fd, the one name the caller needs, is
 * out already, and the handle still names the same row: EXPORT goes on,
 * exports the row as it is now and writes the page count a second time.
 */
TEST_F(respond, export_extended)
{
	struct kvpool_export *x;
	struct kvpool_row_query q;
	struct kvpool_handle h, nh;
	struct kvpool_stats st;
	int low, nfds, ret;
	__u32 nr;

	wp_init(_metadata, &self->w);
	h = kt_new_row(_metadata, self->fd, T(3), T(3));
	x = (struct kvpool_export *)self->w.page;
	init_export(x, h);
	low = lowest_free_fd();
	ASSERT_LE(0, low);
	nfds = kt_count_fds();

	if (!wp_window_open(&self->w, self->fd, KVPOOL_EXPORT)) {
		EXPECT_FALSE(fd_is_open(low));
		EXPECT_EQ(0, kt_grow(self->fd, h, T(5)));
	}
	ret = wp_window_close(&self->w);
	ASSERT_EQ(0, self->w.fault) TH_LOG("%s", wp_why(self->w.fault));
	ASSERT_EQ(0, ret) TH_LOG("%s", strerror(ret));

	EXPECT_EQ(0, self->w.r.ret) TH_LOG("got %d (%s)", self->w.r.ret,
					   strerror(self->w.r.ret));
	EXPECT_EQ(low, x->out_fd);
	EXPECT_EQ(5, x->out_nr_pages) TH_LOG("the count was not rewritten");
	EXPECT_TRUE(kt_is_export_fd(x->out_fd));
	EXPECT_EQ(nfds + 1, kt_count_fds());
	/* The row left the caller with all five pages. */
	EXPECT_EQ(ENOENT, kt_query(self->fd, h, NULL, 0, &q));
	STATS(&st);
	EXPECT_EQ(1, st.out_export_rows);
	EXPECT_EQ(5, st.out_export_pages);
	EXPECT_EQ(0, st.out_client_rows);
	EXPECT_EQ(0, st.out_client_pages);
	EXPECT_EQ(USABLE - 5, st.out_free_pages);
	expect_sound(_metadata, self);
	if (x->out_fd >= 0) {
		ASSERT_EQ(0, import_fd(self->fd, x->out_fd, &nh, &nr));
		EXPECT_EQ(5, nr);
		EXPECT_EQ(h.req_pool_idx, nh.req_pool_idx);
		EXPECT_EQ(h.generation + 1, nh.generation);
		close(x->out_fd);
	}
	expect_sound(_metadata, self);
}

/*
 * Another thread releases the row while the answer is being written: the
 * re-check finds no row (ENOENT, as for any dead handle), no fd is
 * installed, nothing is in flight, every page is free again.
 */
TEST_F(respond, export_released)
{
	struct kvpool_export *x;
	struct kvpool_handle h;
	struct kvpool_stats st;
	int low, nfds, ret;

	wp_init(_metadata, &self->w);
	h = kt_new_row(_metadata, self->fd, T(4), T(2));
	x = (struct kvpool_export *)self->w.page;
	init_export(x, h);
	low = lowest_free_fd();
	ASSERT_LE(0, low);
	nfds = kt_count_fds();

	if (!wp_window_open(&self->w, self->fd, KVPOOL_EXPORT))
		EXPECT_EQ(0, kt_release1(self->fd, h, NULL));
	ret = wp_window_close(&self->w);
	ASSERT_EQ(0, self->w.fault) TH_LOG("%s", wp_why(self->w.fault));
	ASSERT_EQ(0, ret) TH_LOG("%s", strerror(ret));

	EXPECT_EQ(ENOENT, self->w.r.ret) TH_LOG("got %d (%s)", self->w.r.ret,
						strerror(self->w.r.ret));
	EXPECT_EQ(-1, x->out_fd);
	EXPECT_EQ(0, x->out_nr_pages);
	EXPECT_FALSE(fd_is_open(low));
	EXPECT_EQ(nfds, kt_count_fds());
	STATS(&st);
	EXPECT_EQ(0, st.out_export_rows);
	EXPECT_EQ(0, st.out_client_rows);
	EXPECT_EQ(USABLE, st.out_free_pages);
	expect_sound(_metadata, self);
}

/* ---- EXPORT without a file ---------------------------------------------- */

/*
 * Making the system's file table full for all but CAP_SYS_ADMIN, whatever
 * the per-CPU counts hold. alloc_empty_file() refuses a file when the
 * approximate count of files (a percpu_counter, the number
 * /proc/sys/fs/file-nr shows) is >= file-max and the exact sum is too.
 * Setting file-max "just above" the count would not do: the test is >=,
 * and the approximation lags the exact sum by less than cpus * batch
 * (batch = max(32, 2 * cpus)) in either direction; in a small guest
 * file-nr reads 0 with dozens of files open. So the test holds 2 * that
 * error + 64 files open itself (as root it may, whatever file-max says)
 * and sets file-max to half of that: the approximate count is then at
 * least the exact one less the error, which is above file-max.
 */
static void fill_file_table(struct __test_metadata *_metadata,
			    FIXTURE_DATA(respond) *self, unsigned long *max)
{
	long cpus = sysconf(_SC_NPROCESSORS_CONF);
	unsigned long batch, want;
	struct rlimit rl;

	if (cpus < 1)
		cpus = 1;
	batch = 2 * cpus > 32 ? 2 * cpus : 32;
	want = 2 * cpus * batch + 64;
	*max = want / 2;

	/* Room for them and the test's own fds. */
	ASSERT_EQ(0, getrlimit(RLIMIT_NOFILE, &rl));
	if (rl.rlim_cur < want + 256) {
		rl.rlim_cur = want + 256;
		ASSERT_LE(rl.rlim_cur, rl.rlim_max)
			TH_LOG("RLIMIT_NOFILE hard limit %lu < %lu",
			       (unsigned long)rl.rlim_max, want + 256);
		ASSERT_EQ(0, setrlimit(RLIMIT_NOFILE, &rl));
	}
	self->fill = calloc(want, sizeof(*self->fill));
	ASSERT_NE(NULL, self->fill);
	while (self->nr_fill < (int)want) {
		/* open(), not dup(): each must be a struct file of its own. */
		int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

		ASSERT_LE(0, fd) TH_LOG("open: %s", strerror(errno));
		self->fill[self->nr_fill++] = fd;
	}
}

/*
 * EXPORT when the system's file table is full: the anon file cannot be
 * made, ENFILE, out_fd -1, and the row stays the caller's, unchanged. The
 * pool is opened as root, then a child drops to uid 65534 (root is exempt
 * from file-max) and exports through the inherited fd: the same client.
 * file-max is lowered only around the child and restored on every path
 * (the teardown too).
 */
TEST_F(respond, export_enfile)
{
	struct kt_row_snap *before, *after;
	struct kvpool_stats s0, s1;
	struct kvpool_export x;
	struct kvpool_handle h, nh;
	unsigned long nr_files, nr_full, lim;
	char buf[128];
	int status;
	__u32 nr;
	pid_t pid;

	before = calloc(2, sizeof(*before));
	ASSERT_NE(NULL, before);
	after = before + 1;
	h = kt_new_row(_metadata, self->fd, T(3), T(1));
	STATS(&s0);
	kt_snap_row(self->fd, h, before);
	ASSERT_EQ(0, before->err);

	ASSERT_EQ(0, read_str(FILE_NR, buf, sizeof(buf)));
	ASSERT_EQ(1, sscanf(buf, "%lu", &nr_files)) TH_LOG("%s: %s", FILE_NR,
							   buf);
	fill_file_table(_metadata, self, &lim);
	ASSERT_EQ(0, read_str(FILE_NR, buf, sizeof(buf)));
	ASSERT_EQ(1, sscanf(buf, "%lu", &nr_full));
	ASSERT_EQ(0, read_str(FILE_MAX, self->file_max,
			      sizeof(self->file_max)));
	snprintf(buf, sizeof(buf), "%lu", lim);
	ASSERT_EQ(0, write_str(FILE_MAX, buf));
	TH_LOG("file-nr %lu, %lu with %d more open: file-max %lu (was %.*s)",
	       nr_files, nr_full, self->nr_fill, lim,
	       (int)strcspn(self->file_max, "\n"), self->file_max);

	pid = kt_pool_fork(_metadata, &self->pool);
	if (pid == 0) {
		struct kvpool_row_query q;
		struct kvpool_stats s;
		int d;

		alarm(20);
		CHILD_CHECK(!setgroups(0, NULL));
		CHILD_CHECK(!setresgid(NOBODY, NOBODY, NOBODY));
		CHILD_CHECK(!setresuid(NOBODY, NOBODY, NOBODY));
		/* The table is full for it: a plain open fails alike. */
		d = open("/dev/null", O_RDONLY | O_CLOEXEC);
		CHILD_CHECK(d < 0 && errno == ENFILE);
		CHILD_CHECK(export_row(self->fd, h, &x) == ENFILE);
		CHILD_CHECK(x.out_fd == -1);
		CHILD_CHECK(x.out_nr_pages == 0);
		CHILD_CHECK(!kt_query(self->fd, h, NULL, 0, &q));
		CHILD_CHECK(q.out_state == KVPOOL_ROW_HELD);
		CHILD_CHECK(q.out_allocated_len == T(3));
		CHILD_CHECK(!kt_stats(self->fd, &s));
		CHILD_CHECK(s.out_export_rows == 0);
		CHILD_CHECK(s.out_client_rows == 1);
		_exit(0);
	}
	status = kt_pool_wait(&self->pool, pid);
	file_max_restore(_metadata, self);
	while (self->nr_fill)
		close(self->fill[--self->nr_fill]);
	EXPECT_TRUE(KT_CHILD_OK(status)) TH_LOG("child status %#x", status);

	STATS(&s1);
	kt_snap_row(self->fd, h, after);
	EXPECT_STREQ("", kt_stats_diff(&s0, &s1, KT_ST_USAGE));
	EXPECT_STREQ("", kt_row_diff(before, after));
	EXPECT_EQ(0, s1.out_export_rows);
	expect_sound(_metadata, self);

	/* With room in the table it exports, and imports back whole. */
	ASSERT_EQ(0, export_row(self->fd, h, &x));
	EXPECT_EQ(3, x.out_nr_pages);
	ASSERT_EQ(0, import_fd(self->fd, x.out_fd, &nh, &nr));
	EXPECT_EQ(3, nr);
	close(x.out_fd);
	kt_snap_row(self->fd, nh, after);
	EXPECT_STREQ("", kt_row_diff(before, after));
	free(before);
}

/*
 * EXPORT with no free fd under RLIMIT_NOFILE, in a child (the limit is
 * the child's alone): every fd below the limit is open, so EMFILE, out_fd
 * -1, and the row stays the caller's, unchanged.
 */
TEST_F(respond, export_emfile)
{
	struct kt_row_snap *before, *after;
	struct kvpool_stats s0, s1;
	struct kvpool_export x;
	struct kvpool_handle h, nh;
	int status;
	__u32 nr;
	pid_t pid;

	before = calloc(2, sizeof(*before));
	ASSERT_NE(NULL, before);
	after = before + 1;
	h = kt_new_row(_metadata, self->fd, T(2), T(2));
	STATS(&s0);
	kt_snap_row(self->fd, h, before);
	ASSERT_EQ(0, before->err);

	pid = kt_pool_fork(_metadata, &self->pool);
	if (pid == 0) {
		struct kvpool_row_query q;
		struct kvpool_stats s;
		struct rlimit rl;
		int low, d;

		alarm(20);
		low = lowest_free_fd();
		CHILD_CHECK(low > self->fd);
		CHILD_CHECK(!getrlimit(RLIMIT_NOFILE, &rl));
		rl.rlim_cur = low;
		CHILD_CHECK(!setrlimit(RLIMIT_NOFILE, &rl));
		d = open("/dev/null", O_RDONLY | O_CLOEXEC);
		CHILD_CHECK(d < 0 && errno == EMFILE);
		CHILD_CHECK(export_row(self->fd, h, &x) == EMFILE);
		CHILD_CHECK(x.out_fd == -1);
		CHILD_CHECK(x.out_nr_pages == 0);
		CHILD_CHECK(!kt_query(self->fd, h, NULL, 0, &q));
		CHILD_CHECK(q.out_state == KVPOOL_ROW_HELD);
		CHILD_CHECK(q.out_allocated_len == T(2));
		CHILD_CHECK(!kt_stats(self->fd, &s));
		CHILD_CHECK(s.out_export_rows == 0);
		CHILD_CHECK(s.out_client_rows == 1);
		_exit(0);
	}
	status = kt_pool_wait(&self->pool, pid);
	EXPECT_TRUE(KT_CHILD_OK(status)) TH_LOG("child status %#x", status);

	STATS(&s1);
	kt_snap_row(self->fd, h, after);
	EXPECT_STREQ("", kt_stats_diff(&s0, &s1, KT_ST_USAGE));
	EXPECT_STREQ("", kt_row_diff(before, after));
	EXPECT_EQ(0, s1.out_export_rows);
	expect_sound(_metadata, self);

	ASSERT_EQ(0, export_row(self->fd, h, &x));
	EXPECT_EQ(2, x.out_nr_pages);
	ASSERT_EQ(0, import_fd(self->fd, x.out_fd, &nh, &nr));
	EXPECT_EQ(2, nr);
	close(x.out_fd);
	free(before);
}

TEST_HARNESS_MAIN
