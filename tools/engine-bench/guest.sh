#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# guest.sh PYTHON OUTDIR: engine-bench.sh's guest side, run by
# tools/vm/vm-run.sh with kvpool.ko loaded. kvpool-bench (env KB, when
# set) with --create, so its kernel side is timed too, then
# bench_engines.py with that merged and its kvpool-py side on. Env:
# QUICK (--quick or empty), ARGS (more bench_engines.py arguments).

set -euo pipefail

py=$1
out=$2
kbjson=

cd "$(dirname "$0")/../.."
if [ -n "${KB:-}" ]; then
	# shellcheck disable=SC2086
	"$KB" --create ${QUICK:-} --workload decode,release-256x128 \
		--json "$out/kvpool-bench-guest.json" \
		> "$out/kvpool-bench-guest.log"
	kbjson="--kvpool-json $out/kvpool-bench-guest.json"
fi
# shellcheck disable=SC2086
exec "$py" tools/engine-bench/bench_engines.py ${QUICK:-} $kbjson \
	--json "$out/engines-guest.json" ${ARGS:-}
