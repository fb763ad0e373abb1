// SPDX-License-Identifier: GPL-2.0-only
/*
 * kvpoolctl arena create and show.
 *
 * Copyright (C) 2026 The kvpool authors
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "kvpoolctl.h"

const char usage_arena[] =
"arena create POOL {--host|--cuda [--shared]} --page-bytes N [--chunks N]\n"
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
"                      multiples of its allocation granularity too.\n"
"                      Where the module has the GPU agent (ABI 3), the\n"
"                      pool holds the GPU's /dev/nvidiaN open, and each\n"
"                      client gets chunk files of its own, made by the\n"
"                      pool's GPU agent: kvpool-gpud must run\n"
"    --shared          with --cuda: every client gets the arena's own\n"
"                      chunk files, which any of them can unexport or\n"
"                      replace for all: one tenant only; needs no agent\n"
"    --page-bytes N    bytes of one page: every layer's K and V of the\n"
"                      pool's page-tokens tokens, 1..4G\n"
"    --chunks N        files the arena is made of, 1..256 (default 1)\n"
"    Numbers take a K, M or G suffix (x1024, x1024^2, x1024^3).\n"
"    show: the arena's kind (and for cuda the GPU, whether the pool\n"
"    holds the GPU's device, and its agent), page size, length and\n"
"    chunks; of a pool on a chunk budget (create --budget), the budget\n"
"    and the chunks it holds now, which are no files. Opens /dev/kvpoolN,\n"
"    as info does.\n"
"    -j, --json   one JSON object\n";

/* ---- arena ---- */

/* The rules CTL_ARENA_SET and the chunk plan hold a host arena to. */
static void arena_rules(void)
{
	fprintf(stderr, "rules: --page-bytes 1..4G; --chunks 1..%d, each a multiple of the page and of the CPU page (%ld bytes), none past the pool's pages\n",
		KVPOOL_ARENA_MAX_CHUNKS, sysconf(_SC_PAGESIZE));
}

/* arena create refused with EEXIST: why, as an exit code. */
static int arena_exists(unsigned int id)
{
	unsigned int budget, chunks;
	bool on;

	read_pool_budget(id, &on, &budget, &chunks);
	if (on)
		err_msg("arena create: pool %u is on chunk budget %u: its arena is the budget's (kvpoolctl budget show %u)",
			id, budget, budget);
	else
		err_msg("arena create: pool %u has an arena already; it is set once, until the pool is destroyed (kvpoolctl arena show %u)",
			id, id);
	return EXIT_FAIL;
}

/*
 * Whether pool @id's module has the GPU agent (KVPOOL_FEAT_GPU_AGENT),
 * into *@agent. Only KVPOOL_INFO says, so the pool is opened for the
 * moment. Returns an exit code.
 */
static int has_gpu_agent(unsigned int id, bool *agent)
{
	struct kvpool_info in;
	struct kvpool *kp;
	int ret;

	ret = open_pool(id, &kp);
	if (ret)
		return ret;
	ret = kvpool_info(kp, &in);
	kvpool_close(kp);
	if (ret)
		return pool_error(ret, "arena create", (int)id);
	*agent = in.out_features & KVPOOL_FEAT_GPU_AGENT;
	return EXIT_OK;
}

/*
 * The CUDA kind: the plan needs the GPU's granularity, which only the
 * driver knows, so the library plans and says what went wrong in words.
 * An agent arena where the module has the agent, unless @shared: with
 * one chunk file for every client, any client can unexport or replace a
 * chunk for all the others (docs/gpu-agent.md).
 */
static int arena_create_cuda(unsigned int id, unsigned long long page_bytes,
			     unsigned int chunks, bool shared)
{
	bool agent = false;
	uint32_t idx;
	int ret;

	ret = has_gpu_agent(id, &agent);
	if (ret)
		return ret;
	if (!agent && !shared)
		fprintf(stderr, "%s: arena create: this kvpool module has no GPU agent (ABI 3): the arena is shared, one tenant only (--shared)\n",
			prog);
	if (agent && !shared)
		ret = kvpool_arena_create_cuda_flags(id, page_bytes, chunks,
						     KVPOOL_ARENA_SET_AGENT,
						     &idx);
	else
		ret = kvpool_arena_create_cuda(id, page_bytes, chunks, &idx);
	if (!ret)
		return EXIT_OK;
	switch (-ret) {
	case ELIBACC:
		err_msg("arena create: %s", kvpool_arena_error());
		return EXIT_NO_DRIVER;
	case EEXIST:
		return arena_exists(id);
	case ENODEV:
	case ENOENT:
		/* The pool is there: the GPU's device node was not found. */
		if (kvpool_pool_status(id, NULL, NULL) == 0)
			break;
		return ctl_error(ret, "arena create", id, "arenas");
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
	enum { OPT_HOST = 256, OPT_CUDA, OPT_SHARED, OPT_PAGE_BYTES,
	       OPT_CHUNKS };
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "host", no_argument, NULL, OPT_HOST },
		{ "cuda", no_argument, NULL, OPT_CUDA },
		{ "shared", no_argument, NULL, OPT_SHARED },
		{ "page-bytes", required_argument, NULL, OPT_PAGE_BYTES },
		{ "chunks", required_argument, NULL, OPT_CHUNKS },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t bytes[KVPOOL_ARENA_MAX_CHUNKS], off = 0;
	unsigned long long page_bytes = 0;
	unsigned int id, chunks = 1, i;
	bool host = false, cuda = false, shared = false, have_bytes = false;
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
		case OPT_SHARED:
			shared = true;
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
	if (shared && !cuda) {
		err_msg("arena create: --shared is a kind of --cuda arena");
		return usage_of(usage_arena, stderr);
	}
	if (!parse_pool(argv[optind], &id))
		return bad_pool(argv[optind]);
	if (cuda)
		return arena_create_cuda(id, page_bytes, chunks, shared);

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
	if (ret == -EEXIST)
		return arena_exists(id);
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
 * KVPOOL_ARENA with KVPOOL_ARENA_FDS and KVPOOL_ARENA_NOWAIT for chunks
 * [@first, @first + @n): kvpool_arena_fds() takes no flags, and show must
 * not wait for an agent that is not there. Returns 0 or -errno.
 */
static int arena_fds_nowait(struct kvpool *kp, __u32 first, __u32 n,
			    struct kvpool_arena_fd *out)
{
	struct kvpool_arena a = {
		.size = sizeof(a),
		.flags = KVPOOL_ARENA_FDS | KVPOOL_ARENA_NOWAIT,
		.first_chunk = first,
		.count = n,
		.fd_entry_len = sizeof(*out),
		.fds = (__u64)(uintptr_t)out,
	};

	return ioctl(kvpool_fd(kp), KVPOOL_ARENA, &a) ? -errno : 0;
}

/*
 * Every chunk of @kp's arena @a into @out, in batches: the kernel tells a
 * chunk's place only with a descriptor of it, closed here at once. Of an
 * agent arena the descriptors are the agent's fresh exports: without an
 * agent attached the answer is -EAGAIN at once, not a wait. Returns 0 or
 * -errno.
 */
static int fetch_chunks(struct kvpool *kp, const struct kvpool_arena *a,
			struct kvpool_arena_fd *out)
{
	bool agent = a->out_set_flags & KVPOOL_ARENA_SET_AGENT;
	__u32 nr = a->out_nr_chunks, first, n, i;
	int ret;

	for (first = 0; first < nr; first += n) {
		n = nr - first < 16 ? nr - first : 16;
		if (agent)
			ret = arena_fds_nowait(kp, first, n, out + first);
		else
			ret = kvpool_arena_fds(kp, first, n, out + first,
					       NULL);
		if (ret < 0)
			return ret;
		for (i = first; i < first + n; i++) {
			close(out[i].out_fd);
			out[i].out_fd = -1;
		}
	}
	return 0;
}

/*
 * Why the chunks of an agent arena are not shown: @err, -EAGAIN or -EIO
 * from fetch_chunks(), in words.
 */
static const char *chunks_unknown(int err)
{
	return err == -EAGAIN ?
		"no GPU agent is attached (is kvpool-gpud running?)" :
		"the GPU agent could not export them (its log says why)";
}

/*
 * @chunks_err: fetch_chunks()'s answer (of an agent arena, not fatal);
 * @budget: the chunk budget the pool is on; -1: on none, -2: on one that
 * sysfs does not name.
 */
static void print_arena_json(unsigned int id, const struct kvpool_arena *a,
			     const struct kvpool_arena_fd *c, __u32 nr_pages,
			     const char *gpu, int chunks_err, long long budget)
{
	bool agent = a->out_set_flags & KVPOOL_ARENA_SET_AGENT;
	__u32 i;

	printf("{\n  \"pool_id\": %u,\n", id);
	printf("  \"kind\": \"%s\",\n", arena_kind(a->out_kind));
	/* null: the pool names no GPU. */
	printf("  \"gpu\": ");
	json_string_or_null(gpu);
	printf(",\n");
	printf("  \"device_held\": %s,\n",
	       a->out_set_flags & KVPOOL_ARENA_SET_DEVICE ? "true" : "false");
	printf("  \"agent_arena\": %s,\n", agent ? "true" : "false");
	/* null: the pool is on no chunk budget (or sysfs does not say). */
	if (budget >= 0)
		printf("  \"budget\": %lld,\n", budget);
	else
		printf("  \"budget\": null,\n");
	/* null: none attached, or not an agent arena. */
	if (agent && a->out_agent_pid)
		printf("  \"agent_pid\": %u,\n", a->out_agent_pid);
	else
		printf("  \"agent_pid\": null,\n");
	printf("  \"page_bytes\": %llu,\n",
	       (unsigned long long)a->out_page_bytes);
	printf("  \"bytes\": %llu,\n", (unsigned long long)a->out_bytes);
	printf("  \"nr_pages\": %u,\n", nr_pages);
	printf("  \"nr_chunks\": %u,\n", a->out_nr_chunks);
	/*
	 * null: an agent arena's chunks, with no agent to ask, or a budget
	 * pool's, which are no files (nr_chunks: those it holds now).
	 */
	if (chunks_err || budget != -1) {
		printf("  \"chunks\": null\n}\n");
		return;
	}
	printf("  \"chunks\": [");
	for (i = 0; i < a->out_nr_chunks; i++)
		printf("%s\n    { \"index\": %u, \"offset\": %llu, \"bytes\": %llu }",
		       i ? "," : "", i, (unsigned long long)c[i].out_offset,
		       (unsigned long long)c[i].out_bytes);
	printf("%s]\n}\n", a->out_nr_chunks ? "\n  " : "");
}

/* A CUDA arena's keep-alive and agent, as arena show's text says them. */
static void print_cuda_holds(const struct kvpool_arena *a)
{
	if (a->out_set_flags & KVPOOL_ARENA_SET_DEVICE)
		printf("  device      held\n");
	else
		printf("  device      not held (keep the GPU in persistence mode)\n");
	if (!(a->out_set_flags & KVPOOL_ARENA_SET_AGENT))
		printf("  agent       not used (shared: every client gets the arena's own files)\n");
	else if (a->out_agent_pid)
		printf("  agent       pid %u\n", a->out_agent_pid);
	else
		printf("  agent       none (clients wait for one: is kvpool-gpud running?)\n");
}

static void print_arena(unsigned int id, const struct kvpool_arena *a,
			const struct kvpool_arena_fd *c, __u32 nr_pages,
			const char *gpu, int chunks_err, long long budget)
{
	__u32 i;

	if (a->out_kind == KVPOOL_ARENA_NONE) {
		printf("pool %u has no arena (kvpoolctl arena create --help)\n",
		       id);
		return;
	}
	printf("pool %u arena: %s\n", id, arena_kind(a->out_kind));
	if (a->out_kind == KVPOOL_ARENA_CUDA) {
		printf("  gpu         %s\n", *gpu ? gpu : "- (none named)");
		print_cuda_holds(a);
	}
	printf("  page bytes  %llu\n", (unsigned long long)a->out_page_bytes);
	printf("  bytes       %llu (%llu pages; the pool's ids are 0..%u)\n",
	       (unsigned long long)a->out_bytes,
	       (unsigned long long)(a->out_bytes / a->out_page_bytes),
	       nr_pages - 1);
	if (budget != -1) {
		/* Its chunks come and go: no files, no fixed places. */
		if (budget >= 0)
			printf("  budget      %lld (kvpoolctl budget show %lld)\n",
			       budget, budget);
		else
			printf("  budget      (sysfs does not name it)\n");
		printf("  chunks      %u held now, of the budget's; clients map the pool's file\n",
		       a->out_nr_chunks);
		return;
	}
	printf("  chunks      %u\n", a->out_nr_chunks);
	if (chunks_err) {
		printf("  (where each lies is told only with its file, which the GPU agent makes: %s)\n",
		       chunks_unknown(chunks_err));
		return;
	}
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
	unsigned int id, budget, held;
	struct kvpool_info in;
	struct kvpool *kp;
	bool json = false, done, known;
	int ret, chunks_err = 0;
	long long on = -1;

	ret = open_one_pool(argc, argv, usage_arena, &json, &id, &kp, &in,
			    &done);
	if (done)
		return ret;
	ret = kvpool_arena_info(kp, &a);
	/* A budget pool has no chunk files (ARENA_FDS is EOPNOTSUPP). */
	if (!ret && a.out_set_flags & KVPOOL_ARENA_SET_BUDGET) {
		read_pool_budget(id, &known, &budget, &held);
		on = known ? (long long)budget : -2;
	} else if (!ret && a.out_kind != KVPOOL_ARENA_NONE) {
		chunks = calloc(a.out_nr_chunks ? a.out_nr_chunks : 1,
				sizeof(*chunks));
		ret = chunks ? fetch_chunks(kp, &a, chunks) : -ENOMEM;
		/* Of an agent arena the rest is still worth showing. */
		if ((ret == -EAGAIN || ret == -EIO) &&
		    a.out_set_flags & KVPOOL_ARENA_SET_AGENT) {
			chunks_err = ret;
			ret = 0;
		}
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
		print_arena_json(id, &a, chunks, in.out_nr_pages, gpu,
				 chunks_err, on);
	else
		print_arena(id, &a, chunks, in.out_nr_pages, gpu, chunks_err,
			    on);
	free(chunks);
	return EXIT_OK;
}

int cmd_arena(int argc, char **argv)
{
	static const struct subcommand sub[] = {
		{ "create", arena_create }, { "show", arena_show },
	};

	return run_subcommand(argc, argv, usage_arena, sub, ARRAY_SIZE(sub));
}
