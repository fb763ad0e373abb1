#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# metrics_test: kvpoolctl metrics read by the programs that consume it,
# in the VM with the module loaded, as one kselftest binary (`make` here
# installs this script as metrics_test; tools/vm/guest-tests.sh runs it):
#   promtool      Debian's `promtool check metrics` takes the output; it
#                 has the pool's pages, bytes from its arena, usage
#   uuid          the GPU's UUID from NVIDIA's information file (a fake
#                 one on a tmpfs over /proc/driver, in a mount namespace
#                 of its own) beside the PCI address, joined on the pool
#   node_exporter prometheus-node-exporter's textfile collector on a
#                 folder of ours, loopback only: the OpenMetrics file
#                 (what metrics wrote before) is refused whole, the
#                 text-format file gives every series, scrape error 0
#   http          `kvpoolctl metrics --http` behind systemd-socket-activate
#                 (Accept=yes, as kvpool-exporter.socket runs it) on
#                 127.0.0.1: 200 with the metrics, 404; as nobody too
#   prometheus    a real Prometheus scrapes that socket, loads
#                 tools/metrics/kvpool-alerts.yml, and answers a query
#                 with the pool's pages
#   names         every kvpool_* name the alert rules and the dashboard
#                 use is one metrics exports
#   module_gone   rmmod kvpool: metrics --output turns the file into
#                 kvpool_up 0 alone (exit 3), node_exporter serves that;
#                 the module is loaded again ($KVPOOL_MODULE, its
#                 parameters as they were)
# Ports 19100-19102 on 127.0.0.1 only. Exit status 0 when all passed.
set -uo pipefail

here=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")
top=$(cd "$here/../.." && pwd)
K=$top/tools/kvpoolctl/kvpoolctl
M=$top/tools/metrics
NE_PORT=19100 HTTP_PORT=19101 PROM_PORT=19102
FAKE_UUID='GPU-0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0'
GPU=0000:00:10.0	# vm-run.sh's virtio GPU
# 96 pages: the usage of 1 page in 96 has no short decimal form, which
# a %g of 6 digits would round.
PAGES=96 PAGE_BYTES=4096

tmp=$(mktemp -d) || exit 1
pids=()
pool=
cleanup() {
	local p
	for p in "${pids[@]}"; do
		kill "$p" 2> /dev/null && wait "$p" 2> /dev/null
	done
	[[ -n $pool && -e /sys/class/kvpool/kvpool$pool ]] &&
		"$K" destroy "$pool" > /dev/null 2>&1
	rm -rf "$tmp"
}
trap cleanup EXIT

echo "TAP version 13"
echo "1..7"
n=0 passed=0 failed=0
# result NAME: ok if no check of the case failed (why=), else not ok.
why=
result() {
	n=$((n + 1))
	if [[ -z $why ]]; then
		echo "ok $n $1"
		passed=$((passed + 1))
	else
		echo "not ok $n $1 # $why"
		failed=$((failed + 1))
	fi
	why=
}
check() {	# check WHY CMD...: WHY (the first) when CMD fails
	local w=$1
	shift
	"$@" > "$tmp/check.out" 2>&1 && return 0
	[[ -z $why ]] && why=$w
	sed 's/^/#   /' "$tmp/check.out" | head -20
	return 1
}
# wait_http URL: until it answers (the server is up), at most 60 s.
wait_http() {
	local i
	for ((i = 0; i < 120; i++)); do
		curl -sf -o /dev/null "$1" && return 0
		sleep 0.5
	done
	return 1
}
# sample FILE NAME LABELS: the value of sample NAME{LABELS} in FILE.
sample() {
	awk -v k="$2{$3}" '$1 == k { print $2 }' "$1"
}

# A pool for the VM's GPU, with a host arena and a labelled tenant.
pool=$("$K" create --pages $PAGES --page-tokens 16 --rows 8 \
	--row-tokens 256 --gpu $GPU 2> "$tmp/err")
if [[ -z $pool ]] ||
   ! "$K" arena create "$pool" --host --page-bytes $PAGE_BYTES \
	> /dev/null 2>> "$tmp/err" ||
   ! "$K" tenant set "$pool" --cgroup /metrics_test.slice --max 32 \
	--label metrics-test > /dev/null 2>> "$tmp/err"; then
	sed 's/^/# /' "$tmp/err"
	echo "Bail out! cannot make the pool"
	exit 1
fi
echo "# pool $pool: $PAGES pages of $PAGE_BYTES bytes, GPU $GPU"

# ---- promtool ----
"$K" metrics > "$tmp/all.prom" 2> "$tmp/err"
check "metrics: exit $?" test -s "$tmp/all.prom"
check "promtool check metrics refuses it" promtool check metrics < "$tmp/all.prom"
v=$(awk '$1 == "kvpool_up" { print $2 }' "$tmp/all.prom")
check "kvpool_up $v, want 1" test "$v" = 1
v=$(sample "$tmp/all.prom" kvpool_pool_pages "pool=\"$pool\"")
check "pages $v, want $PAGES" test "$v" = $PAGES
v=$(sample "$tmp/all.prom" kvpool_pool_page_bytes "pool=\"$pool\"")
check "page_bytes $v, want $PAGE_BYTES" test "$v" = $PAGE_BYTES
v=$(sample "$tmp/all.prom" kvpool_pool_arena_bytes "pool=\"$pool\"")
check "arena_bytes $v" test "$v" = $((PAGES * PAGE_BYTES))
# No client: only the reserved page 0 is in use.
v=$(sample "$tmp/all.prom" kvpool_pool_usage_ratio "pool=\"$pool\"")
check "usage_ratio $v, want 1/$PAGES" /usr/bin/python3 -c \
	'import sys; assert float(sys.argv[1]) == 1 / int(sys.argv[2])' "$v" $PAGES
check "no tenant sample labelled metrics-test" \
	grep -q "^kvpool_tenant_max_pages{pool=\"$pool\",.*label=\"metrics-test\"} 32$" "$tmp/all.prom"
echo "# $(grep -vc '^#' "$tmp/all.prom") samples in $(grep -c '^# TYPE' "$tmp/all.prom") families"
result promtool

# ---- uuid ----
# NVIDIA's information file, as its driver writes it, for the VM's GPU:
# only this command's mount namespace sees it.
# shellcheck disable=SC2016 # expanded by the inner shell, from its $1..$4
unshare -m /bin/bash -c '
	mount -t tmpfs none /proc/driver || exit 1
	mkdir -p /proc/driver/nvidia/gpus/$1
	printf "Model: \t\t NVIDIA H100 80GB HBM3\nIRQ:   \t\t 42\nGPU UUID: \t %s\nBus Location: \t %s\n" \
		"$2" "$1" > /proc/driver/nvidia/gpus/$1/information
	exec "$3" metrics "$4"' - $GPU $FAKE_UUID "$K" "$pool" \
	> "$tmp/uuid.prom" 2> "$tmp/err"
check "metrics under a fake /proc/driver/nvidia failed" test -s "$tmp/uuid.prom"
sed 's/^/#   /' "$tmp/err"
check "no kvpool_pool_info with the GPU and its UUID" \
	grep -qx "kvpool_pool_info{pool=\"$pool\",gpu=\"$GPU\",UUID=\"$FAKE_UUID\"} 1" "$tmp/uuid.prom"
# Without the driver: the PCI address, no UUID label.
check "kvpool_pool_info without NVIDIA's driver" \
	grep -qx "kvpool_pool_info{pool=\"$pool\",gpu=\"$GPU\"} 1" "$tmp/all.prom"
result uuid

# ---- node_exporter ----
# Only the textfile collector, on a folder of ours, on loopback.
mkdir "$tmp/textfile"
prometheus-node-exporter --collector.disable-defaults --collector.textfile \
	--collector.textfile.directory="$tmp/textfile" \
	--web.listen-address=127.0.0.1:$NE_PORT > "$tmp/ne.log" 2>&1 &
pids+=($!)
ne=http://127.0.0.1:$NE_PORT/metrics
if check "node_exporter did not come up" wait_http $ne; then
	# What metrics wrote before: OpenMetrics. node_exporter 1.5 refuses
	# the whole file.
	"$K" metrics --openmetrics --output "$tmp/textfile/kvpool.prom"
	curl -sf $ne > "$tmp/ne.om"
	before=$(grep -c '^kvpool_' "$tmp/ne.om")
	check "OpenMetrics file not refused" \
		grep -qx 'node_textfile_scrape_error 1' "$tmp/ne.om"
	"$K" metrics --output "$tmp/textfile/kvpool.prom"
	curl -sf $ne > "$tmp/ne.prom"
	after=$(grep -c '^kvpool_' "$tmp/ne.prom")
	want=$(grep -c '^kvpool_' "$tmp/textfile/kvpool.prom")
	echo "# node_exporter's kvpool_* series: $before from the OpenMetrics file, $after from the text-format file ($want in it)"
	check "node_textfile_scrape_error not 0" \
		grep -qx 'node_textfile_scrape_error 0' "$tmp/ne.prom"
	check "node_exporter serves $after kvpool series, the file has $want" \
		test "$after" = "$want" -a "$after" -gt 0
	check "no kvpool_pool_pages from node_exporter" \
		grep -qx "kvpool_pool_pages{pool=\"$pool\"} $PAGES" "$tmp/ne.prom"
fi
result node_exporter

# ---- http ----
# As kvpool-exporter.socket runs it: one process a connection, the
# connection its stdin and stdout.
systemd-socket-activate --inetd --accept -l 127.0.0.1:$HTTP_PORT \
	"$K" metrics --http > "$tmp/ssa.log" 2>&1 &
pids+=($!)
url=http://127.0.0.1:$HTTP_PORT
if check "socket not up" wait_http $url/metrics; then
	curl -sS -D "$tmp/h.hdr" $url/metrics > "$tmp/h.prom"
	check "not 200" grep -q '^HTTP/1.0 200' "$tmp/h.hdr"
	check "not text format" \
		grep -qi '^Content-Type: text/plain; version=0.0.4' "$tmp/h.hdr"
	check "promtool check metrics refuses /metrics" \
		promtool check metrics < "$tmp/h.prom"
	check "no pool pages over HTTP" \
		grep -qx "kvpool_pool_pages{pool=\"$pool\"} $PAGES" "$tmp/h.prom"
	v=$(curl -s -o /dev/null -w '%{http_code}' $url/)
	check "/ answered $v, want 404" test "$v" = 404
	# Prometheus's own Accept: OpenMetrics, which its parser takes.
	curl -sS -H 'Accept: application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5' \
		$url/metrics > "$tmp/h.om"
	check "OpenMetrics over HTTP does not parse" /usr/bin/python3 -c '
import sys
from prometheus_client.openmetrics.parser import text_string_to_metric_families
f = {m.name: m for m in text_string_to_metric_families(open(sys.argv[1]).read())}
assert f["kvpool_pool"].type == "info", f["kvpool_pool"]
assert [s.value for s in f["kvpool_up"].samples] == [1]
' "$tmp/h.om"
fi
kill "${pids[-1]}" 2> /dev/null
# As the packaged unit runs it: no root, no kvpool group. The pools'
# figures and bytes (sysfs, no open), no tenants.
systemd-socket-activate --inetd --accept -l 127.0.0.1:$HTTP_PORT \
	setpriv --reuid=65534 --regid=65534 --clear-groups \
	"$K" metrics --http > "$tmp/ssa.log" 2>&1 &
pids+=($!)
if check "socket (nobody) not up" wait_http $url/metrics; then
	curl -sS $url/metrics > "$tmp/n.prom"
	check "nobody: promtool check metrics" promtool check metrics < "$tmp/n.prom"
	check "nobody: no pool pages" \
		grep -qx "kvpool_pool_pages{pool=\"$pool\"} $PAGES" "$tmp/n.prom"
	check "nobody: tenant samples" \
		test -z "$(grep '^kvpool_tenant_' "$tmp/n.prom")"
	check "nobody: no page bytes" \
		grep -qx "kvpool_pool_page_bytes{pool=\"$pool\"} $PAGE_BYTES" "$tmp/n.prom"
	check "nobody: no arena bytes" \
		grep -qx "kvpool_pool_arena_bytes{pool=\"$pool\"} $((PAGES * PAGE_BYTES))" "$tmp/n.prom"
	check "nobody: tenants_listed not 0" \
		grep -qx "kvpool_pool_tenants_listed{pool=\"$pool\"} 0" "$tmp/n.prom"
fi
result http

# ---- prometheus ----
# A real Prometheus scraping the root socket, loading the alert rules.
kill "${pids[-1]}" 2> /dev/null
systemd-socket-activate --inetd --accept -l 127.0.0.1:$HTTP_PORT \
	"$K" metrics --http > "$tmp/ssa.log" 2>&1 &
pids+=($!)
cat > "$tmp/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - $M/kvpool-alerts.yml
scrape_configs:
  - job_name: kvpool
    static_configs:
      - targets: ['127.0.0.1:$HTTP_PORT']
EOF
prometheus --config.file="$tmp/prometheus.yml" \
	--storage.tsdb.path="$tmp/tsdb" \
	--web.listen-address=127.0.0.1:$PROM_PORT > "$tmp/prom.log" 2>&1 &
pids+=($!)
api=http://127.0.0.1:$PROM_PORT/api/v1
if check "prometheus not up" wait_http http://127.0.0.1:$PROM_PORT/-/ready; then
	# query EXPR: its first value, once Prometheus has one (60 s at most).
	query() {
		local i v
		for ((i = 0; i < 120; i++)); do
			v=$(curl -sf --data-urlencode "query=$1" $api/query |
			    /usr/bin/python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else "")')
			[[ -n $v ]] && { echo "$v"; return; }
			sleep 0.5
		done
	}
	v=$(query 'up{job="kvpool"}')
	check "Prometheus: up{job=kvpool} '$v'" test "$v" = 1
	v=$(query "kvpool_pool_pages{pool=\"$pool\"}")
	check "Prometheus: kvpool_pool_pages '$v'" test "$v" = $PAGES
	v=$(query "kvpool_pool_info{pool=\"$pool\",gpu=\"$GPU\"}")
	check "Prometheus: kvpool_pool_info '$v'" test "$v" = 1
	v=$(query 'scrape_samples_scraped{job="kvpool"}')
	echo "# Prometheus scraped $v samples from the socket"
	curl -sf $api/rules > "$tmp/rules.json"
	check "Prometheus: the alert rules not loaded healthy" /usr/bin/python3 -c '
import json, sys
g = json.load(open(sys.argv[1]))["data"]["groups"]
r = [x for grp in g for x in grp["rules"]]
assert len(r) == 7 and all(x["health"] in ("ok", "unknown") for x in r), r
' "$tmp/rules.json"
fi
result prometheus

# ---- names ----
check "alert rules or dashboard name a metric that is not exported" \
	/usr/bin/python3 - "$tmp/all.prom" "$M/kvpool-alerts.yml" \
	"$M/kvpool-dashboard.json" <<'EOF'
import re
import sys

have = set(re.findall(r'^(kvpool_\w+)', open(sys.argv[1]).read(), re.M))
have |= set(re.findall(r'^# TYPE (kvpool_\w+)', open(sys.argv[1]).read(), re.M))
bad = set()
for f in sys.argv[2:]:
    bad |= set(re.findall(r'\b(kvpool_\w+)', open(f).read())) - have
if bad:
    sys.exit(f'not exported: {sorted(bad)}')
EOF
result names

# ---- module_gone ----
mod=${KVPOOL_MODULE:-}
if [[ -z $mod || ! -f $mod ]]; then
	why="the path of kvpool.ko is unknown (\$KVPOOL_MODULE): run under tools/vm/vm-run.sh --module"
else
	# Its parameters, to load it again as it was.
	params=()
	for p in /sys/module/kvpool/parameters/*; do
		[[ -r $p ]] && params+=("${p##*/}=$(cat "$p")")
	done
	"$K" destroy "$pool" > /dev/null && pool=
	rmmod kvpool
	rc=0
	"$K" metrics --output "$tmp/textfile/kvpool.prom" 2> "$tmp/err" || rc=$?
	check "metrics --output, module gone: exit $rc, want 3" test $rc = 3
	check "module gone: the file is not kvpool_up 0 alone" \
		test "$(grep -v '^#' "$tmp/textfile/kvpool.prom")" = "kvpool_up 0"
	curl -sf $ne > "$tmp/ne.gone"
	v=$(grep -c '^kvpool_' "$tmp/ne.gone")
	echo "# node_exporter's kvpool_* series, module gone: $v"
	check "module gone: node_exporter does not say kvpool_up 0 alone" \
		test "$(grep '^kvpool_' "$tmp/ne.gone")" = "kvpool_up 0"
	check "module gone: node_textfile_scrape_error not 0" \
		grep -qx 'node_textfile_scrape_error 0' "$tmp/ne.gone"
	check "insmod $mod ${params[*]} failed" insmod "$mod" "${params[@]}"
	for ((i = 0; i < 100; i++)); do
		[[ -e /dev/kvpool-control ]] && break
		sleep 0.1
	done
	check "no /dev/kvpool-control after insmod" test -e /dev/kvpool-control
fi
result module_gone

echo "# Totals: pass:$passed fail:$failed xfail:0 xpass:0 skip:0 error:0"
((failed == 0))
