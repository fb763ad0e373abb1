#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# get-kernels.sh: fetch Debian kernels to boot under QEMU and build against.
#
# Usage: tools/vm/get-kernels.sh [NAME...]      (default: all)
#   NAME: 6.1      Debian 12's own kernel (the system apt sources)
#         6.12     whatever 6.12.x bookworm-backports has now
#         6.1-rt, 6.12-rt   the PREEMPT_RT flavours of the same
#         6.1-debug  KASAN/lockdep/kmemleak/fail-nth kernel built here from
#                  linux-source-6.1 (tools/vm/debug-kernel.sh: 8-25 min
#                  the first time, then cached; its own lock, not this one's)
#         7.3      whatever 7.3.x trixie-backports has now
#         sid      whatever kernel sid's linux-image-amd64 names now (7.2.x
#                  on 2026-12-01); no series is pinned: sid moves
#         all      6.1 and 6.12
#
# Env:
#   KVPOOL_CACHE    cache root (default /var/cache/kvpool)
#   KVPOOL_REFRESH  1: re-resolve versions from the mirror even if the cache
#                   is filled (and replace the kernel if a newer one is out)
#
# Result, per kernel, in $KVPOOL_CACHE/kernels/NAME/:
#   vmlinuz      the kernel image (symlink into root/boot)
#   vmlinux.pvh  the same, uncompressed, for QEMU's PVH boot (if possible)
#   build        headers tree for `make -C build M=... modules`
#   initmods/    the modules that mount a 9p share, decompressed for
#                busybox insmod, and initmods/order (load order, one a line)
#   root/        the unpacked packages (image, headers, common, kbuild)
#   info         KNAME/KREL/KVER/... as shell assignments (+ KBUILD_ROOT,
#                KBUILD_ROOT_PKGS for the kernels built in a root)
#   .complete    written last; its absence means "not there"
#
# Kernel packages are never installed: `apt-get download` + `dpkg -x`, so no
# postinst hook touches this machine's /boot. Other suites than the system's
# (bookworm-backports, trixie-backports, sid) are read through a private
# sources list and private apt state under the cache ($KVPOOL_CACHE/apt/
# SUITE/), so the system's apt configuration is never changed. Versions are
# resolved from apt's metadata at run time; nothing here names an ABI number.
#
# The 7.x kernels (7.3, sid) differ in three ways, all handled here:
#   - linux-image-KREL is an empty package depending on linux-base-KREL,
#     linux-binary-KREL (the image, in usr/lib/modules/KREL/vmlinuz) and
#     linux-modules-KREL: whatever KREL packages the image depends on are
#     unpacked with it.
#   - the headers' Makefile also names its own folder by absolute path
#     (KBUILD_OUTPUT=/usr/src/...): pointed into the cache like the include.
#   - the headers want that suite's compiler (gcc-14-for-host, gcc-16-...)
#     and kbuild's tools link against its libraries, so modules are built
#     in a debootstrapped root of that suite (tools/vm/build-root.sh, run
#     by build-module.sh). info then also holds KBUILD_ROOT (its suites)
#     and KBUILD_ROOT_PKGS (the headers' and kbuild's Depends, plus make),
#     read from apt's metadata like the versions.
set -euo pipefail
VM_PROG=get-kernels
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# The modules that get the guest from "kernel booted" to "host root mounted
# over 9p": the virtio PCI transport and the 9p client. Whatever they depend
# on is found by modprobe; whatever is built in is skipped.
INIT_MODULES=(virtio_pci 9pnet_virtio 9p)
# Wanted but not required: overlay lets the guest see the host's /tmp under
# a writable tmpfs (see guest-init.sh).
INIT_MODULES_OPTIONAL=(overlay)

"$VM_DIR/install-deps.sh"

names=("$@")
((${#names[@]})) || names=(all)
expanded=()
for n in "${names[@]}"; do
	if [[ $n == all ]]; then
		read -ra all <<<"$VM_ALL_KERNELS"
		expanded+=("${all[@]}")
	else
		expanded+=("$n")
	fi
done

# Built, not fetched: before taking the fetch lock, so that a long build
# never holds up another job's fetch of a Debian kernel.
fetched=()
for n in "${expanded[@]}"; do
	case $n in
	*-debug)	[[ $n == 6.1-debug ]] ||
				vm_die "unknown kernel '$n' (the debug kernel is 6.1-debug)"
			"$VM_DIR/debug-kernel.sh" ;;
	*)		fetched+=("$n") ;;
	esac
done
expanded=("${fetched[@]}")

mkdir -p "$KVPOOL_CACHE/kernels"
# One fetcher at a time: two CI jobs sharing a cache must not unpack the same
# kernel into each other.
exec 9>"$KVPOOL_CACHE/kernels/.lock"
flock 9

codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
[[ -n $codename ]] || vm_die "no VERSION_CODENAME in /etc/os-release"

# Private apt configuration for one suite of the system's mirror, built
# once per cache: sets apt_dir and the apt options that use it.
apt_dir=
setup_suite() {
	local name=$1 uri key
	read -r uri key < <(vm_mirror_of_system "$codename") ||
		vm_die "no '$codename' source in /etc/apt to take the mirror from"
	apt_dir=$KVPOOL_CACHE/apt/$name
	apt_opts=(
		-o "Dir::Etc::SourceList=$apt_dir/sources.list"
		-o "Dir::Etc::SourceParts=$apt_dir/sources.list.d"
		-o "Dir::State::Lists=$apt_dir/lists"
		-o "Dir::Cache=$apt_dir/cache"
	)
	mkdir -p "$apt_dir/sources.list.d" "$apt_dir/lists/partial" \
		"$apt_dir/cache/archives/partial"
	key=${key:-/usr/share/keyrings/debian-archive-keyring.gpg}
	local line="deb [signed-by=$key] $uri $name main"
	if [[ ! -f $apt_dir/sources.list ]] ||
	   [[ $(cat "$apt_dir/sources.list") != "$line" ]]; then
		echo "$line" >"$apt_dir/sources.list"
		rm -f "$apt_dir/lists/"*_Packages* "$apt_dir/lists/"*Release*
	fi
}

# Per-kernel apt options and update command (set by select_suite).
apt_opts=()
suite=
select_suite() {
	case $1 in
	6.1)		apt_opts=(); suite="system apt sources" ;;
	6.12)		suite=$codename-backports; setup_suite "$suite" ;;
	7.3)		suite=trixie-backports; setup_suite "$suite" ;;
	sid)		suite=sid; setup_suite "$suite" ;;
	*)		vm_die "select_suite: no suite for '$1'" ;;
	esac
}
apt_update() {
	vm_log "apt-get update ($suite)"
	apt-get -q "${apt_opts[@]}" update >/dev/null
}
# True when the apt lists in use hold no package index yet.
lists_empty() {
	local d=/var/lib/apt/lists
	((${#apt_opts[@]})) && d=$apt_dir/lists
	! compgen -G "$d/*_Packages*" >/dev/null
}

candidate() {
	apt-cache "${apt_opts[@]}" policy "$1" 2>/dev/null |
		awk '$1 == "Candidate:" { print $2; exit }'
}

# origin PKG: the archive its candidate comes from, e.g. bookworm-security.
origin() {
	apt-cache "${apt_opts[@]}" policy "$1" 2>/dev/null | awk '
		$1 == "Candidate:" { c = $2 }
		c != "" && ($1 == c || ($1 == "***" && $2 == c)) { want = 1; next }
		want { split($3, a, "/"); print a[1]; exit }'
}

# resolve_image SERIES FLAVOUR: print the image package name. The metapackage
# (linux-image-amd64) names the current ABI; if it has moved past SERIES
# (say backports went to 6.18), fall back to the newest linux-image-SERIES.*
# of that flavour that apt can download. An empty SERIES takes whatever the
# metapackage names (sid).
resolve_image() {
	local series=$1 flavour=$2 dep p best=
	dep=$(apt-cache "${apt_opts[@]}" depends "linux-image-$flavour" 2>/dev/null |
		awk '$1 == "Depends:" && $2 ~ /^linux-image-/ { print $2; exit }')
	if [[ -z $series ]]; then
		[[ -n $dep ]] && echo "$dep"
		return
	fi
	if [[ $dep == "linux-image-$series"[.-]*"-$flavour" ]]; then
		echo "$dep"
		return
	fi
	local re="^linux-image-${series//./\\.}[.-].*-${flavour}\$"
	while read -r p; do
		[[ $p =~ -(cloud|rt)-amd64$ && $flavour == amd64 ]] && continue
		[[ $(candidate "$p") == "" || $(candidate "$p") == "(none)" ]] && continue
		best=$p
	done < <(apt-cache "${apt_opts[@]}" pkgnames "linux-image-$series" |
		grep -E "$re" | sort -V)
	[[ -n $best ]] && echo "$best"
}

# header_deps PKG: the -common and linux-kbuild packages a headers package
# needs (both are unpacked next to it).
header_deps() {
	apt-cache "${apt_opts[@]}" depends "$1" |
		awk '$1 == "Depends:" && ($2 ~ /^linux-headers-.*-common/ ||
					  $2 ~ /^linux-kbuild-/) { print $2 }' |
		sort -u
}

# image_parts PKG KREL: the packages of this very kernel (names ending in
# KREL) that the image package depends on. 6.x images hold everything
# themselves (none); a 7.x image is empty and depends on linux-base-KREL,
# linux-binary-KREL (the kernel) and linux-modules-KREL.
image_parts() {
	apt-cache "${apt_opts[@]}" depends "$1" |
		awk -v krel="$2" '$1 == "Depends:" && $2 ~ /^linux-/ &&
			substr($2, length($2) - length(krel) + 1) == krel { print $2 }' |
		sort -u
}

# root_pkgs PKG...: what a build root needs to run these packages' files:
# their Depends (the first of each alternative; no linux-* package, which
# the cache holds unpacked), plus make and binutils, which the headers take
# for granted (gcc-N-for-host brings only the x86_64-linux-gnu-as that gcc
# does not look for: without binutils, "cannot execute 'as'").
# A backports suite's private lists do not hold the release's packages,
# which apt-cache then shows as <NAME>: the root's apt has the release too.
root_pkgs() {
	{
		apt-cache "${apt_opts[@]}" depends "$@" | awk '
			$1 == "Depends:" || $1 == "|Depends:" {
				p = $2; gsub(/[<>]/, "", p)
				if (!inalt && p !~ /^linux-/) print p
				inalt = ($1 == "|Depends:"); next
			}
			{ inalt = 0 }'
		echo make
		echo binutils
	} | LC_ALL=C sort -u | tr '\n' ' ' | sed 's/ $//'
}

# extract_pvh DIR: write DIR/vmlinux.pvh, the uncompressed kernel, when it
# can be booted directly by QEMU through its PVH entry (Debian builds with
# CONFIG_PVH). Why: under TCG the bzImage decompressor alone takes ~3.5 s
# for 6.1's xz image; a PVH boot skips it (and KASLR with it). Best effort:
# without the file vm-run.sh boots the bzImage.
extract_pvh() {
	local dir=$1 z=$1/vmlinuz out=$1/vmlinux.pvh tmp=$1/vmlinux.pvh.tmp
	local magic dec off size end kind o fsz
	[[ -f $out ]] && return 0
	for magic in xz zstd gzip; do
		case $magic in
		xz)	off='\xfd7zXZ\x00'; dec=(xz -dcq --single-stream) ;;
		zstd)	off='\x28\xb5\x2f\xfd'; dec=(zstd -dcq) ;;
		gzip)	off='\x1f\x8b\x08\x00'; dec=(gzip -dcq) ;;
		esac
		off=$(LC_ALL=C grep -obUaP "$off" "$z" 2>/dev/null |
			head -n1 | cut -d: -f1) || true
		[[ -n $off ]] || continue
		# The payload is followed by other data, which zstd and gzip
		# complain about after writing everything: judge the output,
		# not the exit status.
		tail -c +"$((off + 1))" "$z" | "${dec[@]}" >"$tmp" 2>/dev/null || true
		# Whole: every loadable segment lies inside the file.
		size=$(stat -c %s "$tmp")
		end=0
		while read -r kind o _ _ fsz _; do
			[[ $kind == LOAD ]] || continue
			((o + fsz > end)) && end=$((o + fsz))
		done < <(readelf -lW "$tmp" 2>/dev/null)
		if ((end > 0 && end <= size)) &&
		   readelf -nW "$tmp" 2>/dev/null |
		   grep -qE 'PHYS32_ENTRY|\(0x00000012\)'; then
			mv "$tmp" "$out"
			return 0
		fi
	done
	rm -f "$tmp"
	vm_log "$(basename "$dir"): no PVH-bootable vmlinux; VMs boot the bzImage"
	return 0
}

# fetch_one NAME: fill $KVPOOL_CACHE/kernels/NAME.
fetch_one() {
	local name=$1 series flavour dest
	case $name in
	6.1|6.12)	series=$name; flavour=amd64 ;;
	6.1-rt|6.12-rt)	series=${name%-rt}; flavour=rt-amd64 ;;
	7.3)		series=$name; flavour=amd64 ;;
	sid)		series=; flavour=amd64 ;;
	*)		vm_die "unknown kernel '$name' (want 6.1, 6.12, 6.1-rt, 6.12-rt, 6.1-debug, 7.3, sid, all)" ;;
	esac
	# The suites of the root to build modules in (build-root.sh): the
	# kernels whose headers want a compiler Debian 12 does not have.
	local broot=
	case $name in
	7.3)	broot="trixie trixie-backports" ;;
	sid)	broot=sid ;;
	esac
	dest=$(vm_kernel_dir "$name")

	# Fast path: filled cache, no network, no apt.
	if [[ -f $dest/.complete && ${KVPOOL_REFRESH:-0} != 1 ]]; then
		extract_pvh "$dest"	# caches made before it existed
		note "$dest"
		return
	fi

	select_suite "${series:-$name}"
	if lists_empty || [[ ${KVPOOL_REFRESH:-0} == 1 ]]; then
		apt_update
	fi

	local image
	image=$(resolve_image "$series" "$flavour") || true
	if [[ -z $image ]]; then
		# Stale or missing lists: refresh once and look again.
		apt_update
		image=$(resolve_image "$series" "$flavour") || true
		[[ -n $image ]] || vm_die "no linux-image-$series*-$flavour in $suite"
	fi
	local krel=${image#linux-image-}
	local kver
	kver=$(candidate "$image")

	if [[ -f $dest/.complete ]] &&
	   grep -qx "KREL=$(printf %q "$krel")" "$dest/info" &&
	   grep -qx "KVER=$(printf %q "$kver")" "$dest/info"; then
		note "$dest"	# refresh found nothing newer
		return
	fi

	local headers=linux-headers-$krel
	local pkgs=("$image" "$headers")
	mapfile -t -O 2 pkgs < <(header_deps "$headers")
	((${#pkgs[@]} >= 4)) ||
		vm_die "$headers: expected -common and linux-kbuild deps, got: ${pkgs[*]:2}"
	local kbuild_pkgs=("${pkgs[@]:1}")
	mapfile -t -O "${#pkgs[@]}" pkgs < <(image_parts "$image" "$krel")
	local broot_pkgs=
	if [[ -n $broot ]]; then
		broot_pkgs=$(root_pkgs "${kbuild_pkgs[@]}")
	fi

	local stage=$KVPOOL_CACHE/kernels/.$name.tmp
	rm -rf "$stage"
	mkdir -p "$stage/debs" "$stage/root"
	vm_log "$name: downloading ${pkgs[*]} ($suite)"
	# Pin every package to its candidate version so the set is coherent;
	# apt's sandbox user cannot write a root-only folder, so download as root.
	local specs=() p
	for p in "${pkgs[@]}"; do specs+=("$p=$(candidate "$p")"); done
	if ! (cd "$stage/debs" && apt-get -q "${apt_opts[@]}" \
		-o APT::Sandbox::User=root download "${specs[@]}" >/dev/null); then
		# A security update may have replaced the files the lists name.
		apt_update
		specs=()
		for p in "${pkgs[@]}"; do specs+=("$p=$(candidate "$p")"); done
		(cd "$stage/debs" && apt-get -q "${apt_opts[@]}" \
			-o APT::Sandbox::User=root download "${specs[@]}" >/dev/null)
	fi
	local deb
	for deb in "$stage"/debs/*.deb; do
		dpkg -x "$deb" "$stage/root"
	done
	rm -rf "$stage/debs"

	# The headers' top Makefile includes the -common tree by absolute path
	# (/usr/src/...), and 7.x's also sets KBUILD_OUTPUT to its own folder:
	# point both into this cache folder instead. The other links in the
	# trees are relative and work as unpacked.
	local hdir=$stage/root/usr/src/linux-headers-$krel
	[[ -f $hdir/Makefile ]] || vm_die "$headers: no Makefile in the package"
	sed -i -E "s%^(include |KBUILD_OUTPUT[[:space:]]*:?=[[:space:]]*)/usr/src/%\1$dest/root/usr/src/%" \
		"$hdir/Makefile"
	! grep -qE '^[^#]*[[:space:]=]/usr/src/' "$hdir/Makefile" ||
		vm_die "$hdir/Makefile: a /usr/src path is left: $(grep -E '/usr/src/' "$hdir/Makefile")"
	grep -q "^include $dest/" "$hdir/Makefile" ||
		vm_die "$hdir/Makefile: unexpected contents: $(head -c 200 "$hdir/Makefile")"

	# Modules may live under /lib or (merged /usr) /usr/lib; depmod and
	# modprobe -d want BASE/lib/modules.
	local modbase=$stage/root
	if [[ ! -d $modbase/lib/modules/$krel && -d $modbase/usr/lib/modules/$krel ]]; then
		ln -s usr/lib "$modbase/lib"
	fi
	[[ -d $modbase/lib/modules/$krel ]] || vm_die "$image: no lib/modules/$krel"
	# The package leaves modules.dep to its postinst; make it here.
	depmod -b "$modbase" "$krel"

	mkdir -p "$stage/initmods"
	local mods=() line path seen=" " m
	for m in "${INIT_MODULES[@]}" "${INIT_MODULES_OPTIONAL[@]}"; do
		if ! modprobe -d "$modbase" -S "$krel" --show-depends "$m" \
			>"$stage/deps.$m" 2>/dev/null; then
			if [[ " ${INIT_MODULES[*]} " == *" $m "* ]]; then
				vm_die "$image: cannot resolve module $m"
			fi
			vm_log "$name: optional module $m not available"
			continue
		fi
		# "insmod PATH [opts]" lines come dependencies first;
		# "builtin NAME" lines need nothing.
		while read -r kind path _; do
			[[ $kind == insmod ]] || continue
			[[ $seen == *" $path "* ]] && continue
			seen+="$path "
			mods+=("$path")
		done <"$stage/deps.$m"
		rm -f "$stage/deps.$m"
	done
	: >"$stage/initmods/order"
	for path in "${mods[@]}"; do
		local base=${path##*/}
		base=${base%.xz}; base=${base%.zst}; base=${base%.gz}
		case $path in
		*.ko.xz)	xz -dc "$path" ;;
		*.ko.zst)	zstd -qdc "$path" ;;
		*.ko.gz)	gzip -dc "$path" ;;
		*.ko)		cat "$path" ;;
		*)		vm_die "$path: unknown module compression" ;;
		esac >"$stage/initmods/$base"
		echo "$base" >>"$stage/initmods/order"
	done

	# 6.x: /boot/vmlinuz-KREL; 7.x: the modules folder's vmlinuz.
	local kimg kcfg
	if [[ -f $stage/root/boot/vmlinuz-$krel ]]; then
		kimg=root/boot/vmlinuz-$krel kcfg=root/boot/config-$krel
	elif [[ -f $modbase/lib/modules/$krel/vmlinuz ]]; then
		kimg=root/lib/modules/$krel/vmlinuz kcfg=root/lib/modules/$krel/config
	else
		vm_die "$image: no boot/vmlinuz-$krel nor lib/modules/$krel/vmlinuz"
	fi
	ln -s "$kimg" "$stage/vmlinuz"
	ln -s "$kcfg" "$stage/config"
	extract_pvh "$stage"
	ln -s "root/usr/src/linux-headers-$krel" "$stage/build"
	{
		printf 'KNAME=%q\n' "$name"
		printf 'KREL=%q\n' "$krel"
		printf 'KVER=%q\n' "$kver"
		printf 'KSUITE=%q\n' "$(origin "$image")"
		printf 'KIMAGE_PKG=%q\n' "$image"
		if [[ -n $broot ]]; then
			printf 'KBUILD_ROOT=%q\n' "$broot"
			printf 'KBUILD_ROOT_PKGS=%q\n' "$broot_pkgs"
		fi
	} >"$stage/info"
	touch "$stage/.complete"

	# Swap in atomically-ish: the old tree goes only once the new is whole.
	rm -rf "$dest.old"
	[[ -e $dest ]] && mv "$dest" "$dest.old"
	mv "$stage" "$dest"
	rm -rf "$dest.old"
	note "$dest"
}

note() {
	local KNAME KREL KVER KSUITE
	# shellcheck disable=SC1091 # written by fetch_one
	. "$1/info"
	printf 'kernel %s: %s (package %s, %s) in %s\n' \
		"$KNAME" "$KREL" "$KVER" "$KSUITE" "$1"
}

for n in ${expanded[@]+"${expanded[@]}"}; do
	fetch_one "$n"
done
