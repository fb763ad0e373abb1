#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# callgrind.sh PROG [JSON]: instructions the core's ops execute, counted
# by callgrind (make callgrind). Each workload runs PROG --count-only
# (the core side alone, a fixed number of ops, no timing) with
# --toggle-collect on the core functions the op calls, so that only
# their instructions (and their callees') are counted. The setup of a
# run (rows built before the first op) calls the same functions: each
# workload runs twice, with N1 and N2 ops, and the difference divided
# by N2 - N1 ops is the cost of one op, setup cancelled. The counts are
# deterministic: the same build gives the same numbers.
#
# Prints one line per workload; with JSON, writes them in the schema of
# kvpool-bench --json (side "core", median = min = max, n = N2 - N1).
set -euo pipefail

prog=$1
json=${2:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

command -v valgrind >/dev/null || {
	echo "callgrind.sh: valgrind is not installed" >&2
	exit 1
}

# workload|params|functions|N1|N2|units an op|unit
runs=(
	"decode|B=256 pt=1|kvp_extend_locked kvp_commit_locked|10|60|256|instr/row"
	"release-256x128|B=256 pages=128 pt=1|kvp_release_locked|1|4|32768|instr/page"
	"extend1|B=1 pt=1|kvp_extend_locked|100|1100|1|instr/op"
	"prefill|len=2048 pt=1|kvp_extend_locked|2|12|2048|instr/page"
)

# The Ir total of a callgrind out file: its "totals:" line, else
# "summary:".
ir() {
	awk '/^totals:/ { t = $2 } /^summary:/ { s = $2 }
	     END { print (t != "" ? t : s) }' "$1"
}

printf '%-16s %-22s %-36s %12s %s\n' workload params functions value unit
results=()
for r in "${runs[@]}"; do
	IFS='|' read -r w params fns n1 n2 per unit <<<"$r"
	toggles=()
	for f in $fns; do
		toggles+=("--toggle-collect=$f")
	done
	for n in "$n1" "$n2"; do
		valgrind --tool=callgrind --callgrind-out-file="$tmp/$w.$n" \
			"${toggles[@]}" "$prog" --count-only "$w" --iters "$n" \
			>"$tmp/$w.$n.log" 2>&1 || {
			cat "$tmp/$w.$n.log" >&2
			echo "callgrind.sh: $prog --count-only $w --iters $n failed" >&2
			exit 1
		}
	done
	i1=$(ir "$tmp/$w.$n1")
	i2=$(ir "$tmp/$w.$n2")
	v=$(awk -v a="$i1" -v b="$i2" -v n=$((n2 - n1)) -v p="$per" \
		'BEGIN { printf "%.1f", (b - a) / n / p }')
	printf '%-16s %-22s %-36s %12s %s\n' "$w" "$params" "${fns// /+}" "$v" "$unit"
	results+=("$w|$params|$unit|$v|$((n2 - n1))")
done

[[ -n $json ]] || exit 0
/usr/bin/python3 - "$json" "$prog" "${results[@]}" <<'PY'
import json
import os
import platform
import subprocess
import sys

path, prog, rows = sys.argv[1], sys.argv[2], sys.argv[3:]
version = subprocess.run([prog, "--version"], capture_output=True,
                         text=True).stdout.split()[1]
cpu = "unknown"
with open("/proc/cpuinfo") as f:
    for line in f:
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
res = []
for r in rows:
    w, params, unit, v, n = r.split("|")
    p = {}
    for kv in params.split():
        k, x = kv.split("=")
        p[k] = int(x) if x.isdigit() else x
    res.append({"workload": w, "params": p, "side": "core", "unit": unit,
                "median": float(v), "min": float(v), "max": float(v),
                "n": int(n)})
u = platform.uname()
out = {"version": version,
       "host": {"uname": " ".join([u.system, u.node, u.release, u.machine]),
                "cpu": cpu, "nproc": os.cpu_count()},
       "args": ["callgrind"], "notes": [], "results": res, "ratios": []}
with open(path, "w") as f:
    json.dump(out, f, indent=2)
    f.write("\n")
PY
