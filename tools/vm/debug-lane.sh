#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# debug-lane.sh: the debug-kernel lane. Builds (first time, 8-25 min) or
# reuses the 6.1-debug kernel (KASAN, lockdep, kmemleak, UBSAN,
# DEBUG_LIST, failslab + fail-nth; tools/vm/debug-kernel.sh), builds
# kvpool.ko against it, boots it once and runs, with the module loaded:
# every selftests/kernel/*_test, every selftests/debug/*_test (env_test,
# failnth_test), then kmemleak (module loaded, then unloaded) and an rmmod
# check (tools/vm/guest-debug.sh). Any KASAN, lockdep, UBSAN, WARN or BUG
# line in the kernel log (tools/vm/bad-patterns) and any kmemleak record
# that is kvpool's fails it.
#
# Usage: tools/vm/debug-lane.sh [--params "k=v ..."]
#
# It is `tools/vm/run-tests.sh --kernels 6.1-debug` (run-tests.sh treats
# every *-debug kernel this way), so KERNELS="6.1 6.12 6.1-debug" in
# `make check` runs it too. Same env (RESULTS, KVPOOL_CACHE, ...; the
# per-binary limit is KVPOOL_DEBUG_TEST_TIMEOUT), same output: the line
# "vm 6.1-debug: N passed, N failed, N skipped", and $RESULTS/6.1-debug/
# with summary ("PASSED FAILED SKIPPED"), tests.tsv, tap/, kmsg/, dmesg,
# console.log, kmemleak.{loaded,unloaded,kvpool,other}.txt. Last, a line
# with the lane's wall time (and the kernel build's, when there was one).
# Exit status: run-tests.sh's (0: something passed, nothing failed).
# Takes ~6 min with the kernel cached (2 cores; tools/vm/README.md).
set -euo pipefail
VM_PROG=debug-lane
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

start=$SECONDS
"$VM_DIR/install-deps.sh"
"$VM_DIR/debug-kernel.sh"
built=$((SECONDS - start))
set +e
"$VM_DIR/run-tests.sh" --kernels 6.1-debug "$@"
rc=$?
set -e
if ((built > 5)); then
	vm_log "lane took $((SECONDS - start))s, of which ${built}s building the kernel"
else
	vm_log "lane took $((SECONDS - start))s (kernel cached)"
fi
exit "$rc"
