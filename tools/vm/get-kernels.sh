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
#   info         KNAME/KREL/KVER/... as shell assignments
#   .complete    written last; its absence means "not there"
#
# Kernel packages are never installed: `apt-get download` + `dpkg -x`, so no
# postinst hook touches this machine's /boot. Backports is read through a
# private sources list and private apt state under the cache, so the system's
# apt configuration is never changed. Versions are resolved from apt's
# metadata at run time; nothing here names an ABI number.
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

# mirror_of_system: print "URI SIGNED-BY" of the system source that serves
# the plain release suite (e.g. "bookworm"), from deb822 .sources files or,
# failing that, one-line sources.list files.
mirror_of_system() {
	local f out=
	for f in /etc/apt/sources.list.d/*.sources; do
		[[ -f $f ]] || continue
		# Paragraph mode: one record per stanza; comment lines dropped.
		out=$(awk -v suite="$codename" '
			BEGIN { RS = ""; FS = "\n" }
			{
				types = ""; uris = ""; suites = ""; key = ""
				for (i = 1; i <= NF; i++) {
					if ($i ~ /^#/) continue
					split($i, kv, /:[ \t]*/)
					k = tolower(kv[1]); v = substr($i, length(kv[1]) + 2)
					sub(/^[ \t]+/, "", v)
					if (k == "types") types = v
					else if (k == "uris") uris = v
					else if (k == "suites") suites = v
					else if (k == "signed-by") key = v
				}
				if (types !~ /(^| )deb( |$)/) next
				n = split(suites, s, /[ \t]+/)
				for (j = 1; j <= n; j++) if (s[j] == suite) {
					split(uris, u, /[ \t]+/)
					print u[1], key; exit
				}
			}' "$f")
		[[ -n $out ]] && { echo "$out"; return; }
	done
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[[ -f $f ]] || continue
		# "deb [opts] URI SUITE COMP..."
		out=$(sed -E 's/\[[^]]*\]//' "$f" |
			awk -v suite="$codename" '$1 == "deb" && $3 == suite { print $2; exit }')
		[[ -n $out ]] && { echo "$out"; return; }
	done
	return 1
}

# Private apt configuration for backports, built once per cache.
bpo_dir=$KVPOOL_CACHE/apt/$codename-backports
bpo_opts=(
	-o "Dir::Etc::SourceList=$bpo_dir/sources.list"
	-o "Dir::Etc::SourceParts=$bpo_dir/sources.list.d"
	-o "Dir::State::Lists=$bpo_dir/lists"
	-o "Dir::Cache=$bpo_dir/cache"
)
setup_backports() {
	local uri key
	read -r uri key < <(mirror_of_system) ||
		vm_die "no '$codename' source in /etc/apt to take the mirror from"
	mkdir -p "$bpo_dir/sources.list.d" "$bpo_dir/lists/partial" \
		"$bpo_dir/cache/archives/partial"
	key=${key:-/usr/share/keyrings/debian-archive-keyring.gpg}
	local line="deb [signed-by=$key] $uri $codename-backports main"
	if [[ ! -f $bpo_dir/sources.list ]] ||
	   [[ $(cat "$bpo_dir/sources.list") != "$line" ]]; then
		echo "$line" >"$bpo_dir/sources.list"
		rm -f "$bpo_dir/lists/"*_Packages* "$bpo_dir/lists/"*Release*
	fi
}

# Per-kernel apt options and update command (set by select_suite).
apt_opts=()
suite=
select_suite() {
	case $1 in
	6.1)	apt_opts=(); suite="system apt sources" ;;
	*)	setup_backports; apt_opts=("${bpo_opts[@]}")
		suite=$codename-backports ;;
	esac
}
apt_update() {
	vm_log "apt-get update ($suite)"
	apt-get -q "${apt_opts[@]}" update >/dev/null
}
# True when the apt lists in use hold no package index yet.
lists_empty() {
	local d=/var/lib/apt/lists
	((${#apt_opts[@]})) && d=$bpo_dir/lists
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
# of that flavour that apt can download.
resolve_image() {
	local series=$1 flavour=$2 dep p best=
	dep=$(apt-cache "${apt_opts[@]}" depends "linux-image-$flavour" 2>/dev/null |
		awk '$1 == "Depends:" && $2 ~ /^linux-image-/ { print $2; exit }')
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
	*)		vm_die "unknown kernel '$name' (want 6.1, 6.12, 6.1-rt, 6.12-rt, 6.1-debug, all)" ;;
	esac
	dest=$(vm_kernel_dir "$name")

	# Fast path: filled cache, no network, no apt.
	if [[ -f $dest/.complete && ${KVPOOL_REFRESH:-0} != 1 ]]; then
		extract_pvh "$dest"	# caches made before it existed
		note "$dest"
		return
	fi

	select_suite "$series"
	if lists_empty || [[ ${KVPOOL_REFRESH:-0} == 1 ]]; then
		apt_update
	fi

	local image
	image=$(resolve_image "$series" "$flavour") || true
	if [[ -z $image ]]; then
		# Stale or missing lists: refresh once and look again.
		apt_update
		image=$(resolve_image "$series" "$flavour") ||
			vm_die "no linux-image-$series*-$flavour in $suite"
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
	# (/usr/src/...): point it into this cache folder instead. The other
	# links in the trees are relative and work as unpacked.
	local hdir=$stage/root/usr/src/linux-headers-$krel
	[[ -f $hdir/Makefile ]] || vm_die "$headers: no Makefile in the package"
	sed -i "s|^include /usr/src/|include $dest/root/usr/src/|" "$hdir/Makefile"
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

	[[ -f $stage/root/boot/vmlinuz-$krel ]] || vm_die "$image: no boot/vmlinuz-$krel"
	ln -s "root/boot/vmlinuz-$krel" "$stage/vmlinuz"
	ln -s "root/boot/config-$krel" "$stage/config"
	extract_pvh "$stage"
	ln -s "root/usr/src/linux-headers-$krel" "$stage/build"
	{
		printf 'KNAME=%q\n' "$name"
		printf 'KREL=%q\n' "$krel"
		printf 'KVER=%q\n' "$kver"
		printf 'KSUITE=%q\n' "$(origin "$image")"
		printf 'KIMAGE_PKG=%q\n' "$image"
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
