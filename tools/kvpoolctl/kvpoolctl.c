// SPDX-License-Identifier: GPL-2.0-only
/*
 * kvpoolctl: show, check, create and destroy kvpool pools, set their
 * tenants' limits and pressure watermarks, give them arenas, and list the
 * GPUs pools can be made for.
 *
 * Copyright (C) 2026 The kvpool authors
 *
 * status and metrics read sysfs, so they work as any user; as root they
 * list tenants through /dev/kvpool-control and never open a pool (so
 * never keep one from being destroyed), and for any other user they open
 * it for a moment, where its mode allows, to show that user's own tenant
 * (KVPOOL_STATS). top shows what status and clients show, again and
 * again; clients reads /proc/PID/fdinfo. info and verify open the pool
 * (becoming a client for the moment), as arena show does; create,
 * destroy, tenant, wmark and arena create go through /dev/kvpool-control.
 * gpus reads libdrm's device list, /proc/driver/nvidia and sysfs, as any
 * user, and needs no module. See kvpoolctl(8) for the exit codes.
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
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
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
"status [--json | --csv] [-o COLS] [--units pages|tokens|bytes] [POOL]\n"
"    Show every pool (or POOL): pages (prefix-cache pages evictable and\n"
"    pinned, pages of rows in flight as export files), rows, pressure\n"
"    watermarks, tenants and clients, from sysfs, and a table of each\n"
"    pool's tenants: use, limits and the pages they are asked back. Needs\n"
"    no privilege: every tenant as root (CAP_SYS_ADMIN), else only the\n"
"    user's own, where they may open the pool (which status then does,\n"
"    for a moment; as root it does not open pools).\n"
"    -j, --json   one JSON object, the sysfs attribute names as keys\n"
"    --csv        the pools as comma-separated values, a line of keys first\n"
"    -o COLS      only these columns of the pools, by key (as --json's)\n"
"    --units U    page counts in pages (default), tokens, or bytes (pools\n"
"                 with an arena; opens the pool to ask its page size)\n";

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
"tenant list [--json | --csv] [-o COLS] [--units pages|tokens|bytes] POOL\n"
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
"    -j, --json   one JSON object\n"
"    --csv        comma-separated values, a line of column keys first\n"
"    -o COLS      these columns, in this order (keys or headings)\n"
"    --units U    page counts in pages (default), tokens or bytes\n";

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
	int units;
	const char *cols;	/* -o, or NULL: the default columns */
	int sel[64];		/* the columns to write, in order */
	size_t nsel;
};

/*
 * Resolve -o's list (or the default columns) of @cols into @o->sel. A
 * name is a key or a heading, in any case. Returns an exit code.
 */
static int select_columns(struct outfmt *o, const struct colspec *cols,
			  size_t ncols)
{
	char *list, *tok, *save;
	size_t i;

	o->nsel = 0;
	if (!o->cols) {
		for (i = 0; i < ncols; i++)
			if (cols[i].dflt || o->csv)
				o->sel[o->nsel++] = (int)i;
		return EXIT_OK;
	}
	list = strdup(o->cols);
	if (!list)
		return pool_error(-ENOMEM, "malloc", -1);
	for (tok = strtok_r(list, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		for (i = 0; i < ncols; i++)
			if (!strcasecmp(tok, cols[i].key) ||
			    !strcasecmp(tok, cols[i].head))
				break;
		if (i == ncols || o->nsel == ARRAY_SIZE(o->sel)) {
			err_msg("-o: no column '%s'; the columns are:", tok);
			for (i = 0; i < ncols; i++)
				fprintf(stderr, "%s%s", i ? "," : "  ",
					cols[i].key);
			fputc('\n', stderr);
			free(list);
			return EXIT_USAGE;
		}
		o->sel[o->nsel++] = (int)i;
	}
	free(list);
	if (!o->nsel) {
		err_msg("-o: no columns given");
		return EXIT_USAGE;
	}
	return EXIT_OK;
}

/* A page count in @o's units: @factor per page, 0 if unknown. */
static struct cell page_cell(unsigned long long pages, int kind,
			     unsigned long long factor)
{
	struct cell c = { .kind = kind, .num = pages };

	if (factor == 0 && kind != CK_NULL)
		c.kind = CK_NULL;
	else
		c.num = pages * factor;
	return c;
}

/* Cell @c as text into @buf; "-" for nothing or no limit. */
static const char *cell_text(const struct cell *c, char *buf, size_t len)
{
	switch (c->kind) {
	case CK_STR:
		return *c->str ? c->str : "-";
	case CK_LIMIT:
		if (!c->num)
			return "-";
		/* fall through */
	case CK_NUM:
		snprintf(buf, len, "%llu", c->num);
		return buf;
	case CK_BOOL:
		return c->num ? "yes" : "no";
	}
	return "-";
}

/* A CSV field (RFC 4180): quoted when it must be; text as UTF-8. */
static void csv_field(FILE *f, const struct cell *c)
{
	const char *s;
	char *u;

	switch (c->kind) {
	case CK_NUM:
	case CK_LIMIT:
		fprintf(f, "%llu", c->num);
		return;
	case CK_BOOL:
		fputs(c->num ? "true" : "false", f);
		return;
	case CK_NULL:
		return;
	}
	u = utf8_sanitized(c->str);
	s = u ? u : "";
	if (!strpbrk(s, ",\"\r\n")) {
		fputs(s, f);
	} else {
		fputc('"', f);
		for (; *s; s++) {
			if (*s == '"')
				fputc('"', f);
			fputc(*s, f);
		}
		fputc('"', f);
	}
	free(u);
}

/*
 * Write @nrows rows of @ncols cells each (row-major) as @o asks: CSV with
 * a line of keys first, or aligned text under the headings, @indent
 * spaces in. The last column is not padded: no blanks at a line's end.
 */
static void put_table_to(FILE *f, const struct colspec *cols, size_t ncols,
			 const struct cell *cells, size_t nrows,
			 const struct outfmt *o, int indent)
{
	int width[64] = { 0 };
	char buf[32];
	size_t i, j;

	if (o->csv) {
		for (j = 0; j < o->nsel; j++)
			fprintf(f, "%s%s", j ? "," : "", cols[o->sel[j]].key);
		fputc('\n', f);
		for (i = 0; i < nrows; i++) {
			for (j = 0; j < o->nsel; j++) {
				if (j)
					fputc(',', f);
				csv_field(f, &cells[i * ncols + o->sel[j]]);
			}
			fputc('\n', f);
		}
		return;
	}
	for (j = 0; j < o->nsel; j++) {
		width[j] = (int)strlen(cols[o->sel[j]].head);
		for (i = 0; i < nrows; i++) {
			int w = (int)strlen(cell_text(&cells[i * ncols + o->sel[j]],
						      buf, sizeof(buf)));

			if (w > width[j])
				width[j] = w;
		}
	}
	for (i = 0; i <= nrows; i++) {
		fprintf(f, "%*s", indent, "");
		for (j = 0; j < o->nsel; j++) {
			const struct colspec *c = &cols[o->sel[j]];
			const char *t = !i ? c->head :
				cell_text(&cells[(i - 1) * ncols + o->sel[j]],
					  buf, sizeof(buf));
			int w = width[j];

			if (c->left)
				w = j + 1 < o->nsel ? -w : 0;
			fprintf(f, "%s%*s", j ? "  " : "", w, t);
		}
		fputc('\n', f);
	}
}

static void put_table(const struct colspec *cols, size_t ncols,
		      const struct cell *cells, size_t nrows,
		      const struct outfmt *o, int indent)
{
	put_table_to(stdout, cols, ncols, cells, nrows, o, indent);
}

/*
 * The JSON object of one row of the table: every column, under its key,
 * @indent spaces in (its "{" not included).
 */
static void put_json_object(const struct colspec *cols, size_t ncols,
			    const struct cell *row, int indent)
{
	size_t j;

	printf("{");
	for (j = 0; j < ncols; j++) {
		printf("%s\n%*s\"%s\": ", j ? "," : "", indent + 2, "",
		       cols[j].key);
		switch (row[j].kind) {
		case CK_NUM:
		case CK_LIMIT:
			printf("%llu", row[j].num);
			break;
		case CK_STR:
			json_string(row[j].str);
			break;
		case CK_BOOL:
			printf("%s", row[j].num ? "true" : "false");
			break;
		default:
			printf("null");
		}
	}
	printf("\n%*s}", indent, "");
}

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

static const struct colspec tenant_cols[TC_NR] = {
	[TC_ID]		= { "TENANT", "tenant_id", false, true, false },
	[TC_UID]	= { "UID", "uid", false, true, false },
	[TC_BY_PATH]	= { "BY-PATH", "by_path", false, false, false },
	[TC_CONFIGURED]	= { "CONFIGURED", "configured", false, false, false },
	[TC_CGROUP_ID]	= { "CGROUP-ID", "cgroup_id", false, false, false },
	[TC_CGROUP]	= { "CGROUP", "cgroup", true, true, false },
	[TC_LABEL]	= { "LABEL", "label", true, true, false },
	[TC_PAGES]	= { "PAGES", "pages", false, true, true },
	[TC_CACHE]	= { "CACHE", "cache_pages", false, true, true },
	[TC_ROWS]	= { "ROWS", "rows", false, true, false },
	[TC_CLIENTS]	= { "CLIENTS", "nr_clients", false, true, false },
	[TC_MAX]	= { "MAX", "max_pages", false, true, true },
	[TC_MIN]	= { "MIN", "min_pages", false, true, true },
	[TC_MAXROWS]	= { "MAX-ROWS", "max_rows", false, true, false },
	[TC_ASK]	= { "ASK", "ask_pages", false, true, true },
};

/* A cgroup's id as text, when its path was not found. */
struct tenant_scratch {
	char cgroup_id[24];
};

/*
 * The cells of tenant @r (TC_NR of them), page counts times @factor
 * (0: unknown, e.g. bytes without an arena); @json: the cgroup cell is
 * null, not its id, when its path is not known.
 */
static void tenant_cells(struct tenant_row *r, struct cell *c,
			 unsigned long long factor, bool json,
			 struct tenant_scratch *scr)
{
	const struct kvpool_tenant_info *t = &r->t;
	int own = r->own ? CK_NULL : CK_NUM;

	memcpy(r->label, t->label, KVPOOL_LABEL_LEN);
	r->label[KVPOOL_LABEL_LEN] = '\0';
	c[TC_ID] = (struct cell){ CK_NUM, t->tenant_id, NULL };
	/* A tenant of every uid: "*" in text, null in JSON. */
	if (t->flags & KVPOOL_TENANT_ANY_UID)
		c[TC_UID] = (struct cell){ json ? CK_NULL : CK_STR, 0, "*" };
	else
		c[TC_UID] = (struct cell){ CK_NUM, t->uid, NULL };
	c[TC_BY_PATH] = (struct cell){ CK_BOOL,
				       !!(t->flags & KVPOOL_TENANT_BY_PATH),
				       NULL };
	c[TC_CONFIGURED] = (struct cell){ CK_BOOL,
					  !!(t->flags & KVPOOL_TENANT_CONFIGURED),
					  NULL };
	c[TC_CGROUP_ID] = (struct cell){ CK_NUM, t->cgroup_id, NULL };
	snprintf(scr->cgroup_id, sizeof(scr->cgroup_id), "%llu",
		 (unsigned long long)t->cgroup_id);
	if (r->cgroup)
		c[TC_CGROUP] = (struct cell){ CK_STR, 0, r->cgroup };
	else
		c[TC_CGROUP] = (struct cell){ json ? CK_NULL : CK_STR, 0,
					      scr->cgroup_id };
	c[TC_LABEL] = (struct cell){ r->own ? CK_NULL : CK_STR, 0, r->label };
	if (r->own) {
		c[TC_BY_PATH].kind = CK_NULL;
		c[TC_CONFIGURED].kind = CK_NULL;
	}
	c[TC_PAGES] = page_cell(t->pages, CK_NUM, factor);
	c[TC_CACHE] = page_cell(t->cache_pages, own, factor);
	c[TC_ROWS] = (struct cell){ CK_NUM, t->rows, NULL };
	c[TC_CLIENTS] = (struct cell){ own, t->nr_clients, NULL };
	c[TC_MAX] = page_cell(t->max_pages, CK_LIMIT, factor);
	c[TC_MIN] = page_cell(t->min_pages, CK_LIMIT, factor);
	c[TC_MAXROWS] = (struct cell){ CK_LIMIT, t->max_rows, NULL };
	c[TC_ASK] = page_cell(t->ask_pages, own, factor);
}

/*
 * @nr tenants as @o asks (JSON: an array, its "[" not included, @indent
 * spaces in).
 */
static void print_tenants_as(struct tenant_row *rows, size_t nr,
			     const struct outfmt *o, unsigned long long factor,
			     int indent)
{
	struct tenant_scratch *scr;
	struct cell *cells;
	size_t i;

	cells = calloc(nr ? nr * TC_NR : 1, sizeof(*cells));
	scr = calloc(nr ? nr : 1, sizeof(*scr));
	if (!cells || !scr) {
		free(cells);
		free(scr);
		err_msg("out of memory");
		return;
	}
	for (i = 0; i < nr; i++)
		tenant_cells(&rows[i], &cells[i * TC_NR], factor, o->json,
			     &scr[i]);
	if (o->json) {
		printf("[");
		for (i = 0; i < nr; i++) {
			printf("%s\n%*s", i ? "," : "", indent + 2, "");
			put_json_object(tenant_cols, TC_NR, &cells[i * TC_NR],
					indent + 2);
		}
		if (nr)
			printf("\n%*s", indent, "");
		printf("]");
	} else {
		put_table(tenant_cols, TC_NR, cells, nr, o, indent);
	}
	free(cells);
	free(scr);
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

static void free_pool_row(struct pool_row *r)
{
	free_strings(r->cgroups, r->nr_trows);
	free(r->trows);
	memset(r, 0, sizeof(*r));
}

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
	const char *key;	/* -o and CSV: the JSON key */
	bool pages;		/* a page count: --units converts it */
	size_t offset;		/* of an unsigned int (or __u32) */
	bool newer;		/* "-" on a module without tenants and export */
	bool text;		/* a string, left-aligned; "" shows as "-" */
	bool abi2;		/* "-" on a module before ABI 2 (quarantine) */
};

#define ROW_FIELD(f)	offsetof(struct pool_row, f)

static const struct column columns[] = {
	{ NULL, "POOL", "pool_id", false, ROW_FIELD(id), false, false, false },
	{ "pages", "TOTAL", "nr_pages", true,
	  ROW_FIELD(info.out_nr_pages), false, false, false },
	{ "pages", "FREE", "free_pages", true,
	  ROW_FIELD(st.out_free_pages), false, false, false },
	{ "pages", "ROW", "row_pages", true,
	  ROW_FIELD(st.out_row_pages), false, false, false },
	{ "pages", "SLOT", "slot_pages", true,
	  ROW_FIELD(st.out_slot_pages), false, false, false },
	/* Prefix-cache pages: evictable, and pinned by a row borrowing them. */
	{ "pages", "EVICT", "cache_evictable", true,
	  ROW_FIELD(st.out_cache_evictable), false, false, false },
	{ "pages", "PINNED", "cache_pinned", true,
	  ROW_FIELD(st.out_cache_pinned), false, false, false },
	/* Owned by rows in flight as export files. */
	{ "pages", "EXPORT", "export_pages", true,
	  ROW_FIELD(st.out_export_pages), true, false, false },
	{ "pages", "RSVD", "reserved_pages", true,
	  ROW_FIELD(st.out_reserved_pages), false, false, false },
	/* Taken back from dead clients, until their GPU work is done. */
	{ "pages", "QUAR", "quarantine_pages", true,
	  ROW_FIELD(st.out_quarantine_pages), false, false, true },
	{ "rows", "TOTAL", "nr_rows", false,
	  ROW_FIELD(info.out_nr_rows), false, false, false },
	{ "rows", "FREE", "free_rows", false,
	  ROW_FIELD(st.out_free_rows), false, false, false },
	{ "rows", "HELD", "held_rows", false,
	  ROW_FIELD(st.out_held_rows), false, false, false },
	{ "rows", "SLOT", "slot_rows", false,
	  ROW_FIELD(st.out_slot_rows), false, false, false },
	{ "rows", "EXPORT", "export_rows", false,
	  ROW_FIELD(st.out_export_rows), true, false, false },
	{ "rows", "RSVD", "reserved_rows", false,
	  ROW_FIELD(st.out_reserved_rows), false, false, false },
	{ "wmark", "LOW", "low_wmark", true,
	  ROW_FIELD(x.low_wmark), true, false, false },
	{ "wmark", "HIGH", "high_wmark", true,
	  ROW_FIELD(x.high_wmark), true, false, false },
	{ NULL, "TENANTS", "nr_tenants", false,
	  ROW_FIELD(x.nr_tenants), true, false, false },
	{ NULL, "CLIENTS", "nr_clients", false,
	  ROW_FIELD(st.out_nr_clients), false, false, false },
	{ NULL, "GPU", "gpu", false, ROW_FIELD(gpu), false, true, false },
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
	else if (columns[col].pages && !r->factor)
		snprintf(buf, len, "-");
	else if (columns[col].pages)
		snprintf(buf, len, "%llu",
			 *(const unsigned int *)field * r->factor);
	else
		snprintf(buf, len, "%u", *(const unsigned int *)field);
}

/*
 * The pools as put_table() writes them, for -o and CSV: a column a
 * figure, under its JSON key (the group line is the default view's).
 */
static void print_pool_cells(const struct pool_row *rows, size_t nr,
			     struct outfmt *o)
{
	struct colspec cols[ARRAY_SIZE(columns)];
	struct cell *cells;
	char (*text)[PCI_NAME_LEN];
	size_t i, j, n = ARRAY_SIZE(columns);

	cells = calloc(nr ? nr * n : 1, sizeof(*cells));
	text = calloc(nr ? nr * n : 1, sizeof(*text));
	if (!cells || !text) {
		free(cells);
		free(text);
		err_msg("out of memory");
		return;
	}
	for (j = 0; j < n; j++)
		cols[j] = (struct colspec){ columns[j].key, columns[j].key,
					    columns[j].text, true,
					    columns[j].pages };
	for (i = 0; i < nr; i++) {
		for (j = 0; j < n; j++) {
			struct cell *c = &cells[i * n + j];
			char *end;

			col_text(j, &rows[i], text[i * n + j], PCI_NAME_LEN);
			if (!strcmp(text[i * n + j], "-")) {
				c->kind = CK_NULL;
			} else if (columns[j].text) {
				c->kind = CK_STR;
				c->str = text[i * n + j];
			} else {
				c->kind = CK_NUM;
				c->num = strtoull(text[i * n + j], &end, 10);
			}
		}
	}
	put_table(cols, n, cells, nr, o, 0);
	free(cells);
	free(text);
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

/* The tenants of each pool, under the pools' table, as @o asks. */
static void print_tenants(const struct pool_row *rows, size_t nr,
			  const struct outfmt *o)
{
	size_t j;

	for (j = 0; j < nr; j++) {
		const struct pool_row *r = &rows[j];

		if (r->tenants_shown == TENANTS_NONE) {
			printf("\npool %u tenants not shown: %s\n", r->id,
			       r->tenant_note);
			continue;
		}
		if (r->tenants_shown == TENANTS_OWN)
			printf("\npool %u tenants: only yours (%s):\n", r->id,
			       r->tenant_note);
		else if (!r->nr_trows)
			/* No clients and no limits set: nothing to say. */
			continue;
		else
			printf("\npool %u tenants:\n", r->id);
		print_tenants_as(r->trows, r->nr_trows, o, r->factor, 2);
	}
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
	static const struct outfmt json_out = { .json = true };
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
		/*
		 * Always an array: all the tenants, the caller's own, or
		 * none, as tenants_shown says; tenants_note says why not all.
		 */
		printf("      \"tenants_shown\": \"%s\",\n",
		       tenants_shown_names[r->tenants_shown]);
		printf("      \"tenants_note\": ");
		json_string_or_null(r->tenant_note);
		printf(",\n      \"tenants\": ");
		print_tenants_as(r->trows, r->nr_trows, &json_out, 1, 6);
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
 * The tenant rows of @nr tenants @t (taken over: freed here) and their
 * cgroups' paths; NULL if out of memory.
 */
static struct tenant_row *tenant_rows(struct kvpool_tenant_info *t,
				      char **cgroups, size_t nr)
{
	struct tenant_row *rows;
	size_t i;

	rows = calloc(nr ? nr : 1, sizeof(*rows));
	for (i = 0; rows && i < nr; i++) {
		rows[i].t = t[i];
		rows[i].cgroup = cgroups ? cgroups[i] : NULL;
	}
	free(t);
	return rows;
}

/* This process's cgroup v2 path ("/user.slice/..."), or "" if unknown. */
static void own_cgroup(char *buf, size_t len)
{
	char line[PATH_MAX + 8];
	FILE *f;

	buf[0] = '\0';
	f = fopen("/proc/self/cgroup", "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "0::", 3))
			continue;
		line[strcspn(line, "\n")] = '\0';
		snprintf(buf, len, "%.*s", (int)len - 1, line + 3);
		break;
	}
	fclose(f);
}

/*
 * What a user without CAP_SYS_ADMIN may see of pool @r's tenants: its
 * own, from KVPOOL_STATS, if it may open the pool. Opening it makes this
 * process a client for the moment (of its own tenant, which the kernel
 * makes if need be). Sets tenants_shown and tenant_note.
 */
static void own_tenant(struct pool_row *r)
{
	static char cgroup[PATH_MAX];
	const char *root = cgroup_root();
	char path[32], owner[160], dir[2 * PATH_MAX];
	struct kvpool_stats st;
	struct kvpool *kp;
	struct stat sb;
	int err;

	snprintf(path, sizeof(path), "/dev/kvpool%u", r->id);
	err = kvpool_open(path, &kp);
	if (err) {
		r->tenants_shown = TENANTS_NONE;
		dev_owner(path, owner, sizeof(owner));
		snprintf(r->tenant_note, sizeof(r->tenant_note),
			 "listing them needs CAP_SYS_ADMIN, and %s, which would show yours, %s (%s)",
			 path, err == -EACCES ?
			 "is not open to you" : "could not be opened",
			 err == -EACCES ? owner : kvpool_strerror(err));
		return;
	}
	err = kvpool_stats(kp, &st);
	kvpool_close(kp);
	if (err) {
		r->tenants_shown = TENANTS_NONE;
		snprintf(r->tenant_note, sizeof(r->tenant_note),
			 "KVPOOL_STATS: %s", kvpool_strerror(err));
		return;
	}
	r->trows = calloc(1, sizeof(*r->trows));
	if (!r->trows) {
		r->tenants_shown = TENANTS_NONE;
		snprintf(r->tenant_note, sizeof(r->tenant_note),
			 "out of memory");
		return;
	}
	r->nr_trows = 1;
	r->trows->own = true;
	r->trows->t.tenant_id = st.out_tenant_id;
	r->trows->t.uid = (unsigned int)geteuid();
	r->trows->t.pages = st.out_tenant_pages;
	r->trows->t.rows = st.out_tenant_rows;
	r->trows->t.max_pages = st.out_tenant_max_pages;
	r->trows->t.min_pages = st.out_tenant_min_pages;
	r->trows->t.max_rows = st.out_tenant_max_rows;
	own_cgroup(cgroup, sizeof(cgroup));
	if (*cgroup) {
		r->trows->cgroup = cgroup;
		snprintf(dir, sizeof(dir), "%s%s", root ? root : "", cgroup);
		if (root && !stat(dir, &sb))
			r->trows->t.cgroup_id = sb.st_ino;
	}
	r->tenants_shown = TENANTS_OWN;
	snprintf(r->tenant_note, sizeof(r->tenant_note),
		 "listing them all needs CAP_SYS_ADMIN");
}

/*
 * Pool @r's tenants: all of them as root, else the caller's own where
 * it may open the pool. A pool destroyed meanwhile returns -ENODEV; any
 * other failure is said in tenant_note, in their place.
 */
static int status_tenants(struct pool_row *r)
{
	struct kvpool_tenant_info *t;
	char *paths;
	size_t nr;
	int err;

	err = fetch_tenants(r->id, &t, &nr, &paths);
	if (err == -ENODEV)
		return err;
	r->tenant_err = err;
	switch (-err) {
	case 0:
		r->cgroups = tenant_cgroups(t, nr, paths);
		free(paths);
		r->trows = tenant_rows(t, r->cgroups, nr);
		r->nr_trows = r->trows ? nr : 0;
		r->tenants_shown = TENANTS_ALL;
		return 0;
	case EPERM:
	case EACCES:
		own_tenant(r);
		return 0;
	case ENOTTY:
		snprintf(r->tenant_note, sizeof(r->tenant_note),
			 "this kvpool module predates tenants");
		break;
	default:
		snprintf(r->tenant_note, sizeof(r->tenant_note), "%s",
			 kvpool_strerror(err));
	}
	r->tenants_shown = TENANTS_NONE;
	return 0;
}

/*
 * Pool @r's page size in @units into r->factor; bytes come from its
 * arena, through the pool's file (0 where it has none or cannot be
 * opened: those figures show as unknown).
 */
static void pool_units(struct pool_row *r, int units)
{
	struct kvpool_arena a;
	struct kvpool *kp;
	char path[32];

	r->factor = 1;
	if (units == UNIT_TOKENS)
		r->factor = r->info.out_page_tokens;
	if (units != UNIT_BYTES)
		return;
	snprintf(path, sizeof(path), "/dev/kvpool%u", r->id);
	r->page_bytes = 0;
	if (!kvpool_open(path, &kp)) {
		if (!kvpool_arena_info(kp, &a) &&
		    a.out_kind != KVPOOL_ARENA_NONE)
			r->page_bytes = a.out_page_bytes;
		kvpool_close(kp);
	}
	r->factor = r->page_bytes;
}

/*
 * Read the pools of @arg (NULL: every pool) into *@rows, *@nrows of them:
 * sysfs's figures, the tenants as status_tenants() can, page sizes in
 * @units. Returns an exit code.
 */
static int collect_pools(const char *arg, int units, struct pool_row **out,
			 size_t *nrows)
{
	struct pool_row *rows = NULL;
	unsigned int *ids;
	size_t nr, i;
	int ret;

	*out = NULL;
	*nrows = 0;
	ret = select_pools(arg, &ids, &nr);
	if (ret)
		return ret;
	rows = calloc(nr ? nr : 1, sizeof(*rows));
	if (!rows) {
		free(ids);
		return pool_error(-ENOMEM, "malloc", -1);
	}
	for (i = 0; i < nr; i++) {
		struct pool_row *r = &rows[*nrows];
		int err;

		r->id = ids[i];
		err = kvpool_pool_status(ids[i], &r->info, &r->st);
		if (!err) {
			read_pool_extra(r);
			err = status_tenants(r);
		}
		/* Listed but gone by now: it was destroyed meanwhile. */
		if (err == -ENODEV && !arg) {
			free_pool_row(r);
			continue;
		}
		if (err) {
			ret = pool_error(err, "reading sysfs", (int)ids[i]);
			free_pool_row(r);
			break;
		}
		pool_units(r, units);
		(*nrows)++;
	}
	free(ids);
	if (ret) {
		for (i = 0; i < *nrows; i++)
			free_pool_row(&rows[i]);
		free(rows);
		*nrows = 0;
		return ret;
	}
	*out = rows;
	return EXIT_OK;
}

static void free_pools(struct pool_row *rows, size_t nr)
{
	size_t i;

	for (i = 0; rows && i < nr; i++)
		free_pool_row(&rows[i]);
	free(rows);
}

/*
 * The options of the table commands (status, tenant list) into *@o:
 * -h, -j/--json, --csv, -o COLS, --units pages|tokens|bytes. *@done as
 * parse_simple()'s. Returns an exit code.
 */
static int parse_table_opts(int argc, char **argv, const char *usage,
			    struct outfmt *o, bool *done)
{
	enum { OPT_CSV = 256, OPT_UNITS };
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "json", no_argument, NULL, 'j' },
		{ "csv", no_argument, NULL, OPT_CSV },
		{ "output", required_argument, NULL, 'o' },
		{ "units", required_argument, NULL, OPT_UNITS },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	memset(o, 0, sizeof(*o));
	*done = true;
	optind = 0;
	while ((c = getopt_long(argc, argv, "hjo:", opts, NULL)) != -1) {
		switch (c) {
		case 'h':
			return usage_of(usage, stdout);
		case 'j':
			o->json = true;
			break;
		case OPT_CSV:
			o->csv = true;
			break;
		case 'o':
			o->cols = optarg;
			break;
		case OPT_UNITS:
			if (!strcmp(optarg, "pages")) {
				o->units = UNIT_PAGES;
			} else if (!strcmp(optarg, "tokens")) {
				o->units = UNIT_TOKENS;
			} else if (!strcmp(optarg, "bytes")) {
				o->units = UNIT_BYTES;
			} else {
				err_msg("--units: '%s': want pages, tokens or bytes",
					optarg);
				return EXIT_USAGE;
			}
			break;
		default:
			return usage_of(usage, stderr);
		}
	}
	if (o->json && (o->csv || o->cols || o->units)) {
		err_msg("--json writes every figure, in pages: not with --csv, -o or --units");
		return EXIT_USAGE;
	}
	*done = false;
	return EXIT_OK;
}

static int cmd_status(int argc, char **argv)
{
	struct colspec pcols[ARRAY_SIZE(columns)];
	struct pool_row *rows;
	struct outfmt o;
	size_t nrows, j;
	bool done;
	int ret;

	ret = parse_table_opts(argc, argv, usage_status, &o, &done);
	if (done)
		return ret;
	if (argc - optind > 1)
		return usage_of(usage_status, stderr);
	/* -o names the pools' columns; the tenants' tables show theirs. */
	for (j = 0; j < ARRAY_SIZE(columns); j++)
		pcols[j] = (struct colspec){ columns[j].key, columns[j].key,
					     false, true, false };
	ret = select_columns(&o, pcols, ARRAY_SIZE(columns));
	if (ret)
		return ret;

	ret = collect_pools(optind < argc ? argv[optind] : NULL, o.units,
			    &rows, &nrows);
	if (ret)
		return ret;
	if (o.json) {
		print_json(rows, nrows);
	} else if (o.csv || o.cols) {
		/* One table: the pools', machine-readable. */
		print_pool_cells(rows, nrows, &o);
	} else if (nrows) {
		print_table(rows, nrows);
		o.cols = NULL;
		select_columns(&o, tenant_cols, TC_NR);
		print_tenants(rows, nrows, &o);
	} else {
		printf("no pools (kvpoolctl create --help)\n");
	}
	free_pools(rows, nrows);
	return EXIT_OK;
}

/* ---- metrics ---- */

/*
 * A pool figure for metrics: its name after "kvpool_pool_", its help,
 * its unit ("" for a count), where it is in a row; newer and
 * abi2 as in struct column (no sample where the module lacks it).
 */
struct pool_metric {
	const char *name;
	const char *unit;
	const char *help;
	size_t offset;		/* of an unsigned int, or PM_* */
	bool newer, abi2;
};

/*
 * A figure with no field in the library's structs: its own sysfs file.
 * ULLONG_MAX when the module has no such file.
 */
static unsigned long long pool_sysfs_value(const struct pool_row *r,
					   const char *file)
{
	char path[96], buf[32], *end;
	unsigned long long v;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/kvpool/kvpool%u/%s", r->id,
		 file);
	f = fopen(path, "re");
	if (!f)
		return ULLONG_MAX;
	if (!fgets(buf, sizeof(buf), f) || !parse_decimal(buf, &v, &end) ||
	    (*end && *end != '\n'))
		v = ULLONG_MAX;
	fclose(f);
	return v;
}

/* Where a figure that is no field of struct pool_row comes from. */
#define PM_MEM_BYTES	((size_t)-1)
#define PM_LISTED	((size_t)-2)

/* Pool metric @m of @r; ULLONG_MAX: none to give. */
static unsigned long long pool_metric_value(const struct pool_metric *m,
					    const struct pool_row *r)
{
	if (m->offset == PM_MEM_BYTES)
		return pool_sysfs_value(r, "mem_bytes");
	if (m->offset == PM_LISTED)
		return r->tenants_shown == TENANTS_ALL;
	return *(const unsigned int *)((const char *)r + m->offset);
}

/* The sysfs attributes of docs/ABI/testing/sysfs-class-kvpool. */
static const struct pool_metric pool_metrics[] = {
	{ "pages", "", "Pages in the pool (nr_pages)",
	  ROW_FIELD(info.out_nr_pages), false, false },
	{ "free_pages", "", "Free pages (free_pages)",
	  ROW_FIELD(st.out_free_pages), false, false },
	{ "row_pages", "", "Pages owned by rows (row_pages)",
	  ROW_FIELD(st.out_row_pages), false, false },
	{ "slot_pages", "", "Pages of parked rows, in slots (slot_pages)",
	  ROW_FIELD(st.out_slot_pages), false, false },
	{ "cache_evictable_pages", "",
	  "Prefix-cache pages no row borrows, evictable (cache_evictable)",
	  ROW_FIELD(st.out_cache_evictable), false, false },
	{ "cache_pinned_pages", "",
	  "Prefix-cache pages pinned by a row borrowing them (cache_pinned)",
	  ROW_FIELD(st.out_cache_pinned), false, false },
	{ "export_pages", "",
	  "Pages of rows in flight as export files (export_pages)",
	  ROW_FIELD(st.out_export_pages), true, false },
	{ "reserved_pages", "", "Pages kept out of circulation (reserved_pages)",
	  ROW_FIELD(st.out_reserved_pages), false, false },
	{ "quarantine_pages", "",
	  "Pages of dead clients held back until their GPU work is done (quarantine_pages)",
	  ROW_FIELD(st.out_quarantine_pages), false, true },
	{ "rows", "", "Rows in the pool (nr_rows)",
	  ROW_FIELD(info.out_nr_rows), false, false },
	{ "free_rows", "", "Free rows (free_rows)",
	  ROW_FIELD(st.out_free_rows), false, false },
	{ "held_rows", "", "Rows held by clients (held_rows)",
	  ROW_FIELD(st.out_held_rows), false, false },
	{ "slot_rows", "", "Rows parked in slots (slot_rows)",
	  ROW_FIELD(st.out_slot_rows), false, false },
	{ "export_rows", "", "Rows in flight as export files (export_rows)",
	  ROW_FIELD(st.out_export_rows), true, false },
	{ "reserved_rows", "", "Rows kept out of circulation (reserved_rows)",
	  ROW_FIELD(st.out_reserved_rows), false, false },
	{ "clients", "", "Open clients (nr_clients)",
	  ROW_FIELD(st.out_nr_clients), false, false },
	{ "tenants", "", "Tenants, with clients or limits (nr_tenants)",
	  ROW_FIELD(x.nr_tenants), true, false },
	{ "low_wmark_pages", "",
	  "Free pages below which clients are asked to evict; 0: never (low_wmark)",
	  ROW_FIELD(x.low_wmark), true, false },
	{ "high_wmark_pages", "",
	  "Free pages the asks restore (high_wmark)", ROW_FIELD(x.high_wmark), true,
	  false },
	{ "page_tokens", "", "Tokens per page (page_tokens)",
	  ROW_FIELD(info.out_page_tokens), false, false },
	{ "row_tokens", "", "Longest row in tokens (row_tokens)",
	  ROW_FIELD(info.out_row_tokens), false, false },
	{ "mem_bytes", "bytes",
	  "Kernel memory of the pool's bookkeeping (mem_bytes)", PM_MEM_BYTES,
	  false, false },
	{ "tenants_listed", "",
	  "1 if the kvpool_tenant_* samples are every tenant of the pool, 0 if not (no CAP_SYS_ADMIN: at most the caller's own)",
	  PM_LISTED, false, false },
};

/*
 * The pool's counters, which only grow: a counter family each, named
 * kvpool_pool_NAME with the sample NAME_total, read from sysfs file NAME
 * (no sample from a module without it).
 */
static const struct {
	const char *name;
	const char *help;
} pool_counters[] = {
	{ "clients_opened", "Opens of the pool since it was made" },
	{ "refused_space",
	  "ROW_ALLOC, EXTEND and IMPORT calls refused with ENOSPC" },
	{ "refused_quota",
	  "ROW_ALLOC, EXTEND and IMPORT calls refused with EDQUOT: a tenant at its limit" },
	{ "reclaimed_pages",
	  "Pages closing clients still held, taken back at their last close" },
};

/* A tenant figure: its name after "kvpool_tenant_", help, field. */
struct tenant_metric {
	const char *name;
	const char *help;
	size_t offset;		/* of a __u32 in struct kvpool_tenant_info */
	bool own;		/* KVPOOL_STATS tells it of one's own tenant */
};

#define TI_FIELD(f)	offsetof(struct kvpool_tenant_info, f)

static const struct tenant_metric tenant_metrics[] = {
	{ "pages", "Pages the tenant's clients hold (rows, slots, prefix caches)",
	  TI_FIELD(pages), true },
	{ "cache_pages", "Of the tenant's pages, those in prefix caches",
	  TI_FIELD(cache_pages), false },
	{ "rows", "Rows the tenant holds, parked ones included",
	  TI_FIELD(rows), true },
	{ "clients", "The tenant's open clients", TI_FIELD(nr_clients),
	  false },
	{ "max_pages", "The tenant's hard limit in pages; 0: none",
	  TI_FIELD(max_pages), true },
	{ "min_pages", "Pages guaranteed to the tenant; 0: none",
	  TI_FIELD(min_pages), true },
	{ "max_rows", "The tenant's limit in rows; 0: none",
	  TI_FIELD(max_rows), true },
	{ "ask_pages", "Pages the tenant's clients are asked to give back now",
	  TI_FIELD(ask_pages), false },
};

/* A family's metadata lines; @type gauge or info, @unit "" for none. */
static void om_family(FILE *f, const char *name, const char *type,
		      const char *unit, const char *help)
{
	fprintf(f, "# TYPE %s %s\n", name, type);
	if (*unit)
		fprintf(f, "# UNIT %s %s\n", name, unit);
	/* Help text is escaped as label values are, \n and \\ included. */
	fprintf(f, "# HELP %s %s\n", name, help);
}

/*
 * The labels that name tenant @r of pool @pool, without the braces. A
 * label is added here (e.g. a configured path) and nowhere else.
 */
static void om_tenant_labels(FILE *f, unsigned int pool,
			     const struct tenant_row *r)
{
	char label[KVPOOL_LABEL_LEN + 1], id[24];

	fprintf(f, "pool=\"%u\",tenant=\"%u\",", pool, r->t.tenant_id);
	/* A path tenant of every user: uid "*", as tenant list shows it. */
	if (r->t.flags & KVPOOL_TENANT_ANY_UID)
		fputs("uid=\"*\",cgroup=", f);
	else
		fprintf(f, "uid=\"%u\",cgroup=", r->t.uid);
	snprintf(id, sizeof(id), "%llu", (unsigned long long)r->t.cgroup_id);
	om_put_label_value(f, r->cgroup ? r->cgroup : id);
	memcpy(label, r->t.label, KVPOOL_LABEL_LEN);
	label[KVPOOL_LABEL_LEN] = '\0';
	if (*label) {
		fputs(",label=", f);
		om_put_label_value(f, label);
	}
}

/* Every pool's and tenant's figures of @rows, in the OpenMetrics format. */
static void write_metrics(FILE *f, const struct pool_row *rows, size_t nr)
{
	char name[96];
	size_t i, j, k;

	om_family(f, "kvpool_pool", "info",  "",
		  "A kvpool pool (/dev/kvpoolN) and the GPU it was made for");
	for (j = 0; j < nr; j++) {
		fprintf(f, "kvpool_pool_info{pool=\"%u\"", rows[j].id);
		if (*rows[j].gpu)
			fprintf(f, ",gpu=\"%s\"", rows[j].gpu);
		fputs("} 1\n", f);
	}
	for (i = 0; i < ARRAY_SIZE(pool_metrics); i++) {
		const struct pool_metric *m = &pool_metrics[i];

		snprintf(name, sizeof(name), "kvpool_pool_%s", m->name);
		om_family(f, name, "gauge", m->unit, m->help);
		for (j = 0; j < nr; j++) {
			const struct pool_row *r = &rows[j];
			unsigned long long v;

			if ((m->newer && !r->has_tenants) ||
			    (m->abi2 && !r->has_quarantine))
				continue;
			v = pool_metric_value(m, r);
			if (v == ULLONG_MAX)
				continue;
			fprintf(f, "%s{pool=\"%u\"} %llu\n", name, r->id, v);
		}
	}
	for (i = 0; i < ARRAY_SIZE(pool_counters); i++) {
		snprintf(name, sizeof(name), "kvpool_pool_%s",
			 pool_counters[i].name);
		om_family(f, name, "counter", "", pool_counters[i].help);
		for (j = 0; j < nr; j++) {
			unsigned long long v;

			v = pool_sysfs_value(&rows[j], pool_counters[i].name);
			if (v != ULLONG_MAX)
				fprintf(f, "%s_total{pool=\"%u\"} %llu\n", name,
					rows[j].id, v);
		}
	}
	for (i = 0; i < ARRAY_SIZE(tenant_metrics); i++) {
		const struct tenant_metric *m = &tenant_metrics[i];

		snprintf(name, sizeof(name), "kvpool_tenant_%s", m->name);
		om_family(f, name, "gauge", "", m->help);
		for (j = 0; j < nr; j++) {
			for (k = 0; k < rows[j].nr_trows; k++) {
				const struct tenant_row *t = &rows[j].trows[k];

				if (t->own && !m->own)
					continue;
				fprintf(f, "%s{", name);
				om_tenant_labels(f, rows[j].id, t);
				fprintf(f, "} %u\n", *(const __u32 *)
					((const char *)&t->t + m->offset));
			}
		}
	}
	fputs("# EOF\n", f);
}

static const char usage_metrics[] =
"metrics [--output FILE] [POOL]\n"
"    Print every pool's (or POOL's) figures, and its tenants' as root (a\n"
"    user without CAP_SYS_ADMIN gets only their own tenant, if they may\n"
"    open the pool), in the OpenMetrics text format: Prometheus, or\n"
"    node_exporter's textfile collector. Gauges, and the pool's counters\n"
"    (opens, refusals, pages taken back at close) as _total. Reads sysfs,\n"
"    as status does.\n"
"    --output FILE   write FILE.tmp, then rename it to FILE: a reader\n"
"                    never sees a file half written\n";

/* @rows' metrics into @path, atomically: FILE.tmp, then a rename. */
static int write_metrics_file(const char *path, const struct pool_row *rows,
			      size_t nr)
{
	char *tmp;
	FILE *f;
	int ret = EXIT_OK;

	if (asprintf(&tmp, "%s.tmp", path) < 0)
		return pool_error(-ENOMEM, "malloc", -1);
	f = fopen(tmp, "we");
	if (!f) {
		err_msg("metrics: %s: %s", tmp, strerror(errno));
		free(tmp);
		return EXIT_FAIL;
	}
	write_metrics(f, rows, nr);
	if (fflush(f) || fsync(fileno(f)) || ferror(f)) {
		err_msg("metrics: writing %s: %s", tmp, strerror(errno));
		ret = EXIT_FAIL;
	}
	if (fclose(f) && !ret) {
		err_msg("metrics: writing %s: %s", tmp, strerror(errno));
		ret = EXIT_FAIL;
	}
	if (!ret && rename(tmp, path)) {
		err_msg("metrics: renaming %s to %s: %s", tmp, path,
			strerror(errno));
		ret = EXIT_FAIL;
	}
	if (ret)
		unlink(tmp);
	free(tmp);
	return ret;
}

static int cmd_metrics(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "output", required_argument, NULL, 'O' },
		{ NULL, 0, NULL, 0 },
	};
	const char *output = NULL;
	struct pool_row *rows;
	size_t nrows;
	int c, ret;

	optind = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'h':
			return usage_of(usage_metrics, stdout);
		case 'O':
			output = optarg;
			break;
		default:
			return usage_of(usage_metrics, stderr);
		}
	}
	if (argc - optind > 1)
		return usage_of(usage_metrics, stderr);

	ret = collect_pools(optind < argc ? argv[optind] : NULL, UNIT_PAGES,
			    &rows, &nrows);
	if (ret)
		return ret;
	if (output) {
		ret = write_metrics_file(output, rows, nrows);
	} else {
		write_metrics(stdout, rows, nrows);
		if (fflush(stdout)) {
			err_msg("metrics: %s", strerror(errno));
			ret = EXIT_FAIL;
		}
	}
	free_pools(rows, nrows);
	return ret;
}

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

/* The kvpool-* lines of one fdinfo file into *@c; false if not a pool's. */
static bool read_fdinfo(int dirfd_, const char *name, struct client_row *c)
{
	static const struct {
		const char *key;
		size_t off;
	} keys[] = {
		{ "kvpool-pool:", offsetof(struct client_row, pool) },
		{ "kvpool-client-id:", offsetof(struct client_row, client) },
		{ "kvpool-tenant:", offsetof(struct client_row, tenant) },
		{ "kvpool-rows:", offsetof(struct client_row, rows) },
		{ "kvpool-slots:", offsetof(struct client_row, slots) },
		{ "kvpool-pages:", offsetof(struct client_row, pages) },
		{ "kvpool-cache-pages:", offsetof(struct client_row, cache) },
	};
	unsigned int seen = 0;
	char line[128];
	size_t i;
	FILE *f;
	int fd;

	fd = openat(dirfd_, name, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	f = fdopen(fd, "r");
	if (!f) {
		close(fd);
		return false;
	}
	while (fgets(line, sizeof(line), f)) {
		for (i = 0; i < ARRAY_SIZE(keys); i++) {
			size_t n = strlen(keys[i].key);

			if (strncmp(line, keys[i].key, n))
				continue;
			if (sscanf(line + n, "%u",
				   (unsigned int *)((char *)c + keys[i].off)) == 1)
				seen |= 1U << i;
		}
	}
	fclose(f);
	/* The pool and the client id at least; a newer field may lack. */
	return (seen & 3) == 3;
}

static int client_cmp(const void *a, const void *b)
{
	const struct client_row *x = a, *y = b;

	if (x->pool != y->pool)
		return x->pool < y->pool ? -1 : 1;
	return (x->client > y->client) - (x->client < y->client);
}

/* Add client @c, or count one more descriptor of a client listed. */
static int add_client(struct client_list *l, const struct client_row *c)
{
	struct client_row *v;
	size_t i;

	for (i = 0; i < l->nr; i++) {
		if (l->v[i].pool == c->pool && l->v[i].client == c->client) {
			l->v[i].nr_fds++;
			return 0;
		}
	}
	if (l->nr == l->alloc) {
		size_t n = l->alloc ? 2 * l->alloc : 16;

		v = realloc(l->v, n * sizeof(*v));
		if (!v)
			return -ENOMEM;
		l->v = v;
		l->alloc = n;
	}
	l->v[l->nr] = *c;
	l->v[l->nr].nr_fds = 1;
	l->nr++;
	return 0;
}

/*
 * The clients of every pool (@pool < 0) or of @pool that this user can
 * see: every process's as root, else those of its own processes (the
 * others' /proc/PID/fd cannot be read). Returns 0 or -ENOMEM.
 */
static int find_clients(struct client_list *l, int pool)
{
	struct dirent *pe, *fe;
	char path[300], link[64];
	DIR *proc, *fds;
	int ret = 0;

	proc = opendir("/proc");
	if (!proc)
		return 0;
	while (!ret && (pe = readdir(proc))) {
		int fdinfo;

		if (pe->d_name[0] < '1' || pe->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/fd", pe->d_name);
		fds = opendir(path);
		if (!fds)
			continue;
		snprintf(path, sizeof(path), "/proc/%s/fdinfo", pe->d_name);
		fdinfo = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		while (fdinfo >= 0 && !ret && (fe = readdir(fds))) {
			struct client_row c = { 0 };
			ssize_t n;
			FILE *cf;

			n = readlinkat(dirfd(fds), fe->d_name, link,
				       sizeof(link) - 1);
			if (n <= 0)
				continue;
			link[n] = '\0';
			if (strncmp(link, "/dev/kvpool", 11) ||
			    link[11] < '0' || link[11] > '9')
				continue;
			if (!read_fdinfo(fdinfo, fe->d_name, &c))
				continue;
			if (pool >= 0 && c.pool != (unsigned int)pool)
				continue;
			c.pid = (unsigned int)strtoul(pe->d_name, NULL, 10);
			snprintf(path, sizeof(path), "/proc/%s/comm",
				 pe->d_name);
			cf = fopen(path, "re");
			if (cf) {
				if (fgets(c.comm, sizeof(c.comm), cf))
					c.comm[strcspn(c.comm, "\n")] = '\0';
				fclose(cf);
			}
			ret = add_client(l, &c);
		}
		if (fdinfo >= 0)
			close(fdinfo);
		closedir(fds);
	}
	closedir(proc);
	if (l->nr)
		qsort(l->v, l->nr, sizeof(*l->v), client_cmp);
	return ret;
}

enum {
	CC_POOL, CC_CLIENT, CC_TENANT, CC_PID, CC_COMM, CC_FDS, CC_ROWS,
	CC_SLOTS, CC_PAGES, CC_CACHE, CC_NR
};

static const struct colspec client_cols[CC_NR] = {
	[CC_POOL]	= { "POOL", "pool_id", false, true, false },
	[CC_CLIENT]	= { "CLIENT", "client_id", false, true, false },
	[CC_TENANT]	= { "TENANT", "tenant_id", false, true, false },
	[CC_PID]	= { "PID", "pid", false, true, false },
	[CC_COMM]	= { "COMMAND", "comm", true, true, false },
	[CC_FDS]	= { "FDS", "nr_fds", false, true, false },
	[CC_ROWS]	= { "ROWS", "rows", false, true, false },
	[CC_SLOTS]	= { "SLOTS", "slots", false, true, false },
	[CC_PAGES]	= { "PAGES", "pages", false, true, true },
	[CC_CACHE]	= { "CACHE", "cache_pages", false, true, true },
};

static void client_cells(const struct client_row *c, struct cell *x,
			 unsigned long long factor)
{
	x[CC_POOL] = (struct cell){ CK_NUM, c->pool, NULL };
	x[CC_CLIENT] = (struct cell){ CK_NUM, c->client, NULL };
	x[CC_TENANT] = (struct cell){ CK_NUM, c->tenant, NULL };
	x[CC_PID] = (struct cell){ CK_NUM, c->pid, NULL };
	x[CC_COMM] = (struct cell){ CK_STR, 0, c->comm };
	x[CC_FDS] = (struct cell){ CK_NUM, c->nr_fds, NULL };
	x[CC_ROWS] = (struct cell){ CK_NUM, c->rows, NULL };
	x[CC_SLOTS] = (struct cell){ CK_NUM, c->slots, NULL };
	x[CC_PAGES] = page_cell(c->pages, CK_NUM, factor);
	x[CC_CACHE] = page_cell(c->cache, CK_NUM, factor);
}

static const char usage_clients[] =
"clients [--json | --csv] [-o COLS] [--units pages|tokens|bytes] [POOL]\n"
"    List the clients (open pool files) of every pool (or POOL) from\n"
"    /proc/PID/fdinfo: pool, client id, tenant, the first process holding\n"
"    it and how many descriptors do, its rows, slots, pages and cache\n"
"    pages. As root every process's; as a user only their own.\n"
"    -j, --json   one JSON object\n"
"    --csv        comma-separated values, a line of column keys first\n"
"    -o COLS      these columns, in this order (keys or headings)\n"
"    --units U    page counts in pages (default), tokens or bytes\n";

static int cmd_clients(int argc, char **argv)
{
	struct client_list l = { 0 };
	struct pool_row pr = { 0 };
	struct cell *cells;
	struct outfmt o;
	unsigned int id = 0;
	bool done;
	size_t i;
	int ret;

	ret = parse_table_opts(argc, argv, usage_clients, &o, &done);
	if (done)
		return ret;
	if (argc - optind > 1)
		return usage_of(usage_clients, stderr);
	if (optind < argc && !parse_pool(argv[optind], &id))
		return bad_pool(argv[optind]);
	ret = select_columns(&o, client_cols, CC_NR);
	if (ret)
		return ret;
	if (!module_loaded())
		return not_loaded();
	ret = find_clients(&l, optind < argc ? (int)id : -1);
	if (ret) {
		free(l.v);
		return pool_error(ret, "clients", -1);
	}
	cells = calloc(l.nr ? l.nr * CC_NR : 1, sizeof(*cells));
	if (!cells) {
		free(l.v);
		return pool_error(-ENOMEM, "malloc", -1);
	}
	for (i = 0; i < l.nr; i++) {
		/* Each client in its own pool's units. */
		if (o.units && (!i || l.v[i].pool != pr.id)) {
			memset(&pr, 0, sizeof(pr));
			pr.id = l.v[i].pool;
			kvpool_pool_status(pr.id, &pr.info, NULL);
			pool_units(&pr, o.units);
		}
		client_cells(&l.v[i], &cells[i * CC_NR],
			     o.units ? pr.factor : 1);
	}
	if (o.json) {
		printf("{\n  \"clients\": [");
		for (i = 0; i < l.nr; i++) {
			printf("%s\n    ", i ? "," : "");
			put_json_object(client_cols, CC_NR, &cells[i * CC_NR],
					4);
		}
		printf("%s]\n}\n", l.nr ? "\n  " : "");
	} else if (l.nr || o.csv) {
		put_table(client_cols, CC_NR, cells, l.nr, &o, 0);
	} else {
		printf("no clients%s\n", geteuid() ?
		       " among your processes (as root: every process's)" : "");
	}
	free(cells);
	free(l.v);
	return EXIT_OK;
}

/* ---- top ---- */

static const char usage_top[] =
"top [-d SECS] [-n COUNT] [POOL]\n"
"    A live view of every pool (or POOL), its tenants and its clients,\n"
"    redrawn every SECS seconds (default 2): pages, rows, cache, pressure\n"
"    (asks, watermarks) and, from the second screen on, rates per second\n"
"    from one sample to the next. q quits. What a user may see of\n"
"    tenants and clients is what status and clients show them.\n"
"    -d SECS      seconds between screens, 0.1..3600\n"
"    -n COUNT     stop after COUNT screens (default: until q)\n";

/* The previous sample, for rates: one figure per key. */
struct top_sample {
	unsigned long long key;	/* kind << 56 | pool << 32 | id */
	unsigned long long v;
};

struct top_state {
	struct top_sample *prev, *cur;
	size_t nr_prev, nr_cur, alloc;
	double dt;		/* seconds since the previous sample; 0: none */
};

enum {
	TK_POOL_USED = 1, TK_POOL_HELD, TK_TENANT_PAGES, TK_TENANT_ROWS,
	TK_CLIENT_PAGES, TK_CLIENT_ROWS
};

static unsigned long long top_key(unsigned int kind, unsigned int pool,
				  unsigned int id)
{
	return (unsigned long long)kind << 56 |
	       (unsigned long long)(pool & 0xffffff) << 32 | id;
}

/*
 * Record @v under @key for the next screen, and write its rate since the
 * last one into @buf ("" on the first screen, or for a new key).
 */
static const char *top_rate(struct top_state *ts, unsigned long long key,
			    unsigned long long v, char *buf, size_t len)
{
	struct top_sample *n;
	size_t i;

	buf[0] = '\0';
	if (ts->nr_cur == ts->alloc) {
		size_t a = ts->alloc ? 2 * ts->alloc : 64;

		n = realloc(ts->cur, a * sizeof(*n));
		if (!n)
			return buf;
		ts->cur = n;
		ts->alloc = a;
	}
	ts->cur[ts->nr_cur++] = (struct top_sample){ key, v };
	if (ts->dt <= 0)
		return buf;
	for (i = 0; i < ts->nr_prev; i++) {
		if (ts->prev[i].key != key)
			continue;
		snprintf(buf, len, "%+.1f",
			 ((double)v - (double)ts->prev[i].v) / ts->dt);
		break;
	}
	return buf;
}

#define TOP_CELLS	16
#define TOP_TEXT	32

/* One screen's table: cells and their text, at most TOP_CELLS a row. */
struct top_table {
	struct cell *cells;
	char (*text)[TOP_TEXT];
	size_t nr, alloc;
};

static struct cell *top_row(struct top_table *t)
{
	if (t->nr == t->alloc) {
		size_t a = t->alloc ? 2 * t->alloc : 16;
		struct cell *c = realloc(t->cells, a * TOP_CELLS * sizeof(*c));
		char (*x)[TOP_TEXT];

		if (!c)
			return NULL;
		t->cells = c;
		x = realloc(t->text, a * TOP_CELLS * sizeof(*x));
		if (!x)
			return NULL;
		t->text = x;
		t->alloc = a;
	}
	memset(&t->cells[t->nr * TOP_CELLS], 0, TOP_CELLS * sizeof(*t->cells));
	return &t->cells[t->nr++ * TOP_CELLS];
}

/* A text cell of row @row's column @col: its buffer, for snprintf(). */
static char *top_text(struct top_table *t, struct cell *row, size_t col)
{
	size_t i = (size_t)(row - t->cells) + col;

	/* The text array moves as rows are added: top_put() points it. */
	row[col] = (struct cell){ CK_STR, i, NULL };
	return t->text[i];
}

static void top_put(FILE *f, struct top_table *t, const struct colspec *cols,
		    size_t ncols, int indent)
{
	struct outfmt o = { 0 };
	size_t i;

	for (i = 0; i < ncols; i++)
		o.sel[o.nsel++] = (int)i;
	for (i = 0; i < t->nr * TOP_CELLS; i++)
		if (t->cells[i].kind == CK_STR && !t->cells[i].str)
			t->cells[i].str = t->text[t->cells[i].num];
	/* Rows of TOP_CELLS cells: put_table() wants ncols a row. */
	if (ncols != TOP_CELLS) {
		for (i = 1; i < t->nr; i++)
			memmove(&t->cells[i * ncols], &t->cells[i * TOP_CELLS],
				ncols * sizeof(*t->cells));
	}
	put_table_to(f, cols, ncols, t->cells, t->nr, &o, indent);
	t->nr = 0;
}

static const struct colspec top_pool_cols[] = {
	{ "POOL", "pool", false, true, false },
	{ "PAGES", "pages", false, true, false },
	{ "USED", "used", false, true, false },
	{ "USED/s", "used_rate", false, true, false },
	{ "FREE", "free", false, true, false },
	{ "CACHE", "cache", false, true, false },
	{ "QUAR", "quarantine", false, true, false },
	{ "ROWS", "rows", false, true, false },
	{ "HELD", "held", false, true, false },
	{ "HELD/s", "held_rate", false, true, false },
	{ "WMARK", "wmark", false, true, false },
	{ "ASKED", "asked", false, true, false },
	{ "TENANTS", "tenants", false, true, false },
	{ "CLIENTS", "clients", false, true, false },
};

static const struct colspec top_tenant_cols[] = {
	{ "POOL", "pool", false, true, false },
	{ "TENANT", "tenant", false, true, false },
	{ "UID", "uid", false, true, false },
	{ "CGROUP", "cgroup", true, true, false },
	{ "LABEL", "label", true, true, false },
	{ "PAGES", "pages", false, true, false },
	{ "PAGES/s", "pages_rate", false, true, false },
	{ "CACHE", "cache", false, true, false },
	{ "ROWS", "rows", false, true, false },
	{ "ROWS/s", "rows_rate", false, true, false },
	{ "CLIENTS", "clients", false, true, false },
	{ "MAX", "max", false, true, false },
	{ "ASK", "ask", false, true, false },
};

static const struct colspec top_client_cols[] = {
	{ "POOL", "pool", false, true, false },
	{ "CLIENT", "client", false, true, false },
	{ "TENANT", "tenant", false, true, false },
	{ "PID", "pid", false, true, false },
	{ "COMMAND", "comm", true, true, false },
	{ "PAGES", "pages", false, true, false },
	{ "PAGES/s", "pages_rate", false, true, false },
	{ "CACHE", "cache", false, true, false },
	{ "ROWS", "rows", false, true, false },
	{ "ROWS/s", "rows_rate", false, true, false },
};

#define NUMCELL(row, col, v)	((row)[col] = (struct cell){ CK_NUM, (v), NULL })

/* One screen of @rows and @cl into @f. */
static void top_screen(FILE *f, struct top_state *ts, const struct pool_row *rows,
		       size_t nr, const struct client_list *cl, double secs)
{
	struct top_table t = { 0 };
	struct cell *c;
	char clock[32];
	time_t now = time(NULL);
	size_t i, j;

	strftime(clock, sizeof(clock), "%H:%M:%S", localtime(&now));
	fprintf(f, "kvpoolctl top  %s  every %gs  q quits\n\n", clock, secs);
	for (i = 0; i < nr; i++) {
		const struct pool_row *r = &rows[i];
		unsigned long long used, ask = 0;

		c = top_row(&t);
		if (!c)
			break;
		used = (unsigned long long)r->info.out_nr_pages -
		       r->st.out_free_pages - r->st.out_reserved_pages;
		for (j = 0; j < r->nr_trows; j++)
			ask += r->trows[j].t.ask_pages;
		NUMCELL(c, 0, r->id);
		NUMCELL(c, 1, r->info.out_nr_pages);
		NUMCELL(c, 2, used);
		top_rate(ts, top_key(TK_POOL_USED, r->id, 0), used,
			 top_text(&t, c, 3), TOP_TEXT);
		NUMCELL(c, 4, r->st.out_free_pages);
		NUMCELL(c, 5, (unsigned long long)r->st.out_cache_evictable +
			r->st.out_cache_pinned);
		NUMCELL(c, 6, r->st.out_quarantine_pages);
		NUMCELL(c, 7, r->info.out_nr_rows);
		NUMCELL(c, 8, r->st.out_held_rows);
		top_rate(ts, top_key(TK_POOL_HELD, r->id, 0),
			 r->st.out_held_rows, top_text(&t, c, 9), TOP_TEXT);
		snprintf(top_text(&t, c, 10), TOP_TEXT, "%u/%u%s",
			 r->x.low_wmark, r->x.high_wmark,
			 r->x.low_wmark && r->st.out_free_pages < r->x.low_wmark ?
			 " LOW" : "");
		/* Asks are known from the tenant list only (root). */
		if (r->tenants_shown == TENANTS_ALL)
			NUMCELL(c, 11, ask);
		else
			c[11].kind = CK_NULL;
		NUMCELL(c, 12, r->x.nr_tenants);
		NUMCELL(c, 13, r->st.out_nr_clients);
	}
	top_put(f, &t, top_pool_cols, ARRAY_SIZE(top_pool_cols), 0);

	fputs("\nTENANTS\n", f);
	for (i = 0; i < nr; i++) {
		for (j = 0; j < rows[i].nr_trows; j++) {
			const struct tenant_row *tr = &rows[i].trows[j];
			char label[KVPOOL_LABEL_LEN + 1];
			char *u;

			c = top_row(&t);
			if (!c)
				break;
			NUMCELL(c, 0, rows[i].id);
			NUMCELL(c, 1, tr->t.tenant_id);
			if (tr->t.flags & KVPOOL_TENANT_ANY_UID)
				snprintf(top_text(&t, c, 2), TOP_TEXT, "*");
			else
				NUMCELL(c, 2, tr->t.uid);
			if (tr->cgroup)
				snprintf(top_text(&t, c, 3), TOP_TEXT, "%s",
					 tr->cgroup);
			else
				snprintf(top_text(&t, c, 3), TOP_TEXT, "%llu",
					 (unsigned long long)tr->t.cgroup_id);
			memcpy(label, tr->t.label, KVPOOL_LABEL_LEN);
			label[KVPOOL_LABEL_LEN] = '\0';
			u = utf8_sanitized(label);
			snprintf(top_text(&t, c, 4), TOP_TEXT, "%s",
				 u ? u : "");
			free(u);
			NUMCELL(c, 5, tr->t.pages);
			top_rate(ts, top_key(TK_TENANT_PAGES, rows[i].id,
					     tr->t.tenant_id), tr->t.pages,
				 top_text(&t, c, 6), TOP_TEXT);
			NUMCELL(c, 7, tr->t.cache_pages);
			NUMCELL(c, 8, tr->t.rows);
			top_rate(ts, top_key(TK_TENANT_ROWS, rows[i].id,
					     tr->t.tenant_id), tr->t.rows,
				 top_text(&t, c, 9), TOP_TEXT);
			NUMCELL(c, 10, tr->t.nr_clients);
			c[11] = (struct cell){ CK_LIMIT, tr->t.max_pages, NULL };
			NUMCELL(c, 12, tr->t.ask_pages);
			if (tr->own) {
				c[4].kind = CK_NULL;
				c[7].kind = CK_NULL;
				c[10].kind = CK_NULL;
				c[12].kind = CK_NULL;
			}
		}
	}
	if (t.nr)
		top_put(f, &t, top_tenant_cols, ARRAY_SIZE(top_tenant_cols), 0);
	else
		fputs("  none to show (all of them: as root)\n", f);

	fputs("\nCLIENTS\n", f);
	for (i = 0; i < cl->nr; i++) {
		const struct client_row *x = &cl->v[i];

		c = top_row(&t);
		if (!c)
			break;
		NUMCELL(c, 0, x->pool);
		NUMCELL(c, 1, x->client);
		NUMCELL(c, 2, x->tenant);
		NUMCELL(c, 3, x->pid);
		snprintf(top_text(&t, c, 4), TOP_TEXT, "%s", x->comm);
		NUMCELL(c, 5, x->pages);
		top_rate(ts, top_key(TK_CLIENT_PAGES, x->pool, x->client),
			 x->pages, top_text(&t, c, 6), TOP_TEXT);
		NUMCELL(c, 7, x->cache);
		NUMCELL(c, 8, x->rows);
		top_rate(ts, top_key(TK_CLIENT_ROWS, x->pool, x->client),
			 x->rows, top_text(&t, c, 9), TOP_TEXT);
	}
	if (t.nr)
		top_put(f, &t, top_client_cols, ARRAY_SIZE(top_client_cols), 0);
	else
		fputs("  none to show\n", f);
	free(t.cells);
	free(t.text);
}

/* The terminal as it was, put back at exit. */
static struct termios top_tty;
static bool top_tty_set;

static void top_restore(void)
{
	if (top_tty_set)
		tcsetattr(STDIN_FILENO, TCSANOW, &top_tty);
	top_tty_set = false;
	if (isatty(STDOUT_FILENO))
		fputs("\033[?25h", stdout);	/* the cursor back */
	fflush(stdout);
}

static void top_signal(int sig)
{
	(void)sig;
	top_restore();
	_exit(EXIT_OK);
}

/*
 * Write @buf to the terminal, each line cut at @cols so none wraps, from
 * the top left of a cleared screen.
 */
static void top_draw(const char *buf, int cols, bool tty)
{
	const char *p = buf, *nl;

	if (tty)
		fputs("\033[H\033[2J", stdout);
	for (; *p; p = nl + 1) {
		nl = strchr(p, '\n');
		if (!nl)
			nl = p + strlen(p);
		fwrite(p, 1, (size_t)(cols > 0 && nl - p > cols ? cols : nl - p),
		       stdout);
		fputs(tty ? "\r\n" : "\n", stdout);
		if (!*nl)
			break;
	}
	if (!tty)
		putchar('\n');
	fflush(stdout);
}

/* Wait up to @secs for a key; true if it was q (or end of input). */
static bool top_wait(double secs, bool tty)
{
	struct timespec end, now;
	struct pollfd pfd = { .fd = STDIN_FILENO, .events = POLLIN };
	char ch;
	int ms;

	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += (time_t)secs;
	end.tv_nsec += (long)((secs - (double)(time_t)secs) * 1e9);
	if (end.tv_nsec >= 1000000000L) {
		end.tv_sec++;
		end.tv_nsec -= 1000000000L;
	}
	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		ms = (int)((end.tv_sec - now.tv_sec) * 1000 +
			   (end.tv_nsec - now.tv_nsec) / 1000000);
		if (ms <= 0)
			return false;
		/* Not a terminal: no keys; just sleep. */
		if (!tty) {
			poll(NULL, 0, ms);
			continue;
		}
		if (poll(&pfd, 1, ms) <= 0)
			continue;
		if (read(STDIN_FILENO, &ch, 1) != 1)
			return true;
		if (ch == 'q' || ch == 'Q')
			return true;
	}
}

static int cmd_top(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct top_state ts = { 0 };
	struct timespec t0, t1;
	struct winsize ws;
	struct termios raw;
	const char *pool = NULL;
	unsigned long count = 0, n;
	double secs = 2;
	bool tty;
	char *end;
	int c, ret = EXIT_OK;

	optind = 0;
	while ((c = getopt_long(argc, argv, "hd:n:", opts, NULL)) != -1) {
		switch (c) {
		case 'h':
			return usage_of(usage_top, stdout);
		case 'd':
			errno = 0;
			secs = strtod(optarg, &end);
			if (errno || end == optarg || *end || !(secs >= 0.1) ||
			    secs > 3600) {
				err_msg("-d: '%s': want seconds, 0.1..3600",
					optarg);
				return EXIT_USAGE;
			}
			break;
		case 'n':
			errno = 0;
			count = strtoul(optarg, &end, 10);
			if (errno || *optarg < '1' || *optarg > '9' || *end) {
				err_msg("-n: '%s': want a count, 1 or more",
					optarg);
				return EXIT_USAGE;
			}
			break;
		default:
			return usage_of(usage_top, stderr);
		}
	}
	if (argc - optind > 1)
		return usage_of(usage_top, stderr);
	if (optind < argc) {
		unsigned int id;

		if (!parse_pool(argv[optind], &id))
			return bad_pool(argv[optind]);
		pool = argv[optind];
	}

	tty = isatty(STDIN_FILENO) && isatty(STDOUT_FILENO);
	if (tty && !tcgetattr(STDIN_FILENO, &top_tty)) {
		raw = top_tty;
		raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
		raw.c_cc[VMIN] = 1;
		raw.c_cc[VTIME] = 0;
		top_tty_set = !tcsetattr(STDIN_FILENO, TCSANOW, &raw);
		atexit(top_restore);
		signal(SIGINT, top_signal);
		signal(SIGTERM, top_signal);
		signal(SIGHUP, top_signal);
		fputs("\033[?25l", stdout);	/* no cursor */
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (n = 0; !count || n < count; n++) {
		struct client_list cl = { 0 };
		struct pool_row *rows;
		size_t nrows, len;
		char *buf = NULL;
		FILE *f;

		ret = collect_pools(pool, UNIT_PAGES, &rows, &nrows);
		if (ret)
			break;
		if (find_clients(&cl, pool ? (int)rows[0].id : -1))
			cl.nr = 0;
		clock_gettime(CLOCK_MONOTONIC, &t1);
		ts.dt = n ? (double)(t1.tv_sec - t0.tv_sec) +
			    (double)(t1.tv_nsec - t0.tv_nsec) / 1e9 : 0;
		t0 = t1;
		f = open_memstream(&buf, &len);
		if (f) {
			top_screen(f, &ts, rows, nrows, &cl, secs);
			fclose(f);
			ws.ws_col = 0;
			if (!tty || ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws))
				ws.ws_col = 0;
			top_draw(buf ? buf : "", ws.ws_col, tty);
			free(buf);
		}
		/* This screen's figures are the next one's previous. */
		free(ts.prev);
		ts.prev = ts.cur;
		ts.nr_prev = ts.nr_cur;
		ts.cur = NULL;
		ts.nr_cur = 0;
		ts.alloc = 0;
		free(cl.v);
		free_pools(rows, nrows);
		if ((!count || n + 1 < count) && top_wait(secs, tty))
			break;
	}
	free(ts.prev);
	free(ts.cur);
	top_restore();
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

/* The options of tenant set and remove; TOPT_ID is remove's only. */
enum {
	TOPT_CGROUP = 256, TOPT_CGROUP_ID, TOPT_UID, TOPT_ID, TOPT_MAX,
	TOPT_MIN, TOPT_MAX_ROWS, TOPT_LABEL
};

/* How a tenant set or remove names the tenant, as its options gave it. */
struct tenant_name {
	const char *cgroup;	/* --cgroup */
	bool cgroup_id;		/* --cgroup-id, in kvpool_ctl_tenant */
	bool uid;		/* --uid, likewise */
	bool id;		/* --id, likewise */
};

/*
 * Option @c (with @arg) if it is one that names the tenant: into @t and
 * @n. Returns EXIT_OK, EXIT_USAGE for a bad value, or -1 when @c is not
 * one of them.
 */
static int tenant_name_opt(int c, const char *arg,
			   struct kvpool_ctl_tenant *t, struct tenant_name *n)
{
	switch (c) {
	case TOPT_CGROUP:
		n->cgroup = arg;
		return EXIT_OK;
	case TOPT_CGROUP_ID:
		if (!parse_u64(arg, &t->cgroup_id)) {
			err_msg("--cgroup-id: not a number: '%s'", arg);
			return EXIT_USAGE;
		}
		n->cgroup_id = true;
		return EXIT_OK;
	case TOPT_UID:
		if (!parse_uid(arg, &t->uid)) {
			err_msg("--uid: no such user: '%s'", arg);
			return EXIT_USAGE;
		}
		n->uid = true;
		return EXIT_OK;
	case TOPT_ID:
		if (!parse_u32(arg, &t->tenant_id)) {
			err_msg("--id: not a tenant id: '%s'", arg);
			return EXIT_USAGE;
		}
		n->id = true;
		t->flags |= KVPOOL_TENANT_BY_ID;
		return EXIT_OK;
	}
	return -1;
}

/*
 * The pool argument and, for --cgroup, the path as the kernel names it
 * (*@rel, malloc()ed) and every uid unless --uid was given. Exactly one
 * way of naming it, and --uid only where it means something, else a
 * usage error naming @what. The return value is an exit code.
 */
static int tenant_name_end(int argc, char **argv, const char *what,
			   const struct tenant_name *n,
			   struct kvpool_ctl_tenant *t, unsigned int *id,
			   char **rel)
{
	*rel = NULL;
	if (argc - optind != 1 || !!n->cgroup + n->cgroup_id + n->id != 1 ||
	    (n->cgroup_id && !n->uid) || (n->id && n->uid)) {
		err_msg("%s needs POOL and one of --cgroup PATH [--uid UID], --cgroup-id N --uid UID%s",
			what, t->flags & KVPOOL_TENANT_REMOVE ? ", --id ID" : "");
		return usage_of(usage_tenant, stderr);
	}
	if (!parse_pool(argv[optind], id))
		return bad_pool(argv[optind]);
	if (!n->cgroup)
		return EXIT_OK;
	if (!n->uid)
		t->flags |= KVPOOL_TENANT_ANY_UID;
	return cgroup_rel_of(n->cgroup, rel);
}

static int tenant_remove(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "cgroup", required_argument, NULL, TOPT_CGROUP },
		{ "cgroup-id", required_argument, NULL, TOPT_CGROUP_ID },
		{ "uid", required_argument, NULL, TOPT_UID },
		{ "id", required_argument, NULL, TOPT_ID },
		{ NULL, 0, NULL, 0 },
	};
	struct kvpool_ctl_tenant t = { .flags = KVPOOL_TENANT_REMOVE };
	struct tenant_name n = { 0 };
	char *rel;
	unsigned int id;
	int c, ret;

	optind = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (c == 'h')
			return usage_of(usage_tenant, stdout);
		ret = tenant_name_opt(c, optarg, &t, &n);
		if (ret < 0)
			return usage_of(usage_tenant, stderr);
		if (ret)
			return ret;
	}
	ret = tenant_name_end(argc, argv, "tenant remove", &n, &t, &id, &rel);
	if (ret)
		return ret;
	ret = tenant_set_call(id, &t, rel, "tenant remove");
	free(rel);
	if (ret == -ENOENT) {
		err_msg("tenant remove: pool %u has no tenant with limits set so named%s",
			id, n.cgroup && !n.uid ?
			" (for every uid; give --uid for one user's)" : "");
		return EXIT_FAIL;
	}
	if (ret == -E2BIG || ret == -ENAMETOOLONG)
		return EXIT_FAIL;	/* said */
	if (ret < 0)
		return ctl_error(ret, "tenant remove", id, "tenants");
	printf("%d\n", ret);
	return EXIT_OK;
}

static int tenant_set(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "cgroup", required_argument, NULL, TOPT_CGROUP },
		{ "cgroup-id", required_argument, NULL, TOPT_CGROUP_ID },
		{ "uid", required_argument, NULL, TOPT_UID },
		{ "max", required_argument, NULL, TOPT_MAX },
		{ "min", required_argument, NULL, TOPT_MIN },
		{ "max-rows", required_argument, NULL, TOPT_MAX_ROWS },
		{ "label", required_argument, NULL, TOPT_LABEL },
		{ NULL, 0, NULL, 0 },
	};
	struct kvpool_ctl_tenant t = { 0 };
	struct tenant_name n = { 0 };
	unsigned int id, *field;
	const char *name;
	char *rel;
	int c, ret;

	optind = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'h':
			return usage_of(usage_tenant, stdout);
		case TOPT_LABEL:
			if (strlen(optarg) >= sizeof(t.label)) {
				err_msg("--label: '%s' is longer than %zu bytes",
					optarg, sizeof(t.label) - 1);
				return EXIT_USAGE;
			}
			memcpy(t.label, optarg, strlen(optarg));
			continue;
		case TOPT_MAX:
			field = &t.max_pages;
			name = "max";
			break;
		case TOPT_MIN:
			field = &t.min_pages;
			name = "min";
			break;
		case TOPT_MAX_ROWS:
			field = &t.max_rows;
			name = "max-rows";
			break;
		case TOPT_ID:
			return usage_of(usage_tenant, stderr);
		default:
			ret = tenant_name_opt(c, optarg, &t, &n);
			if (ret < 0)
				return usage_of(usage_tenant, stderr);
			if (ret)
				return ret;
			continue;
		}
		if (!parse_count_opt(name, optarg, field))
			return EXIT_USAGE;
	}
	ret = tenant_name_end(argc, argv, "tenant set", &n, &t, &id, &rel);
	if (ret)
		return ret;

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
	struct tenant_row *rows;
	struct pool_row pr = { 0 };
	struct outfmt o;
	char **cgroups, *paths;
	unsigned int id;
	size_t nr;
	bool done;
	int ret;

	ret = parse_table_opts(argc, argv, usage_tenant, &o, &done);
	if (done)
		return ret;
	if (argc - optind != 1)
		return usage_of(usage_tenant, stderr);
	if (!parse_pool(argv[optind], &id))
		return bad_pool(argv[optind]);
	ret = select_columns(&o, tenant_cols, TC_NR);
	if (ret)
		return ret;

	ret = fetch_tenants(id, &t, &nr, &paths);
	if (ret)
		return ctl_error(ret, "tenant list", id, "tenants");
	pr.id = id;
	if (o.units && kvpool_pool_status(id, &pr.info, NULL)) {
		free(t);
		free(paths);
		return pool_error(-ENODEV, "tenant list", (int)id);
	}
	pool_units(&pr, o.units);
	cgroups = tenant_cgroups(t, nr, paths);
	free(paths);
	rows = tenant_rows(t, cgroups, nr);
	if (!rows) {
		free_strings(cgroups, nr);
		return pool_error(-ENOMEM, "malloc", -1);
	}
	if (o.json) {
		printf("{\n  \"pool_id\": %u,\n  \"tenants\": ", id);
		print_tenants_as(rows, nr, &o, 1, 2);
		printf("\n}\n");
	} else if (nr || o.csv) {
		print_tenants_as(rows, nr, &o, pr.factor, 0);
	} else {
		printf("pool %u has no tenants\n", id);
	}
	free_strings(cgroups, nr);
	free(rows);
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
	{ "metrics", cmd_metrics, usage_metrics },
	{ "top", cmd_top, usage_top },
	{ "clients", cmd_clients, usage_clients },
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
