// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * _kvpool.Arena: a pool's arena mapped into this process (struct
 * kvpool_arena_view), and the views of it that other libraries take:
 * the buffer protocol (host arenas), __cuda_array_interface__ (CUDA
 * arenas) and DLPack (both).
 *
 * Copyright (C) 2026 The kvpool authors
 *
 * Every view keeps the Arena alive and counts in its exports: close()
 * refuses to unmap memory a view still points at.
 */
#include "_kvpool.h"

#include <string.h>

/*
 * DLPack's legacy ABI (dlpack.h, v0.8 and the "dltensor" capsule), in
 * our own words: only what an exporter of one flat byte tensor needs.
 */
enum {
	KVP_DL_CPU = 1,		/* kDLCPU */
	KVP_DL_CUDA = 2,	/* kDLCUDA */
	KVP_DL_UINT = 1,	/* kDLUInt */
};

struct kvp_dl_device {
	int32_t device_type;
	int32_t device_id;
};

struct kvp_dl_dtype {
	uint8_t code;
	uint8_t bits;
	uint16_t lanes;
};

struct kvp_dl_tensor {
	void *data;
	struct kvp_dl_device device;
	int32_t ndim;
	struct kvp_dl_dtype dtype;
	int64_t *shape;
	int64_t *strides;	/* NULL: compact, row-major */
	uint64_t byte_offset;
};

struct kvp_dl_managed {
	struct kvp_dl_tensor dl_tensor;
	void *manager_ctx;
	void (*deleter)(struct kvp_dl_managed *self);
};

/* One export: the managed tensor and the shape it points at. */
struct kvp_dl_export {
	struct kvp_dl_managed m;
	int64_t shape[1];
};

#define KVP_DL_NAME		"dltensor"

/*
 * libkvpool keeps a CUDA arena's CUdevice (the device ordinal) in the
 * view's __resv[1] (KVP_VIEW_DEVICE in cuda.c) and has no accessor for
 * it yet; this is the one place that reads it.
 */
#define KVP_VIEW_DEVICE		1

typedef struct {
	PyObject_HEAD
	struct kvpool_arena_view v;
	Py_ssize_t exports;	/* buffers and DLPack tensors alive */
	PyObject *weakrefs;
} kvp_arena;

static bool kvp_arena_mapped(kvp_arena *self)
{
	if (self->v.base)
		return true;
	PyErr_SetString(PyExc_ValueError, "the Arena is closed");
	return false;
}

static bool kvp_arena_host(kvp_arena *self)
{
	if (!kvp_arena_mapped(self))
		return false;
	if (self->v.kind == KVPOOL_ARENA_HOST)
		return true;
	PyErr_SetString(PyExc_BufferError,
			"a CUDA arena has no CPU buffer: use "
			"__cuda_array_interface__ or __dlpack__");
	return false;
}

PyObject *kvp_arena_new(const struct kvpool_arena_view *v)
{
	kvp_arena *self = PyObject_New(kvp_arena, &kvp_arena_type);

	if (!self)
		return NULL;
	self->v = *v;
	self->exports = 0;
	self->weakrefs = NULL;
	return (PyObject *)self;
}

static void kvp_arena_dealloc(kvp_arena *self)
{
	if (self->weakrefs)
		PyObject_ClearWeakRefs((PyObject *)self);
	/* Every view holds a reference: none is left. */
	if (self->v.base) {
		Py_BEGIN_ALLOW_THREADS
		kvpool_arena_unmap(&self->v);
		Py_END_ALLOW_THREADS
	}
	PyObject_Free(self);
}

PyDoc_STRVAR(kvp_arena_close_doc,
"close($self, /)\n--\n\n"
"Unmap the arena (kvpool_arena_unmap). BufferError while a view of it\n"
"(memoryview, numpy array, DLPack tensor) is alive. Closing twice is\n"
"harmless.");

static PyObject *kvp_arena_close(kvp_arena *self, PyObject *unused)
{
	int ret;

	(void)unused;
	if (self->exports) {
		PyErr_Format(PyExc_BufferError,
			     "%zd views of the arena are alive", self->exports);
		return NULL;
	}
	if (!self->v.base)
		Py_RETURN_NONE;
	Py_BEGIN_ALLOW_THREADS
	ret = kvpool_arena_unmap(&self->v);
	Py_END_ALLOW_THREADS
	if (ret < 0)
		return kvp_arena_error(ret, NULL);
	Py_RETURN_NONE;
}

PyDoc_STRVAR(kvp_arena_enter_doc,
"__enter__($self, /)\n--\n\n"
"The Arena itself; ValueError if it is unmapped.");

static PyObject *kvp_arena_enter(kvp_arena *self, PyObject *unused)
{
	(void)unused;
	if (!kvp_arena_mapped(self))
		return NULL;
	return Py_NewRef(self);
}

PyDoc_STRVAR(kvp_arena_exit_doc,
"__exit__($self, exc_type, exc, tb, /)\n--\n\n"
"close(); returns False, so that an exception goes on.");

static PyObject *kvp_arena_exit(kvp_arena *self, PyObject *args)
{
	PyObject *r;

	(void)args;
	r = kvp_arena_close(self, NULL);
	if (!r)
		return NULL;
	Py_DECREF(r);
	Py_RETURN_FALSE;
}

static int kvp_arena_getbuffer(kvp_arena *self, Py_buffer *view, int flags)
{
	if (!kvp_arena_host(self)) {
		view->obj = NULL;
		if (!PyErr_ExceptionMatches(PyExc_BufferError)) {
			PyErr_Clear();
			PyErr_SetString(PyExc_BufferError,
					"the Arena is closed");
		}
		return -1;
	}
	if (PyBuffer_FillInfo(view, (PyObject *)self, self->v.base,
			      (Py_ssize_t)self->v.bytes, 0, flags) < 0)
		return -1;
	self->exports++;
	return 0;
}

static void kvp_arena_releasebuffer(kvp_arena *self, Py_buffer *view)
{
	(void)view;
	self->exports--;
}

/* A memoryview of arena bytes [@off, @off + @len), keeping it mapped. */
static PyObject *kvp_arena_slice(kvp_arena *self, uint64_t off, uint64_t len)
{
	PyObject *mv, *start, *stop, *slice = NULL, *r = NULL;

	mv = PyMemoryView_FromObject((PyObject *)self);
	if (!mv)
		return NULL;
	start = PyLong_FromUnsignedLongLong(off);
	stop = PyLong_FromUnsignedLongLong(off + len);
	if (start && stop)
		slice = PySlice_New(start, stop, NULL);
	if (slice)
		r = PyObject_GetItem(mv, slice);
	Py_XDECREF(slice);
	Py_XDECREF(stop);
	Py_XDECREF(start);
	/* The slice shares mv's export, which holds the Arena. */
	Py_DECREF(mv);
	return r;
}

static int kvp_arena_page_arg(kvp_arena *self, PyObject *arg, uint32_t *page)
{
	if (!kvp_u32_conv(arg, page))
		return -1;
	if (*page >= self->v.nr_pages) {
		PyErr_Format(PyExc_IndexError,
			     "page %u: the pool has %u pages", *page,
			     self->v.nr_pages);
		return -1;
	}
	return 0;
}

PyDoc_STRVAR(kvp_arena_page_doc,
"page($self, i, /)\n--\n\n"
"Page id i's page_bytes bytes, writable (host arenas). The view keeps\n"
"the arena mapped while it lives. IndexError past nr_pages.");

static PyObject *kvp_arena_page(kvp_arena *self, PyObject *arg)
{
	uint32_t page;

	if (!kvp_arena_host(self) || kvp_arena_page_arg(self, arg, &page))
		return NULL;
	return kvp_arena_slice(self, (uint64_t)page * self->v.page_bytes,
			       self->v.page_bytes);
}

PyDoc_STRVAR(kvp_arena_page_ptr_doc,
"page_ptr($self, i, /)\n--\n\n"
"The address of page id i (kvpool_page_addr): a CPU address for a host\n"
"arena, a device address (CUdeviceptr) for a CUDA one.");

static PyObject *kvp_arena_page_ptr(kvp_arena *self, PyObject *arg)
{
	uint32_t page;

	if (!kvp_arena_mapped(self) || kvp_arena_page_arg(self, arg, &page))
		return NULL;
	return PyLong_FromVoidPtr(kvpool_page_addr(&self->v, page));
}

/* The address and length of layer(...)'s slice. */
static int kvp_arena_layer_args(kvp_arena *self, PyObject *args,
				PyObject *kw, const char *fmt, char **addr,
				uint64_t *len)
{
	static char *kwlist[] = { "nr_layers", "layer", "page", "layout",
				  NULL };
	uint32_t nr_layers, layer, page, layout = KVPOOL_LAYOUT_PAGE_MAJOR;

	if (!PyArg_ParseTupleAndKeywords(args, kw, fmt, kwlist, kvp_u32_conv,
					 &nr_layers, kvp_u32_conv, &layer,
					 kvp_u32_conv, &page, kvp_u32_conv,
					 &layout))
		return -1;
	*addr = kvpool_layer_addr(&self->v, nr_layers, layout, layer, page);
	if (!*addr) {
		PyErr_SetString(PyExc_ValueError,
				"no such layer slice: nr_layers 0 or not "
				"dividing page_bytes, layer or page out of "
				"range, or an unknown layout");
		return -1;
	}
	*len = self->v.page_bytes / nr_layers;
	return 0;
}

PyDoc_STRVAR(kvp_arena_layer_doc,
"layer($self, /, nr_layers, layer, page, layout=0)\n--\n\n"
"Layer layer's slice (page_bytes // nr_layers bytes) of page id page,\n"
"for an engine of nr_layers layers laid out as layout (the default, 0,\n"
"is LAYOUT_PAGE_MAJOR) (kvpool_layer_addr), writable (host arenas). ValueError for a slice\n"
"that does not exist.\n\n"
"Returns memoryview.");

static PyObject *kvp_arena_layer(kvp_arena *self, PyObject *args,
				 PyObject *kw)
{
	uint64_t len;
	char *addr;

	if (!kvp_arena_host(self) ||
	    kvp_arena_layer_args(self, args, kw, "O&O&O&|O&:layer", &addr,
				 &len))
		return NULL;
	return kvp_arena_slice(self, addr - (char *)self->v.base, len);
}

PyDoc_STRVAR(kvp_arena_layer_ptr_doc,
"layer_ptr($self, /, nr_layers, layer, page, layout=0)\n--\n\n"
"The address of layer(...)'s slice (kvpool_layer_addr): CPU or device,\n"
"as page_ptr().");

static PyObject *kvp_arena_layer_ptr(kvp_arena *self, PyObject *args,
				     PyObject *kw)
{
	uint64_t len;
	char *addr;

	if (!kvp_arena_mapped(self) ||
	    kvp_arena_layer_args(self, args, kw, "O&O&O&|O&:layer_ptr", &addr,
				 &len))
		return NULL;
	return PyLong_FromVoidPtr(addr);
}

PyDoc_STRVAR(kvp_arena_numpy_doc,
"numpy($self, /, dtype='uint8')\n--\n\n"
"The whole host arena as a writable 1-D numpy array of dtype\n"
"(numpy.frombuffer), without a copy; it keeps the arena mapped.\n\n"
"Returns numpy.ndarray.");

static PyObject *kvp_arena_numpy(kvp_arena *self, PyObject *args,
				 PyObject *kw)
{
	static char *kwlist[] = { "dtype", NULL };
	PyObject *dtype = NULL, *np, *r;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "|O:numpy", kwlist, &dtype))
		return NULL;
	if (!kvp_arena_host(self))
		return NULL;
	np = PyImport_ImportModule("numpy");
	if (!np)
		return NULL;
	if (dtype)
		r = PyObject_CallMethod(np, "frombuffer", "OO", self, dtype);
	else
		r = PyObject_CallMethod(np, "frombuffer", "Os", self, "uint8");
	Py_DECREF(np);
	return r;
}

/* The DLPack device of the arena: (device_type, device_id). */
static struct kvp_dl_device kvp_arena_dl_device(kvp_arena *self)
{
	struct kvp_dl_device d = { KVP_DL_CPU, 0 };

	if (self->v.kind == KVPOOL_ARENA_CUDA) {
		d.device_type = KVP_DL_CUDA;
		d.device_id = (int32_t)self->v.__resv[KVP_VIEW_DEVICE];
	}
	return d;
}

PyDoc_STRVAR(kvp_arena_dlpack_device_doc,
"__dlpack_device__($self, /)\n--\n\n"
"DLPack's device of the arena: (1, 0) (kDLCPU) for a host arena,\n"
"(2, ordinal) (kDLCUDA, the CUDA device) for a CUDA one.\n\n"
"Returns (int, int).");

static PyObject *kvp_arena_dlpack_device(kvp_arena *self, PyObject *unused)
{
	struct kvp_dl_device d;

	(void)unused;
	if (!kvp_arena_mapped(self))
		return NULL;
	d = kvp_arena_dl_device(self);
	return Py_BuildValue("(ii)", d.device_type, d.device_id);
}

/* DLManagedTensor.deleter: the consumer is done; any thread. */
static void kvp_dl_deleter(struct kvp_dl_managed *m)
{
	kvp_arena *self = m->manager_ctx;
	PyGILState_STATE g;

	/* A consumer freeing it after the interpreter is gone: leak it. */
	if (!Py_IsInitialized())
		return;
	g = PyGILState_Ensure();
	self->exports--;
	Py_DECREF(self);
	PyGILState_Release(g);
	PyMem_RawFree(m);
}

/* A capsule dropped unconsumed still owns its tensor. */
static void kvp_dl_capsule_free(PyObject *cap)
{
	struct kvp_dl_managed *m;

	if (!PyCapsule_IsValid(cap, KVP_DL_NAME))
		return;
	m = PyCapsule_GetPointer(cap, KVP_DL_NAME);
	if (m && m->deleter)
		m->deleter(m);
}

PyDoc_STRVAR(kvp_arena_dlpack_doc,
"__dlpack__($self, /, *, stream=None, max_version=None, dl_device=None, "
"copy=None)\n--\n\n"
"The arena as a DLPack tensor of nbytes uint8, without a copy, in a\n"
"legacy \"dltensor\" capsule (DLManagedTensor), for numpy.from_dlpack,\n"
"torch.from_dlpack, CuPy. The tensor keeps the arena mapped until its\n"
"consumer frees it. stream is accepted and ignored (the arena has no\n"
"pending work); copy=True, or a dl_device other than\n"
"__dlpack_device__(), is a BufferError.\n\n"
"Returns PyCapsule.");

static PyObject *kvp_arena_dlpack(kvp_arena *self, PyObject *args,
				  PyObject *kw)
{
	static char *kwlist[] = { "stream", "max_version", "dl_device",
				  "copy", NULL };
	PyObject *stream = Py_None, *maxv = Py_None, *dev = Py_None;
	PyObject *copy = Py_None, *cap;
	struct kvp_dl_export *e;
	struct kvp_dl_device d;
	int want_type, want_id;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "|$OOOO:__dlpack__", kwlist,
					 &stream, &maxv, &dev, &copy))
		return NULL;
	if (!kvp_arena_mapped(self))
		return NULL;
	d = kvp_arena_dl_device(self);
	if (copy == Py_True) {
		PyErr_SetString(PyExc_BufferError,
				"the arena is exported in place, never copied");
		return NULL;
	}
	if (dev != Py_None) {
		if (!PyArg_ParseTuple(dev, "ii;dl_device: (type, id)",
				      &want_type, &want_id))
			return NULL;
		if (want_type != d.device_type || want_id != d.device_id) {
			PyErr_Format(PyExc_BufferError,
				     "the arena is on device (%d, %d)",
				     d.device_type, d.device_id);
			return NULL;
		}
	}
	e = PyMem_RawCalloc(1, sizeof(*e));
	if (!e)
		return PyErr_NoMemory();
	e->shape[0] = (int64_t)self->v.bytes;
	e->m.dl_tensor.data = self->v.base;
	e->m.dl_tensor.device = d;
	e->m.dl_tensor.ndim = 1;
	e->m.dl_tensor.dtype.code = KVP_DL_UINT;
	e->m.dl_tensor.dtype.bits = 8;
	e->m.dl_tensor.dtype.lanes = 1;
	e->m.dl_tensor.shape = e->shape;
	e->m.manager_ctx = self;
	e->m.deleter = kvp_dl_deleter;
	cap = PyCapsule_New(&e->m, KVP_DL_NAME, kvp_dl_capsule_free);
	if (!cap) {
		PyMem_RawFree(e);
		return NULL;
	}
	Py_INCREF(self);
	self->exports++;
	return cap;
}

static PyObject *kvp_arena_cai(kvp_arena *self, void *unused)
{
	(void)unused;
	if (self->v.kind != KVPOOL_ARENA_CUDA) {
		/* So that hasattr() says no for host memory. */
		PyErr_SetString(PyExc_AttributeError,
				"__cuda_array_interface__: not a CUDA arena");
		return NULL;
	}
	if (!kvp_arena_mapped(self))
		return NULL;
	return Py_BuildValue("{s:i,s:(K),s:s,s:(NO),s:O,s:O}",
			     "version", 3,
			     "shape", (unsigned long long)self->v.bytes,
			     "typestr", "|u1",
			     "data", PyLong_FromVoidPtr(self->v.base), Py_False,
			     "strides", Py_None,
			     "stream", Py_None);
}

static PyObject *kvp_arena_get_ptr(kvp_arena *self, void *unused)
{
	(void)unused;
	return PyLong_FromVoidPtr(self->v.base);
}

/* The view's integer fields, by offset. */
static PyObject *kvp_arena_get_u64(kvp_arena *self, void *off)
{
	const char *p = (const char *)&self->v + (uintptr_t)off;
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return PyLong_FromUnsignedLongLong(v);
}

static PyObject *kvp_arena_get_u32(kvp_arena *self, void *off)
{
	const char *p = (const char *)&self->v + (uintptr_t)off;
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return PyLong_FromUnsignedLong(v);
}

static PyObject *kvp_arena_get_closed(kvp_arena *self, void *unused)
{
	(void)unused;
	return PyBool_FromLong(!self->v.base);
}

static PyObject *kvp_arena_get_exports(kvp_arena *self, void *unused)
{
	(void)unused;
	return PyLong_FromSsize_t(self->exports);
}

static PyObject *kvp_arena_repr(kvp_arena *self)
{
	if (!self->v.base)
		return PyUnicode_FromString("<kvpool.Arena closed>");
	return PyUnicode_FromFormat("<kvpool.Arena %s %llu bytes, %u pages of %llu at %p>",
				    self->v.kind == KVPOOL_ARENA_CUDA ?
				    "cuda" : "host",
				    (unsigned long long)self->v.bytes,
				    self->v.nr_pages,
				    (unsigned long long)self->v.page_bytes,
				    self->v.base);
}

#define KVP_VIEW_OFF(f)	((void *)offsetof(struct kvpool_arena_view, f))

static PyGetSetDef kvp_arena_getset[] = {
	{ "kind", (getter)kvp_arena_get_u32, NULL,
	  "ARENA_HOST or ARENA_CUDA (0 once closed).", KVP_VIEW_OFF(kind) },
	{ "ptr", (getter)kvp_arena_get_ptr, NULL,
	  "Where the arena starts: a CPU address, or a CUDA device address "
	  "(0 once closed).", NULL },
	{ "nbytes", (getter)kvp_arena_get_u64, NULL,
	  "The mapping's length in bytes.", KVP_VIEW_OFF(bytes) },
	{ "page_bytes", (getter)kvp_arena_get_u64, NULL,
	  "Bytes of one page.", KVP_VIEW_OFF(page_bytes) },
	{ "nr_pages", (getter)kvp_arena_get_u32, NULL,
	  "The pool's pages: ids 0..nr_pages-1.", KVP_VIEW_OFF(nr_pages) },
	{ "nr_chunks", (getter)kvp_arena_get_u32, NULL,
	  "The files the arena is made of.", KVP_VIEW_OFF(nr_chunks) },
	{ "closed", (getter)kvp_arena_get_closed, NULL,
	  "True once unmapped.", NULL },
	{ "exports", (getter)kvp_arena_get_exports, NULL,
	  "Views (buffers, DLPack tensors) alive; close() needs 0.", NULL },
	{ "__cuda_array_interface__", (getter)kvp_arena_cai, NULL,
	  "CUDA arenas: the CUDA Array Interface (version 3) of the whole "
	  "arena as nbytes uint8; absent for host arenas.", NULL },
	{ NULL, NULL, NULL, NULL, NULL },
};

#define KVP_KW	(METH_VARARGS | METH_KEYWORDS)

/* Method @n: kvp_arena_@f() and kvp_arena_@f_doc. */
#define KVP_M(n, f, flags) \
	{ n, KVP_METH(kvp_arena_##f), flags, kvp_arena_##f##_doc }

static PyMethodDef kvp_arena_methods[] = {
	KVP_M("close", close, METH_NOARGS),
	{ "__enter__", KVP_METH(kvp_arena_enter), METH_NOARGS,
	  kvp_arena_enter_doc },
	{ "__exit__", KVP_METH(kvp_arena_exit), METH_VARARGS,
	  kvp_arena_exit_doc },
	KVP_M("page", page, METH_O),
	KVP_M("page_ptr", page_ptr, METH_O),
	KVP_M("layer", layer, KVP_KW),
	KVP_M("layer_ptr", layer_ptr, KVP_KW),
	KVP_M("numpy", numpy, KVP_KW),
	KVP_M("__dlpack__", dlpack, KVP_KW),
	KVP_M("__dlpack_device__", dlpack_device, METH_NOARGS),
	{ NULL, NULL, 0, NULL },
};

static PyBufferProcs kvp_arena_buffer = {
	.bf_getbuffer = (getbufferproc)kvp_arena_getbuffer,
	.bf_releasebuffer = (releasebufferproc)kvp_arena_releasebuffer,
};

PyDoc_STRVAR(kvp_arena_doc,
"A pool's arena mapped into this process (Pool.map_arena()).\n\n"
"Host arena: a writable buffer of nbytes bytes (memoryview(arena),\n"
"numpy.frombuffer(arena), arena.numpy()), page(i) and layer(...)\n"
"memoryviews. CUDA arena: no CPU buffer (BufferError);\n"
"__cuda_array_interface__, and page_ptr()/layer_ptr() device\n"
"addresses. Both: __dlpack__/__dlpack_device__, kind, ptr, nbytes,\n"
"page_bytes, nr_pages, nr_chunks. Stays mapped after its Pool is\n"
"closed, until close() (a context manager), which raises BufferError\n"
"while a view is alive.");

PyTypeObject kvp_arena_type = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "kvpool.Arena",
	.tp_basicsize = sizeof(kvp_arena),
	.tp_dealloc = (destructor)kvp_arena_dealloc,
	.tp_repr = (reprfunc)kvp_arena_repr,
	.tp_as_buffer = &kvp_arena_buffer,
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = kvp_arena_doc,
	.tp_weaklistoffset = offsetof(kvp_arena, weakrefs),
	.tp_methods = kvp_arena_methods,
	.tp_getset = kvp_arena_getset,
};
