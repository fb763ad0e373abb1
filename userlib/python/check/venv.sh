#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
#
# The wheel in a venv of its own, as a user installs it: nothing from
# the system's site-packages, no libkvpool installed, no
# LD_LIBRARY_PATH; pip offline (--no-index), from dist/.
#   - the tree's wheel (libkvpool linked in): import kvpool works, the
#     extension needs no libkvpool.so and exports none of its symbols;
#   - a wheel built with KVPOOL_LINK=shared (as a distribution builds
#     it), with libkvpool.so.1 nowhere the loader looks: the ImportError
#     names the package to install.
# One PASS/FAIL line each. Needs no kvpool module loaded.
#
# Usage: check/venv.sh VENV_PYTHON   (the build venv: its pip, setuptools)
# userlib/libkvpool.so must be built (make -C userlib).
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
pkg=$(dirname "$here")
top=$(cd "$pkg/../.." && pwd)
vpy=$(realpath -s "${1:?usage: venv.sh VENV_PYTHON}")
work=$pkg/build/venv
fails=0

pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
indent() { sed 's/^/    /'; }
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
unset LD_LIBRARY_PATH PYTHONPATH

# new_venv DIR WHEEL: a bare venv at DIR with WHEEL installed.
new_venv() {
	rm -rf "$1"
	/usr/bin/python3 -m venv "$1" &&
		"$1/bin/python" -m pip -q install --no-index --no-deps "$2"
}

rm -rf "$work"
mkdir -p "$work"
# shellcheck disable=SC2012 # one wheel, a plain name
whl=$(ls "$pkg"/dist/kvpool-*.whl 2>/dev/null | head -n 1)
if [[ -z $whl ]]; then
	fail "venv: no wheel in dist/ (make first)"
	exit 1
fi
prog='import kvpool, sys; print(kvpool.version(), kvpool._kvpool.__file__)'
if ! out=$(new_venv "$work/static" "$whl" 2>&1); then
	echo "$out" | indent
	fail "venv: pip install of $(basename "$whl") into a bare venv"
elif ! out=$(cd / && "$work/static/bin/python" -c "$prog" 2>&1); then
	echo "$out" | indent
	fail "venv: import kvpool from the wheel, no libkvpool installed"
elif [[ $out != *"$work/static/"* ]] ||
     ldd "${out#* }" | grep -q libkvpool; then
	echo "$out" | indent
	ldd "${out#* }" | indent
	fail "venv: the venv's kvpool imported, with no libkvpool.so needed"
elif nm -D --defined-only "${out#* }" | grep -E ' [TDBRW] (kvp|kvpool)_'; then
	# The static copy's symbols (and the extension's own) are hidden:
	# a call of the extension's never binds to another libkvpool.
	fail "venv: the extension exports libkvpool's or its own symbols"
else
	pass "venv: import kvpool from the wheel, no libkvpool installed ($out)"
fi

# The shared build, from a copy of the package in a tree of links to
# the real one's headers and library (setup.py finds them beside its own
# folder): the tree's build/ and dist/ stay as they are.
tree=$work/tree
shared=$tree/userlib/python
mkdir -p "$shared"
cp -r "$pkg/src" "$pkg/setup.py" "$pkg/pyproject.toml" "$pkg/MANIFEST.in" \
	"$pkg/README.md" "$shared/"
rm -rf "$shared/src/kvpool/__pycache__" "$shared/src/"*.egg-info
ln -s "$top/VERSION" "$top/uapi" "$tree/"
ln -s "$top/userlib/kvpool.h" "$top/userlib/libkvpool.so" "$tree/userlib/"
if ! out=$(cd "$shared" && KVPOOL_LINK=shared "$vpy" -m pip -q wheel \
	--no-build-isolation --no-deps --no-index -w "$work/dist-shared" . 2>&1); then
	echo "$out" | indent
	fail "venv: a KVPOOL_LINK=shared wheel builds"
else
	swhl=$(ls "$work"/dist-shared/kvpool-*.whl)
	if ! out=$(new_venv "$work/shared" "$swhl" 2>&1); then
		echo "$out" | indent
		fail "venv: pip install of the shared wheel"
	else
		out=$(cd / && "$work/shared/bin/python" -c 'import kvpool' 2>&1)
		if [[ $? -ne 0 && $out == *"install libkvpool1"* &&
		      $out == *"libkvpool.so.1"* ]]; then
			pass "venv: without libkvpool.so.1 the ImportError says what to install"
		else
			echo "$out" | indent
			fail "venv: without libkvpool.so.1 the ImportError says what to install"
		fi
	fi
fi
((fails == 0))
