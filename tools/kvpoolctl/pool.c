// SPDX-License-Identifier: GPL-2.0-only
/*
 * kvpoolctl create and destroy: pools, through /dev/kvpool-control.
 *
 * Copyright (C) 2026 The kvpool authors
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>

#include "kvpoolctl.h"

const char usage_create[] =
"create --pages N --page-tokens N --rows N --row-tokens N [--no-reserve-zero] [--gpu ADDR | --budget ID --page-bytes B]\n"
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
"    --budget ID       back the pool with chunks of budget ID (kvpoolctl\n"
"                      budget), taken as its allocations need them and\n"
"                      given back when their pages come free; --pages is\n"
"                      then its id space. Not with --gpu\n"
"    --page-bytes B    with --budget: bytes of one page; it divides the\n"
"                      budget's chunk bytes\n"
"    Numbers take a K, M or G suffix (x1024, x1024^2, x1024^3).\n";

const char usage_destroy[] =
"destroy POOL\n"
"    Destroy POOL. Refused while it has clients. Needs root.\n";

/* ---- create, destroy ---- */

/*
 * create --budget @budget refused with @err: if the budget is why, say
 * so and return the exit code; else -1, and the caller explains.
 */
static int create_budget_error(int err, unsigned int budget,
			       unsigned long long page_bytes)
{
	struct kvpool_ctl_budget b;

	switch (-err) {
	case ENODATA:
		err_msg("create: no such budget: %u (kvpoolctl budget show lists them)",
			budget);
		return EXIT_FAIL;
	case EOPNOTSUPP:
	case E2BIG:
		err_msg("create: --budget: this kvpool module predates chunk budgets (kvpool ABI 4; load a newer kvpool.ko)");
		return EXIT_FAIL;
	case EINVAL:
		/* The geometry's or the page's: the chunk size tells. */
		if (!kvpool_budget_info(budget, &b) &&
		    (!page_bytes || b.chunk_bytes % page_bytes)) {
			err_msg("create: --page-bytes %llu does not divide budget %u's chunks of %llu bytes",
				page_bytes, budget,
				(unsigned long long)b.chunk_bytes);
			return EXIT_FAIL;
		}
		break;
	}
	return -1;
}

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

int cmd_create(int argc, char **argv)
{
	enum { OPT_PAGES = 256, OPT_PAGE_TOKENS, OPT_ROWS, OPT_ROW_TOKENS,
	       OPT_NO_RESERVE_ZERO, OPT_GPU, OPT_BUDGET, OPT_PAGE_BYTES };
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "pages", required_argument, NULL, OPT_PAGES },
		{ "page-tokens", required_argument, NULL, OPT_PAGE_TOKENS },
		{ "rows", required_argument, NULL, OPT_ROWS },
		{ "row-tokens", required_argument, NULL, OPT_ROW_TOKENS },
		{ "no-reserve-zero", no_argument, NULL, OPT_NO_RESERVE_ZERO },
		{ "gpu", required_argument, NULL, OPT_GPU },
		{ "budget", required_argument, NULL, OPT_BUDGET },
		{ "page-bytes", required_argument, NULL, OPT_PAGE_BYTES },
		{ NULL, 0, NULL, 0 },
	};
	struct kvpool_pool_params p = { .flags = KVPOOL_CREATE_RESERVE_ZERO };
	unsigned int *field, seen = 0, id, budget = 0;
	unsigned long long page_bytes = 0;
	bool on_budget = false, have_bytes = false;
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
		case OPT_BUDGET:
			if (!parse_budget(optarg, &budget)) {
				err_msg("--budget: not a budget id: '%s' (kvpoolctl budget show lists them)",
					optarg);
				return EXIT_USAGE;
			}
			on_budget = true;
			continue;
		case OPT_PAGE_BYTES:
			c = parse_scaled(optarg, ULLONG_MAX, &page_bytes);
			if (c != NUM_OK) {
				bad_number("page-bytes", optarg, c, ULLONG_MAX);
				return EXIT_USAGE;
			}
			have_bytes = true;
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
	if (on_budget != have_bytes || (on_budget && *gpu)) {
		err_msg("create: --budget and --page-bytes go together, and not with --gpu");
		return usage_of(usage_create, stderr);
	}

	if (on_budget)
		ret = kvpool_pool_create_budget(&p, budget, page_bytes, &id);
	else
		ret = kvpool_pool_create(&p, &id);
	if (ret == -ENOENT && !module_loaded())
		return not_loaded();
	if (ret && on_budget) {
		c = create_budget_error(ret, budget, page_bytes);
		if (c >= 0)
			return c;
	}
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

int cmd_destroy(int argc, char **argv)
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
