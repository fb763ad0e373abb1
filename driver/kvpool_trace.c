// SPDX-License-Identifier: GPL-2.0-only
/*
 * kvpool driver: the one place its tracepoints are defined
 * (kvpool_trace.h); every other file only includes the header.
 */
#define CREATE_TRACE_POINTS
#include "kvpool_trace.h"
