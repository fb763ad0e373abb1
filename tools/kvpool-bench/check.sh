#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# check.sh PROG "WORKLOADS": kvpool-bench's smoke pass (make check).
# Runs PROG --quick on every workload and checks that it ran and that
# its JSON is whole: the schema's keys, every workload of WORKLOADS with
# core figures, the kernel side either measured or said to be absent.
# The figures are printed, never asserted: a benchmark's numbers are
# not a test. One "PASS ..." or "FAIL ..." line per check; exits 1 if
# any failed.
set -euo pipefail

prog=$1
workloads=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rc=0

pass() { echo "PASS bench $*"; }
fail() { echo "FAIL bench $*"; rc=1; }

v=$("$prog" --version)
if [[ $v == "kvpool-bench $(cat ../../VERSION) (kvpool ABI "* ]]; then
	pass "--version: $v"
else
	fail "--version: '$v'"
fi

if "$prog" --count-only decode --iters 4 >"$tmp/count.out" 2>&1; then
	pass "--count-only decode --iters 4"
else
	cat "$tmp/count.out"
	fail "--count-only decode --iters 4"
fi

start=$(date +%s%N)
if "$prog" --quick --json "$tmp/out.json" >"$tmp/out.txt" 2>&1; then
	cat "$tmp/out.txt"
	pass "--quick: ran in $((($(date +%s%N) - start) / 1000000)) ms"
else
	tail -n 20 "$tmp/out.txt"
	fail "--quick: $prog --quick --json FILE exited non-zero"
	exit 1
fi

# Each check prints its own line; the exit status says whether any failed.
/usr/bin/python3 - "$tmp/out.json" "$workloads" <<'PY' || rc=1
import json
import sys

path, wanted = sys.argv[1], sys.argv[2].split()
bad = 0


def check(ok, what):
    global bad
    print(("PASS" if ok else "FAIL") + " bench json: " + what)
    bad += not ok


try:
    with open(path) as f:
        d = json.load(f)
except ValueError as e:
    check(False, "parses (%s)" % e)
    sys.exit(1)
check(True, "parses")
keys = {"version", "host", "args", "results", "ratios"}
check(keys <= d.keys(), "has %s" % ", ".join(sorted(keys)))
rkeys = {"workload", "params", "side", "unit", "median", "min", "max", "n"}
res = d.get("results", [])
check(bool(res) and all(rkeys <= r.keys() for r in res),
      "every result has %s" % ", ".join(sorted(rkeys)))
for w in wanted:
    core = [r for r in res if r["workload"] == w and r["side"] == "core"]
    check(bool(core) and all(isinstance(r["median"], (int, float))
                             and r["median"] > 0 for r in core),
          "%s: %d core figures, all > 0" % (w, len(core)))
kernel = [r for r in res if r["side"] == "kernel"]
absent = any(n.startswith("kernel: ") for n in d.get("notes", []))
check(bool(kernel) != absent,
      "kernel side %s" % ("measured" if kernel else "reported absent"))
sys.exit(1 if bad else 0)
PY
exit $rc
