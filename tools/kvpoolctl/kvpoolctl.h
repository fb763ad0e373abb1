/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * kvpoolctl's shared declarations: exit codes, the output layer's
 * types, a pool and a tenant as the commands read them, and what each
 * file gives the others. main.c dispatches to one file per command
 * (status.c, metrics.c, ...), which share common.c (errors, parsing,
 * cgroups, PCI), pools.c (reading pools and tenants), output.c
 * (tables as CSV and JSON, and the columns) and table.c (tables as
 * text, through libsmartcols).
 *
 * Copyright (C) 2026 The kvpool authors
 */
#ifndef KVPOOLCTL_H
#define KVPOOLCTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <kvpool.h>

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#define __printf(a, b)	__attribute__((format(printf, a, b)))

/* Exit codes; kvpoolctl(8) documents them, keep the two in step. */
enum {
	EXIT_OK = 0,
	EXIT_VIOLATIONS = 1,	/* verify found broken invariants */
	EXIT_USAGE = 2,		/* bad command line */
	EXIT_NOT_LOADED = 3,	/* the kvpool module is not loaded */
	EXIT_NO_POOL = 4,	/* no such pool */
	EXIT_PERM = 5,		/* permission denied: needs root */
	EXIT_BUSY = 6,		/* the pool has clients */
	EXIT_FAIL = 7,		/* any other error */
	EXIT_NO_DRIVER = 8,	/* no CUDA driver: libcuda.so.1 not loadable */
};

/* Why parse_scaled() refused a number. */
enum { NUM_OK, NUM_SYNTAX, NUM_RANGE };

/* A cgroup id to resolve to a path, and where its path goes. */
struct cg_want {
	__u64 id;
	char *path;		/* malloc()ed; NULL: not found */
};

/* ---- tables: aligned text, CSV, -o columns ---- */

/*
 * A table's column: its heading in text, its key (the JSON key, and the
 * name -o and CSV use), whether text left-aligns it and shows it without
 * -o, and whether it counts pages (--units converts it).
 */
struct colspec {
	const char *head;
	const char *key;
	bool left;
	bool dflt;
	bool pages;
	/*
	 * A name-like column (a cgroup, a label, a command) that text on
	 * a terminal too narrow cuts with an ellipsis: this percentage of
	 * the room before the ellipsis, the rest after it (100: cut at the
	 * end; 33: a path keeps its last part, as systemd-cgtop cuts it).
	 * 0: never cut.
	 */
	int ellipsize;
	/* A heading over a run of columns ("pages"), or NULL. */
	const char *group;
};

/*
 * What a cell holds: a number, a string, a limit (0: none), a yes or no
 * (num 0 or 1), or nothing.
 */
enum { CK_NUM, CK_STR, CK_LIMIT, CK_BOOL, CK_NULL };

struct cell {
	int kind;
	unsigned long long num;
	const char *str;	/* CK_STR: not owned */
};

/* Page counts as pages, tokens or bytes (--units). */
enum { UNIT_PAGES, UNIT_TOKENS, UNIT_BYTES };

/* How a table command writes its table. */
struct outfmt {
	bool json, csv;
	bool raw;		/* text: no alignment, one space apart */
	bool noheadings;	/* text: no heading line */
	int width;		/* text: cells a line may take; 0: the terminal's */
	int keys;		/* text: columns a fold repeats; 0: the first */
	int units;
	const char *cols;	/* -o, or NULL: the default columns */
	int sel[64];		/* the columns to write, in order */
	size_t nsel;
};

/* ---- tenant tables ---- */

/*
 * A tenant as the tables show it: what KVPOOL_CTL_TENANT_LIST says of it,
 * its cgroup's path (NULL: not found), and whether it is only what
 * KVPOOL_STATS tells a client of its own tenant (own: no label, flags,
 * cache pages, clients or ask).
 */
struct tenant_row {
	struct kvpool_tenant_info t;
	const char *cgroup;
	bool own;
	char label[KVPOOL_LABEL_LEN + 1];
};

/*
 * The tenant tables' columns, in JSON's order. A column is added here
 * and in tenant_cells(); the text table shows those marked dflt.
 */
enum {
	TC_ID, TC_UID, TC_BY_PATH, TC_CONFIGURED, TC_CGROUP_ID, TC_CGROUP,
	TC_LABEL, TC_PAGES, TC_CACHE, TC_ROWS, TC_CLIENTS, TC_MAX, TC_MIN,
	TC_MAXROWS, TC_ASK, TC_NR
};

/* A cgroup's id as text, when its path was not found. */
struct tenant_scratch {
	char cgroup_id[24];
};

#define PCI_NAME_LEN	24	/* "ffffffff:ff:1f.7" and a NUL fit */
#define PCI_CLASS_DISPLAY	0x03	/* the base class of a GPU */

/*
 * Where gpus looks: sysfs's PCI devices and the folder where NVIDIA's
 * driver lists its GPUs, with or without nvidia-drm. tools/Makefile's
 * check builds a copy that looks in a fake tree instead, and not at
 * libdrm's devices, which would be the host's.
 */
#ifdef KVPOOLCTL_FAKE_ROOT
#define PCI_DEVICES	KVPOOLCTL_FAKE_ROOT "/sys/bus/pci/devices"
#define NVIDIA_GPUS	KVPOOLCTL_FAKE_ROOT "/proc/driver/nvidia/gpus"
#define GPUS_FROM_DRM	false
#else
#define PCI_DEVICES	"/sys/bus/pci/devices"
#define NVIDIA_GPUS	"/proc/driver/nvidia/gpus"
#define GPUS_FROM_DRM	true
#endif

/* ---- pools ---- */

/* A pool as status, metrics and top show it (pools.c reads it). */
struct pool_row {
	unsigned int id;
	struct kvpool_info info;
	struct kvpool_stats st;
	/* Added with tenants and pressure; a module before them lacks them. */
	bool has_tenants;
	struct kvpool_pool_extra x;
	/* st.out_quarantine_pages: ABI 2's sysfs file is there. */
	bool has_quarantine;
	/* The GPU it was made for, as sysfs names it; "" if none. */
	char gpu[PCI_NAME_LEN];
	/*
	 * ABI 4: the chunk budget it is on and the chunks it holds now
	 * (sysfs budget and chunks); on_budget is false for a pool on none
	 * (budget -1) and under a module before budgets (no such file).
	 */
	bool on_budget;
	unsigned int budget;
	unsigned int chunks;
	/*
	 * Its tenants: all of them (KVPOOL_CTL_TENANT_LIST, CAP_SYS_ADMIN),
	 * or only the caller's own (KVPOOL_STATS through the pool's file,
	 * for a user who may open it), or none; tenant_note says why not
	 * all, tenant_err holds the errno of a failed list.
	 */
	int tenants_shown;
	int tenant_err;
	char tenant_note[320];
	struct tenant_row *trows;
	size_t nr_trows;
	char **cgroups;
	/* Per page, for --units: tokens, or bytes (0: no arena, unknown). */
	unsigned long long page_bytes;
	unsigned long long factor;
};

enum { TENANTS_ALL, TENANTS_OWN, TENANTS_NONE };

static const char *const tenants_shown_names[] = {
	[TENANTS_ALL] = "all", [TENANTS_OWN] = "own", [TENANTS_NONE] = "none",
};

#define ROW_FIELD(f)	offsetof(struct pool_row, f)

/* ---- clients ---- */

/*
 * A client (an open file of a pool), from /proc/PID/fdinfo/FD, which the
 * module fills in: one row per (pool, client id), with the first process
 * found holding it and how many descriptors (in any process) name it.
 */
struct client_row {
	unsigned int pool, client, tenant, rows, slots, pages, cache;
	unsigned int pid, nr_fds;
	char comm[20];
};

struct client_list {
	struct client_row *v;
	size_t nr, alloc;
};

/* A subcommand of "tenant" or "arena". */
struct subcommand {
	const char *name;
	int (*fn)(int argc, char **argv);
};

/*
 * Usage text of each command. Its synopsis is the lines up to the first
 * indented one: "tenant" has two.
 */

/* common.c */
extern const char *prog;
void __printf(1, 2) err_msg(const char *fmt, ...);
bool module_loaded(void);
int not_loaded(void);
void dev_owner(const char *path, char *buf, size_t len);
int denied_open(const char *what, const char *path);
int pool_error(int err, const char *what, int pool);
bool parse_decimal(const char *s, unsigned long long *v, char **end);
int parse_scaled(const char *s, unsigned long long max,
		 unsigned long long *out);
int parse_u32(const char *s, unsigned int *out);
bool parse_pool(const char *s, unsigned int *id);
int bad_pool(const char *s);
void bad_number(const char *name, const char *arg, int why,
		unsigned long long max);
bool parse_count_opt(const char *name, const char *arg,
		     unsigned int *out);
int synopsis_line(const char *u);
int usage_of(const char *text, FILE *f);
int parse_simple(int argc, char **argv, const char *usage, bool *json,
		 bool *done);
int parse_one_pool(int argc, char **argv, const char *usage,
		   bool *json, unsigned int *id, bool *done);
const char *cgroup_root(void);
void resolve_cgroups(struct cg_want *wants, size_t nr);
int cgroup_rel_of(const char *path, char **out);
void pci_name(char *buf, size_t len, uint32_t domain, uint32_t devid);
int pci_attr_hex(const char *addr, const char *name, unsigned int *v);
void pool_gpu_name(unsigned int id, char *buf, size_t len);
int ctl_error(int err, const char *what, unsigned int id,
	      const char *feature);
int run_subcommand(int argc, char **argv, const char *usage,
		   const struct subcommand *sub, size_t nr);

/* output.c */
void json_string_or_null(const char *s);
int select_columns(struct outfmt *o, const struct colspec *cols,
		   size_t ncols);
struct cell page_cell(unsigned long long pages, int kind,
		      unsigned long long factor);
void put_table_to(FILE *f, const struct colspec *cols, size_t ncols,
		  const struct cell *cells, size_t nrows,
		  const struct outfmt *o, int indent);
void put_table(const struct colspec *cols, size_t ncols,
	       const struct cell *cells, size_t nrows,
	       const struct outfmt *o, int indent);
void put_json_object(const struct colspec *cols, size_t ncols,
		     const struct cell *row, int indent);
extern const struct colspec tenant_cols[TC_NR];
void tenant_cells(struct tenant_row *r, struct cell *c,
		  unsigned long long factor, bool json,
		  struct tenant_scratch *scr);
void print_tenants_as(struct tenant_row *rows, size_t nr,
		      const struct outfmt *o, unsigned long long factor,
		      int indent);
int parse_table_opts(int argc, char **argv, const char *usage,
		     struct outfmt *o, bool *done);
int parse_table_pool(int argc, char **argv, const char *usage,
		     struct outfmt *o, const struct colspec *cols,
		     size_t ncols, unsigned int *id, bool *given, bool *done);
/*
 * The end of the usage text of a command of one table (tenant list,
 * clients): the help of parse_table_opts()'s options, said once for
 * both. status words its own, for its several tables.
 */
#define TABLE_OPTS_HELP \
	"    -j, --json   one JSON object\n" \
	"    --csv        comma-separated values, a line of column keys first\n" \
	"    -o COLS      these columns, in this order (keys or headings)\n" \
	"    --units U    page counts in pages (default), tokens or bytes\n" \
	"    -r, --raw    the text table unaligned and uncut, one space apart\n" \
	"    -n, --noheadings  the text table without its heading line\n"

/* table.c */
const char *cell_text(const struct cell *c, char *buf, size_t len);
size_t text_cells(const char *s);
size_t text_fit(const char *s, size_t len, size_t cells);
int put_text(FILE *f, const struct colspec *cols, size_t ncols,
	     const struct cell *cells, size_t nrows,
	     const struct outfmt *o, int indent);

/* pools.c */
int fetch_tenants(unsigned int id, struct kvpool_tenant_info **out,
		  size_t *nr, char **paths);
char **tenant_cgroups(const struct kvpool_tenant_info *t, size_t nr,
		      const char *kpaths);
void free_strings(char **v, size_t nr);
int select_pools(const char *arg, unsigned int **ids, size_t *nr);
struct tenant_row *tenant_rows(struct kvpool_tenant_info *t,
			       char **cgroups, size_t nr);
unsigned long long pool_sysfs_u64(unsigned int id, const char *file);
void read_pool_budget(unsigned int id, bool *on, unsigned int *budget,
		      unsigned int *chunks);
void pool_arena_bytes(unsigned int id, unsigned long long *page,
		      unsigned long long *total);
void pool_units(struct pool_row *r, int units);
int collect_pools(const char *arg, int units, struct pool_row **out,
		  size_t *nrows);
void free_pools(struct pool_row *rows, size_t nr);

/* status.c */
extern const char usage_status[];
int cmd_status(int argc, char **argv);

/* metrics.c */
extern const char usage_metrics[];
int cmd_metrics(int argc, char **argv);

/* clients.c */
int find_clients(struct client_list *l, int pool);
extern const char usage_clients[];
int cmd_clients(int argc, char **argv);

/* top.c */
extern const char usage_top[];
int cmd_top(int argc, char **argv);

/* info.c */
extern const char usage_info[];
const char *arena_kind(__u32 kind);
int open_pool(unsigned int id, struct kvpool **kpp);
int open_one_pool(int argc, char **argv, const char *usage, bool *json,
		  unsigned int *id, struct kvpool **kpp,
		  struct kvpool_info *in, bool *done);
int cmd_info(int argc, char **argv);

/* verify.c */
extern const char usage_verify[];
int cmd_verify(int argc, char **argv);

/* pool.c */
extern const char usage_create[];
extern const char usage_destroy[];
int cmd_create(int argc, char **argv);
int cmd_destroy(int argc, char **argv);

/* tenant.c */
extern const char usage_tenant[];
int cmd_tenant(int argc, char **argv);

/* wmark.c */
extern const char usage_wmark[];
int cmd_wmark(int argc, char **argv);

/* arena.c */
extern const char usage_arena[];
int cmd_arena(int argc, char **argv);

/* budget.c */
extern const char usage_budget[];
bool parse_budget(const char *s, unsigned int *id);
int cmd_budget(int argc, char **argv);

/* gpus.c */
extern const char usage_gpus[];
int cmd_gpus(int argc, char **argv);

#endif /* KVPOOLCTL_H */
