#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# check.sh: smoke check of the kvcached comparison harness: install (or
# keep) the kvcached venv, run every scenario --quick, and fail unless
# the accounting is consistent: held bytes never below the live need on
# any step, every kvcached engine's cuMemCreate/cuMemRelease and
# cuMemMap/cuMemUnmap counts balanced at its exit with no bytes left on
# the stand-in GPU (the SIGKILLed one excepted), every static block
# returned (run.py's exit status), and every engine started. No timing
# is checked. Needs the network only while install.sh makes the venv.

set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp -d /tmp/kvb-kvcached-check.XXXXXX)
py=$("$HERE/install.sh" | sed -n 's/^KVB_PYTHON=//p')
KVB_PYTHON=$py python3 "$HERE/run.py" --quick --out "$out"
python3 - "$out/results.json" <<'PYEOF'
import json, sys
r = json.load(open(sys.argv[1]))
bad = []
for side, scens in r["sides"].items():
    for scen, s in scens.items():
        if scen == "pair":  # no engines; run.py checked its counts
            if not s["totals"]["pairs"]:
                bad.append(f"{side}/pair: no available/alloc pair at all")
            continue
        if s["start_failures"]:
            bad.append(f"{side}/{scen}: {s['start_failures']} engines "
                       "did not start")
        for name, e in s["engines"].items():
            st = e.get("standin")
            if side == "kvcached" and not st:
                bad.append(f"{side}/{scen}/{name}: no stand-in counts")
            if side == "kvcached" and st and not st["maps"]:
                bad.append(f"{side}/{scen}/{name}: no cuMemMap at all")
for b in bad:
    print("check.sh:", b)
sys.exit(1 if bad else 0)
PYEOF
echo "check.sh: ok ($out)"
