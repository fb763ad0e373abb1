#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# build-root.sh: a Debian root of a newer suite to build modules in, for a
# kernel whose headers want that suite's compiler (7.3 from
# trixie-backports wants trixie's gcc-14, sid's 7.2 wants gcc-16; this
# machine has gcc-12), and whose kbuild tools (modpost, objtool,
# resolve_btfids) link against that suite's libraries.
#
# Usage: tools/vm/build-root.sh "SUITE [EXTRA-SUITE...]" PACKAGE...
#        tools/vm/build-root.sh --run ROOT CMD [ARG...]
#
#   SUITE         debootstrapped (--variant=minbase): "trixie", "sid"
#   EXTRA-SUITE   added to the root's apt sources ("trixie-backports")
#   PACKAGE       installed with apt-get, no recommends; the list comes
#                 from get-kernels.sh (KBUILD_ROOT_PKGS in the kernel's
#                 info: the headers' and kbuild's own Depends, plus make)
#   Prints the root's path, and nothing else, on stdout.
#
#   --run ROOT CMD  runs CMD as root in `chroot ROOT`, in a private mount
#                 namespace holding /dev, /proc and $KVPOOL_CACHE bound at
#                 the same path as here: a headers tree and a build folder
#                 in the cache have the same paths inside and outside, so
#                 build logs need no translating. CMD's environment is only
#                 PATH, HOME and LC_ALL. Exit status: CMD's. The mounts go
#                 with the namespace when CMD ends, however it ends.
#
# Env:
#   KVPOOL_CACHE  cache root (default /var/cache/kvpool)
#
# The root is cached in $KVPOOL_CACHE/roots/SUITE-HASH/, HASH being a hash
# of the suites, the sorted package list, the mirror and this script's
# recipe (RECIPE below), so a kernel whose headers move to another compiler
# gets a new root and the old one stays for the kernels that use it. It is
# found in milliseconds when cached; a cold one takes a few minutes
# (debootstrap, then apt-get install; see tools/vm/README.md). Layout:
#   (the root)        what debootstrap and apt made; apt lists dropped
#   .kvpool/packages  dpkg -l of the root (what the module was built with)
#   .kvpool/log       the debootstrap and apt output of the cold build
#   .complete         written last; its absence means "not there"
# Roots of the same SUITE not used for a week are removed (each use
# touches .complete).
#
# Nothing of this machine changes: the suites are read from the mirror of
# the system's apt sources, and the root is a plain folder.
set -euo pipefail
VM_PROG=build-root
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# Bump when the way a root is made changes: it is part of the cache key.
RECIPE="recipe 1: debootstrap minbase, apt-get install --no-install-recommends"

# run_in_root ROOT CMD...: see --run above. unshare gives the bind mounts a
# namespace of their own, so a killed build never leaves a mount behind
# and two builds in one root never see each other's.
run_in_root() {
	local root=$1
	shift
	[[ -x $root/usr/bin/env ]] || vm_die "$root: not a root (no usr/bin/env)"
	# shellcheck disable=SC2016 # expanded by the inner bash
	unshare --mount --propagation private -- /bin/bash -c '
		set -e
		root=$1 cache=$2
		shift 2
		mount --rbind /dev "$root/dev"
		mount -t proc proc "$root/proc"
		mkdir -p "$root$cache"
		mount --bind "$cache" "$root$cache"
		exec chroot "$root" /usr/bin/env -i \
			PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LC_ALL=C.UTF-8 "$@"
	' run-in-root "$root" "$KVPOOL_CACHE" "$@"
}

if [[ ${1:-} == --run ]]; then
	(($# >= 3)) || vm_die "usage: $0 --run ROOT CMD [ARG...]" 2
	root=$2
	shift 2
	run_in_root "$root" "$@"
	exit
fi

(($# >= 2)) || vm_die "usage: $0 \"SUITE [EXTRA-SUITE...]\" PACKAGE..." 2
read -ra suites <<<"$1"
shift
((${#suites[@]})) || vm_die "no suite given" 2
suite=${suites[0]}
mapfile -t pkgs < <(printf '%s\n' "$@" | LC_ALL=C sort -u)

codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
[[ -n $codename ]] || vm_die "no VERSION_CODENAME in /etc/os-release"
read -r uri _ < <(vm_mirror_of_system "$codename") ||
	vm_die "no '$codename' source in /etc/apt to take the mirror from"

hash=$({
	echo "$RECIPE"
	echo "mirror $uri"
	echo "suites ${suites[*]}"
	printf 'package %s\n' "${pkgs[@]}"
} | sha256sum | cut -c1-12)
roots=$KVPOOL_CACHE/roots
root=$roots/$suite-$hash

# Fast path: no lock, no apt, no network.
if [[ -f $root/.complete ]]; then
	touch "$root/.complete"
	echo "$root"
	exit 0
fi

"$VM_DIR/install-deps.sh"
((EUID == 0)) || vm_die "need root to debootstrap and chroot"
mkdir -p "$roots"
# One builder per root: two CI jobs wanting the same root wait for one
# debootstrap instead of running two.
exec 9>"$roots/.$suite-$hash.lock"
flock 9
if [[ -f $root/.complete ]]; then
	echo "$root"	# built while we waited
	exit 0
fi

stage=$roots/.$suite-$hash.tmp
log=$roots/.$suite-$hash.log
rm -rf "$stage"
: >"$log"
start=$SECONDS
# logged CMD...: run CMD with its output in the log; on failure show the
# log's tail, which is where debootstrap and apt say what went wrong.
logged() {
	if ! "$@" >>"$log" 2>&1; then
		tail -n 30 "$log" >&2
		vm_die "failed: $* (log: $log)"
	fi
}

vm_log "debootstrap $suite into $stage (a few minutes; log: $log)"
# The system's Debian keyring signs the newer suites too (apt already
# checks trixie and sid with it); inside the root, its own suite's keyring
# (debian-archive-keyring, a dependency of apt) takes over.
logged debootstrap --variant=minbase --arch=amd64 --components=main \
	--keyring=/usr/share/keyrings/debian-archive-keyring.gpg \
	"$suite" "$stage" "$uri"

# The root's apt sees only the suites asked for (debootstrap wrote the
# first one already; the rest are its backports and the like).
for s in "${suites[@]}"; do
	echo "deb $uri $s main"
done >"$stage/etc/apt/sources.list"
rm -f "$stage"/etc/apt/sources.list.d/*
# apt in the root needs this machine's name servers.
cp -L /etc/resolv.conf "$stage/etc/resolv.conf"
# and its view of the mirror's dates: a mirror frozen at a snapshot serves
# Release files past their Valid-Until (sid's expire within days), which
# this machine's apt is told to accept. The root's apt gets the same two
# settings, and nothing else of this machine's apt configuration.
apt-config dump | grep -E '^Acquire::Check-(Valid-Until|Date) ' \
	>"$stage/etc/apt/apt.conf.d/99kvpool-host-dates" || true

vm_log "apt-get install ${pkgs[*]} (in the $suite root)"
logged run_in_root "$stage" apt-get -q update
logged run_in_root "$stage" env DEBIAN_FRONTEND=noninteractive \
	apt-get -q -y -o Dpkg::Use-Pty=0 install --no-install-recommends "${pkgs[@]}"
# The root never changes after this (a new package set is a new root), so
# the package lists and the downloaded .debs are only weight.
logged run_in_root "$stage" apt-get clean
rm -rf "$stage"/var/lib/apt/lists/*

mkdir -p "$stage/.kvpool"
# shellcheck disable=SC2016 # dpkg-query's own ${fields}
run_in_root "$stage" dpkg-query -W -f '${Package} ${Version}\n' \
	>"$stage/.kvpool/packages"
mv "$log" "$stage/.kvpool/log"
touch "$stage/.complete"
mv "$stage" "$root"
vm_log "root $suite ready in $((SECONDS - start))s: $root ($(du -sh "$root" | cut -f1))"

# Older roots of this suite that nothing used for a week (a kernel update
# that needed another compiler left them behind).
for old in "$roots/$suite"-*; do
	[[ $old != "$root" && -f $old/.complete ]] || continue
	[[ -n $(find "$old/.complete" -mtime +6) ]] || continue
	vm_log "removing unused root $old"
	rm -rf "$old"
done
echo "$root"
