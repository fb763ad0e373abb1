// SPDX-License-Identifier: GPL-2.0-only
/*
 * kvpoolctl verify: check a pool's invariants (KVPOOL_VERIFY).
 *
 * Copyright (C) 2026 The kvpool authors
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "kvpoolctl.h"

const char usage_verify[] =
"verify [POOL]\n"
"    Check every invariant of POOL (default: every pool) with KVPOOL_VERIFY.\n"
"    Exits 1 if any is broken; the kernel log has one line for each.\n"
"    Needs root (CAP_SYS_ADMIN): the walk holds the whole pool's lock.\n";

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

int cmd_verify(int argc, char **argv)
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
