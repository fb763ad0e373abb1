#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The README's first command: build kvpool, boot Debian's 6.1 kernel in
# QEMU with kvpool.ko loaded, and run tools/kvpool-demo inside: two client
# processes share /dev/kvpool0, one is SIGKILLed while holding rows, a slot
# and pages, and the pool is shown full again. Installs what it needs.
#
#   tools/demo.sh [--kernel 6.1|6.12] [--host]
#
# --host loads the module into the running kernel instead (needs its
# headers, root, and a kernel that loads modules), then unloads it.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
kernel=6.1 host=0
while (($#)); do
	case $1 in
	--kernel) kernel=$2; shift 2 ;;
	--host) host=1; shift ;;
	-h|--help) sed -n '3,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "demo: unknown argument $1" >&2; exit 2 ;;
	esac
done

# A pool shaped like a small GPU's: 16-token pages, 64 request rows.
params="nr_pages=4096 page_tokens=16 nr_rows=64 row_tokens=16384"

tools/vm/install-deps.sh >&2
make -s userlib tools >&2

if ((host)); then
	make -s module >&2
	# shellcheck disable=SC2086
	insmod ./kvpool.ko $params
	trap 'rmmod kvpool' EXIT
	tools/kvpool-demo/kvpool-demo
	exit
fi

tools/vm/get-kernels.sh "$kernel" >&2
ko=$(tools/vm/build-module.sh "$kernel" | tail -n 1)
exec tools/vm/vm-run.sh --kernel "$kernel" --module "$ko" --params "$params" \
	--timeout 300 -- tools/kvpool-demo/kvpool-demo
