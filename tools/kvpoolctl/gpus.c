// SPDX-License-Identifier: GPL-2.0-only
/*
 * kvpoolctl gpus: the host's GPUs, from libdrm, NVIDIA's driver and
 * sysfs.
 *
 * Copyright (C) 2026 The kvpool authors
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <xf86drm.h>

#include "kvpoolctl.h"

const char usage_gpus[] =
"gpus [--json | -r] [-n]\n"
"    List the host's GPUs, in PCI address order: PCI address, vendor and\n"
"    device ids, DRM render node, kernel driver, the pools made for each\n"
"    (create --gpu) and where it was found: drm (libdrm), nvidia\n"
"    (/proc/driver/nvidia/gpus) or pci (a display controller in sysfs\n"
"    that neither knows, e.g. with no driver). Needs no privilege and no\n"
"    kvpool module.\n"
"    -j, --json   one JSON array, an object a GPU\n"
"    -r, --raw    the table unaligned and uncut, one space apart\n"
"    -n, --noheadings  the table without its heading line\n";

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

/* Text only: --json has its own keys and types. */
static const struct colspec gpu_cols[GC_NR] = {
	[GC_INDEX]	= { "INDEX", "index", false, true, false, 0, NULL },
	[GC_ADDR]	= { "ADDRESS", "address", true, true, false, 0, NULL },
	[GC_IDS]	= { "VENDOR:DEVICE", "ids", true, true, false, 0, NULL },
	[GC_RENDER]	= { "RENDER", "render", true, true, false, 100, NULL },
	[GC_DRIVER]	= { "DRIVER", "driver", true, true, false, 100, NULL },
	[GC_POOLS]	= { "POOLS", "pools", true, true, false, 100, NULL },
	[GC_SOURCE]	= { "SOURCE", "source", true, true, false, 0, NULL },
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

static void print_gpu_table(const struct gpu_list *l, struct outfmt *o)
{
	char (*text)[GC_NR][GCELL];
	struct cell *cells;
	size_t i, j;

	text = calloc(l->nr ? l->nr : 1, sizeof(*text));
	cells = calloc(l->nr ? l->nr * GC_NR : 1, sizeof(*cells));
	if (!text || !cells) {
		free(text);
		free(cells);
		err_msg("out of memory");
		return;
	}
	for (j = 0, o->nsel = 0; j < GC_NR; j++)
		o->sel[o->nsel++] = (int)j;
	for (i = 0; i < l->nr; i++) {
		gpu_cells(&l->v[i], i, text[i]);
		for (j = 0; j < GC_NR; j++)
			cells[i * GC_NR + j] = (struct cell){ CK_STR, 0,
							      text[i][j] };
	}
	put_table(gpu_cols, GC_NR, cells, l->nr, o, 0);
	free(text);
	free(cells);
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

int cmd_gpus(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "json", no_argument, NULL, 'j' },
		{ "raw", no_argument, NULL, 'r' },
		{ "noheadings", no_argument, NULL, 'n' },
		{ NULL, 0, NULL, 0 },
	};
	struct gpu_list l = { 0 };
	struct outfmt o = { 0 };
	int c, ret;

	optind = 0;
	while ((c = getopt_long(argc, argv, "hjrn", opts, NULL)) != -1) {
		switch (c) {
		case 'h':
			return usage_of(usage_gpus, stdout);
		case 'j':
			o.json = true;
			break;
		case 'r':
			o.raw = true;
			break;
		case 'n':
			o.noheadings = true;
			break;
		default:
			return usage_of(usage_gpus, stderr);
		}
	}
	if (optind != argc)
		return usage_of(usage_gpus, stderr);
	if (o.json && (o.raw || o.noheadings)) {
		err_msg("--raw and --noheadings are the text table's: not with --json");
		return EXIT_USAGE;
	}

	ret = find_gpus(&l);
	if (ret) {
		free_gpus(&l);
		err_msg("gpus: %s", strerror(-ret));
		return EXIT_FAIL;
	}
	if (o.json)
		print_gpu_json(&l);
	else if (l.nr)
		print_gpu_table(&l, &o);
	else
		printf("no GPUs found (no DRM device, no NVIDIA GPU in " NVIDIA_GPUS ", no PCI display controller in " PCI_DEVICES ")\n");
	free_gpus(&l);
	return EXIT_OK;
}
