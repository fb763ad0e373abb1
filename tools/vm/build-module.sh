#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# build-module.sh: build kvpool.ko against one cached Debian kernel.
#
# Usage: tools/vm/build-module.sh NAME         (NAME as for get-kernels.sh)
#
# Env:
#   KVPOOL_CACHE  cache root (default /var/cache/kvpool)
#   KVPOOL_SRC    module source folder (default: the repo root); it must hold
#                 Kbuild, and driver/ and uapi/ are copied when present
#   SPARSE=1      also run sparse on every file (C=2 CHECK=sparse)
#   JOBS          make -j (default: number of CPUs)
#
# The sources are copied to $KVPOOL_CACHE/build/NAME/ and built there, so
# the checkout gets no objects and two kernels never share them. Build
# output goes to stderr and to build/NAME/build.log; the only thing on stdout
# is the path of the built module (for `ko=$(build-module.sh 6.1)`).
#
# Fails (exit 1) on a build error and on any warning: W=1 compiler
# warnings, sparse warnings, modpost warnings ("warning:" in any case).
#
# For a debug kernel (6.1-debug: tools/vm/debug-kernel.sh, built from
# source) the tree is that kernel's own source tree, and the module also
# gets -g, so that a KASAN or lockdep report's "func+0x12/0x80 [kvpool]"
# can be turned into a source line with the tree's scripts/faddr2line.
#
# For the kernels whose headers want a newer suite's compiler (7.3: trixie's
# gcc-14; sid: gcc-16; KBUILD_ROOT in the kernel's info) make runs in a
# debootstrapped root of that suite (tools/vm/build-root.sh; cached, a
# minute or so the first time), with the cache bound at the same path:
# the same copy, the same flags, the same warnings-fail rule.
set -euo pipefail
VM_PROG=build-module
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

(($# == 1)) || vm_die "usage: $0 KERNEL-NAME (6.1, 6.12, ...)" 2
name=$1

"$VM_DIR/install-deps.sh"
# Cheap when cached; keeps the stdout contract (only the .ko path).
"$VM_DIR/get-kernels.sh" "$name" >&2
kdir=$(vm_kernel_dir "$name")
# Read in a subshell: the info file's other names must not leak in here.
# shellcheck disable=SC1091 # written by get-kernels.sh
broot=$(. "$kdir/info" && echo "${KBUILD_ROOT:-}")
# shellcheck disable=SC1091 # written by get-kernels.sh
broot_pkgs=$(. "$kdir/info" && echo "${KBUILD_ROOT_PKGS:-}")
in_root=()
if [[ -n $broot ]]; then
	# shellcheck disable=SC2086 # a list of package names
	root=$("$VM_DIR/build-root.sh" "$broot" $broot_pkgs)
	in_root=("$VM_DIR/build-root.sh" --run "$root")
fi

src=${KVPOOL_SRC:-$REPO_ROOT}
src=$(cd "$src" && pwd)
[[ -f $src/Kbuild ]] || vm_die "$src/Kbuild: missing (set KVPOOL_SRC to the module source)"

bdir=$KVPOOL_CACHE/build/$name
mkdir -p "$KVPOOL_CACHE/build"
# Two builds for the same kernel at once would trample each other.
exec 8>"$bdir.lock"
flock 8

# Start from a clean copy: the module is small, and a fresh build means no
# stale object from a file that was renamed or deleted in the checkout.
# Build outputs lying in the source folder (an in-tree build against some
# other kernel) are not copied. The build happens beside the old folder and
# replaces it only when done, so a VM booting the previous kvpool.ko never
# finds it missing.
stage=$bdir.new
rm -rf "$stage"
mkdir -p "$stage"
parts=(Kbuild)
[[ -d $src/driver ]] && parts+=(driver)
[[ -d $src/uapi ]] && parts+=(uapi)
[[ -f $src/VERSION ]] && parts+=(VERSION)
tar -C "$src" -c \
	--exclude='*.o' --exclude='*.ko' --exclude='*.mod' --exclude='*.mod.c' \
	--exclude='.*.cmd' --exclude='*.a' --exclude='modules.order' \
	--exclude='Module.symvers' --exclude='.tmp_*' --exclude='*.d' \
	"${parts[@]}" | tar -C "$stage" -x

margs=(-C "$kdir/build" "M=$stage" W=1 -j"${JOBS:-$(nproc)}")
if [[ $name == *-debug ]]; then
	margs+=("KCFLAGS=-g${KCFLAGS:+ $KCFLAGS}")
fi
if [[ ${SPARSE:-0} == 1 ]]; then
	margs+=(C=2 CHECK=sparse)
fi
vm_log "${in_root:+(in $root) }make ${margs[*]} modules"
set +e
# Paths in messages point back into the source folder, not the copy.
${in_root[@]+"${in_root[@]}"} make "${margs[@]}" modules 2>&1 | sed -u "s|$stage/|$src/|g" |
	tee "$stage/build.log" >&2
rc=${PIPESTATUS[0]}
set -e
((rc == 0)) || vm_die "build failed for $name (exit $rc); log: $stage/build.log"

if grep -i 'warning:' "$stage/build.log" >"$stage/warnings.log"; then
	vm_log "warnings are errors here:"
	cat "$stage/warnings.log" >&2
	vm_die "$(wc -l <"$stage/warnings.log") warning line(s) building for $name; log: $stage/build.log"
fi

rm -rf "$bdir.old"
[[ -e $bdir ]] && mv "$bdir" "$bdir.old"
mv "$stage" "$bdir"
rm -rf "$bdir.old"

shopt -s nullglob
kos=("$bdir"/*.ko)
((${#kos[@]})) || vm_die "no .ko built in $bdir"
if [[ -z ${KVPOOL_SRC:-} && ! -f $bdir/kvpool.ko ]]; then
	vm_die "the repo build made ${kos[*]##*/}, not kvpool.ko"
fi
printf '%s\n' "${kos[@]}"
