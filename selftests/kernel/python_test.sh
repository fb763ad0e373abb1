#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# python_test: the Python binding's tests (userlib/python/tests) as one
# kselftest binary for tools/vm/guest-tests.sh. `make` here installs this
# script as python_test; the venv it runs must have been built on the
# host first (make -C userlib/python, which tools/check.sh's build stage
# does).
#
# It runs the venv's pytest on every test, those that need the module
# included, with the tree's libkvpool (LD_LIBRARY_PATH) and no bytecode
# written (the guest's tree is read-only). The tests' reporter
# (userlib/python/tests/conftest.py, KVPOOL_REPORT=tap) prints one
# "ok N name" / "not ok N name" per test and the "# Totals:" line on fd 3,
# straight to stdout; pytest's own output goes there too, each line behind
# "# ". Without the venv it fails (one "not ok"), it never skips.
#
# Exit status: 0 when every test passed, 1 otherwise (as kselftest).
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/../.." && pwd)
pydir=$top/userlib/python
py=$pydir/.venv/bin/python

export LD_LIBRARY_PATH=$top/userlib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PYTHONDONTWRITEBYTECODE=1 KVPOOL_REPORT=tap KVPOOL_REPORT_FD=3

# The venv and the stamp make -C userlib/python leaves once its wheel is
# installed there: checked without starting python (seconds under TCG);
# a venv that cannot import kvpool fails pytest's collection, loudly too.
if [[ ! -x $py || ! -f $pydir/.venv/.installed ]]; then
	echo "TAP version 13"
	echo "1..1"
	echo "not ok 1 python_venv # no $py with kvpool installed:" \
		"run make -C userlib/python on the host"
	echo "# Totals: pass:0 fail:1 xfail:0 xpass:0 skip:0 error:0"
	exit 1
fi

# pytest's rootdir and any temporary files: somewhere writable.
cd "${TMPDIR:-/tmp}" || exit 1
# The reporter touches this once it has printed the Totals line: if it
# never ran (conftest.py, hence kvpool, did not import), say so here.
stampdir=$(mktemp -d) || exit 1
trap 'rm -rf "$stampdir"' EXIT
export KVPOOL_REPORT_STAMP=$stampdir/done
{
	"$py" -m pytest -p no:cacheprovider -q --tb=short -rfE \
		--durations=8 --rootdir="$pydir/tests" "$pydir/tests" \
		3>&4 2>&1 |
		sed -u 's/^/# /'
} 4>&1
rc=$?
if [[ ! -e $KVPOOL_REPORT_STAMP ]]; then
	echo "not ok 1 pytest # exit status $rc before any test ran"
	echo "# Totals: pass:0 fail:1 xfail:0 xpass:0 skip:0 error:0"
	exit 1
fi
((rc == 0)) || exit 1
