#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The maintainers' checkers on the kernel code: checkpatch.pl --strict
# (taken from Debian's linux-source-6.1 at run time) on driver/ and uapi/
# and on every commit since the redesign (message and kernel diff),
# cppcheck on the userspace C and on the kernel tests, tools/doc-check.sh
# (docs against code), and a W=1 + sparse (C=2) build against each
# kernel of $KERNELS. Prints
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

# The commits themselves, from the codebase redesign (issue 10) on: each
# one's message (subject, body, Fixes: tags) with its diff of the kernel
# code (driver/, uapi/, Kbuild) through checkpatch --strict, as a
# maintainer would read the patch. Userspace diffs are left out: the
# kernel's rules (negative errnos, kernel types) do not apply there. A
# commit that touches no kernel code is checked as a message alone
# (NOT_UNIFIED_DIFF). driver/user is the core's userspace shim, not
# kernel code: left out too. MEMORY_BARRIER is left to the check of the
# files above: in a diff, a barrier line that only changed (a renamed
# argument) has its removed line between it and its comment, which
# checkpatch's search for the comment stops at, so it reports a comment
# the file has. MAINTAINERS: this tree has none.
git_base=9af2a4b
git_range=$git_base..HEAD
if ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	git_range=none
	# A tree without its history (a tarball) has no commits to read:
	# said, and counted neither way.
	echo "lint: checkpatch --git: not a git checkout, no commits to check"
elif ! git rev-parse -q --verify "$git_base^{commit}" >/dev/null; then
	git_range=
	if [[ $(git rev-parse --is-shallow-repository) == true ]]; then
		# A shallow clone: check the commits it has a parent of.
		n=$(git rev-list --count HEAD)
		((n > 1)) && git_range=HEAD~$((n - 1))..HEAD
	fi
fi
if [[ $git_range == none ]]; then
	:
elif [[ -z $git_range ]]; then
	echo "FAIL lint: checkpatch --git: commit $git_base is not in this clone"
	rc=1
else
	patch=$(mktemp)
	bad=0 n=0
	for c in $(git rev-list --reverse "$git_range"); do
		n=$((n + 1))
		{
			git show --format=email -s "$c"
			echo ---
			git diff "$c^" "$c" -- driver uapi Kbuild \
				':!driver/user'
		} >"$patch"
		out=$(perl "$ksrc/scripts/checkpatch.pl" --strict --no-tree \
			--terse --show-types --no-signoff \
			--ignore FILE_PATH_CHANGES,NOT_UNIFIED_DIFF,MEMORY_BARRIER \
			"$patch" 2>&1)
		if grep -qE '(ERROR|WARNING|CHECK):' <<<"$out"; then
			grep -E '(ERROR|WARNING|CHECK):' <<<"$out" |
				sed "s|^$patch|$(git log -1 --format=%h "$c")|"
			bad=$((bad + 1))
		fi
	done
	rm -f "$patch"
	if ((bad)); then
		echo "FAIL lint: checkpatch --git: $bad of $n commits ($git_range)"
		rc=1
	else
		echo "PASS lint: checkpatch --git ($n commits, $git_range)"
	fi
fi

# Userspace C: the core as the unit test builds it (-U__KERNEL__: its
# kernel configuration is sparse's and W=1's), the library, the tools,
# the fake CUDA driver and its test, the GPU check, the GPU agent.
user=(driver/kvp_[a-z]*.c driver/user/*.c selftests/unit/*.c userlib/*.c
      tools/kvpoolctl/*.c tools/kvpool-demo/*.c tools/kvpool-replay/*.c
      tools/kvpool-sim/*.c tools/lib/*.c selftests/lib/fakecuda/*.c
      tools/gpu-check/*.c tools/kvpool-gpud/*.c)
if out=$(cppcheck --quiet --error-exitcode=1 --enable=warning,portability \
		--std=c11 --inline-suppr -U__KERNEL__ -Iuapi -Idriver \
		-Idriver/user -Iuserlib -Itools/lib "${user[@]}" 2>&1) && [[ -z $out ]]; then
	echo "PASS lint: cppcheck (${#user[@]} files)"
else
	echo "$out"
	echo "FAIL lint: cppcheck"
	rc=1
fi

# The kernel and debug tests and their library, against the harness they
# are built with; the harness's own findings are not ours. One
# configuration: the tests have no #ifdef of their own that matters, and
# every configuration of the harness's headers takes minutes.
ktests=(selftests/lib/*.c selftests/kernel/*.c selftests/debug/*.c)
if out=$(cppcheck --quiet --error-exitcode=1 --enable=warning,portability \
		--std=c11 --inline-suppr --max-configs=1 -j "$(nproc)" \
		-U__KERNEL__ -Iuapi -Iselftests/lib \
		-I"$ksrc/tools/testing/selftests" --suppress="*:$ksrc/*" \
		--suppress=toomanyconfigs \
		"${ktests[@]}" 2>&1) && [[ -z $out ]]; then
	echo "PASS lint: cppcheck tests (${#ktests[@]} files)"
else
	echo "$out"
	echo "FAIL lint: cppcheck tests"
	rc=1
fi

# The docs against the code: ABI entries, every op's places
# (docs/process/adding-an-op.rst), kernel-doc.
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
