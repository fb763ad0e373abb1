#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# build-debs.sh: build kvpool's Debian packages from this tree with
# Debian's own tools (dpkg-buildpackage, debhelper 13, dh-dkms, pybuild),
# run lintian on them, and with --check assert what they hold.
#
# Usage: tools/packaging/build-debs.sh [--out DIR] [--install-deps] [--check]
#   --out DIR   where the packages go (default $KVPOOL_CACHE/debs, the
#               cache being /var/cache/kvpool). What an earlier run made
#               there is removed first, by name (the kvpool_* source
#               files, the unpacked kvpool-VERSION tree, the packages'
#               .debs, build.log, lintian.log): nothing else in DIR is
#               touched
#   --install-deps  first install the Build-Depends of debian/control
#               (apt-get build-dep; root): for a fresh machine
#   --check     then check every package's files and fields (dpkg-deb),
#               that lintian found no error, that `systemd-analyze
#               security` rates kvpool-setup.service 4.0 or less, and
#               runs tools/packaging/unit-test.sh (kvpool-setup's logic,
#               the bash completion): one PASS or FAIL line each, for
#               tools/check.sh
#
# The packaging is tools/packaging/debian, not a top-level debian/:
# Debian's practice is that the packaging belongs to the distribution
# and upstreams do not ship debian/ at the top (it gets in the way of
# Debian's own). So this script does what a Debian maintainer's tools do
# with an upstream release: it makes kvpool_VERSION.orig.tar.xz of the
# tree (the tracked files and new ones git does not ignore, as they are
# in the working tree), unpacks it, adds tools/packaging/debian as its
# debian/ and runs `dpkg-buildpackage -us -uc` (unsigned, source and
# binaries) in it. VERSION is the upstream version; debian/changelog
# must agree (debian/rules checks).
#
# Packages: kvpool-dkms (the module's source and dkms.conf: DKMS builds
# it for every kernel with headers, and on each kernel update),
# libkvpool1, libkvpool-dev, kvpoolctl (with kvpool-setup.service, the
# GPU agent kvpool-gpud and its unit, the udev rule, the kvpool group,
# pools.conf(5), kvpool-setup(8), the bash completion) and
# python3-kvpool. It builds for the Debian it runs on:
# bookworm and trixie are tested (test-install.sh); unit and udev paths
# follow that suite's systemd (debian/rules). Build dependencies:
# tools/vm/install-deps.sh installs them. cuda.h comes from
# tools/cuda-headers.sh as for any build (the CUDA toolkit, else pip's
# NVIDIA wheel, cached under $KVPOOL_CACHE): a build without network
# needs the toolkit or Debian's nvidia-cuda-dev (non-free).
#
# Takes about 2 min on 2 busy cores (the Python extension and lintian
# are most of it). Exit status: 0 built (and, with --check, every check
# passed); 1 otherwise.
set -euo pipefail

prog=build-debs
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
KVPOOL_CACHE=${KVPOOL_CACHE:-/var/cache/kvpool}
export KVPOOL_CACHE
out=$KVPOOL_CACHE/debs
check=0 install_deps=0

say() { printf '%s: %s\n' "$prog" "$*" >&2; }
die() { printf '%s: error: %s\n' "$prog" "$*" >&2; exit 1; }

while (($#)); do
	case $1 in
	--out)		[[ -n ${2-} ]] || die "--out wants a folder"
			out=$2; shift 2 ;;
	--check)	check=1; shift ;;
	--install-deps)	install_deps=1; shift ;;
	-h|--help)	awk 'NR > 2 && !/^#/ { exit } NR > 2 { sub(/^# ?/, ""); print }' \
				"${BASH_SOURCE[0]}"; exit 0 ;;
	*)		die "unknown argument: $1" ;;
	esac
done
[[ $out == /* ]] || out=$PWD/$out

version=$(cat "$repo/VERSION")
[[ -n $version ]] || die "VERSION is empty"
src=kvpool-$version

# --- the source tree. An earlier run's files go, and only those: --out
# may name a folder that holds other things (no `rm -rf "$out"`).
pkgs='kvpool-dkms|libkvpool1|libkvpool-dev|kvpoolctl|python3-kvpool'
mkdir -p "$out"
for f in "$out"/* ; do
	b=${f##*/}
	if [[ $b =~ ^kvpool_[0-9][^/]*\.(tar\.xz|dsc|changes|buildinfo)$ ||
	      $b =~ ^($pkgs)(-dbgsym)?_[^/]+\.d?deb$ ||
	      $b == build.log || $b == lintian.log ]]; then
		rm -f -- "$f"
	elif [[ $b =~ ^kvpool-[0-9][^/]*$ && -d $f/debian && -f $f/VERSION ]]; then
		rm -rf -- "$f"		# an unpacked source tree of ours
	fi
done
say "kvpool $version: $out/kvpool_$version.orig.tar.xz from $repo"
# Files as they are in the working tree; a tracked file deleted there is
# left out rather than failing the tar.
git -C "$repo" -c safe.directory="$repo" ls-files -z --cached --others \
	--exclude-standard |
	(cd "$repo" && while IFS= read -r -d '' f; do
		[[ -e $f || -L $f ]] && printf '%s\0' "$f"
	done) |
	tar -C "$repo" --null -T - --transform "s|^|$src/|" \
		--owner=0 --group=0 --numeric-owner --sort=name \
		--mtime="@$(git -C "$repo" -c safe.directory="$repo" log -1 --format=%ct)" \
		-cJf "$out/kvpool_$version.orig.tar.xz"
tar -C "$out" -xJf "$out/kvpool_$version.orig.tar.xz"
cp -r "$repo/tools/packaging/debian" "$out/$src/debian"

if ((install_deps)); then
	say "apt-get build-dep $out/$src"
	DEBIAN_FRONTEND=noninteractive apt-get -q -o Dpkg::Use-Pty=0 \
		build-dep -y --no-install-recommends "$out/$src" >&2 ||
		die "could not install the Build-Depends"
fi

# --- the build. Its log is kept beside the packages. The system's PATH:
# pybuild runs "python3.11" by name, and a pyenv or virtualenv first in
# the caller's PATH would build the extension for another Python than
# the one the package depends on (or fail, lacking python3-build).
say "dpkg-buildpackage -us -uc in $out/$src (log: $out/build.log)"
t0=$SECONDS
if ! (cd "$out/$src" && export PATH=/usr/sbin:/usr/bin:/sbin:/bin &&
      dpkg-checkbuilddeps &&
      DEB_BUILD_OPTIONS="parallel=$(nproc) ${DEB_BUILD_OPTIONS:-}" \
      dpkg-buildpackage -us -uc) >"$out/build.log" 2>&1; then
	tail -n 40 "$out/build.log" >&2
	die "dpkg-buildpackage failed (whole log: $out/build.log)"
fi
say "built in $((SECONDS - t0)) s:"
(cd "$out" && ls -1 ./*.deb ./*.dsc) >&2

# --- lintian, over the .changes (source and binaries). Its exit status
# says only whether it ran: the tags are counted below.
changes=$(ls "$out"/kvpool_*_"$(dpkg --print-architecture)".changes)
if ! command -v lintian >/dev/null; then
	say "no lintian here: not run"
	((!check)) || { echo "FAIL packaging: lintian is not installed"; exit 1; }
	exit 0
fi
say "lintian (log: $out/lintian.log)"
lintian --display-info --pedantic --tag-display-limit 0 "$changes" \
	>"$out/lintian.log" 2>&1 || true
cat "$out/lintian.log" >&2
errors=$(grep -c '^E: ' "$out/lintian.log" || true)
warnings=$(grep -c '^W: ' "$out/lintian.log" || true)
say "lintian: $errors errors, $warnings warnings"

((check)) || exit 0

# --- the checks.
fails=0
pass() { echo "PASS packaging: $*"; }
fail() { echo "FAIL packaging: $*"; fails=$((fails + 1)); }
deb() {		# deb PACKAGE: its .deb
	local f
	f=$(ls "$out/$1"_*.deb 2>/dev/null | head -n 1)
	[[ -n $f ]] && echo "$f"
}
# has PACKAGE PATH...: each PATH (a regex, anchored) is in the package.
has() {
	local p=$1 f list miss=()
	shift
	f=$(deb "$p") || { fail "no $p package"; return; }
	list=$(dpkg-deb -c "$f" | awk '{ print $6 }' | sed 's|^\./|/|')
	for re in "$@"; do
		grep -qE "^$re\$" <<<"$list" || miss+=("$re")
	done
	if ((${#miss[@]})); then
		fail "$p lacks: ${miss[*]}"
	else
		pass "$p has its $# files"
	fi
}
ml=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
lib=/usr/lib/$ml
has kvpool-dkms /usr/src/$src/dkms.conf /usr/src/$src/Kbuild \
	/usr/src/$src/VERSION /usr/src/$src/driver/core.mk \
	/usr/src/$src/driver/kvpool_main.c /usr/src/$src/driver/kvp_core.h \
	/usr/src/$src/uapi/linux/kvpool.h
has libkvpool1 "$lib/libkvpool.so.1" "$lib/libkvpool.so.$version"
has libkvpool-dev /usr/include/kvpool.h /usr/include/kvpool/linux/kvpool.h \
	"$lib/libkvpool.so" "$lib/libkvpool.a" "$lib/pkgconfig/libkvpool.pc" \
	/usr/share/man/man3/kvpool_open.3.gz /usr/share/man/man7/libkvpool.7.gz
# Units and rules where this suite's systemd and udev have them (as
# debian/rules puts them): /lib on bookworm, /usr/lib on trixie.
unitdir=$(pkg-config --variable=systemdsystemunitdir systemd 2>/dev/null ||
	echo /lib/systemd/system)
udevdir=$(pkg-config --variable=udevdir udev 2>/dev/null || echo /lib/udev)
has kvpoolctl /usr/bin/kvpoolctl /usr/share/man/man8/kvpoolctl.8.gz \
	/usr/sbin/kvpool-gpud /usr/share/man/man8/kvpool-gpud.8.gz \
	"$unitdir/kvpool-gpud.service" \
	/usr/libexec/kvpool/kvpool-setup /etc/kvpool/pools.conf \
	/usr/share/man/man5/pools.conf.5.gz \
	/usr/share/man/man8/kvpool-setup.8.gz \
	/usr/share/bash-completion/completions/kvpoolctl \
	"$unitdir/kvpool-setup.service" \
	/usr/lib/sysusers.d/kvpool.conf "$udevdir/rules.d/60-kvpool.rules" \
	/usr/share/doc/kvpoolctl/examples/kvpool.conf \
	/usr/share/doc/kvpoolctl/examples/kvpool-metrics.timer
has python3-kvpool /usr/lib/python3/dist-packages/kvpool/__init__.py \
	'/usr/lib/python3/dist-packages/kvpool/_kvpool\.cpython-[0-9]+-[a-z0-9_-]+\.so'

# Fields and control files: what the packages' own tools depend on.
f=$(deb kvpool-dkms) &&
v=$(dpkg-deb --fsys-tarfile "$f" |
	tar -xOf - "./usr/src/$src/dkms.conf" | sed -n 's/^PACKAGE_VERSION="\(.*\)"$/\1/p') &&
[[ $v == "$version" ]] &&
dpkg-deb -f "$f" Depends | grep -qw dkms &&
dpkg-deb -I "$f" postinst | grep -q 'common.postinst' &&
	pass "kvpool-dkms: dkms.conf says $v, depends on dkms, its postinst builds" ||
	fail "kvpool-dkms: dkms.conf's version '${v-}' (want $version), Depends or postinst"
f=$(deb libkvpool1) &&
dpkg-deb -I "$f" symbols | grep -q '^ kvpool_open@KVPOOL_1.0 ' &&
dpkg-deb -I "$f" shlibs | grep -q '^libkvpool 1 libkvpool1' &&
	pass "libkvpool1: symbols and shlibs files" ||
	fail "libkvpool1: no symbols file with kvpool_open@KVPOOL_1.0, or no shlibs"
for p in kvpoolctl python3-kvpool; do
	f=$(deb "$p") && dpkg-deb -f "$f" Depends | grep -q 'libkvpool1 (>= ' &&
		pass "$p depends on libkvpool1" ||
		fail "$p: no versioned Depends on libkvpool1: $(dpkg-deb -f "$f" Depends 2>&1)"
done
f=$(deb kvpoolctl) &&
dpkg-deb -I "$f" postinst | grep -q 'systemd-sysusers' &&
dpkg-deb -I "$f" postinst | grep -q 'kvpool-setup.service' &&
dpkg-deb -I "$f" postinst | grep -q 'kvpool-gpud.service' &&
	pass "kvpoolctl: postinst makes the group and enables kvpool-setup.service and kvpool-gpud.service" ||
	fail "kvpoolctl: postinst lacks systemd-sysusers or the units' enable"
# The packaged units' sandboxes (each unit says what it keeps and why):
# the issue's bound is 4.0.
if command -v systemd-analyze >/dev/null && f=$(deb kvpoolctl); then
	x=$(mktemp -d)
	dpkg-deb -x "$f" "$x"
	for u in kvpool-setup.service kvpool-gpud.service; do
		e=$(systemd-analyze security --offline=yes --no-pager \
			"$x$unitdir/$u" 2>&1 |
			sed -n 's/^.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p')
		if [[ -n $e ]] && awk -v e="$e" 'BEGIN { exit !(e <= 4.0) }'; then
			pass "$u: systemd-analyze security exposure $e (at most 4.0)"
		else
			fail "$u: systemd-analyze security exposure '${e}' (want at most 4.0)"
		fi
	done
	rm -rf "$x"
else
	fail "no systemd-analyze, or no kvpoolctl package: the unit's sandbox unchecked"
fi
if ((errors == 0)); then
	pass "lintian: no errors ($warnings warnings)"
else
	fail "lintian: $errors errors"
fi
# kvpool-setup's shell logic and the completion, without module or root.
"$repo/tools/packaging/unit-test.sh" || fails=$((fails + 1))
((fails == 0))
