#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# debug-kernel.sh: build (once) the "6.1-debug" kernel: Debian's
# linux-source-6.1 with tinyconfig + tools/vm/debug-6.1.config (KASAN,
# lockdep, kmemleak, UBSAN, DEBUG_LIST, failslab/fail-nth, 9p built in).
#
# Usage: tools/vm/debug-kernel.sh [--config-only DIR] [--quiet]
#   (no option)        make sure the kernel is built; print one line
#                      "kernel 6.1-debug: ..." like get-kernels.sh
#   --config-only DIR  only extract the source into DIR and make its
#                      .config (checked against the fragment); no build
#   --quiet            no line on stdout
#
# Env:
#   KVPOOL_CACHE          cache root (default /var/cache/kvpool)
#   KVPOOL_DEBUG_JOBS     make -j (default 2)
#   KVPOOL_DEBUG_REBUILD  1: build again even if the cache has this config
#   KVPOOL_KSRC_TARBALL   source (default /usr/src/linux-source-6.1.tar.xz)
#
# The kernel is cached in $KVPOOL_CACHE/kernels/6.1-debug-HASH/, HASH being
# a hash of the config fragment's settings (its CONFIG_ lines; comments do
# not count) and of this script's build recipe (RECIPE below);
# kernels/6.1-debug is a symlink to the current one, so every other tool
# (get-kernels, build-module, vm-run, run-tests) takes "6.1-debug" as a
# kernel name like any other. A cached kernel is reused
# in well under a second (0.01 s); a changed fragment means one cold
# build: 8 min wall with -j2 on 2 idle cores, up to 25 min on a busy
# machine (650-800 CPU-seconds; see tools/vm/README.md). A newer
# linux-source-6.1 package does not by itself trigger a rebuild (the cached
# tree is complete and consistent); KVPOOL_DEBUG_REBUILD=1 forces one.
#
# Layout of the folder (the same names get-kernels.sh gives a Debian one):
#   src/        the configured, built source tree (kept whole: modules
#               build against it with `make -C build M=...`)
#   build       -> src
#   vmlinuz     the bzImage (no vmlinux.pvh: see the fragment on PVH)
#   config      the final .config;  fragment  the fragment it came from
#   initmods/order  empty: 9p and virtio are built in
#   info        KNAME/KREL/KVER/KSUITE/KIMAGE_PKG (+ BUILD_SECONDS, HASH)
#   build.log   the kernel build's output
#   .complete   written last
# Older 6.1-debug-* folders are removed an hour after they stop being the
# current one (a VM started from one may still be reading it).
#
# Exit status: 0 built or cached; 1 on any failure (the log's tail is
# printed; a fragment option that olddefconfig dropped is named).
set -euo pipefail
VM_PROG=debug-kernel
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# Bump when the way the kernel is built changes (targets, make variables,
# what is kept): it is part of the cache key.
RECIPE="recipe 1: tinyconfig + fragment, olddefconfig, make bzImage modules"
NAME=6.1-debug
FRAGMENT=$VM_DIR/debug-6.1.config
TARBALL=${KVPOOL_KSRC_TARBALL:-/usr/src/linux-source-6.1.tar.xz}
JOBS=${KVPOOL_DEBUG_JOBS:-2}
LOCALVERSION=-kvpool-debug

config_only='' quiet=0
while (($#)); do
	case $1 in
	--config-only)	config_only=${2:?}; shift 2 ;;
	--quiet)	quiet=1; shift ;;
	-h|--help)	awk 'NR > 2 && !/^#/ { exit } NR > 2 { sub(/^# ?/, ""); print }' \
				"${BASH_SOURCE[0]}"; exit 0 ;;
	*)		vm_die "unknown argument: $1 (see --help)" 2 ;;
	esac
done

[[ -f $FRAGMENT ]] || vm_die "$FRAGMENT: missing"
# The cache key: the recipe and the fragment's settings, sorted. Comments
# and blank lines do not change the kernel, so editing them rebuilds
# nothing.
fragment_settings() {
	grep -E '^(CONFIG_[A-Za-z0-9_]+=|# CONFIG_[A-Za-z0-9_]+ is not set)' \
		"$FRAGMENT" | sed 's/[[:space:]]*$//' | LC_ALL=C sort
}
hash=$({ echo "$RECIPE"; fragment_settings; } | sha256sum | cut -c1-12)
kroot=$KVPOOL_CACHE/kernels
dest=$kroot/$NAME-$hash
link=$kroot/$NAME

note() {
	((quiet)) && return 0
	local KNAME KREL KVER KSUITE
	# shellcheck disable=SC1091 # written below
	. "$dest/info"
	printf 'kernel %s: %s (package %s, %s) in %s\n' \
		"$KNAME" "$KREL" "$KVER" "$KSUITE" "$dest"
}

# point_link: kernels/6.1-debug -> 6.1-debug-HASH, replaced atomically;
# the tree it pointed to before is marked retired (pruned an hour later).
point_link() {
	local old
	old=$(readlink "$link" 2>/dev/null) || old=
	[[ $old == "$NAME-$hash" ]] && return 0
	ln -sfn "$NAME-$hash" "$link.new.$$"
	mv -T "$link.new.$$" "$link"
	if [[ -n $old && -d $kroot/$old ]]; then
		touch "$kroot/$old/.retired"
	fi
	rm -f "$dest/.retired"
}

# Fast path: no lock, no apt, no tar.
if [[ -z $config_only && -f $dest/.complete && ${KVPOOL_DEBUG_REBUILD:-0} != 1 ]]; then
	point_link
	note
	exit 0
fi

"$VM_DIR/install-deps.sh"
[[ -r $TARBALL ]] || vm_die "$TARBALL missing (apt-get install linux-source-6.1)"

# extract DIR: the tarball's tree into DIR (its top folder stripped).
extract() {
	mkdir -p "$1"
	vm_log "extracting $TARBALL"
	tar -xJf "$TARBALL" -C "$1" --strip-components=1
}

# check_config DOTCONFIG: every option the fragment sets is set that way.
check_config() {
	local line opt bad=0
	while IFS= read -r line; do
		if [[ $line =~ ^(CONFIG_[A-Za-z0-9_]+)=(.*)$ ]]; then
			if ! grep -qxF -- "$line" "$1"; then
				opt=$(grep -E "^(# )?${BASH_REMATCH[1]}[= ]" "$1" || true)
				vm_log "fragment wants '$line'; .config has '${opt:-nothing}'"
				bad=1
			fi
		elif [[ $line =~ ^#\ (CONFIG_[A-Za-z0-9_]+)\ is\ not\ set$ ]]; then
			opt=${BASH_REMATCH[1]}
			if grep -qE "^$opt=" "$1"; then
				vm_log "fragment wants $opt unset; .config has '$(grep -E "^$opt=" "$1")'"
				bad=1
			fi
		fi
	done <"$FRAGMENT"
	return "$bad"
}

# configure SRC: tinyconfig + the fragment, then olddefconfig; checked.
configure() {
	local src=$1
	make -s -C "$src" tinyconfig >/dev/null
	# merge_config.sh -m merges only (no olddefconfig of its own);
	# -O keeps its output in the tree.
	(cd "$src" && KCONFIG_CONFIG=.config scripts/kconfig/merge_config.sh \
		-m -O . .config "$FRAGMENT" >"$src/merge_config.log" 2>&1) ||
		{ cat "$src/merge_config.log" >&2; vm_die "merge_config.sh failed"; }
	make -s -C "$src" olddefconfig >>"$src/merge_config.log" 2>&1 ||
		{ cat "$src/merge_config.log" >&2; vm_die "olddefconfig failed"; }
	check_config "$src/.config" ||
		vm_die "the fragment $FRAGMENT does not survive olddefconfig (see above)"
}

if [[ -n $config_only ]]; then
	[[ -e $config_only ]] && vm_die "$config_only exists; give a new folder"
	extract "$config_only"
	configure "$config_only"
	vm_log "configured: $config_only/.config"
	exit 0
fi

mkdir -p "$kroot"
# Our own lock, not get-kernels' kernels/.lock: a 20-minute build must not
# hold up other kernels' fetches.
exec 7>"$kroot/.$NAME.lock"
if ! flock -n 7; then
	vm_log "another debug-kernel.sh is building; waiting for it"
	flock 7
fi
if [[ -f $dest/.complete && ${KVPOOL_DEBUG_REBUILD:-0} != 1 ]]; then
	point_link	# built by whoever held the lock
	note
	exit 0
fi

stage=$kroot/.$NAME-$hash.tmp
rm -rf "$stage"
mkdir -p "$stage"
start=$SECONDS
extract "$stage/src"
configure "$stage/src"
cp "$FRAGMENT" "$stage/fragment"

vm_log "building $NAME ($hash) with make -j$JOBS; 8-25 min on 2 cores;" \
	"log: $stage/build.log"
set +e
# `modules` with nothing =m still writes Module.symvers, which external
# module builds need (modpost warns without it).
make -C "$stage/src" -j"$JOBS" LOCALVERSION="$LOCALVERSION" \
	KBUILD_BUILD_USER=kvpool KBUILD_BUILD_HOST=kvpool-ci \
	bzImage modules >"$stage/build.log" 2>&1
rc=$?
set -e
if ((rc != 0)); then
	tail -n 40 "$stage/build.log" >&2
	vm_die "kernel build failed (exit $rc); log: $stage/build.log"
fi
took=$((SECONDS - start))
krel=$(make -s -C "$stage/src" LOCALVERSION="$LOCALVERSION" kernelrelease)
[[ -s $stage/src/Module.symvers ]] || vm_die "no Module.symvers after the build"

ln -s src "$stage/build"
ln -s src/arch/x86/boot/bzImage "$stage/vmlinuz"
cp "$stage/src/.config" "$stage/config"
mkdir -p "$stage/initmods"
: >"$stage/initmods/order"
{
	printf 'KNAME=%q\n' "$NAME"
	printf 'KREL=%q\n' "$krel"
	printf 'KVER=%q\n' "$(dpkg-query -W -f='${Version}' linux-source-6.1 2>/dev/null || echo unknown)"
	printf 'KSUITE=%q\n' "built here from linux-source-6.1"
	printf 'KIMAGE_PKG=%q\n' "linux-source-6.1"
	printf 'HASH=%q\n' "$hash"
	printf 'BUILD_SECONDS=%q\n' "$took"
	printf 'BUILD_JOBS=%q\n' "$JOBS"
} >"$stage/info"
touch "$stage/.complete"

rm -rf "$dest.old"
[[ -e $dest ]] && mv "$dest" "$dest.old"
mv "$stage" "$dest"
rm -rf "$dest.old"
point_link
vm_log "built $NAME ($krel) in ${took}s"

# Other configs' trees (GBs each), an hour after they were retired: a VM
# started from one a moment ago may still be reading it.
for old in "$kroot/$NAME"-*/.retired; do
	[[ -f $old ]] || continue
	if [[ -n $(find "$old" -mmin +60) ]]; then
		rm -rf "${old%/.retired}"
	fi
done
note
