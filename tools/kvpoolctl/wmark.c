// SPDX-License-Identifier: GPL-2.0-only
/*
 * kvpoolctl wmark: a pool's pressure watermarks.
 *
 * Copyright (C) 2026 The kvpool authors
 */
#include <errno.h>
#include <getopt.h>

#include "kvpoolctl.h"

const char usage_wmark[] =
"wmark POOL --low N --high N\n"
"    Set POOL's pressure watermarks: below --low free pages, clients are\n"
"    asked to evict prefix-cache pages until --high pages are free again.\n"
"    --low 0 turns that off. low <= high <= the pool's pages. Needs root.\n"
"    Numbers take a K, M or G suffix (x1024, x1024^2, x1024^3).\n";

int cmd_wmark(int argc, char **argv)
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
