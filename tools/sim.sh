#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The main job on one command: build kvpool, boot a Debian kernel in QEMU
# with kvpool.ko loaded on a pool sized like a real GPU's (an 80 GB card
# serving an 8B model: ~400k tokens of KV) with host memory every
# scheduler maps, and run tools/kvpool-sim inside: two or three tenants'
# inference schedulers share the pool under limits and guarantees, one
# tenant's server is SIGKILLed midway and restarted, and later the
# administrator halves a tenant's limit. A live view while it runs; then
# a summary table, a CSV time series and a plot (gnuplot) in the results
# folder. Installs what it needs (Debian 12, root). About 80-90 s.
#
#   tools/sim.sh [--duration S] [--seed N] [--tokens N] [--page-tokens N]
#                [--tenants 2|3] [--kernel 6.1|6.12] [--results DIR]
#                [--no-live] [--help]
#
#   --duration S      seconds of simulation (default 60)
#   --seed N          workload seed (default 1)
#   --tokens N        pool size in tokens (default 400000)
#   --page-tokens N   tokens per page (default 16): nr_pages = tokens / N
#   --tenants 2|3     chat and docs, or also batch (default 3)
#   --kernel K        guest kernel (default 6.1)
#   --results DIR     where everything goes (default results/ here)
#   --no-live         a log line every 5 s instead of the live view
#                     (the default when stdout is not a terminal)
#
# Exit status: kvpool-sim's (0: every check held; 1: a check failed, e.g.
# KVPOOL_VERIFY found a broken invariant or the pool was not whole after
# every process exited), or vm-run.sh's (122: a bad kernel log line,
# 123: the module did not load, 124: timeout, 125: the VM died).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

duration=60 seed=1 tokens=400000 page_tokens=16 tenants=3 kernel=6.1
results=$root/results live=auto
# Rows and row length of a real server: 2048 requests, 128k-token context.
nr_rows=2048 row_tokens=131072

usage() {
	if [[ ${1:-0} == 0 ]]; then
		sed -n '4,31p' "$0" | sed 's/^# \{0,1\}//'
	else
		sed -n '4,31p' "$0" | sed 's/^# \{0,1\}//' >&2
	fi
	exit "${1:-0}"
}
die() { echo "sim: $*" >&2; exit 2; }
num() { [[ $2 =~ ^[0-9]+$ ]] || die "$1 wants a whole number, not '$2'"; }

while (($#)); do
	case $1 in
	--duration)	num "$1" "${2-}"; duration=$2; shift 2 ;;
	--seed)		num "$1" "${2-}"; seed=$2; shift 2 ;;
	--tokens)	num "$1" "${2-}"; tokens=$2; shift 2 ;;
	--page-tokens)	num "$1" "${2-}"; page_tokens=$2; shift 2 ;;
	--tenants)	[[ ${2-} == [23] ]] || die "--tenants wants 2 or 3"
			tenants=$2; shift 2 ;;
	--kernel)	[[ -n ${2-} ]] || die "--kernel wants a name"
			kernel=$2; shift 2 ;;
	--results)	[[ -n ${2-} ]] || die "--results wants a folder"
			results=$2; shift 2 ;;
	--no-live)	live=0; shift ;;
	-h|--help)	usage 0 ;;
	*)		echo "sim: unknown argument $1" >&2; usage 2 ;;
	esac
done
((duration >= 5 && duration <= 3600)) || die "--duration: 5 to 3600 seconds"
((page_tokens >= 1 && page_tokens <= 65536)) || die "--page-tokens: 1 to 65536"
nr_pages=$(((tokens + page_tokens - 1) / page_tokens))
((nr_pages >= 1024 && nr_pages <= 1 << 27)) ||
	die "--tokens / --page-tokens gives $nr_pages pages: want 1024 to 2^27"
if [[ $live == auto ]]; then
	[[ -t 1 ]] && live=1 || live=0
fi

start=$SECONDS
say() { printf 'sim: %s\n' "$*" >&2; }

# --- what it needs: the VM lane's packages, and gnuplot for the plot.
tools/vm/install-deps.sh >&2
install_gnuplot() {
	export DEBIAN_FRONTEND=noninteractive
	apt-get -q -o Dpkg::Use-Pty=0 install -y --no-install-recommends \
		gnuplot-nox >&2 && return
	apt-get -q update >&2 &&
		apt-get -q -o Dpkg::Use-Pty=0 install -y \
			--no-install-recommends gnuplot-nox >&2
}
if ! command -v gnuplot >/dev/null; then
	say "installing gnuplot-nox (for the plot)"
	install_gnuplot || say "could not install gnuplot-nox: no plot this time"
fi

# --- build: the library and tools, the simulator, the module.
make -s userlib tools >&2
make -s -C tools/kvpool-sim >&2
tools/vm/get-kernels.sh "$kernel" >&2
ko=$(tools/vm/build-module.sh "$kernel" 2>/dev/null | tail -n 1) || {
	# Quiet when it works; the whole log when it does not.
	tools/vm/build-module.sh "$kernel" >&2
	exit 1
}

mkdir -p "$results"
results=$(cd "$results" && pwd)
rm -f "$results"/kvpool-sim.csv "$results"/kvpool-sim-events.csv \
	"$results"/kvpool-sim-meta.gp "$results"/kvpool-sim-summary.txt \
	"$results"/kvpool-sim.png
say "$nr_pages pages x $page_tokens tokens, $nr_rows rows; booting $kernel ($((SECONDS - start)) s so far)"

args=(--duration "$duration" --seed "$seed" --tenants "$tenants"
      --results "$results")
((live)) || args+=(--no-live)
set +e
tools/vm/vm-run.sh --kernel "$kernel" --module "$ko" --results "$results" \
	--params "nr_pages=$nr_pages page_tokens=$page_tokens nr_rows=$nr_rows row_tokens=$row_tokens" \
	--timeout $((duration + 180)) -- tools/kvpool-sim/kvpool-sim "${args[@]}"
rc=$?
set -e

if [[ -s $results/kvpool-sim.csv && -f $results/kvpool-sim-meta.gp ]] &&
   command -v gnuplot >/dev/null; then
	if ! gnuplot -e "dir='$results'" tools/kvpool-sim/plot.gp; then
		say "gnuplot failed; the data is in $results/kvpool-sim.csv"
	fi
fi

echo
echo "sim: results in $results/ ($((SECONDS - start)) s in all):"
for f in kvpool-sim-summary.txt kvpool-sim.png kvpool-sim.csv \
	 kvpool-sim-events.csv console.log dmesg; do
	[[ -e $results/$f ]] && echo "  $results/$f"
done
if ((rc == 0)); then
	echo "sim: PASS"
else
	echo "sim: FAIL (exit $rc)"
fi
exit "$rc"
