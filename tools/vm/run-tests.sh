#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# run-tests.sh: the VM test lane. For each kernel: fetch it, build kvpool.ko
# for it (W=1, warnings fail), boot ONE VM with the module loaded and run
# tools/vm/guest-tests.sh there (every selftests/kernel/*_test).
#
# Usage: tools/vm/run-tests.sh [--kernels "6.1 6.12"] [--params "k=v ..."]
#
#   --kernels LIST  kernel names (default: $KERNELS, else "6.1 6.12")
#   --params STR    kvpool.ko parameters for insmod (default: $KVPOOL_PARAMS)
#
# Env: KVPOOL_CACHE (default /var/cache/kvpool), RESULTS (default
# $KVPOOL_CACHE/results), KVPOOL_TEST_TIMEOUT (seconds per test binary,
# default 300: a hang guard, with room for a busy machine),
# KVPOOL_TESTS_DIR (test binaries; default selftests/kernel, built here
# with `make -C selftests/kernel` when that has a Makefile),
# SPARSE=1 (sparse in the module build), KVPOOL_DEBUG_TEST_TIMEOUT (the
# same limit on debug kernels, default 600).
#
# Per kernel it prints "vm KERNEL: N passed, N failed, N skipped" and leaves
# in $RESULTS/KERNEL/: summary ("PASSED FAILED SKIPPED"), tests.tsv, tap.log,
# tap/, kmsg/, dmesg, console.log (see guest-tests.sh and vm-run.sh). A
# kernel whose module did not build, whose VM did not boot or died, or
# whose final kernel log was bad gets one more failure in its summary.
#
# Debug kernels (names ending in -debug, i.e. 6.1-debug from
# tools/vm/debug-kernel.sh; tools/vm/debug-lane.sh is the short way) run
# tools/vm/guest-debug.sh instead: the same selftests/kernel binaries, then
# selftests/debug/*_test (fault injection; built here with make -C
# selftests/debug), then kmemleak and an rmmod check (rows "kmemleak",
# "rmmod" in tests.tsv; kmemleak.*.txt). Their per-binary limit is
# $KVPOOL_DEBUG_TEST_TIMEOUT (default 600 s: KASAN under TCG is slow).
#
# Exit status: 0 only when every kernel ran, passed at least one test case
# and failed none.
set -euo pipefail
VM_PROG=run-tests
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

kernels=${KERNELS:-$VM_ALL_KERNELS}
params=${KVPOOL_PARAMS:-}
while (($#)); do
	case $1 in
	--kernels)	kernels=${2:?}; shift 2 ;;
	--params)	params=${2?}; shift 2 ;;
	-h|--help)	awk 'NR > 2 && !/^#/ { exit } NR > 2 { sub(/^# ?/, ""); print }' \
				"${BASH_SOURCE[0]}"; exit 0 ;;
	*)		vm_die "unknown argument: $1 (see --help)" 2 ;;
	esac
done
read -ra klist <<<"$kernels"
((${#klist[@]})) || vm_die "no kernels given" 2
RESULTS=${RESULTS:-$KVPOOL_CACHE/results}
tmo=${KVPOOL_TEST_TIMEOUT:-300}
tdir=${KVPOOL_TESTS_DIR:-$REPO_ROOT/selftests/kernel}
export KVPOOL_TEST_TIMEOUT=$tmo

"$VM_DIR/install-deps.sh"
"$VM_DIR/get-kernels.sh" "${klist[@]}"

# The test binaries are plain userspace programs, the same for every kernel.
if [[ -z ${KVPOOL_TESTS_DIR:-} && -f $tdir/Makefile ]]; then
	make -s -C "$tdir" || vm_die "building the selftests failed"
fi
shopt -s nullglob
bins=("$tdir"/*_test)
shopt -u nullglob
nbins=${#bins[@]}
((nbins)) || vm_log "warning: no test binaries in $tdir"
# Whole-VM limit: boot, plus every binary at its own limit.
vm_timeout=$((90 + nbins * (tmo + 15)))

# Debug kernels also run selftests/debug (guest-debug.sh), slower.
is_debug() { [[ $1 == *-debug ]]; }
ddir=$REPO_ROOT/selftests/debug
dtmo=${KVPOOL_DEBUG_TEST_TIMEOUT:-600}
ndbins=0
for k in "${klist[@]}"; do
	is_debug "$k" || continue
	if [[ -f $ddir/Makefile ]]; then
		make -s -C "$ddir" || vm_die "building selftests/debug failed"
	fi
	shopt -s nullglob
	dbins=("$ddir"/*_test)
	shopt -u nullglob
	ndbins=${#dbins[@]}
	break
done
# Boot, every binary at its limit, two kmemleak rounds and the unload.
debug_timeout=$((150 + (nbins + ndbins) * (dtmo + 15) + 300))

status=0
lines=()
for k in "${klist[@]}"; do
	out=$RESULTS/$k
	rm -rf "$out"
	mkdir -p "$out"
	why=
	if ! ko=$("$VM_DIR/build-module.sh" "$k" 2>"$out/build.log" | tail -n1) ||
	   [[ -z $ko ]]; then
		cat "$out/build.log" >&2
		why="module build failed (log: $out/build.log)"
	else
		guest=guest-tests.sh ktmo=$tmo limit=$vm_timeout
		if is_debug "$k"; then
			guest=guest-debug.sh ktmo=$dtmo limit=$debug_timeout
		fi
		set +e
		(cd "$REPO_ROOT" && "$VM_DIR/vm-run.sh" --kernel "$k" --module "$ko" \
			--params "$params" --timeout "$limit" --results "$out" \
			--env "KVPOOL_TEST_TIMEOUT=$ktmo" \
			${KVPOOL_TESTS_DIR:+--env "KVPOOL_TESTS_DIR=$KVPOOL_TESTS_DIR"} \
			-- "$VM_DIR/$guest")
		rc=$?
		set -e
		case $rc in
		0|1)	;;	# the guest script's own verdict; counts say the rest
		122)	why="bad lines in the final kernel log ($out/dmesg)" ;;
		123)	why="module did not load" ;;
		124)	why="VM timed out after ${limit}s" ;;
		125)	why="VM did not boot or died (see $out/console.log)" ;;
		*)	why="vm-run/guest-tests exited $rc" ;;
		esac
	fi

	p=0 f=0 s=0
	[[ -s $out/summary ]] && read -r p f s <"$out/summary"
	if [[ -n $why ]]; then
		vm_log "kernel $k: $why"
		f=$((f + 1))
	fi
	echo "$p $f $s" >"$out/summary"
	line="vm $k: $p passed, $f failed, $s skipped"
	if ((p == 0 && f == 0)); then
		line+=" (no test passed)"
	fi
	((f == 0 && p > 0)) || status=1
	lines+=("$line")
	echo "$line"
done

# Repeat the verdicts together: the per-kernel lines above are buried in
# the test output.
if ((${#klist[@]} > 1)); then
	echo "--- VM lane (results in $RESULTS):"
	printf '%s\n' "${lines[@]}"
fi
exit "$status"
