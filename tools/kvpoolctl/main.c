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
 * destroy, tenant, wmark, arena create and budget go through
 * /dev/kvpool-control.
 * gpus reads libdrm's device list, /proc/driver/nvidia and sysfs, as any
 * user, and needs no module. See kvpoolctl(8) for the exit codes.
 *
 * This file is the command table and its dispatch; each command is a
 * file of its own, and kvpoolctl.h says what they share.
 */
#include <getopt.h>
#include <locale.h>
#include <string.h>

#include "kvpoolctl.h"

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
	{ "budget", cmd_budget, usage_budget },
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
		"arenas (the memory the page ids name) or chunk budgets to\n"
		"grow and shrink on, list the GPUs.\n"
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

	/*
	 * The locale's character set, for text tables' widths (wide
	 * characters) and what libsmartcols takes as printable; only
	 * LC_CTYPE: numbers keep their "." (OpenMetrics, JSON, top's rates).
	 */
	setlocale(LC_CTYPE, "");
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
