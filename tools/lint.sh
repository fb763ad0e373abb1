#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The maintainers' checkers on the kernel code: checkpatch.pl --strict
# (taken from Debian's linux-source-6.1 at run time) on driver/ and uapi/,
# cppcheck on the userspace C, tools/doc-check.sh (docs against code), and
# a W=1 + sparse (C=2) build against each kernel of $KERNELS. Prints
# "PASS name" or "FAIL name" per check; exits non-zero if any failed.
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root" || exit 1
KERNELS=${KERNELS:-6.1 6.12}
rc=0

ksrc=$(tools/extract-kernel-tools.sh) || { echo "FAIL lint: no checkpatch"; exit 1; }
files=(driver/*.c driver/*.h uapi/linux/kvpool.h)
if out=$(perl "$ksrc/scripts/checkpatch.pl" --strict --no-tree --terse \
		--show-types -f "${files[@]}" 2>&1) &&
   ! grep -qE '(ERROR|WARNING|CHECK):' <<<"$out"; then
	echo "PASS lint: checkpatch --strict (${#files[@]} files)"
else
	echo "$out" | grep -E '(ERROR|WARNING|CHECK):'
	echo "FAIL lint: checkpatch --strict"
	rc=1
fi

# Userspace C: the core as the unit test builds it (-U__KERNEL__: its
# kernel configuration is sparse's and W=1's), the library, the tools.
user=(driver/kvp_[a-z]*.c selftests/unit/*.c userlib/kvpool.c
      tools/kvpoolctl/*.c tools/kvpool-demo/*.c tools/kvpool-replay/*.c
      tools/kvpool-sim/*.c)
if out=$(cppcheck --quiet --error-exitcode=1 --enable=warning,portability \
		--std=c11 --inline-suppr -U__KERNEL__ -Iuapi -Idriver \
		-Iselftests/unit -Iuserlib "${user[@]}" 2>&1) && [[ -z $out ]]; then
	echo "PASS lint: cppcheck (${#user[@]} files)"
else
	echo "$out"
	echo "FAIL lint: cppcheck"
	rc=1
fi

# The docs against the code: ABI entries, ioctl list, kernel-doc.
if out=$(tools/doc-check.sh 2>&1); then
	echo "$out" | grep -E '^(PASS|FAIL)' | sed 's/^PASS doc-check/PASS lint: doc-check/'
else
	echo "$out" | grep -vE '^PASS'
	echo "FAIL lint: doc-check"
	rc=1
fi

for k in $KERNELS; do
	if out=$(tools/vm/get-kernels.sh "$k" 2>&1 &&
		 SPARSE=1 tools/vm/build-module.sh "$k" 2>&1); then
		echo "PASS lint: W=1 and sparse on $k"
	else
		echo "$out" | tail -n 20
		echo "FAIL lint: W=1 and sparse on $k"
		rc=1
	fi
done
exit $rc
