// SPDX-License-Identifier: GPL-2.0-only
/*
 * kvpool driver: the pool figures under /sys/class/kvpool/kvpoolN/
 * (docs/ABI/testing/sysfs-class-kvpool), read under the pool lock.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/device.h>
#include <linux/sysfs.h>

#include "kvpool_drv.h"

static struct kvp_pool *kvp_dev_pool(struct device *dev)
{
	return &container_of(dev, struct kvp_dev, dev)->core;
}

/* A pool figure: the u32 at @offset in struct kvp_pool. */
struct kvp_attr {
	struct device_attribute dev_attr;
	size_t offset;
};

static ssize_t kvp_attr_show(struct device *dev,
			     struct device_attribute *attr, char *buf)
{
	struct kvp_pool *pool = kvp_dev_pool(dev);
	size_t offset = container_of(attr, struct kvp_attr, dev_attr)->offset;
	u32 val;

	mutex_lock(&pool->lock);
	val = *(u32 *)((char *)pool + offset);
	mutex_unlock(&pool->lock);
	return sysfs_emit(buf, "%u\n", val);
}

#define KVP_ATTR(_name, _member)					\
	static struct kvp_attr dev_attr_##_name = {			\
		.dev_attr = __ATTR(_name, 0444, kvp_attr_show, NULL),	\
		.offset = offsetof(struct kvp_pool, _member),		\
	}

/* A counter: the u64 at @offset, which only ever grows. */
static ssize_t kvp_attr64_show(struct device *dev,
			       struct device_attribute *attr, char *buf)
{
	struct kvp_pool *pool = kvp_dev_pool(dev);
	size_t offset = container_of(attr, struct kvp_attr, dev_attr)->offset;
	u64 val;

	mutex_lock(&pool->lock);
	val = *(u64 *)((char *)pool + offset);
	mutex_unlock(&pool->lock);
	return sysfs_emit(buf, "%llu\n", (unsigned long long)val);
}

#define KVP_ATTR64(_name, _member)					\
	static struct kvp_attr dev_attr_##_name = {			\
		.dev_attr = __ATTR(_name, 0444, kvp_attr64_show, NULL),	\
		.offset = offsetof(struct kvp_pool, _member),		\
	}

KVP_ATTR(pool_id, id);
KVP_ATTR(nr_pages, nr_pages);
KVP_ATTR(page_tokens, page_tokens);
KVP_ATTR(nr_rows, nr_rows);
KVP_ATTR(row_tokens, row_tokens);
KVP_ATTR(create_flags, flags);
KVP_ATTR(free_pages, free_pages);
KVP_ATTR(row_pages, row_pages);
KVP_ATTR(slot_pages, slot_pages);
KVP_ATTR(cache_evictable, cache_evictable);
KVP_ATTR(cache_pinned, cache_pinned);
KVP_ATTR(reserved_pages, reserved_pages);
KVP_ATTR(free_rows, free_rows);
KVP_ATTR(held_rows, held_rows);
KVP_ATTR(slot_rows, slot_rows);
KVP_ATTR(reserved_rows, reserved_rows);
KVP_ATTR(nr_clients, nr_clients);
KVP_ATTR(nr_tenants, nr_tenants);
KVP_ATTR(export_rows, export_rows);
KVP_ATTR(export_pages, export_pages);
KVP_ATTR(quarantine_pages, quarantine_pages);
KVP_ATTR(low_wmark, low_wmark);
KVP_ATTR(high_wmark, high_wmark);
/* Counters since the pool was made, for rates (kvpoolctl metrics). */
KVP_ATTR(clients_opened, next_client_id);
KVP_ATTR64(refused_space, refused_space);
KVP_ATTR64(refused_quota, refused_quota);
KVP_ATTR64(reclaimed_pages, reclaimed_pages);

/* The PCI device the pool was created for, as lspci names it, or "". */
static ssize_t gpu_show(struct device *dev, struct device_attribute *attr,
			char *buf)
{
	struct kvp_dev *kd = container_of(dev, struct kvp_dev, dev);

	return sysfs_emit(buf, "%s\n", kd->gpu ? pci_name(kd->gpu) : "");
}
static DEVICE_ATTR_RO(gpu);

/* Bytes of the pool's bookkeeping: see kvp_mem_bytes_locked(). */
static ssize_t mem_bytes_show(struct device *dev,
			      struct device_attribute *attr, char *buf)
{
	struct kvp_pool *pool = kvp_dev_pool(dev);
	u64 val;

	mutex_lock(&pool->lock);
	val = kvp_mem_bytes_locked(pool);
	mutex_unlock(&pool->lock);
	return sysfs_emit(buf, "%llu\n", (unsigned long long)val);
}
static DEVICE_ATTR_RO(mem_bytes);

static struct attribute *kvp_pool_attrs[] = {
	&dev_attr_gpu.attr,
	&dev_attr_mem_bytes.attr,
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

static const struct attribute_group kvp_pool_group = {
	.attrs = kvp_pool_attrs,
};

const struct attribute_group *kvp_pool_groups[] = {
	&kvp_pool_group,
	NULL,
};
