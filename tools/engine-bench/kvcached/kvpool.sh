#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# kvpool.sh [run.py ARGS...]: the kvpool side of the kvcached comparison,
# run.py --sides kvpool in a 6.1 guest (QEMU TCG, tools/vm/vm-run.sh) with
# kvpool.ko loaded: host arenas, one chunk budget for the GPU, one pool
# per model on it (backends/kvpool.py). Same trace, engine loop and
# metrics as the other sides; ARGS are run.py's (--quick, --scenarios,
# --out DIR: default a new folder under /tmp).
#
# Builds libkvpool (its budget calls are used through ctypes), the
# Python binding's wheel (unpacked into a scratch folder on the guest's
# PYTHONPATH; KVB_KVPOOL_WHEEL names one instead of making it) and the
# module for 6.1. The guest has KVPOOL_VM_MEM MiB (default 4096): a
# budget may be at most half of it, so the GPU is scaled down by
# KVB_SCALE (default 8: 12 GiB of 2 MiB chunks become 1.5 GiB of 256 KiB
# ones; backends/kvpool.py says what that changes). The guest runs the
# engines' 20 ms steps on two emulated CPUs: its results.json says how
# many steps fell behind (steps_behind). Env: KVPOOL_CACHE,
# KVPOOL_VM_MEM, KVB_SCALE, KVB_VM_TIMEOUT (seconds, default 2400),
# KVPOOL_SRC (build-module.sh's: the module from another tree, e.g. a
# `git archive` of a commit, when the checkout's driver/ is mid-edit).

set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../../.." && pwd)
cd "$TOP"

out=''
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
	[ "${args[i]}" = --out ] && out=${args[i + 1]:-}
done
if [ -z "$out" ]; then
	out=$(mktemp -d /tmp/kvb-kvpool.XXXXXX)
	args+=(--out "$out")
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$(mktemp -d /tmp/kvb-kvpool-work.XXXXXX)
trap 'rm -rf "$work"' EXIT

make -s -j2 -C userlib >/dev/null
whl=${KVB_KVPOOL_WHEEL:-}
if [ -z "$whl" ]; then
	make -s -C userlib/python >/dev/null
	whl=$(ls userlib/python/dist/kvpool-*.whl)
fi
# A wheel is a zip of the package: unpacked, it is what pip --target
# would install (no dependencies; numpy is optional for the binding).
/usr/bin/python3 -m zipfile -e "$whl" "$work/site"
ko=$(tools/vm/build-module.sh 6.1 2>"$work/build.log") ||
	{ tail -20 "$work/build.log" >&2; exit 1; }

# The results folder is the one writable place the guest shares.
KVPOOL_VM_MEM=${KVPOOL_VM_MEM:-4096} tools/vm/vm-run.sh --kernel 6.1 \
	--module "$ko" --results "$out" \
	--timeout "${KVB_VM_TIMEOUT:-2400}" \
	--env PYTHONPATH="$work/site" \
	--env KVB_LIBKVPOOL="$TOP/userlib/libkvpool.so.1" \
	--env KVB_SCALE="${KVB_SCALE:-8}" --env PYTHONWARNINGS=ignore \
	-- /usr/bin/python3 "$HERE/run.py" --sides kvpool "${args[@]}"
