#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# vm-run.sh: run one command inside a QEMU guest booting a cached Debian
# kernel, with kvpool.ko loaded, on the host's own files.
#
# Usage:
#   tools/vm/vm-run.sh --kernel NAME [--module PATH.ko] [--params "k=v ..."]
#                      [--timeout SECS] [--results DIR] [--env NAME=VALUE]...
#                      [--dev GLOB | --no-dev-check] -- CMD [ARGS...]
#
#   --kernel NAME   a kernel from get-kernels.sh (6.1, 6.12, ...); fetched
#                   if not cached yet
#   --module PATH   insmod this module before CMD (busybox insmod, in the
#                   initramfs); a failed insmod fails the run
#   --params STR    module parameters, split on whitespace ("a=1 b=2")
#   --dev GLOB      after insmod, /dev/GLOB must exist (default "kvpool*"
#                   when the module file is kvpool.ko, else no check)
#   --no-dev-check  skip that check
#   --timeout SECS  whole-VM wall clock limit, boot included (default 600)
#   --results DIR   host folder the guest writes to (default: a new folder
#                   under $KVPOOL_CACHE/runs/, printed at the end)
#   --env N=V       extra environment for CMD (repeatable)
#
# In the guest, CMD runs as root in `chroot` of the host root (read-only
# 9p), in the same cwd as here, with stdin /dev/null, PATH
# /usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin, HOME=/root,
# KVPOOL_IN_VM=1, KVPOOL_RESULTS=DIR (writable, same path as on the
# host) and, with --module, KVPOOL_MODULE=PATH. /tmp is the host's /tmp
# under a private writable layer, /run and
# /dev/shm are tmpfs, and proc, sys, devtmpfs and devpts are mounted. Its
# output streams to this terminal over the serial console.
#
# Exit status: CMD's own, unless vm-run itself found a problem (always with
# a "vm-run: error:" line):
#   122  the guest kernel log has a line of tools/vm/bad-patterns
#   123  the module did not load, or its /dev node did not appear
#   124  timeout (QEMU was killed)
#   125  the VM did not boot, or died before CMD finished (panic?)
#   2    usage error
#
# Files in DIR: dmesg (the guest kernel log after CMD), console.log (all
# serial output), .vm/ (this script's plumbing), plus whatever CMD writes.
#
# Env: KVPOOL_CACHE (cache root), KVPOOL_VM_MEM (MiB, default 2048),
# KVPOOL_VM_CPUS (default 2), KVPOOL_VM_APPEND (extra kernel arguments),
# KVPOOL_VM_BZIMAGE=1 (boot the bzImage, not the PVH vmlinux),
# KVPOOL_VM_9P_OPTS (9p options of the host root; default cache=loose),
# KVPOOL_VM_CPU (QEMU -cpu model; default max: SMAP/SMEP/UMIP on).
set -euo pipefail
VM_PROG=vm-run
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() {
	# The header comment is the manual.
	awk 'NR > 2 && !/^#/ { exit } NR > 2 { sub(/^# ?/, ""); print }' \
		"${BASH_SOURCE[0]}" >&2
	exit 2
}

kernel='' module='' params='' timeout=600 results='' devglob=auto
extra_env=()
while (($#)); do
	case $1 in
	--kernel)	kernel=${2:?}; shift 2 ;;
	--module)	module=${2:?}; shift 2 ;;
	--params)	params=${2?}; shift 2 ;;
	--timeout)	timeout=${2:?}; shift 2 ;;
	--results)	results=${2:?}; shift 2 ;;
	--env)		[[ ${2:-} == [A-Za-z_]*=* ]] || usage
			extra_env+=("$2"); shift 2 ;;
	--dev)		devglob=${2:?}; shift 2 ;;
	--no-dev-check)	devglob=; shift ;;
	--)		shift; break ;;
	-h|--help)	usage ;;
	*)		vm_log "unknown argument: $1"; usage ;;
	esac
done
(($#)) || { vm_log "no command given"; usage; }
[[ -n $kernel ]] || { vm_log "--kernel is required"; usage; }
[[ $timeout =~ ^[0-9]+$ ]] || { vm_log "--timeout wants seconds"; usage; }

"$VM_DIR/install-deps.sh"
"$VM_DIR/get-kernels.sh" "$kernel" >/dev/null
kdir=$(vm_kernel_dir "$kernel")

if [[ -n $module ]]; then
	[[ -f $module ]] || vm_die "module not found: $module" 2
	module=$(realpath "$module")
	if [[ $devglob == auto ]]; then
		[[ ${module##*/} == kvpool.ko ]] && devglob='kvpool*' || devglob=
	fi
else
	devglob=
fi

if [[ -z $results ]]; then
	mkdir -p "$KVPOOL_CACHE/runs"
	# Old default folders go after a day, so they do not pile up.
	find "$KVPOOL_CACHE/runs" -mindepth 1 -maxdepth 1 -mtime +0 \
		-exec rm -rf {} + 2>/dev/null || true
	results=$(mktemp -d "$KVPOOL_CACHE/runs/$kernel.XXXXXX")
fi
mkdir -p "$results"
results=$(realpath "$results")
cwd=$(pwd -P)
# Stale plumbing from an earlier run in the same folder must not be
# mistaken for this run's answers.
rm -rf "$results/.vm" "$results/dmesg" "$results/console.log"
mkdir -p "$results/.vm"

# --- initramfs: busybox + init + this kernel's 9p modules, cached by content.
initramfs_for() {
	local key out stage m
	key=$({
		echo "format 1"
		sha256sum /bin/busybox "$VM_DIR/guest-init.sh"
		while read -r m; do sha256sum "$kdir/initmods/$m"; done \
			<"$kdir/initmods/order"
	} | sha256sum | cut -c1-16)
	out=$KVPOOL_CACHE/initramfs/$kernel-$key.cpio
	if [[ ! -f $out ]]; then
		mkdir -p "$KVPOOL_CACHE/initramfs"
		stage=$(mktemp -d "$KVPOOL_CACHE/initramfs/.stage.XXXXXX")
		mkdir -p "$stage"/{bin,dev,proc,sys,mnt,results,tmp,mods}
		cp /bin/busybox "$stage/bin/busybox"
		install -m 755 "$VM_DIR/guest-init.sh" "$stage/init"
		cp "$kdir"/initmods/* "$stage/mods/"
		# Lets the kernel hand PID 1 a console; init reopens it from
		# devtmpfs anyway, so this may fail (no mknod in a container).
		mknod -m 600 "$stage/dev/console" c 5 1 2>/dev/null || true
		# Uncompressed: TCG would spend longer inflating than QEMU
		# spends loading a 3 MB file.
		(cd "$stage" && find . -mindepth 1 | LC_ALL=C sort |
			cpio -o -H newc -R 0:0 --quiet) >"$out.tmp"
		mv "$out.tmp" "$out"
		rm -rf "$stage"
		# Drop this kernel's older images (not the very recent ones: a
		# VM started a moment ago may be about to read one).
		find "$KVPOOL_CACHE/initramfs" -maxdepth 1 -name "$kernel-*.cpio" \
			! -name "${out##*/}" -mmin +60 -delete
	fi
	echo "$out"
}
initramfs=$(initramfs_for)

# --- per-run config for guest-init.sh, and the command script.
{
	printf 'VM_RESULTS=%q\n' "$results"
	printf 'VM_CWD=%q\n' "$cwd"
	printf 'VM_MODULE=%q\n' "$module"
	printf 'VM_PARAMS=%q\n' "$params"
	printf 'VM_DEVGLOB=%q\n' "$devglob"
	printf 'VM_HOSTROOT_OPTS=%q\n' "${KVPOOL_VM_9P_OPTS:-cache=loose}"
	# Debian's kernels come with their modules, staged (depmod'ed) here;
	# a kernel built here (6.1-debug) has none.
	krel=$(. "$kdir/info" && echo "$KREL")
	if [[ -f $kdir/root/lib/modules/$krel/modules.dep ]]; then
		printf 'VM_MODROOT=%q\n' "$kdir/root"
	else
		printf 'VM_MODROOT=\n'
	fi
} >"$results/.vm/config"
# Run by the host's bash inside the chroot, so bash quoting (%q) is safe.
{
	echo '# generated by vm-run.sh'
	printf 'cd -- %q || exit 125\n' "$cwd"
	echo 'export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'
	echo 'export HOME=/root LANG=C.UTF-8 TERM=dumb KVPOOL_IN_VM=1'
	printf 'export KVPOOL_RESULTS=%q\n' "$results"
	# The module the guest loaded, for tests that unload and reload it.
	if [[ -n $module ]]; then
		printf 'export KVPOOL_MODULE=%q\n' "$module"
	fi
	for e in "${extra_env[@]}"; do printf 'export %q\n' "$e"; done
	printf 'exec'
	printf ' %q' "$@"
	printf '\n'
} >"$results/.vm/cmd.sh"

# --- boot.
# The uncompressed PVH image boots ~3 s faster under TCG (no decompressor);
# KVPOOL_VM_BZIMAGE=1 forces the ordinary bzImage path (with KASLR).
kimage=$kdir/vmlinuz
if [[ -f $kdir/vmlinux.pvh && ${KVPOOL_VM_BZIMAGE:-0} != 1 ]]; then
	kimage=$kdir/vmlinux.pvh
fi
append="console=ttyS0 quiet loglevel=3 panic=-1 rdinit=/init log_buf_len=4M"
append+=" ${KVPOOL_VM_APPEND:-}"
qemu=(
	qemu-system-x86_64
	-machine accel=tcg -cpu "${KVPOOL_VM_CPU:-max}"
	-m "${KVPOOL_VM_MEM:-2048}" -smp "${KVPOOL_VM_CPUS:-2}"
	# graphics=on: with -nographic alone SeaBIOS turns the serial port
	# into its console and sends screen-clearing escapes to the terminal;
	# there is no VGA device (-nodefaults), so "on" shows nothing.
	-nographic -machine graphics=on -nodefaults -serial stdio -no-reboot
	# A PCI display controller (class 0x0380) for the tests of pools
	# created for a GPU (KVPOOL_CREATE_GPU) and of kvpoolctl gpus: a
	# virtio GPU, whose DRM driver (loaded by guest-init.sh where the
	# kernel has it as a module) makes a render node, as a real GPU's
	# does; bochs-display's makes none.
	-device virtio-gpu-pci,addr=0x10
	-kernel "$kimage" -initrd "$initramfs" -append "$append"
	-virtfs "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap"
	-virtfs "local,path=$results,mount_tag=results,security_model=none,multidevs=remap"
)

work=$(mktemp -d)
qpid='' tpid=''
# shellcheck disable=SC2317 # invoked by the trap
cleanup() {
	# Never leave QEMU behind, whatever ended this script.
	[[ -n $qpid ]] && kill "$qpid" 2>/dev/null
	[[ -n $tpid ]] && kill "$tpid" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Console to the terminal and to console.log. tee writes unbuffered, so
# CMD's output streams. QEMU gets /dev/null as stdin: it then leaves the
# terminal's modes alone and never reads keys meant for the host shell.
mkfifo "$work/console"
tee "$results/console.log" <"$work/console" &
tpid=$!
start=$SECONDS
timeout --foreground -k 10 "$timeout" "${qemu[@]}" \
	</dev/null >"$work/console" 2>&1 &
qpid=$!
set +e
wait "$qpid"
qrc=$?
set -e
qpid=
wait "$tpid" || true
tpid=
took=$((SECONDS - start))

if ((qrc == 124 || qrc == 137)); then
	vm_die "timeout: the VM ran past ${timeout}s and was killed (kernel $kernel)" 124
fi
if [[ ! -f $results/.vm/booted ]]; then
	vm_die "the VM did not boot (qemu exit $qrc); see $results/console.log" 125
fi
if [[ -f $results/.vm/modfail ]]; then
	printf '%s: error: module load failed on %s:\n' "$VM_PROG" "$kernel" >&2
	sed 's/^/  /' "$results/.vm/modfail" >&2
	exit 123
fi
if [[ ! -f $results/.vm/rc ]]; then
	vm_die "the guest died before CMD finished (panic?); see $results/console.log" 125
fi
rc=$(<"$results/.vm/rc")

if [[ -f $results/dmesg ]] && bad=$(vm_bad_lines "$results/dmesg"); then
	printf '%s: error: guest kernel log (%s) has bad lines:\n' \
		"$VM_PROG" "$results/dmesg" >&2
	printf '%s\n' "$bad" | sed 's/^/  /' >&2
	vm_log "CMD exited $rc; kernel $kernel; results in $results"
	exit 122
fi
vm_log "kernel $kernel: CMD exited $rc after ${took}s; results in $results"
exit "$rc"
