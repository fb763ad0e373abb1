#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# shellcheck disable=SC2001 # sed indents multi-line strings more clearly
#
# guest-debug.sh: the guest side of the debug-kernel lane (6.1-debug).
#
# Runs as CMD of vm-run.sh (run-tests.sh starts it for every kernel whose
# name ends in -debug), inside the guest, as root, with kvpool.ko loaded.
# Refuses to run on the host.
#
# Usage: tools/vm/guest-debug.sh [TEST-BINARY...]
#   default: every executable selftests/kernel/*_test, then every
#   selftests/debug/*_test (fault injection: failnth_test, ...)
#
# Steps:
#  1. debugfs mounted; failslab set for fail-nth (ignore-gfp-wait N,
#     verbose 0); kmemleak must be there.
#  2. tools/vm/guest-tests.sh runs the binaries (TAP counts, a kernel log
#     check after each one: KASAN, lockdep, UBSAN, WARN, BUG, ...).
#  3. kmemleak, module loaded: scan, wait, scan; the report goes to
#     kmemleak.loaded.txt (backtraces symbolised, "[kvpool]" frames).
#  4. rmmod kvpool (must work: a leaked file or pool would pin it) and
#     check the kernel log of the unload.
#  5. kmemleak again, module gone: objects only the module's globals
#     pointed to are now unreferenced; kmemleak.unloaded.txt. Frames in
#     freed module code (all of it now, its init code already after
#     insmod) print as bare addresses: the span of the module's sections,
#     read from /sys/module/kvpool/sections before the unload, attributes
#     them (kmemleak.module).
#  A leak is kvpool's if its record names kvpool (a "[kvpool]" frame, a
#  kvp_ or kvpool symbol, the word in the hex dump or comm) or has a frame
#  inside the module's span. Each kvpool leak record is printed and goes
#  to kmemleak.kvpool.txt; any fails the run. Leaks of the kernel itself
#  (boot, 9p) are listed in kmemleak.other.txt and fail nothing.
#
# Env: as guest-tests.sh (KVPOOL_RESULTS, KVPOOL_TESTS_DIR,
# KVPOOL_TEST_TIMEOUT), plus KVPOOL_DEBUG_TESTS_DIR (default
# selftests/debug) and KVPOOL_KMEMLEAK_WAIT (seconds between the two scans
# of a round, default 6: kmemleak reports nothing younger than 5 s).
#
# Output files in KVPOOL_RESULTS: those of guest-tests.sh (summary,
# tests.tsv, tap.log, tap/, kmsg/), plus kmemleak.*.txt, kmemleak.module
# (the module's address range) and kmsg/zz-unload.log; tests.tsv gets a "kmemleak" and an "rmmod" row, and
# summary counts them (one failure each when they fail, one pass else).
# Exit status: 0 when nothing failed and something passed, else 1.
set -euo pipefail
VM_PROG=guest-debug
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

[[ ${KVPOOL_IN_VM:-} == 1 ]] ||
	vm_die "runs inside the test VM only; use tools/vm/run-tests.sh --kernels 6.1-debug"
res=${KVPOOL_RESULTS:?KVPOOL_RESULTS is not set}
kdir=${KVPOOL_TESTS_DIR:-$REPO_ROOT/selftests/kernel}
ddir=${KVPOOL_DEBUG_TESTS_DIR:-$REPO_ROOT/selftests/debug}
wait_s=${KVPOOL_KMEMLEAK_WAIT:-6}
dbg=/sys/kernel/debug
leak=$dbg/kmemleak

mountpoint -q "$dbg" || mount -t debugfs debugfs "$dbg"
[[ -e $leak ]] || vm_die "no $leak: not a kmemleak kernel (boot 6.1-debug)"
if [[ -d $dbg/failslab ]]; then
	echo N >"$dbg/failslab/ignore-gfp-wait"
	echo 0 >"$dbg/failslab/verbose"
fi

tests=("$@")
if ((${#tests[@]} == 0)); then
	shopt -s nullglob
	for t in "$kdir"/*_test "$ddir"/*_test; do
		[[ -f $t && -x $t ]] && tests+=("$t")
	done
	shopt -u nullglob
fi

set +e
"$VM_DIR/guest-tests.sh" "${tests[@]}"
set -e
p=0 f=0 s=0
[[ -s $res/summary ]] && read -r p f s <"$res/summary"

# row NAME OK SECONDS NOTE: one more line of tests.tsv, counted.
row() {
	if (($2)); then
		p=$((p + 1))
		printf '%s\t0\t1\t0\t0\t%s\t%s\n' "$1" "$3" "$4" >>"$res/tests.tsv"
	else
		f=$((f + 1))
		printf '%s\t1\t0\t1\t0\t%s\t%s\n' "$1" "$3" "$4" >>"$res/tests.tsv"
	fi
	echo "$p $f $s" >"$res/summary"
}

# The module's real address in /proc/modules (root has CAP_SYSLOG).
echo 1 >/proc/sys/kernel/kptr_restrict

# scan_round OUT: two scans (so that nothing just allocated counts), then
# the report into OUT.
scan_round() {
	echo scan >"$leak"
	sleep "$wait_s"
	echo scan >"$leak"
	cat "$leak" >"$1"
}

# kvpool_leaks FILE [LO HI]: the records of FILE that are kvpool's (see the
# header); LO and HI are 16 lowercase hex digits, compared as strings.
# (kmemleak prints each frame as "[<%p>] %pS": the first is hashed.)
# Prints them; exit 0 when there were any.
kvpool_leaks() {
	awk -v lo="${2:-}" -v hi="${3:-}" '
		function flush() {
			if (rec != "" && hit) { printf "%s", rec; n++ }
			rec = ""; hit = 0
		}
		/^unreferenced object/ { flush() }
		{ rec = rec $0 "\n" }
		/kvpool|kvp_/ { hit = 1 }
		# "    [<hashed>] 0xffffffffa00043ba": %pS of an address no
		# symbol covers any more is the bare address.
		lo != "" && match($0, /\] 0x[0-9a-f]+$/) {
			a = substr($0, RSTART + 4)
			if (length(a) == 16 && a >= lo && a < hi) hit = 1
		}
		END { flush(); exit n ? 0 : 1 }' "$1"
}

# leak_objects FILE: the object addresses of FILE's records, one a line.
leak_objects() {
	awk '/^unreferenced object/ { print $3 }' "$1" | sort -u
}

# module_range: set lo and hi to the span of the module's sections, core
# and init (init code is freed after insmod: a leak allocated there has a
# bare-address frame even while the module is loaded); hi is the last
# section's start plus the module's size, more than enough.
lo='' hi=''
module_range() {
	local f a min='' max='' size
	size=$(awk '$1 == "kvpool" { print $2 }' /proc/modules)
	for f in /sys/module/kvpool/sections/.*; do
		[[ -f $f ]] || continue
		a=$(<"$f")
		a=${a#0x}
		[[ $a =~ ^[0-9a-f]{16}$ && $a != 0000000000000000 ]] || continue
		[[ -z $min || $a < $min ]] && min=$a
		[[ -z $max || $a > $max ]] && max=$a
	done
	[[ -n $min && $size =~ ^[0-9]+$ ]] || return 0
	lo=$min
	hi=$(printf '%016x' $((0x$max + size)))
}

start=$SECONDS
modline=$(grep -E '^kvpool ' /proc/modules || true)
[[ -n $modline ]] && module_range
echo "kvpool sections: [$lo, $hi) ($modline)" >"$res/kmemleak.module"
scan_round "$res/kmemleak.loaded.txt"

# --- unload: the module's exit path under KASAN/lockdep, and its refcount.
dmesg -c >/dev/null
if [[ -n $modline ]]; then
	t0=$SECONDS
	if rmmod kvpool 2>"$res/rmmod.err"; then
		sleep 1
		if compgen -G '/sys/class/kvpool/kvpool*' >/dev/null ||
		   [[ -e /sys/class/misc/kvpool-control ]]; then
			row rmmod 0 $((SECONDS - t0)) "kvpool devices left after rmmod"
		else
			row rmmod 1 $((SECONDS - t0)) ""
		fi
	else
		vm_log "FAIL: rmmod kvpool: $(cat "$res/rmmod.err")"
		row rmmod 0 $((SECONDS - t0)) "rmmod failed: $(head -c 200 "$res/rmmod.err")"
	fi
	dmesg -c >"$res/kmsg/zz-unload.log"
	if bad=$(vm_bad_lines "$res/kmsg/zz-unload.log"); then
		vm_log "FAIL: kernel log of the unload has bad lines:"
		sed 's/^/  /' <<<"$bad"
		row unload-log 0 0 "bad kernel log at rmmod"
	fi
else
	vm_log "kvpool is not loaded: no unload check"
fi

scan_round "$res/kmemleak.unloaded.txt"

# --- verdict: kvpool's leaks, from both reports, each object once.
: >"$res/kmemleak.kvpool.txt"
kvpool_leaks "$res/kmemleak.loaded.txt" "$lo" "$hi" \
	>>"$res/kmemleak.kvpool.txt" || true
seen=$(leak_objects "$res/kmemleak.kvpool.txt")
kvpool_leaks "$res/kmemleak.unloaded.txt" "$lo" "$hi" |
	awk -v seen="$seen" '
		BEGIN { n = split(seen, s, "\n"); for (i = 1; i <= n; i++) old[s[i]] = 1 }
		/^unreferenced object/ { skip = ($3 in old) }
		!skip' >>"$res/kmemleak.kvpool.txt" || true
nleaks=$(grep -c '^unreferenced object' "$res/kmemleak.kvpool.txt" || true)
all=$(cat "$res/kmemleak.loaded.txt" "$res/kmemleak.unloaded.txt" |
	grep -c '^unreferenced object' || true)
# Everything else, for the record.
awk -v mine="$(leak_objects "$res/kmemleak.kvpool.txt")" '
	BEGIN { n = split(mine, s, "\n"); for (i = 1; i <= n; i++) k[s[i]] = 1 }
	/^unreferenced object/ { skip = ($3 in k) || ($3 in done); done[$3] = 1 }
	!skip' "$res/kmemleak.loaded.txt" "$res/kmemleak.unloaded.txt" \
	>"$res/kmemleak.other.txt"
nother=$(grep -c '^unreferenced object' "$res/kmemleak.other.txt" || true)
took=$((SECONDS - start))
if ((nleaks)); then
	vm_log "FAIL: kmemleak: $nleaks kvpool leak record(s) (kmemleak.kvpool.txt):"
	sed 's/^/  /' "$res/kmemleak.kvpool.txt"
	row kmemleak 0 "$took" "$nleaks kvpool leak(s); $nother other suspect(s)"
else
	row kmemleak 1 "$took" "no kvpool leak; $nother other suspect(s) (kmemleak.other.txt)"
fi
echo "# guest-debug: kmemleak: $nleaks kvpool leak(s), $nother other suspect(s)" \
	"($all records, ${took}s with the unload)"

echo "# guest-debug: total: $p passed, $f failed, $s skipped"
((f == 0 && p > 0))
