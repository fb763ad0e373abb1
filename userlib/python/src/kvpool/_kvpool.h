/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
/*
 * _kvpool: the C half of the Python package kvpool, over libkvpool.
 *
 * What the parts of the extension share: _kvpool.c has the module, its
 * errors, named tuples and functions; _pool.c the Pool type; _arena.c the
 * Arena type and DLPack.
 */
#ifndef KVPOOL_PY_KVPOOL_H
#define KVPOOL_PY_KVPOOL_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <kvpool.h>

/*
 * A handle int is the bytes of struct kvpool_handle read as a
 * little-endian u64, so arrays of them go to the kernel as they are.
 */
#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "kvpool's handle ints are struct kvpool_handle on a little-endian CPU"
#endif

/* Cast a method of another signature for a PyMethodDef. */
#define KVP_METH(f)	((PyCFunction)(void (*)(void))(f))

/* The named tuples, one per kernel answer. */
enum kvp_tuple_id {
	KVP_T_INFO,
	KVP_T_STATS,
	KVP_T_ROWINFO,
	KVP_T_PRESSURE,
	KVP_T_VERIFY,
	KVP_T_ARENAINFO,
	KVP_T_TENANT,
	KVP_T_NR,
};

/*
 * A new named tuple of kind @id from the struct at @src. Fields that do
 * not come from the struct (RowInfo.pages) are set to None.
 */
PyObject *kvp_tuple_new(enum kvp_tuple_id id, const void *src);

/* Set pending the exception of libkvpool's -errno @err; returns NULL. */
PyObject *kvp_error(int err, const struct kvpool_batch_result *res);
/* The same for an arena call, with kvpool_arena_error()'s words. */
PyObject *kvp_arena_error(int err, const struct kvpool_batch_result *res);

/*
 * A new zeroed array of @n integers of @width bytes (4: uint32, 8:
 * uint64), numpy's if it imports, else array.array's; *@data gets its
 * memory.
 */
PyObject *kvp_array_new(int width, Py_ssize_t n, void **data);
/*
 * Import what kvp_array_new() uses, so that it runs no Python code later
 * (it is called with a Pool's lock held). False with an exception set.
 */
bool kvp_array_ready(void);

/*
 * A 1-D, C-contiguous buffer of integers of one width, taken from an
 * argument with kvp_arr_get() and given back with kvp_arr_put().
 */
struct kvp_arr {
	Py_buffer view;
	Py_ssize_t n;
	bool is_signed;
	bool held;
};

int kvp_arr_get(PyObject *o, const char *what, int width, bool writable,
		struct kvp_arr *a);
void kvp_arr_put(struct kvp_arr *a);

/*
 * The arguments of a METH_FASTCALL | METH_KEYWORDS method, given by
 * position or by name, to @out[0..n-1], NULL for those not given: @names
 * are its @n parameters, the first @nreq required.
 */
int kvp_fast_args(const char *fname, PyObject *const *args, Py_ssize_t nargs,
		  PyObject *kwnames, const char *const *names, int n, int nreq,
		  PyObject **out);

/* A handle (int) or a session id (int) argument, for "O&". */
int kvp_handle_conv(PyObject *o, void *out);
int kvp_u64_conv(PyObject *o, void *out);
int kvp_u32_conv(PyObject *o, void *out);

extern PyTypeObject kvp_pool_type;
extern PyTypeObject kvp_arena_type;

/* A new Arena owning the mapping in *@v. */
PyObject *kvp_arena_new(const struct kvpool_arena_view *v);

/* _kvpool._c_decode_steps() */
PyObject *kvp_c_decode_steps(PyObject *mod, PyObject *args);

#endif /* KVPOOL_PY_KVPOOL_H */
