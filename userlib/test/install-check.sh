#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
#
# make install into a scratch DESTDIR, then build and run a tiny program
# against the installed tree with nothing but what pkg-config says:
#  - the uapi header is $(INCLUDEDIR)/kvpool/linux/kvpool.h and nothing is
#    installed under $(INCLUDEDIR)/linux/ (Debian's linux-libc-dev owns it);
#  - libkvpool.pc's Cflags find <kvpool.h> and, through it, the installed
#    <linux/kvpool.h>; its Version is the VERSION file;
#  - the library is libkvpool.so.VERSION with the SONAME libkvpool.so.1,
#    and kvpool_version() in it answers VERSION;
#  - the installed man pages carry the version in their .TH line.
# PREFIX=/usr, the case where include/linux/ is someone else's.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
: "${MAKE:=make}" "${CC:=cc}"
version=$(cat "$top/VERSION")
dest=$(mktemp -d)
trap 'rm -rf "$dest"' EXIT

fail() {
	echo "FAIL install-check: $*"
	exit 1
}

for tool in pkg-config readelf; do
	command -v $tool >/dev/null ||
		fail "$tool is not installed (Debian: pkgconf, binutils)"
done

$MAKE -s -C "$top/userlib" install DESTDIR="$dest" PREFIX=/usr >/dev/null
# Put back the build tree's libkvpool.pc for the default PREFIX.
$MAKE -s -C "$top/userlib" libkvpool.pc >/dev/null

inc=$dest/usr/include
lib=$dest/usr/lib
if [ -e "$inc/linux" ]; then
	fail "installed under include/linux/: $(find "$inc/linux" | tr '\n' ' ')"
fi
[ -f "$inc/kvpool/linux/kvpool.h" ] || fail "no include/kvpool/linux/kvpool.h"
cmp -s "$inc/kvpool/linux/kvpool.h" "$top/uapi/linux/kvpool.h" ||
	fail "include/kvpool/linux/kvpool.h is not uapi/linux/kvpool.h"
[ -f "$inc/kvpool.h" ] || fail "no include/kvpool.h"

[ -f "$lib/libkvpool.so.$version" ] || fail "no lib/libkvpool.so.$version"
[ "$(readlink "$lib/libkvpool.so.1")" = "libkvpool.so.$version" ] ||
	fail "lib/libkvpool.so.1 -> $(readlink "$lib/libkvpool.so.1")"
soname=$(readelf -d "$lib/libkvpool.so.$version" |
	sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = libkvpool.so.1 ] || fail "SONAME is '$soname'"

# Only the installed .pc, with its paths moved into the DESTDIR.
PKG_CONFIG_PATH=$lib/pkgconfig
PKG_CONFIG_LIBDIR=$lib/pkgconfig
PKG_CONFIG_SYSROOT_DIR=$dest
export PKG_CONFIG_PATH PKG_CONFIG_LIBDIR PKG_CONFIG_SYSROOT_DIR
got=$(pkg-config --modversion libkvpool) || fail "pkg-config: no libkvpool"
[ "$got" = "$version" ] || fail "libkvpool.pc Version '$got', want $version"
cflags=$(pkg-config --cflags libkvpool)
libs=$(pkg-config --libs libkvpool)

cat > "$dest/prog.c" <<'PROG'
#include <stdio.h>
#include <kvpool.h>

/* The installed uapi header is this release's, not some other one. */
_Static_assert(KVPOOL_TYPE == 0xb9, "KVPOOL_TYPE");
_Static_assert(sizeof(struct kvpool_extend) == 56, "struct kvpool_extend");

int main(void)
{
	printf("%s\n", kvpool_version());
	return 0;
}
PROG
# shellcheck disable=SC2086
$CC -std=gnu11 -Wall -Werror $cflags -o "$dest/prog" "$dest/prog.c" $libs ||
	fail "cannot build against the installed tree ($cflags $libs)"
# The header files the program read, one a line (\134 is a backslash:
# the line continuations of -M's output go).
# shellcheck disable=SC2086
$CC -std=gnu11 $cflags -M "$dest/prog.c" | tr -d '\134' | tr ' ' '\n' |
	grep -qx "$inc/kvpool/linux/kvpool.h" ||
	fail "<linux/kvpool.h> did not come from include/kvpool/linux/"
got=$(LD_LIBRARY_PATH=$lib "$dest/prog") || fail "the program failed"
[ "$got" = "$version" ] || fail "kvpool_version() '$got', want $version"

th=$(sed -n '1,/^\.TH/s/^\.TH .*"\(libkvpool[^"]*\)" "libkvpool Manual"/\1/p' \
	"$dest/usr/share/man/man3/kvpool_version.3")
[ "$th" = "libkvpool $version" ] || fail "kvpool_version.3 .TH says '$th'"
if grep -l '^\.TH .* "libkvpool" ' "$dest"/usr/share/man/man*/* >/dev/null; then
	fail "man pages without the version: $(grep -l '^\.TH .* "libkvpool" ' \
		"$dest"/usr/share/man/man*/* | xargs)"
fi

echo "PASS install-check: $(cd "$dest" && find usr/include -type f | sort |
	tr '\n' ' ')"
