// SPDX-License-Identifier: GPL-2.0-only
/*
 * kvpool driver: the pool figures under /sys/class/kvpool/kvpoolN/
 * (docs/ABI/testing/sysfs-class-kvpool), read under the pool lock.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/device.h>
#include <linux/sysfs.h>

#include "kvpool_drv.h"

static struct kvp_pool *kvpd_dev_pool(struct device *dev)
{
	return &container_of(dev, struct kvpd_dev, dev)->core;
}

/* A pool figure: the u32 at @offset in struct kvp_pool. */
struct kvpd_attr {
	struct device_attribute dev_attr;
	size_t offset;
};

static ssize_t kvpd_attr_show(struct device *dev,
			      struct device_attribute *attr, char *buf)
{
	struct kvp_pool *pool = kvpd_dev_pool(dev);
	size_t offset = container_of(attr, struct kvpd_attr, dev_attr)->offset;
	u32 val;

	mutex_lock(&pool->lock);
	val = *(u32 *)((char *)pool + offset);
	mutex_unlock(&pool->lock);
	return sysfs_emit(buf, "%u\n", val);
}

#define KVPD_ATTR(_name, _member)					\
	static struct kvpd_attr dev_attr_##_name = {			\
		.dev_attr = __ATTR(_name, 0444, kvpd_attr_show, NULL),	\
		.offset = offsetof(struct kvp_pool, _member),		\
	}

/* A counter: the u64 at @offset, which only ever grows. */
static ssize_t kvpd_attr64_show(struct device *dev,
				struct device_attribute *attr, char *buf)
{
	struct kvp_pool *pool = kvpd_dev_pool(dev);
	size_t offset = container_of(attr, struct kvpd_attr, dev_attr)->offset;
	u64 val;

	mutex_lock(&pool->lock);
	val = *(u64 *)((char *)pool + offset);
	mutex_unlock(&pool->lock);
	return sysfs_emit(buf, "%llu\n", (unsigned long long)val);
}

#define KVPD_ATTR64(_name, _member)					\
	static struct kvpd_attr dev_attr_##_name = {			\
		.dev_attr = __ATTR(_name, 0444, kvpd_attr64_show, NULL), \
		.offset = offsetof(struct kvp_pool, _member),		\
	}

KVPD_ATTR(pool_id, id);
KVPD_ATTR(nr_pages, nr_pages);
KVPD_ATTR(page_tokens, page_tokens);
KVPD_ATTR(nr_rows, nr_rows);
KVPD_ATTR(row_tokens, row_tokens);
KVPD_ATTR(create_flags, flags);
KVPD_ATTR(free_pages, free_pages);
KVPD_ATTR(row_pages, row_pages);
KVPD_ATTR(slot_pages, slot_pages);
KVPD_ATTR(cache_evictable, cache_evictable);
KVPD_ATTR(cache_pinned, cache_pinned);
KVPD_ATTR(reserved_pages, reserved_pages);
KVPD_ATTR(free_rows, free_rows);
KVPD_ATTR(held_rows, held_rows);
KVPD_ATTR(slot_rows, slot_rows);
KVPD_ATTR(reserved_rows, reserved_rows);
KVPD_ATTR(nr_clients, nr_clients);
KVPD_ATTR(nr_tenants, nr_tenants);
KVPD_ATTR(export_rows, export_rows);
KVPD_ATTR(export_pages, export_pages);
KVPD_ATTR(quarantine_pages, quarantine_pages);
KVPD_ATTR(unbacked_pages, unbacked_pages);
KVPD_ATTR(low_wmark, low_wmark);
KVPD_ATTR(high_wmark, high_wmark);
/* Counters since the pool was made, for rates (kvpoolctl metrics). */
KVPD_ATTR(clients_opened, next_client_id);
KVPD_ATTR64(refused_space, refused_space);
KVPD_ATTR64(refused_quota, refused_quota);
KVPD_ATTR64(reclaimed_pages, reclaimed_pages);

/* The PCI device the pool was created for, as lspci names it, or "". */
static ssize_t gpu_show(struct device *dev, struct device_attribute *attr,
			char *buf)
{
	struct kvpd_dev *kd = container_of(dev, struct kvpd_dev, dev);

	return sysfs_emit(buf, "%s\n", kd->gpu ? pci_name(kd->gpu) : "");
}
static DEVICE_ATTR_RO(gpu);

/* Bytes of the pool's bookkeeping: see kvp_mem_bytes_locked(). */
static ssize_t mem_bytes_show(struct device *dev,
			      struct device_attribute *attr, char *buf)
{
	struct kvp_pool *pool = kvpd_dev_pool(dev);
	u64 val;

	mutex_lock(&pool->lock);
	val = kvp_mem_bytes_locked(pool);
	mutex_unlock(&pool->lock);
	return sysfs_emit(buf, "%llu\n", (unsigned long long)val);
}
static DEVICE_ATTR_RO(mem_bytes);

/*
 * The arena's page size and size in bytes, 0 until CTL_ARENA_SET gave it
 * one. ARENA_INFO says the same to a client; these let a metrics scraper
 * say it without opening the pool, and so without becoming its client.
 * The arena is set once under the pool lock and lives as long as the
 * device (struct kvpd_arena).
 */
static ssize_t kvpd_arena_show(struct device *dev, char *buf, bool total)
{
	struct kvpd_dev *kd = container_of(dev, struct kvpd_dev, dev);
	struct kvpool_arena a = {};
	u64 val = 0;

	/* A budget pool's: its whole id space, as ARENA says. */
	if (kvpd_backing_describe(kd, &a))
		return sysfs_emit(buf, "%llu\n", (unsigned long long)
				  (total ? a.out_bytes : a.out_page_bytes));
	mutex_lock(&kd->core.lock);
	if (kd->arena)
		val = total ? kd->arena->bytes : kd->arena->page_bytes;
	mutex_unlock(&kd->core.lock);
	return sysfs_emit(buf, "%llu\n", (unsigned long long)val);
}

static ssize_t arena_bytes_show(struct device *dev,
				struct device_attribute *attr, char *buf)
{
	return kvpd_arena_show(dev, buf, true);
}
static DEVICE_ATTR_RO(arena_bytes);

static ssize_t arena_page_bytes_show(struct device *dev,
				     struct device_attribute *attr, char *buf)
{
	return kvpd_arena_show(dev, buf, false);
}
static DEVICE_ATTR_RO(arena_page_bytes);

/*
 * The budget a pool is on (-1: none) and the chunks it holds of it now,
 * so that a scraper sees memory move between pools (kvpool_budget.c).
 */
static ssize_t kvpd_budget_show(struct device *dev, char *buf, bool chunks)
{
	struct kvpd_dev *kd = container_of(dev, struct kvpd_dev, dev);
	u32 held;
	int id;

	kvpd_backing_show(kd, &id, &held);
	return chunks ? sysfs_emit(buf, "%u\n", held) :
			sysfs_emit(buf, "%d\n", id);
}

static ssize_t budget_show(struct device *dev, struct device_attribute *attr,
			   char *buf)
{
	return kvpd_budget_show(dev, buf, false);
}
static DEVICE_ATTR_RO(budget);

static ssize_t chunks_show(struct device *dev, struct device_attribute *attr,
			   char *buf)
{
	return kvpd_budget_show(dev, buf, true);
}
static DEVICE_ATTR_RO(chunks);

static struct attribute *kvpd_pool_attrs[] = {
	&dev_attr_budget.attr,
	&dev_attr_chunks.attr,
	&dev_attr_unbacked_pages.dev_attr.attr,
	&dev_attr_gpu.attr,
	&dev_attr_mem_bytes.attr,
	&dev_attr_arena_bytes.attr,
	&dev_attr_arena_page_bytes.attr,
	&dev_attr_pool_id.dev_attr.attr,
	&dev_attr_nr_pages.dev_attr.attr,
	&dev_attr_page_tokens.dev_attr.attr,
	&dev_attr_nr_rows.dev_attr.attr,
	&dev_attr_row_tokens.dev_attr.attr,
	&dev_attr_create_flags.dev_attr.attr,
	&dev_attr_free_pages.dev_attr.attr,
	&dev_attr_row_pages.dev_attr.attr,
	&dev_attr_slot_pages.dev_attr.attr,
	&dev_attr_cache_evictable.dev_attr.attr,
	&dev_attr_cache_pinned.dev_attr.attr,
	&dev_attr_reserved_pages.dev_attr.attr,
	&dev_attr_free_rows.dev_attr.attr,
	&dev_attr_held_rows.dev_attr.attr,
	&dev_attr_slot_rows.dev_attr.attr,
	&dev_attr_reserved_rows.dev_attr.attr,
	&dev_attr_nr_clients.dev_attr.attr,
	&dev_attr_nr_tenants.dev_attr.attr,
	&dev_attr_export_rows.dev_attr.attr,
	&dev_attr_export_pages.dev_attr.attr,
	&dev_attr_quarantine_pages.dev_attr.attr,
	&dev_attr_low_wmark.dev_attr.attr,
	&dev_attr_high_wmark.dev_attr.attr,
	&dev_attr_clients_opened.dev_attr.attr,
	&dev_attr_refused_space.dev_attr.attr,
	&dev_attr_refused_quota.dev_attr.attr,
	&dev_attr_reclaimed_pages.dev_attr.attr,
	NULL,
};

static const struct attribute_group kvpd_pool_group = {
	.attrs = kvpd_pool_attrs,
};

const struct attribute_group *kvpd_pool_groups[] = {
	&kvpd_pool_group,
	NULL,
};

/*
 * /sys/class/kvpool/: pools destroyed with pages in quarantine, whose
 * chunks stay held until those pages' writers are gone, and their
 * chunks (docs/gpu-agent.md). KVPD_CLASS_CONST is const where the
 * kernel's class attributes take const pointers (Kbuild finds out).
 */

static ssize_t kvpd_retired_show(char *buf, bool chunks)
{
	u32 pools, nr_chunks;

	kvpd_arena_retired_count(&pools, &nr_chunks);
	return sysfs_emit(buf, "%u\n", chunks ? nr_chunks : pools);
}

static ssize_t retired_pools_show(KVPD_CLASS_CONST struct class *class,
				  KVPD_CLASS_CONST struct class_attribute *attr,
				  char *buf)
{
	return kvpd_retired_show(buf, false);
}
static CLASS_ATTR_RO(retired_pools);

static ssize_t retired_chunks_show(KVPD_CLASS_CONST struct class *class,
				   KVPD_CLASS_CONST struct class_attribute *attr,
				   char *buf)
{
	return kvpd_retired_show(buf, true);
}
static CLASS_ATTR_RO(retired_chunks);

static struct attribute *kvpd_class_attrs[] = {
	&class_attr_retired_pools.attr,
	&class_attr_retired_chunks.attr,
	NULL,
};

static const struct attribute_group kvpd_class_group = {
	.attrs = kvpd_class_attrs,
};

const struct attribute_group *kvpd_class_groups[] = {
	&kvpd_class_group,
	NULL,
};
