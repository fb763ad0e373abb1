#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The whole test suite, as `make check` and CI run it: the core's unit
# test under ASan/UBSan, then the kselftests inside QEMU on each kernel of
# $KERNELS with the module loaded. Installs what it needs (Debian 12, root).
# Prints "N passed, N failed, N skipped" last; exits non-zero on any
# failure, and a stage that could not run at all counts as a failure.
#
#   tools/check.sh            everything
#   tools/check.sh --vm-only  only the VM lane
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root" || exit 1
KERNELS=${KERNELS:-6.1 6.12}
KVPOOL_CACHE=${KVPOOL_CACHE:-/var/cache/kvpool}
RESULTS=${RESULTS:-$KVPOOL_CACHE/results}
export KVPOOL_CACHE RESULTS

vm_only=0
[[ ${1:-} == --vm-only ]] && vm_only=1

pass=0 fail=0 skip=0

stage() { printf '\n=== %s ===\n' "$*"; }

# count LOG LABEL: add the last "N passed, N failed" line of LOG.
count() {
	local line p f
	line=$(grep -E '[0-9]+ passed, [0-9]+ failed' "$1" | tail -n 1)
	if [[ -z $line ]]; then
		echo "check: $2 printed no result line: counted as a failure"
		fail=$((fail + 1))
		return
	fi
	p=$(grep -oE '[0-9]+ passed' <<<"$line" | grep -oE '[0-9]+')
	f=$(grep -oE '[0-9]+ failed' <<<"$line" | grep -oE '[0-9]+')
	pass=$((pass + p))
	fail=$((fail + f))
}

stage "dependencies"
if ! tools/vm/install-deps.sh; then
	echo "check: installing dependencies failed"
	echo "0 passed, 1 failed"
	exit 1
fi

log=$(mktemp)
trap 'rm -f "$log"' EXIT

if ((!vm_only)); then
	stage "unit: the core in userspace (ASan, UBSan, fail-nth)"
	make -s -C selftests/unit check 2>&1 | tee "$log"
	count "$log" unit
fi

stage "build: libkvpool, tools, kernel selftests"
if ! make -s userlib tools >"$log" 2>&1 || ! make -s -C selftests/kernel >>"$log" 2>&1; then
	cat "$log"
	echo "check: build failed"
	fail=$((fail + 1))
else
	if ((!vm_only)); then
		stage "unit: libkvpool and kvpoolctl without the module"
		# Each check prints PASS or FAIL; a failing make is one more.
		if ! make -s -C userlib check >"$log" 2>&1 ||
		   ! make -s -C tools check >>"$log" 2>&1; then
			fail=$((fail + 1))
		fi
		cat "$log"
		pass=$((pass + $(grep -c '^PASS' "$log")))
		fail=$((fail + $(grep -c '^FAIL' "$log")))
	fi

	if ((!vm_only)); then
		stage "lint: checkpatch --strict, W=1, sparse"
		tools/lint.sh 2>&1 | tee "$log"
		pass=$((pass + $(grep -c '^PASS' "$log")))
		fail=$((fail + $(grep -c '^FAIL' "$log")))
	fi

	stage "vm: kselftests on $KERNELS"
	# shellcheck disable=SC2086
	tools/vm/run-tests.sh --kernels "$KERNELS"
	for k in $KERNELS; do
		s=$RESULTS/$k/summary
		if [[ ! -s $s ]]; then
			echo "check: no results from kernel $k: counted as a failure"
			fail=$((fail + 1))
			continue
		fi
		read -r p f sk <"$s"
		pass=$((pass + p))
		fail=$((fail + f))
		skip=$((skip + sk))
	done
fi

echo
echo "$pass passed, $fail failed, $skip skipped"
((fail == 0 && pass > 0))
