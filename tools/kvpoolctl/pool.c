// SPDX-License-Identifier: GPL-2.0-only
/*
 * kvpoolctl create and destroy: pools, through /dev/kvpool-control.
 *
 * Copyright (C) 2026 The kvpool authors
 */
#include <errno.h>
#include <getopt.h>

#include "kvpoolctl.h"

const char usage_create[] =
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

const char usage_destroy[] =
"destroy POOL\n"
"    Destroy POOL. Refused while it has clients. Needs root.\n";

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

int cmd_create(int argc, char **argv)
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
