#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The whole test suite, as `make check` and CI run it. Installs what it
# needs (Debian 12, root), then:
#   1. unit: the core in userspace (ASan, UBSan, fail-nth), libkvpool,
#      kvpoolctl and the Python binding without the module, the fake CUDA
#      driver the CUDA arena tests use, the scheduler replay on the core,
#      and kvpool-bench's smoke pass (figures printed, not asserted);
#      the Debian packages: built (tools/packaging/build-debs.sh,
#      about a minute), their files and fields checked, lintian's errors
#      zero
#   2. fuzz: libFuzzer over the core, the corpus then a short run
#   3. lint: checkpatch --strict, W=1 and sparse per kernel
#   4. vm: every selftests/kernel/*_test in QEMU on each kernel of $KERNELS
#      (Debian 6.1, 6.12, 6.12 PREEMPT_RT, trixie-backports' 7.3 and sid's
#      newest, the last two built in debootstrapped roots), module loaded
#   5. debug: the same tests and fail-nth injection on a KASAN, lockdep,
#      kmemleak, UBSAN kernel built from Debian's linux-source-6.1
#      (when CI is set or KVPOOL_DEBUG_LANE=1; KVPOOL_DEBUG_LANE=0 skips)
#   6. engine: kvpool.sglang against SGLang 0.5.23 itself, kvpool.vllm
#      against vLLM 0.33.0 (tools/engine-tests.sh; 3.3 GB of downloads
#      into the cache the first time: when CI is set or
#      KVPOOL_ENGINE_TESTS=1;
#      KVPOOL_ENGINE_TESTS=0 skips)
# Prints "N passed, N failed, N skipped" last; exits non-zero on any
# failure; a stage that could not run at all counts as a failure.
#
#   tools/check.sh            everything
#   tools/check.sh --vm-only  only the VM lanes
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root" || exit 1
KERNELS=${KERNELS:-6.1 6.12 6.12-rt 7.3 sid}
KVPOOL_CACHE=${KVPOOL_CACHE:-/var/cache/kvpool}
RESULTS=${RESULTS:-$KVPOOL_CACHE/results}
export KVPOOL_CACHE RESULTS
if [[ -n ${KVPOOL_DEBUG_LANE:-} ]]; then
	debug_lane=$KVPOOL_DEBUG_LANE
elif [[ -n ${CI:-} ]]; then
	debug_lane=1
else
	debug_lane=0
fi

if [[ -n ${KVPOOL_ENGINE_TESTS:-} ]]; then
	engine_lane=$KVPOOL_ENGINE_TESTS
elif [[ -n ${CI:-} ]]; then
	engine_lane=1
else
	engine_lane=0
fi

vm_only=0
[[ ${1:-} == --vm-only ]] && vm_only=1

pass=0 fail=0 skip=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT

stage() { printf '\n=== %s (%s) ===\n' "$*" "$(date +%T)"; }

# count LOG LABEL: add the last "N passed, N failed" line of LOG.
count() {
	local line
	line=$(grep -E '[0-9]+ passed, [0-9]+ failed' "$1" | tail -n 1)
	if [[ -z $line ]]; then
		echo "check: $2 printed no result line: counted as a failure"
		fail=$((fail + 1))
		return
	fi
	pass=$((pass + $(grep -oE '[0-9]+ passed' <<<"$line" | grep -oE '[0-9]+')))
	fail=$((fail + $(grep -oE '[0-9]+ failed' <<<"$line" | grep -oE '[0-9]+')))
}

# run_checks LABEL CMD...: run CMD, add its PASS and FAIL lines; a CMD
# that fails without a FAIL line is one more failure.
run_checks() {
	local label=$1 f
	shift
	"$@" >"$log" 2>&1
	local rc=$?
	cat "$log"
	f=$(grep -c '^FAIL' "$log")
	pass=$((pass + $(grep -c '^PASS' "$log")))
	fail=$((fail + f))
	if ((rc != 0 && f == 0)); then
		echo "check: $label exited $rc: counted as a failure"
		fail=$((fail + 1))
	fi
}

# vm_summary KERNEL: add the counts run-tests.sh or debug-lane.sh left.
vm_summary() {
	local s=$RESULTS/$1/summary p f sk
	if [[ ! -s $s ]]; then
		echo "check: no results from kernel $1: counted as a failure"
		fail=$((fail + 1))
		return
	fi
	read -r p f sk <"$s"
	pass=$((pass + p))
	fail=$((fail + f))
	skip=$((skip + sk))
}

stage "dependencies"
if ! tools/vm/install-deps.sh || ! selftests/fuzz/install-deps.sh; then
	echo "check: installing dependencies failed"
	echo "0 passed, 1 failed"
	exit 1
fi

if ((!vm_only)); then
	stage "unit: the core in userspace (ASan, UBSan, fail-nth)"
	make -s -C selftests/unit check 2>&1 | tee "$log"
	count "$log" unit
fi

stage "build: libkvpool, tools, replay, Python binding, kernel selftests"
if ! make -s userlib tools >"$log" 2>&1 ||
   ! make -s -C tools/kvpool-replay >>"$log" 2>&1 ||
   ! make -s -C tools/kvpool-bench >>"$log" 2>&1 ||
   ! make -s -C tools/kvpool-sim >>"$log" 2>&1 ||
   ! make -s -C userlib/python >>"$log" 2>&1 ||
   ! make -s -C selftests/kernel >>"$log" 2>&1 ||
   ! make -s -C selftests/debug >>"$log" 2>&1; then
	cat "$log"
	echo "check: build failed: counted as a failure"
	echo "$pass passed, $((fail + 1)) failed, $skip skipped"
	exit 1
fi

if ((!vm_only)); then
	stage "unit: libkvpool, kvpoolctl, Python, fake CUDA driver without the module"
	run_checks libkvpool make -s -C userlib check
	run_checks python make -s -C userlib/python check
	run_checks tools make -s -C tools check
	run_checks fakecuda make -s -C selftests/lib/fakecuda check

	stage "packages: the Debian packages, their files, lintian"
	run_checks packages tools/packaging/build-debs.sh --check

	stage "replay: the scheduler replay on the userspace core"
	run_checks replay make -s -C tools/kvpool-replay check
	run_checks bench make -s -C tools/kvpool-bench check
	run_checks sim make -s -C tools/kvpool-sim check

	stage "fuzz: libFuzzer over the core"
	run_checks fuzz make -s -C selftests/fuzz fuzz-short

	stage "lint: checkpatch --strict, W=1, sparse"
	run_checks lint tools/lint.sh
fi

stage "vm: kselftests on $KERNELS"
tools/vm/run-tests.sh --kernels "$KERNELS"
for k in $KERNELS; do
	vm_summary "$k"
done

if [[ $debug_lane == 1 ]]; then
	stage "debug: KASAN, lockdep, kmemleak, UBSAN, fail-nth"
	tools/vm/debug-lane.sh
	vm_summary 6.1-debug
else
	stage "debug: skipped (KVPOOL_DEBUG_LANE=0 or not CI)"
fi

if [[ $engine_lane == 1 ]]; then
	stage "engine: kvpool.sglang, kvpool.vllm against SGLang, vLLM"
	run_checks engine tools/engine-tests.sh
else
	stage "engine: skipped (KVPOOL_ENGINE_TESTS=0 or not CI)"
fi

echo
echo "$pass passed, $fail failed, $skip skipped"
((fail == 0 && pass > 0))
