#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Extract the few kernel-tree files kvpool builds and checks with, from
# Debian's linux-source-6.1 tarball, into a cache folder outside the
# checkout:
#
#   tools/testing/selftests/kselftest_harness.h
#   tools/testing/selftests/kselftest.h
#   scripts/checkpatch.pl
#   scripts/spelling.txt
#   scripts/const_structs.checkpatch
#   scripts/kernel-doc
#
# They land in ${KVPOOL_CACHE:-/var/cache/kvpool}/ksrc/ under the same
# relative paths. When all of them are already there, nothing is done (fast
# path). The folder is printed on stdout; progress goes to stderr.
#
# These files are GPL-2.0 kernel sources: never copy them into the repo.
#
# Usage: tools/extract-kernel-tools.sh
# Env:   KVPOOL_CACHE   cache root (default /var/cache/kvpool)
#        KVPOOL_KSRC_TARBALL  tarball (default /usr/src/linux-source-6.1.tar.xz)

set -euo pipefail

cache=${KVPOOL_CACHE:-/var/cache/kvpool}
dest=$cache/ksrc
tarball=${KVPOOL_KSRC_TARBALL:-/usr/src/linux-source-6.1.tar.xz}
top=linux-source-6.1

files=(
	tools/testing/selftests/kselftest_harness.h
	tools/testing/selftests/kselftest.h
	scripts/checkpatch.pl
	scripts/spelling.txt
	scripts/const_structs.checkpatch
	scripts/kernel-doc
)

all_present() {
	local f
	for f in "${files[@]}"; do
		[ -s "$dest/$f" ] || return 1
	done
	return 0
}

if all_present; then
	echo "$dest"
	exit 0
fi

mkdir -p "$dest"

# Serialise concurrent callers (parallel make, several builds at once).
exec 9>"$dest/.lock"
flock 9

if all_present; then
	echo "$dest"
	exit 0
fi

if [ ! -r "$tarball" ]; then
	if [ "$tarball" = /usr/src/linux-source-6.1.tar.xz ] && [ "$(id -u)" = 0 ]; then
		echo "extract-kernel-tools: installing linux-source-6.1" >&2
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
			--no-install-recommends linux-source-6.1 >&2
	fi
	if [ ! -r "$tarball" ]; then
		echo "extract-kernel-tools: $tarball missing" \
		     "(apt-get install linux-source-6.1)" >&2
		exit 1
	fi
fi

tmp=$(mktemp -d "$dest/.extract.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

members=()
for f in "${files[@]}"; do
	members+=("$top/$f")
done

echo "extract-kernel-tools: extracting ${#files[@]} files from $tarball" \
     "(takes a while)" >&2
tar -xJf "$tarball" -C "$tmp" --no-wildcards "${members[@]}"

for f in "${files[@]}"; do
	if [ ! -s "$tmp/$top/$f" ]; then
		echo "extract-kernel-tools: $f not in $tarball" >&2
		exit 1
	fi
	mkdir -p "$(dirname "$dest/$f")"
	# rename() within one filesystem: a reader never sees half a file.
	mv -f "$tmp/$top/$f" "$dest/$f"
done
chmod +x "$dest/scripts/checkpatch.pl"

echo "$dest"
