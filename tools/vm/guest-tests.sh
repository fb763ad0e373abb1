#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# shellcheck disable=SC2001 # sed indents multi-line strings more clearly
#
# guest-tests.sh: run the kernel selftests inside the test VM.
#
# Runs as CMD of vm-run.sh (run-tests.sh starts it that way), inside the
# guest, as root, with kvpool.ko already loaded. Refuses to run on the host.
#
# Usage: tools/vm/guest-tests.sh [TEST-BINARY...]
#   default: every executable selftests/kernel/*_test (built on the host
#   beforehand with `make -C selftests/kernel`)
#
# Env:
#   KVPOOL_RESULTS       where results go (vm-run.sh sets it)
#   KVPOOL_TESTS_DIR     folder of *_test binaries (default selftests/kernel)
#   KVPOOL_TEST_TIMEOUT  seconds per binary (default 300)
#
# For each binary: the kernel log is cleared, the binary runs under
# `timeout`, its output (kselftest TAP) streams to the console and into
# KVPOOL_RESULTS/tap/NAME.tap and tap.log, and the kernel log it caused goes
# to kmsg/NAME.log. The binary's counts come from its "# Totals:" line
# (pass + xfail passed; fail + xpass + error failed; skip skipped), or from
# its "ok"/"not ok" lines when it died before printing one. One extra
# failure is counted when it timed out, was killed by a signal, printed no
# totals, exited non-zero without a failed case, or left a bad kernel log
# line (tools/vm/bad-patterns; the lines are printed).
#
# Output files in KVPOOL_RESULTS:
#   summary      "PASSED FAILED SKIPPED" (test cases, all binaries); rewritten
#                after every binary, so a guest that dies mid-way leaves
#                the counts so far
#   tests.tsv    per binary: name, exit status, passed, failed, skipped,
#                seconds, notes
#   tap.log, tap/NAME.tap, kmsg/00-boot.log, kmsg/NAME.log
# Exit status: 0 when nothing failed and something passed, else 1.
set -euo pipefail
VM_PROG=guest-tests
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

[[ ${KVPOOL_IN_VM:-} == 1 ]] ||
	vm_die "runs inside the test VM only; use tools/vm/run-tests.sh"
res=${KVPOOL_RESULTS:?KVPOOL_RESULTS is not set}
tmo=${KVPOOL_TEST_TIMEOUT:-300}
tdir=${KVPOOL_TESTS_DIR:-$REPO_ROOT/selftests/kernel}

tests=("$@")
if ((${#tests[@]} == 0)); then
	shopt -s nullglob
	for t in "$tdir"/*_test; do
		[[ -f $t && -x $t ]] && tests+=("$t")
	done
	shopt -u nullglob
fi

mkdir -p "$res/tap" "$res/kmsg"
: >"$res/tap.log"
printf 'name\texit\tpassed\tfailed\tskipped\tseconds\tnotes\n' >"$res/tests.tsv"
tot_p=0 tot_f=0 tot_s=0
write_summary() { echo "$tot_p $tot_f $tot_s" >"$res/summary"; }
write_summary

# Everything the kernel said before the first test (boot, insmod) is
# checked too: a WARN at module load is a failure of the run.
dmesg -c >"$res/kmsg/00-boot.log"
if bad=$(vm_bad_lines "$res/kmsg/00-boot.log"); then
	vm_log "FAIL: kernel log at boot/insmod has bad lines:"
	sed 's/^/  /' <<<"$bad"
	tot_f=$((tot_f + 1))
	printf 'boot\t-\t0\t1\t0\t0\tbad kernel log\n' >>"$res/tests.tsv"
	write_summary
fi

if ((${#tests[@]} == 0)); then
	vm_log "no test binaries in $tdir (run make -C selftests/kernel?)"
	exit 1
fi

# parse_tap FILE: set p f s (test cases) and totals (the "# Totals:" line,
# empty when missing) from kselftest output. Bash builtins only: every
# process started in the guest costs tens of ms under TCG.
parse_tap() {
	local line re_tot='^# Totals: (.*)' kv k v
	local -A n=()
	local ok=0 notok=0 skipped=0
	totals=
	while IFS= read -r line; do
		if [[ $line =~ $re_tot ]]; then
			totals=$line
			n=()
			for kv in ${BASH_REMATCH[1]}; do
				k=${kv%%:*} v=${kv#*:}
				[[ $v =~ ^[0-9]+$ ]] && n[$k]=$v
			done
		elif [[ $line =~ ^ok\ [0-9]+ ]]; then
			# Top-level results only: subtests are indented.
			if [[ $line =~ \#\ *(SKIP|skip) ]]; then
				skipped=$((skipped + 1))
			else
				ok=$((ok + 1))
			fi
		elif [[ $line =~ ^not\ ok\ [0-9]+ ]]; then
			notok=$((notok + 1))
		fi
	done <"$1"
	if [[ -n $totals ]]; then
		p=$((${n[pass]:-0} + ${n[xfail]:-0}))
		f=$((${n[fail]:-0} + ${n[xpass]:-0} + ${n[error]:-0}))
		s=${n[skip]:-0}
	else
		p=$ok f=$notok s=$skipped
	fi
}

for t in "${tests[@]}"; do
	name=${t##*/}
	tap=$res/tap/$name.tap
	kmsg=$res/kmsg/$name.log
	notes=()
	echo "# guest-tests: running $name"
	start=${EPOCHREALTIME/./}
	set +e
	# Line-buffered so that a crash loses nothing and output streams;
	# stdin is /dev/null (vm-run) so nothing waits on the console.
	: >"$tap"
	timeout -k 5 "$tmo" stdbuf -oL -eL "$t" 2>&1 | tee -a "$tap" "$res/tap.log"
	rc=${PIPESTATUS[0]}
	set -e
	ms=$(((${EPOCHREALTIME/./} - start) / 1000))
	secs=$((ms / 1000)).$((ms % 1000 / 100))
	dmesg -c >"$kmsg"

	parse_tap "$tap"
	[[ -n $totals ]] || notes+=("no Totals line")

	extra=0
	if ((rc == 124 || rc == 137)); then
		notes+=("timed out after ${tmo}s"); extra=1
	elif ((rc > 128)); then
		notes+=("killed by signal $((rc - 128))"); extra=1
	elif [[ -z $totals ]]; then
		extra=1
	elif ((rc != 0 && rc != 4 && f == 0)); then
		# kselftest exits 1 on failures, 4 when all skipped.
		notes+=("exit status $rc without a failed case"); extra=1
	fi
	if ((p + f + s == 0 && extra == 0)); then
		notes+=("ran no test case"); extra=1
	fi
	if bad=$(vm_bad_lines "$kmsg"); then
		notes+=("bad kernel log")
		extra=$((extra + 1))
		vm_log "FAIL: $name: kernel log has bad lines ($kmsg):"
		sed 's/^/  /' <<<"$bad"
	fi
	f=$((f + extra))

	tot_p=$((tot_p + p)) tot_f=$((tot_f + f)) tot_s=$((tot_s + s))
	write_summary
	note=
	for nt in "${notes[@]}"; do note+=${note:+; }$nt; done
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$rc" "$p" "$f" "$s" \
		"$secs" "$note" >>"$res/tests.tsv"
	echo "# guest-tests: $name: $p passed, $f failed, $s skipped," \
		"exit $rc, ${secs}s${note:+ ($note)}"
done

echo "# guest-tests: total: $tot_p passed, $tot_f failed, $tot_s skipped"
((tot_f == 0 && tot_p > 0))
