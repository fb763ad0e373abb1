// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * libkvpool: chunk budgets (ABI 4, KVPOOL_FEAT_BUDGET), through the
 * control device: a budget's create, destroy, a pool's floor and ceiling
 * on it, its counters (KVPOOL_CTL_BUDGET), and a pool created on one
 * (KVPOOL_CTL_CREATE with KVPOOL_CREATE_BUDGET). Mapping a budget pool is
 * map.c's: kvpool_arena_map() maps the pool file itself.
 *
 * Copyright (C) 2026 The kvpool authors
 */
#include "lib.h"

/*
 * One CTL_BUDGET of op @op, the rest of *@arg as the caller filled it
 * (zero where the op wants 0). size and op are set here, so no caller
 * can send a struct of another length.
 */
static int kvp_budget(uint32_t op, struct kvpool_ctl_budget *arg)
{
	arg->size = sizeof(*arg);
	arg->op = op;
	return kvp_control(KVPOOL_CTL_BUDGET, arg);
}

KVP_PUBLIC
int kvpool_budget_create(uint32_t kind, uint32_t nr_chunks,
			 uint64_t chunk_bytes, unsigned int *budget_id)
{
	struct kvpool_ctl_budget arg = {
		.kind = kind,
		.nr_chunks = nr_chunks,
		.chunk_bytes = chunk_bytes,
	};
	int ret;

	ret = kvp_budget(KVPOOL_BUDGET_CREATE, &arg);
	if (ret)
		return ret;
	if (budget_id)
		*budget_id = arg.budget_id;
	return 0;
}

KVP_PUBLIC
int kvpool_budget_destroy(unsigned int budget_id)
{
	struct kvpool_ctl_budget arg = { .budget_id = budget_id };

	return kvp_budget(KVPOOL_BUDGET_DESTROY, &arg);
}

KVP_PUBLIC
int kvpool_budget_limits(unsigned int budget_id, unsigned int pool_id,
			 uint64_t min_bytes, uint64_t max_bytes)
{
	struct kvpool_ctl_budget arg = {
		.budget_id = budget_id,
		.pool_id = pool_id,
		.min_bytes = min_bytes,
		.max_bytes = max_bytes,
	};

	return kvp_budget(KVPOOL_BUDGET_LIMITS, &arg);
}

KVP_PUBLIC
int kvpool_budget_info(unsigned int budget_id, struct kvpool_ctl_budget *out)
{
	struct kvpool_ctl_budget arg = { .budget_id = budget_id };
	int ret;

	ret = kvp_budget(KVPOOL_BUDGET_INFO, &arg);
	/* Only on success, as kvp_ioctl_out(): a failure leaves *@out. */
	if (!ret && out)
		*out = arg;
	return ret;
}

KVP_PUBLIC
int kvpool_pool_create_budget(const struct kvpool_pool_params *params,
			      unsigned int budget_id, uint64_t page_bytes,
			      unsigned int *pool_id)
{
	/*
	 * kvpool_pool_create()'s request with the budget's fields: they
	 * do not fit struct kvpool_pool_params (one u32 of __resv left,
	 * page_bytes 64-bit), so they come as arguments instead.
	 */
	struct kvpool_ctl_create arg = {
		.size = sizeof(arg),
		.flags = params->flags | KVPOOL_CREATE_BUDGET,
		.nr_pages = params->nr_pages,
		.page_tokens = params->page_tokens,
		.nr_rows = params->nr_rows,
		.row_tokens = params->row_tokens,
		.gpu_domain = params->gpu_domain,
		.gpu_devid = params->gpu_devid,
		.budget_id = budget_id,
		.page_bytes = page_bytes,
	};
	unsigned int i;
	int ret;

	/* As kvpool_pool_create(): a later version may give it a meaning. */
	for (i = 0; i < ARRAY_SIZE(params->__resv); i++)
		if (params->__resv[i])
			return -EINVAL;

	ret = kvp_control(KVPOOL_CTL_CREATE, &arg);
	if (ret)
		return ret;
	if (pool_id)
		*pool_id = arg.out_pool_id;
	return 0;
}
