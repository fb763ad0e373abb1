// SPDX-License-Identifier: GPL-2.0-only
/*
 * kvpoolctl info: a pool's geometry, ABI version and features.
 *
 * Copyright (C) 2026 The kvpool authors
 */
#include <errno.h>

#include "kvpoolctl.h"

const char usage_info[] =
"info [--json] POOL\n"
"    Show POOL's geometry, ABI version and features (KVPOOL_INFO).\n"
"    Opens /dev/kvpoolN, which is root-only by default.\n"
"    -j, --json   one JSON object\n";

/* ---- info ---- */

static const char *const feature_names[] = {
	"rows", "extend", "slots", "verify", "prefix-cache", "swa", "export",
	"quota", "pressure", "arena", "tenant-path", "gpu-agent", "budget",
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
const char *arena_kind(__u32 kind)
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
int open_pool(unsigned int id, struct kvpool **kpp)
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

/*
 * The start of a command on one pool that reads it (info, arena show):
 * its [-j] POOL, the pool opened into *@kpp and its KVPOOL_INFO into
 * *@in. *@done as parse_one_pool()'s: when set, the command ends with
 * the return value, and no pool is open; otherwise the caller closes
 * *@kpp.
 */
int open_one_pool(int argc, char **argv, const char *usage, bool *json,
		  unsigned int *id, struct kvpool **kpp,
		  struct kvpool_info *in, bool *done)
{
	int ret;

	ret = parse_one_pool(argc, argv, usage, json, id, done);
	if (*done)
		return ret;
	ret = open_pool(*id, kpp);
	if (ret) {
		*done = true;
		return ret;
	}
	kvpool_info(*kpp, in);
	return EXIT_OK;
}

int cmd_info(int argc, char **argv)
{
	char gpu[PCI_NAME_LEN];
	struct kvpool_arena a;
	struct kvpool_info in;
	struct kvpool *kp;
	bool json = false, done;
	unsigned int id;
	int ret, arena_err;

	ret = open_one_pool(argc, argv, usage_info, &json, &id, &kp, &in,
			    &done);
	if (done)
		return ret;
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
