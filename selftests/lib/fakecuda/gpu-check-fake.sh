#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# gpu-check-fake.sh: tools/gpu-check.sh against the fake driver (this
# folder's libcuda.so.1), so that the GPU check is known to work before it
# meets a GPU: every step passes on the default device and on one chosen by
# bus id, a GPU that is not there fails it, and with no driver at all it
# says so and exits 2. Not a GPU test: the fake only models the driver.
#
# Prints "PASS name" or "FAIL name" per assertion (gpu-check's own lines
# are indented under them); exits non-zero if any failed.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../../.." && pwd)
fake=$here/libcuda.so.1
rc=0
tmp=$(mktemp -d /tmp/gpu-check-fake.XXXXXX) || exit 1
trap 'rm -rf "$tmp"' EXIT

pass() { echo "PASS gpu-check (fake driver): $*"; }
fail() { echo "FAIL gpu-check (fake driver): $*"; rc=1; }

# run NAME GPUS ARGS...: gpu-check with the fake and its own registry;
# its output in $tmp/NAME.out, shown indented, its status in $st.
run() {
	local name=$1 gpus=$2
	shift 2
	mkdir -p "$tmp/$name.reg"
	KVPOOL_FAKECUDA_GPUS=$gpus KVPOOL_FAKECUDA_DIR=$tmp/$name.reg \
		"$root/tools/gpu-check.sh" "$@" >"$tmp/$name.out" 2>&1
	st=$?
	sed 's/^/    | /' "$tmp/$name.out"
}

# has NAME REGEX: whether gpu-check's output has a line matching REGEX.
has() {
	grep -qE -- "$2" "$tmp/$1.out"
}

[[ -x $fake || -f $fake ]] || { fail "no $fake: run make first"; exit 1; }

echo "gpu-check against the fake driver ($fake), not a GPU:"
steps=("A: cuMemCreate" "A: cuMemExportToShareableHandle"
       "A: the exported fd is a character device"
       "H: holds A's fd" "B: cuMemImportFromShareableHandle"
       "B: cuMemSetAccess" "B: cuMemcpyHtoD" "B: cuMemsetD8"
       "H: A .* killed by SIGKILL, reaped, gone"
       "C: cuMemImportFromShareableHandle" "C: cuMemcpyDtoH"
       "C: reads B's pattern after A's death")
for v in "default device0" "bus-id device1"; do
	set -- $v
	if [[ $1 == default ]]; then
		run "$1" 0000:00:10.0,0000:00:11.0 --libcuda "$fake"
	else
		# Device 1 by a lower-case id without a domain, an odd size.
		run "$1" 0000:00:10.0,0000:00:11.0 --libcuda "$fake" \
			--gpu 00:11.0 --bytes 3000000
	fi
	((st == 0)) && pass "$1: exit 0" || fail "$1: exit $st, want 0"
	for s in "${steps[@]}"; do
		has "$1" "^PASS $s" && pass "$1: PASS $s" ||
			fail "$1: no PASS $s"
	done
	has "$1" '^FAIL' && fail "$1: a FAIL line"
	has "$1" '^gpu-check: PASS: ([0-9]+) of \1 steps passed' &&
		pass "$1: summary says all steps passed" ||
		fail "$1: no all-passed summary line"
	has "$1" '^A: exported: fd [0-9]+ -> /dev/(pts/)?ptmx, st_mode type: character device' &&
		pass "$1: the exported fd's readlink and type are shown" ||
		fail "$1: no readlink/type line for the exported fd"
	has "$1" '^driver: CUDA [0-9]+\.[0-9]+' && has "$1" '^granularity: 2097152 bytes' &&
		pass "$1: driver version and granularity shown" ||
		fail "$1: no driver version or granularity line"
	has "$1" "^device ${2#device}: .*\(fake driver\), PCI bus id 0000:00:1${2#device}\.0" &&
		pass "$1: the chosen device is $2" ||
		fail "$1: not on $2"
done
has bus-id '^chunk: 4194304 bytes' && pass "--bytes rounds up to granules" ||
	fail "--bytes 3000000 did not become 4194304"

# A GPU the host does not have: the check must fail, not pass.
run missing 0000:00:10.0 --libcuda "$fake" --gpu 0000:00:42.0
((st == 1)) && pass "absent --gpu: exit 1" || fail "absent --gpu: exit $st, want 1"
has missing '^FAIL A: find the --gpu device' && has missing '^gpu-check: FAIL' &&
	pass "absent --gpu: FAIL lines" || fail "absent --gpu: no FAIL lines"

# No driver. dlopen("libcuda.so.1") finds none here unless the host has a
# real one: then a path that does not exist plays the missing driver.
if ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 '; then
	lib=$tmp/libcuda.so.1
	run nodrv "" --libcuda "$lib"
else
	lib=libcuda.so.1
	run nodrv ""
fi
((st == 2)) && pass "no driver: exit 2" || fail "no driver: exit $st, want 2"
has nodrv "^no CUDA driver \\($lib not found\\)$" &&
	pass "no driver: says \"no CUDA driver ($lib not found)\"" ||
	fail "no driver: no \"no CUDA driver ($lib not found)\" line"
exit $rc
