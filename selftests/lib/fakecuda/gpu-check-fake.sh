#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# gpu-check-fake.sh: tools/gpu-check.sh against the fake driver (this
# folder's libcuda.so.1), so that the GPU check is known to work before it
# meets a GPU: every step passes on the default device and on one chosen by
# bus id, the teardown case included (the fake has no persistence mode: a
# GPU nobody holds is torn down and its memory freed, as NVIDIA's driver
# does with persistence off) and the chunk move (the fake's cuMemGetInfo
# counts its live allocations), a GPU that is not there fails it, and
# with no driver at all it says so and exits 2. Not a GPU test: the fake only
# models the driver. gpu-check finds the fake's stand-ins of
# /proc/driver/nvidia and /dev/nvidiaN in its registry, through
# KVPOOL_NVIDIA_PROC and KVPOOL_NVIDIA_DEV, as libkvpool does.
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
		KVPOOL_NVIDIA_PROC=$tmp/$name.reg \
		KVPOOL_NVIDIA_DEV=$tmp/$name.reg \
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
# libkvpool's order, the agent's re-export, a client's unexport and the
# teardown case, each a step that must pass.
steps=("A: cuMemCreate" "A: cuMemExportToShareableHandle"
       "A: cuMemRelease right after the export"
       "A: the exported fd is a pty master .5:2."
       "H: holds .*/nvidia[01] open .the fake driver's FIFO."
       "H: the held fd is a pty master" "B: cuMemImportFromShareableHandle"
       "B: cuMemSetAccess" "B: cuMemcpyHtoD" "B: cuMemsetD8"
       "B: cuCtxSynchronize"
       "H: A .* killed by SIGKILL, reaped, gone"
       "C: cuMemImportFromShareableHandle" "C: cuMemcpyDtoH"
       "C: reads B's bytes after A's SIGKILL"
       "R: cuMemExportToShareableHandle afresh"
       "H: the fresh export is another open file than the master"
       "D: reads the bytes through its own export"
       "D: unexports its own file .fakecuda_unexport."
       "D: an import through its unexported file fails"
       "E: reads the bytes through the master after D's unexport"
       "U: without a keep-alive the import fails after teardown"
       "U: with the keep-alive the import works"
       "U: reads T's bytes after T exited"
       "W: cuMemCreate of one granule"
       "H: free fell by 2048 KiB when W made the chunk"
       "X: reads back what it wrote"
       "H: X gone, .*: free rose 0 KiB with it .*: its bytes are not back"
       "W: cuMemsetD8 0 over the whole chunk, the clear"
       "Y: reads 0 in every byte, none of X's"
       "W: maps the chunk again and reads Y's bytes"
       "H: W's handle released, .*: free rose 0 KiB with it .*: its bytes are not back"
       "H: X's export closed, .*: free rose 0 KiB with it .*: its bytes are not back"
       "H: Y's export closed too, .*: free rose 2048 KiB with it .*: its bytes are back"
       "Y: reads X's bytes in a chunk not cleared"
       "without a clear the next tenant reads the last one's bytes: the clear is needed"
       "W: exited 0")
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
		has "$1" "^ok - $s" && pass "$1: ok - $s" ||
			fail "$1: no ok - $s"
	done
	has "$1" '^not ok' && fail "$1: a not ok line"
	has "$1" '# SKIP' && fail "$1: a skipped step"
	has "$1" '^gpu-check: PASS: ([0-9]+) of \1 steps passed' &&
		pass "$1: summary says all steps passed" ||
		fail "$1: no all-passed summary line"
	has "$1" '^A: exported fd [0-9]+ -> /dev/(pts/)?ptmx, st_mode type: character device \(rdev 5:2\)' &&
		pass "$1: the exported fd's readlink, type and rdev are shown" ||
		fail "$1: no readlink/type line for the exported fd"
	has "$1" "^gpu .*: Device Minor: ${2#device} \\(.*/gpus/0000:00:1${2#device}\\.0/information\\)" &&
		pass "$1: the Device Minor read from the fake's information file" ||
		fail "$1: no Device Minor line from the fake's information file"
	has "$1" '^driver: CUDA [0-9]+\.[0-9]+' && has "$1" '^granularity: 2097152 bytes' &&
		pass "$1: driver version and granularity shown" ||
		fail "$1: no driver version or granularity line"
	has "$1" '^W: cleared 2097152 bytes in [0-9.]+ us, [0-9.]+ GB/s' &&
		pass "$1: the chunk move's clear is timed" ||
		fail "$1: no time for the chunk move's clear"
	has "$1" "^device ${2#device}: .*\(fake driver\), PCI bus id 0000:00:1${2#device}\.0" &&
		pass "$1: the chosen device is $2" ||
		fail "$1: not on $2"
done
has bus-id '^chunk: 4194304 bytes' && pass "--bytes rounds up to granules" ||
	fail "--bytes 3000000 did not become 4194304"

# A GPU the host does not have: the check must fail, not pass.
run missing 0000:00:10.0 --libcuda "$fake" --gpu 0000:00:42.0
((st == 1)) && pass "absent --gpu: exit 1" || fail "absent --gpu: exit $st, want 1"
has missing '^not ok - A: find the --gpu device' && has missing '^gpu-check: FAIL' &&
	pass "absent --gpu: not ok lines" || fail "absent --gpu: no not ok lines"

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
