#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# gpu-check.sh: on a host with an NVIDIA GPU and driver, check the path a
# kvpool CUDA arena takes, with a stand-in for the kernel (see
# tools/gpu-check/gpu-check.c): the driver's versions, the GPU's Device
# Minor and persistence mode, what the exported file is (rdev: 195:255 is
# /dev/nvidiactl); libkvpool's order (create, export, release at once,
# the export and /dev/nvidiaN held, the creator SIGKILLed, one process
# writes, another reads); the GPU agent's re-export; the GPU torn down
# without the /dev/nvidiaN keep-alive (persistence off only) and kept up
# with it; the CUDA half of a chunk move between tenants (a broker makes
# a chunk, one tenant writes it, the broker clears it and times the
# clear, the next tenant must read zeros and the broker its bytes, the
# chunk's memory free again only when every handle and export is gone;
# and, without the clear, the next tenant reads the last one's bytes);
# and, where the module is loaded and kvpool-gpud runs (as root), a
# pool's agent arena mapped by two clients through libkvpool.
# Builds tools/gpu-check (cc, cuda.h from tools/cuda-headers.sh; no CUDA
# toolkit or libcuda needed to build), then runs it. Takes seconds; it
# gives up after two minutes.
#
#   tools/gpu-check.sh [--gpu BDF] [--bytes N] [--libcuda PATH]
#                      [--allow-persistence-toggle]
#
# --allow-persistence-toggle (root): with persistence mode on, turn it off
# with nvidia-smi for the teardown case and back on after; without it the
# case is skipped and the check never changes the mode.
#
# One line per step, "ok - ..." or "not ok - ..." ("ok - ... # SKIP why"
# where it cannot run). Exit: 0 every step passed, 1 a step failed (or
# the build did), 2 no CUDA driver (libcuda.so.1 not found).
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if ! out=$(make -s -C "$root/tools/gpu-check" 2>&1); then
	echo "$out" >&2
	echo "gpu-check: build failed" >&2
	exit 1
fi
exec timeout -k 5 120 "$root/tools/gpu-check/gpu-check" "$@"
