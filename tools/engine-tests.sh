#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# engine-tests.sh: kvpool.sglang against SGLang 0.5.23 itself, and
# kvpool.vllm against vLLM 0.33.0 (docs/vllm.md).
#
# Usage: tools/engine-tests.sh [--install-only]
#
# 1. The engine venv, $KVPOOL_CACHE/engine-venv (default cache
#    /var/cache/kvpool): a plain venv of /usr/bin/python3 with torch and
#    sglang at the versions below, sglang without its dependencies and
#    only what its mem_cache, session and schedule_batch modules import.
#    Made once; a venv whose stamp names the same pins is kept. The time
#    it took and its size are printed.
# 2. The binding's wheel (make -C userlib/python), unpacked into a
#    scratch folder on the engine venv's path (the venv itself is not
#    changed), and kvpool.ko for 6.1 (tools/vm/build-module.sh).
# 3. The scenario through SGLang's classes on this machine
#    (userlib/python/tests/engine/compare.py sglang), then through
#    kvpool.sglang in a 6.1 guest with the module loaded, and the two
#    compared: one PASS/FAIL line a step and "N passed, N failed". The
#    guest also runs kvpool's side at page size 4, held to its own
#    checks (SGLang's paged allocator needs a GPU).
# 4. vLLM's half the same way, in the same guest process
#    (tests/engine/guest_engines.py, on the bench venv of
#    tools/engine-bench.sh --install-only, which has this venv's
#    packages too): vllm_compare.py's scenario through vLLM's own
#    KVCacheManager and BlockPool here, through kvpool.vllm there,
#    compared step by step; then the checker against mismatches put
#    in (vllm_compare.py selftest), and the step times of both block
#    pools in the guest ($KVPOOL_ENGINE_VLLM_REPS runs each, default 3).
#
# Exit status: 0 when every step matched; 1 on a mismatch or a failure
# of any stage. The network is needed only while the venv is made.
#
# Env: KVPOOL_CACHE (as for tools/vm), KVPOOL_ENGINE_VM_TIMEOUT (guest
# wall clock, seconds; default 900).

set -euo pipefail

cd "$(dirname "$0")/.."
TOP=$PWD
CACHE=${KVPOOL_CACHE:-/var/cache/kvpool}
VENV=$CACHE/engine-venv
PY=/usr/bin/python3

# What sglang 0.5.23 asks for (torch 2.14.1 and its CUDA wheels from the
# package index; nothing of CUDA runs here), and what importing
# sglang.srt.mem_cache.{memory_pool,allocator,allocation,common},
# sglang.srt.session.streaming_session and
# sglang.srt.managers.schedule_batch needs on top, at the versions
# sglang pins where it pins them.
TORCH="torch==2.14.1"
SGLANG="sglang==0.5.23"
DEPS="torchvision==0.29.2 transformers==5.19.0 numpy==2.3.5
	aiohttp==3.14.5 apache-tvm-ffi==0.1.11 compressed-tensors==0.18.0
	dill==0.4.1 gguf==0.19.0 ipython==9.18.1 msgspec==0.23.0
	openai==2.8.0 orjson==3.13.0 packaging==26.4
	partial-json-parser==0.2.1.1.post7 pillow==13.0.0 psutil==7.2.2
	pybase64==1.5.1 pydantic==2.14.4 pyzmq==27.3.0 requests==2.34.2
	sentencepiece==0.2.1 starlette==1.10.0 tqdm==4.70.1"
STAMP="$TORCH $SGLANG $(echo $DEPS)"

IMPORTS="import sglang.srt.mem_cache.memory_pool, \
sglang.srt.mem_cache.allocator, sglang.srt.mem_cache.allocation, \
sglang.srt.mem_cache.common, sglang.srt.session.streaming_session, \
sglang.srt.managers.schedule_batch"

now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.0f", b - a }'; }

make_venv() {
	local t0 t1 pip dl
	if [ -f "$VENV/.stamp" ] && [ "$(cat "$VENV/.stamp")" = "$STAMP" ] &&
	   "$VENV/bin/python" -c "$IMPORTS" 2>/dev/null; then
		echo "engine venv: $VENV is current ($(du -sh "$VENV" |
			cut -f1))"
		return 0
	fi
	echo "engine venv: making $VENV"
	rm -rf "$VENV" "$VENV.dl"
	mkdir -p "$CACHE"
	t0=$(now)
	"$PY" -m venv "$VENV"
	pip="$VENV/bin/python -m pip -q --disable-pip-version-check"
	# Downloaded first, so that the download's size can be told apart
	# from the installed size; pip's cache is not used.
	$pip download --no-cache-dir -d "$VENV.dl" "$TORCH" $DEPS
	$pip download --no-cache-dir --no-deps -d "$VENV.dl" "$SGLANG"
	dl=$(du -sh "$VENV.dl" | cut -f1)
	t1=$(now)
	$pip install --no-index --find-links "$VENV.dl" "$TORCH" $DEPS
	$pip install --no-index --find-links "$VENV.dl" --no-deps "$SGLANG"
	rm -rf "$VENV.dl"
	"$VENV/bin/python" -c "$IMPORTS" 2>/dev/null || {
		echo "engine venv: sglang's modules do not import" >&2
		"$VENV/bin/python" -c "$IMPORTS" >&2 || true
		return 1
	}
	echo "$STAMP" > "$VENV/.stamp"
	echo "engine venv: download $dl in $(secs "$t0" "$t1") s," \
	     "install $(secs "$t1" "$(now)") s, venv $(du -sh "$VENV" |
		cut -f1)"
}

make_venv
# vLLM's half runs on engine-bench.sh's venv; that script calls this
# one's --install-only before it makes its own, hence the guard.
if [ -z "${KVPOOL_ENGINE_INNER:-}" ]; then
	KVPOOL_ENGINE_INNER=1 tools/engine-bench.sh --install-only
fi
BVENV=$CACHE/engine-bench-venv
[ "${1:-}" = "--install-only" ] && exit 0

work=$(mktemp -d /tmp/kvpool-engine.XXXXXX)
trap 'rm -rf "$work"' EXIT
t0=$(now)
make -s -j1 -C userlib >/dev/null
make -s -j1 -C userlib/python >/dev/null
"$VENV/bin/python" -m pip -q --disable-pip-version-check install \
	--no-deps --no-index --target "$work/site" userlib/python/dist/kvpool-*.whl
ko=$(tools/vm/build-module.sh 6.1 2>"$work/build.log") ||
	{ tail -20 "$work/build.log" >&2; echo "0 passed, 1 failed"; exit 1; }
echo "engine-tests: built in $(secs "$t0" "$(now)") s"

export PYTHONWARNINGS=ignore
t0=$(now)
cmp=userlib/python/tests/engine/compare.py
"$VENV/bin/python" "$cmp" sglang "$work/sglang.json" 2>"$work/sglang.err" ||
	{ cat "$work/sglang.err" >&2; echo "0 passed, 1 failed"; exit 1; }
vcmp=userlib/python/tests/engine/vllm_compare.py
"$BVENV/bin/python" "$vcmp" vllm "$work/vllm.json" 2>"$work/vllm.err" ||
	{ cat "$work/vllm.err" >&2; echo "0 passed, 1 failed"; exit 1; }

res=$work/vm
mkdir -p "$res"
t1=$(now)
rc=0
tools/vm/vm-run.sh --kernel 6.1 --module "$ko" --results "$res" \
	--timeout "${KVPOOL_ENGINE_VM_TIMEOUT:-900}" \
	--env PYTHONPATH="$work/site" --env LD_LIBRARY_PATH="$TOP/userlib" \
	--env PYTHONWARNINGS=ignore -- \
	"$BVENV/bin/python" userlib/python/tests/engine/guest_engines.py \
	"$res" "${KVPOOL_ENGINE_VLLM_REPS:-3}" || rc=$?
echo "engine-tests: guest $(secs "$t1" "$(now)") s"
if [ "$rc" != 0 ] || [ ! -s "$res/kvpool.json" ] ||
   [ ! -s "$res/kvpool-ps4.json" ] || [ ! -s "$res/vllm/kvpool.json" ]; then
	echo "engine-tests: the guest run failed ($rc)" >&2
	echo "0 passed, 1 failed"
	exit 1
fi
rc=0
"$VENV/bin/python" "$cmp" check "$work/sglang.json" "$res/kvpool.json" \
	"$res/kvpool-ps4.json" || rc=$?
"$VENV/bin/python" "$vcmp" check "$work/vllm.json" "$res/vllm/kvpool.json" \
	"$res/vllm/vllm-guest.json" || rc=1
"$VENV/bin/python" "$vcmp" selftest "$work/vllm.json" || rc=1
echo "engine-tests: compared in $(secs "$t0" "$(now)") s"
exit "$rc"
