// SPDX-License-Identifier: GPL-2.0-only
/*
 * kvpoolctl: show, check, create and destroy kvpool pools, set their
 * tenants' limits and pressure watermarks, give them arenas, and list the
 * GPUs pools can be made for.
 *
 * Copyright (C) 2026 The kvpool authors
 *
 * status reads sysfs and never opens a pool, so it works as any user and
 * never keeps a pool from being destroyed (as root it also lists tenants
 * through /dev/kvpool-control); info and verify open the pool (becoming a
 * client for the moment), as arena show does; create, destroy, tenant,
 * wmark and arena create go through /dev/kvpool-control. gpus reads
 * libdrm's device list, /proc/driver/nvidia and sysfs, as any user, and
 * needs no module. See kvpoolctl(8) for the exit codes.
 */
#define _GNU_SOURCE		/* asprintf(), nftw() */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#include <kvpool.h>
#include <xf86drm.h>

#include "text.h"

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

static const char *prog = "kvpoolctl";

static void __printf(1, 2) err_msg(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/*
 * The module is loaded when its control device or its device class
 * (/sys/class/kvpool, which kvpool_pool_list() reads) is there; the class
 * is there with no pool too (a module loaded with nr_pages=0).
 */
static bool module_loaded(void)
{
	return !access(KVPOOL_CONTROL_PATH, F_OK) ||
	       kvpool_pool_list(NULL, 0) >= 0;
}

static int not_loaded(void)
{
	err_msg("kvpool module is not loaded (insmod kvpool.ko)");
	return EXIT_NOT_LOADED;
}

/*
 * Who may open device @path, as "mode 0600, root:root", into @buf; why
 * not, if it cannot even be looked at.
 */
static void dev_owner(const char *path, char *buf, size_t len)
{
	struct passwd *pw;
	struct group *gr;
	struct stat st;

	if (stat(path, &st)) {
		snprintf(buf, len, "%s", strerror(errno));
		return;
	}
	pw = getpwuid(st.st_uid);
	gr = getgrgid(st.st_gid);
	snprintf(buf, len, "mode %04o, owner %s:%s", st.st_mode & 07777,
		 pw ? pw->pw_name : "?", gr ? gr->gr_name : "?");
}

/*
 * EACCES from open() of device @path for @what: the file's permissions
 * keep this user out (CAP_SYS_ADMIN is not asked at open).
 */
static int denied_open(const char *what, const char *path)
{
	char owner[160];

	dev_owner(path, owner, sizeof(owner));
	err_msg("%s: cannot open %s: permission denied (%s; you are uid %u): the device's permissions keep you out%s",
		what, path, owner, (unsigned int)geteuid(),
		strcmp(path, KVPOOL_CONTROL_PATH) ?
		" (tools/udev/60-kvpool.rules opens pools to the kvpool group)" :
		" (it is root's only)");
	return EXIT_PERM;
}

/*
 * Report @err from @what on pool @pool (-1: no pool involved) and map it to
 * an exit code. @what is an operation through /dev/kvpool-control, or a
 * read of sysfs; pool files are opened by open_pool(), which says what it
 * can itself first. ENODEV and ENOENT mean the pool (or the module, or
 * a device node) is not there; which one is told apart here, after the
 * fact. EACCES is open() of the control device refused by its
 * permissions, EPERM the kernel refusing the operation without
 * CAP_SYS_ADMIN.
 */
static int pool_error(int err, const char *what, int pool)
{
	switch (-err) {
	case ENODEV:
	case ENOENT:
		if (!module_loaded())
			return not_loaded();
		/* ENOENT: open() of the control device found no node. */
		if (err == -ENOENT && access(KVPOOL_CONTROL_PATH, F_OK)) {
			err_msg("%s: %s does not exist, though the kvpool module is loaded (no devtmpfs, or udev has not made it?)",
				what, KVPOOL_CONTROL_PATH);
			return EXIT_FAIL;
		}
		if (pool >= 0) {
			err_msg("no such pool: %d (kvpoolctl status lists them)",
				pool);
			return EXIT_NO_POOL;
		}
		break;
	case EACCES:
		return denied_open(what, KVPOOL_CONTROL_PATH);
	case EPERM:
		err_msg("%s: operation not permitted: needs CAP_SYS_ADMIN (the kernel refused it; %s itself could be opened)",
			what, KVPOOL_CONTROL_PATH);
		return EXIT_PERM;
	case EBUSY:
		err_msg("%s: pool %d has clients or open export files; stop them first (fuser -v /dev/kvpool%d)",
			what, pool, pool);
		return EXIT_BUSY;
	}
	err_msg("%s: %s", what, kvpool_strerror(err));
	return EXIT_FAIL;
}

/*
 * The decimal at the start of @s into *@v, *@end past it. It must start
 * with a digit: strtoull() alone would take a sign or blanks (and "-1" as
 * ULLONG_MAX).
 */
static bool parse_decimal(const char *s, unsigned long long *v, char **end)
{
	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	*v = strtoull(s, end, 10);
	return !errno;
}

/* Why parse_scaled() refused a number. */
enum { NUM_OK, NUM_SYNTAX, NUM_RANGE };

/*
 * Parse a number: decimal, optionally followed by K, M or G (times 1024,
 * 1024^2, 1024^3), at most @max. Returns NUM_OK, NUM_SYNTAX (not such a
 * number) or NUM_RANGE (one, but past @max). The kernel checks the
 * ranges of what it is given.
 */
static int parse_scaled(const char *s, unsigned long long max,
			unsigned long long *out)
{
	unsigned long long v, mul = 1;
	char *end;

	if (*s < '0' || *s > '9')
		return NUM_SYNTAX;
	errno = 0;
	v = strtoull(s, &end, 10);
	switch (*end) {
	case 'k': case 'K':
		mul = 1ULL << 10;
		end++;
		break;
	case 'm': case 'M':
		mul = 1ULL << 20;
		end++;
		break;
	case 'g': case 'G':
		mul = 1ULL << 30;
		end++;
		break;
	}
	if (*end)
		return NUM_SYNTAX;
	/* strtoull()'s ERANGE: digits past ULLONG_MAX. */
	if (errno || v > max / mul)
		return NUM_RANGE;
	*out = v * mul;
	return NUM_OK;
}

/* A count: parse_scaled() up to UINT32_MAX. */
static int parse_u32(const char *s, unsigned int *out)
{
	unsigned long long v;
	int ret;

	ret = parse_scaled(s, UINT32_MAX, &v);
	if (ret == NUM_OK)
		*out = (unsigned int)v;
	return ret;
}

/* POOL on the command line: "N", "kvpoolN" or "/dev/kvpoolN". */
static bool parse_pool(const char *s, unsigned int *id)
{
	if (!strncmp(s, "/dev/", 5))
		s += 5;
	if (!strncmp(s, "kvpool", 6))
		s += 6;
	/* No suffix here: "kvpool1k" is no pool. */
	return *s >= '0' && *s <= '9' && !strpbrk(s, "kKmMgG") &&
	       parse_u32(s, id) == NUM_OK && *id <= INT_MAX;
}

static int bad_pool(const char *s)
{
	err_msg("not a pool: '%s' (want N, kvpoolN or /dev/kvpoolN)", s);
	return EXIT_USAGE;
}

/* Say why number @arg of option --@name, up to @max, was refused. */
static void bad_number(const char *name, const char *arg, int why,
		       unsigned long long max)
{
	if (why == NUM_RANGE)
		err_msg("--%s: out of range: '%s' (at most %llu)", name, arg,
			max);
	else
		err_msg("--%s: not a number: '%s' (want N, NK, NM or NG)",
			name, arg);
}

/* The count @arg of option --@name into *@out, or false, said why. */
static bool parse_count_opt(const char *name, const char *arg,
			    unsigned int *out)
{
	int ret = parse_u32(arg, out);

	if (ret == NUM_OK)
		return true;
	bad_number(name, arg, ret, UINT32_MAX);
	return false;
}

/*
 * Usage text of each command. Its synopsis is the lines up to the first
 * indented one: "tenant" has two.
 */
static const char usage_status[] =
"status [--json] [POOL]\n"
"    Show every pool (or POOL): pages (prefix-cache pages evictable and\n"
"    pinned, pages of rows in flight as export files), rows, pressure\n"
"    watermarks, tenants and clients, from sysfs; as root also a table of\n"
"    each pool's tenants: use, limits and the pages they are asked back.\n"
"    Needs no privilege (but root for the tenants) and does not open the\n"
"    pool.\n"
"    -j, --json   one JSON object, the sysfs attribute names as keys\n";

static const char usage_info[] =
"info [--json] POOL\n"
"    Show POOL's geometry, ABI version and features (KVPOOL_INFO).\n"
"    Opens /dev/kvpoolN, which is root-only by default.\n"
"    -j, --json   one JSON object\n";

static const char usage_verify[] =
"verify [POOL]\n"
"    Check every invariant of POOL (default: every pool) with KVPOOL_VERIFY.\n"
"    Exits 1 if any is broken; the kernel log has one line for each.\n"
"    Needs root (CAP_SYS_ADMIN): the walk holds the whole pool's lock.\n";

static const char usage_create[] =
"create --pages N --page-tokens N --rows N --row-tokens N [--no-reserve-zero] [--gpu ADDR]\n"
"    Create a pool and print its id N (/dev/kvpoolN). Needs root.\n"
"    --pages N         pages in the pool, 1..134217728 (2^27)\n"
"    --page-tokens N   tokens per page, 1..65536\n"
"    --rows N          rows (requests), 1..1048576 (2^20)\n"
"    --row-tokens N    longest row in tokens, 1..16777216 (2^24)\n"
"    --no-reserve-zero hand out page 0 and row 0 too (by default they are\n"
"                      kept back as CUDA-graph padding)\n"
"    --gpu ADDR        make the pool for the GPU at PCI address ADDR, as\n"
"                      lspci prints it (0000:3b:00.0 or 3b:00.0); it must\n"
"                      be a display controller (kvpoolctl gpus lists them)\n"
"    Numbers take a K, M or G suffix (x1024, x1024^2, x1024^3).\n";

static const char usage_destroy[] =
"destroy POOL\n"
"    Destroy POOL. Refused while it has clients. Needs root.\n";

static const char usage_tenant[] =
"tenant set POOL (--cgroup PATH [--uid UID] | --cgroup-id N --uid UID)\n"
"           [LIMITS] [--label NAME]\n"
"tenant remove POOL (--cgroup PATH [--uid UID] | --cgroup-id N --uid UID |\n"
"                    --id ID)\n"
"tenant list [--json] POOL\n"
"    A client's tenant is chosen when it opens the pool, from its cgroup v2\n"
"    and uid: one set on that cgroup's id and uid; else one set on the path\n"
"    of that cgroup or its nearest ancestor (for the uid, then for every\n"
"    uid); else its own cgroup's, without limits. Needs root.\n"
"    set: give the tenant LIMITS, creating it if need be; print its id.\n"
"    --cgroup PATH     the cgroup by path, as /proc/PID/cgroup shows it\n"
"                      (/system.slice/x.service) or as a folder under\n"
"                      /sys/fs/cgroup; it need not exist yet. The limits\n"
"                      cover every cgroup below it and survive a restart\n"
"                      of the service (its cgroup made again)\n"
"    --cgroup-id N     the cgroup by id (the inode number of its folder):\n"
"                      this one cgroup, until it is removed\n"
"    --uid UID         the user, a number or a name; with --cgroup, left\n"
"                      out: every user\n"
"    --id ID           (remove) the tenant by id, as list shows it\n"
"    --label NAME      a name for status output, at most 31 bytes\n"
"    LIMITS, any of:\n"
"    --max PAGES       hard limit on the pages its clients hold\n"
"    --min PAGES       pages guaranteed to it: not free to other tenants\n"
"    --max-rows N      limit on the rows it holds, parked ones included\n"
"    Every limit not given is set to 0, none; the label is kept unless\n"
"    given. The pool's guarantees together may not exceed its pages.\n"
"    Numbers take a K, M or G suffix (x1024, x1024^2, x1024^3).\n"
"    remove: drop the tenant's limits. Nothing is taken: its clients keep\n"
"    it, unlimited, until they close, and new ones no longer join it.\n"
"    list: show the pool's tenants, their use and limits; UID * is every\n"
"    user, CGROUP a path the limits were set on or the cgroup of an id.\n"
"    -j, --json   one JSON object\n";

static const char usage_wmark[] =
"wmark POOL --low N --high N\n"
"    Set POOL's pressure watermarks: below --low free pages, clients are\n"
"    asked to evict prefix-cache pages until --high pages are free again.\n"
"    --low 0 turns that off. low <= high <= the pool's pages. Needs root.\n"
"    Numbers take a K, M or G suffix (x1024, x1024^2, x1024^3).\n";

static const char usage_arena[] =
"arena create POOL {--host|--cuda} --page-bytes N [--chunks N]\n"
"arena show [--json] POOL\n"
"    A pool's arena is the memory its page ids name: page i is bytes\n"
"    [i * page-bytes, (i + 1) * page-bytes) of it, in every process that\n"
"    maps it (libkvpool's kvpool_arena_map()).\n"
"    create: give POOL its arena, once: it stays until the pool is\n"
"    destroyed. Needs root.\n"
"    --host            host memory: sealed memfds, allocated page by page\n"
"                      as processes touch it\n"
"    --cuda            memory of the pool's GPU (a pool created with\n"
"                      --gpu), allocated at once with the CUDA driver\n"
"                      (libcuda.so.1, or $KVPOOL_LIBCUDA); chunks are\n"
"                      multiples of its allocation granularity too\n"
"    --page-bytes N    bytes of one page: every layer's K and V of the\n"
"                      pool's page-tokens tokens, 1..4G\n"
"    --chunks N        files the arena is made of, 1..256 (default 1)\n"
"    Numbers take a K, M or G suffix (x1024, x1024^2, x1024^3).\n"
"    show: the arena's kind (and for cuda the GPU), page size, length\n"
"    and chunks. Opens\n"
"    /dev/kvpoolN, as info does.\n"
"    -j, --json   one JSON object\n";

static const char usage_gpus[] =
"gpus [--json]\n"
"    List the host's GPUs, in PCI address order: PCI address, vendor and\n"
"    device ids, DRM render node, kernel driver, the pools made for each\n"
"    (create --gpu) and where it was found: drm (libdrm), nvidia\n"
"    (/proc/driver/nvidia/gpus) or pci (a display controller in sysfs\n"
"    that neither knows, e.g. with no driver). Needs no privilege and no\n"
"    kvpool module.\n"
"    -j, --json   one JSON array, an object a GPU\n";

/* The length of the synopsis line at @u, or 0 past the synopsis. */
static int synopsis_line(const char *u)
{
	if (!*u || *u == ' ')
		return 0;
	return (int)strcspn(u, "\n");
}

static int usage_of(const char *text, FILE *f)
{
	const char *u = text;
	int len;

	for (; (len = synopsis_line(u)); u += len + (u[len] == '\n'))
		fprintf(f, "%s %s %.*s\n", u == text ? "usage:" : "      ",
			prog, len, u);
	fputs(u, f);
	return f == stdout ? EXIT_OK : EXIT_USAGE;
}

/* Parse only -h/--help and -j/--json (if @json is not NULL). */
static int parse_simple(int argc, char **argv, const char *usage, bool *json,
			bool *done)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "json", no_argument, NULL, 'j' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	*done = false;
	optind = 0;
	while ((c = getopt_long(argc, argv, json ? "hj" : "h", opts,
				NULL)) != -1) {
		switch (c) {
		case 'h':
			*done = true;
			return usage_of(usage, stdout);
		case 'j':
			if (json) {
				*json = true;
				break;
			}
			/* fall through */
		default:
			*done = true;
			return usage_of(usage, stderr);
		}
	}
	return EXIT_OK;
}

/*
 * parse_simple() for a command of exactly one POOL, into *@id. *@done as
 * there: set when the command ends here, with the return value its exit
 * code.
 */
static int parse_one_pool(int argc, char **argv, const char *usage,
			  bool *json, unsigned int *id, bool *done)
{
	int ret;

	ret = parse_simple(argc, argv, usage, json, done);
	if (*done)
		return ret;
	*done = true;
	if (argc - optind != 1)
		return usage_of(usage, stderr);
	if (!parse_pool(argv[optind], id))
		return bad_pool(argv[optind]);
	*done = false;
	return EXIT_OK;
}

/* ---- cgroups ---- */

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC	0x63677270
#endif

/*
 * Where cgroup v2 is mounted: /sys/fs/cgroup, or its "unified" folder on
 * a hybrid v1 + v2 system; NULL if neither is cgroup v2.
 */
static const char *cgroup_root(void)
{
	static const char *const roots[] = {
		"/sys/fs/cgroup", "/sys/fs/cgroup/unified",
	};
	struct statfs sfs;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(roots); i++)
		if (!statfs(roots[i], &sfs) &&
		    sfs.f_type == CGROUP2_SUPER_MAGIC)
			return roots[i];
	return NULL;
}

/* A cgroup id to resolve to a path, and where its path goes. */
struct cg_want {
	__u64 id;
	char *path;		/* malloc()ed; NULL: not found */
};

/* nftw() takes no context: the walk's state. */
static struct cg_want *cg_wants;
static size_t cg_nr_wants, cg_nr_found, cg_root_len;

static int cg_visit(const char *path, const struct stat *sb, int type,
		    struct FTW *ftw)
{
	size_t i;

	(void)ftw;
	if (type != FTW_D)
		return 0;
	for (i = 0; i < cg_nr_wants; i++) {
		if (cg_wants[i].path || cg_wants[i].id != (__u64)sb->st_ino)
			continue;
		/* Relative to the root, as /proc/PID/cgroup writes it. */
		cg_wants[i].path = strdup(path[cg_root_len] ?
					  path + cg_root_len : "/");
		if (cg_wants[i].path)
			cg_nr_found++;
	}
	/* Stop as soon as every id has its path. */
	return cg_nr_found == cg_nr_wants;
}

/*
 * Find the path of each of @nr cgroup ids by walking the cgroup v2 tree
 * once and matching folder inode numbers (a cgroup's id is the inode
 * number of its folder). Ids not found keep a NULL path: the caller shows
 * the number instead.
 */
static void resolve_cgroups(struct cg_want *wants, size_t nr)
{
	const char *root = cgroup_root();

	if (!root || !nr)
		return;
	cg_wants = wants;
	cg_nr_wants = nr;
	cg_nr_found = 0;
	cg_root_len = strlen(root);
	/* Not across mounts, not through links; errors only cut it short. */
	nftw(root, cg_visit, 16, FTW_PHYS | FTW_MOUNT);
	cg_wants = NULL;
}

/*
 * --cgroup PATH as the kernel names a tenant's path: relative to the
 * cgroup v2 root, "/" for the root itself, without a trailing '/'. The
 * folder need not exist. *@out is malloc()ed; the return value is an exit
 * code. The kernel checks the rest (no "." or ".." component).
 */
static int cgroup_rel_of(const char *path, char **out)
{
	static const char *const roots[] = {
		"/sys/fs/cgroup/unified", "/sys/fs/cgroup",
	};
	size_t i, len;
	char *rel;

	for (i = 0; i < ARRAY_SIZE(roots); i++) {
		len = strlen(roots[i]);
		if (!strncmp(path, roots[i], len) &&
		    (!path[len] || path[len] == '/')) {
			path += len;
			break;
		}
	}
	if (asprintf(&rel, "/%s", path + strspn(path, "/")) < 0) {
		err_msg("--cgroup: out of memory");
		return EXIT_FAIL;
	}
	len = strlen(rel);
	while (len > 1 && rel[len - 1] == '/')
		rel[--len] = '\0';
	*out = rel;
	return EXIT_OK;
}

/* ---- tenants ---- */

/*
 * All of pool @id's tenants: *@out is malloc()ed (NULL if none), *@nr
 * their number. Returns 0 or -errno from kvpool_tenant_list().
 */
static int fetch_tenants(unsigned int id, struct kvpool_tenant_info **out,
			 size_t *nr, char **paths)
{
	struct kvpool_tenant_info *t = NULL, *tmp;
	size_t room = 0, need = 0;
	char *p = NULL, *ptmp;
	int n, m;

	*out = NULL;
	*nr = 0;
	if (paths)
		*paths = NULL;
	n = kvpool_tenant_list_paths(id, NULL, 0, NULL, 0, &need);
	/* Tenants come and go: ask again until the room was enough. */
	while (n > 0) {
		tmp = realloc(t, (size_t)n * sizeof(*t));
		ptmp = realloc(p, need ? need : 1);
		if (tmp)
			t = tmp;
		if (ptmp)
			p = ptmp;
		if (!tmp || !ptmp) {
			free(t);
			free(p);
			return -ENOMEM;
		}
		room = need;
		m = kvpool_tenant_list_paths(id, t, (unsigned int)n, p, room,
					     &need);
		if (m <= n && need <= room) {
			n = m;
			break;
		}
		n = m;
	}
	if (n < 0) {
		free(t);
		free(p);
		return n;
	}
	*out = t;
	*nr = (size_t)n;
	if (paths)
		*paths = p;
	else
		free(p);
	return 0;
}

/*
 * Each tenant's cgroup path, or NULL: a path tenant's own (from @kpaths,
 * the kernel's list), else its cgroup id's as found under the cgroup v2
 * root. A malloc()ed array of @nr.
 */
static char **tenant_cgroups(const struct kvpool_tenant_info *t, size_t nr,
			     const char *kpaths)
{
	struct cg_want *w;
	char **paths;
	size_t i;

	paths = calloc(nr ? nr : 1, sizeof(*paths));
	w = calloc(nr ? nr : 1, sizeof(*w));
	if (!paths || !w) {
		free(w);
		return paths;	/* numbers only, or NULL */
	}
	for (i = 0; i < nr; i++)
		w[i].id = t[i].flags & KVPOOL_TENANT_BY_PATH ? 0 :
			  t[i].cgroup_id;
	resolve_cgroups(w, nr);
	for (i = 0; i < nr; i++) {
		paths[i] = w[i].path;
		if ((t[i].flags & KVPOOL_TENANT_BY_PATH) && kpaths &&
		    t[i].path_offset)
			paths[i] = strdup(kpaths + t[i].path_offset);
	}
	free(w);
	return paths;
}

static void free_strings(char **v, size_t nr)
{
	size_t i;

	if (!v)
		return;
	for (i = 0; i < nr; i++)
		free(v[i]);
	free(v);
}

/* A label from the kernel: NUL-terminated within its array, or cut there. */
static const char *label_of(const struct kvpool_tenant_info *t, char *buf)
{
	memcpy(buf, t->label, KVPOOL_LABEL_LEN);
	buf[KVPOOL_LABEL_LEN] = '\0';
	return buf;
}

/*
 * @str as a JSON string; bytes that are no UTF-8 as U+FFFD (text.h).
 */
static void json_string(const char *str)
{
	json_put_string(stdout, str);
}

/* A string, or null for none (""). */
static void json_string_or_null(const char *s)
{
	if (*s)
		json_string(s);
	else
		printf("null");
}

/* A limit in a table: 0 is none. */
static void fmt_limit(char *buf, size_t len, unsigned int v)
{
	if (v)
		snprintf(buf, len, "%u", v);
	else
		snprintf(buf, len, "-");
}

/* The tenant table's columns; CGROUP and LABEL are left-aligned. */
enum {
	TC_ID, TC_UID, TC_CGROUP, TC_LABEL, TC_PAGES, TC_CACHE, TC_ROWS,
	TC_CLIENTS, TC_MAX, TC_MIN, TC_MAXROWS, TC_ASK, TC_NR
};

static const char *const tenant_heads[TC_NR] = {
	"TENANT", "UID", "CGROUP", "LABEL", "PAGES", "CACHE", "ROWS",
	"CLIENTS", "MAX", "MIN", "MAX-ROWS", "ASK",
};

#define TCELL	48	/* a label is < 32 bytes, a number < 21 */

/* The cells of one tenant; the cgroup's is its id (see tenant_cell()). */
static void tenant_cells(const struct kvpool_tenant_info *t,
			 char cell[TC_NR][TCELL])
{
	char label[KVPOOL_LABEL_LEN + 1];

	snprintf(cell[TC_ID], TCELL, "%u", t->tenant_id);
	if (t->flags & KVPOOL_TENANT_ANY_UID)
		snprintf(cell[TC_UID], TCELL, "*");
	else
		snprintf(cell[TC_UID], TCELL, "%u", t->uid);
	snprintf(cell[TC_CGROUP], TCELL, "%llu",
		 (unsigned long long)t->cgroup_id);
	snprintf(cell[TC_LABEL], TCELL, "%s", label_of(t, label));
	if (!cell[TC_LABEL][0])
		snprintf(cell[TC_LABEL], TCELL, "-");
	snprintf(cell[TC_PAGES], TCELL, "%u", t->pages);
	snprintf(cell[TC_CACHE], TCELL, "%u", t->cache_pages);
	snprintf(cell[TC_ROWS], TCELL, "%u", t->rows);
	snprintf(cell[TC_CLIENTS], TCELL, "%u", t->nr_clients);
	fmt_limit(cell[TC_MAX], TCELL, t->max_pages);
	fmt_limit(cell[TC_MIN], TCELL, t->min_pages);
	fmt_limit(cell[TC_MAXROWS], TCELL, t->max_rows);
	snprintf(cell[TC_ASK], TCELL, "%u", t->ask_pages);
}

/* Cell @j of a tenant: its cgroup's path if found, else what was made. */
static const char *tenant_cell(char cell[TC_NR][TCELL], size_t j,
			       const char *cgroup)
{
	return j == TC_CGROUP && cgroup ? cgroup : cell[j];
}

/* The tenants of one pool as a table, @indent spaces in. */
static void print_tenant_table(const struct kvpool_tenant_info *t,
			       char *const *cgroups, size_t nr, int indent)
{
	char cell[TC_NR][TCELL];
	const char *cg;
	int width[TC_NR];
	size_t i, j;

	for (j = 0; j < TC_NR; j++)
		width[j] = (int)strlen(tenant_heads[j]);
	for (i = 0; i < nr; i++) {
		cg = cgroups ? cgroups[i] : NULL;
		tenant_cells(&t[i], cell);
		for (j = 0; j < TC_NR; j++) {
			int w = (int)strlen(tenant_cell(cell, j, cg));

			if (w > width[j])
				width[j] = w;
		}
	}
	printf("%*s", indent, "");
	for (j = 0; j < TC_NR; j++)
		printf("%s%*s", j ? "  " : "",
		       j == TC_CGROUP || j == TC_LABEL ? -width[j] : width[j],
		       tenant_heads[j]);
	putchar('\n');
	for (i = 0; i < nr; i++) {
		cg = cgroups ? cgroups[i] : NULL;
		tenant_cells(&t[i], cell);
		printf("%*s", indent, "");
		for (j = 0; j < TC_NR; j++)
			printf("%s%*s", j ? "  " : "",
			       j == TC_CGROUP || j == TC_LABEL ?
			       -width[j] : width[j], tenant_cell(cell, j, cg));
		putchar('\n');
	}
}

/* The tenants as a JSON array, @indent spaces in (its "[" not included). */
static void print_tenant_json(const struct kvpool_tenant_info *t,
			      char *const *cgroups, size_t nr, int indent)
{
	char label[KVPOOL_LABEL_LEN + 1];
	size_t i;

	printf("[");
	for (i = 0; i < nr; i++) {
		printf("%s\n%*s{\n", i ? "," : "", indent + 2, "");
		printf("%*s\"tenant_id\": %u,\n", indent + 4, "",
		       t[i].tenant_id);
		if (t[i].flags & KVPOOL_TENANT_ANY_UID)
			printf("%*s\"uid\": null,\n", indent + 4, "");
		else
			printf("%*s\"uid\": %u,\n", indent + 4, "",
			       t[i].uid);
		printf("%*s\"by_path\": %s,\n", indent + 4, "",
		       t[i].flags & KVPOOL_TENANT_BY_PATH ? "true" : "false");
		printf("%*s\"configured\": %s,\n", indent + 4, "",
		       t[i].flags & KVPOOL_TENANT_CONFIGURED ? "true" : "false");
		printf("%*s\"cgroup_id\": %llu,\n", indent + 4, "",
		       (unsigned long long)t[i].cgroup_id);
		printf("%*s\"cgroup\": ", indent + 4, "");
		if (cgroups && cgroups[i])
			json_string(cgroups[i]);
		else
			printf("null");
		printf(",\n%*s\"label\": ", indent + 4, "");
		json_string(label_of(&t[i], label));
		printf(",\n");
		printf("%*s\"pages\": %u,\n", indent + 4, "", t[i].pages);
		printf("%*s\"cache_pages\": %u,\n", indent + 4, "",
		       t[i].cache_pages);
		printf("%*s\"rows\": %u,\n", indent + 4, "", t[i].rows);
		printf("%*s\"nr_clients\": %u,\n", indent + 4, "",
		       t[i].nr_clients);
		printf("%*s\"max_pages\": %u,\n", indent + 4, "",
		       t[i].max_pages);
		printf("%*s\"min_pages\": %u,\n", indent + 4, "",
		       t[i].min_pages);
		printf("%*s\"max_rows\": %u,\n", indent + 4, "",
		       t[i].max_rows);
		printf("%*s\"ask_pages\": %u\n", indent + 4, "",
		       t[i].ask_pages);
		printf("%*s}", indent + 2, "");
	}
	if (nr)
		printf("\n%*s", indent, "");
	printf("]");
}

/* ---- PCI ---- */

/* A PCI address as sysfs and lspci -D write it. */
static void pci_name(char *buf, size_t len, uint32_t domain, uint32_t devid)
{
	snprintf(buf, len, "%04x:%02x:%02x.%u", domain, devid >> 8,
		 (devid >> 3) & 0x1f, devid & 7);
}

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

/*
 * The first line of the sysfs file @name of PCI device @addr into @buf,
 * without its newline. Returns 0 or -errno.
 */
static int pci_attr(const char *addr, const char *name, char *buf,
		    size_t len)
{
	char path[PATH_MAX];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), PCI_DEVICES "/%s/%s", addr, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

/* A hex attribute of PCI device @addr ("0x030000"), into *@v. */
static int pci_attr_hex(const char *addr, const char *name, unsigned int *v)
{
	char buf[32], *end;
	unsigned long x;
	int ret;

	ret = pci_attr(addr, name, buf, sizeof(buf));
	if (ret)
		return ret;
	errno = 0;
	x = strtoul(buf, &end, 16);
	if (errno || end == buf || *end || x > UINT32_MAX)
		return -EIO;
	*v = (unsigned int)x;
	return 0;
}

/*
 * The PCI address of pool @id's GPU into @buf, "" if it names none; an
 * unreadable gpu file is "?", not no GPU.
 */
static void pool_gpu_name(unsigned int id, char *buf, size_t len)
{
	uint32_t domain, devid;
	int ret;

	ret = kvpool_pool_gpu(id, &domain, &devid);
	if (ret > 0)
		pci_name(buf, len, domain, devid);
	else
		snprintf(buf, len, "%s", ret ? "?" : "");
}

/* ---- status ---- */

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
	/* From KVPOOL_CTL_TENANT_LIST, root only; tenant_err: why not. */
	int tenant_err;
	struct kvpool_tenant_info *tenants;
	size_t nr_tenant_rows;
	char **cgroups;
};

/*
 * The figures kvpool_pool_status() does not read; a module from before
 * tenants and pressure lacks them, and gets has_tenants false (so does a
 * pool whose figures cannot be read: they show as missing).
 */
static void read_pool_extra(struct pool_row *r)
{
	char path[80];

	r->has_tenants = !kvpool_pool_extra(r->id, &r->x);
	if (!r->has_tenants)
		memset(&r->x, 0, sizeof(r->x));
	pool_gpu_name(r->id, r->gpu, sizeof(r->gpu));
	/* kvpool_pool_status() reads a file an older module lacks as 0. */
	snprintf(path, sizeof(path), "/sys/class/kvpool/kvpool%u/quarantine_pages",
		 r->id);
	r->has_quarantine = !access(path, F_OK);
}

/* One table column: a heading and where in a struct pool_row its figure is. */
struct column {
	const char *group;	/* heading above a run of columns, or NULL */
	const char *name;
	size_t offset;		/* of an unsigned int (or __u32) */
	bool newer;		/* "-" on a module without tenants and export */
	bool text;		/* a string, left-aligned; "" shows as "-" */
	bool abi2;		/* "-" on a module before ABI 2 (quarantine) */
};

#define ROW_FIELD(f)	offsetof(struct pool_row, f)

static const struct column columns[] = {
	{ NULL, "POOL", ROW_FIELD(id), false, false, false },
	{ "pages", "TOTAL", ROW_FIELD(info.out_nr_pages), false, false, false },
	{ "pages", "FREE", ROW_FIELD(st.out_free_pages), false, false, false },
	{ "pages", "ROW", ROW_FIELD(st.out_row_pages), false, false, false },
	{ "pages", "SLOT", ROW_FIELD(st.out_slot_pages), false, false, false },
	/* Prefix-cache pages: evictable, and pinned by a row borrowing them. */
	{ "pages", "EVICT", ROW_FIELD(st.out_cache_evictable), false, false, false },
	{ "pages", "PINNED", ROW_FIELD(st.out_cache_pinned), false, false, false },
	/* Owned by rows in flight as export files. */
	{ "pages", "EXPORT", ROW_FIELD(st.out_export_pages), true, false, false },
	{ "pages", "RSVD", ROW_FIELD(st.out_reserved_pages), false, false, false },
	/* Taken back from dead clients, until their GPU work is done. */
	{ "pages", "QUAR", ROW_FIELD(st.out_quarantine_pages), false, false,
	  true },
	{ "rows", "TOTAL", ROW_FIELD(info.out_nr_rows), false, false, false },
	{ "rows", "FREE", ROW_FIELD(st.out_free_rows), false, false, false },
	{ "rows", "HELD", ROW_FIELD(st.out_held_rows), false, false, false },
	{ "rows", "SLOT", ROW_FIELD(st.out_slot_rows), false, false, false },
	{ "rows", "EXPORT", ROW_FIELD(st.out_export_rows), true, false, false },
	{ "rows", "RSVD", ROW_FIELD(st.out_reserved_rows), false, false, false },
	{ "wmark", "LOW", ROW_FIELD(x.low_wmark), true, false, false },
	{ "wmark", "HIGH", ROW_FIELD(x.high_wmark), true, false, false },
	{ NULL, "TENANTS", ROW_FIELD(x.nr_tenants), true, false, false },
	{ NULL, "CLIENTS", ROW_FIELD(st.out_nr_clients), false, false, false },
	{ NULL, "GPU", ROW_FIELD(gpu), false, true, false },
};

/* Column @col of @r as text. */
static void col_text(size_t col, const struct pool_row *r, char *buf,
		     size_t len)
{
	const char *field = (const char *)r + columns[col].offset;

	if ((columns[col].newer && !r->has_tenants) ||
	    (columns[col].abi2 && !r->has_quarantine))
		snprintf(buf, len, "-");
	else if (columns[col].text)
		snprintf(buf, len, "%s", *field ? field : "-");
	else
		snprintf(buf, len, "%u", *(const unsigned int *)field);
}

/*
 * The printf width of column @col, @w wide: text is left-aligned, and
 * not padded at the end of the line.
 */
static int col_width(size_t col, int w)
{
	if (!columns[col].text)
		return w;
	return col + 1 < ARRAY_SIZE(columns) ? -w : 0;
}

static bool same_group(size_t a, size_t b)
{
	const char *x = columns[a].group, *y = columns[b].group;

	return x == y || (x && y && !strcmp(x, y));
}

/* Columns are one space apart, two between groups. */
static int col_gap(size_t i)
{
	if (!i)
		return 0;
	return same_group(i, i - 1) ? 1 : 2;
}

static void put_chars(int c, int n)
{
	while (n-- > 0)
		putchar(c);
}

static void print_table(const struct pool_row *rows, size_t nr)
{
	int width[ARRAY_SIZE(columns)], pad = 0;
	char buf[PCI_NAME_LEN];
	size_t i, j;

	for (i = 0; i < ARRAY_SIZE(columns); i++) {
		width[i] = (int)strlen(columns[i].name);
		for (j = 0; j < nr; j++) {
			int w;

			col_text(i, &rows[j], buf, sizeof(buf));
			w = (int)strlen(buf);
			if (w > width[i])
				width[i] = w;
		}
	}

	/*
	 * The group line: "---- pages ----" over each run of columns; blanks
	 * over the others are only written when a group follows them.
	 */
	for (i = 0; i < ARRAY_SIZE(columns); i = j) {
		int span = width[i], label, left;

		for (j = i + 1; j < ARRAY_SIZE(columns); j++) {
			if (!same_group(i, j))
				break;
			span += 1 + width[j];
		}
		pad += col_gap(i);
		if (!columns[i].group) {
			pad += span;
			continue;
		}
		label = (int)strlen(columns[i].group) + 2;
		left = (span - label) / 2;
		put_chars(' ', pad);
		pad = 0;
		put_chars('-', left);
		printf(" %s ", columns[i].group);
		put_chars('-', span - label - left);
	}
	putchar('\n');

	for (i = 0; i < ARRAY_SIZE(columns); i++)
		printf("%*s%*s", col_gap(i), "", col_width(i, width[i]),
		       columns[i].name);
	putchar('\n');
	for (j = 0; j < nr; j++) {
		for (i = 0; i < ARRAY_SIZE(columns); i++) {
			col_text(i, &rows[j], buf, sizeof(buf));
			printf("%*s%*s", col_gap(i), "",
			       col_width(i, width[i]), buf);
		}
		putchar('\n');
	}
}

static void print_tenants(const struct pool_row *rows, size_t nr)
{
	bool denied = false, old_module = false;
	size_t j;

	for (j = 0; j < nr; j++) {
		const struct pool_row *r = &rows[j];

		switch (-r->tenant_err) {
		case 0:
			break;
		/* The same for every pool: said once, below. */
		case EPERM:
		case EACCES:
			denied = true;
			continue;
		case ENOTTY:
			old_module = true;
			continue;
		default:
			printf("\npool %u tenants: %s\n", r->id,
			       kvpool_strerror(r->tenant_err));
			continue;
		}
		/* No tenants: no clients and no limits set; nothing to say. */
		if (!r->nr_tenant_rows)
			continue;
		printf("\npool %u tenants:\n", r->id);
		print_tenant_table(r->tenants, r->cgroups, r->nr_tenant_rows, 2);
	}
	if (denied)
		printf("\ntenants not shown: listing them needs root (CAP_SYS_ADMIN)\n");
	else if (old_module)
		printf("\nno tenants: this kvpool module predates them\n");
}

/* A figure a module before tenants and export lacks: null there. */
static void json_newer(const struct pool_row *r, const char *key,
		       unsigned int v, bool last)
{
	printf("      \"%s\": ", key);
	if (r->has_tenants)
		printf("%u", v);
	else
		printf("null");
	printf("%s\n", last ? "" : ",");
}

static void print_json(const struct pool_row *rows, size_t nr)
{
	size_t j;

	printf("{\n  \"pools\": [");
	for (j = 0; j < nr; j++) {
		const struct pool_row *r = &rows[j];
		const struct kvpool_info *in = &r->info;
		const struct kvpool_stats *st = &r->st;

		/* The sysfs attribute names of docs/design.md, in its order. */
		printf("%s\n    {\n", j ? "," : "");
		printf("      \"pool_id\": %u,\n", r->id);
		printf("      \"nr_pages\": %u,\n", in->out_nr_pages);
		printf("      \"page_tokens\": %u,\n", in->out_page_tokens);
		printf("      \"nr_rows\": %u,\n", in->out_nr_rows);
		printf("      \"row_tokens\": %u,\n", in->out_row_tokens);
		printf("      \"create_flags\": %u,\n", in->out_create_flags);
		printf("      \"free_pages\": %u,\n", st->out_free_pages);
		printf("      \"row_pages\": %u,\n", st->out_row_pages);
		printf("      \"slot_pages\": %u,\n", st->out_slot_pages);
		printf("      \"cache_evictable\": %u,\n",
		       st->out_cache_evictable);
		printf("      \"cache_pinned\": %u,\n", st->out_cache_pinned);
		printf("      \"reserved_pages\": %u,\n",
		       st->out_reserved_pages);
		printf("      \"free_rows\": %u,\n", st->out_free_rows);
		printf("      \"held_rows\": %u,\n", st->out_held_rows);
		printf("      \"slot_rows\": %u,\n", st->out_slot_rows);
		printf("      \"reserved_rows\": %u,\n", st->out_reserved_rows);
		printf("      \"nr_clients\": %u,\n", st->out_nr_clients);
		json_newer(r, "nr_tenants", r->x.nr_tenants, false);
		json_newer(r, "export_rows", st->out_export_rows, false);
		json_newer(r, "export_pages", st->out_export_pages, false);
		json_newer(r, "low_wmark", r->x.low_wmark, false);
		json_newer(r, "high_wmark", r->x.high_wmark, false);
		/* null: a module before ABI 2 has no quarantine. */
		printf("      \"quarantine_pages\": ");
		if (r->has_quarantine)
			printf("%u,\n", st->out_quarantine_pages);
		else
			printf("null,\n");
		/* null: the pool names no GPU. */
		printf("      \"gpu\": ");
		json_string_or_null(r->gpu);
		printf(",\n");
		/* null: not listed (not root, or no tenants in the module). */
		printf("      \"tenants\": ");
		if (r->tenant_err)
			printf("null");
		else
			print_tenant_json(r->tenants, r->cgroups,
					  r->nr_tenant_rows, 6);
		printf("\n    }");
	}
	printf("%s]\n}\n", nr ? "\n  " : "");
}

/*
 * The pools to act on: @arg's pool, or every pool. On success *@ids is a
 * malloc()ed array of *@nr ids; the return value is an exit code.
 */
static int select_pools(const char *arg, unsigned int **ids, size_t *nr)
{
	unsigned int id;
	int n, m;

	*ids = NULL;
	*nr = 0;
	if (arg) {
		if (!parse_pool(arg, &id))
			return bad_pool(arg);
		*ids = malloc(sizeof(**ids));
		if (!*ids)
			return pool_error(-ENOMEM, "malloc", -1);
		**ids = id;
		*nr = 1;
		return EXIT_OK;
	}

	/* Count, then fetch; a pool made in between is simply not shown. */
	n = kvpool_pool_list(NULL, 0);
	if (n == -ENODEV && !module_loaded())
		return not_loaded();
	if (n < 0)
		return pool_error(n, "listing pools", -1);
	if (!n)
		return EXIT_OK;
	*ids = calloc((size_t)n, sizeof(**ids));
	if (!*ids)
		return pool_error(-ENOMEM, "malloc", -1);
	m = kvpool_pool_list(*ids, (unsigned int)n);
	if (m < 0) {
		free(*ids);
		*ids = NULL;
		return pool_error(m, "listing pools", -1);
	}
	*nr = (size_t)(m < n ? m : n);
	return EXIT_OK;
}

/*
 * Pool @r's tenants, as root. A pool destroyed meanwhile returns -ENODEV;
 * any other failure is kept in tenant_err and shown in its place.
 */
static int status_tenants(struct pool_row *r)
{
	char *paths;
	int err;

	err = fetch_tenants(r->id, &r->tenants, &r->nr_tenant_rows, &paths);
	if (err == -ENODEV)
		return err;
	r->tenant_err = err;
	if (!err)
		r->cgroups = tenant_cgroups(r->tenants, r->nr_tenant_rows,
					    paths);
	free(paths);
	return 0;
}

static int cmd_status(int argc, char **argv)
{
	struct pool_row *rows = NULL;
	unsigned int *ids;
	size_t nr, nrows = 0, i;
	bool json = false, explicit, done;
	int ret;

	ret = parse_simple(argc, argv, usage_status, &json, &done);
	if (done)
		return ret;
	if (argc - optind > 1)
		return usage_of(usage_status, stderr);

	explicit = optind < argc;
	ret = select_pools(explicit ? argv[optind] : NULL, &ids, &nr);
	if (ret)
		return ret;
	if (nr) {
		rows = calloc(nr, sizeof(*rows));
		if (!rows) {
			free(ids);
			return pool_error(-ENOMEM, "malloc", -1);
		}
	}
	for (i = 0; i < nr; i++) {
		struct pool_row *r = &rows[nrows];
		int err;

		r->id = ids[i];
		err = kvpool_pool_status(ids[i], &r->info, &r->st);
		if (!err) {
			read_pool_extra(r);
			err = status_tenants(r);
		}
		/* Listed but gone by now: it was destroyed meanwhile. */
		if (err == -ENODEV && !explicit) {
			free_strings(r->cgroups, r->nr_tenant_rows);
			free(r->tenants);
			memset(r, 0, sizeof(*r));
			continue;
		}
		if (err) {
			ret = pool_error(err, "reading sysfs", (int)ids[i]);
			goto out;
		}
		nrows++;
	}

	if (json) {
		print_json(rows, nrows);
	} else if (nrows) {
		print_table(rows, nrows);
		print_tenants(rows, nrows);
	} else {
		printf("no pools (kvpoolctl create --help)\n");
	}
out:
	/* Rows past nrows are zeroed or hold the pool that failed. */
	for (i = 0; i < nr; i++) {
		free_strings(rows[i].cgroups, rows[i].nr_tenant_rows);
		free(rows[i].tenants);
	}
	free(rows);
	free(ids);
	return ret;
}

/* ---- info ---- */

static const char *const feature_names[] = {
	"rows", "extend", "slots", "verify", "prefix-cache", "swa", "export",
	"quota", "pressure", "arena",
};

static void print_features(__u64 feat, bool json)
{
	const char *sep = "";
	unsigned int bit;

	for (bit = 0; bit < 64; bit++) {
		if (!(feat & (1ULL << bit)))
			continue;
		printf("%s%s", sep, json ? "\"" : "");
		if (bit < ARRAY_SIZE(feature_names))
			printf("%s", feature_names[bit]);
		else
			printf("bit%u", bit);
		printf("%s", json ? "\"" : "");
		sep = json ? ", " : " ";
	}
	if (!*sep && !json)
		printf("none");
}

/* KVPOOL_ARENA_* as a word; a kind this tool does not know as kindN. */
static const char *arena_kind(__u32 kind)
{
	static char buf[24];

	switch (kind) {
	case KVPOOL_ARENA_NONE:
		return "none";
	case KVPOOL_ARENA_HOST:
		return "host";
	case KVPOOL_ARENA_CUDA:
		return "cuda";
	}
	snprintf(buf, sizeof(buf), "kind%u", kind);
	return buf;
}

/* Open pool @id; the return value is an exit code. */
static int open_pool(unsigned int id, struct kvpool **kpp)
{
	char path[32];
	int err;

	snprintf(path, sizeof(path), "/dev/kvpool%u", id);
	err = kvpool_open(path, kpp);
	if (!err)
		return EXIT_OK;
	/* The sysfs entry without the node would be a udev problem. */
	if (err == -ENOENT && kvpool_pool_status(id, NULL, NULL) == 0) {
		err_msg("%s: no device node, but pool %u exists in sysfs (devtmpfs or udev missing?)",
			path, id);
		return EXIT_FAIL;
	}
	if (err == -EACCES)
		return denied_open("open", path);
	if (err == -EPERM) {
		/* No capability is asked at open: a security module's no. */
		err_msg("%s: open: operation not permitted (not the file's permissions: a security module, or a read-only mount, refused it)",
			path);
		return EXIT_PERM;
	}
	if (err == -ENOENT && module_loaded()) {
		err_msg("%s: no such device node, and no pool %u in /sys/class/kvpool (kvpoolctl status lists the pools)",
			path, id);
		return EXIT_NO_POOL;
	}
	/* Listed, yet refused: on its way out, or the module not ready. */
	if (err == -ENODEV && kvpool_pool_status(id, NULL, NULL) == 0) {
		err_msg("%s: the pool is being destroyed or the kvpool module is still loading; try again",
			path);
		return EXIT_NO_POOL;
	}
	return pool_error(err, path, (int)id);
}

static int cmd_info(int argc, char **argv)
{
	char gpu[PCI_NAME_LEN];
	struct kvpool_arena a;
	struct kvpool_info in;
	struct kvpool *kp;
	bool json = false, done;
	unsigned int id;
	int ret, arena_err;

	ret = parse_one_pool(argc, argv, usage_info, &json, &id, &done);
	if (done)
		return ret;

	ret = open_pool(id, &kp);
	if (ret)
		return ret;
	kvpool_info(kp, &in);
	/* A module without arenas: arena_err -ENOTTY, shown as such. */
	arena_err = in.out_features & KVPOOL_FEAT_ARENA ?
		    kvpool_arena_info(kp, &a) : -ENOTTY;
	kvpool_close(kp);
	pool_gpu_name(id, gpu, sizeof(gpu));

	if (json) {
		printf("{\n");
		printf("  \"pool_id\": %u,\n", in.out_pool_id);
		printf("  \"abi_version\": %u,\n", in.out_abi_version);
		printf("  \"features\": [");
		print_features(in.out_features, true);
		printf("],\n");
		printf("  \"features_mask\": %llu,\n",
		       (unsigned long long)in.out_features);
		printf("  \"nr_pages\": %u,\n", in.out_nr_pages);
		printf("  \"page_tokens\": %u,\n", in.out_page_tokens);
		printf("  \"nr_rows\": %u,\n", in.out_nr_rows);
		printf("  \"row_tokens\": %u,\n", in.out_row_tokens);
		printf("  \"create_flags\": %u,\n", in.out_create_flags);
		/* null: the pool names no GPU. */
		printf("  \"gpu\": ");
		json_string_or_null(gpu);
		printf(",\n");
		printf("  \"max_batch\": %u,\n", in.out_max_batch);
		/* null: the module has no arenas, or did not say. */
		printf("  \"arena\": ");
		if (arena_err)
			printf("null\n");
		else
			printf("{ \"kind\": \"%s\", \"page_bytes\": %llu, \"bytes\": %llu, \"nr_chunks\": %u }\n",
			       arena_kind(a.out_kind),
			       (unsigned long long)a.out_page_bytes,
			       (unsigned long long)a.out_bytes,
			       a.out_nr_chunks);
		printf("}\n");
		return EXIT_OK;
	}

	printf("pool %u (/dev/kvpool%u)\n", in.out_pool_id, in.out_pool_id);
	printf("  abi version   %u\n", in.out_abi_version);
	printf("  pages         %u x %u tokens\n", in.out_nr_pages,
	       in.out_page_tokens);
	printf("  rows          %u, up to %u tokens each\n", in.out_nr_rows,
	       in.out_row_tokens);
	printf("  create flags  0x%x%s%s\n", in.out_create_flags,
	       in.out_create_flags & KVPOOL_CREATE_RESERVE_ZERO ?
	       " (reserve-zero: page 0 and row 0 kept back)" : "",
	       in.out_create_flags & KVPOOL_CREATE_GPU ? " (gpu)" : "");
	printf("  gpu           %s\n", *gpu ? gpu : "none");
	printf("  max batch     %u entries\n", in.out_max_batch);
	printf("  features      ");
	print_features(in.out_features, false);
	putchar('\n');
	printf("  arena         ");
	if (arena_err == -ENOTTY)
		printf("- (this module has no arenas)\n");
	else if (arena_err)
		printf("? (%s)\n", kvpool_strerror(arena_err));
	else if (a.out_kind == KVPOOL_ARENA_NONE)
		printf("none\n");
	else
		printf("%s, %llu bytes in %u chunk%s, %llu-byte pages\n",
		       arena_kind(a.out_kind),
		       (unsigned long long)a.out_bytes, a.out_nr_chunks,
		       a.out_nr_chunks == 1 ? "" : "s",
		       (unsigned long long)a.out_page_bytes);
	return EXIT_OK;
}

/* ---- verify ---- */

static int verify_one(unsigned int id, unsigned int *violations)
{
	struct kvpool_verify v;
	struct kvpool_info in;
	struct kvpool *kp;
	char what[32];
	int ret;

	ret = open_pool(id, &kp);
	if (ret)
		return ret;
	kvpool_info(kp, &in);
	snprintf(what, sizeof(what), "verify pool %u", id);
	if (!(in.out_features & KVPOOL_FEAT_VERIFY)) {
		kvpool_close(kp);
		return pool_error(-EOPNOTSUPP, what, (int)id);
	}
	ret = kvpool_verify(kp, &v);
	kvpool_close(kp);
	if (ret < 0)
		return pool_error(ret, what, (int)id);

	if (!ret) {
		printf("pool %u: ok (%u pages, %u rows checked)\n", id,
		       v.out_pages_checked, v.out_rows_checked);
		return EXIT_OK;
	}
	printf("pool %u: %d invariant violation%s (%u pages, %u rows checked)\n",
	       id, ret, ret == 1 ? "" : "s", v.out_pages_checked,
	       v.out_rows_checked);
	printf("  see the kernel log: dmesg | grep 'kvpool: pool %u: invariant'\n",
	       id);
	*violations += (unsigned int)ret;
	return EXIT_OK;
}

static int cmd_verify(int argc, char **argv)
{
	unsigned int *ids, violations = 0;
	size_t nr, i;
	bool done;
	int ret, err = EXIT_OK;

	ret = parse_simple(argc, argv, usage_verify, NULL, &done);
	if (done)
		return ret;
	if (argc - optind > 1)
		return usage_of(usage_verify, stderr);

	ret = select_pools(optind < argc ? argv[optind] : NULL, &ids, &nr);
	if (ret)
		return ret;
	if (!nr)
		printf("no pools\n");
	/* Check every pool even if one fails; an error outranks exit 1. */
	for (i = 0; i < nr; i++) {
		ret = verify_one(ids[i], &violations);
		if (ret)
			err = ret;
	}
	free(ids);
	if (err)
		return err;
	return violations ? EXIT_VIOLATIONS : EXIT_OK;
}

/* ---- create, destroy ---- */

/*
 * create --gpu refused with @err: if the GPU is why, say so and return
 * the exit code; else -1, and the caller explains. EINVAL is the
 * geometry's as well as the GPU's: the device's class tells them apart.
 */
static int create_gpu_error(int err, const char *addr)
{
	unsigned int class;

	switch (-err) {
	case ENXIO:
		err_msg("create: no PCI device at %s (kvpoolctl gpus lists the GPUs)",
			addr);
		return EXIT_FAIL;
	case EOPNOTSUPP:
	case E2BIG:
		/* KVPOOL_CREATE_GPU, or the fields after ABI 1's struct. */
		err_msg("create: --gpu: this kvpool module predates GPU pools (kvpool ABI 2; load a newer kvpool.ko)");
		return EXIT_FAIL;
	case EINVAL:
		if (!pci_attr_hex(addr, "class", &class) &&
		    class >> 16 != PCI_CLASS_DISPLAY) {
			err_msg("create: %s is not a display controller (PCI class %06x; kvpoolctl gpus lists the GPUs)",
				addr, class);
			return EXIT_FAIL;
		}
		break;
	}
	return -1;
}

static int cmd_create(int argc, char **argv)
{
	enum { OPT_PAGES = 256, OPT_PAGE_TOKENS, OPT_ROWS, OPT_ROW_TOKENS,
	       OPT_NO_RESERVE_ZERO, OPT_GPU };
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "pages", required_argument, NULL, OPT_PAGES },
		{ "page-tokens", required_argument, NULL, OPT_PAGE_TOKENS },
		{ "rows", required_argument, NULL, OPT_ROWS },
		{ "row-tokens", required_argument, NULL, OPT_ROW_TOKENS },
		{ "no-reserve-zero", no_argument, NULL, OPT_NO_RESERVE_ZERO },
		{ "gpu", required_argument, NULL, OPT_GPU },
		{ NULL, 0, NULL, 0 },
	};
	struct kvpool_pool_params p = { .flags = KVPOOL_CREATE_RESERVE_ZERO };
	unsigned int *field, seen = 0, id;
	char gpu[PCI_NAME_LEN] = "";
	int c, ret;

	optind = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'h':
			return usage_of(usage_create, stdout);
		case OPT_PAGES:
			field = &p.nr_pages;
			break;
		case OPT_PAGE_TOKENS:
			field = &p.page_tokens;
			break;
		case OPT_ROWS:
			field = &p.nr_rows;
			break;
		case OPT_ROW_TOKENS:
			field = &p.row_tokens;
			break;
		case OPT_NO_RESERVE_ZERO:
			p.flags &= ~KVPOOL_CREATE_RESERVE_ZERO;
			continue;
		case OPT_GPU:
			if (kvpool_pci_parse(optarg, &p.gpu_domain,
					     &p.gpu_devid)) {
				err_msg("--gpu: not a PCI address: '%s' (want DOMAIN:BUS:DEVICE.FUNCTION as lspci -D prints it, e.g. 0000:3b:00.0, or BUS:DEVICE.FUNCTION)",
					optarg);
				return EXIT_USAGE;
			}
			p.flags |= KVPOOL_CREATE_GPU;
			pci_name(gpu, sizeof(gpu), p.gpu_domain, p.gpu_devid);
			continue;
		default:
			return usage_of(usage_create, stderr);
		}
		if (!parse_count_opt(opts[c - OPT_PAGES + 1].name, optarg,
				     field))
			return EXIT_USAGE;
		seen |= 1U << (c - OPT_PAGES);
	}
	if (optind != argc || seen != 0xf) {
		err_msg("create needs --pages, --page-tokens, --rows and --row-tokens");
		return usage_of(usage_create, stderr);
	}

	ret = kvpool_pool_create(&p, &id);
	if (ret == -ENOENT && !module_loaded())
		return not_loaded();
	if (ret && *gpu) {
		c = create_gpu_error(ret, gpu);
		if (c >= 0)
			return c;
	}
	if (ret == -EINVAL) {
		err_msg("create: the kernel refused this geometry");
		fprintf(stderr, "limits: pages 1..2^27, page-tokens 1..65536, rows 1..2^20, row-tokens 1..2^24;\n"
			"with reserve-zero (the default) at least 2 pages and 2 rows%s\n",
			*gpu ? ";\n--gpu a display controller (kvpoolctl gpus)" :
			"");
		return EXIT_FAIL;
	}
	if (ret == -ENOSPC) {
		/* Not in the uapi's table: the module's limit on pools. */
		err_msg("create: no free pool id (the module allows 64 pools)");
		return EXIT_FAIL;
	}
	if (ret)
		return pool_error(ret, "create", -1);
	printf("%u\n", id);
	return EXIT_OK;
}

static int cmd_destroy(int argc, char **argv)
{
	unsigned int id;
	bool done;
	int ret;

	ret = parse_one_pool(argc, argv, usage_destroy, NULL, &id, &done);
	if (done)
		return ret;

	ret = kvpool_pool_destroy(id);
	if (ret)
		return pool_error(ret, "destroy", (int)id);
	return EXIT_OK;
}

/* ---- tenant, wmark ---- */

/*
 * Report @err from a control op on tenants or watermarks (@feature names
 * what an older module lacks) and map it to an exit code.
 */
static int ctl_error(int err, const char *what, unsigned int id,
		     const char *feature)
{
	if (err == -ENOTTY) {
		err_msg("%s: this kvpool module has no %s (load a newer kvpool.ko)",
			what, feature);
		return EXIT_FAIL;
	}
	return pool_error(err, what, (int)id);
}

/* --uid: a number or a user name. */
static bool parse_uid(const char *s, unsigned int *uid)
{
	struct passwd *pw;

	if (*s >= '0' && *s <= '9')
		return !strpbrk(s, "kKmMgG") && parse_u32(s, uid) == NUM_OK &&
		       *uid != UINT32_MAX;
	pw = getpwnam(s);
	if (!pw)
		return false;
	*uid = (unsigned int)pw->pw_uid;
	return true;
}

/* --cgroup-id: a 64-bit decimal. */
static bool parse_u64(const char *s, __u64 *out)
{
	unsigned long long v;
	char *end;

	if (!parse_decimal(s, &v, &end) || *end)
		return false;
	*out = v;
	return true;
}

/*
 * tenant set refused with EINVAL: say what the rules are and, as far as
 * they can be read, where this pool stands against them.
 */
/* Whether list entry @ti is the tenant @t (and @rel, for a path) names. */
static bool tenant_is(const struct kvpool_tenant_info *ti, const char *kpaths,
		      const struct kvpool_ctl_tenant *t, const char *rel)
{
	const __u32 how = KVPOOL_TENANT_BY_PATH | KVPOOL_TENANT_ANY_UID;

	if (rel)
		return (ti->flags & how) == (t->flags & how) &&
		       ti->uid == t->uid && kpaths && ti->path_offset &&
		       !strcmp(kpaths + ti->path_offset, rel);
	return !(ti->flags & KVPOOL_TENANT_BY_PATH) &&
	       ti->cgroup_id == t->cgroup_id && ti->uid == t->uid;
}

static void explain_tenant_einval(unsigned int id,
				  const struct kvpool_ctl_tenant *t,
				  const char *rel)
{
	struct kvpool_tenant_info *ti;
	struct kvpool_stats st;
	struct kvpool_info in;
	unsigned long long others = 0;
	char *kpaths;
	size_t nr, i;

	err_msg("tenant set: the kernel refused these limits");
	fprintf(stderr, "rules: --min may not exceed --max (when --max is set);\n"
		"the pool's guarantees (--min) together may not exceed its pages, reserved ones not counted;\n"
		"--label has at most %d bytes\n", KVPOOL_LABEL_LEN - 1);
	if (t->max_pages && t->min_pages > t->max_pages) {
		fprintf(stderr, "here: --min %u is above --max %u\n",
			t->min_pages, t->max_pages);
		return;
	}
	if (kvpool_pool_status(id, &in, &st) ||
	    fetch_tenants(id, &ti, &nr, &kpaths))
		return;
	for (i = 0; i < nr; i++)
		if (!tenant_is(&ti[i], kpaths, t, rel))
			others += ti[i].min_pages;
	free(kpaths);
	free(ti);
	fprintf(stderr, "here: pool %u has %u pages not reserved; other tenants are guaranteed %llu, this one asks %u\n",
		id, in.out_nr_pages - st.out_reserved_pages, others,
		t->min_pages);
}

/*
 * CTL_TENANT_SET by path when @rel is given, else as @t names the tenant.
 * The errors only a path has are said here, with @what before them.
 */
static int tenant_set_call(unsigned int id, struct kvpool_ctl_tenant *t,
			   const char *rel, const char *what)
{
	int ret;

	if (!rel)
		return kvpool_tenant_set(id, t);
	ret = kvpool_tenant_set_path(id, rel, t);
	if (ret == -E2BIG)
		err_msg("%s: the kvpool module predates tenants by cgroup path; use --cgroup-id (the limit then covers that one cgroup, not a restart of it)",
			what);
	else if (ret == -ENAMETOOLONG)
		err_msg("%s: the cgroup path '%s' is longer than %d bytes",
			what, rel, KVPOOL_CGROUP_PATH_MAX - 1);
	else if (ret == -ENOSPC)
		err_msg("%s: pool %u's tenant paths would pass 1 MiB together",
			what, id);
	return ret;
}

static int tenant_remove(int argc, char **argv)
{
	enum { OPT_CGROUP = 256, OPT_CGROUP_ID, OPT_UID, OPT_ID };
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "cgroup", required_argument, NULL, OPT_CGROUP },
		{ "cgroup-id", required_argument, NULL, OPT_CGROUP_ID },
		{ "uid", required_argument, NULL, OPT_UID },
		{ "id", required_argument, NULL, OPT_ID },
		{ NULL, 0, NULL, 0 },
	};
	struct kvpool_ctl_tenant t = { .flags = KVPOOL_TENANT_REMOVE };
	bool have_cg_id = false, have_uid = false, have_id = false;
	const char *cgroup = NULL;
	char *rel = NULL;
	unsigned int id;
	int c, ret;

	optind = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'h':
			return usage_of(usage_tenant, stdout);
		case OPT_CGROUP:
			cgroup = optarg;
			break;
		case OPT_CGROUP_ID:
			if (!parse_u64(optarg, &t.cgroup_id)) {
				err_msg("--cgroup-id: not a number: '%s'",
					optarg);
				return EXIT_USAGE;
			}
			have_cg_id = true;
			break;
		case OPT_UID:
			if (!parse_uid(optarg, &t.uid)) {
				err_msg("--uid: no such user: '%s'", optarg);
				return EXIT_USAGE;
			}
			have_uid = true;
			break;
		case OPT_ID:
			if (!parse_u32(optarg, &t.tenant_id)) {
				err_msg("--id: not a tenant id: '%s'", optarg);
				return EXIT_USAGE;
			}
			have_id = true;
			break;
		default:
			return usage_of(usage_tenant, stderr);
		}
	}
	if (argc - optind != 1 || !!cgroup + have_cg_id + have_id != 1 ||
	    (have_cg_id && !have_uid) || (have_id && have_uid)) {
		err_msg("tenant remove needs POOL and one of --cgroup PATH [--uid UID], --cgroup-id N --uid UID, --id ID");
		return usage_of(usage_tenant, stderr);
	}
	if (!parse_pool(argv[optind], &id))
		return bad_pool(argv[optind]);
	if (have_id)
		t.flags |= KVPOOL_TENANT_BY_ID;
	if (cgroup) {
		ret = cgroup_rel_of(cgroup, &rel);
		if (ret)
			return ret;
		if (!have_uid)
			t.flags |= KVPOOL_TENANT_ANY_UID;
	}
	ret = tenant_set_call(id, &t, rel, "tenant remove");
	if (ret == -ENOENT) {
		err_msg("tenant remove: pool %u has no tenant with limits set so named%s",
			id, cgroup && !have_uid ?
			" (for every uid; give --uid for one user's)" : "");
		free(rel);
		return EXIT_FAIL;
	}
	free(rel);
	if (ret == -E2BIG || ret == -ENAMETOOLONG)
		return EXIT_FAIL;	/* said */
	if (ret < 0)
		return ctl_error(ret, "tenant remove", id, "tenants");
	printf("%d\n", ret);
	return EXIT_OK;
}

static int tenant_set(int argc, char **argv)
{
	enum { OPT_CGROUP = 256, OPT_CGROUP_ID, OPT_UID, OPT_MAX, OPT_MIN,
	       OPT_MAX_ROWS, OPT_LABEL };
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "cgroup", required_argument, NULL, OPT_CGROUP },
		{ "cgroup-id", required_argument, NULL, OPT_CGROUP_ID },
		{ "uid", required_argument, NULL, OPT_UID },
		{ "max", required_argument, NULL, OPT_MAX },
		{ "min", required_argument, NULL, OPT_MIN },
		{ "max-rows", required_argument, NULL, OPT_MAX_ROWS },
		{ "label", required_argument, NULL, OPT_LABEL },
		{ NULL, 0, NULL, 0 },
	};
	struct kvpool_ctl_tenant t = { 0 };
	const char *cgroup = NULL;
	bool have_id = false, have_uid = false;
	unsigned int id, *field;
	char *rel = NULL;
	int c, ret;

	optind = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'h':
			return usage_of(usage_tenant, stdout);
		case OPT_CGROUP:
			cgroup = optarg;
			continue;
		case OPT_CGROUP_ID:
			if (!parse_u64(optarg, &t.cgroup_id)) {
				err_msg("--cgroup-id: not a number: '%s'",
					optarg);
				return EXIT_USAGE;
			}
			have_id = true;
			continue;
		case OPT_UID:
			if (!parse_uid(optarg, &t.uid)) {
				err_msg("--uid: no such user: '%s'", optarg);
				return EXIT_USAGE;
			}
			have_uid = true;
			continue;
		case OPT_LABEL:
			if (strlen(optarg) >= sizeof(t.label)) {
				err_msg("--label: '%s' is longer than %zu bytes",
					optarg, sizeof(t.label) - 1);
				return EXIT_USAGE;
			}
			memcpy(t.label, optarg, strlen(optarg));
			continue;
		case OPT_MAX:
			field = &t.max_pages;
			break;
		case OPT_MIN:
			field = &t.min_pages;
			break;
		case OPT_MAX_ROWS:
			field = &t.max_rows;
			break;
		default:
			return usage_of(usage_tenant, stderr);
		}
		if (!parse_count_opt(opts[c - OPT_CGROUP + 1].name, optarg,
				     field))
			return EXIT_USAGE;
	}
	if (argc - optind != 1 || !cgroup == !have_id ||
	    (have_id && !have_uid)) {
		err_msg("tenant set needs POOL and --cgroup PATH or --cgroup-id N (one of them), --uid with --cgroup-id");
		return usage_of(usage_tenant, stderr);
	}
	if (!parse_pool(argv[optind], &id))
		return bad_pool(argv[optind]);
	if (cgroup) {
		ret = cgroup_rel_of(cgroup, &rel);
		if (ret)
			return ret;
		if (!have_uid)
			t.flags |= KVPOOL_TENANT_ANY_UID;
	}

	ret = tenant_set_call(id, &t, rel, "tenant set");
	if (ret == -EINVAL) {
		explain_tenant_einval(id, &t, rel);
		free(rel);
		return EXIT_FAIL;
	}
	free(rel);
	if (ret == -E2BIG || ret == -ENAMETOOLONG || ret == -ENOSPC)
		return EXIT_FAIL;	/* said */
	if (ret == -EMFILE) {
		err_msg("tenant set: pool %u has its maximum of 4096 tenants",
			id);
		return EXIT_FAIL;
	}
	if (ret < 0)
		return ctl_error(ret, "tenant set", id, "tenants");
	printf("%d\n", ret);
	return EXIT_OK;
}

static int tenant_list(int argc, char **argv)
{
	struct kvpool_tenant_info *t;
	bool json = false, done;
	char **cgroups, *paths;
	unsigned int id;
	size_t nr;
	int ret;

	ret = parse_one_pool(argc, argv, usage_tenant, &json, &id, &done);
	if (done)
		return ret;

	ret = fetch_tenants(id, &t, &nr, &paths);
	if (ret)
		return ctl_error(ret, "tenant list", id, "tenants");
	cgroups = tenant_cgroups(t, nr, paths);
	free(paths);
	if (json) {
		printf("{\n  \"pool_id\": %u,\n  \"tenants\": ", id);
		print_tenant_json(t, cgroups, nr, 2);
		printf("\n}\n");
	} else if (nr) {
		print_tenant_table(t, cgroups, nr, 0);
	} else {
		printf("pool %u has no tenants\n", id);
	}
	free_strings(cgroups, nr);
	free(t);
	return EXIT_OK;
}

/* A subcommand of "tenant" or "arena". */
struct subcommand {
	const char *name;
	int (*fn)(int argc, char **argv);
};

/* Run command argv[0]'s subcommand argv[1], one of the @nr in @sub. */
static int run_subcommand(int argc, char **argv, const char *usage,
			  const struct subcommand *sub, size_t nr)
{
	size_t i;

	if (argc < 2)
		return usage_of(usage, stderr);
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))
		return usage_of(usage, stdout);
	/* From here on, argv[0] is the subcommand. */
	for (i = 0; i < nr; i++)
		if (!strcmp(argv[1], sub[i].name))
			return sub[i].fn(argc - 1, argv + 1);
	err_msg("%s: unknown subcommand '%s'", argv[0], argv[1]);
	return usage_of(usage, stderr);
}

static int cmd_tenant(int argc, char **argv)
{
	static const struct subcommand sub[] = {
		{ "set", tenant_set }, { "remove", tenant_remove },
		{ "list", tenant_list },
	};

	return run_subcommand(argc, argv, usage_tenant, sub, ARRAY_SIZE(sub));
}

static int cmd_wmark(int argc, char **argv)
{
	enum { OPT_LOW = 256, OPT_HIGH };
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "low", required_argument, NULL, OPT_LOW },
		{ "high", required_argument, NULL, OPT_HIGH },
		{ NULL, 0, NULL, 0 },
	};
	unsigned int low = 0, high = 0, *field, seen = 0, id;
	struct kvpool_info in;
	int c, ret;

	optind = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'h':
			return usage_of(usage_wmark, stdout);
		case OPT_LOW:
			field = &low;
			break;
		case OPT_HIGH:
			field = &high;
			break;
		default:
			return usage_of(usage_wmark, stderr);
		}
		if (!parse_count_opt(opts[c - OPT_LOW + 1].name, optarg,
				     field))
			return EXIT_USAGE;
		seen |= 1U << (c - OPT_LOW);
	}
	if (argc - optind != 1 || seen != 0x3) {
		err_msg("wmark needs POOL, --low and --high");
		return usage_of(usage_wmark, stderr);
	}
	if (!parse_pool(argv[optind], &id))
		return bad_pool(argv[optind]);

	ret = kvpool_set_wmark(id, low, high);
	if (ret == -EINVAL) {
		err_msg("wmark: the kernel refused --low %u --high %u", low,
			high);
		if (!kvpool_pool_status(id, &in, NULL))
			fprintf(stderr, "rules: --low <= --high <= the pool's pages (pool %u: %u)\n",
				id, in.out_nr_pages);
		else
			fprintf(stderr, "rules: --low <= --high <= the pool's pages\n");
		return EXIT_FAIL;
	}
	if (ret)
		return ctl_error(ret, "wmark", id, "pressure watermarks");
	return EXIT_OK;
}

/* ---- arena ---- */

/* The rules CTL_ARENA_SET and the chunk plan hold a host arena to. */
static void arena_rules(void)
{
	fprintf(stderr, "rules: --page-bytes 1..4G; --chunks 1..%d, each a multiple of the page and of the CPU page (%ld bytes), none past the pool's pages\n",
		KVPOOL_ARENA_MAX_CHUNKS, sysconf(_SC_PAGESIZE));
}

/*
 * The CUDA kind: the plan needs the GPU's granularity, which only the
 * driver knows, so the library plans and says what went wrong in words.
 */
static int arena_create_cuda(unsigned int id, unsigned long long page_bytes,
			     unsigned int chunks)
{
	uint32_t idx;
	int ret;

	ret = kvpool_arena_create_cuda(id, page_bytes, chunks, &idx);
	if (!ret)
		return EXIT_OK;
	switch (-ret) {
	case ELIBACC:
		err_msg("arena create: %s", kvpool_arena_error());
		return EXIT_NO_DRIVER;
	case EEXIST:
		err_msg("arena create: pool %u has an arena already; it is set once, until the pool is destroyed (kvpoolctl arena show %u)",
			id, id);
		return EXIT_FAIL;
	case ENODEV:
	case ENOENT:
	case EPERM:
	case EACCES:
		return ctl_error(ret, "arena create", id, "arenas");
	}
	if (idx != KVPOOL_NO_INDEX && idx < chunks)
		err_msg("arena create: chunk %u: %s", idx,
			kvpool_arena_error());
	else
		err_msg("arena create: %s", kvpool_arena_error());
	return EXIT_FAIL;
}

static int arena_create(int argc, char **argv)
{
	enum { OPT_HOST = 256, OPT_CUDA, OPT_PAGE_BYTES, OPT_CHUNKS };
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "host", no_argument, NULL, OPT_HOST },
		{ "cuda", no_argument, NULL, OPT_CUDA },
		{ "page-bytes", required_argument, NULL, OPT_PAGE_BYTES },
		{ "chunks", required_argument, NULL, OPT_CHUNKS },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t bytes[KVPOOL_ARENA_MAX_CHUNKS], off = 0;
	unsigned long long page_bytes = 0;
	unsigned int id, chunks = 1, i;
	bool host = false, cuda = false, have_bytes = false;
	struct kvpool_info in;
	uint32_t idx;
	int c, ret;

	optind = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'h':
			return usage_of(usage_arena, stdout);
		case OPT_HOST:
			host = true;
			break;
		case OPT_CUDA:
			cuda = true;
			break;
		case OPT_PAGE_BYTES:
			ret = parse_scaled(optarg, ULLONG_MAX, &page_bytes);
			if (ret != NUM_OK) {
				bad_number("page-bytes", optarg, ret,
					   ULLONG_MAX);
				return EXIT_USAGE;
			}
			have_bytes = true;
			break;
		case OPT_CHUNKS:
			if (!parse_count_opt("chunks", optarg, &chunks))
				return EXIT_USAGE;
			break;
		default:
			return usage_of(usage_arena, stderr);
		}
	}
	if (argc - optind != 1 || host == cuda || !have_bytes) {
		err_msg("arena create needs POOL, one kind (--host or --cuda) and --page-bytes");
		return usage_of(usage_arena, stderr);
	}
	if (!parse_pool(argv[optind], &id))
		return bad_pool(argv[optind]);
	if (cuda)
		return arena_create_cuda(id, page_bytes, chunks);

	/* The plan first, from sysfs: its refusal says what to change. */
	ret = kvpool_pool_status(id, &in, NULL);
	if (ret)
		return pool_error(ret, "arena create", (int)id);
	ret = kvpool_arena_plan_host(in.out_nr_pages, page_bytes, chunks,
				     bytes);
	if (ret == -EINVAL) {
		err_msg("arena create: pool %u's %u pages of %llu bytes do not split into %u chunk%s",
			id, in.out_nr_pages, page_bytes, chunks,
			chunks == 1 ? "" : "s");
		arena_rules();
		return EXIT_FAIL;
	}
	if (ret)
		return pool_error(ret, "arena create", (int)id);

	ret = kvpool_arena_create_host(id, page_bytes, chunks, &idx);
	if (!ret)
		return EXIT_OK;
	if (ret == -EEXIST) {
		err_msg("arena create: pool %u has an arena already; it is set once, until the pool is destroyed (kvpoolctl arena show %u)",
			id, id);
		return EXIT_FAIL;
	}
	if (idx != KVPOOL_NO_INDEX && idx < chunks) {
		for (i = 0; i < idx; i++)
			off += bytes[i];
		err_msg("arena create: chunk %u (offset %llu, %llu bytes): %s",
			idx, (unsigned long long)off,
			(unsigned long long)bytes[idx], kvpool_strerror(ret));
		return EXIT_FAIL;
	}
	if (ret == -EINVAL) {
		err_msg("arena create: the kernel refused --page-bytes %llu in %u chunk%s",
			page_bytes, chunks, chunks == 1 ? "" : "s");
		arena_rules();
		return EXIT_FAIL;
	}
	return ctl_error(ret, "arena create", id, "arenas");
}

/*
 * Every chunk of @kp's arena of @nr chunks into @out, in batches: the
 * kernel tells a chunk's place only with a descriptor of it, closed here
 * at once. Returns 0 or -errno.
 */
static int fetch_chunks(struct kvpool *kp, __u32 nr,
			struct kvpool_arena_fd *out)
{
	__u32 first, n, i;
	int ret;

	for (first = 0; first < nr; first += n) {
		n = nr - first < 16 ? nr - first : 16;
		ret = kvpool_arena_fds(kp, first, n, out + first, NULL);
		if (ret < 0)
			return ret;
		for (i = first; i < first + n; i++) {
			close(out[i].out_fd);
			out[i].out_fd = -1;
		}
	}
	return 0;
}

static void print_arena_json(unsigned int id, const struct kvpool_arena *a,
			     const struct kvpool_arena_fd *c, __u32 nr_pages,
			     const char *gpu)
{
	__u32 i;

	printf("{\n  \"pool_id\": %u,\n", id);
	printf("  \"kind\": \"%s\",\n", arena_kind(a->out_kind));
	/* null: the pool names no GPU. */
	printf("  \"gpu\": ");
	json_string_or_null(gpu);
	printf(",\n");
	printf("  \"page_bytes\": %llu,\n",
	       (unsigned long long)a->out_page_bytes);
	printf("  \"bytes\": %llu,\n", (unsigned long long)a->out_bytes);
	printf("  \"nr_pages\": %u,\n", nr_pages);
	printf("  \"chunks\": [");
	for (i = 0; i < a->out_nr_chunks; i++)
		printf("%s\n    { \"index\": %u, \"offset\": %llu, \"bytes\": %llu }",
		       i ? "," : "", i, (unsigned long long)c[i].out_offset,
		       (unsigned long long)c[i].out_bytes);
	printf("%s]\n}\n", a->out_nr_chunks ? "\n  " : "");
}

static void print_arena(unsigned int id, const struct kvpool_arena *a,
			const struct kvpool_arena_fd *c, __u32 nr_pages,
			const char *gpu)
{
	__u32 i;

	if (a->out_kind == KVPOOL_ARENA_NONE) {
		printf("pool %u has no arena (kvpoolctl arena create --help)\n",
		       id);
		return;
	}
	printf("pool %u arena: %s\n", id, arena_kind(a->out_kind));
	if (a->out_kind == KVPOOL_ARENA_CUDA)
		printf("  gpu         %s\n", *gpu ? gpu : "- (none named)");
	printf("  page bytes  %llu\n", (unsigned long long)a->out_page_bytes);
	printf("  bytes       %llu (%llu pages; the pool's ids are 0..%u)\n",
	       (unsigned long long)a->out_bytes,
	       (unsigned long long)(a->out_bytes / a->out_page_bytes),
	       nr_pages - 1);
	printf("  chunks      %u\n", a->out_nr_chunks);
	printf("  %5s  %14s  %14s\n", "CHUNK", "OFFSET", "BYTES");
	for (i = 0; i < a->out_nr_chunks; i++)
		printf("  %5u  %14llu  %14llu\n", i,
		       (unsigned long long)c[i].out_offset,
		       (unsigned long long)c[i].out_bytes);
}

static int arena_show(int argc, char **argv)
{
	struct kvpool_arena_fd *chunks = NULL;
	char gpu[PCI_NAME_LEN];
	struct kvpool_arena a;
	struct kvpool_info in;
	struct kvpool *kp;
	bool json = false, done;
	unsigned int id;
	int ret;

	ret = parse_one_pool(argc, argv, usage_arena, &json, &id, &done);
	if (done)
		return ret;

	ret = open_pool(id, &kp);
	if (ret)
		return ret;
	kvpool_info(kp, &in);
	ret = kvpool_arena_info(kp, &a);
	if (!ret && a.out_kind != KVPOOL_ARENA_NONE) {
		chunks = calloc(a.out_nr_chunks ? a.out_nr_chunks : 1,
				sizeof(*chunks));
		ret = chunks ? fetch_chunks(kp, a.out_nr_chunks, chunks) :
			       -ENOMEM;
	}
	kvpool_close(kp);
	if (ret) {
		free(chunks);
		return ctl_error(ret, "arena show", id, "arenas");
	}

	if (a.out_kind == KVPOOL_ARENA_NONE)
		a.out_nr_chunks = 0;
	pool_gpu_name(id, gpu, sizeof(gpu));
	if (json)
		print_arena_json(id, &a, chunks, in.out_nr_pages, gpu);
	else
		print_arena(id, &a, chunks, in.out_nr_pages, gpu);
	free(chunks);
	return EXIT_OK;
}

static int cmd_arena(int argc, char **argv)
{
	static const struct subcommand sub[] = {
		{ "create", arena_create }, { "show", arena_show },
	};

	return run_subcommand(argc, argv, usage_arena, sub, ARRAY_SIZE(sub));
}

/* ---- gpus ---- */

/* One GPU of the host: a row of gpus, by PCI address. */
struct gpu {
	uint32_t domain, devid;
	char addr[PCI_NAME_LEN];
	const char *source;	/* the first that found it: drm, nvidia, pci */
	bool have_ids;
	unsigned int vendor, device;
	char render[64];	/* the DRM render node; "" if none */
	char driver[64];	/* the bound driver's name; "" if none */
	unsigned int *pools;	/* made for it (create --gpu) */
	size_t nr_pools;
};

struct gpu_list {
	struct gpu *v;
	size_t nr, alloc;
};

/*
 * The row of the GPU at @domain/@devid into *@out: the one there is, or a
 * new one found by @source. Returns 0 or -ENOMEM.
 */
static int gpu_add(struct gpu_list *l, uint32_t domain, uint32_t devid,
		   const char *source, struct gpu **out)
{
	struct gpu *g;
	size_t i;

	for (i = 0; i < l->nr; i++) {
		if (l->v[i].domain == domain && l->v[i].devid == devid) {
			*out = &l->v[i];
			return 0;
		}
	}
	if (l->nr == l->alloc) {
		size_t n = l->alloc ? 2 * l->alloc : 8;

		g = realloc(l->v, n * sizeof(*g));
		if (!g)
			return -ENOMEM;
		l->v = g;
		l->alloc = n;
	}
	g = &l->v[l->nr++];
	memset(g, 0, sizeof(*g));
	g->domain = domain;
	g->devid = devid;
	g->source = source;
	pci_name(g->addr, sizeof(g->addr), domain, devid);
	*out = g;
	return 0;
}

/*
 * What libdrm finds: every DRM device on a PCI bus, with its ids and
 * render node. Flags 0: nothing is opened and no device woken up to read
 * its revision. No /dev/dri (no DRM driver loaded) is no device.
 */
static int gpus_from_drm(struct gpu_list *l)
{
	drmDevicePtr *devs;
	int n, i, ret = 0;

	n = drmGetDevices2(0, NULL, 0);
	if (n <= 0)
		return 0;
	devs = calloc((size_t)n, sizeof(*devs));
	if (!devs)
		return -ENOMEM;
	n = drmGetDevices2(0, devs, n);
	for (i = 0; i < n && !ret; i++) {
		const drmPciBusInfo *bus;
		struct gpu *g;

		if (devs[i]->bustype != DRM_BUS_PCI)
			continue;
		bus = devs[i]->businfo.pci;
		ret = gpu_add(l, bus->domain,
			      (uint32_t)bus->bus << 8 | bus->dev << 3 |
			      bus->func, "drm", &g);
		if (ret)
			break;
		if (!g->have_ids) {
			g->vendor = devs[i]->deviceinfo.pci->vendor_id;
			g->device = devs[i]->deviceinfo.pci->device_id;
			g->have_ids = true;
		}
		if (devs[i]->available_nodes & (1 << DRM_NODE_RENDER))
			snprintf(g->render, sizeof(g->render), "%s",
				 devs[i]->nodes[DRM_NODE_RENDER]);
	}
	if (n > 0)
		drmFreeDevices(devs, n);
	free(devs);
	return ret;
}

/*
 * What NVIDIA's driver lists: a folder per GPU, named by its address,
 * with an information file. No folder: the driver is not loaded.
 */
static int gpus_from_nvidia(struct gpu_list *l)
{
	uint32_t domain, devid;
	struct dirent *de;
	char path[NAME_MAX + 16];
	struct gpu *g;
	int ret = 0;
	DIR *dir;

	dir = opendir(NVIDIA_GPUS);
	if (!dir)
		return 0;
	while (!ret && (de = readdir(dir))) {
		if (kvpool_pci_parse(de->d_name, &domain, &devid))
			continue;
		snprintf(path, sizeof(path), "%s/information", de->d_name);
		if (faccessat(dirfd(dir), path, F_OK, 0))
			continue;
		ret = gpu_add(l, domain, devid, "nvidia", &g);
	}
	closedir(dir);
	return ret;
}

/*
 * Every PCI display controller (class 0x03) sysfs has, whether a driver
 * is bound to it or not. No PCI bus in sysfs is no GPU.
 */
static int gpus_from_pci(struct gpu_list *l)
{
	uint32_t domain, devid;
	unsigned int class;
	struct dirent *de;
	struct gpu *g;
	int ret = 0;
	DIR *dir;

	dir = opendir(PCI_DEVICES);
	if (!dir)
		return errno == ENOENT ? 0 : -errno;
	while (!ret && (de = readdir(dir))) {
		if (kvpool_pci_parse(de->d_name, &domain, &devid) ||
		    pci_attr_hex(de->d_name, "class", &class) ||
		    class >> 16 != PCI_CLASS_DISPLAY)
			continue;
		ret = gpu_add(l, domain, devid, "pci", &g);
	}
	closedir(dir);
	return ret;
}

/* The ids sysfs has for a GPU libdrm did not describe, and its driver. */
static void gpu_details(struct gpu *g)
{
	char path[PATH_MAX], link[PATH_MAX];
	const char *name;
	ssize_t n;

	if (!g->have_ids)
		g->have_ids = !pci_attr_hex(g->addr, "vendor", &g->vendor) &&
			      !pci_attr_hex(g->addr, "device", &g->device);
	snprintf(path, sizeof(path), PCI_DEVICES "/%s/driver", g->addr);
	n = readlink(path, link, sizeof(link) - 1);
	if (n <= 0)
		return;
	link[n] = '\0';
	/* ../../../bus/pci/drivers/nvidia: the driver's name is its last. */
	name = strrchr(link, '/') ? strrchr(link, '/') + 1 : link;
	snprintf(g->driver, sizeof(g->driver), "%.*s",
		 (int)sizeof(g->driver) - 1, name);
}

/*
 * The pools made for each GPU, from their gpu attributes. No module is
 * no pool; a pool gone meanwhile, or unreadable, is left out.
 */
static int gpu_pools(struct gpu_list *l)
{
	uint32_t domain, devid;
	unsigned int *ids, *tmp;
	int n, m, i;
	size_t j;

	n = kvpool_pool_list(NULL, 0);
	if (n <= 0)
		return n == -ENOMEM ? n : 0;
	ids = calloc((size_t)n, sizeof(*ids));
	if (!ids)
		return -ENOMEM;
	m = kvpool_pool_list(ids, (unsigned int)n);
	for (i = 0; i < m && i < n; i++) {
		if (kvpool_pool_gpu(ids[i], &domain, &devid) != 1)
			continue;
		for (j = 0; j < l->nr; j++) {
			struct gpu *g = &l->v[j];

			if (g->domain != domain || g->devid != devid)
				continue;
			tmp = realloc(g->pools,
				      (g->nr_pools + 1) * sizeof(*tmp));
			if (!tmp) {
				free(ids);
				return -ENOMEM;
			}
			g->pools = tmp;
			g->pools[g->nr_pools++] = ids[i];
		}
	}
	free(ids);
	return 0;
}

/* PCI address order, the order nvidia-smi numbers the GPUs in. */
static int gpu_cmp(const void *a, const void *b)
{
	const struct gpu *x = a, *y = b;

	if (x->domain != y->domain)
		return x->domain < y->domain ? -1 : 1;
	return (x->devid > y->devid) - (x->devid < y->devid);
}

/* The GPUs of the host, in PCI address order. Returns 0 or -errno. */
static int find_gpus(struct gpu_list *l)
{
	size_t i;
	int ret;

	/* In this order: a GPU's source is the first that finds it. */
	ret = GPUS_FROM_DRM ? gpus_from_drm(l) : 0;
	if (!ret)
		ret = gpus_from_nvidia(l);
	if (!ret)
		ret = gpus_from_pci(l);
	if (!ret)
		ret = gpu_pools(l);
	if (ret)
		return ret;
	for (i = 0; i < l->nr; i++)
		gpu_details(&l->v[i]);
	if (l->nr)
		qsort(l->v, l->nr, sizeof(*l->v), gpu_cmp);
	return 0;
}

static void free_gpus(struct gpu_list *l)
{
	size_t i;

	for (i = 0; i < l->nr; i++)
		free(l->v[i].pools);
	free(l->v);
}

/* The table's columns; INDEX alone is right-aligned. */
enum {
	GC_INDEX, GC_ADDR, GC_IDS, GC_RENDER, GC_DRIVER, GC_POOLS, GC_SOURCE,
	GC_NR
};

static const char *const gpu_heads[GC_NR] = {
	"INDEX", "ADDRESS", "VENDOR:DEVICE", "RENDER", "DRIVER", "POOLS",
	"SOURCE",
};

#define GCELL	72	/* a render node or driver name < 64, pools < 72 */

static void gpu_cells(const struct gpu *g, size_t index,
		      char cell[GC_NR][GCELL])
{
	size_t i, len = 0;

	snprintf(cell[GC_INDEX], GCELL, "%zu", index);
	snprintf(cell[GC_ADDR], GCELL, "%s", g->addr);
	if (g->have_ids)
		snprintf(cell[GC_IDS], GCELL, "%04x:%04x", g->vendor,
			 g->device);
	else
		snprintf(cell[GC_IDS], GCELL, "-");
	snprintf(cell[GC_RENDER], GCELL, "%s", *g->render ? g->render : "-");
	snprintf(cell[GC_DRIVER], GCELL, "%s", *g->driver ? g->driver : "-");
	snprintf(cell[GC_POOLS], GCELL, "-");
	/* "0,3,5"; a list too long for the cell ends in "...". */
	for (i = 0; i < g->nr_pools; i++) {
		int w = snprintf(cell[GC_POOLS] + len, GCELL - len, "%s%u",
				 i ? "," : "", g->pools[i]);

		if (w < 0 || (size_t)w >= GCELL - len - 4) {
			snprintf(cell[GC_POOLS] + len, GCELL - len, ",...");
			break;
		}
		len += (size_t)w;
	}
	snprintf(cell[GC_SOURCE], GCELL, "%s", g->source);
}

static void print_gpu_table(const struct gpu_list *l)
{
	char cell[GC_NR][GCELL];
	int width[GC_NR];
	size_t i, j;

	for (j = 0; j < GC_NR; j++)
		width[j] = (int)strlen(gpu_heads[j]);
	for (i = 0; i < l->nr; i++) {
		gpu_cells(&l->v[i], i, cell);
		for (j = 0; j < GC_NR; j++)
			if ((int)strlen(cell[j]) > width[j])
				width[j] = (int)strlen(cell[j]);
	}
	/* The last column is not padded: no blanks at the end of a line. */
	width[GC_SOURCE] = 0;
	for (j = 0; j < GC_NR; j++)
		printf("%s%*s", j ? "  " : "", j ? -width[j] : width[j],
		       gpu_heads[j]);
	putchar('\n');
	for (i = 0; i < l->nr; i++) {
		gpu_cells(&l->v[i], i, cell);
		for (j = 0; j < GC_NR; j++)
			printf("%s%*s", j ? "  " : "", j ? -width[j] : width[j],
			       cell[j]);
		putchar('\n');
	}
}

static void print_gpu_json(const struct gpu_list *l)
{
	size_t i, j;

	printf("[");
	for (i = 0; i < l->nr; i++) {
		const struct gpu *g = &l->v[i];

		printf("%s\n  {\n", i ? "," : "");
		printf("    \"index\": %zu,\n", i);
		printf("    \"address\": \"%s\",\n", g->addr);
		if (g->have_ids)
			printf("    \"vendor_id\": \"%04x\",\n    \"device_id\": \"%04x\",\n",
			       g->vendor, g->device);
		else
			printf("    \"vendor_id\": null,\n    \"device_id\": null,\n");
		printf("    \"render_node\": ");
		json_string_or_null(g->render);
		printf(",\n    \"driver\": ");
		json_string_or_null(g->driver);
		printf(",\n    \"pools\": [");
		for (j = 0; j < g->nr_pools; j++)
			printf("%s%u", j ? ", " : "", g->pools[j]);
		printf("],\n    \"source\": \"%s\"\n  }", g->source);
	}
	printf("%s]\n", l->nr ? "\n" : "");
}

static int cmd_gpus(int argc, char **argv)
{
	struct gpu_list l = { 0 };
	bool json = false, done;
	int ret;

	ret = parse_simple(argc, argv, usage_gpus, &json, &done);
	if (done)
		return ret;
	if (optind != argc)
		return usage_of(usage_gpus, stderr);

	ret = find_gpus(&l);
	if (ret) {
		free_gpus(&l);
		err_msg("gpus: %s", strerror(-ret));
		return EXIT_FAIL;
	}
	if (json)
		print_gpu_json(&l);
	else if (l.nr)
		print_gpu_table(&l);
	else
		printf("no GPUs found (no DRM device, no NVIDIA GPU in " NVIDIA_GPUS ", no PCI display controller in " PCI_DEVICES ")\n");
	free_gpus(&l);
	return EXIT_OK;
}

/* ---- main ---- */

struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *usage;
};

static const struct command commands[] = {
	{ "status", cmd_status, usage_status },
	{ "info", cmd_info, usage_info },
	{ "verify", cmd_verify, usage_verify },
	{ "create", cmd_create, usage_create },
	{ "destroy", cmd_destroy, usage_destroy },
	{ "tenant", cmd_tenant, usage_tenant },
	{ "wmark", cmd_wmark, usage_wmark },
	{ "arena", cmd_arena, usage_arena },
	{ "gpus", cmd_gpus, usage_gpus },
};

static const struct command *find_command(const char *name)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(commands); i++)
		if (!strcmp(commands[i].name, name))
			return &commands[i];
	return NULL;
}

static int print_usage(FILE *f)
{
	size_t i;

	fprintf(f, "usage: %s [-h|--help] [--version] COMMAND [ARGS]\n\n"
		"Show, check, create and destroy kvpool pools (/dev/kvpoolN),\n"
		"set their tenants' limits and pressure watermarks, give them\n"
		"arenas (the memory the page ids name), list the GPUs.\n"
		"POOL is N, kvpoolN or /dev/kvpoolN.\n\ncommands:\n", prog);
	for (i = 0; i < ARRAY_SIZE(commands); i++) {
		const char *u = commands[i].usage;
		int len;

		for (; (len = synopsis_line(u)); u += len + (u[len] == '\n'))
			fprintf(f, "  %.*s\n", len, u);
	}
	fprintf(f, "\n'%s COMMAND --help' or '%s help COMMAND' tells more; "
		"see kvpoolctl(8).\n", prog, prog);
	return f == stdout ? EXIT_OK : EXIT_USAGE;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	const struct command *cmd;
	int c;

	/* '+': stop at the command; its options are its own. */
	while ((c = getopt_long(argc, argv, "+hV", opts, NULL)) != -1) {
		switch (c) {
		case 'h':
			return print_usage(stdout);
		case 'V':
			/* kvpool's version, from the libkvpool linked in. */
			printf("kvpoolctl %s (kvpool ABI %d)\n",
			       kvpool_version(), KVPOOL_ABI_VERSION);
			return EXIT_OK;
		default:
			return print_usage(stderr);
		}
	}
	if (optind >= argc)
		return print_usage(stderr);

	argc -= optind;
	argv += optind;
	if (!strcmp(argv[0], "help")) {
		if (argc == 1)
			return print_usage(stdout);
		cmd = find_command(argv[1]);
		if (!cmd || argc > 2)
			return print_usage(stderr);
		return usage_of(cmd->usage, stdout);
	}

	cmd = find_command(argv[0]);
	if (!cmd) {
		err_msg("unknown command '%s'", argv[0]);
		return print_usage(stderr);
	}
	return cmd->fn(argc, argv);
}
