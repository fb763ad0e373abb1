#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# engine-bench.sh: SGLang's and vLLM's host-side page allocators timed
# beside kvpool's, for the same work, in one process.
#
# Usage: tools/engine-bench.sh [--install-only] [--quick] [--host-only]
#                              [--out DIR]
#
# 1. The engine venv ($KVPOOL_CACHE/engine-venv: torch and SGLang) by
#    tools/engine-tests.sh --install-only, which keeps a current one.
# 2. The bench venv, $KVPOOL_CACHE/engine-bench-venv: a plain venv of
#    /usr/bin/python3 whose engine-venv.pth adds the engine venv's
#    site-packages (torch and SGLang are shared, not installed twice),
#    with vLLM installed --no-deps and only the modules its
#    vllm.v1.core.kv_cache_manager import chain needs on top. Made once;
#    a venv whose stamp names the same pins (and the engine venv's
#    stamp) is kept. The time it took and its size are printed.
# 3. On this machine: kvpool-bench (floor and core sides, when it is
#    there) and tools/engine-bench/bench_engines.py, its figures merged.
# 4. Unless --host-only, the same in a 6.1 guest with kvpool.ko loaded:
#    kvpool-bench --create adds its kernel side, and bench_engines.py
#    its kvpool-py side (the Python binding on a pool made there). The
#    guest is QEMU TCG, many times slower than this machine and not
#    evenly so: its figures are for ratios within the guest run.
#
# --quick: kvpool-bench --quick and bench_engines.py --quick (smoke).
# --out DIR: where the logs and JSON go (default: a new folder under
# /tmp, printed at the end, kept).
#
# Env: KVPOOL_CACHE (as for tools/vm), KVPOOL_BENCH (the kvpool-bench
# binary; default tools/kvpool-bench/kvpool-bench, made when its
# Makefile is there), KVPOOL_ENGINE_VM_TIMEOUT (guest wall clock,
# seconds; default 1800), KVPOOL_ENGINE_BENCH_ARGS (more arguments for
# bench_engines.py, both runs), KVPOOL_ENGINE_GUEST_ARGS (more for the
# guest run only; default "--steps 16 --rounds 5").
#
# Benchmarks print numbers; the exit status says only whether every
# stage ran. The network is needed only while a venv is made.

set -euo pipefail

cd "$(dirname "$0")/.."
TOP=$PWD
# shellcheck source=tools/engine-bench/venv.sh
. tools/engine-bench/venv.sh
CACHE=${KVPOOL_CACHE:-/var/cache/kvpool}
ENGINE=$CACHE/engine-venv
VENV=$CACHE/engine-bench-venv
PY=/usr/bin/python3

# The latest vLLM on the package index when this was written, and what
# importing vllm.v1.core.kv_cache_manager (and vllm.v1.request,
# vllm.sampling_params) asks for beyond the engine venv, found by
# importing it until nothing was missing. vLLM 0.33.0 pins torch 2.14.0;
# the engine venv's 2.14.1 is used (no vLLM kernel is loaded).
# openai-harmony and uvloop are compiled, CPU-only wheels; the rest are
# pure Python.
VLLM="vllm==0.33.0"
DEPS="cbor2==6.3.0 cachetools==8.0.2 cloudpickle==3.1.3
	openai-harmony==0.0.8 prometheus_client==0.26.0 py-cpuinfo==9.0.0
	uvloop==0.23.0"

IMPORTS="import sys; sys.path.insert(0, '$TOP/tools/engine-bench'); \
import vllm_cpu; vllm_cpu.load()"

quick='' host_only='' install_only='' out=''
while [ $# -gt 0 ]; do
	case $1 in
	--quick) quick=--quick ;;
	--host-only) host_only=1 ;;
	--install-only) install_only=1 ;;
	--out) out=$2; shift ;;
	*) echo "usage: $0 [--install-only] [--quick] [--host-only]" \
		"[--out DIR]" >&2; exit 2 ;;
	esac
	shift
done

now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.0f", b - a }'; }

make_venv() {
	local t0 t1 pip dl stamp
	stamp="$VLLM $(echo $DEPS) engine-venv: $(cat "$ENGINE/.stamp")"
	if [ -f "$VENV/.stamp" ] && [ "$(cat "$VENV/.stamp")" = "$stamp" ] &&
	   PYTHONWARNINGS=ignore "$VENV/bin/python" -c "$IMPORTS" \
		2>/dev/null; then
		echo "bench venv: $VENV is current ($(du -sh "$VENV" |
			cut -f1) of its own)"
		return 0
	fi
	echo "bench venv: making $VENV"
	rm -rf "$VENV" "$VENV.dl"
	t0=$(now)
	kvp_venv_over_engine "$VENV" "$ENGINE" "$PY"
	pip="$VENV/bin/python -m pip -q --disable-pip-version-check"
	$pip download --no-cache-dir --no-deps -d "$VENV.dl" "$VLLM" $DEPS
	dl=$(du -sh "$VENV.dl" | cut -f1)
	t1=$(now)
	$pip install --no-index --no-deps --find-links "$VENV.dl" "$VLLM" $DEPS
	rm -rf "$VENV.dl"
	PYTHONWARNINGS=ignore "$VENV/bin/python" -c "$IMPORTS" 2>/dev/null || {
		echo "bench venv: vLLM's kv cache manager does not import" >&2
		PYTHONWARNINGS=ignore "$VENV/bin/python" -c "$IMPORTS" >&2 ||
			true
		return 1
	}
	echo "$stamp" > "$VENV/.stamp"
	echo "bench venv: download $dl in $(secs "$t0" "$t1") s," \
	     "install $(secs "$t1" "$(now)") s, venv $(du -sh "$VENV" |
		cut -f1) of its own"
}

tools/engine-tests.sh --install-only
make_venv
[ -n "$install_only" ] && exit 0

if [ -z "$out" ]; then
	out=$(mktemp -d /tmp/kvpool-engine-bench.XXXXXX)
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$(mktemp -d /tmp/kvpool-engine-bench-work.XXXXXX)
trap 'rm -rf "$work"' EXIT

KB=${KVPOOL_BENCH:-}
if [ -z "$KB" ] && [ -f tools/kvpool-bench/Makefile ]; then
	make -s -j1 -C tools/kvpool-bench >/dev/null
	KB=$TOP/tools/kvpool-bench/kvpool-bench
fi
if [ -n "$KB" ] && [ ! -x "$KB" ]; then
	echo "engine-bench: $KB is not there; no floor/core/kernel figures"
	KB=
fi
[ -z "$KB" ] && echo "engine-bench: no kvpool-bench; no floor/core/kernel" \
	"figures"

export PYTHONWARNINGS=ignore
bench=tools/engine-bench/bench_engines.py
t0=$(now)
kbjson=
if [ -n "$KB" ]; then
	"$KB" $quick --workload decode,release-256x128 \
		--json "$out/kvpool-bench-host.json" > "$out/kvpool-bench-host.log"
	kbjson="--kvpool-json $out/kvpool-bench-host.json"
fi
# shellcheck disable=SC2086
"$VENV/bin/python" "$bench" $quick $kbjson --json "$out/engines-host.json" \
	${KVPOOL_ENGINE_BENCH_ARGS:-} 2>&1 | grep -v '^W[0-9]' |
	tee "$out/engines-host.log"
echo "engine-bench: host run $(secs "$t0" "$(now)") s"
[ -n "$host_only" ] && { echo "engine-bench: results in $out"; exit 0; }

t0=$(now)
make -s -j1 -C userlib >/dev/null
make -s -j1 -C userlib/python >/dev/null
"$ENGINE/bin/python" -m pip -q --disable-pip-version-check install \
	--no-deps --no-index --target "$work/site" userlib/python/dist/kvpool-*.whl
ko=$(tools/vm/build-module.sh 6.1 2>"$work/build.log") ||
	{ tail -20 "$work/build.log" >&2; exit 1; }
echo "engine-bench: built in $(secs "$t0" "$(now)") s"

t0=$(now)
rc=0
gargs="${KVPOOL_ENGINE_BENCH_ARGS:-}"
gargs+=" ${KVPOOL_ENGINE_GUEST_ARGS:---steps 16 --rounds 5}"
KVPOOL_VM_MEM=${KVPOOL_VM_MEM:-4096} tools/vm/vm-run.sh --kernel 6.1 \
	--module "$ko" --results "$out" \
	--timeout "${KVPOOL_ENGINE_VM_TIMEOUT:-1800}" \
	--env PYTHONPATH="$work/site" --env LD_LIBRARY_PATH="$TOP/userlib" \
	--env PYTHONWARNINGS=ignore --env KB="$KB" --env QUICK="$quick" \
	--env ARGS="$gargs" \
	-- tools/engine-bench/guest.sh "$VENV/bin/python" "$out" \
	> "$out/guest.log" 2>&1 || rc=$?
grep -v '^W[0-9]' "$out/guest.log" | sed -n '/^engine-bench:/,$p' |
	grep -v '^vm-run' || true
echo "engine-bench: guest run $(secs "$t0" "$(now)") s (exit $rc)"
echo "engine-bench: results in $out"
exit "$rc"
