#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
#
# The binding's types, checked the way its users check theirs, on Python
# 3.11 (the package's floor, Debian 12's):
#   - mypy --strict and pyright (strict) over the docs' examples (every
#     ```python block of README.md, docs/python.md and docs/sglang.md,
#     extracted here, now, by doc_examples.py), and both over the
#     package's Python (kvpool.sglang, kvpool.bench);
#   - the same two over the tests, whose "# type: ignore"s on the
#     calls they make wrong on purpose must stay needed (mypy --strict
#     says so if the stubs stop refusing them);
#   - mypy's stubtest: the stubs against the installed module itself
#     (names, and each signature against inspect.signature()).
# One PASS/FAIL line each (tools/check.sh counts them); a checker's
# complaints are printed, indented, above its FAIL line.
#
# The checkers come from PyPI, pinned, into
# ${KVPOOL_CACHE:-/var/cache/kvpool}/pytypes-venv, made on the first run
# (about 460 MB; pyright comes as basedpyright, whose wheel carries
# node, since the npm registry is not used). numpy is there too: its
# own stubs are what the checkers hold the examples' arrays to.
#
# Usage: check/types.sh VENV_PYTHON   (the venv the wheel is installed in)
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
pkg=$(dirname "$here")
top=$(cd "$pkg/../.." && pwd)
vpy=$(realpath -s "${1:?usage: types.sh VENV_PYTHON}")
cache=${KVPOOL_CACHE:-/var/cache/kvpool}
tv=$cache/pytypes-venv
# Bump these together; the venv is remade when they change.
pins="mypy==2.4.1 basedpyright==1.40.2 numpy==2.4.6 typing_extensions==4.16.0 pytest==9.2.0"
work=$pkg/build/types
fails=0

pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
indent() { sed 's/^/    /'; }

if [[ $(cat "$tv/.pins" 2>/dev/null) != "$pins" ]]; then
	echo "types: making $tv ($pins)"
	rm -rf "$tv"
	# shellcheck disable=SC2086 # $pins is a list of words
	if ! /usr/bin/python3 -m venv "$tv" ||
	   ! PIP_DISABLE_PIP_VERSION_CHECK=1 "$tv/bin/pip" -q install $pins; then
		rm -rf "$tv"
		fail "types: the checkers' venv $tv ($pins)"
		exit 1
	fi
	echo "$pins" >"$tv/.pins"
fi

rm -rf "$work"
mkdir -p "$work/examples"
if ! out=$(/usr/bin/python3 "$here/doc_examples.py" "$work/examples" \
	"$top/README.md" "$top/docs/python.md" "$top/docs/sglang.md" 2>&1); then
	fail "types: the docs' examples: $out"
	exit 1
fi
nex=$(find "$work/examples" -name '*.py' | wc -l)

# The package as installed in the venv: its stubs, py.typed and
# kvpool.sglang as pip put them, seen alone (a folder holding only it),
# so that the sources and other venv contents play no part.
site=$("$vpy" -c 'import os, kvpool; print(os.path.dirname(os.path.dirname(kvpool.__file__)))') || {
	fail "types: kvpool does not import in $vpy"
	exit 1
}
mkdir -p "$work/site"
cp -r "$site/kvpool" "$work/site/"
rm -rf "$work/site/kvpool/__pycache__"
ex=("$work"/examples/*.py)
pkgpy=("$work/site/kvpool/sglang.py" "$work/site/kvpool/bench.py")
tests=("$pkg"/tests/*.py)

# mypy: MYPYPATH puts the installed package first; the tests' helpers
# (kvpt) are found beside them.
run_mypy() {
	local what=$1
	shift
	local out
	if out=$(cd "$work" && MYPYPATH=$work/site:$pkg/tests \
		"$tv/bin/mypy" --python-version 3.11 --no-incremental \
		--cache-dir=/dev/null --no-error-summary "$@" 2>&1); then
		pass "types: mypy $what"
	else
		echo "$out" | indent
		fail "types: mypy $what ($(grep -c ': error:' <<<"$out") errors)"
	fi
}
run_mypy "--strict, the docs' $nex examples and kvpool.sglang, kvpool.bench" \
	--strict "${ex[@]}" "${pkgpy[@]}"
# The tests assert that what is typed "-> None" returns None:
# func-returns-value would refuse every such assert.
run_mypy "--strict over the tests" --strict \
	--disable-error-code func-returns-value "${tests[@]}"

# pyright (basedpyright, as pyright itself): "strict" over the docs'
# examples, what a user copies; its default "standard" over the
# package's own Python and the tests (strict would ask them, among
# other things, not to call kvpool.sglang's module-private helpers).
run_pyright() {
	local what=$1 mode=$2 cfg=$work/pyright-$3.json
	shift 3
	local out
	printf '{ "pythonVersion": "3.11", "typeCheckingMode": "%s",\n  "extraPaths": ["%s", "%s"] }\n' \
		"$mode" "$work/site" "$pkg/tests" >"$cfg"
	if out=$("$tv/bin/basedpyright" --pythonpath "$tv/bin/python" \
		-p "$cfg" "$@" 2>&1); then
		pass "types: pyright $what"
	else
		echo "$out" | indent
		fail "types: pyright $what ($(grep -c ' - error' <<<"$out") errors)"
	fi
}
run_pyright "strict, the docs' $nex examples" strict examples "${ex[@]}"
run_pyright "kvpool.sglang, kvpool.bench and the tests" standard pkg \
	"${pkgpy[@]}" "${tests[@]}"

# stubtest imports the package: the installed one, with the checkers'
# interpreter (the same Python, /usr/bin/python3's).
if out=$(cd "$work" && PYTHONPATH=$work/site "$tv/bin/python" -m mypy.stubtest \
	--mypy-config-file /dev/null --allowlist "$here/stubtest-allowlist" \
	kvpool 2>&1); then
	pass "types: stubtest, the stubs against the module"
else
	echo "$out" | indent
	fail "types: stubtest, the stubs against the module"
fi
((fails == 0))
