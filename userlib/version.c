// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * libkvpool: kvpool_version().
 *
 * Copyright (C) 2026 The kvpool authors
 */
#include "lib.h"

/* The top-level VERSION file, passed in by the Makefile. */
#ifndef KVPOOL_VERSION
#error "build with -DKVPOOL_VERSION='\"x.y.z\"' (userlib/Makefile reads ../VERSION)"
#endif

KVP_PUBLIC
const char *kvpool_version(void)
{
	return KVPOOL_VERSION;
}
