#!/bin/busybox sh
# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=dash # busybox ash, checked as the closest dialect
#
# guest-init.sh: /init of the test VM's initramfs (busybox sh, PID 1).
#
# vm-run.sh packs this file, a static busybox and the kernel's 9p modules
# into an initramfs. The image is the same for every run of one kernel (so
# it is built once and cached); what varies per run is read from the
# results share, /results/.vm/config, which vm-run.sh writes:
#   VM_RESULTS   host path of the results folder (mounted at the same
#                path inside the chroot)
#   VM_CWD       host cwd, where CMD starts
#   VM_MODULE    host path of a .ko to insmod, or empty
#   VM_PARAMS    module parameters, split on whitespace
#   VM_DEVGLOB   a /dev glob that must exist after insmod, or empty
#   VM_HOSTROOT_OPTS  extra 9p mount options of the host root (tuning)
#   VM_MODROOT   host path of the kernel's staged modules (their
#                lib/modules/KREL), or empty for a kernel that has none
#
# Protocol back to vm-run.sh, all in /results/.vm/:
#   booted       the results share is up (absent: the VM did not boot)
#   modfail      insmod failed or no device node appeared (why, and dmesg)
#   rc           CMD's exit status (absent: the guest died before the end)
# and /results/dmesg, the kernel log after CMD. Inside the guest,
# /run/kvpool-vm/gpu-driver says what became of the virtio GPU's DRM
# driver: "virtio_gpu" (loaded), "none: ..." (the kernel has no modules
# to load it from) or "failed: ..." (tests that need it fail on that).
#
# Every path ends in `reboot -f`; with QEMU's -no-reboot that ends QEMU.

export PATH=/bin
/bin/busybox --install -s /bin

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
# Whatever /dev/console the kernel did or did not give PID 1, use the real
# one now.
exec </dev/console >/dev/console 2>&1
# The console is the host's stdout: no CR before each LF.
stty -onlcr 2>/dev/null

# No NIC (QEMU runs with -nodefaults), but tests may use 127.0.0.1.
ip link set lo up 2>/dev/null
hostname kvpool-vm

say() { echo "vm-init: $*"; }
bye() {
	sync
	# Keep "reboot: Restarting system" off the host's terminal.
	echo 0 >/proc/sys/kernel/printk
	reboot -f
	sleep 5		# reboot -f does not return; never let PID 1 exit
}
die() {
	say "FATAL: $*"
	bye
}

# The 9p client and its transport, in dependency order.
while read -r m; do
	insmod "/mods/$m" || die "insmod $m failed"
done </mods/order

P9OPTS=trans=virtio,version=9p2000.L,msize=512000
mount -t 9p -o "$P9OPTS" results /results || die "cannot mount the results share"
echo booted >/results/.vm/booted || die "results share is not writable"
[ -f /results/.vm/config ] || die "no /results/.vm/config"
# shellcheck disable=SC1091 # written by vm-run.sh
. /results/.vm/config

# The host root, read-only. cache=loose: nothing changes it while the VM
# runs, and it saves a round trip to the host for each lookup.
mount -t 9p -o "$P9OPTS,ro,${VM_HOSTROOT_OPTS:-cache=loose}" hostroot /mnt ||
	die "cannot mount the host root"

if [ -n "$VM_MODULE" ]; then
	# Loaded before the chroot's own mounts, so a module anywhere on the
	# host (even under /tmp, which the guest covers below) is reachable.
	# shellcheck disable=SC2086 # VM_PARAMS is a list of k=v words
	if ! insmod "/mnt$VM_MODULE" $VM_PARAMS >/tmp/insmod.out 2>&1; then
		{
			echo "insmod $VM_MODULE $VM_PARAMS failed:"
			cat /tmp/insmod.out
			echo "--- kernel log (tail) ---"
			dmesg | tail -n 40
		} >/results/.vm/modfail
		dmesg >/results/dmesg
		cat /results/.vm/modfail
		bye
	fi
	if [ -n "$VM_DEVGLOB" ]; then
		# devtmpfs makes the nodes as the driver registers them.
		# shellcheck disable=SC2086 # the glob is meant to expand
		set -- /dev/$VM_DEVGLOB
		if [ ! -e "$1" ]; then
			{
				echo "insmod $VM_MODULE worked, but no /dev/$VM_DEVGLOB appeared"
				echo "--- kernel log (tail) ---"
				dmesg | tail -n 40
			} >/results/.vm/modfail
			dmesg >/results/dmesg
			cat /results/.vm/modfail
			bye
		fi
	fi
fi

# The chroot's kernel filesystems.
mount -t proc proc /mnt/proc
mount -t sysfs sysfs /mnt/sys
mount -t devtmpfs devtmpfs /mnt/dev
mkdir -p /mnt/dev/pts /mnt/dev/shm
# What udev would add: bash process substitution needs /dev/fd.
ln -sfn /proc/self/fd /mnt/dev/fd
ln -sfn /proc/self/fd/0 /mnt/dev/stdin
ln -sfn /proc/self/fd/1 /mnt/dev/stdout
ln -sfn /proc/self/fd/2 /mnt/dev/stderr
mount -t devpts -o gid=5,mode=620,ptmxmode=666 devpts /mnt/dev/pts
mount -t tmpfs -o mode=1777 tmpfs /mnt/dev/shm
mount -t tmpfs -o mode=755 tmpfs /mnt/run
# /tmp: writable and private to the guest, but still showing the host's
# /tmp (scratch builds and test scripts often live there): an overlay with
# the read-only host /tmp below a tmpfs. Plain tmpfs if overlay is missing.
mkdir -p /ovl
mount -t tmpfs -o mode=755 tmpfs /ovl
mkdir -p /ovl/upper /ovl/work
chmod 1777 /ovl/upper
if ! mount -t overlay overlay \
	-o lowerdir=/mnt/tmp,upperdir=/ovl/upper,workdir=/ovl/work /mnt/tmp \
	2>/dev/null; then
	say "overlay unavailable: /tmp is an empty tmpfs"
	mount -t tmpfs -o mode=1777 tmpfs /mnt/tmp
fi
# The results share at its host path (after /tmp, which may hold it).
mkdir -p "/mnt$VM_RESULTS" 2>/dev/null
mount -o bind /results "/mnt$VM_RESULTS" || die "cannot bind the results share"

# The GPU's driver, as a host loads it: from the kernel's own modules,
# with the chroot's modprobe (kmod), so DRM device nodes exist for the
# tests of kvpoolctl gpus.
mkdir -p /mnt/run/kvpool-vm
if [ -z "$VM_MODROOT" ]; then
	echo "none: this kernel has no modules tree to load virtio_gpu from" \
		>/mnt/run/kvpool-vm/gpu-driver
elif /bin/chroot /mnt /sbin/modprobe -d "$VM_MODROOT" virtio_gpu \
	>/gpu-modprobe.out 2>&1; then
	echo virtio_gpu >/mnt/run/kvpool-vm/gpu-driver
else
	echo "failed: modprobe virtio_gpu: $(cat /gpu-modprobe.out)" \
		>/mnt/run/kvpool-vm/gpu-driver
fi

# CMD itself: the environment and cwd are set by cmd.sh (written by
# vm-run.sh); env -i so nothing of this init leaks in.
/bin/env -i /bin/chroot /mnt /bin/bash --noprofile --norc \
	"$VM_RESULTS/.vm/cmd.sh" </dev/null
rc=$?

dmesg >/results/dmesg
echo "$rc" >/results/.vm/rc
bye
