// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * _kvpool: the module, its errors and named tuples, the module functions
 * (fd passing, administration through the control device) and the
 * argument helpers the Pool and Arena types share.
 *
 * Copyright (C) 2026 The kvpool authors
 */
#include "_kvpool.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>

#ifndef KVPOOL_PY_VERSION
#define KVPOOL_PY_VERSION	"0"
#endif

static PyObject *kvp_exc_error;
static PyObject *kvp_exc_nospace;
static PyObject *kvp_exc_quota;

/* ---- named tuples ------------------------------------------------------ */

/*
 * Each field of a named tuple is read from its struct by offset and size,
 * so one table gives both the type's fields and how to fill them: size 0
 * is a NUL-terminated char array, KVP_NOSRC a field not in the struct.
 */
#define KVP_NOSRC	((size_t)-1)

struct kvp_field {
	const char *name;
	const char *doc;
	size_t off;
	size_t size;
};

#define KVP_OUT(s, f, d) \
	{ #f, d, offsetof(struct s, out_##f), sizeof(((struct s *)0)->out_##f) }
#define KVP_FLD(s, f, d) \
	{ #f, d, offsetof(struct s, f), sizeof(((struct s *)0)->f) }

static const struct kvp_field kvp_info_fields[] = {
	KVP_OUT(kvpool_info, abi_version, "KVPOOL_ABI_VERSION of the module"),
	KVP_OUT(kvpool_info, pool_id, "N of /dev/kvpoolN"),
	KVP_OUT(kvpool_info, features, "FEAT_* bits the module supports"),
	KVP_OUT(kvpool_info, nr_pages, "pages in the pool, reserved included"),
	KVP_OUT(kvpool_info, page_tokens, "tokens per page"),
	KVP_OUT(kvpool_info, nr_rows, "rows in the pool, reserved included"),
	KVP_OUT(kvpool_info, row_tokens, "the longest a row may grow"),
	KVP_OUT(kvpool_info, create_flags, "CREATE_* flags of the pool"),
	KVP_OUT(kvpool_info, max_batch, "the most entries of one batched op"),
	KVP_OUT(kvpool_info, client_id, "this client's id (fdinfo)"),
};

static const struct kvp_field kvp_stats_fields[] = {
	KVP_OUT(kvpool_stats, free_pages, "free pages"),
	KVP_OUT(kvpool_stats, row_pages, "pages held by rows"),
	KVP_OUT(kvpool_stats, slot_pages, "pages held by session slots"),
	KVP_OUT(kvpool_stats, cache_evictable, "unpinned prefix-cache pages"),
	KVP_OUT(kvpool_stats, cache_pinned, "pinned prefix-cache pages"),
	KVP_OUT(kvpool_stats, reserved_pages, "reserved pages"),
	KVP_OUT(kvpool_stats, free_rows, "free rows"),
	KVP_OUT(kvpool_stats, held_rows, "rows held by requests"),
	KVP_OUT(kvpool_stats, slot_rows, "rows parked in slots"),
	KVP_OUT(kvpool_stats, reserved_rows, "reserved rows"),
	KVP_OUT(kvpool_stats, nr_clients, "open clients"),
	KVP_OUT(kvpool_stats, client_rows, "this client's rows"),
	KVP_OUT(kvpool_stats, client_slots, "this client's slots"),
	KVP_OUT(kvpool_stats, client_pages, "this client's pages"),
	KVP_OUT(kvpool_stats, client_cache_pages, "this client's cache pages"),
	KVP_OUT(kvpool_stats, export_rows, "exported rows not yet imported"),
	KVP_OUT(kvpool_stats, export_pages, "their pages"),
	KVP_OUT(kvpool_stats, tenant_id, "this client's tenant"),
	KVP_OUT(kvpool_stats, tenant_pages, "its tenant's pages"),
	KVP_OUT(kvpool_stats, tenant_rows, "its tenant's rows"),
	KVP_OUT(kvpool_stats, tenant_max_pages, "its tenant's page limit"),
	KVP_OUT(kvpool_stats, tenant_min_pages, "its tenant's guarantee"),
	KVP_OUT(kvpool_stats, tenant_max_rows, "its tenant's row limit"),
	KVP_OUT(kvpool_stats, quarantine_pages, "pages of dead clients held"),
};

static const struct kvp_field kvp_rowinfo_fields[] = {
	KVP_OUT(kvpool_row_query, state, "ROW_HELD or ROW_SLOT"),
	KVP_OUT(kvpool_row_query, nr_pages, "length of the full page list"),
	KVP_OUT(kvpool_row_query, req_pool_idx, "the row"),
	KVP_OUT(kvpool_row_query, allocated_len, "allocated tokens"),
	KVP_OUT(kvpool_row_query, committed_len, "committed tokens"),
	KVP_OUT(kvpool_row_query, protected_len, "tokens in the prefix cache"),
	KVP_OUT(kvpool_row_query, swa_evicted_len, "tokens freed by swa_free"),
	{ "pages", "the page ids (an array), or None", KVP_NOSRC, 0 },
};

static const struct kvp_field kvp_pressure_fields[] = {
	KVP_OUT(kvpool_pressure, ask_pages, "cache pages to evict now"),
	KVP_OUT(kvpool_pressure, reasons, "PRESSURE_* bits"),
	KVP_OUT(kvpool_pressure, free_pages, "the pool's free pages"),
	KVP_OUT(kvpool_pressure, low_wmark, "the low watermark"),
	KVP_OUT(kvpool_pressure, high_wmark, "the high watermark"),
	/* By name only: not part of the tuple. */
	{ "asked", "ask_pages, by another name",
	  offsetof(struct kvpool_pressure, out_ask_pages),
	  sizeof(((struct kvpool_pressure *)0)->out_ask_pages) },
};

static const struct kvp_field kvp_verify_fields[] = {
	KVP_OUT(kvpool_verify, violations, "invariants broken (0: sound)"),
	KVP_OUT(kvpool_verify, pages_checked, "pages checked"),
	KVP_OUT(kvpool_verify, rows_checked, "rows checked"),
};

static const struct kvp_field kvp_arenainfo_fields[] = {
	KVP_OUT(kvpool_arena, kind, "ARENA_NONE, ARENA_HOST or ARENA_CUDA"),
	KVP_OUT(kvpool_arena, nr_chunks, "chunks the arena is made of"),
	KVP_OUT(kvpool_arena, page_bytes, "bytes of one page"),
	KVP_OUT(kvpool_arena, bytes, "the arena's length"),
};

static const struct kvp_field kvp_tenant_fields[] = {
	KVP_FLD(kvpool_tenant_info, tenant_id, "its id in the pool"),
	KVP_FLD(kvpool_tenant_info, uid, "its uid"),
	KVP_FLD(kvpool_tenant_info, cgroup_id, "its cgroup v2 id"),
	KVP_FLD(kvpool_tenant_info, pages, "pages it holds"),
	KVP_FLD(kvpool_tenant_info, cache_pages, "of which in prefix caches"),
	KVP_FLD(kvpool_tenant_info, rows, "rows it holds, parked included"),
	KVP_FLD(kvpool_tenant_info, nr_clients, "its open clients"),
	KVP_FLD(kvpool_tenant_info, max_pages, "page limit (0: none)"),
	KVP_FLD(kvpool_tenant_info, min_pages, "pages guaranteed (0: none)"),
	KVP_FLD(kvpool_tenant_info, max_rows, "row limit (0: none)"),
	KVP_FLD(kvpool_tenant_info, ask_pages, "pages its clients are asked"),
	{ "label", "its label", offsetof(struct kvpool_tenant_info, label), 0 },
	/* By name only: not part of the tuple, which predates it. */
	KVP_FLD(kvpool_tenant_info, flags,
		"TENANT_BY_PATH, TENANT_ANY_UID, TENANT_CONFIGURED"),
};

struct kvp_tuple {
	const char *name;
	const char *doc;
	const struct kvp_field *fields;
	int nr_fields;
	int nr_in_seq;
	PyTypeObject *type;
};

#define KVP_TUPLE(n, d, f, seq) \
	{ "kvpool." n, d, f, (int)(sizeof(f) / sizeof(f[0])), seq, NULL }

static struct kvp_tuple kvp_tuples[KVP_T_NR] = {
	[KVP_T_INFO] = KVP_TUPLE("Info",
		"A pool's geometry and features (KVPOOL_INFO), read at open.",
		kvp_info_fields, 10),
	[KVP_T_STATS] = KVP_TUPLE("Stats",
		"One snapshot of the pool's, the client's and its tenant's\n"
		"counts (KVPOOL_STATS).", kvp_stats_fields, 24),
	[KVP_T_ROWINFO] = KVP_TUPLE("RowInfo",
		"A row's record (KVPOOL_ROW_QUERY) and, if asked for, its\n"
		"page ids in .pages.", kvp_rowinfo_fields, 8),
	[KVP_T_PRESSURE] = KVP_TUPLE("Pressure",
		"What the kernel asks of this client (KVPOOL_PRESSURE);\n"
		".asked is .ask_pages.", kvp_pressure_fields, 5),
	[KVP_T_VERIFY] = KVP_TUPLE("Verify",
		"The answer of KVPOOL_VERIFY (.violations 0: the pool is\n"
		"sound).", kvp_verify_fields, 3),
	[KVP_T_ARENAINFO] = KVP_TUPLE("ArenaInfo",
		"The pool's arena (KVPOOL_ARENA).", kvp_arenainfo_fields, 4),
	[KVP_T_TENANT] = KVP_TUPLE("Tenant",
		"One tenant of a pool (KVPOOL_CTL_TENANT_LIST).",
		kvp_tenant_fields, 12),
};

static PyObject *kvp_field_value(const struct kvp_field *f, const void *src)
{
	const char *p = (const char *)src + f->off;
	uint64_t u64;
	uint32_t u32;

	if (f->off == KVP_NOSRC)
		Py_RETURN_NONE;
	if (!f->size)
		return PyUnicode_DecodeUTF8(p, strnlen(p, KVPOOL_LABEL_LEN),
					    "replace");
	if (f->size == sizeof(u64)) {
		memcpy(&u64, p, sizeof(u64));
		return PyLong_FromUnsignedLongLong(u64);
	}
	memcpy(&u32, p, sizeof(u32));
	return PyLong_FromUnsignedLong(u32);
}

PyObject *kvp_tuple_new(enum kvp_tuple_id id, const void *src)
{
	const struct kvp_tuple *t = &kvp_tuples[id];
	PyObject *r, *v;
	int i;

	r = PyStructSequence_New(t->type);
	if (!r)
		return NULL;
	for (i = 0; i < t->nr_fields; i++) {
		v = kvp_field_value(&t->fields[i], src);
		if (!v) {
			Py_DECREF(r);
			return NULL;
		}
		PyStructSequence_SetItem(r, i, v);
	}
	return r;
}

static int kvp_tuples_init(PyObject *mod)
{
	PyStructSequence_Field fields[32];
	PyStructSequence_Desc desc;
	struct kvp_tuple *t;
	int i, j;

	for (i = 0; i < KVP_T_NR; i++) {
		t = &kvp_tuples[i];
		for (j = 0; j < t->nr_fields; j++) {
			fields[j].name = t->fields[j].name;
			fields[j].doc = t->fields[j].doc;
		}
		fields[j].name = NULL;
		fields[j].doc = NULL;
		desc.name = t->name;
		desc.doc = t->doc;
		desc.fields = fields;
		desc.n_in_sequence = t->nr_in_seq;
		t->type = PyStructSequence_NewType(&desc);
		if (!t->type)
			return -1;
		/* The short name: kvpool.Info, not kvpool.kvpool.Info. */
		if (PyModule_AddObjectRef(mod, t->name + strlen("kvpool."),
					  (PyObject *)t->type) < 0)
			return -1;
	}
	return 0;
}

/* ---- errors ------------------------------------------------------------ */

static PyObject *kvp_raise(int err, const char *text,
			   const struct kvpool_batch_result *res)
{
	PyObject *cls, *exc, *index;
	int e = err < 0 ? -err : err;

	if (e == ENOSPC)
		cls = kvp_exc_nospace;
	else if (e == EDQUOT)
		cls = kvp_exc_quota;
	else
		cls = kvp_exc_error;
	/* OSError's (errno, strerror) form sets both and its str(). */
	exc = PyObject_CallFunction(cls, "is", e, text);
	if (!exc)
		return NULL;
	if (res && res->error_index != KVPOOL_NO_INDEX)
		index = PyLong_FromUnsignedLong(res->error_index);
	else
		index = Py_NewRef(Py_None);
	if (!index || PyObject_SetAttrString(exc, "index", index) < 0)
		goto fail;
	Py_DECREF(index);
	index = PyLong_FromUnsignedLong(res ? res->nr_missing : 0);
	if (!index || PyObject_SetAttrString(exc, "shortfall", index) < 0)
		goto fail;
	Py_DECREF(index);
	PyErr_SetObject(cls, exc);
	Py_DECREF(exc);
	return NULL;
fail:
	Py_XDECREF(index);
	Py_DECREF(exc);
	return NULL;
}

PyObject *kvp_error(int err, const struct kvpool_batch_result *res)
{
	return kvp_raise(err, kvpool_strerror(err), res);
}

PyObject *kvp_arena_error(int err, const struct kvpool_batch_result *res)
{
	const char *text = kvpool_arena_error();

	return kvp_raise(err, *text ? text : kvpool_strerror(err), res);
}

/* ---- arrays and arguments ---------------------------------------------- */

/* numpy, imported on first use; Py_None once it failed to import. */
static PyObject *kvp_numpy;
static PyObject *kvp_array_cls;

bool kvp_array_ready(void)
{
	PyObject *m;

	if (!kvp_numpy) {
		kvp_numpy = PyImport_ImportModule("numpy");
		if (!kvp_numpy) {
			PyErr_Clear();
			kvp_numpy = Py_NewRef(Py_None);
		}
	}
	if (kvp_numpy != Py_None || kvp_array_cls)
		return true;
	m = PyImport_ImportModule("array");
	if (!m)
		return false;
	kvp_array_cls = PyObject_GetAttrString(m, "array");
	Py_DECREF(m);
	return kvp_array_cls != NULL;
}

static PyObject *kvp_array_make(int width, Py_ssize_t n)
{
	PyObject *zeros, *r;

	if (!kvp_array_ready())
		return NULL;
	if (kvp_numpy != Py_None)
		return PyObject_CallMethod(kvp_numpy, "zeros", "ns", n,
					   width == 8 ? "uint64" : "uint32");
	zeros = PyBytes_FromStringAndSize(NULL, n * width);
	if (!zeros)
		return NULL;
	memset(PyBytes_AS_STRING(zeros), 0, n * width);
	r = PyObject_CallFunction(kvp_array_cls, "sO", width == 8 ? "Q" : "I",
				  zeros);
	Py_DECREF(zeros);
	return r;
}

PyObject *kvp_array_new(int width, Py_ssize_t n, void **data)
{
	PyObject *r = kvp_array_make(width, n);
	Py_buffer v;

	if (!r)
		return NULL;
	if (PyObject_GetBuffer(r, &v, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS)) {
		Py_DECREF(r);
		return NULL;
	}
	/* The array owns the memory and is never resized. */
	*data = v.buf;
	PyBuffer_Release(&v);
	return r;
}

/* Whether @fmt, a struct-module format, is one native-order integer. */
static bool kvp_int_format(const char *fmt, bool *is_signed)
{
	if (!fmt)
		fmt = "B";
	if (*fmt == '@' || *fmt == '=' || *fmt == '<')
		fmt++;
	if (!*fmt || fmt[1] || !strchr("bBhHiIlLqQnN", *fmt))
		return false;
	*is_signed = *fmt >= 'a';
	return true;
}

/*
 * PyObject_GetBuffer(), and for objects without the buffer protocol that
 * speak DLPack (a torch CPU tensor), numpy.from_dlpack()'s array over the
 * same memory: still no copy, but readonly (numpy makes it so), so such
 * objects can be inputs only.
 */
static int kvp_getbuffer(PyObject *o, Py_buffer *view, int flags)
{
	PyObject *arr;
	int ret;

	if (PyObject_CheckBuffer(o) || !PyObject_HasAttrString(o, "__dlpack__"))
		return PyObject_GetBuffer(o, view, flags);
	if (!kvp_array_ready())
		return -1;
	if (kvp_numpy == Py_None)
		return PyObject_GetBuffer(o, view, flags);
	arr = PyObject_CallMethod(kvp_numpy, "from_dlpack", "O", o);
	if (!arr)
		return -1;
	ret = PyObject_GetBuffer(arr, view, flags);
	Py_DECREF(arr);
	return ret;
}

int kvp_arr_get(PyObject *o, const char *what, int width, bool writable,
		struct kvp_arr *a)
{
	int flags = PyBUF_STRIDES | PyBUF_FORMAT;
	PyObject *type, *value, *tb;

	a->held = false;
	if (writable)
		flags |= PyBUF_WRITABLE;
	if (kvp_getbuffer(o, &a->view, flags)) {
		/*
		 * Not a buffer, a readonly one where one is written, or a
		 * DLPack tensor numpy cannot see (not on the CPU): all the
		 * same to the caller, a TypeError that names the argument.
		 */
		PyErr_Fetch(&type, &value, &tb);
		PyErr_Format(PyExc_TypeError,
			     "%s: a %sbuffer of %d-byte integers is needed (%S)",
			     what, writable ? "writable " : "", width,
			     value ? value : Py_None);
		Py_XDECREF(type);
		Py_XDECREF(value);
		Py_XDECREF(tb);
		return -1;
	}
	a->held = true;
	if (!kvp_int_format(a->view.format, &a->is_signed) ||
	    a->view.itemsize != width) {
		PyErr_Format(PyExc_TypeError,
			     "%s: items must be %d-byte integers, not '%s' of %zd bytes",
			     what, width,
			     a->view.format ? a->view.format : "B",
			     a->view.itemsize);
		goto fail;
	}
	if (a->view.ndim != 1) {
		PyErr_Format(PyExc_ValueError,
			     "%s: one dimension wanted, not %d", what,
			     a->view.ndim);
		goto fail;
	}
	if (!PyBuffer_IsContiguous(&a->view, 'C')) {
		PyErr_Format(PyExc_ValueError, "%s: not C contiguous", what);
		goto fail;
	}
	a->n = a->view.shape[0];
	return 0;
fail:
	kvp_arr_put(a);
	return -1;
}

void kvp_arr_put(struct kvp_arr *a)
{
	if (a->held)
		PyBuffer_Release(&a->view);
	a->held = false;
}

int kvp_fast_args(const char *fname, PyObject *const *args, Py_ssize_t nargs,
		  PyObject *kwnames, const char *const *names, int n, int nreq,
		  PyObject **out)
{
	Py_ssize_t i, nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
	PyObject *k;
	int j;

	if (nargs > n) {
		PyErr_Format(PyExc_TypeError,
			     "%s() takes at most %d arguments (%zd given)",
			     fname, n, nargs);
		return -1;
	}
	for (j = 0; j < n; j++)
		out[j] = j < nargs ? args[j] : NULL;
	for (i = 0; i < nkw; i++) {
		k = PyTuple_GET_ITEM(kwnames, i);
		for (j = 0; j < n; j++)
			if (!PyUnicode_CompareWithASCIIString(k, names[j]))
				break;
		if (j == n) {
			PyErr_Format(PyExc_TypeError,
				     "%s() got an unexpected keyword argument '%U'",
				     fname, k);
			return -1;
		}
		if (out[j]) {
			PyErr_Format(PyExc_TypeError,
				     "%s() got multiple values for argument '%s'",
				     fname, names[j]);
			return -1;
		}
		out[j] = args[nargs + i];
	}
	for (j = 0; j < nreq; j++) {
		if (!out[j]) {
			PyErr_Format(PyExc_TypeError,
				     "%s() missing required argument '%s'",
				     fname, names[j]);
			return -1;
		}
	}
	return 0;
}

int kvp_u64_conv(PyObject *o, void *out)
{
	unsigned long long v;

	if (!PyLong_Check(o)) {
		PyErr_Format(PyExc_TypeError, "an int is needed, not %.100s",
			     Py_TYPE(o)->tp_name);
		return 0;
	}
	v = PyLong_AsUnsignedLongLong(o);
	if (v == (unsigned long long)-1 && PyErr_Occurred())
		return 0;
	*(uint64_t *)out = v;
	return 1;
}

int kvp_u32_conv(PyObject *o, void *out)
{
	uint64_t v;

	if (!kvp_u64_conv(o, &v))
		return 0;
	if (v > UINT32_MAX) {
		PyErr_SetString(PyExc_OverflowError,
				"value does not fit in 32 bits");
		return 0;
	}
	*(uint32_t *)out = (uint32_t)v;
	return 1;
}

int kvp_handle_conv(PyObject *o, void *out)
{
	struct kvpool_handle *h = out;
	long long sv;
	uint64_t v;

	/* An int64 array's item may hold a handle of generation >= 2^31. */
	if (PyLong_Check(o) && _PyLong_Sign(o) < 0) {
		sv = PyLong_AsLongLong(o);
		if (sv == -1 && PyErr_Occurred())
			return 0;
		v = (uint64_t)sv;
	} else if (!kvp_u64_conv(o, &v)) {
		return 0;
	}
	h->req_pool_idx = (uint32_t)v;
	h->generation = (uint32_t)(v >> 32);
	return 1;
}

static int kvp_fd_conv(PyObject *o, void *out)
{
	int fd = PyObject_AsFileDescriptor(o);

	if (fd < 0)
		return 0;
	*(int *)out = fd;
	return 1;
}

/* ---- module functions -------------------------------------------------- */

PyDoc_STRVAR(kvp_send_fd_doc,
"send_fd($module, sock, fd, /)\n--\n\n"
"Send descriptor fd over the connected Unix socket sock (a socket or\n"
"its fileno) as SCM_RIGHTS, with one byte of data (kvpool_send_fd).\n"
"Never raises SIGPIPE. fd stays open here.");

static PyObject *kvp_send_fd(PyObject *mod, PyObject *args)
{
	int sock, fd, ret;

	(void)mod;
	if (!PyArg_ParseTuple(args, "O&O&:send_fd", kvp_fd_conv, &sock,
			      kvp_fd_conv, &fd))
		return NULL;
	Py_BEGIN_ALLOW_THREADS
	ret = kvpool_send_fd(sock, fd);
	Py_END_ALLOW_THREADS
	if (ret < 0)
		return kvp_error(ret, NULL);
	Py_RETURN_NONE;
}

PyDoc_STRVAR(kvp_recv_fd_doc,
"recv_fd($module, sock, /)\n--\n\n"
"Receive one descriptor sent with send_fd() on sock (a socket or its\n"
"fileno), close-on-exec (kvpool_recv_fd). ECONNRESET: the peer closed\n"
"first; EBADMSG: a message without a descriptor.");

static PyObject *kvp_recv_fd(PyObject *mod, PyObject *arg)
{
	int sock, ret;

	(void)mod;
	if (!kvp_fd_conv(arg, &sock))
		return NULL;
	Py_BEGIN_ALLOW_THREADS
	ret = kvpool_recv_fd(sock);
	Py_END_ALLOW_THREADS
	if (ret < 0)
		return kvp_error(ret, NULL);
	return PyLong_FromLong(ret);
}

PyDoc_STRVAR(kvp_strerror_doc,
"strerror($module, err, /)\n--\n\n"
"What errno err (positive or negative) means from a kvpool call\n"
"(kvpool_strerror).");

static PyObject *kvp_strerror(PyObject *mod, PyObject *arg)
{
	int err = PyLong_AsLong(arg);

	(void)mod;
	if (err == -1 && PyErr_Occurred())
		return NULL;
	return PyUnicode_FromString(kvpool_strerror(err));
}

PyDoc_STRVAR(kvp_version_doc,
"version($module, /)\n--\n\n"
"libkvpool's version, \"MAJOR.MINOR.PATCH\" (kvpool_version).");

static PyObject *kvp_version(PyObject *mod, PyObject *unused)
{
	(void)mod;
	(void)unused;
	return PyUnicode_FromString(kvpool_version());
}

/* Half of a handle int: its generation (@gen) or its req_pool_idx. */
static PyObject *kvp_handle_half(PyObject *arg, bool gen)
{
	struct kvpool_handle h;

	if (!kvp_handle_conv(arg, &h))
		return NULL;
	return PyLong_FromUnsignedLong(gen ? h.generation : h.req_pool_idx);
}

PyDoc_STRVAR(kvp_handle_idx_doc,
"handle_idx($module, handle, /)\n--\n\n"
"The req_pool_idx of a handle int (its low 32 bits).");

static PyObject *kvp_handle_idx(PyObject *mod, PyObject *arg)
{
	(void)mod;
	return kvp_handle_half(arg, false);
}

PyDoc_STRVAR(kvp_handle_gen_doc,
"handle_gen($module, handle, /)\n--\n\n"
"The generation of a handle int (its high 32 bits).");

static PyObject *kvp_handle_gen(PyObject *mod, PyObject *arg)
{
	(void)mod;
	return kvp_handle_half(arg, true);
}

PyDoc_STRVAR(kvp_pool_create_doc,
"pool_create($module, /, nr_pages, page_tokens, nr_rows, row_tokens, "
"reserve_zero=True, gpu=None)\n--\n\n"
"Create a pool through /dev/kvpool-control (root; kvpool_pool_create)\n"
"and return its id N, as in /dev/kvpoolN. reserve_zero: page 0 and row\n"
"0 are reserved (CREATE_RESERVE_ZERO). gpu: the PCI address, as lspci\n"
"prints it (\"0000:01:00.0\" or \"01:00.0\"), of the GPU the pool is\n"
"for (CREATE_GPU), or None. A bad address is a ValueError.");

static PyObject *kvp_pool_create(PyObject *mod, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "nr_pages", "page_tokens", "nr_rows",
				  "row_tokens", "reserve_zero", "gpu", NULL };
	struct kvpool_pool_params p = { 0 };
	const char *gpu = NULL;
	int reserve_zero = 1;
	unsigned int id;
	int ret;

	(void)mod;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "O&O&O&O&|pz:pool_create",
					 kwlist, kvp_u32_conv, &p.nr_pages,
					 kvp_u32_conv, &p.page_tokens,
					 kvp_u32_conv, &p.nr_rows,
					 kvp_u32_conv, &p.row_tokens,
					 &reserve_zero, &gpu))
		return NULL;
	if (reserve_zero)
		p.flags |= KVPOOL_CREATE_RESERVE_ZERO;
	if (gpu) {
		if (kvpool_pci_parse(gpu, &p.gpu_domain, &p.gpu_devid)) {
			PyErr_Format(PyExc_ValueError,
				     "gpu: '%s' is no PCI address", gpu);
			return NULL;
		}
		p.flags |= KVPOOL_CREATE_GPU;
	}
	Py_BEGIN_ALLOW_THREADS
	ret = kvpool_pool_create(&p, &id);
	Py_END_ALLOW_THREADS
	if (ret < 0)
		return kvp_error(ret, NULL);
	return PyLong_FromUnsignedLong(id);
}

PyDoc_STRVAR(kvp_pool_destroy_doc,
"pool_destroy($module, pool_id, /)\n--\n\n"
"Destroy pool pool_id (root; kvpool_pool_destroy). EBUSY: it has\n"
"clients; ENODEV: no such pool.");

static PyObject *kvp_pool_destroy(PyObject *mod, PyObject *arg)
{
	uint32_t id;
	int ret;

	(void)mod;
	if (!kvp_u32_conv(arg, &id))
		return NULL;
	Py_BEGIN_ALLOW_THREADS
	ret = kvpool_pool_destroy(id);
	Py_END_ALLOW_THREADS
	if (ret < 0)
		return kvp_error(ret, NULL);
	Py_RETURN_NONE;
}

PyDoc_STRVAR(kvp_pool_list_doc,
"pool_list($module, /)\n--\n\n"
"The ids of the pools that exist, ascending, from sysfs\n"
"(kvpool_pool_list). ENODEV: the module is not loaded.");

/*
 * A list answer of libkvpool, fetched whole: @fn fills @cap entries of
 * @size bytes and returns how many there are, which may be more (then ask
 * again with room: some came between the calls). Each entry becomes an
 * item with @item.
 */
typedef int (*kvp_list_fn)(unsigned int id, void *out, unsigned int cap);
typedef PyObject *(*kvp_item_fn)(const void *entry);

static PyObject *kvp_list(kvp_list_fn fn, unsigned int id, size_t size,
			  kvp_item_fn item)
{
	PyObject *r = NULL, *v;
	unsigned int cap = 0;
	char *out = NULL;
	int ret, i;

	for (;;) {
		Py_BEGIN_ALLOW_THREADS
		ret = fn(id, out, cap);
		Py_END_ALLOW_THREADS
		if (ret < 0) {
			kvp_error(ret, NULL);
			goto out;
		}
		if ((unsigned int)ret <= cap)
			break;
		cap = ret + 8;
		PyMem_Free(out);
		out = PyMem_Malloc(cap * size);
		if (!out) {
			PyErr_NoMemory();
			goto out;
		}
	}
	r = PyList_New(ret);
	for (i = 0; r && i < ret; i++) {
		v = item(out + i * size);
		if (!v) {
			Py_CLEAR(r);
			break;
		}
		PyList_SET_ITEM(r, i, v);
	}
out:
	PyMem_Free(out);
	return r;
}

static int kvp_pool_list_fn(unsigned int unused, void *out, unsigned int cap)
{
	(void)unused;
	return kvpool_pool_list(out, cap);
}

static PyObject *kvp_pool_id_item(const void *entry)
{
	return PyLong_FromUnsignedLong(*(const unsigned int *)entry);
}

static PyObject *kvp_pool_list(PyObject *mod, PyObject *unused)
{
	(void)mod;
	(void)unused;
	return kvp_list(kvp_pool_list_fn, 0, sizeof(unsigned int),
			kvp_pool_id_item);
}

PyDoc_STRVAR(kvp_pool_status_doc,
"pool_status($module, pool_id, /)\n--\n\n"
"Pool pool_id's geometry and counts from sysfs, without becoming a\n"
"client (kvpool_pool_status): Info has pool_id, nr_pages, page_tokens,\n"
"nr_rows, row_tokens and create_flags (the rest 0); Stats the pool's\n"
"counts (client_* and tenant_* 0). ENODEV: no such pool.\n\n"
"Returns (Info, Stats).");

static PyObject *kvp_pool_status(PyObject *mod, PyObject *arg)
{
	struct kvpool_stats stats;
	struct kvpool_info info;
	PyObject *i, *s;
	uint32_t id;
	int ret;

	(void)mod;
	if (!kvp_u32_conv(arg, &id))
		return NULL;
	Py_BEGIN_ALLOW_THREADS
	ret = kvpool_pool_status(id, &info, &stats);
	Py_END_ALLOW_THREADS
	if (ret < 0)
		return kvp_error(ret, NULL);
	i = kvp_tuple_new(KVP_T_INFO, &info);
	s = i ? kvp_tuple_new(KVP_T_STATS, &stats) : NULL;
	if (!s) {
		Py_XDECREF(i);
		return NULL;
	}
	return Py_BuildValue("(NN)", i, s);
}

PyDoc_STRVAR(kvp_pool_gpu_doc,
"pool_gpu($module, pool_id, /)\n--\n\n"
"The PCI address (\"DDDD:BB:dd.f\") of the GPU pool pool_id was created\n"
"for, or None if it names none (kvpool_pool_gpu).");

static PyObject *kvp_pool_gpu(PyObject *mod, PyObject *arg)
{
	uint32_t id, domain, devid;
	int ret;

	(void)mod;
	if (!kvp_u32_conv(arg, &id))
		return NULL;
	Py_BEGIN_ALLOW_THREADS
	ret = kvpool_pool_gpu(id, &domain, &devid);
	Py_END_ALLOW_THREADS
	if (ret < 0)
		return kvp_error(ret, NULL);
	if (!ret)
		Py_RETURN_NONE;
	return PyUnicode_FromFormat("%04x:%02x:%02x.%x", (unsigned int)domain,
				    (unsigned int)(devid >> 8),
				    (unsigned int)((devid >> 3) & 0x1f),
				    (unsigned int)(devid & 7));
}

PyDoc_STRVAR(kvp_tenant_set_doc,
"tenant_set($module, /, pool_id, cgroup_id=0, uid=0, tenant_id=None, "
"max_pages=0, min_pages=0, max_rows=0, label='', cgroup_path=None, "
"any_uid=False, remove=False)\n--\n\n"
"Set the limits of a tenant of pool pool_id (root;\n"
"kvpool_tenant_set) and return its id. The tenant is named by\n"
"cgroup_id and uid (created if new), when tenant_id is not None by\n"
"its id (TENANT_BY_ID), or when cgroup_path is not None by that cgroup\n"
"path (\"/system.slice/x.service\", as the host's /sys/fs/cgroup names\n"
"it; created if new) and uid, or every uid with any_uid\n"
"(kvpool_tenant_set_path): such limits cover the cgroups below it and\n"
"survive a restart of the service. remove=True drops the tenant's\n"
"limits instead (TENANT_REMOVE). 0 limits are none; an empty label\n"
"keeps the current one. A label of 32 bytes or more (UTF-8) is a\n"
"ValueError.");

static PyObject *kvp_tenant_set(PyObject *mod, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "pool_id", "cgroup_id", "uid", "tenant_id",
				  "max_pages", "min_pages", "max_rows",
				  "label", "cgroup_path", "any_uid", "remove",
				  NULL };
	struct kvpool_ctl_tenant t = { 0 };
	const char *label = "", *path = NULL;
	int any_uid = 0, remove = 0;
	PyObject *tid = Py_None;
	Py_ssize_t label_len = 0;
	uint32_t pool_id;
	int ret;

	(void)mod;
	if (!PyArg_ParseTupleAndKeywords(args, kw,
					 "O&|O&O&OO&O&O&s#zpp:tenant_set",
					 kwlist, kvp_u32_conv, &pool_id,
					 kvp_u64_conv, &t.cgroup_id,
					 kvp_u32_conv, &t.uid, &tid,
					 kvp_u32_conv, &t.max_pages,
					 kvp_u32_conv, &t.min_pages,
					 kvp_u32_conv, &t.max_rows,
					 &label, &label_len, &path, &any_uid,
					 &remove))
		return NULL;
	if (any_uid)
		t.flags |= KVPOOL_TENANT_ANY_UID;
	if (remove)
		t.flags |= KVPOOL_TENANT_REMOVE;
	if (tid != Py_None) {
		if (!kvp_u32_conv(tid, &t.tenant_id))
			return NULL;
		t.flags |= KVPOOL_TENANT_BY_ID;
	}
	if (label_len >= KVPOOL_LABEL_LEN) {
		PyErr_Format(PyExc_ValueError,
			     "label: at most %d bytes", KVPOOL_LABEL_LEN - 1);
		return NULL;
	}
	memcpy(t.label, label, label_len);
	Py_BEGIN_ALLOW_THREADS
	ret = path ? kvpool_tenant_set_path(pool_id, path, &t) :
		     kvpool_tenant_set(pool_id, &t);
	Py_END_ALLOW_THREADS
	if (ret < 0)
		return kvp_error(ret, NULL);
	return PyLong_FromLong(ret);
}

PyDoc_STRVAR(kvp_tenant_list_doc,
"tenant_list($module, pool_id, /)\n--\n\n"
"The tenants of pool pool_id (root; kvpool_tenant_list).\n\n"
"Returns list[Tenant].");

static int kvp_tenant_list_fn(unsigned int id, void *out, unsigned int cap)
{
	return kvpool_tenant_list(id, out, cap);
}

static PyObject *kvp_tenant_item(const void *entry)
{
	return kvp_tuple_new(KVP_T_TENANT, entry);
}

static PyObject *kvp_tenant_list(PyObject *mod, PyObject *arg)
{
	uint32_t pool_id;

	(void)mod;
	if (!kvp_u32_conv(arg, &pool_id))
		return NULL;
	return kvp_list(kvp_tenant_list_fn, pool_id,
			sizeof(struct kvpool_tenant_info), kvp_tenant_item);
}

PyDoc_STRVAR(kvp_set_wmark_doc,
"set_wmark($module, pool_id, low, high, /)\n--\n\n"
"Set pool pool_id's pressure watermarks (root; kvpool_set_wmark):\n"
"below low free pages clients are asked to give pages back (0: never),\n"
"enough to restore high. EINVAL: high below low or above the pages.");

static PyObject *kvp_set_wmark(PyObject *mod, PyObject *args)
{
	uint32_t id, low, high;
	int ret;

	(void)mod;
	if (!PyArg_ParseTuple(args, "O&O&O&:set_wmark", kvp_u32_conv, &id,
			      kvp_u32_conv, &low, kvp_u32_conv, &high))
		return NULL;
	Py_BEGIN_ALLOW_THREADS
	ret = kvpool_set_wmark(id, low, high);
	Py_END_ALLOW_THREADS
	if (ret < 0)
		return kvp_error(ret, NULL);
	Py_RETURN_NONE;
}

typedef int (*kvp_arena_create_fn)(unsigned int, uint64_t, uint32_t,
				   uint32_t *);

static PyObject *kvp_arena_create(PyObject *args, const char *fmt,
				  kvp_arena_create_fn fn)
{
	struct kvpool_batch_result res = { .error_index = KVPOOL_NO_INDEX };
	uint32_t id, nr_chunks;
	uint64_t page_bytes;
	int ret;

	if (!PyArg_ParseTuple(args, fmt, kvp_u32_conv, &id, kvp_u64_conv,
			      &page_bytes, kvp_u32_conv, &nr_chunks))
		return NULL;
	Py_BEGIN_ALLOW_THREADS
	ret = fn(id, page_bytes, nr_chunks, &res.error_index);
	Py_END_ALLOW_THREADS
	if (ret < 0)
		return kvp_arena_error(ret, &res);
	Py_RETURN_NONE;
}

PyDoc_STRVAR(kvp_arena_create_host_doc,
"arena_create_host($module, pool_id, page_bytes, nr_chunks, /)\n--\n\n"
"Give pool pool_id a host arena (sealed memfds) of page_bytes pages in\n"
"nr_chunks chunks (root; kvpool_arena_create_host). EEXIST: it has one.\n"
"The error's strerror is kvpool_arena_error()'s, .index the chunk the\n"
"kernel refused.");

static PyObject *kvp_arena_create_host(PyObject *mod, PyObject *args)
{
	(void)mod;
	return kvp_arena_create(args, "O&O&O&:arena_create_host",
				kvpool_arena_create_host);
}

PyDoc_STRVAR(kvp_arena_create_cuda_doc,
"arena_create_cuda($module, pool_id, page_bytes, nr_chunks, /)\n--\n\n"
"Give pool pool_id, created with a GPU, a CUDA arena of page_bytes\n"
"pages in nr_chunks chunks, made with the CUDA driver (root;\n"
"kvpool_arena_create_cuda). ELIBACC: no CUDA driver. The error's\n"
"strerror is kvpool_arena_error()'s.");

static PyObject *kvp_arena_create_cuda(PyObject *mod, PyObject *args)
{
	(void)mod;
	return kvp_arena_create(args, "O&O&O&:arena_create_cuda",
				kvpool_arena_create_cuda);
}

PyDoc_STRVAR(kvp_c_decode_steps_doc,
"_c_decode_steps($module, pool, handles, lens, iters, /)\n--\n\n"
"For the benchmark: run iters decode steps in C straight on libkvpool\n"
"and return the nanoseconds they took (CLOCK_MONOTONIC). Each step\n"
"packs extend entries (new_len = lens[i] + 1), calls kvpool_extend()\n"
"(new page ids to the Pool's scratch), kvpool_commit() to the same\n"
"lengths, then adds 1 to every lens[i] in place (lens: a writable\n"
"4-byte integer buffer), so that Python and C steps may alternate on\n"
"the same rows. The GIL is released once around the whole loop, not\n"
"around each call as Pool.extend() and Pool.commit() do: what is timed\n"
"is libkvpool and the kernel alone. Raises kvpool.Error on the first\n"
"failure (the steps before it stay done).");

#define KVP_KW	(METH_VARARGS | METH_KEYWORDS)

/* Method @n: kvp_@f() and kvp_@f_doc. */
#define KVP_M(n, f, flags) \
	{ n, KVP_METH(kvp_##f), flags, kvp_##f##_doc }

static PyMethodDef kvp_methods[] = {
	KVP_M("send_fd", send_fd, METH_VARARGS),
	KVP_M("recv_fd", recv_fd, METH_O),
	KVP_M("strerror", strerror, METH_O),
	KVP_M("version", version, METH_NOARGS),
	KVP_M("handle_idx", handle_idx, METH_O),
	KVP_M("handle_gen", handle_gen, METH_O),
	KVP_M("pool_create", pool_create, KVP_KW),
	KVP_M("pool_destroy", pool_destroy, METH_O),
	KVP_M("pool_list", pool_list, METH_NOARGS),
	KVP_M("pool_status", pool_status, METH_O),
	KVP_M("pool_gpu", pool_gpu, METH_O),
	KVP_M("tenant_set", tenant_set, KVP_KW),
	KVP_M("tenant_list", tenant_list, METH_O),
	KVP_M("set_wmark", set_wmark, METH_VARARGS),
	KVP_M("arena_create_host", arena_create_host, METH_VARARGS),
	KVP_M("arena_create_cuda", arena_create_cuda, METH_VARARGS),
	KVP_M("_c_decode_steps", c_decode_steps, METH_VARARGS),
	{ NULL, NULL, 0, NULL },
};

/* ---- the module -------------------------------------------------------- */

struct kvp_const {
	const char *name;
	unsigned long long value;
};

#define KVP_CONST(n)	{ #n, KVPOOL_##n }

static const struct kvp_const kvp_consts[] = {
	KVP_CONST(FEAT_ROWS),
	KVP_CONST(FEAT_EXTEND),
	KVP_CONST(FEAT_SLOTS),
	KVP_CONST(FEAT_VERIFY),
	KVP_CONST(FEAT_PREFIX_CACHE),
	KVP_CONST(FEAT_SWA),
	KVP_CONST(FEAT_EXPORT),
	KVP_CONST(FEAT_QUOTA),
	KVP_CONST(FEAT_PRESSURE),
	KVP_CONST(FEAT_ARENA),
	KVP_CONST(FEAT_TENANT_PATH),
	KVP_CONST(FEAT_GPU_AGENT),
	KVP_CONST(FEAT_BUDGET),
	KVP_CONST(ARENA_NONE),
	KVP_CONST(ARENA_HOST),
	KVP_CONST(ARENA_CUDA),
	KVP_CONST(ARENA_MAX_CHUNKS),
	KVP_CONST(LAYOUT_PAGE_MAJOR),
	KVP_CONST(LAYOUT_LAYER_MAJOR),
	KVP_CONST(PAGE_NONE),
	KVP_CONST(NO_INDEX),
	KVP_CONST(ABI_VERSION),
	KVP_CONST(CREATE_RESERVE_ZERO),
	KVP_CONST(CREATE_GPU),
	KVP_CONST(CREATE_BUDGET),
	KVP_CONST(ROW_HELD),
	KVP_CONST(ROW_SLOT),
	KVP_CONST(PRESSURE_LOW),
	KVP_CONST(PRESSURE_OVER_MAX),
	KVP_CONST(PRESSURE_GUARANTEE),
	KVP_CONST(LABEL_LEN),
	KVP_CONST(TENANT_BY_ID),
	KVP_CONST(TENANT_BY_PATH),
	KVP_CONST(TENANT_ANY_UID),
	KVP_CONST(TENANT_REMOVE),
	KVP_CONST(TENANT_CONFIGURED),
	KVP_CONST(CGROUP_PATH_MAX),
};

PyDoc_STRVAR(kvp_error_doc,
"A libkvpool call failed. An OSError: .errno and .strerror\n"
"(kvpool_strerror()'s text, or kvpool_arena_error()'s for arena\n"
"calls); .index is the batch entry the kernel refused (None if none),\n"
".shortfall the rows or pages missing (0 if not a space error).");
PyDoc_STRVAR(kvp_nospace_doc,
"ENOSPC: the pool has too few free rows or pages; .shortfall says how\n"
"many were missing. Nothing was taken.");
PyDoc_STRVAR(kvp_quota_doc,
"EDQUOT: the op would take the tenant over its limit; .shortfall says\n"
"by how much. Nothing was taken.");

static int kvp_exceptions_init(PyObject *mod)
{
	PyObject *dict = Py_BuildValue("{sOsi}", "index", Py_None,
				       "shortfall", 0);

	if (!dict)
		return -1;
	kvp_exc_error = PyErr_NewExceptionWithDoc("kvpool.Error",
						  kvp_error_doc, PyExc_OSError,
						  dict);
	Py_DECREF(dict);
	if (!kvp_exc_error)
		return -1;
	kvp_exc_nospace = PyErr_NewExceptionWithDoc("kvpool.NoSpace",
						    kvp_nospace_doc,
						    kvp_exc_error, NULL);
	kvp_exc_quota = PyErr_NewExceptionWithDoc("kvpool.QuotaExceeded",
						  kvp_quota_doc,
						  kvp_exc_error, NULL);
	if (!kvp_exc_nospace || !kvp_exc_quota)
		return -1;
	if (PyModule_AddObjectRef(mod, "Error", kvp_exc_error) < 0 ||
	    PyModule_AddObjectRef(mod, "NoSpace", kvp_exc_nospace) < 0 ||
	    PyModule_AddObjectRef(mod, "QuotaExceeded", kvp_exc_quota) < 0)
		return -1;
	return 0;
}

PyDoc_STRVAR(kvp_module_doc,
"The C half of the kvpool package: libkvpool for Python. Import\n"
"kvpool, not this; see docs/python.md.");

static struct PyModuleDef kvp_module = {
	PyModuleDef_HEAD_INIT,
	.m_name = "kvpool._kvpool",
	.m_doc = kvp_module_doc,
	.m_size = -1,
	.m_methods = kvp_methods,
};

PyMODINIT_FUNC PyInit__kvpool(void)
{
	PyObject *mod;
	size_t i;

	mod = PyModule_Create(&kvp_module);
	if (!mod)
		return NULL;
	if (kvp_exceptions_init(mod) || kvp_tuples_init(mod))
		goto fail;
	if (PyType_Ready(&kvp_pool_type) < 0 ||
	    PyType_Ready(&kvp_arena_type) < 0 ||
	    PyModule_AddObjectRef(mod, "Pool",
				  (PyObject *)&kvp_pool_type) < 0 ||
	    PyModule_AddObjectRef(mod, "Arena",
				  (PyObject *)&kvp_arena_type) < 0)
		goto fail;
	for (i = 0; i < sizeof(kvp_consts) / sizeof(kvp_consts[0]); i++) {
		PyObject *v = PyLong_FromUnsignedLongLong(kvp_consts[i].value);
		int ret;

		if (!v)
			goto fail;
		ret = PyModule_AddObjectRef(mod, kvp_consts[i].name, v);
		Py_DECREF(v);
		if (ret < 0)
			goto fail;
	}
	if (PyModule_AddStringConstant(mod, "DEFAULT_PATH",
				       KVPOOL_DEFAULT_PATH) < 0 ||
	    PyModule_AddStringConstant(mod, "CONTROL_PATH",
				       KVPOOL_CONTROL_PATH) < 0 ||
	    PyModule_AddStringConstant(mod, "__version__",
				       KVPOOL_PY_VERSION) < 0)
		goto fail;
	return mod;
fail:
	Py_DECREF(mod);
	return NULL;
}
