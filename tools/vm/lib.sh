# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash disable=SC2034 # variables here are for the sourcers
#
# Shared helpers for the tools/vm scripts. Sourced, never run: each script
# sets VM_PROG (its name, for messages) and sources this file right after
# `set -euo pipefail`.
#
# Everything heavy (kernels, builds, initramfs images, results) lives in a
# cache folder outside the checkout, so a `git clean` never throws away
# 200 MB of downloaded kernels and two kernels never share build objects.

# Where this file lives; the repo root is two levels up. Resolved from the
# script path so the tools work from any cwd.
VM_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$VM_DIR/../.." && pwd)

KVPOOL_CACHE=${KVPOOL_CACHE:-/var/cache/kvpool}
# Kernel names this tooling knows; "all" expands to the default set.
VM_ALL_KERNELS="6.1 6.12"

vm_log() { printf '%s: %s\n' "${VM_PROG:-vm}" "$*" >&2; }

# die MESSAGE [EXIT-CODE]
vm_die() {
	printf '%s: error: %s\n' "${VM_PROG:-vm}" "$1" >&2
	exit "${2:-1}"
}

# The bad-kernel-log patterns (extended regexes, one a line) shared by
# vm-run.sh (host side) and guest-tests.sh (guest side), so the two never
# disagree about what a broken kernel log is.
VM_BAD_PATTERNS="$VM_DIR/bad-patterns"

# vm_kernel_dir NAME: the cache folder of one kernel (see get-kernels.sh).
vm_kernel_dir() { printf '%s/kernels/%s\n' "$KVPOOL_CACHE" "$1"; }

# vm_require_kernel NAME: fail unless get-kernels.sh has filled that kernel.
vm_require_kernel() {
	local d
	d=$(vm_kernel_dir "$1")
	[[ -f $d/.complete ]] ||
		vm_die "kernel '$1' is not in $d; run tools/vm/get-kernels.sh $1"
}

# vm_bad_lines FILE: print the lines of a kernel log that match a bad
# pattern (with line numbers); exit status 0 when there were any.
vm_bad_lines() {
	grep -n -E -f <(grep -v -e '^#' -e '^[[:space:]]*$' "$VM_BAD_PATTERNS") -- "$1"
}
