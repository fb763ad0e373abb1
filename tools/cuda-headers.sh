#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# cuda-headers.sh: print (one line on stdout) a folder that holds cuda.h,
# for the builds that compile against the CUDA driver API without linking
# it (the fake driver under selftests/lib/fakecuda, tools/gpu-check).
#
# The first of $CUDA_HOME/include, /usr/local/cuda/include and
# /usr/include that has cuda.h; on a machine with no CUDA toolkit, the
# include folder of the PyPI wheel nvidia-cuda-runtime-cu12, downloaded
# once with pip into ${KVPOOL_CACHE:-/var/cache/kvpool}/cuda-headers.
# The tree vendors no third-party header: cuda.h always comes from NVIDIA's
# own package at build time. Exits non-zero, saying why, when none works.
set -euo pipefail

wheel_ver=12.9.79
wheel=nvidia-cuda-runtime-cu12==$wheel_ver

die() {
	echo "cuda-headers: $*" >&2
	exit 1
}

for d in ${CUDA_HOME:+"$CUDA_HOME/include"} /usr/local/cuda/include \
	 /usr/include; do
	if [[ -f $d/cuda.h ]]; then
		echo "$d"
		exit 0
	fi
done

cache=${KVPOOL_CACHE:-/var/cache/kvpool}/cuda-headers
inc=$cache/$wheel_ver/nvidia/cuda_runtime/include
if [[ -f $inc/cuda.h ]]; then
	echo "$inc"
	exit 0
fi

command -v python3 >/dev/null ||
	die "no cuda.h on this machine and no python3 to fetch the $wheel wheel"
python3 -m pip --version >/dev/null 2>&1 ||
	die "no cuda.h on this machine and no pip (python3 -m pip) to fetch the $wheel wheel: install python3-pip or the CUDA toolkit"
mkdir -p "$cache" || die "cannot create $cache"

# Download and unpack under a private name, then rename into place: two
# builds running at once must never see half a folder.
tmp=$(mktemp -d "$cache/.tmp.XXXXXX") || die "cannot write in $cache"
trap 'rm -rf "$tmp"' EXIT
if ! python3 -m pip download -q --no-deps --only-binary=:all: \
		-d "$tmp/dl" "$wheel" >&2; then
	die "no cuda.h on this machine and pip could not download $wheel"
fi
whl=$(find "$tmp/dl" -name 'nvidia_cuda_runtime_cu12-*.whl' | head -n 1)
[[ -n $whl ]] || die "pip downloaded no nvidia_cuda_runtime_cu12 wheel"
# Only the headers: the wheel's libraries are of no use to these builds.
python3 - "$whl" "$tmp/$wheel_ver" <<'PY' || die "cannot unpack $whl"
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    names = [n for n in z.namelist()
             if n.startswith("nvidia/cuda_runtime/include/")]
    z.extractall(sys.argv[2], names)
PY
[[ -f $tmp/$wheel_ver/nvidia/cuda_runtime/include/cuda.h ]] ||
	die "the $wheel wheel has no nvidia/cuda_runtime/include/cuda.h"
# Another build may have won the race: its copy is as good as ours.
mv -T "$tmp/$wheel_ver" "$cache/$wheel_ver" 2>/dev/null || true
[[ -f $inc/cuda.h ]] || die "cannot install the headers into $cache"
echo "$inc"
