#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# check.sh KVPOOLCTL: what of kvpool's metrics can be checked without the
# module (tools/Makefile's check runs it; selftests/kernel/metrics_test
# does the rest in the VM, module loaded):
#   - the alert rules: promtool check rules, and promtool test rules on
#     kvpool-alerts.test.yml (each alert fires when it should, not on its
#     look-alike);
#   - the dashboard: JSON, every panel on the datasource variable, every
#     query PromQL that promtool parses (each as a recording rule, with the
#     template variables filled in);
#   - the units: systemd-analyze verify, and security --offline=yes at
#     4.0 or less for each service, with no key it does not know;
#   - KVPOOLCTL metrics where the module is not loaded: exit 3, only
#     kvpool_up 0, which promtool check metrics takes, and --output
#     replacing an old file with it; --http's answers (200, HEAD, 404,
#     405, 400, OpenMetrics when Accept asks).
# Needs promtool (Debian's prometheus), systemd-analyze (systemd 252 has
# --offline) and python3. Exit status 0 when all holds.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
units=$here/../packaging/systemd
kvpoolctl=$(realpath "${1:?usage: check.sh KVPOOLCTL}")
max_exposure=4.0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

fail() {
	echo "FAIL: metrics: $*" >&2
	exit 1
}

for t in promtool systemd-analyze; do
	command -v "$t" > /dev/null ||
		fail "no $t (tools/vm/install-deps.sh installs it)"
done

# ---- alert rules ----
promtool check rules "$here/kvpool-alerts.yml" > "$tmp/out" 2>&1 ||
	{ cat "$tmp/out"; fail "promtool check rules kvpool-alerts.yml"; }
(cd "$here" && promtool test rules kvpool-alerts.test.yml) > "$tmp/out" 2>&1 ||
	{ cat "$tmp/out"; fail "promtool test rules kvpool-alerts.test.yml"; }
echo "PASS metrics: alert rules (check rules, test rules)"

# ---- dashboard ----
/usr/bin/python3 - "$here/kvpool-dashboard.json" "$tmp/dash.rules.yml" <<'EOF'
import json
import sys

dash = json.load(open(sys.argv[1]))
exprs = []
for p in dash['panels']:
    if p.get('datasource', {}).get('uid') != '${datasource}':
        sys.exit(f'panel {p["title"]!r}: not on ${{datasource}}')
    if not p.get('targets'):
        sys.exit(f'panel {p["title"]!r}: no query')
    exprs += [t['expr'] for t in p['targets']]
# Template variables as Grafana fills them in with "All".
with open(sys.argv[2], 'w') as f:
    f.write('groups:\n  - name: dashboard\n    rules:\n')
    for i, e in enumerate(exprs):
        e = e.replace('$instance', '.*').replace('$pool', '.*')
        f.write(f'      - record: dashboard:query{i}\n'
                f'        expr: {json.dumps(e)}\n')
print(f'{len(dash["panels"])} panels, {len(exprs)} queries')
EOF
promtool check rules "$tmp/dash.rules.yml" > "$tmp/out" 2>&1 ||
	{ cat "$tmp/out"; fail "a dashboard query is no PromQL"; }
echo "PASS metrics: dashboard (JSON, datasource, PromQL)"

# ---- units ----
# systemd-analyze verify wants ExecStart's program there: the one built.
# It fails on a socket without its service; a value it cannot parse it
# only warns of, so any output fails too.
mkdir "$tmp/units"
for u in "$units"/kvpool-metrics.* "$units"/kvpool-exporter*; do
	sed "s|/usr/bin/kvpoolctl|$kvpoolctl|" "$u" > "$tmp/units/${u##*/}"
done
if ! (cd "$tmp/units" && systemd-analyze verify --man=no ./*) \
	> "$tmp/out" 2>&1 || [[ -s $tmp/out ]]; then
	cat "$tmp/out"
	fail "systemd-analyze verify of the units"
fi
echo "PASS metrics: systemd-analyze verify (the metrics and exporter units)"
for u in kvpool-metrics.service kvpool-exporter@.service; do
	systemd-analyze security --offline=yes --no-pager "$units/$u" \
		> "$tmp/sec" 2> "$tmp/err" ||
		{ cat "$tmp/err"; fail "systemd-analyze security $u"; }
	if grep -Ei 'unknown|invalid|ignoring' "$tmp/err"; then
		fail "$u: systemd-analyze does not take it as written"
	fi
	e=$(sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p' "$tmp/sec")
	[[ -n $e ]] || { cat "$tmp/sec"; fail "$u: no exposure level"; }
	awk -v e="$e" -v m="$max_exposure" 'BEGIN { exit !(e <= m) }' ||
		fail "$u: exposure $e, more than $max_exposure"
	echo "PASS metrics: $u: systemd-analyze security exposure $e"
done

# ---- kvpoolctl metrics without the module ----
if [[ -e /dev/kvpool-control || -e /sys/class/kvpool ]]; then
	echo "kvpool is loaded here: skipping metrics' not-loaded checks"
	exit 0
fi
rc=0
"$kvpoolctl" metrics > "$tmp/m" 2> "$tmp/err" || rc=$?
[[ $rc == 3 ]] || fail "metrics, no module: exit $rc, want 3"
grep -q 'kvpool module is not loaded' "$tmp/err" ||
	fail "metrics, no module: no 'not loaded' message"
[[ $(grep -v '^#' "$tmp/m") == "kvpool_up 0" ]] ||
	{ cat "$tmp/m"; fail "metrics, no module: not kvpool_up 0 alone"; }
promtool check metrics < "$tmp/m" > "$tmp/out" 2>&1 ||
	{ cat "$tmp/out"; fail "promtool check metrics, no module"; }
# A file from when the module was there goes: no stale pool figures.
printf 'kvpool_up 1\nkvpool_pool_pages{pool="0"} 64\n' > "$tmp/kvpool.prom"
rc=0
"$kvpoolctl" metrics --output "$tmp/kvpool.prom" 2> /dev/null || rc=$?
[[ $rc == 3 ]] || fail "metrics --output, no module: exit $rc, want 3"
cmp -s "$tmp/m" "$tmp/kvpool.prom" ||
	{ cat "$tmp/kvpool.prom"; fail "metrics --output, no module: not kvpool_up 0"; }
[[ ! -e $tmp/kvpool.prom.tmp ]] || fail "metrics --output left its .tmp"
"$kvpoolctl" metrics --openmetrics 2> /dev/null > "$tmp/om" || true
/usr/bin/python3 -c '
import sys
from prometheus_client.openmetrics.parser import text_string_to_metric_families
f = list(text_string_to_metric_families(open(sys.argv[1]).read()))
assert [(m.name, [s.value for s in m.samples]) for m in f] == [("kvpool_up", [0])], f
' "$tmp/om" || fail "metrics --openmetrics, no module: not kvpool_up 0"
echo "PASS metrics: no module: kvpool_up 0, exit 3, promtool check metrics"

# http REQUEST WANT-STATUS: the answer's status line must be WANT-STATUS.
http() {
	printf '%b' "$1" | "$kvpoolctl" metrics --http > "$tmp/h" 2> /dev/null ||
		fail "metrics --http '$1': exit $?"
	[[ $(head -1 "$tmp/h") == "HTTP/1.0 $2"$'\r' ]] ||
		{ cat "$tmp/h"; fail "metrics --http '$1': not $2"; }
	# The body's length is what Content-Length says.
	local len body
	len=$(sed -n 's/^Content-Length: \([0-9]*\)\r$/\1/p' "$tmp/h")
	body=$(sed '1,/^\r$/d' "$tmp/h" | wc -c)
	[[ $1 == HEAD* ]] && len=0
	[[ $len == "$body" ]] ||
		fail "metrics --http '$1': Content-Length $len, body $body bytes"
}
http 'GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n' '200 OK'
grep -q '^Content-Type: text/plain; version=0.0.4' "$tmp/h" ||
	fail "metrics --http: not the text format's Content-Type"
sed '1,/^\r$/d' "$tmp/h" | promtool check metrics > "$tmp/out" 2>&1 ||
	{ cat "$tmp/out"; fail "metrics --http: promtool check metrics"; }
http 'GET /metrics?x=1 HTTP/1.1\r\nAccept: application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5\r\n\r\n' '200 OK'
if ! grep -q '^Content-Type: application/openmetrics-text' "$tmp/h" ||
   [[ $(tail -1 "$tmp/h") != "# EOF" ]]; then
	cat "$tmp/h"
	fail "metrics --http, Accept OpenMetrics: not OpenMetrics"
fi
http 'HEAD /metrics HTTP/1.0\r\n\r\n' '200 OK'
[[ -z $(sed '1,/^\r$/d' "$tmp/h") ]] || fail "metrics --http: HEAD has a body"
http 'GET / HTTP/1.0\r\n\r\n' '404 Not Found'
http 'GET /metricsx HTTP/1.0\n\n' '404 Not Found'
http 'POST /metrics HTTP/1.0\r\n\r\n' '405 Method Not Allowed'
http 'hello\r\n\r\n' '400 Bad Request'
http 'GET /metrics SMTP/1.0\r\n\r\n' '400 Bad Request'
# Nothing sent (a port probe): no answer, no failure.
"$kvpoolctl" metrics --http < /dev/null > "$tmp/h" ||
	fail "metrics --http, empty request: exit $?"
[[ ! -s $tmp/h ]] || fail "metrics --http, empty request: answered"
echo "PASS metrics: --http (200, HEAD, OpenMetrics, 404, 405, 400)"
