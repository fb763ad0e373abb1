#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# agent-fake.sh [kvpool-bench agent OPTIONS]: kvpool-bench agent against
# the fake CUDA driver (selftests/lib/fakecuda) and the tree's
# kvpool-gpud, as root in the VM with the module loaded:
#
#   ko=$(tools/vm/build-module.sh 6.1)
#   tools/vm/vm-run.sh --kernel 6.1 --module "$ko" -- \
#       tools/kvpool-bench/agent-fake.sh
#
# The pools are made for the guest's first PCI display controller, the
# fake's GPU 0; the module's fake_cuda hook is turned on for the run and
# put back after. Chunks are 64 KiB (the fake's granularity set so), 64
# of them: the fake's memory is the host's. Prints kvpool-bench agent's
# table; nothing is asserted.
set -eu

top=$(cd "$(dirname "$0")/../.." && pwd)
param=/sys/module/kvpool/parameters/fake_cuda
fake=$top/selftests/lib/fakecuda/libcuda.so.1

if [ ! -w "$param" ]; then
	echo "agent-fake.sh: no $param: load a kvpool.ko with the fake_cuda hook, as root" >&2
	exit 1
fi
gpu=
for d in /sys/bus/pci/devices/*; do
	case $(cat "$d/class") in
	0x03*) gpu=${d##*/}; break ;;
	esac
done
if [ -z "$gpu" ]; then
	echo "agent-fake.sh: no PCI display controller (vm-run.sh adds one)" >&2
	exit 1
fi

dir=$(mktemp -d /dev/shm/kvpool-bench-agent.XXXXXX)
old=$(cat "$param")
trap 'echo "$old" > "$param"; rm -rf "$dir"' EXIT
echo 1 > "$param"
# The fake's registry stands in for /proc/driver/nvidia and /dev.
export KVPOOL_FAKECUDA_GPUS="$gpu" KVPOOL_FAKECUDA_DIR="$dir" \
	KVPOOL_NVIDIA_PROC="$dir" KVPOOL_NVIDIA_DEV="$dir" \
	KVPOOL_LIBCUDA="$fake" KVPOOL_FAKECUDA_GRANULARITY=65536

"$top/tools/kvpool-bench/kvpool-bench" agent --gpu "$gpu" --page-bytes 64K \
	--gpud "$top/tools/kvpool-gpud/kvpool-gpud" "$@"
