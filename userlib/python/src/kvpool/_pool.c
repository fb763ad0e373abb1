// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * _kvpool.Pool: one client of /dev/kvpoolN, one struct kvpool.
 *
 * Copyright (C) 2026 The kvpool authors
 *
 * Batched ops take their arrays through the buffer protocol and never
 * copy them into Python objects. Handle arrays are struct kvpool_handle
 * arrays already (see _kvpool.h) and go to libkvpool as they are; ops
 * whose entries pair a handle with a length are packed into the Pool's
 * scratch, room for out_max_batch entries allocated at open. The scratch
 * is one per Pool, and a Pool may be used from several threads, so it has
 * a mutex, taken only with the GIL released (a thread waiting for it
 * never holds the GIL, so it cannot deadlock against one that holds it
 * and wants the GIL back). The kernel serialises a pool's ops anyway, so
 * the mutex costs no parallelism.
 */
#include "_kvpool.h"

#include <errno.h>
#include <math.h>
#include <string.h>
#include <time.h>

/* One scratch entry: either kind of packed entry. */
union kvp_entry {
	struct kvpool_extend_entry ext;
	struct kvpool_len_entry len;
};

/* Page ids the scratch holds at first; it grows when an op needs more. */
#define KVP_PAGES_MIN	1024

typedef struct {
	PyObject_HEAD
	struct kvpool *kp;
	/*
	 * Calls that dropped the GIL while using kp. Read and written only
	 * with the GIL held, so it needs no lock of its own: close() and a
	 * re-init check it and refuse to free kp under a running call.
	 */
	unsigned int inflight;
	struct kvpool_info info;
	PyObject *info_obj;
	pthread_mutex_t lock;	/* guards ents, pages and pages_cap */
	union kvp_entry *ents;	/* info.out_max_batch of them */
	uint32_t *pages;
	unsigned int pages_cap;
	PyObject *weakrefs;
} kvp_pool;

/*
 * Drop the GIL around a call into libkvpool on self->kp, counted in
 * inflight so that close() from another thread cannot free the struct
 * kvpool under it. Converting an argument may run Python code (a DLPack
 * producer) and so let another thread close the Pool after the op's
 * first check: then the call is skipped and @ret is -EBADF.
 */
#define KVP_CALL_BEGIN(self)						\
	do {								\
		bool kvp_live_ = (self)->kp != NULL;			\
		(self)->inflight++;					\
		Py_BEGIN_ALLOW_THREADS					\
		if (kvp_live_) {
#define KVP_CALL_END(self, ret)						\
		} else {						\
			(ret) = -EBADF;					\
		}							\
		Py_END_ALLOW_THREADS					\
		(self)->inflight--;					\
	} while (0)

static uint64_t kvp_handle_int(struct kvpool_handle h)
{
	return (uint64_t)h.generation << 32 | h.req_pool_idx;
}

static bool kvp_pool_open(kvp_pool *self)
{
	if (self->kp)
		return true;
	PyErr_SetString(PyExc_ValueError, "I/O operation on a closed Pool");
	return false;
}

/*
 * Close the client. Refused while another thread is inside a call on it:
 * freeing the struct kvpool under that call would be a use after free,
 * and waiting could be for ever (wait_pressure(None)).
 */
static int kvp_pool_drop(kvp_pool *self)
{
	struct kvpool *kp = self->kp;

	if (self->inflight) {
		PyErr_Format(PyExc_RuntimeError,
			     "Pool is in use: %u call(s) running in other threads",
			     self->inflight);
		return -1;
	}
	self->kp = NULL;
	Py_CLEAR(self->info_obj);
	if (!kp)
		return 0;
	/* The last reference to the file frees all it held: kernel work. */
	Py_BEGIN_ALLOW_THREADS
	kvpool_close(kp);
	Py_END_ALLOW_THREADS
	return 0;
}

/* Take over the freshly opened @kp: its info and the scratch. */
static int kvp_pool_take(kvp_pool *self, struct kvpool *kp)
{
	unsigned int n;

	kvpool_info(kp, &self->info);
	n = self->info.out_max_batch ? self->info.out_max_batch : 1;
	/* Raw: the scratch grows with the GIL released. */
	PyMem_RawFree(self->ents);
	self->ents = PyMem_RawMalloc(n * sizeof(*self->ents));
	if (!self->pages || self->pages_cap < n) {
		PyMem_RawFree(self->pages);
		self->pages_cap = n > KVP_PAGES_MIN ? n : KVP_PAGES_MIN;
		self->pages = PyMem_RawMalloc(self->pages_cap *
					      sizeof(*self->pages));
	}
	if (!self->ents || !self->pages)
		goto nomem;
	self->info_obj = kvp_tuple_new(KVP_T_INFO, &self->info);
	if (!self->info_obj)
		goto fail;
	self->kp = kp;
	return 0;
nomem:
	PyErr_NoMemory();
fail:
	kvpool_close(kp);
	return -1;
}

static PyObject *kvp_pool_new(PyTypeObject *type, PyObject *args,
			      PyObject *kw)
{
	kvp_pool *self;

	(void)args;
	(void)kw;
	self = (kvp_pool *)type->tp_alloc(type, 0);
	if (self)
		pthread_mutex_init(&self->lock, NULL);
	return (PyObject *)self;
}

static int kvp_pool_init(kvp_pool *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "path", NULL };
	PyObject *path = NULL;
	struct kvpool *kp;
	int ret;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "|O&:Pool", kwlist,
					 PyUnicode_FSConverter, &path))
		return -1;
	if (kvp_pool_drop(self)) {
		Py_XDECREF(path);
		return -1;
	}
	Py_BEGIN_ALLOW_THREADS
	ret = kvpool_open(path ? PyBytes_AS_STRING(path) : NULL, &kp);
	Py_END_ALLOW_THREADS
	Py_XDECREF(path);
	if (ret < 0) {
		kvp_error(ret, NULL);
		return -1;
	}
	return kvp_pool_take(self, kp);
}

static void kvp_pool_dealloc(kvp_pool *self)
{
	if (self->weakrefs)
		PyObject_ClearWeakRefs((PyObject *)self);
	kvp_pool_drop(self);
	PyMem_RawFree(self->ents);
	PyMem_RawFree(self->pages);
	pthread_mutex_destroy(&self->lock);
	Py_TYPE(self)->tp_free((PyObject *)self);
}

PyDoc_STRVAR(kvp_pool_from_fd_doc,
"from_fd($type, fd, /)\n--\n\n"
"A Pool on a pool device the caller opened or received (kvpool_open_fd).\n"
"On success the Pool owns fd and closes it; on failure fd stays the\n"
"caller's.");

static PyObject *kvp_pool_from_fd(PyTypeObject *type, PyObject *arg)
{
	struct kvpool *kp;
	PyObject *self;
	int fd, ret;

	fd = PyLong_AsLong(arg);
	if (fd == -1 && PyErr_Occurred())
		return NULL;
	self = kvp_pool_new(type, NULL, NULL);
	if (!self)
		return NULL;
	Py_BEGIN_ALLOW_THREADS
	ret = kvpool_open_fd(fd, &kp);
	Py_END_ALLOW_THREADS
	if (ret < 0) {
		Py_DECREF(self);
		return kvp_error(ret, NULL);
	}
	if (kvp_pool_take((kvp_pool *)self, kp)) {
		Py_DECREF(self);
		return NULL;
	}
	return self;
}

PyDoc_STRVAR(kvp_pool_close_doc,
"close($self, /)\n--\n\n"
"Close the pool's file (kvpool_close). If no other reference to it\n"
"exists, the kernel frees every row, slot and page this client held.\n"
"Closing twice is harmless. While another thread is inside a call on\n"
"this Pool, close() raises RuntimeError and leaves it open.");

static PyObject *kvp_pool_close(kvp_pool *self, PyObject *unused)
{
	(void)unused;
	if (kvp_pool_drop(self))
		return NULL;
	Py_RETURN_NONE;
}

PyDoc_STRVAR(kvp_pool_enter_doc,
"__enter__($self, /)\n--\n\n"
"The Pool itself; ValueError if it is closed.");

static PyObject *kvp_pool_enter(kvp_pool *self, PyObject *unused)
{
	(void)unused;
	if (!kvp_pool_open(self))
		return NULL;
	return Py_NewRef(self);
}

PyDoc_STRVAR(kvp_pool_exit_doc,
"__exit__($self, exc_type, exc, tb, /)\n--\n\n"
"close(); returns False, so that an exception goes on.");

static PyObject *kvp_pool_exit(kvp_pool *self, PyObject *args)
{
	(void)args;
	if (kvp_pool_drop(self))
		return NULL;
	Py_RETURN_FALSE;
}

PyDoc_STRVAR(kvp_pool_fileno_doc,
"fileno($self, /)\n--\n\n"
"The pool's file descriptor (kvpool_fd), for select/poll/asyncio:\n"
"pressure is POLLPRI.");

static PyObject *kvp_pool_fileno(kvp_pool *self, PyObject *unused)
{
	(void)unused;
	if (!kvp_pool_open(self))
		return NULL;
	return PyLong_FromLong(kvpool_fd(self->kp));
}

/* The kernel answers that are one struct and one named tuple each. */
union kvp_answer {
	struct kvpool_stats stats;
	struct kvpool_verify verify;
	struct kvpool_pressure pressure;
	struct kvpool_arena arena;
};

static int kvp_answer_call(struct kvpool *kp, enum kvp_tuple_id id,
			   union kvp_answer *out)
{
	switch (id) {
	case KVP_T_STATS:
		return kvpool_stats(kp, &out->stats);
	case KVP_T_VERIFY:
		return kvpool_verify(kp, &out->verify);
	case KVP_T_PRESSURE:
		return kvpool_pressure(kp, &out->pressure);
	default:
		return kvpool_arena_info(kp, &out->arena);
	}
}

static PyObject *kvp_pool_answer(kvp_pool *self, enum kvp_tuple_id id)
{
	union kvp_answer out;
	int ret;

	if (!kvp_pool_open(self))
		return NULL;
	KVP_CALL_BEGIN(self);
	ret = kvp_answer_call(self->kp, id, &out);
	KVP_CALL_END(self, ret);
	if (ret < 0)
		return kvp_error(ret, NULL);
	return kvp_tuple_new(id, &out);
}

PyDoc_STRVAR(kvp_pool_stats_doc,
"stats($self, /)\n--\n\n"
"One consistent snapshot of the pool's counts, this client's (client_*)\n"
"and its tenant's (tenant_*) (kvpool_stats).\n\n"
"Returns Stats.");

static PyObject *kvp_pool_stats(kvp_pool *self, PyObject *unused)
{
	(void)unused;
	return kvp_pool_answer(self, KVP_T_STATS);
}

/* ---- batched ops ------------------------------------------------------- */

/* Refuse a batch the scratch (out_max_batch entries) cannot hold. */
static int kvp_batch_check(kvp_pool *self, Py_ssize_t n,
			   const struct kvp_arr *l, const char *lname)
{
	if (l && l->n != n) {
		PyErr_Format(PyExc_ValueError,
			     "%zd handles but %zd %s", n, l->n, lname);
		return -1;
	}
	if (n > self->info.out_max_batch) {
		PyErr_Format(PyExc_ValueError,
			     "%zd entries: more than the pool's max_batch, %u",
			     n, self->info.out_max_batch);
		return -1;
	}
	return 0;
}

/*
 * Pack handles @h and lengths @l (each + @add) into @e, as extend entries
 * (@ext) or len entries. Runs without the GIL. Returns -1, or the index of
 * the first negative length of a signed array, and then packs nothing the
 * kernel will see.
 */
static Py_ssize_t kvp_pack(union kvp_entry *e, const struct kvp_arr *h,
			   const struct kvp_arr *l, bool ext, uint32_t add)
{
	const struct kvpool_handle *hv = h->view.buf;
	const uint32_t *lv = l->view.buf;
	Py_ssize_t i;

	if (l->is_signed)
		for (i = 0; i < h->n; i++)
			if ((int32_t)lv[i] < 0)
				return i;
	for (i = 0; i < h->n; i++) {
		if (ext) {
			e[i].ext.handle = hv[i];
			e[i].ext.new_len = lv[i] + add;
			e[i].ext.out_nr_new = 0;
		} else {
			e[i].len.handle = hv[i];
			e[i].len.len = lv[i] + add;
			e[i].len.__reserved = 0;
		}
	}
	return -1;
}

static PyObject *kvp_negative(const char *lname, Py_ssize_t i)
{
	PyErr_Format(PyExc_ValueError, "%s[%zd] is negative", lname, i);
	return NULL;
}

/* Room for @need page ids in the scratch; called with the lock held. */
static bool kvp_pages_grow(kvp_pool *self, unsigned int need)
{
	uint32_t *p;

	if (need <= self->pages_cap)
		return true;
	p = PyMem_RawRealloc(self->pages, (size_t)need * sizeof(*p));
	if (!p)
		return false;
	self->pages = p;
	self->pages_cap = need;
	return true;
}

/*
 * The scratch's first @n page ids as a new array; called with the lock
 * held and the GIL taken back, and drops the lock.
 */
static PyObject *kvp_pages_array(kvp_pool *self, Py_ssize_t n)
{
	PyObject *r;
	void *data;

	r = kvp_array_new(4, n, &data);
	if (r)
		memcpy(data, self->pages, n * sizeof(uint32_t));
	pthread_mutex_unlock(&self->lock);
	return r;
}

PyDoc_STRVAR(kvp_pool_alloc_rows_doc,
"alloc_rows($self, /, n, out=None)\n--\n\n"
"Take n rows (1..info.max_batch) for new requests (kvpool_alloc_rows);\n"
"each is empty. out=None: a new uint64 array of their handles; else\n"
"out, a writable buffer of at least n 8-byte integers, gets them and n\n"
"is returned. All or nothing: NoSpace (.shortfall: rows missing) or\n"
"QuotaExceeded takes none. n above max_batch is a ValueError.");

static PyObject *kvp_pool_alloc_rows(kvp_pool *self, PyObject *args,
				     PyObject *kw)
{
	static char *kwlist[] = { "n", "out", NULL };
	struct kvpool_batch_result res;
	PyObject *outo = Py_None, *r = NULL;
	struct kvp_arr out = { .held = false };
	Py_ssize_t n;
	void *buf;
	int ret;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "n|O:alloc_rows", kwlist,
					 &n, &outo))
		return NULL;
	if (!kvp_pool_open(self))
		return NULL;
	if (n < 0) {
		PyErr_SetString(PyExc_ValueError, "n: negative");
		return NULL;
	}
	if (kvp_batch_check(self, n, NULL, NULL))
		return NULL;
	if (outo != Py_None) {
		if (kvp_arr_get(outo, "out", 8, true, &out))
			return NULL;
		if (out.n < n) {
			PyErr_Format(PyExc_ValueError,
				     "out: room for %zd handles, not %zd",
				     out.n, n);
			goto out;
		}
		buf = out.view.buf;
	} else {
		r = kvp_array_new(8, n, &buf);
		if (!r)
			return NULL;
	}
	KVP_CALL_BEGIN(self);
	ret = kvpool_alloc_rows(self->kp, buf, (unsigned int)n, &res);
	KVP_CALL_END(self, ret);
	if (ret < 0) {
		Py_CLEAR(r);
		kvp_error(ret, &res);
	} else if (!r) {
		r = PyLong_FromLong(ret);
	}
out:
	kvp_arr_put(&out);
	return r;
}

PyDoc_STRVAR(kvp_pool_alloc_row_doc,
"alloc_row($self, /)\n--\n\n"
"Take one row (kvpool_alloc_rows of 1) and return its handle.");

static PyObject *kvp_pool_alloc_row(kvp_pool *self, PyObject *unused)
{
	struct kvpool_batch_result res;
	struct kvpool_handle h;
	int ret;

	(void)unused;
	if (!kvp_pool_open(self))
		return NULL;
	KVP_CALL_BEGIN(self);
	ret = kvpool_alloc_rows(self->kp, &h, 1, &res);
	KVP_CALL_END(self, ret);
	if (ret < 0)
		return kvp_error(ret, &res);
	return PyLong_FromUnsignedLongLong(kvp_handle_int(h));
}

PyDoc_STRVAR(kvp_pool_extend_doc,
"extend($self, /, handles, new_lens, pages=None, nr_new=None)\n--\n\n"
"Grow the allocated length of each row to its new_len with one\n"
"KVPOOL_EXTEND (kvpool_extend): a decode batch. handles: 8-byte\n"
"integers; new_lens: 4-byte integers, one per handle (negative ones\n"
"are a ValueError). A row's last partial page fills first; the new page\n"
"ids come in entry order, each row's in position order.\n\n"
"pages=None: they are returned as a new uint32 array. pages, a writable\n"
"buffer of 4-byte integers: they are written there and their count is\n"
"returned (Error ENOBUFS if it is too small; nothing is taken).\n"
"nr_new, a writable buffer of 4-byte integers, one per handle: gets\n"
"each row's count of new pages.\n\n"
"All or nothing: NoSpace (.shortfall: pages missing), QuotaExceeded or\n"
"Error (.index: the entry refused) takes nothing. More entries than\n"
"info.max_batch is a ValueError.");

static PyObject *kvp_pool_extend(kvp_pool *self, PyObject *const *args,
				 Py_ssize_t nargs, PyObject *kwnames)
{
	static const char *const names[] = { "handles", "new_lens", "pages",
					     "nr_new" };
	PyObject *ho, *lo, *po, *no, *r = NULL, *v[4];
	struct kvp_arr h, l = { .held = false }, p = { .held = false };
	struct kvp_arr nr = { .held = false };
	struct kvpool_batch_result res;
	unsigned int cap;
	uint32_t *out;
	Py_ssize_t bad = -1, i;
	bool grow;
	int ret;

	if (kvp_fast_args("extend", args, nargs, kwnames, names, 4, 2, v))
		return NULL;
	ho = v[0];
	lo = v[1];
	po = v[2] ? v[2] : Py_None;
	no = v[3] ? v[3] : Py_None;
	if (!kvp_pool_open(self))
		return NULL;
	if (kvp_arr_get(ho, "handles", 8, false, &h))
		return NULL;
	if (kvp_arr_get(lo, "new_lens", 4, false, &l) ||
	    kvp_batch_check(self, h.n, &l, "new_lens"))
		goto out;
	if (po != Py_None && kvp_arr_get(po, "pages", 4, true, &p))
		goto out;
	if (no != Py_None && (kvp_arr_get(no, "nr_new", 4, true, &nr) ||
			      kvp_batch_check(self, h.n, &nr, "nr_new")))
		goto out;
	/* A new array, under the lock, must not import numpy there. */
	if (po == Py_None && !kvp_array_ready())
		goto out;

	KVP_CALL_BEGIN(self);
	pthread_mutex_lock(&self->lock);
	bad = kvp_pack(self->ents, &h, &l, true, 0);
	for (ret = 0, grow = true; bad < 0 && grow;) {
		out = p.held ? p.view.buf : self->pages;
		cap = p.held ? (unsigned int)p.n : self->pages_cap;
		ret = kvpool_extend(self->kp, &self->ents->ext,
				    (unsigned int)h.n, out, cap, &res);
		/* Too little room took nothing: grow the scratch, again. */
		grow = ret == -ENOBUFS && !p.held &&
		       kvp_pages_grow(self, res.nr_pages);
	}
	if (bad < 0 && ret >= 0 && nr.held)
		for (i = 0; i < h.n; i++)
			((uint32_t *)nr.view.buf)[i] =
				self->ents[i].ext.out_nr_new;
	if (bad >= 0 || ret < 0 || p.held)
		pthread_mutex_unlock(&self->lock);
	KVP_CALL_END(self, ret);

	if (bad >= 0)
		kvp_negative("new_lens", bad);
	else if (ret < 0)
		kvp_error(ret, &res);
	else if (p.held)
		r = PyLong_FromLong(ret);
	else
		r = kvp_pages_array(self, ret);
out:
	kvp_arr_put(&nr);
	kvp_arr_put(&p);
	kvp_arr_put(&l);
	kvp_arr_put(&h);
	return r;
}

typedef int (*kvp_len_fn)(struct kvpool *, const struct kvpool_len_entry *,
			  unsigned int, struct kvpool_batch_result *);

/*
 * An op on (handle, len) entries: commit, donate, swa_free. Returns None
 * (@give_none) or the pages the op freed or moved.
 */
static PyObject *kvp_pool_len_op(kvp_pool *self, PyObject *const *args,
				 Py_ssize_t nargs, PyObject *kwnames,
				 const char *fname, kvp_len_fn fn,
				 bool give_none)
{
	static const char *const names[] = { "handles", "lens" };
	struct kvp_arr h, l = { .held = false };
	struct kvpool_batch_result res;
	PyObject *v[2], *r = NULL;
	Py_ssize_t bad = -1;
	int ret = 0;

	if (kvp_fast_args(fname, args, nargs, kwnames, names, 2, 2, v))
		return NULL;
	if (!kvp_pool_open(self))
		return NULL;
	if (kvp_arr_get(v[0], "handles", 8, false, &h))
		return NULL;
	if (kvp_arr_get(v[1], "lens", 4, false, &l) ||
	    kvp_batch_check(self, h.n, &l, "lens"))
		goto out;
	KVP_CALL_BEGIN(self);
	pthread_mutex_lock(&self->lock);
	bad = kvp_pack(self->ents, &h, &l, false, 0);
	if (bad < 0)
		ret = fn(self->kp, &self->ents->len, (unsigned int)h.n, &res);
	pthread_mutex_unlock(&self->lock);
	KVP_CALL_END(self, ret);
	if (bad >= 0)
		kvp_negative("lens", bad);
	else if (ret < 0)
		kvp_error(ret, &res);
	else if (give_none)
		r = Py_NewRef(Py_None);
	else
		r = PyLong_FromLong(res.nr_pages);
out:
	kvp_arr_put(&l);
	kvp_arr_put(&h);
	return r;
}

PyDoc_STRVAR(kvp_pool_commit_doc,
"commit($self, /, handles, lens)\n--\n\n"
"Move each row's committed length forward to its len (tokens whose KV\n"
"was computed; never past the allocated length) with one KVPOOL_COMMIT\n"
"(kvpool_commit). Arrays as for extend(). All or nothing.");

static PyObject *kvp_pool_commit(kvp_pool *self, PyObject *const *args,
			       Py_ssize_t nargs, PyObject *kwnames)
{
	return kvp_pool_len_op(self, args, nargs, kwnames, "commit",
			       kvpool_commit, true);
}

PyDoc_STRVAR(kvp_pool_donate_doc,
"donate($self, /, handles, lens)\n--\n\n"
"Move each row's full pages in [protected, len) into this client's\n"
"prefix cache (kvpool_donate); the row keeps mapping them, borrowed.\n"
"Returns the pages moved. All or nothing.");

static PyObject *kvp_pool_donate(kvp_pool *self, PyObject *const *args,
			       Py_ssize_t nargs, PyObject *kwnames)
{
	return kvp_pool_len_op(self, args, nargs, kwnames, "donate",
			       kvpool_donate, false);
}

PyDoc_STRVAR(kvp_pool_swa_free_doc,
"swa_free($self, /, handles, lens)\n--\n\n"
"Sliding-window attention: free each row's pages wholly below its len,\n"
"the window's left edge (kvpool_swa_free). Returns the pages freed.\n"
"All or nothing.");

static PyObject *kvp_pool_swa_free(kvp_pool *self, PyObject *const *args,
			       Py_ssize_t nargs, PyObject *kwnames)
{
	return kvp_pool_len_op(self, args, nargs, kwnames, "swa_free",
			       kvpool_swa_free, false);
}

typedef int (*kvp_handles_fn)(struct kvpool *, const struct kvpool_handle *,
			      unsigned int, struct kvpool_batch_result *);

/* An op on an array of handles or of page ids, passed as it is. */
static PyObject *kvp_pool_array_op(kvp_pool *self, PyObject *o,
				   const char *what, int width,
				   kvp_handles_fn fn)
{
	struct kvpool_batch_result res;
	struct kvp_arr a;
	int ret;

	if (!kvp_pool_open(self))
		return NULL;
	if (kvp_arr_get(o, what, width, false, &a))
		return NULL;
	if (kvp_batch_check(self, a.n, NULL, NULL)) {
		kvp_arr_put(&a);
		return NULL;
	}
	KVP_CALL_BEGIN(self);
	ret = fn(self->kp, a.view.buf, (unsigned int)a.n, &res);
	KVP_CALL_END(self, ret);
	kvp_arr_put(&a);
	if (ret < 0)
		return kvp_error(ret, &res);
	return PyLong_FromLong(res.nr_pages);
}

PyDoc_STRVAR(kvp_pool_trim_doc,
"trim($self, handles, /)\n--\n\n"
"Free each row's speculative tail: every page from ceil(committed /\n"
"page_tokens) on (kvpool_trim). Returns the pages freed. All or\n"
"nothing.");

static PyObject *kvp_pool_trim(kvp_pool *self, PyObject *arg)
{
	return kvp_pool_array_op(self, arg, "handles", 8, kvpool_trim);
}

PyDoc_STRVAR(kvp_pool_release_doc,
"release($self, /, handles, donate=False)\n--\n\n"
"Release rows: their pages and the rows go back to the pool and the\n"
"handles are dead (kvpool_release). donate=True: each row's full\n"
"committed pages go to the prefix cache first\n"
"(kvpool_release_donate). Returns the pages freed (not those donated).\n"
"All or nothing.");

static PyObject *kvp_pool_release(kvp_pool *self, PyObject *const *args,
				  Py_ssize_t nargs, PyObject *kwnames)
{
	static const char *const names[] = { "handles", "donate" };
	PyObject *v[2];
	int donate = 0;

	if (kvp_fast_args("release", args, nargs, kwnames, names, 2, 1, v))
		return NULL;
	if (v[1] && (donate = PyObject_IsTrue(v[1])) < 0)
		return NULL;
	return kvp_pool_array_op(self, v[0], "handles", 8,
				 donate ? kvpool_release_donate :
				 kvpool_release);
}

/* kvpool_cache_evict() in the shape of the handle ops. */
static int kvp_cache_evict(struct kvpool *kp, const struct kvpool_handle *p,
			   unsigned int count, struct kvpool_batch_result *res)
{
	return kvpool_cache_evict(kp, (const uint32_t *)p, count, res);
}

PyDoc_STRVAR(kvp_pool_cache_evict_doc,
"cache_evict($self, pages, /)\n--\n\n"
"Free pages (4-byte integers) of this client's prefix cache\n"
"(kvpool_cache_evict). Returns the pages freed. All or nothing: EBUSY\n"
"(pinned), ENOENT (not cached) or EINVAL (twice), .index the page.");

static PyObject *kvp_pool_cache_evict(kvp_pool *self, PyObject *arg)
{
	return kvp_pool_array_op(self, arg, "pages", 4, kvp_cache_evict);
}

PyDoc_STRVAR(kvp_pool_attach_prefix_doc,
"attach_prefix($self, handle, pages, /)\n--\n\n"
"Map pages (4-byte integers) of this client's prefix cache, in order,\n"
"at the start of the empty row handle (kvpool_attach_prefix); its\n"
"lengths become len(pages) * page_tokens.");

static PyObject *kvp_pool_attach_prefix(kvp_pool *self, PyObject *args)
{
	struct kvpool_handle h;
	struct kvp_arr p;
	PyObject *po;
	int ret;

	if (!PyArg_ParseTuple(args, "O&O:attach_prefix", kvp_handle_conv, &h,
			      &po))
		return NULL;
	if (!kvp_pool_open(self) || kvp_arr_get(po, "pages", 4, false, &p))
		return NULL;
	KVP_CALL_BEGIN(self);
	ret = kvpool_attach_prefix(self->kp, h, p.view.buf,
				   (unsigned int)p.n);
	KVP_CALL_END(self, ret);
	kvp_arr_put(&p);
	if (ret < 0)
		return kvp_error(ret, NULL);
	Py_RETURN_NONE;
}

/* ---- slots, queries, export -------------------------------------------- */

PyDoc_STRVAR(kvp_pool_to_slot_doc,
"to_slot($self, handle, session_id, /)\n--\n\n"
"Park the held row in this client's session slot session_id (a u64 of\n"
"the caller's choosing) with its pages and lengths (kvpool_to_slot);\n"
"handle is dead afterwards. Returns the pages the slot holds. EEXIST:\n"
"the slot exists.");

static PyObject *kvp_pool_to_slot(kvp_pool *self, PyObject *args)
{
	struct kvpool_handle h;
	uint64_t sid;
	int ret;

	if (!PyArg_ParseTuple(args, "O&O&:to_slot", kvp_handle_conv, &h,
			      kvp_u64_conv, &sid) || !kvp_pool_open(self))
		return NULL;
	KVP_CALL_BEGIN(self);
	ret = kvpool_to_slot(self->kp, h, sid);
	KVP_CALL_END(self, ret);
	if (ret < 0)
		return kvp_error(ret, NULL);
	return PyLong_FromLong(ret);
}

PyDoc_STRVAR(kvp_pool_from_slot_doc,
"from_slot($self, session_id, /)\n--\n\n"
"Give the row parked in slot session_id back to a new request, as it\n"
"was (kvpool_from_slot): its new handle (same req_pool_idx, next\n"
"generation) and its pages. The slot is gone afterwards.\n\n"
"Returns (handle, nr_pages).");

static PyObject *kvp_pool_from_slot(kvp_pool *self, PyObject *arg)
{
	struct kvpool_handle h;
	uint64_t sid;
	int ret;

	if (!kvp_u64_conv(arg, &sid) || !kvp_pool_open(self))
		return NULL;
	KVP_CALL_BEGIN(self);
	ret = kvpool_from_slot(self->kp, sid, &h);
	KVP_CALL_END(self, ret);
	if (ret < 0)
		return kvp_error(ret, NULL);
	return Py_BuildValue("(Ki)", (unsigned long long)kvp_handle_int(h),
			     ret);
}

PyDoc_STRVAR(kvp_pool_slot_release_doc,
"slot_release($self, session_id, /)\n--\n\n"
"Free slot session_id, its row and pages (kvpool_slot_release).\n"
"Returns the pages freed.");

static PyObject *kvp_pool_slot_release(kvp_pool *self, PyObject *arg)
{
	uint64_t sid;
	int ret;

	if (!kvp_u64_conv(arg, &sid) || !kvp_pool_open(self))
		return NULL;
	KVP_CALL_BEGIN(self);
	ret = kvpool_slot_release(self->kp, sid);
	KVP_CALL_END(self, ret);
	if (ret < 0)
		return kvp_error(ret, NULL);
	return PyLong_FromLong(ret);
}

/* kvpool_row_query() or, for @sid not NULL, kvpool_slot_query(). */
static int kvp_query(struct kvpool *kp, const struct kvpool_handle *h,
		     const uint64_t *sid, uint32_t *pages, unsigned int cap,
		     struct kvpool_row_query *q)
{
	if (sid)
		return kvpool_slot_query(kp, *sid, pages, cap, q);
	return kvpool_row_query(kp, *h, pages, cap, q);
}

static PyObject *kvp_pool_query(kvp_pool *self, const struct kvpool_handle *h,
				const uint64_t *sid, PyObject *po)
{
	struct kvp_arr p = { .held = false };
	struct kvpool_row_query q;
	PyObject *r, *pages;
	bool again = true;
	int ret = 0;

	if (!kvp_pool_open(self))
		return NULL;
	if (po != Py_None) {
		if (kvp_arr_get(po, "pages", 4, true, &p))
			return NULL;
		KVP_CALL_BEGIN(self);
		ret = kvp_query(self->kp, h, sid, p.view.buf,
				(unsigned int)p.n, &q);
		KVP_CALL_END(self, ret);
		kvp_arr_put(&p);
		if (ret < 0)
			return kvp_error(ret, NULL);
		return kvp_tuple_new(KVP_T_ROWINFO, &q);
	}
	if (!kvp_array_ready())
		return NULL;
	KVP_CALL_BEGIN(self);
	pthread_mutex_lock(&self->lock);
	while (again) {
		ret = kvp_query(self->kp, h, sid, self->pages,
				self->pages_cap, &q);
		/* The list was cut short: room for all of it, and again. */
		again = ret > 0 && (unsigned int)ret > self->pages_cap &&
			kvp_pages_grow(self, ret);
	}
	if (ret < 0 || (unsigned int)ret > self->pages_cap)
		pthread_mutex_unlock(&self->lock);
	KVP_CALL_END(self, ret);
	if (ret < 0)
		return kvp_error(ret, NULL);
	if ((unsigned int)ret > self->pages_cap)
		return PyErr_NoMemory();
	pages = kvp_pages_array(self, ret);
	if (!pages)
		return NULL;
	r = kvp_tuple_new(KVP_T_ROWINFO, &q);
	if (!r) {
		Py_DECREF(pages);
		return NULL;
	}
	/* The field kvp_tuple_new() set to None. */
	Py_DECREF(PyStructSequence_GetItem(r, 7));
	PyStructSequence_SetItem(r, 7, pages);
	return r;
}

PyDoc_STRVAR(kvp_pool_row_query_doc,
"row_query($self, /, handle, pages=None)\n--\n\n"
"The held row's state and lengths (kvpool_row_query). pages=None:\n"
"RowInfo.pages is a new uint32 array of its whole page list (freed\n"
"positions are PAGE_NONE); pages, a writable buffer of 4-byte\n"
"integers: its first len(pages) ids go there (RowInfo.nr_pages is the\n"
"full list's length) and RowInfo.pages is None.\n\n"
"Returns RowInfo.");

static PyObject *kvp_pool_row_query(kvp_pool *self, PyObject *args,
				    PyObject *kw)
{
	static char *kwlist[] = { "handle", "pages", NULL };
	struct kvpool_handle h;
	PyObject *po = Py_None;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "O&|O:row_query", kwlist,
					 kvp_handle_conv, &h, &po))
		return NULL;
	return kvp_pool_query(self, &h, NULL, po);
}

PyDoc_STRVAR(kvp_pool_slot_query_doc,
"slot_query($self, /, session_id, pages=None)\n--\n\n"
"row_query() for the row parked in slot session_id\n"
"(kvpool_slot_query); RowInfo.req_pool_idx names the row.\n\n"
"Returns RowInfo.");

static PyObject *kvp_pool_slot_query(kvp_pool *self, PyObject *args,
				     PyObject *kw)
{
	static char *kwlist[] = { "session_id", "pages", NULL };
	PyObject *po = Py_None;
	uint64_t sid;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "O&|O:slot_query", kwlist,
					 kvp_u64_conv, &sid, &po))
		return NULL;
	return kvp_pool_query(self, NULL, &sid, po);
}

PyDoc_STRVAR(kvp_pool_verify_doc,
"verify($self, /)\n--\n\n"
"Check every invariant of the whole pool (kvpool_verify; root, a\n"
"debugging aid). Verify.violations is 0 if the pool is sound.\n\n"
"Returns Verify.");

static PyObject *kvp_pool_verify(kvp_pool *self, PyObject *unused)
{
	(void)unused;
	return kvp_pool_answer(self, KVP_T_VERIFY);
}

/* kvpool_export() or, for @sid not NULL, kvpool_export_slot(). */
static PyObject *kvp_pool_export_fd(kvp_pool *self,
				    const struct kvpool_handle *h,
				    const uint64_t *sid)
{
	int ret;

	if (!kvp_pool_open(self))
		return NULL;
	KVP_CALL_BEGIN(self);
	ret = sid ? kvpool_export_slot(self->kp, *sid) :
		    kvpool_export(self->kp, *h);
	KVP_CALL_END(self, ret);
	if (ret < 0)
		return kvp_error(ret, NULL);
	return PyLong_FromLong(ret);
}

PyDoc_STRVAR(kvp_pool_export_doc,
"export($self, handle, /)\n--\n\n"
"Turn the held row into a new close-on-exec file descriptor\n"
"(kvpool_export), for import_row() in another client, e.g. over\n"
"send_fd(); handle is dead afterwards. The caller closes the fd.");

static PyObject *kvp_pool_export(kvp_pool *self, PyObject *arg)
{
	struct kvpool_handle h;

	if (!kvp_handle_conv(arg, &h))
		return NULL;
	return kvp_pool_export_fd(self, &h, NULL);
}

PyDoc_STRVAR(kvp_pool_export_slot_doc,
"export_slot($self, session_id, /)\n--\n\n"
"export() of the row parked in slot session_id (kvpool_export_slot);\n"
"the slot goes.");

static PyObject *kvp_pool_export_slot(kvp_pool *self, PyObject *arg)
{
	uint64_t sid;

	if (!kvp_u64_conv(arg, &sid))
		return NULL;
	return kvp_pool_export_fd(self, NULL, &sid);
}

PyDoc_STRVAR(kvp_pool_import_row_doc,
"import_row($self, fd, /)\n--\n\n"
"Take the row exported as fd (an int or an object with fileno()) into\n"
"this client (kvpool_import): its new handle and the pages it owns. fd\n"
"stays open. EALREADY: imported before; EXDEV: another pool's.\n\n"
"Returns (handle, nr_pages).");

static PyObject *kvp_pool_import_row(kvp_pool *self, PyObject *arg)
{
	struct kvpool_handle h;
	int fd, ret;

	fd = PyObject_AsFileDescriptor(arg);
	if (fd < 0 || !kvp_pool_open(self))
		return NULL;
	KVP_CALL_BEGIN(self);
	ret = kvpool_import(self->kp, fd, &h);
	KVP_CALL_END(self, ret);
	if (ret < 0)
		return kvp_error(ret, NULL);
	return Py_BuildValue("(Ki)", (unsigned long long)kvp_handle_int(h),
			     ret);
}

/* ---- pressure ---------------------------------------------------------- */

PyDoc_STRVAR(kvp_pool_pressure_doc,
"pressure($self, /)\n--\n\n"
"How many prefix-cache pages the kernel asks this client to evict now,\n"
"and why (kvpool_pressure). Pressure.asked (= ask_pages) 0: none.\n\n"
"Returns Pressure.");

static PyObject *kvp_pool_pressure(kvp_pool *self, PyObject *unused)
{
	(void)unused;
	return kvp_pool_answer(self, KVP_T_PRESSURE);
}

static double kvp_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* One poll at most this long, so that signals are looked at. */
#define KVP_WAIT_SLICE_MS	1000

PyDoc_STRVAR(kvp_pool_wait_pressure_doc,
"wait_pressure($self, /, timeout=None)\n--\n\n"
"Wait up to timeout seconds (a float; None: for ever; 0: do not wait)\n"
"until the kernel asks this client to give pages back\n"
"(kvpool_wait_pressure, poll for POLLPRI). True if pages are asked\n"
"(pressure() says how many), False on timeout. The GIL is released;\n"
"signals are handled while waiting (KeyboardInterrupt comes through).\n\n"
"Returns bool.");

static PyObject *kvp_pool_wait_pressure(kvp_pool *self, PyObject *args,
					PyObject *kw)
{
	static char *kwlist[] = { "timeout", NULL };
	PyObject *to = Py_None;
	double deadline = 0, left;
	bool forever;
	int ret, ms;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "|O:wait_pressure", kwlist,
					 &to) || !kvp_pool_open(self))
		return NULL;
	forever = to == Py_None;
	if (!forever) {
		left = PyFloat_AsDouble(to);
		if (left == -1 && PyErr_Occurred())
			return NULL;
		if (isnan(left) || left < 0) {
			PyErr_SetString(PyExc_ValueError,
					"timeout: must be >= 0 or None");
			return NULL;
		}
		deadline = kvp_now() + left;
	}
	for (;;) {
		ms = KVP_WAIT_SLICE_MS;
		if (!forever) {
			left = deadline - kvp_now();
			if (left < 0)
				left = 0;
			if (left * 1000 < ms)
				ms = (int)ceil(left * 1000);
		}
		KVP_CALL_BEGIN(self);
		ret = kvpool_wait_pressure(self->kp, ms);
		KVP_CALL_END(self, ret);
		if (ret > 0)
			Py_RETURN_TRUE;
		if (ret < 0 && ret != -EINTR)
			return kvp_error(ret, NULL);
		if (PyErr_CheckSignals())
			return NULL;
		if (!forever && ms < KVP_WAIT_SLICE_MS && ret == 0)
			Py_RETURN_FALSE;
		if (!forever && kvp_now() >= deadline)
			Py_RETURN_FALSE;
	}
}

/* ---- arena ------------------------------------------------------------- */

PyDoc_STRVAR(kvp_pool_arena_info_doc,
"arena_info($self, /)\n--\n\n"
"The pool's arena (kvpool_arena_info): kind ARENA_NONE if it has none.\n\n"
"Returns ArenaInfo.");

static PyObject *kvp_pool_arena_info(kvp_pool *self, PyObject *unused)
{
	(void)unused;
	return kvp_pool_answer(self, KVP_T_ARENAINFO);
}

PyDoc_STRVAR(kvp_pool_map_arena_doc,
"map_arena($self, /)\n--\n\n"
"Map the pool's whole arena into this process (kvpool_arena_map): host\n"
"memory, or for a CUDA arena the GPU's address space. The Arena stays\n"
"valid after this Pool is closed. ENODATA: no arena; the error's\n"
"strerror is kvpool_arena_error()'s.\n\n"
"Returns Arena.");

static PyObject *kvp_pool_map_arena(kvp_pool *self, PyObject *unused)
{
	struct kvpool_arena_view v;
	PyObject *r;
	int ret;

	(void)unused;
	if (!kvp_pool_open(self))
		return NULL;
	KVP_CALL_BEGIN(self);
	ret = kvpool_arena_map(self->kp, &v);
	KVP_CALL_END(self, ret);
	if (ret < 0)
		return kvp_arena_error(ret, NULL);
	r = kvp_arena_new(&v);
	if (!r)
		kvpool_arena_unmap(&v);
	return r;
}

/* ---- the benchmark's C loop -------------------------------------------- */

static int64_t kvp_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

PyObject *kvp_c_decode_steps(PyObject *mod, PyObject *args)
{
	struct kvp_arr h, l = { .held = false };
	struct kvpool_batch_result res;
	PyObject *po, *ho, *lo, *r = NULL;
	int64_t t0 = 0, t1 = 0;
	Py_ssize_t iters, it, i, bad = -1;
	kvp_pool *self;
	uint32_t *lv;
	int ret = 0;

	(void)mod;
	if (!PyArg_ParseTuple(args, "O!OOn:_c_decode_steps", &kvp_pool_type,
			      &po, &ho, &lo, &iters))
		return NULL;
	self = (kvp_pool *)po;
	if (!kvp_pool_open(self) ||
	    kvp_arr_get(ho, "handles", 8, false, &h))
		return NULL;
	if (kvp_arr_get(lo, "lens", 4, true, &l) ||
	    kvp_batch_check(self, h.n, &l, "lens"))
		goto out;
	lv = l.view.buf;
	/* A decode step gives each row one page at most. */
	KVP_CALL_BEGIN(self);
	pthread_mutex_lock(&self->lock);
	t0 = kvp_ns();
	for (it = 0; it < iters && ret >= 0 && bad < 0; it++) {
		bad = kvp_pack(self->ents, &h, &l, true, 1);
		if (bad >= 0)
			break;
		ret = kvpool_extend(self->kp, &self->ents->ext,
				    (unsigned int)h.n, self->pages,
				    self->pages_cap, &res);
		if (ret < 0)
			break;
		kvp_pack(self->ents, &h, &l, false, 1);
		ret = kvpool_commit(self->kp, &self->ents->len,
				    (unsigned int)h.n, &res);
		if (ret < 0)
			break;
		for (i = 0; i < h.n; i++)
			lv[i]++;
	}
	t1 = kvp_ns();
	pthread_mutex_unlock(&self->lock);
	KVP_CALL_END(self, ret);
	if (bad >= 0)
		kvp_negative("lens", bad);
	else if (ret < 0)
		kvp_error(ret, &res);
	else
		r = PyLong_FromLongLong(t1 - t0);
out:
	kvp_arr_put(&l);
	kvp_arr_put(&h);
	return r;
}

/* ---- the type ---------------------------------------------------------- */

static PyObject *kvp_pool_get_info(kvp_pool *self, void *unused)
{
	(void)unused;
	if (!kvp_pool_open(self))
		return NULL;
	return Py_NewRef(self->info_obj);
}

static PyObject *kvp_pool_get_closed(kvp_pool *self, void *unused)
{
	(void)unused;
	return PyBool_FromLong(!self->kp);
}

static PyObject *kvp_pool_repr(kvp_pool *self)
{
	if (!self->kp)
		return PyUnicode_FromString("<kvpool.Pool closed>");
	return PyUnicode_FromFormat("<kvpool.Pool /dev/kvpool%u fd=%d client=%u>",
				    self->info.out_pool_id,
				    kvpool_fd(self->kp),
				    self->info.out_client_id);
}

#define KVP_KW		(METH_VARARGS | METH_KEYWORDS)
#define KVP_CLASS	(METH_O | METH_CLASS)
/* The hot path's methods: no argument tuple, no format string parsed. */
#define KVP_FAST	(METH_FASTCALL | METH_KEYWORDS)

/* Method @n: kvp_pool_@n() and kvp_pool_@n_doc. */
#define KVP_M(n, flags) \
	{ #n, KVP_METH(kvp_pool_##n), flags, kvp_pool_##n##_doc }

static PyMethodDef kvp_pool_methods[] = {
	KVP_M(from_fd, KVP_CLASS),
	KVP_M(close, METH_NOARGS),
	{ "__enter__", KVP_METH(kvp_pool_enter), METH_NOARGS,
	  kvp_pool_enter_doc },
	{ "__exit__", KVP_METH(kvp_pool_exit), METH_VARARGS,
	  kvp_pool_exit_doc },
	KVP_M(fileno, METH_NOARGS),
	KVP_M(stats, METH_NOARGS),
	KVP_M(alloc_rows, KVP_KW),
	KVP_M(alloc_row, METH_NOARGS),
	KVP_M(extend, KVP_FAST),
	KVP_M(commit, KVP_FAST),
	KVP_M(trim, METH_O),
	KVP_M(release, KVP_FAST),
	KVP_M(donate, KVP_FAST),
	KVP_M(swa_free, KVP_FAST),
	KVP_M(attach_prefix, METH_VARARGS),
	KVP_M(cache_evict, METH_O),
	KVP_M(to_slot, METH_VARARGS),
	KVP_M(from_slot, METH_O),
	KVP_M(slot_release, METH_O),
	KVP_M(row_query, KVP_KW),
	KVP_M(slot_query, KVP_KW),
	KVP_M(verify, METH_NOARGS),
	KVP_M(export, METH_O),
	KVP_M(export_slot, METH_O),
	KVP_M(import_row, METH_O),
	KVP_M(pressure, METH_NOARGS),
	KVP_M(wait_pressure, KVP_KW),
	KVP_M(arena_info, METH_NOARGS),
	KVP_M(map_arena, METH_NOARGS),
	{ NULL, NULL, 0, NULL },
};

static PyGetSetDef kvp_pool_getset[] = {
	{ "info", (getter)kvp_pool_get_info, NULL,
	  "Info: the pool's geometry and features, read at open "
	  "(kvpool_info).", NULL },
	{ "closed", (getter)kvp_pool_get_closed, NULL,
	  "True once close() was called.", NULL },
	{ NULL, NULL, NULL, NULL, NULL },
};

PyDoc_STRVAR(kvp_pool_doc,
"Pool(path='/dev/kvpool0')\n--\n\n"
"One client of a kvpool device: one open file, one struct kvpool\n"
"(kvpool_open). A context manager; close() or garbage collection\n"
"closes it, and the kernel frees what it held when the last reference\n"
"to the file goes. May be used from several threads at once: every\n"
"call into the kernel releases the GIL.\n\n"
"Batched methods take arrays through the buffer protocol, zero copy,\n"
"1-D and C contiguous: handles of 8-byte integers, lengths and page\n"
"ids of 4-byte integers. An object without the buffer protocol that\n"
"speaks DLPack (a torch CPU tensor) is taken through\n"
"numpy.from_dlpack(), still without a copy, as an input only (numpy\n"
"makes such arrays readonly). Not a buffer, a readonly\n"
"one where one is written or wrong item sizes are a TypeError; more\n"
"than info.max_batch entries, arrays of different lengths or negative\n"
"lengths a ValueError, before anything reaches the kernel. libkvpool's\n"
"failures raise kvpool.Error (NoSpace, QuotaExceeded).");

PyTypeObject kvp_pool_type = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "kvpool.Pool",
	.tp_basicsize = sizeof(kvp_pool),
	.tp_dealloc = (destructor)kvp_pool_dealloc,
	.tp_repr = (reprfunc)kvp_pool_repr,
	.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
	.tp_doc = kvp_pool_doc,
	.tp_weaklistoffset = offsetof(kvp_pool, weakrefs),
	.tp_methods = kvp_pool_methods,
	.tp_getset = kvp_pool_getset,
	.tp_init = (initproc)kvp_pool_init,
	.tp_new = kvp_pool_new,
};
