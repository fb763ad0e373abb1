#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# gpu-check.sh: on a host with an NVIDIA GPU and driver, check the CUDA
# half of a kvpool CUDA arena end to end without the kvpool module: an
# exported cuMemCreate() chunk's fd, held by a stand-in for the kernel,
# imported and written by one process and read back by another after the
# exporter was killed; and that the exported fd is a character device,
# which the module requires. Builds tools/gpu-check (cc, cuda.h from
# tools/cuda-headers.sh; no CUDA toolkit or libcuda needed to build), then
# runs it. Takes seconds; it gives up after two minutes.
#
#   tools/gpu-check.sh [--gpu BDF] [--bytes N] [--libcuda PATH]
#
# Exit: 0 every step passed, 1 a step failed (or the build did),
# 2 no CUDA driver (libcuda.so.1 not found).
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if ! out=$(make -s -C "$root/tools/gpu-check" 2>&1); then
	echo "$out" >&2
	echo "gpu-check: build failed" >&2
	exit 1
fi
exec timeout -k 5 120 "$root/tools/gpu-check/gpu-check" "$@"
