// SPDX-License-Identifier: GPL-2.0-only
/*
 * What every command shares: error messages and exit codes, parsing
 * numbers, POOL and usage text, the cgroup v2 tree, PCI names.
 *
 * Copyright (C) 2026 The kvpool authors
 */
#define _GNU_SOURCE		/* asprintf(), nftw() */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#include "kvpoolctl.h"

const char *prog = "kvpoolctl";

void __printf(1, 2) err_msg(const char *fmt, ...)
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
bool module_loaded(void)
{
	return !access(KVPOOL_CONTROL_PATH, F_OK) ||
	       kvpool_pool_list(NULL, 0) >= 0;
}

int not_loaded(void)
{
	err_msg("kvpool module is not loaded (insmod kvpool.ko)");
	return EXIT_NOT_LOADED;
}

/*
 * Who may open device @path, as "mode 0600, root:root", into @buf; why
 * not, if it cannot even be looked at.
 */
void dev_owner(const char *path, char *buf, size_t len)
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
int denied_open(const char *what, const char *path)
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
int pool_error(int err, const char *what, int pool)
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
bool parse_decimal(const char *s, unsigned long long *v, char **end)
{
	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	*v = strtoull(s, end, 10);
	return !errno;
}

/*
 * Parse a number: decimal, optionally followed by K, M or G (times 1024,
 * 1024^2, 1024^3), at most @max. Returns NUM_OK, NUM_SYNTAX (not such a
 * number) or NUM_RANGE (one, but past @max). The kernel checks the
 * ranges of what it is given.
 */
int parse_scaled(const char *s, unsigned long long max,
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
int parse_u32(const char *s, unsigned int *out)
{
	unsigned long long v;
	int ret;

	ret = parse_scaled(s, UINT32_MAX, &v);
	if (ret == NUM_OK)
		*out = (unsigned int)v;
	return ret;
}

/* POOL on the command line: "N", "kvpoolN" or "/dev/kvpoolN". */
static bool parse_pool_name(const char *s, unsigned int *id)
{
	if (!strncmp(s, "/dev/", 5))
		s += 5;
	if (!strncmp(s, "kvpool", 6))
		s += 6;
	/* No suffix here: "kvpool1k" is no pool. */
	return *s >= '0' && *s <= '9' && !strpbrk(s, "kKmMgG") &&
	       parse_u32(s, id) == NUM_OK && *id <= INT_MAX;
}

bool parse_pool(const char *s, unsigned int *id)
{
	char *real;
	bool ok;

	if (parse_pool_name(s, id))
		return true;
	/*
	 * Any other path that leads to /dev/kvpoolN, as udev's stable
	 * links do (/dev/kvpool/by-name/NAME, by-gpu/BDF): that pool.
	 */
	if (!strchr(s, '/'))
		return false;
	real = realpath(s, NULL);
	if (!real)
		return false;
	ok = !strncmp(real, "/dev/", 5) && parse_pool_name(real, id);
	free(real);
	return ok;
}

int bad_pool(const char *s)
{
	err_msg("not a pool: '%s' (want N, kvpoolN, /dev/kvpoolN or a link to it)",
		s);
	return EXIT_USAGE;
}

/* Say why number @arg of option --@name, up to @max, was refused. */
void bad_number(const char *name, const char *arg, int why,
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
bool parse_count_opt(const char *name, const char *arg,
		     unsigned int *out)
{
	int ret = parse_u32(arg, out);

	if (ret == NUM_OK)
		return true;
	bad_number(name, arg, ret, UINT32_MAX);
	return false;
}
/* The length of the synopsis line at @u, or 0 past the synopsis. */
int synopsis_line(const char *u)
{
	if (!*u || *u == ' ')
		return 0;
	return (int)strcspn(u, "\n");
}

int usage_of(const char *text, FILE *f)
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
int parse_simple(int argc, char **argv, const char *usage, bool *json,
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
int parse_one_pool(int argc, char **argv, const char *usage,
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
const char *cgroup_root(void)
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
void resolve_cgroups(struct cg_want *wants, size_t nr)
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
int cgroup_rel_of(const char *path, char **out)
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

/* ---- PCI ---- */

/* A PCI address as sysfs and lspci -D write it. */
void pci_name(char *buf, size_t len, uint32_t domain, uint32_t devid)
{
	snprintf(buf, len, "%04x:%02x:%02x.%u", domain, devid >> 8,
		 (devid >> 3) & 0x1f, devid & 7);
}

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
int pci_attr_hex(const char *addr, const char *name, unsigned int *v)
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
void pool_gpu_name(unsigned int id, char *buf, size_t len)
{
	uint32_t domain, devid;
	int ret;

	ret = kvpool_pool_gpu(id, &domain, &devid);
	if (ret > 0)
		pci_name(buf, len, domain, devid);
	else
		snprintf(buf, len, "%s", ret ? "?" : "");
}

/* ---- tenant, wmark ---- */

/*
 * Report @err from a control op on tenants or watermarks (@feature names
 * what an older module lacks) and map it to an exit code.
 */
int ctl_error(int err, const char *what, unsigned int id,
	      const char *feature)
{
	if (err == -ENOTTY) {
		err_msg("%s: this kvpool module has no %s (load a newer kvpool.ko)",
			what, feature);
		return EXIT_FAIL;
	}
	return pool_error(err, what, (int)id);
}

/* Run command argv[0]'s subcommand argv[1], one of the @nr in @sub. */
int run_subcommand(int argc, char **argv, const char *usage,
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
