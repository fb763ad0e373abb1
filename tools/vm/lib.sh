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

# vm_mirror_of_system CODENAME: print "URI SIGNED-BY" of the system source
# that serves the plain release suite CODENAME (e.g. "bookworm"), from
# deb822 .sources files or, failing that, one-line sources.list files.
# Other suites (backports, trixie, sid) are read from the same mirror, so
# no mirror host is ever written into these scripts.
vm_mirror_of_system() {
	local codename=$1 f out=
	for f in /etc/apt/sources.list.d/*.sources; do
		[[ -f $f ]] || continue
		# Paragraph mode: one record per stanza; comment lines dropped.
		out=$(awk -v suite="$codename" '
			BEGIN { RS = ""; FS = "\n" }
			{
				types = ""; uris = ""; suites = ""; key = ""
				for (i = 1; i <= NF; i++) {
					if ($i ~ /^#/) continue
					split($i, kv, /:[ \t]*/)
					k = tolower(kv[1]); v = substr($i, length(kv[1]) + 2)
					sub(/^[ \t]+/, "", v)
					if (k == "types") types = v
					else if (k == "uris") uris = v
					else if (k == "suites") suites = v
					else if (k == "signed-by") key = v
				}
				if (types !~ /(^| )deb( |$)/) next
				n = split(suites, s, /[ \t]+/)
				for (j = 1; j <= n; j++) if (s[j] == suite) {
					split(uris, u, /[ \t]+/)
					print u[1], key; exit
				}
			}' "$f")
		[[ -n $out ]] && { echo "$out"; return; }
	done
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[[ -f $f ]] || continue
		# "deb [opts] URI SUITE COMP..."
		out=$(sed -E 's/\[[^]]*\]//' "$f" |
			awk -v suite="$codename" '$1 == "deb" && $3 == suite { print $2; exit }')
		[[ -n $out ]] && { echo "$out"; return; }
	done
	return 1
}
